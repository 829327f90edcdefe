//! Agreement between raters: Cohen's kappa (with statsmodels' standard error), weighted kappa
//! (scikit-learn's weights), Krippendorff's alpha at the four levels of measurement, and the
//! binary figures of a judge against human labels.
//!
//! No maintained Rust crate computes these; each function follows its reference
//! implementation's formula and is checked against it on random inputs
//! (`crates/gauntlet/tests/it/calibrate.rs`). Categories are indices `0..k` into a sorted list
//! of label values, so the order that ordinal weights and levels rely on is the caller's.

use gauntlet_model::labels::Level;
use serde::Serialize;

use crate::z_for;

/// Cohen's kappa with its asymptotic standard error under the alternative (Fleiss, Cohen and
/// Everitt 1969, as statsmodels' `cohens_kappa` reports it) and the normal interval around it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Kappa {
    /// The coefficient.
    pub kappa: f64,
    /// Its asymptotic standard error.
    pub se: f64,
    /// `kappa ± z · se`.
    pub ci: [f64; 2],
}

/// A `k × k` table of counts: rows the first rater's category, columns the second's.
pub fn contingency(pairs: &[(usize, usize)], k: usize) -> Vec<Vec<f64>> {
    let mut table = vec![vec![0.0; k]; k];
    for &(a, b) in pairs {
        table[a][b] += 1.0;
    }
    table
}

/// Cohen's kappa of a contingency table, its standard error and `confidence` interval
/// (statsmodels' `cohens_kappa(table)`: `std_kappa`, `kappa_low`, `kappa_upp`).
pub fn cohen_kappa(table: &[Vec<f64>], confidence: f64) -> Kappa {
    let k = table.len();
    let n: f64 = table.iter().flatten().sum();
    let nan = Kappa {
        kappa: f64::NAN,
        se: f64::NAN,
        ci: [f64::NAN; 2],
    };
    if n == 0.0 {
        return nan;
    }
    let row: Vec<f64> = table.iter().map(|r| r.iter().sum::<f64>() / n).collect();
    let col: Vec<f64> = (0..k)
        .map(|j| table.iter().map(|r| r[j]).sum::<f64>() / n)
        .collect();
    let agree: f64 = (0..k).map(|i| table[i][i] / n).sum();
    let agree_exp: f64 = (0..k).map(|i| row[i] * col[i]).sum();
    let kappa = (agree - agree_exp) / (1.0 - agree_exp);
    let term_a: f64 = (0..k)
        .map(|i| table[i][i] / n * (1.0 - (row[i] + col[i]) * (1.0 - kappa)).powi(2))
        .sum();
    let term_b: f64 = (0..k)
        .flat_map(|i| (0..k).map(move |j| (i, j)))
        .filter(|(i, j)| i != j)
        .map(|(i, j)| table[i][j] / n * (col[i] + row[j]).powi(2))
        .sum::<f64>()
        * (1.0 - kappa).powi(2);
    let term_c = (kappa - agree_exp * (1.0 - kappa)).powi(2);
    let var = (term_a + term_b - term_c) / (1.0 - agree_exp).powi(2) / n;
    let se = var.max(0.0).sqrt();
    let z = z_for(confidence);
    Kappa {
        kappa,
        se,
        ci: [kappa - z * se, kappa + z * se],
    }
}

/// How disagreement between ordered categories is weighted in a weighted kappa.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KappaWeights {
    /// `|i − j|`.
    Linear,
    /// `(i − j)²`.
    Quadratic,
}

/// Weighted kappa of a contingency table, as scikit-learn's `cohen_kappa_score(weights=...)`:
/// `1 − Σ w·O / Σ w·E` with weights on the categories' ranks.
pub fn weighted_kappa(table: &[Vec<f64>], weights: KappaWeights) -> f64 {
    let k = table.len();
    let n: f64 = table.iter().flatten().sum();
    let row: Vec<f64> = table.iter().map(|r| r.iter().sum()).collect();
    let col: Vec<f64> = (0..k).map(|j| table.iter().map(|r| r[j]).sum()).collect();
    let w = |i: usize, j: usize| {
        let d = i.abs_diff(j) as f64;
        match weights {
            KappaWeights::Linear => d,
            KappaWeights::Quadratic => d * d,
        }
    };
    let (mut observed, mut expected) = (0.0, 0.0);
    for i in 0..k {
        for j in 0..k {
            observed += w(i, j) * table[i][j];
            expected += w(i, j) * row[i] * col[j] / n;
        }
    }
    1.0 - observed / expected
}

