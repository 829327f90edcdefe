"""Reference values for gauntlet's statistics, computed with SciPy.

Reads a JSON list of problems on stdin and writes the answers as JSON on stdout:
  {"wilson": [k, n]}            -> [lower, upper]   scipy.stats.binomtest(...).proportion_ci("wilson")
  {"mcnemar": [b, c]}           -> p                exact McNemar = two-sided binomial test of b of b+c at 1/2
  {"bootstrap": [values, seed]} -> [lower, upper]   scipy.stats.bootstrap(percentile, 2000 resamples)
  {"mann_whitney": [x, y]}      -> [U of x, p]      scipy.stats.mannwhitneyu(asymptotic, continuity)
  {"ks": [x, y]}                -> [D, p]           ks_2samp's D; p = kstwobign.sf(D * sqrt(n1 n2 / (n1 + n2)))
  {"fisher": [a, b, c, d]}      -> p                scipy.stats.fisher_exact([[a, b], [c, d]])
  {"z": [x1, n1, x2, n2]}       -> [z, p]           statsmodels proportions_ztest (pooled)
  {"chi2": [row0, row1]}        -> [stat, p]        scipy.stats.chi2_contingency(correction=False)
  {"bh": [p...]}                -> [adjusted...]    statsmodels multipletests(fdr_bh)
"""
import json
import sys

import numpy as np
from scipy import stats

out = []
for problem in json.load(sys.stdin):
    if "wilson" in problem:
        k, n = problem["wilson"]
        ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
        out.append([ci.low, ci.high])
    elif "mcnemar" in problem:
        b, c = problem["mcnemar"]
        out.append(1.0 if b + c == 0 else stats.binomtest(min(b, c), b + c, 0.5).pvalue)
    elif "mann_whitney" in problem:
        x, y = problem["mann_whitney"]
        r = stats.mannwhitneyu(x, y, method="asymptotic", use_continuity=True)
        out.append([r.statistic, r.pvalue])
    elif "ks" in problem:
        x, y = problem["ks"]
        d = stats.ks_2samp(x, y).statistic
        en = len(x) * len(y) / (len(x) + len(y))
        out.append([d, stats.kstwobign.sf(d * np.sqrt(en))])
    elif "fisher" in problem:
        a, b, c, d = problem["fisher"]
        out.append(stats.fisher_exact([[a, b], [c, d]]).pvalue)
    elif "z" in problem:
        from statsmodels.stats.proportion import proportions_ztest
        x1, n1, x2, n2 = problem["z"]
        z, p = proportions_ztest([x1, x2], [n1, n2])
        out.append([z, p])
    elif "chi2" in problem:
        table = np.array(problem["chi2"])
        table = table[:, table.sum(axis=0) > 0]
        r = stats.chi2_contingency(table, correction=False)
        out.append([r.statistic, r.pvalue])
    elif "bh" in problem:
        from statsmodels.stats.multitest import multipletests
        out.append(list(multipletests(problem["bh"], method="fdr_bh")[1]))
    else:
        values, seed = problem["bootstrap"]
        res = stats.bootstrap(
            (np.array(values),), np.mean, n_resamples=2000, method="percentile",
            confidence_level=0.95, random_state=np.random.default_rng(seed),
        )
        out.append([res.confidence_interval.low, res.confidence_interval.high])
json.dump(out, sys.stdout)
