//! The wall clock, read in one place: every timestamp gauntlet writes (events, run headers,
//! results, trial starts, the judge cache) and every run id comes from here.

/// The current instant.
pub fn instant() -> jiff::Timestamp {
    jiff::Timestamp::now()
}

/// The current time, RFC 3339 in UTC, to the nanosecond (events' timestamps).
pub fn now() -> String {
    instant().to_string()
}

/// The current time, RFC 3339 in UTC, to the second (run headers, results, calibration files).
pub fn stamp() -> String {
    let now = instant();
    now.round(jiff::Unit::Second).unwrap_or(now).to_string()
}