/// Krippendorff's alpha. `units` holds, per unit, the category index each rater gave (`None`
/// when a rater gave none); `values` maps a category index to its numeric value (used by the
/// interval and ratio levels; the ordinal level uses only the order of the indices). Units
/// with fewer than two values are not pairable and do not count. NaN when no unit is pairable
/// or every pairable value is the same.
pub fn krippendorff_alpha(units: &[Vec<Option<usize>>], values: &[f64], level: Level) -> f64 {
    let mut o = vec![vec![0.0; values.len()]; values.len()];
    for unit in units {
        add_coincidences(&mut o, unit);
    }
    alpha_from_coincidences(&o, values, level)
}

/// Adds one unit's pairable values to the coincidence matrix `o` (k × k): each ordered pair of
/// values within the unit, weighted 1/(m − 1). Units with fewer than two values add nothing.
/// The matrix is a sum over units, so agreement can be tallied as units stream by.
pub fn add_coincidences(o: &mut [Vec<f64>], unit: &[Option<usize>]) {
    let k = o.len();
    let mut counts = vec![0.0; k];
    let mut m = 0.0;
    for &v in unit.iter().flatten() {
        counts[v] += 1.0;
        m += 1.0;
    }
    if m < 2.0 {
        return;
    }
    for c in 0..k {
        if counts[c] == 0.0 {
            continue;
        }
        for kk in 0..k {
            let pairs = if c == kk {
                counts[c] * (counts[c] - 1.0)
            } else {
                counts[c] * counts[kk]
            };
            o[c][kk] += pairs / (m - 1.0);
        }
    }
}

/// Krippendorff's alpha from a coincidence matrix (see [`add_coincidences`]).
pub fn alpha_from_coincidences(o: &[Vec<f64>], values: &[f64], level: Level) -> f64 {
    let k = values.len();
    let n_c: Vec<f64> = o.iter().map(|r| r.iter().sum()).collect();
    let n: f64 = n_c.iter().sum();
    let delta = |c: usize, kk: usize| -> f64 {
        match level {
            Level::Nominal => f64::from(u8::from(c != kk)),
            Level::Ordinal => {
                let (lo, hi) = (c.min(kk), c.max(kk));
                let between: f64 = n_c[lo..=hi].iter().sum();
                (between - (n_c[c] + n_c[kk]) / 2.0).powi(2)
            }
            Level::Interval => (values[c] - values[kk]).powi(2),
            Level::Ratio => {
                let sum = values[c] + values[kk];
                if sum == 0.0 {
                    0.0
                } else {
                    ((values[c] - values[kk]) / sum).powi(2)
                }
            }
        }
    };
    let (mut d_o, mut d_e) = (0.0, 0.0);
    for c in 0..k {
        for kk in 0..k {
            let d = delta(c, kk);
            d_o += o[c][kk] * d;
            d_e += n_c[c] * n_c[kk] * d;
        }
    }
    if n <= 1.0 || d_e == 0.0 {
        return f64::NAN;
    }
    1.0 - (n - 1.0) * d_o / d_e
}

/// The binary confusion of a judge against human labels, and the figures read from it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Confusion {
    /// Both positive.
    pub tp: u64,
    /// The judge positive, the human negative.
    pub fp: u64,
    /// The judge negative, the human positive.
    #[serde(rename = "fn")]
    pub fn_: u64,
    /// Both negative.
    pub tn: u64,
}

impl Confusion {
    /// Counts `(human, judge)` pairs of positives.
    pub fn of(pairs: impl IntoIterator<Item = (bool, bool)>) -> Confusion {
        let mut c = Confusion::default();
        for (human, judge) in pairs {
            match (human, judge) {
                (true, true) => c.tp += 1,
                (false, true) => c.fp += 1,
                (true, false) => c.fn_ += 1,
                (false, false) => c.tn += 1,
            }
        }
        c
    }

