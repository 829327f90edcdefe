//! JUnit XML: a testsuite per case, a testcase per trial, failures carrying the failed evaluators.

use std::io::Cursor;

use gauntlet_model::{RunResults, TrialStatus, TrialSummary};
use quick_xml::Writer;
use quick_xml::events::{BytesDecl, BytesEnd, BytesStart, BytesText, Event};

use crate::html::ReportError;

fn failure_text(t: &TrialSummary) -> String {
    t.scores
        .iter()
        .filter(|s| s.fails_trial())
        .map(|s| {
            let details = if s.details.is_null() {
                String::new()
            } else {
                format!(" {}", s.details)
            };
            let head = format!("{} = {} ({:?})", s.name, s.value, s.severity)
                .to_lowercase()
                .replacen(&s.name.to_lowercase(), &s.name, 1);
            match &s.reason {
                Some(why) => format!("{head}: {why}{details}"),
                None => format!("{head}{details}"),
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Renders the run as JUnit XML.
pub fn render_junit(results: &RunResults) -> Result<String, ReportError> {
    let err = |e: std::io::Error| ReportError(e.to_string());
    let mut w = Writer::new_with_indent(Cursor::new(Vec::new()), b' ', 2);
    w.write_event(Event::Decl(BytesDecl::new("1.0", Some("UTF-8"), None)))
        .map_err(err)?;
    let count = |ts: &[&TrialSummary], s: TrialStatus| {
        ts.iter().filter(|t| t.status == s).count().to_string()
    };
    let secs = |ts: &[&TrialSummary]| {
        format!(
            "{:.3}",
            ts.iter().map(|t| t.duration_ms).sum::<f64>() / 1000.0
        )
    };
    let all: Vec<&TrialSummary> = results.trials.iter().collect();
    let mut root = BytesStart::new("testsuites");
    let suite_name = format!("gauntlet: {}", results.header.suite);
    root.push_attribute(("name", suite_name.as_str()));
    root.push_attribute(("tests", all.len().to_string().as_str()));
    root.push_attribute(("failures", count(&all, TrialStatus::Failed).as_str()));
    root.push_attribute(("errors", count(&all, TrialStatus::Error).as_str()));
    root.push_attribute(("time", secs(&all).as_str()));
    w.write_event(Event::Start(root)).map_err(err)?;
    // One testsuite per case, in first-seen order.
    let mut cases: Vec<&str> = Vec::new();
    for t in &results.trials {
        if !cases.contains(&t.case_id.as_str()) {
            cases.push(&t.case_id);
        }
    }
    for case in cases {
        let trials: Vec<&TrialSummary> = results
            .trials
            .iter()
            .filter(|t| t.case_id == case)
            .collect();
        let mut ts = BytesStart::new("testsuite");
        ts.push_attribute(("name", case));
        ts.push_attribute(("tests", trials.len().to_string().as_str()));
        ts.push_attribute(("failures", count(&trials, TrialStatus::Failed).as_str()));
        ts.push_attribute(("errors", count(&trials, TrialStatus::Error).as_str()));
        ts.push_attribute(("skipped", "0"));
        ts.push_attribute(("time", secs(&trials).as_str()));
        ts.push_attribute(("timestamp", results.header.started_at.trim_end_matches('Z')));
        w.write_event(Event::Start(ts)).map_err(err)?;
        for t in trials {
            let mut tc = BytesStart::new("testcase");
            let name = format!("{}#{}", t.case_id, t.epoch);
            let class = format!("{}.{}", results.header.suite, t.case_id);
            tc.push_attribute(("name", name.as_str()));
            tc.push_attribute(("classname", class.as_str()));
            tc.push_attribute(("time", format!("{:.3}", t.duration_ms / 1000.0).as_str()));
            w.write_event(Event::Start(tc)).map_err(err)?;
            match t.status {
                TrialStatus::Passed => {}
                TrialStatus::Failed => {
                    let failed: Vec<&str> = t
                        .scores
                        .iter()
                        .filter(|s| s.fails_trial())
                        .map(|s| s.name.as_str())
                        .collect();
                    let mut f = BytesStart::new("failure");
                    f.push_attribute((
                        "message",
                        format!("failed: {}", failed.join(", ")).as_str(),
                    ));
                    f.push_attribute(("type", "evaluator"));
                    w.write_event(Event::Start(f)).map_err(err)?;
                    w.write_event(Event::Text(BytesText::new(&failure_text(t))))
                        .map_err(err)?;
                    w.write_event(Event::End(BytesEnd::new("failure")))
                        .map_err(err)?;
                }
                TrialStatus::Error => {
                    let mut e = BytesStart::new("error");
                    e.push_attribute(("message", t.error.as_deref().unwrap_or("harness error")));
                    e.push_attribute(("type", "harness"));
                    w.write_event(Event::Empty(e)).map_err(err)?;
                }
            }
            w.write_event(Event::Start(BytesStart::new("system-out")))
                .map_err(err)?;
            let out = format!("trace_id={}\ntags={}", t.trace_id, t.tags.join(","));
            w.write_event(Event::Text(BytesText::new(&out)))
                .map_err(err)?;
            w.write_event(Event::End(BytesEnd::new("system-out")))
                .map_err(err)?;
            w.write_event(Event::End(BytesEnd::new("testcase")))
                .map_err(err)?;
        }
        w.write_event(Event::End(BytesEnd::new("testsuite")))
            .map_err(err)?;
    }
    w.write_event(Event::End(BytesEnd::new("testsuites")))
        .map_err(err)?;
    String::from_utf8(w.into_inner().into_inner()).map_err(|e| ReportError(e.to_string()))
}
