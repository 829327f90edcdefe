//! Calibration: how far a judge's verdicts agree with human labels, overall and per segment.
//!
//! Items are matched by id. An item with several labels on one side (several raters) is read
//! by majority; a tie leaves the item out and is listed. The figures a release gate relies on
//! (binary confusion, kappa, alpha, rate gap, McNemar) are computed on the matched items; the
//! same figures are given per segment value; human–human (and judge–judge) agreement is given
//! where items carry two labels or more on a side.

use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};

use gauntlet_model::labels::{CalibrationReport, Figures, Level, Unmatched, WithinAgreement};
use gauntlet_model::{Label, LabelValue, SegmentValue};

use crate::agreement::{
    Confusion, KappaWeights, cohen_kappa, contingency, krippendorff_alpha, weighted_kappa,
};

/// How to calibrate.
#[derive(Debug, Clone)]
pub struct CalibrationOptions {
    /// Weighted kappa (for ordinal scales), when asked.
    pub weights: Option<KappaWeights>,
    /// Krippendorff's level of measurement.
    pub level: Level,
    /// The confidence of kappa's interval.
    pub confidence: f64,
}

impl Default for CalibrationOptions {
    fn default() -> Self {
        CalibrationOptions {
            weights: None,
            level: Level::Nominal,
            confidence: 0.95,
        }
    }
}

/// Why labels cannot be calibrated.
#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CalibrationError {
    /// No item is labelled on both sides.
    #[error(
        "no item has both a label and a verdict ({labels} labelled, {verdicts} judged): check that both files use the same item ids"
    )]
    NoOverlap {
        /// Items with labels.
        labels: usize,
        /// Items with verdicts.
        verdicts: usize,
    },
    /// The level needs numbers and an item has text.
    #[error(
        "item `{item}` has the label `{value}`, which is not a number: the {level} level needs numbers (or use --level nominal)"
    )]
    NotNumeric {
        /// The item.
        item: String,
        /// Its value.
        value: String,
        /// The level asked for.
        level: &'static str,
    },
}

/// The labels of one item on one side.
#[derive(Default)]
struct Item<'a> {
    values: Vec<(Option<&'a str>, &'a LabelValue)>,
    /// Its segments, each name once (the first label that gives it wins).
    segment: Vec<(&'a str, &'a SegmentValue)>,
}

/// Adds the segments of `more` whose names `to` lacks.
fn merge_segments<'a>(
    to: &mut Vec<(&'a str, &'a SegmentValue)>,
    more: impl IntoIterator<Item = (&'a str, &'a SegmentValue)>,
) {
    for (k, v) in more {
        if !to.iter().any(|(name, _)| *name == k) {
            to.push((k, v));
        }
    }
}

fn group(labels: &[Label]) -> BTreeMap<&str, Item<'_>> {
    let mut items: BTreeMap<&str, Item<'_>> = BTreeMap::new();
    for l in labels {
        let item = items.entry(&l.item).or_default();
        item.values.push((l.rater.as_deref(), &l.label));
        merge_segments(&mut item.segment, l.segment.iter());
    }
    for item in items.values_mut() {
        item.values.sort_by(|a, b| a.0.cmp(&b.0));
    }
    items
}

/// The categories of every value, in order, deduplicated.
fn categories<'a>(values: impl Iterator<Item = &'a LabelValue>) -> Vec<LabelValue> {
    let mut all: Vec<LabelValue> = values.cloned().collect();
    all.sort_by(|a, b| a.order(b));
    all.dedup_by(|a, b| a.order(b) == Ordering::Equal);
    all
}

fn index(categories: &[LabelValue], v: &LabelValue) -> usize {
    categories
        .binary_search_by(|c| c.order(v))
        .expect("every value is a category")
}

/// The majority category of an item's values; `None` on a tie.
fn majority(categories: &[LabelValue], item: &Item<'_>) -> Option<usize> {
    let mut counts = vec![0usize; categories.len()];
    for (_, v) in &item.values {
        counts[index(categories, v)] += 1;
    }
    let best = *counts.iter().max()?;
    let mut winners = counts.iter().enumerate().filter(|(_, c)| **c == best);
    let first = winners.next()?.0;
    winners.next().is_none().then_some(first)
}

