//! `gauntlet export`: runs as OpenTelemetry traces, read back by OpenTelemetry's own classes.

use crate::common::*;

#[test]
#[cfg_attr(
    not(have_py_otel),
    ignore = "needs the Python package opentelemetry-proto (pip install opentelemetry-proto)"
)]
fn runs_export_as_opentelemetry_traces_that_opentelemetry_reads() {
    if !python_has("opentelemetry.proto") {
        return;
    }
    let (tmp, suite) = example();
    // Tool calls, injected tool faults and every verdict.
    let scripted = tmp.path().join("scripted");
    let o = run(&["run", s(&suite), "--out", s(&scripted), "--quiet"]);
    assert_eq!(o.code, 0, "{}", o.stderr);
    let counts = exported_and_checked(&scripted);
    let trials = read_trials(&scripted);
    let calls: usize = trials
        .iter()
        .map(|t| {
            t["trajectory"]["events"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|e| e["type"] == "tool_call")
                .count()
        })
        .sum();
    let scores: usize = trials
        .iter()
        .map(|t| t["scores"].as_array().unwrap().len())
        .sum();
    assert_eq!(counts["execute_tool"], calls);
    assert_eq!(counts["evaluations"], scores);
    assert_eq!(counts["spans"], trials.len() + calls);
    assert!(
        counts["errors"].as_u64().unwrap() > 0,
        "failed tool calls are error spans"
    );
    // Model calls, two of them failed by injected faults.
    let Some(upstream) = FakeUpstream::start(tmp.path()) else {
        return;
    };
    let file = suite.join("cases/desk/02-lookup-status.yaml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        format!("{text}faults:\n  - {{model: true, calls: [1, 2], kind: unavailable}}\n"),
    )
    .unwrap();
    let model = tmp.path().join("model");
    let o = run(&[
        "run",
        s(&suite),
        "--agent",
        "openai:fake-model",
        "--filter",
        "lookup-status",
        "--gateway-upstream",
        &upstream.url,
        "--out",
        s(&model),
        "--quiet",
    ]);
    assert!(o.code <= 1, "{}", o.stderr);
    let counts = exported_and_checked(&model);
    assert_eq!(counts["chat"], 4, "{counts}");
    assert_eq!(counts["errors"], 2, "{counts}");
}
