//! The statistics behind every interval, comparison and pass@k in gauntlet.
//!
//! Distributions and special functions come from statrs; resampling uses a seeded ChaCha8
//! generator, so the same inputs and seed give bit-identical intervals. Defaults: 95 %
//! confidence, [`RESAMPLES`] bootstrap resamples, percentile intervals.

pub use gauntlet_model::{Interval, IntervalMethod};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use statrs::distribution::{Binomial, ContinuousCDF, DiscreteCDF, Normal};
use statrs::function::factorial::binomial;

/// Confidence level of every interval gauntlet reports.
pub const CONFIDENCE: f64 = 0.95;
/// Bootstrap resamples per interval.
pub const RESAMPLES: usize = 2000;

/// The two-sided standard normal quantile for a confidence level (1.96 at 95 %).
pub fn z_for(confidence: f64) -> f64 {
    let normal = Normal::standard();
    normal.inverse_cdf(1.0 - (1.0 - confidence) / 2.0)
}

/// Wilson score interval for `successes` out of `n`. `n == 0` gives the whole of [0, 1].
pub fn wilson(successes: u64, n: u64, confidence: f64) -> Interval {
    if n == 0 {
        return Interval {
            lower: 0.0,
            upper: 1.0,
            method: IntervalMethod::Wilson,
        };
    }
    let z = z_for(confidence);
    let n = n as f64;
    let p = successes as f64 / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / denom;
    Interval {
        lower: (centre - half).max(0.0),
        upper: (centre + half).min(1.0),
        method: IntervalMethod::Wilson,
    }
}

fn percentile_of_sorted(sorted: &[f64], q: f64) -> f64 {
    // Linear interpolation between order statistics (numpy's default "linear" method).
    let pos = q * (sorted.len() - 1) as f64;
    let lo = pos.floor() as usize;
    let hi = pos.ceil() as usize;
    sorted[lo] + (sorted[hi] - sorted[lo]) * (pos - lo as f64)
}

/// Percentile bootstrap interval of the mean of `values`, from `resamples` seeded resamples.
pub fn bootstrap_mean(values: &[f64], resamples: usize, seed: u64, confidence: f64) -> Interval {
    bootstrap(values.len(), resamples, seed, confidence, |idx| {
        idx.iter().map(|&i| values[i]).sum::<f64>() / idx.len() as f64
    })
}

/// Above this many cases a mean's interval is the normal one with the cluster-robust standard
/// error rather than a bootstrap: the bootstrap's cost grows with the cases, the normal
/// approximation is then as good, and scoring a huge file stays at parse speed.
pub const MAX_BOOTSTRAP_CLUSTERS: usize = 1000;

/// Interval of the mean of trial values grouped by case, from each case's `(sum, count)`: the
/// honest unit when epochs repeat a case is the case, so the cases are resampled (a percentile
/// bootstrap of `Σ sums / Σ counts`, [`RESAMPLES`] seeded draws of the cases), which costs the
/// same whatever the number of trials; past [`MAX_BOOTSTRAP_CLUSTERS`] cases, the normal
/// interval with the cluster-robust (CR1) standard error. With one trial per case the bootstrap
/// is [`bootstrap_mean`]'s, draw for draw.
pub fn cluster_mean(
    clusters: &[(f64, f64)],
    resamples: usize,
    seed: u64,
    confidence: f64,
) -> Interval {
    let g = clusters.len();
    if g > MAX_BOOTSTRAP_CLUSTERS {
        let (sum, n) = clusters
            .iter()
            .fold((0.0, 0.0), |(s, n), (cs, cn)| (s + cs, n + cn));
        let mean = sum / n;
        let spread: f64 = clusters
            .iter()
            .map(|(cs, cn)| (cs - mean * cn).powi(2))
            .sum();
        let se = (g as f64 / (g as f64 - 1.0) * spread).sqrt() / n;
        let half = z_for(confidence) * se;
        return Interval {
            lower: mean - half,
            upper: mean + half,
            method: IntervalMethod::Normal,
        };
    }
    bootstrap(g, resamples, seed, confidence, |idx| {
        let (sum, n) = idx.iter().fold((0.0, 0.0), |(s, n), &i| {
            (s + clusters[i].0, n + clusters[i].1)
        });
        sum / n
    })
}

