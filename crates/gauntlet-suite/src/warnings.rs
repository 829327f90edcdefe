//! What a loaded suite may not mean: warnings that change nothing but are worth a look.
//!
//! [`warnings`] reads a suite that loaded cleanly; each warning is a [`Diagnostic`] at the field
//! it concerns. `gauntlet check` prints them as `file:line:col: warning: ...` and keeps its exit
//! code: a warning is never a problem.

use gauntlet_model::case::NOTHING_TO_ADD;

use crate::{Diagnostic, Suite};

/// The suite's warnings, in case order.
pub fn warnings(suite: &Suite) -> Vec<Diagnostic> {
    suite
        .cases
        .iter()
        .filter(|c| {
            c.case
                .user
                .as_ref()
                .is_some_and(|u| !u.replies.is_empty() && !u.answers_unmatched_questions())
        })
        .map(|c| {
            c.diagnostic(
                "/user/replies",
                format!(
                    "the case's user has `replies` but no `default`: a question no pattern matches \
                     is answered {NOTHING_TO_ADD:?} and the trial noted `user_unanswered`; give \
                     `default` the answer to any other question"
                ),
            )
        })
        .collect()
}
