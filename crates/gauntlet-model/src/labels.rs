//! Labels: a human's or a judge's verdict on one item, the input of calibration.
//!
//! One JSON object per line: `{"item": "ID", "label": VALUE}` with VALUE a bool, a number or a
//! string, an optional `"rater"` (several raters may label one item) and an optional
//! `"segment": {"name": "value", ...}` (benchmark, agent, tag) to break the figures down by; a
//! segment may hold a list (`{"tag": ["billing", "refund"]}`: the item counts in each).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One verdict on one item.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Label {
    /// What was judged: a trial (`CASE#EPOCH`), a trajectory id, a task.
    pub item: String,
    /// The verdict.
    pub label: LabelValue,
    /// Who gave it, when items carry several labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rater: Option<String>,
    /// Segments the item belongs to (`{"benchmark": "webarena"}`, `{"tag": ["a", "b"]}`).
    #[serde(default, skip_serializing_if = "Segments::is_empty")]
    pub segment: Segments,
    /// A note on the verdict (kept, not scored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// A label's segments, name to value: a JSON object, kept as a short list (a map per label
/// would weigh more than the label; calibration holds every label of both files).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Segments(Vec<(String, SegmentValue)>);

impl Segments {
    /// Each segment's name and value, in the order given.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &SegmentValue)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Sets a segment (a name given again replaces its value, as in a JSON object read).
    pub fn insert(&mut self, name: impl Into<String>, value: impl Into<SegmentValue>) {
        let (name, value) = (name.into(), value.into());
        match self.0.iter_mut().find(|(k, _)| *k == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name, value)),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl<K: Into<String>, V: Into<SegmentValue>, const N: usize> From<[(K, V); N]> for Segments {
    fn from(pairs: [(K, V); N]) -> Self {
        let mut s = Segments::default();
        for (k, v) in pairs {
            s.insert(k, v);
        }
        s
    }
}

impl Serialize for Segments {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for Segments {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = Segments;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of segment names to a value or a list of values")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Segments, A::Error> {
                let mut s = Segments::default();
                while let Some((k, v)) = map.next_entry::<String, SegmentValue>()? {
                    s.insert(k, v);
                }
                Ok(s)
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

impl JsonSchema for Segments {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "Segments".into()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        <BTreeMap<String, SegmentValue>>::json_schema(generator)
    }
}

/// The value of one segment of a label: one value, or several (an item with two tags counts in
/// both tags' figures).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum SegmentValue {
    /// One value.
    One(String),
    /// Several values.
    Many(Vec<String>),
}

impl SegmentValue {
    /// Its values.
    pub fn values(&self) -> &[String] {
        match self {
            SegmentValue::One(v) => std::slice::from_ref(v),
            SegmentValue::Many(v) => v,
        }
    }
}

impl From<String> for SegmentValue {
    fn from(v: String) -> Self {
        SegmentValue::One(v)
    }
}

impl From<Vec<String>> for SegmentValue {
    fn from(v: Vec<String>) -> Self {
        SegmentValue::Many(v)
    }
}

/// The item id of a trial, as calibration, a run's judge verdicts and the HTML report's labels
/// name it: `CASE#EPOCH`.
pub fn trial_item(case_id: &str, epoch: u32) -> String {
    format!("{case_id}#{epoch}")
}

/// A verdict's value: pass/fail, a grade on a scale, or a category.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum LabelValue {
    /// Pass (`true`) or fail.
    Bool(bool),
    /// A grade or score.
    Number(f64),
    /// A category (`correct`, `partial`, `incorrect`, `success`, ...).
    Text(String),
}

/// Words read as a positive verdict, and as a negative one (case does not matter).
const POSITIVE: [&str; 8] = [
    "pass", "passed", "success", "yes", "correct", "true", "positive", "good",
];
const NEGATIVE: [&str; 9] = [
    "fail",
    "failed",
    "failure",
    "no",
    "incorrect",
    "false",
    "negative",
    "bad",
    "wrong",
];

