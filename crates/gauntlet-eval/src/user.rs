//! `user_unanswered`: the agent's questions the scripted simulated user had no reply for.
//!
//! A question that no reply's pattern matches, in a case whose user has no `default` and no
//! persona, is answered "I have nothing to add." An agent that then fails fails for the case's
//! user, not for itself (tau2-bench found up to 30 % of failed retail trajectories came from its
//! user simulator), so the trial carries a note naming the questions. The note is worked out
//! from the case and the trajectory, as the user decided, so a stored run re-scores the same.

use gauntlet_model::case::NOTHING_TO_ADD;
use gauntlet_model::{Case, Dimension, Event, Score, Severity, Trajectory, names};
use serde_json::json;

/// The note, when the user had no reply for some question; `None` when every question was
/// answered (or there were none).
pub(crate) fn user_unanswered(case: &Case, t: &Trajectory) -> Option<Score> {
    let default_user = gauntlet_model::UserSpec::default();
    let user = case.user.as_ref().unwrap_or(&default_user);
    if user.answers_unmatched_questions() {
        return None;
    }
    let (events, questions): (Vec<usize>, Vec<&str>) = t
        .events
        .iter()
        .enumerate()
        .filter_map(|(i, e)| match e {
            Event::Question { text, .. } if user.reply_to(text).is_none() => {
                Some((i, text.as_str()))
            }
            _ => None,
        })
        .unzip();
    if questions.is_empty() {
        return None;
    }
    let quoted: Vec<String> = questions.iter().map(|q| format!("{q:?}")).collect();
    Some(Score {
        name: names::USER_UNANSWERED.to_owned(),
        dimension: Dimension::Trajectory,
        value: questions.len() as f64,
        score: 0.0,
        passed: false,
        severity: Severity::Info,
        details: json!({"questions": questions, "answered": NOTHING_TO_ADD}),
        events,
        reason: Some(format!(
            "the simulated user had no reply for {} and said {NOTHING_TO_ADD:?}: give the case's \
             user a reply whose pattern matches, or a `default`",
            quoted.join(", ")
        )),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn trajectory(questions: &[&str]) -> Trajectory {
        let mut events = vec![json!({"type": "user_message", "text": "Close my ticket."})];
        for (i, q) in questions.iter().enumerate() {
            events.push(json!({"type": "question", "step": i + 1, "text": q}));
            events.push(json!({"type": "user_message", "text": NOTHING_TO_ADD}));
        }
        serde_json::from_value(json!({ "events": events })).unwrap()
    }

    fn case(user: serde_json::Value) -> Case {
        serde_json::from_value(
            json!({"case_id": "c", "user_input": "Close my ticket.", "user": user}),
        )
        .unwrap()
    }

    /// Regression (issue 47, item 4): "Could you tell me the ticket number?" against
    /// `pattern: which` got "I have nothing to add." and the trial's failure read as the
    /// agent's. The note names the question.
    #[test]
    fn a_question_no_reply_matches_is_noted_with_its_text() {
        let c = case(json!({"replies": [{"pattern": "which", "reply": "TCK-102"}]}));
        let t = trajectory(&["Which ticket?", "Could you tell me the ticket number?"]);
        let s = user_unanswered(&c, &t).unwrap();
        assert_eq!(
            (s.passed, s.severity, s.value, s.fails_trial()),
            (false, Severity::Info, 1.0, false)
        );
        assert_eq!(
            s.details["questions"],
            json!(["Could you tell me the ticket number?"])
        );
        assert_eq!(s.events, vec![3]);
        assert_eq!(
            s.reason.as_deref(),
            Some(
                "the simulated user had no reply for \"Could you tell me the ticket number?\" and \
                 said \"I have nothing to add.\": give the case's user a reply whose pattern \
                 matches, or a `default`"
            )
        );
    }

    #[test]
    fn no_note_when_every_question_was_answered_or_the_author_chose_a_fallback() {
        let listed = case(json!({"replies": [
            {"pattern": ["which", "ticket number"], "reply": "TCK-102"}
        ]}));
        let t = trajectory(&["Which ticket?", "Could you tell me the TICKET NUMBER?"]);
        assert_eq!(user_unanswered(&listed, &t), None);
        let t = trajectory(&["Anything else?"]);
        for fallback in [
            json!({"replies": [{"pattern": "which", "reply": "TCK-102"}], "default": "No."}),
            json!({"persona": "You are Mia."}),
        ] {
            assert_eq!(user_unanswered(&case(fallback), &t), None);
        }
        // A case without a user answers nothing: its questions are noted.
        let bare = Case {
            user: None,
            ..listed
        };
        assert!(user_unanswered(&bare, &t).is_some());
    }
}