/// Percentile bootstrap interval of the mean paired difference `b[i] - a[i]`.
pub fn paired_bootstrap_diff(
    a: &[f64],
    b: &[f64],
    resamples: usize,
    seed: u64,
    confidence: f64,
) -> Interval {
    let diffs: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    bootstrap_mean(&diffs, resamples, seed, confidence)
}

fn bootstrap(
    n: usize,
    resamples: usize,
    seed: u64,
    confidence: f64,
    stat: impl Fn(&[usize]) -> f64,
) -> Interval {
    if n == 0 {
        return Interval {
            lower: f64::NAN,
            upper: f64::NAN,
            method: IntervalMethod::Bootstrap,
        };
    }
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut idx = vec![0usize; n];
    let mut stats: Vec<f64> = (0..resamples.max(1))
        .map(|_| {
            for slot in idx.iter_mut() {
                *slot = rng.random_range(0..n);
            }
            stat(&idx)
        })
        .collect();
    stats.sort_by(f64::total_cmp);
    let alpha = 1.0 - confidence;
    Interval {
        lower: percentile_of_sorted(&stats, alpha / 2.0),
        upper: percentile_of_sorted(&stats, 1.0 - alpha / 2.0),
        method: IntervalMethod::Bootstrap,
    }
}

/// The unbiased pass@k estimator (Chen et al. 2021): the chance that at least one of k trials
/// drawn without replacement from n, of which c passed, passes: `1 - C(n-c, k) / C(n, k)`.
pub fn pass_at_k(n: u64, c: u64, k: u64) -> f64 {
    if k > n {
        return f64::NAN;
    }
    if n - c < k {
        return 1.0;
    }
    1.0 - binomial(n - c, k) / binomial(n, k)
}

/// tau-bench's pass^k: the chance that all of k trials drawn from n, of which c passed, pass:
/// `C(c, k) / C(n, k)`.
pub fn pass_hat_k(n: u64, c: u64, k: u64) -> f64 {
    if k > n {
        return f64::NAN;
    }
    binomial(c, k) / binomial(n, k)
}

/// McNemar's exact test: the two-sided p-value of `b` and `c` discordant pairs under
/// Binomial(b + c, 1/2), `min(1, 2 · P(X ≤ min(b, c)))`.
pub fn mcnemar_exact(b: u64, c: u64) -> f64 {
    let n = b + c;
    if n == 0 {
        return 1.0;
    }
    let Ok(dist) = Binomial::new(0.5, n) else {
        return f64::NAN;
    };
    (2.0 * dist.cdf(b.min(c))).min(1.0)
}

/// Cohen's h between two proportions (`p2` relative to `p1`).
pub fn cohens_h(p1: f64, p2: f64) -> f64 {
    2.0 * p2.sqrt().asin() - 2.0 * p1.sqrt().asin()
}

/// Cohen's d_z for paired differences: mean difference over the standard deviation of differences.
pub fn cohens_dz(a: &[f64], b: &[f64]) -> f64 {
    let d: Vec<f64> = a.iter().zip(b).map(|(x, y)| y - x).collect();
    let n = d.len() as f64;
    if n < 2.0 {
        return f64::NAN;
    }
    let mean = d.iter().sum::<f64>() / n;
    let var = d.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    if var == 0.0 {
        return if mean == 0.0 {
            0.0
        } else {
            f64::INFINITY.copysign(mean)
        };
    }
    mean / var.sqrt()
}