impl LabelValue {
    /// Whether the value is a positive verdict: `true`, 1 (0 is negative), or a word such as
    /// `pass`, `success`, `correct`; `None` when it is neither (`partial`, `3`).
    pub fn polarity(&self) -> Option<bool> {
        match self {
            LabelValue::Bool(b) => Some(*b),
            LabelValue::Number(n) if *n == 1.0 => Some(true),
            LabelValue::Number(n) if *n == 0.0 => Some(false),
            LabelValue::Number(_) => None,
            LabelValue::Text(t) => {
                let t = t.trim().to_lowercase();
                if POSITIVE.contains(&t.as_str()) {
                    Some(true)
                } else if NEGATIVE.contains(&t.as_str()) {
                    Some(false)
                } else {
                    None
                }
            }
        }
    }

    /// The value as a number, for interval and ratio agreement: a number, or a bool as 0/1.
    pub fn as_number(&self) -> Option<f64> {
        match self {
            LabelValue::Bool(b) => Some(f64::from(u8::from(*b))),
            LabelValue::Number(n) => Some(*n),
            LabelValue::Text(_) => None,
        }
    }

    /// A total order: bools and numbers by value (false = 0, true = 1), then text.
    pub fn order(&self, other: &LabelValue) -> Ordering {
        match (self.as_number(), other.as_number()) {
            (Some(a), Some(b)) => a.total_cmp(&b),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => self.to_string().cmp(&other.to_string()),
        }
    }
}

impl std::fmt::Display for LabelValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LabelValue::Bool(b) => write!(f, "{b}"),
            LabelValue::Number(n) => write!(f, "{n}"),
            LabelValue::Text(t) => f.write_str(t),
        }
    }
}

/// The judge a calibration is for: its model and the hash of its rubric and prompt template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeIdentity {
    /// The judge's name in the suite.
    pub name: String,
    /// The model that judged.
    pub model: String,
    /// SHA-256 of the rubric and template the judge rendered its prompts from.
    pub rubric_hash: String,
}

/// What a calibration must reach before its judge may gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalibrationThresholds {
    /// Cohen's kappa at least this.
    pub min_kappa: f64,
    /// At least this many matched items.
    pub min_items: usize,
}

impl Default for CalibrationThresholds {
    fn default() -> Self {
        CalibrationThresholds {
            min_kappa: 0.6,
            min_items: 30,
        }
    }
}

/// A calibration file: a judge's agreement with human labels, and whether it may gate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CalibrationFile {
    /// The file format (1).
    pub format_version: u32,
    /// The judge, when the verdicts came from a run folder that names it (without it the file
    /// documents an agreement but lets no judge gate).
    pub judge: Option<JudgeIdentity>,
    /// SHA-256 of the label file.
    pub labels_sha256: String,
    /// SHA-256 of the verdicts (file, or the run's verdicts as read).
    pub verdicts_sha256: String,
    /// Matched items.
    pub n: usize,
    /// Cohen's kappa on them.
    pub cohen_kappa: f64,
    /// The thresholds it was held to.
    pub thresholds: CalibrationThresholds,
    /// Whether it meets them.
    pub trusted: bool,
    /// When it was written (RFC 3339).
    pub created_at: String,
    /// Every figure `calibrate --json` prints.
    pub figures: serde_json::Value,
}

/// Krippendorff's level of measurement: what a difference between two values means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Level {
    /// Values are names: equal or not.
    Nominal,
    /// Values are ranks: the distance counts the values used between them.
    Ordinal,
    /// Differences are meaningful: `(c − k)²`.
    Interval,
    /// Ratios are meaningful: `((c − k) / (c + k))²`.
    Ratio,
}

impl Level {
    /// Its name, as `--level` takes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Level::Nominal => "nominal",
            Level::Ordinal => "ordinal",
            Level::Interval => "interval",
            Level::Ratio => "ratio",
        }
    }
}

