//! A stored run's judge verdicts, as labels for calibration: one per judged trial, item
//! `CASE#EPOCH`, label the judge's pass/fail, segments the case, its difficulty, its tags (an
//! item counts in each of its tags) and the run's agent.

use std::path::Path;

use gauntlet_model::labels::trial_item;
use gauntlet_model::{JudgeIdentity, JudgeStatus, Label, LabelValue, Segments};

use crate::StoreError;
use crate::run_dir::{read_results, read_trials_lean};

/// A run's verdicts from one judge, and which judge gave them.
#[derive(Debug, Clone)]
pub struct JudgeVerdicts {
    /// The judge: its name, model(s) and rubric hash.
    pub judge: JudgeIdentity,
    /// Its verdicts on the trials it scored.
    pub labels: Vec<Label>,
}

/// Reads the verdicts of the run's judge named `judge` (or its only judge).
pub fn read_judge_verdicts(run: &Path, judge: Option<&str>) -> Result<JudgeVerdicts, StoreError> {
    let results = read_results(run)?;
    let bad = |message: String| StoreError::Format {
        path: run.to_owned(),
        line: 1,
        message,
    };
    let judges = &results.header.judges;
    let spec = match judge {
        Some(name) => judges.iter().find(|j| j.name == name).ok_or_else(|| {
            bad(format!(
                "the run has no judge `{name}`; its judges: {}",
                judges
                    .iter()
                    .map(|j| j.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?,
        None => match judges.as_slice() {
            [only] => only,
            [] => return Err(bad("the run has no LLM judge: its suite's `judges:` is empty, so there are no verdicts to calibrate".to_owned())),
            _ => {
                return Err(bad(format!(
                    "the run has several judges ({}): pick one with --evaluator NAME",
                    judges
                        .iter()
                        .map(|j| j.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
        },
    };
    let mut labels = Vec::new();
    for record in read_trials_lean(run)? {
        let record = record?;
        let Some(outcome) = record
            .judges
            .iter()
            .find(|o| o.judge == spec.name && o.status == JudgeStatus::Scored)
        else {
            continue;
        };
        let Some(passed) = outcome.passed else {
            continue;
        };
        let mut segment = Segments::from([
            ("case", record.case_id.clone()),
            ("agent", results.header.agent.clone()),
        ]);
        if let Some(d) = &record.difficulty {
            segment.insert("difficulty", d.clone());
        }
        if !record.tags.is_empty() {
            segment.insert("tag", record.tags.clone());
        }
        labels.push(Label {
            item: trial_item(&record.case_id, record.epoch),
            label: LabelValue::Bool(passed),
            rater: None,
            segment,
            note: None,
        });
    }
    if labels.is_empty() {
        return Err(bad(format!(
            "judge `{}` scored no trial of this run (every trial was skipped or invalid)",
            spec.name
        )));
    }
    Ok(JudgeVerdicts {
        judge: JudgeIdentity {
            name: spec.name.clone(),
            model: spec.model.clone(),
            rubric_hash: spec.rubric_hash.clone(),
        },
        labels,
    })
}