/// Compares judge verdicts with human labels.
pub fn calibrate(
    mut labels: Vec<Label>,
    mut verdicts: Vec<Label>,
    options: &CalibrationOptions,
) -> Result<CalibrationReport, CalibrationError> {
    // Pass/fail in any spelling (`true`, 1, `success`, `PASS`) is one pair of categories.
    let binary = labels
        .iter()
        .chain(&verdicts)
        .all(|l| l.label.polarity().is_some());
    if binary {
        for l in labels.iter_mut().chain(verdicts.iter_mut()) {
            if let Some(p) = l.label.polarity() {
                l.label = LabelValue::Bool(p);
            }
        }
    }
    let (labels, verdicts) = (&labels[..], &verdicts[..]);
    let humans = group(labels);
    let judges = group(verdicts);
    let cats = categories(labels.iter().chain(verdicts).map(|l| &l.label));
    let numbers: Vec<f64> = cats.iter().map(|c| c.as_number().unwrap_or(0.0)).collect();
    if matches!(options.level, Level::Interval | Level::Ratio)
        && let Some(l) = labels
            .iter()
            .chain(verdicts)
            .find(|l| l.label.as_number().is_none())
    {
        return Err(CalibrationError::NotNumeric {
            item: l.item.clone(),
            value: l.label.to_string(),
            level: if options.level == Level::Interval {
                "interval"
            } else {
                "ratio"
            },
        });
    }
    let polarity: Option<Vec<bool>> = cats.iter().map(LabelValue::polarity).collect();

    let mut unmatched = Unmatched::default();
    let mut listed = BTreeSet::new();
    let mut matched = Vec::new();
    for (id, h) in &humans {
        let Some(j) = judges.get(id) else {
            unmatched.labels_only += 1;
            listed.insert(*id);
            continue;
        };
        match (majority(&cats, h), majority(&cats, j)) {
            (Some(hc), Some(jc)) => {
                let mut segment = h.segment.clone();
                merge_segments(&mut segment, j.segment.iter().copied());
                matched.push(Pair { hc, jc, segment });
            }
            _ => {
                unmatched.ties += 1;
                listed.insert(*id);
            }
        }
    }
    for id in judges.keys().filter(|id| !humans.contains_key(*id)) {
        unmatched.verdicts_only += 1;
        listed.insert(*id);
    }
    unmatched.items = listed.into_iter().take(20).map(str::to_owned).collect();
    if matched.is_empty() {
        return Err(CalibrationError::NoOverlap {
            labels: humans.len(),
            verdicts: judges.len(),
        });
    }

    let cx = Cx {
        k: cats.len(),
        numbers: &numbers,
        polarity: polarity.as_deref(),
        options,
    };
    let all: Vec<&Pair<'_>> = matched.iter().collect();
    let figures = cx.figures(&all);
    let mut confusion_matrix = vec![vec![0u64; cats.len()]; cats.len()];
    for p in &matched {
        confusion_matrix[p.hc][p.jc] += 1;
    }
    let mut segments: BTreeMap<String, BTreeMap<String, Vec<&Pair<'_>>>> = BTreeMap::new();
    for p in &matched {
        for (k, values) in &p.segment {
            let named = segments.entry((*k).to_owned()).or_default();
            for v in values.values() {
                named.entry(v.clone()).or_default().push(p);
            }
        }
    }
    let segments = segments
        .into_iter()
        .map(|(name, values)| {
            let figures = values
                .into_iter()
                .map(|(value, pairs)| (value, cx.figures(&pairs)))
                .collect();
            (name, figures)
        })
        .collect();
    Ok(CalibrationReport {
        figures,
        human_agreement: within(&humans, &cats, &numbers, options),
        judge_agreement: within(&judges, &cats, &numbers, options),
        categories: cats,
        confusion_matrix,
        level: options.level,
        unmatched,
        segments,
    })
}