/// Pairs needed for McNemar's test to detect a difference `delta` in pass rate, given the share
/// of discordant pairs, at significance `alpha` (two-sided) and `power` (Connor 1987).
pub fn pairs_needed(discordant_share: f64, delta: f64, alpha: f64, power: f64) -> f64 {
    let normal = Normal::standard();
    let za = normal.inverse_cdf(1.0 - alpha / 2.0);
    let zb = normal.inverse_cdf(power);
    // A run with no discordant pairs says nothing about their share; assume at least 2 delta.
    let pd = discordant_share.max(2.0 * delta).min(1.0);
    let root = (pd - delta * delta).max(0.0).sqrt();
    ((za * pd.sqrt() + zb * root) / delta).powi(2)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pass_hat_k_matches_tau_bench_definition() {
        assert_eq!(pass_hat_k(4, 4, 4), 1.0);
        assert_eq!(pass_hat_k(4, 2, 2), 1.0 / 6.0);
        assert_eq!(pass_hat_k(4, 1, 2), 0.0);
        assert_eq!(pass_at_k(4, 1, 2), 0.5);
    }

    #[test]
    fn wilson_is_known_for_a_textbook_case() {
        // 8 of 10: Wilson 95 % is [0.4902, 0.9433].
        let i = wilson(8, 10, 0.95);
        assert!(
            (i.lower - 0.4902).abs() < 1e-4 && (i.upper - 0.9433).abs() < 1e-4,
            "{i:?}"
        );
    }

    #[test]
    fn bootstrap_is_reproducible_per_seed() {
        let v: Vec<f64> = (0..50).map(|i| (i % 7) as f64).collect();
        assert_eq!(
            bootstrap_mean(&v, 500, 7, 0.95),
            bootstrap_mean(&v, 500, 7, 0.95)
        );
        assert_ne!(
            bootstrap_mean(&v, 500, 7, 0.95),
            bootstrap_mean(&v, 500, 8, 0.95)
        );
    }

    #[test]
    fn a_case_bootstrap_with_one_trial_per_case_is_the_plain_bootstrap() {
        let v: Vec<f64> = (0..200).map(|i| f64::from((i * 37) % 11)).collect();
        let clusters: Vec<(f64, f64)> = v.iter().map(|&x| (x, 1.0)).collect();
        assert_eq!(
            cluster_mean(&clusters, 500, 9, 0.95),
            bootstrap_mean(&v, 500, 9, 0.95)
        );
    }

    #[test]
    fn many_cases_of_one_trial_give_the_normal_interval_of_the_mean() {
        use statrs::statistics::Statistics;
        let v: Vec<f64> = (0..5000).map(|i| f64::from((i * 7919) % 101)).collect();
        let clusters: Vec<(f64, f64)> = v.iter().map(|&x| (x, 1.0)).collect();
        let i = cluster_mean(&clusters, RESAMPLES, 1, 0.95);
        assert_eq!(i.method, IntervalMethod::Normal);
        // CR1 with single-trial clusters is the textbook standard error s / sqrt(n).
        let mean = v.iter().mean();
        let half = z_for(0.95) * v.iter().std_dev() / (v.len() as f64).sqrt();
        assert!((i.lower - (mean - half)).abs() < 1e-9, "{i:?}");
        assert!((i.upper - (mean + half)).abs() < 1e-9, "{i:?}");
    }

    #[test]
    fn a_case_repeated_many_times_counts_as_one_case() {
        // Two cases, one always 0 and one always 1, over many epochs: resampling trials would
        // give a tight interval around 0.5; resampling cases spans 0 to 1.
        let clusters = [(0.0, 500.0), (500.0, 500.0)];
        let i = cluster_mean(&clusters, RESAMPLES, 3, 0.95);
        assert_eq!((i.lower, i.upper), (0.0, 1.0));
    }

    #[test]
    fn mcnemar_exact_small_cases() {
        assert_eq!(mcnemar_exact(0, 0), 1.0);
        // b=0, c=6: 2 * 0.5^6 = 0.03125.
        assert!((mcnemar_exact(0, 6) - 0.03125).abs() < 1e-12);
    }
}
