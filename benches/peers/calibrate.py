"""The peer side of `gauntlet calibrate`: the same figures from the libraries a Python user
reaches for (scikit-learn, statsmodels, krippendorff), overall and per segment value.

usage: calibrate.py LABELS.jsonl VERDICTS.jsonl   (one {"item", "label", "segment"?} per line)
Prints one JSON object (n, confusion, accuracy, precision, recall, f1, npv, tnr, kappa, its SE and
interval, nominal alpha, positive rates, McNemar p, and the same per segment).
"""
import json
import sys

import krippendorff
import numpy as np
from sklearn.metrics import cohen_kappa_score, confusion_matrix, f1_score, precision_score, recall_score
from statsmodels.stats.contingency_tables import mcnemar
from statsmodels.stats.inter_rater import cohens_kappa


def read(path):
    out = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                row = json.loads(line)
                out[row["item"]] = row
    return out


def figures(h, j):
    h, j = np.asarray(h, dtype=int), np.asarray(j, dtype=int)
    tn, fp, fn, tp = confusion_matrix(h, j, labels=[0, 1]).ravel()
    table = np.array([[tn, fp], [fn, tp]])
    sm = cohens_kappa(table)
    return {
        "n": int(len(h)), "tp": int(tp), "fp": int(fp), "fn": int(fn), "tn": int(tn),
        "accuracy": float((tp + tn) / len(h)),
        "precision": float(precision_score(h, j, zero_division=np.nan)),
        "recall": float(recall_score(h, j, zero_division=np.nan)),
        "f1": float(f1_score(h, j, zero_division=np.nan)),
        "npv": float(tn / (tn + fn)) if tn + fn else None,
        "tnr": float(tn / (tn + fp)) if tn + fp else None,
        "cohen_kappa": float(cohen_kappa_score(h, j)),
        "kappa_se": float(sm.std_kappa),
        "kappa_ci95": [float(sm.kappa_low), float(sm.kappa_upp)],
        "krippendorff_alpha": float(krippendorff.alpha(reliability_data=np.vstack([h, j]),
                                                       level_of_measurement="nominal")),
        "judge_positive_rate": float(j.mean()),
        "human_positive_rate": float(h.mean()),
        "mcnemar_p": float(mcnemar(table, exact=True).pvalue),
    }


labels, verdicts = read(sys.argv[1]), read(sys.argv[2])
items = sorted(set(labels) & set(verdicts))
h = [int(bool(labels[i]["label"])) for i in items]
j = [int(bool(verdicts[i]["label"])) for i in items]
out = figures(h, j)
segments = {}
for k, i in enumerate(items):
    for name, value in {**verdicts[i].get("segment", {}), **labels[i].get("segment", {})}.items():
        for v in value if isinstance(value, list) else [value]:
            segments.setdefault(name, {}).setdefault(v, []).append(k)
out["segments"] = {
    name: {v: figures([h[k] for k in ks], [j[k] for k in ks]) for v, ks in values.items()}
    for name, values in segments.items()
}
print(json.dumps(out))
