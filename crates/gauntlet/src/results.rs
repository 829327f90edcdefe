//! The clock of the CLI: the one place commands read the time for run headers and results.

/// The current time, RFC 3339 in UTC, to the second.
pub fn now() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .map_or_else(|_| jiff::Timestamp::now().to_string(), |t| t.to_string())
}
