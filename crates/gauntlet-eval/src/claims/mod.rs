//! `claims_supported`: what the agent says it did, against what the world says happened.
//!
//! The answer's claims come from the world itself ([`Vocabulary`], derived from its write tools,
//! their handlers and enum values) read by a small grammar of sentences and clauses ([`read`]),
//! and from the world's hand-written rules for what derivation cannot see ([`rule_problems`]
//! refuses rules that would mislead). Each claim is checked against the trace and the final
//! state ([`check`]); a false claim of a write is critical. `docs/claims.md` documents it.

mod grammar;
mod rules;
mod score;
mod verify;
mod vocab;

pub use grammar::{Claim, ClaimKind, MAX_CLAIMS, Reading, read};
pub use rules::{RuleProblem, rule_problems};
pub use score::claims_supported;
pub use verify::{Checked, Failure, check};
pub use vocab::Vocabulary;
