//! Deterministic trial seeds and W3C trace ids.

use sha2::{Digest, Sha256};

/// The seed of one trial, derived from the run's seed, the case and the epoch, so that the same
/// run seed gives the same trial seeds whatever the order or concurrency.
pub fn trial_seed(run_seed: u64, case_id: &str, epoch: u32) -> u64 {
    let mut h = Sha256::new();
    h.update(run_seed.to_le_bytes());
    h.update(case_id.as_bytes());
    h.update(epoch.to_le_bytes());
    let d = h.finalize();
    u64::from_le_bytes(d[..8].try_into().unwrap_or_default())
}

/// A W3C trace id (32 lowercase hex digits, never all zero) unique to a run, case and epoch.
pub fn trace_id(run_id: &str, case_id: &str, epoch: u32) -> String {
    let mut h = Sha256::new();
    h.update(run_id.as_bytes());
    h.update([0]);
    h.update(case_id.as_bytes());
    h.update(epoch.to_le_bytes());
    let d = h.finalize();
    let mut id = gauntlet_model::digest::hex(&d[..16]);
    if id.bytes().all(|b| b == b'0') {
        id.replace_range(31.., "1");
    }
    id
}

/// A run id that sorts by time: `20261130T071403Z-1a2b3c`; the one scheme every run folder's
/// id follows (see [`new_run_id_for`]).
pub fn new_run_id() -> String {
    let now = gauntlet_store::clock::instant();
    let stamp = now.strftime("%Y%m%dT%H%M%SZ").to_string();
    let noise = gauntlet_model::digest::sha256_hex(
        format!("{}{}", now.as_nanosecond(), std::process::id()).as_bytes(),
    );
    format!("{stamp}-{}", &noise[..6])
}

/// The id of a run that did not run a suite, named for what made it: `score-`, `shadow-` or
/// `otlp-` before a [`new_run_id`].
pub fn new_run_id_for(kind: &str) -> String {
    format!("{kind}-{}", new_run_id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trace_ids_are_w3c_shaped_and_distinct() {
        let a = trace_id("run", "case", 0);
        let b = trace_id("run", "case", 1);
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }

    #[test]
    fn seeds_depend_on_run_seed_case_and_epoch() {
        assert_eq!(trial_seed(1, "c", 0), trial_seed(1, "c", 0));
        assert_ne!(trial_seed(1, "c", 0), trial_seed(2, "c", 0));
        assert_ne!(trial_seed(1, "c", 0), trial_seed(1, "c", 1));
    }
}
