//! Online-Mind2Web's 1,284 recorded WebJudge replies, read by the judge's reply parser: each
//! parses to the verdict on its last `Status:` line, read here without the parser.

use gauntlet_eval::judge::parse_reply;
use gauntlet_model::judge::{Criterion, JudgeRubric, Scale, Show};
use serde_json::Value;

fn rubric() -> JudgeRubric {
    JudgeRubric {
        name: "webjudge".to_owned(),
        version: "1".to_owned(),
        instructions: None,
        criteria: vec![Criterion {
            id: "success".to_owned(),
            text: "Did the agent complete the task?".to_owned(),
            scale: Scale::Binary,
            weight: 1.0,
            pass: 0.5,
            dimension: gauntlet_model::Dimension::Outcome,
        }],
        examples: Vec::new(),
        reference: None,
        show: Show::default(),
    }
}

/// The verdict as SOURCES.md states it, read here without the parser: the word after the
/// reply's last `Status:` (any case), without quotes or emphasis.
fn last_status(content: &str) -> String {
    let lower = content.to_lowercase();
    let (_, after) = lower.rsplit_once("status:").expect("a Status: marker");
    after
        .trim_start()
        .trim_start_matches(['"', '\'', '*', '`'])
        .split(|c: char| !c.is_alphabetic())
        .next()
        .unwrap_or_default()
        .to_owned()
}

#[test]
#[cfg_attr(not(have_judges_data), ignore = "needs ../shared/peers/judges")]
fn every_recorded_webjudge_reply_parses_to_its_last_status_line() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/peers/judges/derived/webjudge_responses.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let rubric = rubric();
    let (mut n, mut success) = (0, 0);
    let mut two_markers = Vec::new();
    for line in text.lines() {
        let reply: Value = serde_json::from_str(line).unwrap();
        let content = reply["content"].as_str().unwrap();
        let status = last_status(content);
        let want = match status.as_str() {
            "success" => 1.0,
            "failure" => 0.0,
            other => panic!("a status that is neither: {other}"),
        };
        let parsed = parse_reply(&rubric, content).unwrap();
        assert_eq!(parsed.how, "status_line");
        assert_eq!(parsed.verdict["success"], want, "{content}");
        n += 1;
        success += usize::from(want == 1.0);
        if content.to_lowercase().matches("status:").count() > 1 {
            two_markers.push(format!("{} {}", reply["judge"], reply["task_id"]));
        }
    }
    assert_eq!(n, 1284);
    assert_eq!(success, 255);
    // One reply quotes a `Status:` in its reasoning ("Active filters: Status: Processing")
    // before its verdict: the last marker is the verdict (success), the first would misread it.
    assert_eq!(
        two_markers,
        ["\"webjudge_o4mini\" \"webarena.677\""],
        "replies with two Status: markers"
    );
}
