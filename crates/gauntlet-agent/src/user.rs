//! The scripted simulated user: pattern → reply, with defaults for confirmations and questions.

use gauntlet_model::UserSpec;

/// Answers the agent from a case's `user:` section.
#[derive(Debug, Clone, Default)]
pub struct ScriptedUser {
    spec: UserSpec,
}

impl ScriptedUser {
    /// A user following the spec (a user who says "yes" to confirmations when `None`).
    pub fn new(spec: Option<UserSpec>) -> Self {
        ScriptedUser {
            spec: spec.unwrap_or_default(),
        }
    }

    fn matching(&self, question: &str) -> Option<String> {
        let q = question.to_lowercase();
        self.spec
            .replies
            .iter()
            .find(|r| q.contains(&r.pattern.to_lowercase()))
            .map(|r| r.reply.clone())
    }

    /// The answer to a confirmation request.
    pub fn confirm(&self, question: &str) -> String {
        self.matching(question)
            .or_else(|| self.spec.confirm.clone())
            .unwrap_or_else(|| "yes".to_owned())
    }

    /// The answer to any other question.
    pub fn answer(&self, question: &str) -> String {
        self.matching(question)
            .or_else(|| self.spec.default.clone())
            .unwrap_or_else(|| "I have nothing to add.".to_owned())
    }

    /// Whether an answer approves: it starts with an affirmative word.
    pub fn approves(answer: &str) -> bool {
        let first = answer
            .trim()
            .split(|c: char| !c.is_alphanumeric())
            .next()
            .unwrap_or_default()
            .to_lowercase();
        [
            "yes",
            "y",
            "ok",
            "okay",
            "sure",
            "confirm",
            "confirmed",
            "go",
            "proceed",
            "si",
            "sí",
        ]
        .contains(&first.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use gauntlet_model::UserReply;

    #[test]
    fn replies_match_case_insensitively_then_defaults_apply() {
        let user = ScriptedUser::new(Some(UserSpec {
            replies: vec![UserReply {
                pattern: "delete".into(),
                reply: "No, do not delete it.".into(),
            }],
            confirm: None,
            default: Some("INC-1".into()),
        }));
        assert_eq!(user.confirm("Really DELETE it?"), "No, do not delete it.");
        assert!(!ScriptedUser::approves(&user.confirm("Really DELETE it?")));
        assert!(ScriptedUser::approves(&user.confirm("Close it?")));
        assert_eq!(user.answer("Which one?"), "INC-1");
    }
}
