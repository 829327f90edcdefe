//! The two kinds of failure every library error belongs to, so that the CLI decides exit codes
//! in one place from the kind, never from the call site.

/// Whose failure an error is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorKind {
    /// The user's input is wrong: a case, world, configuration, argument or stored file
    /// (exit code 2).
    InvalidInput,
    /// The harness itself could not run: a disk, a socket, a runtime (exit code 3).
    Harness,
}

/// An error that knows its [`ErrorKind`].
pub trait Classified: std::error::Error {
    /// Whose failure it is.
    fn kind(&self) -> ErrorKind;
}

/// A deserializer's message with the names of our Rust types said in words: `data did not
/// match any variant of untagged enum ToolRule` becomes `the value matches no form of a tool
/// rule`, `expected struct RubricConfig` becomes `expected a rubric config`.
pub fn without_rust_types(message: &str) -> String {
    fn words(name: &str) -> String {
        let mut out = String::new();
        for (i, c) in name.chars().enumerate() {
            if c.is_uppercase() && i > 0 {
                out.push(' ');
            }
            out.extend(c.to_lowercase());
        }
        out
    }
    fn article(noun: &str) -> &'static str {
        if noun.starts_with(['a', 'e', 'i', 'o', 'u']) {
            "an"
        } else {
            "a"
        }
    }
    let mut out = message.to_owned();
    for (pattern, make) in [
        (
            "data did not match any variant of untagged enum ",
            (|n: &str| {
                format!(
                    "the value matches no form of {} {n} (see docs/reference.md)",
                    article(n)
                )
            }) as fn(&str) -> String,
        ),
        ("expected struct ", |n: &str| {
            format!("expected {} {n}", article(n))
        }),
        ("expected enum ", |n: &str| {
            format!("expected {} {n}", article(n))
        }),
        ("untagged enum ", |n: &str| format!("{} {n}", article(n))),
    ] {
        while let Some(at) = out.find(pattern) {
            let rest = &out[at + pattern.len()..];
            let end = rest
                .find(|c: char| !c.is_alphanumeric() && c != '_')
                .unwrap_or(rest.len());
            let name = words(&rest[..end]);
            let replaced = format!("{}{}{}", &out[..at], make(&name), &rest[end..]);
            out = replaced;
        }
    }
    out
}