    /// All pairs.
    pub fn n(&self) -> u64 {
        self.tp + self.fp + self.fn_ + self.tn
    }

    fn ratio(a: u64, b: u64) -> f64 {
        if b == 0 {
            f64::NAN
        } else {
            a as f64 / b as f64
        }
    }

    /// Share of pairs that agree.
    pub fn accuracy(&self) -> f64 {
        Self::ratio(self.tp + self.tn, self.n())
    }

    /// Of the judge's positives, the share the humans call positive.
    pub fn precision(&self) -> f64 {
        Self::ratio(self.tp, self.tp + self.fp)
    }

    /// Of the humans' positives, the share the judge finds.
    pub fn recall(&self) -> f64 {
        Self::ratio(self.tp, self.tp + self.fn_)
    }

    /// The harmonic mean of precision and recall.
    pub fn f1(&self) -> f64 {
        Self::ratio(2 * self.tp, 2 * self.tp + self.fp + self.fn_)
    }

    /// Of the judge's negatives, the share the humans call negative.
    pub fn npv(&self) -> f64 {
        Self::ratio(self.tn, self.tn + self.fn_)
    }

    /// Of the humans' negatives, the share the judge calls negative (specificity).
    pub fn tnr(&self) -> f64 {
        Self::ratio(self.tn, self.tn + self.fp)
    }

    /// The judge's share of positives.
    pub fn judge_positive_rate(&self) -> f64 {
        Self::ratio(self.tp + self.fp, self.n())
    }

    /// The humans' share of positives.
    pub fn human_positive_rate(&self) -> f64 {
        Self::ratio(self.tp + self.fn_, self.n())
    }

    /// McNemar's exact test on the disagreements (`fn` against `fp`).
    pub fn mcnemar_p(&self) -> f64 {
        crate::mcnemar_exact(self.fn_, self.fp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", the worked example
    /// with missing values: 0.743 nominal, 0.815 ordinal, 0.849 interval, 0.797 ratio.
    #[test]
    fn krippendorffs_worked_example() {
        let raters: [[Option<usize>; 12]; 4] = {
            let n = None;
            let v = |x: usize| Some(x - 1);
            [
                [
                    v(1),
                    v(2),
                    v(3),
                    v(3),
                    v(2),
                    v(1),
                    v(4),
                    v(1),
                    v(2),
                    n,
                    n,
                    n,
                ],
                [
                    v(1),
                    v(2),
                    v(3),
                    v(3),
                    v(2),
                    v(2),
                    v(4),
                    v(1),
                    v(2),
                    v(5),
                    n,
                    v(3),
                ],
                [
                    n,
                    v(3),
                    v(3),
                    v(3),
                    v(2),
                    v(3),
                    v(4),
                    v(2),
                    v(2),
                    v(5),
                    v(1),
                    n,
                ],
                [
                    v(1),
                    v(2),
                    v(3),
                    v(3),
                    v(2),
                    v(4),
                    v(4),
                    v(1),
                    v(2),
                    v(5),
                    v(1),
                    n,
                ],
            ]
        };
        let units: Vec<Vec<Option<usize>>> = (0..12)
            .map(|u| raters.iter().map(|r| r[u]).collect())
            .collect();
        let values = [1.0, 2.0, 3.0, 4.0, 5.0];
        let round = |x: f64| (x * 1000.0).round() / 1000.0;
        assert_eq!(
            round(krippendorff_alpha(&units, &values, Level::Nominal)),
            0.743
        );
        assert_eq!(
            round(krippendorff_alpha(&units, &values, Level::Ordinal)),
            0.815
        );
        assert_eq!(
            round(krippendorff_alpha(&units, &values, Level::Interval)),
            0.849
        );
        assert_eq!(
            round(krippendorff_alpha(&units, &values, Level::Ratio)),
            0.797
        );
    }

    #[test]
    fn perfect_agreement_is_one_and_a_single_value_is_undefined() {
        let table = vec![vec![5.0, 0.0], vec![0.0, 5.0]];
        assert_eq!(cohen_kappa(&table, 0.95).kappa, 1.0);
        let units = vec![vec![Some(0), Some(0)]; 4];
        assert!(krippendorff_alpha(&units, &[0.0, 1.0], Level::Nominal).is_nan());
    }
}
