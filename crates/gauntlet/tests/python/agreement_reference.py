"""Reference agreement figures for gauntlet's calibrate tests, from the reference libraries.

Reads JSON on stdin: {"human": [...], "judge": [...], "units": [[rater values or null]...],
"weights": true}; prints kappa (scikit-learn), statsmodels' kappa standard error and interval,
weighted kappas (scikit-learn) and Krippendorff's alpha at four levels (krippendorff).
"""
import json
import sys

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score, confusion_matrix
from statsmodels.stats.inter_rater import cohens_kappa

data = json.load(sys.stdin)
human, judge = data["human"], data["judge"]
labels = sorted(set(human) | set(judge))
table = confusion_matrix(human, judge, labels=labels)
sm = cohens_kappa(table)
out = {
    "kappa": cohen_kappa_score(human, judge),
    "kappa_se": float(sm.std_kappa),
    "kappa_ci95": [float(sm.kappa_low), float(sm.kappa_upp)],
    "linear": cohen_kappa_score(human, judge, weights="linear"),
    "quadratic": cohen_kappa_score(human, judge, weights="quadratic"),
}
units = np.array(
    [[np.nan if v is None else v for v in row] for row in data["units"]], dtype=float
)
for level in ["nominal", "ordinal", "interval", "ratio"]:
    try:
        out["alpha_" + level] = krippendorff.alpha(
            reliability_data=units, level_of_measurement=level
        )
    except Exception as e:  # a degenerate draw: no pairable variation
        out["alpha_" + level] = None
print(json.dumps(out))
