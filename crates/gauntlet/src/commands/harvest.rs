//! `gauntlet harvest LAKE --out SUITE_DIR [--where EXPR]`: the flywheel.

use std::path::Path;

use gauntlet_online::harvest::{Feedback, Filter, Harvester};
use gauntlet_online::lake::{files, read_feedback_file, read_trace_file};
use gauntlet_online::window::Source;

use crate::exit::{ExpectedError, GATES_PASSED};

pub fn harvest(
    lake: &str,
    out: &Path,
    filter: Option<&str>,
    all: bool,
) -> Result<i32, ExpectedError> {
    let (dir, from, to) = match Source::parse(lake).map_err(ExpectedError::from)? {
        Source::Lake { dir, from, to } => (dir, from, to),
        Source::Run(p) => {
            return Err(ExpectedError::input(format!(
                "{}: not a lake (a folder with traces/, written by `gauntlet online`)",
                p.display()
            )));
        }
    };
    if out.join("gauntlet.yaml").exists() {
        return Err(ExpectedError::input(format!(
            "{} already holds a suite; harvest into a new folder",
            out.display()
        )));
    }
    let filter = filter
        .map(Filter::compile)
        .transpose()
        .map_err(ExpectedError::from)?;
    let lake_err = |e: gauntlet_online::lake::LakeError| ExpectedError::input(e.to_string());
    // Posted feedback is small: read it whole (all days: feedback may come after its trace).
    let mut posted = Vec::new();
    if dir.join("feedback").is_dir() {
        for f in files(&dir, "feedback", None, None).map_err(lake_err)? {
            posted.extend(read_feedback_file(&f).map_err(lake_err)?);
        }
    }
    let feedback = Feedback::by_trace(posted);
    // Traces stream, one file at a time.
    let mut h = Harvester::default();
    h.all = all;
    for f in files(&dir, "traces", from.as_deref(), to.as_deref()).map_err(lake_err)? {
        for row in read_trace_file(&f).map_err(lake_err)? {
            h.offer(&row, feedback.get(&row.trace_id), filter.as_ref())
                .map_err(ExpectedError::from)?;
        }
    }
    let harvested = h.finish(lake);
    if harvested.cases == 0 {
        return Err(ExpectedError::input(format!(
            "no candidates among {} traces of {lake} (none failed, was rated below zero or abandoned{})",
            harvested.examined,
            if filter.is_some() {
                ", or --where kept none"
            } else {
                ""
            }
        )));
    }
    crate::commands::shared::write_files(out, &harvested.files)?;
    // What was written must load.
    crate::commands::shared::load_suite(out)?;
    crate::note!(
        "wrote {} candidate cases to {} ({} traces examined, {} repeats folded in); each is tagged needs-review",
        harvested.cases,
        out.display(),
        harvested.examined,
        harvested.duplicates
    );
    for s in &harvested.skipped {
        crate::note!("  left out: {s}");
    }
    Ok(GATES_PASSED)
}
