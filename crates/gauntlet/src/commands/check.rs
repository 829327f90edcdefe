//! `gauntlet check SUITE`.

use std::path::Path;

use gauntlet_suite::Suite;

use crate::exit::{ExpectedError, GATES_PASSED, INVALID_INPUT};

pub fn check(path: &Path, json: bool, audit: bool) -> Result<i32, ExpectedError> {
    if json {
        return check_json(path, audit);
    }
    let suite = crate::commands::shared::load_suite(path)?;
    crate::say!(
        "ok: suite `{}`: {} cases, {} worlds, {} gates and the built-in `{}`",
        suite.config.name,
        suite.cases.len(),
        suite.worlds.len(),
        suite.config.gates.len(),
        gauntlet_eval::HARNESS_GATE,
    );
    for w in gauntlet_suite::warnings(&suite) {
        crate::note!(
            "{}:{}:{}: warning: {}",
            w.file.display(),
            w.line.max(1),
            w.col.max(1),
            w.message
        );
    }
    if audit {
        let report = crate::commands::audit::audit_suite(&suite, 0, None)?;
        crate::say!("{}", crate::commands::audit::render(&report));
        return Ok(crate::commands::audit::verdict(&report));
    }
    Ok(GATES_PASSED)
}

/// `check --json`: one object whether the suite loads or not; the exit code as without.
fn check_json(path: &Path, audit: bool) -> Result<i32, ExpectedError> {
    let (value, code) = match Suite::load(path) {
        Ok(suite) => {
            let mut value = serde_json::json!({
                "ok": true,
                "suite": suite.config.name,
                "cases": suite.cases.len(),
                "worlds": suite.worlds.len(),
                "gates": suite.gates.len(),
                "problems": [],
                "warnings": gauntlet_suite::warnings(&suite),
            });
            let mut code = GATES_PASSED;
            if audit {
                let report = crate::commands::audit::audit_suite(&suite, 0, None)?;
                code = crate::commands::audit::verdict(&report);
                value["audit"] = serde_json::to_value(&report).map_err(|e| {
                    ExpectedError::harness(format!("failed to serialize the audit: {e}"))
                })?;
            }
            (value, code)
        }
        Err(problems) => (
            serde_json::json!({"ok": false, "problems": problems}),
            INVALID_INPUT,
        ),
    };
    let text = serde_json::to_string_pretty(&value)
        .map_err(|e| ExpectedError::harness(format!("failed to serialize the check: {e}")))?;
    println!("{text}");
    Ok(code)
}