/// The figures of one set of matched items.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct Figures {
    /// Items with both a label and a verdict.
    pub n: usize,
    /// Both positive (`null` when the values are not pass/fail).
    pub tp: Option<u64>,
    /// The judge positive, the humans negative.
    pub fp: Option<u64>,
    /// The judge negative, the humans positive.
    #[serde(rename = "fn")]
    pub fn_: Option<u64>,
    /// Both negative.
    pub tn: Option<u64>,
    /// Share of items where the judge and the humans agree.
    pub accuracy: f64,
    /// Of the judge's positives, the share the humans call positive.
    pub precision: Option<f64>,
    /// Of the humans' positives, the share the judge finds.
    pub recall: Option<f64>,
    /// Harmonic mean of precision and recall.
    pub f1: Option<f64>,
    /// Negative predictive value.
    pub npv: Option<f64>,
    /// True-negative rate (specificity).
    pub tnr: Option<f64>,
    /// Cohen's kappa.
    pub cohen_kappa: f64,
    /// Its asymptotic standard error (statsmodels' `std_kappa`).
    pub kappa_se: f64,
    /// Its 95 % interval.
    pub kappa_ci95: [f64; 2],
    /// Weighted kappa, when `--weights` was given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weighted_kappa: Option<f64>,
    /// Krippendorff's alpha between the judge and the humans at the chosen level.
    pub krippendorff_alpha: f64,
    /// The judge's share of positives.
    pub judge_positive_rate: Option<f64>,
    /// The humans' share of positives.
    pub human_positive_rate: Option<f64>,
    /// Judge positive rate minus the humans'.
    pub rate_gap: Option<f64>,
    /// McNemar's exact test on the disagreements (`fn` against `fp`).
    pub mcnemar_p: Option<f64>,
}

/// Agreement within one side (several humans, or several judges), on items labelled twice or
/// more there.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct WithinAgreement {
    /// Items with two labels or more.
    pub items: usize,
    /// Raters seen.
    pub raters: usize,
    /// Krippendorff's alpha over every rater (missing values allowed).
    pub krippendorff_alpha: f64,
    /// Cohen's kappa between the first two labels of each item (by rater name).
    pub cohen_kappa: f64,
    /// Share of those pairs that agree.
    pub percent_agreement: f64,
}

/// Items left out, by reason.
#[derive(Debug, Clone, Default, Serialize, Deserialize, JsonSchema)]
pub struct Unmatched {
    /// Items with labels but no verdict.
    pub labels_only: usize,
    /// Items with verdicts but no label.
    pub verdicts_only: usize,
    /// Items whose raters split evenly on a side.
    pub ties: usize,
    /// The first of them, by id.
    pub items: Vec<String>,
}

/// Everything `calibrate` reports.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub struct CalibrationReport {
    /// The overall figures.
    #[serde(flatten)]
    pub figures: Figures,
    /// The categories, in order (the confusion matrix's rows and columns).
    pub categories: Vec<LabelValue>,
    /// Counts: rows the humans' category, columns the judge's.
    pub confusion_matrix: Vec<Vec<u64>>,
    /// Krippendorff's level used.
    pub level: Level,
    /// What was left out.
    pub unmatched: Unmatched,
    /// Agreement among human raters, where items carry two labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub human_agreement: Option<WithinAgreement>,
    /// Agreement among judges (models or samples), where items carry two verdicts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub judge_agreement: Option<WithinAgreement>,
    /// The same figures per segment name and value.
    pub segments: BTreeMap<String, BTreeMap<String, Figures>>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn segments_read_and_write_as_a_json_object() {
        let text =
            r#"{"item":"a","label":true,"segment":{"tag":["x","y"],"agent":"b","agent":"c"}}"#;
        let label: Label = serde_json::from_str(text).unwrap();
        let got: Vec<(&str, &SegmentValue)> = label.segment.iter().collect();
        // A name given twice keeps its last value, as a JSON object read into a map does.
        assert_eq!(
            got,
            [
                ("tag", &SegmentValue::Many(vec!["x".into(), "y".into()])),
                ("agent", &SegmentValue::One("c".into()))
            ]
        );
        let again = serde_json::to_value(&label).unwrap();
        assert_eq!(
            again["segment"],
            serde_json::json!({"tag": ["x", "y"], "agent": "c"})
        );
        let bare: Label = serde_json::from_str(r#"{"item":"a","label":1}"#).unwrap();
        assert!(bare.segment.is_empty());
        assert!(
            serde_json::to_value(&bare)
                .unwrap()
                .get("segment")
                .is_none()
        );
        assert!(serde_json::from_str::<Label>(r#"{"item":"a","label":1,"segment":[1]}"#).is_err());
    }
}
