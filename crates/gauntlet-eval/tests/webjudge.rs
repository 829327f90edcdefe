//! Online-Mind2Web's 1,284 recorded WebJudge replies, read by the judge's reply parser: each
//! parses to the verdict on its last `Status:` line. Replies whose reasoning contradicts their
//! own status are listed (they are the judge's inconsistency, not the parser's).

use gauntlet_eval::judge::{last_line_value, parse_reply};
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

#[test]
#[cfg_attr(not(have_judges_data), ignore = "needs ../shared/peers/judges")]
fn every_recorded_webjudge_reply_parses_to_its_last_status_line() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../../shared/peers/judges/derived/webjudge_responses.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let rubric = rubric();
    let (mut n, mut success, mut contradicted) = (0, 0, Vec::new());
    for line in text.lines() {
        let reply: Value = serde_json::from_str(line).unwrap();
        let content = reply["content"].as_str().unwrap();
        let status = last_line_value(content, "Status").unwrap().to_lowercase();
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
        // A success whose reasoning says the task was not completed, or the reverse.
        let thoughts = content.to_lowercase();
        let says_failed = thoughts.contains("failed to") || thoughts.contains("did not complete");
        let says_done = thoughts.contains("successfully completed");
        if (want == 1.0 && says_failed && !says_done) || (want == 0.0 && says_done && !says_failed)
        {
            contradicted.push(format!(
                "{} {} {}",
                reply["judge"], reply["agent"], reply["task_id"]
            ));
        }
    }
    assert_eq!(n, 1284);
    assert_eq!(success, 255);
    eprintln!(
        "{} replies whose reasoning reads against their status: {contradicted:#?}",
        contradicted.len()
    );
}
