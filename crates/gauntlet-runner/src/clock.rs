//! The wall clock, read in one place.

/// The current time, RFC 3339 (events' timestamps).
pub fn now() -> String {
    jiff::Timestamp::now().to_string()
}