/// One matched item: the humans' and the judge's category.
struct Pair<'a> {
    hc: usize,
    jc: usize,
    segment: Vec<(&'a str, &'a SegmentValue)>,
}

struct Cx<'a> {
    k: usize,
    numbers: &'a [f64],
    polarity: Option<&'a [bool]>,
    options: &'a CalibrationOptions,
}

fn finite(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

impl Cx<'_> {
    fn figures(&self, pairs: &[&Pair<'_>]) -> Figures {
        let indices: Vec<(usize, usize)> = pairs.iter().map(|p| (p.hc, p.jc)).collect();
        let table = contingency(&indices, self.k);
        let kappa = cohen_kappa(&table, self.options.confidence);
        let units: Vec<Vec<Option<usize>>> = indices
            .iter()
            .map(|&(h, j)| vec![Some(h), Some(j)])
            .collect();
        let confusion = self
            .polarity
            .map(|pol| Confusion::of(indices.iter().map(|&(h, j)| (pol[h], pol[j]))));
        let agree = indices.iter().filter(|(h, j)| h == j).count();
        let c = |f: fn(&Confusion) -> f64| confusion.as_ref().and_then(|c| finite(f(c)));
        Figures {
            n: pairs.len(),
            tp: confusion.map(|c| c.tp),
            fp: confusion.map(|c| c.fp),
            fn_: confusion.map(|c| c.fn_),
            tn: confusion.map(|c| c.tn),
            accuracy: agree as f64 / pairs.len() as f64,
            precision: c(Confusion::precision),
            recall: c(Confusion::recall),
            f1: c(Confusion::f1),
            npv: c(Confusion::npv),
            tnr: c(Confusion::tnr),
            cohen_kappa: kappa.kappa,
            kappa_se: kappa.se,
            kappa_ci95: kappa.ci,
            weighted_kappa: self.options.weights.map(|w| weighted_kappa(&table, w)),
            krippendorff_alpha: krippendorff_alpha(&units, self.numbers, self.options.level),
            judge_positive_rate: c(Confusion::judge_positive_rate),
            human_positive_rate: c(Confusion::human_positive_rate),
            rate_gap: c(|c| c.judge_positive_rate() - c.human_positive_rate()),
            mcnemar_p: c(Confusion::mcnemar_p),
        }
    }
}

/// Agreement among one side's raters, on items with two labels or more.
fn within(
    side: &BTreeMap<&str, Item<'_>>,
    cats: &[LabelValue],
    numbers: &[f64],
    options: &CalibrationOptions,
) -> Option<WithinAgreement> {
    let multi: Vec<&Item<'_>> = side.values().filter(|i| i.values.len() >= 2).collect();
    if multi.is_empty() {
        return None;
    }
    let raters: Vec<Option<&str>> = {
        let set: BTreeSet<Option<&str>> = multi
            .iter()
            .flat_map(|i| i.values.iter().map(|v| v.0))
            .collect();
        set.into_iter().collect()
    };
    // Unnamed raters each get their own column.
    let width = raters
        .len()
        .max(multi.iter().map(|i| i.values.len()).max()?);
    let units: Vec<Vec<Option<usize>>> = multi
        .iter()
        .map(|item| {
            let mut row = vec![None; width];
            for (slot, (rater, v)) in item.values.iter().enumerate() {
                let col = match rater {
                    Some(_) => raters.iter().position(|r| r == rater).unwrap_or(slot),
                    None => slot,
                };
                row[col.min(width - 1)] = Some(index(cats, v));
            }
            row
        })
        .collect();
    let firsts: Vec<(usize, usize)> = multi
        .iter()
        .map(|i| (index(cats, i.values[0].1), index(cats, i.values[1].1)))
        .collect();
    let agree = firsts.iter().filter(|(a, b)| a == b).count();
    Some(WithinAgreement {
        items: multi.len(),
        raters: raters.len(),
        krippendorff_alpha: krippendorff_alpha(&units, numbers, options.level),
        cohen_kappa: cohen_kappa(&contingency(&firsts, cats.len()), options.confidence).kappa,
        percent_agreement: agree as f64 / firsts.len() as f64,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn label(item: &str, v: LabelValue, rater: Option<&str>) -> Label {
        Label {
            item: item.to_owned(),
            label: v,
            rater: rater.map(str::to_owned),
            segment: Default::default(),
            note: None,
        }
    }

    #[test]
    fn items_are_matched_by_id_and_the_rest_is_counted() {
        let labels = vec![
            label("a", LabelValue::Bool(true), None),
            label("b", LabelValue::Bool(false), None),
            label("c", LabelValue::Bool(true), None),
        ];
        let verdicts = vec![
            label("a", LabelValue::Text("success".into()), None),
            label("b", LabelValue::Text("success".into()), None),
            label("z", LabelValue::Text("failure".into()), None),
        ];
        let r = calibrate(labels, verdicts, &CalibrationOptions::default()).unwrap();
        assert_eq!(r.figures.n, 2);
        assert_eq!(
            r.categories,
            vec![LabelValue::Bool(false), LabelValue::Bool(true)]
        );
        assert_eq!(r.figures.accuracy, 0.5);
        assert_eq!(
            (r.figures.tp, r.figures.fp, r.figures.fn_, r.figures.tn),
            (Some(1), Some(1), Some(0), Some(0))
        );
        assert_eq!((r.unmatched.labels_only, r.unmatched.verdicts_only), (1, 1));
        assert_eq!(r.unmatched.items, vec!["c", "z"]);
    }

    #[test]
    fn a_split_between_raters_is_a_tie_and_left_out() {
        let labels = vec![
            label("a", LabelValue::Bool(true), Some("ann")),
            label("a", LabelValue::Bool(false), Some("bob")),
            label("b", LabelValue::Bool(true), Some("ann")),
            label("b", LabelValue::Bool(true), Some("bob")),
        ];
        let verdicts = vec![
            label("a", LabelValue::Bool(true), None),
            label("b", LabelValue::Bool(true), None),
        ];
        let r = calibrate(labels, verdicts, &CalibrationOptions::default()).unwrap();
        assert_eq!((r.figures.n, r.unmatched.ties), (1, 1));
        let h = r.human_agreement.unwrap();
        assert_eq!((h.items, h.raters, h.percent_agreement), (2, 2, 0.5));
    }

    #[test]
    fn an_item_with_several_tags_counts_in_each() {
        let labels: Vec<Label> = [
            r#"{"item": "a", "label": true, "segment": {"tag": ["billing", "refund"], "agent": "x"}}"#,
            r#"{"item": "b", "label": false, "segment": {"tag": "billing", "agent": "x"}}"#,
            r#"{"item": "c", "label": true, "segment": {"tag": [], "agent": "y"}}"#,
        ]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
        let verdicts = vec![
            label("a", LabelValue::Bool(true), None),
            label("b", LabelValue::Bool(true), None),
            label("c", LabelValue::Bool(true), None),
        ];
        let r = calibrate(labels, verdicts, &CalibrationOptions::default()).unwrap();
        let tag = &r.segments["tag"];
        assert_eq!(tag.keys().collect::<Vec<_>>(), ["billing", "refund"]);
        assert_eq!((tag["billing"].n, tag["refund"].n), (2, 1));
        assert_eq!(
            (tag["billing"].accuracy, tag["refund"].accuracy),
            (0.5, 1.0)
        );
        assert_eq!(
            (r.segments["agent"]["x"].n, r.segments["agent"]["y"].n),
            (2, 1)
        );
    }

    #[test]
    fn no_common_item_is_an_error_that_says_so() {
        let labels = vec![label("a", LabelValue::Bool(true), None)];
        let verdicts = vec![label("b", LabelValue::Bool(true), None)];
        let e = calibrate(labels, verdicts, &CalibrationOptions::default()).unwrap_err();
        assert!(e.to_string().contains("same item ids"), "{e}");
    }
}
