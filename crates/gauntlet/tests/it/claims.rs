//! `claims_supported` end to end: `gauntlet check` refuses claim rules that would mislead, at
//! their line; and the audit's "answer only" mutant (the reference's final answer with no call)
//! of every example case whose answer claims a write is a critical `claims_supported` failure
//! from claims derived from the world's tools alone, with every hand-written rule removed.

use std::collections::BTreeSet;

use crate::common::*;

/// The world file with its `claims:` (the file's last key) replaced by `rules`.
fn set_rules(world: &std::path::Path, rules: &str) {
    let text = std::fs::read_to_string(world).unwrap();
    let kept = match text.find("\nclaims:") {
        Some(at) => &text[..=at],
        None => &text,
    };
    std::fs::write(world, format!("{kept}{rules}")).unwrap();
}

#[test]
fn check_refuses_a_holds_group_the_pattern_lacks_and_a_pattern_matching_empty_text() {
    let (_tmp, suite) = example();
    let world = suite.join("worlds/incident-desk.yaml");
    for (rules, said) in [
        (
            "claims:\n  - pattern: '(INC-\\d+) is closed'\n    holds: {\"/incidents/$2/status\": closed}\n",
            "`$2` names no group of the pattern",
        ),
        (
            "claims:\n  - pattern: '(INC-\\d+) is closed'\n    holds: {\"/incidents/$1x/status\": closed}\n",
            "write `${1}x`",
        ),
        (
            "claims:\n  - pattern: '(INC-\\d+)?'\n    holds: {\"/incidents/$1/status\": closed}\n",
            "matches empty text",
        ),
    ] {
        set_rules(&world, rules);
        let o = run(&["check", s(&suite), "--no-play"]);
        assert_eq!(o.code, 2, "{rules}\n{}{}", o.stdout, o.stderr);
        let all = format!("{}{}", o.stdout, o.stderr);
        let line = all
            .lines()
            .find(|l| l.contains(said))
            .unwrap_or_else(|| panic!("{rules}\n{all}"));
        assert!(line.contains("incident-desk.yaml:"), "{line}");
    }
}

/// Rewrites every case with a reference answer to carry a script that only gives that answer;
/// returns the cases scripted.
fn answer_only_scripts(suite: &std::path::Path) -> BTreeSet<String> {
    let mut scripted = BTreeSet::new();
    let mut stack = vec![suite.join("cases")];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            let mut case: Value = match p.extension().and_then(|e| e.to_str()) {
                Some("yaml" | "yml") => serde_saphyr::from_str(&text).unwrap(),
                Some("json") => serde_json::from_str(&text).unwrap(),
                _ => continue,
            };
            let answer = case["reference_trajectory"]
                .as_array()
                .and_then(|steps| steps.iter().rev().find_map(|s| s["answer"].as_str()))
                .map(str::to_owned);
            let Some(answer) = answer else { continue };
            case["scripts"]["answer_only"] = json!([{"answer": answer}]);
            std::fs::remove_file(&p).unwrap();
            std::fs::write(p.with_extension("json"), case.to_string()).unwrap();
            let id = case["case_id"].as_str().or_else(|| case["id"].as_str());
            scripted.insert(id.unwrap_or_default().to_owned());
        }
    }
    scripted
}

#[test]
fn the_answer_only_mutant_of_every_example_case_claiming_a_write_fails_claims_without_rules() {
    let tmp = tempfile::tempdir().unwrap();
    let mut caught = BTreeSet::new();
    let mut scripted = BTreeSet::new();
    for name in ["incident-desk", "safety-desk"] {
        let suite = tmp.path().join(name);
        copy_dir(&repo().join("examples").join(name), &suite);
        for w in std::fs::read_dir(suite.join("worlds")).unwrap() {
            set_rules(&w.unwrap().path(), "");
        }
        scripted.extend(answer_only_scripts(&suite));
        let out = tmp.path().join(format!("{name}-run"));
        let o = run(&[
            "run",
            s(&suite),
            "--agent",
            "script:answer_only",
            "--out",
            s(&out),
            "--quiet",
        ]);
        assert!(o.code <= 1, "{}", o.stderr);
        for t in read_trials(&out) {
            let claims = t["scores"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["name"] == "claims_supported");
            if let Some(c) = claims
                && c["passed"] == false
                && c["severity"] == "critical"
            {
                assert!(
                    c["details"]["claims"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .all(|c| c["rule"].is_null())
                );
                caught.insert(t["case_id"].as_str().unwrap().to_owned());
            }
        }
    }
    // The cases whose reference answer claims a write (the rest say what they read, or why
    // they did not act).
    let claiming = [
        "close-mitigated",
        "reassign",
        "raise-severity",
        "add-note",
        "ambiguous-checkout",
        "close-declined",
        "fault-bad-request",
        "fault-lost-response",
        "TC-SQL-FIX-001",
        "refund-without-confirmation",
    ];
    let expected: BTreeSet<String> = claiming.iter().map(|c| c.to_string()).collect();
    assert_eq!(caught, expected, "scripted: {scripted:?}");
}
