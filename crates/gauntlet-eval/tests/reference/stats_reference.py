"""Reference values for gauntlet's statistics, computed with SciPy.

Reads a JSON list of problems on stdin and writes the answers as JSON on stdout:
  {"wilson": [k, n]}            -> [lower, upper]   scipy.stats.binomtest(...).proportion_ci("wilson")
  {"mcnemar": [b, c]}           -> p                exact McNemar = two-sided binomial test of b of b+c at 1/2
  {"bootstrap": [values, seed]} -> [lower, upper]   scipy.stats.bootstrap(percentile, 2000 resamples)
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
    else:
        values, seed = problem["bootstrap"]
        res = stats.bootstrap(
            (np.array(values),), np.mean, n_resamples=2000, method="percentile",
            confidence_level=0.95, random_state=np.random.default_rng(seed),
        )
        out.append([res.confidence_interval.low, res.confidence_interval.high])
json.dump(out, sys.stdout)
