//! Runs `examples/incident-desk` with an agent written as a Rust closure, as one library call.
//! `cargo run --release -p gauntlet-runner --example custom_agent`
use gauntlet_agent::{conversation::confirm, lock};
use gauntlet_runner::{Run, agent_fn};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/incident-desk");
    let suite = gauntlet_suite::Suite::load(root.as_ref()).map_err(|p| format!("{p:?}"))?;
    // Reads the incident the user names; closes it, once confirmed, when asked to.
    let agent = agent_fn(|input, env| async move {
        let words = input
            .user_input
            .split(|c: char| !c.is_alphanumeric() && c != '-');
        let Some(id) = words.clone().find(|w| w.starts_with("INC-")) else {
            return Ok("Which incident do you mean?".to_owned());
        };
        let got = lock(&env).call_tool(1, "get_incident", json!({"incident_id": id}), None);
        let Ok(incident) = got else {
            return Ok(format!("I could not read {id}."));
        };
        if input.user_input.to_lowercase().contains("close") {
            if !confirm(&env, 2, &format!("Close {id}?")).await.0 {
                return Ok(format!("{id} stays open."));
            }
            let args = json!({"incident_id": id});
            let closed = lock(&env).call_tool(3, "close_incident", args, None);
            return Ok(if closed.is_ok() {
                format!("{id} is closed.")
            } else {
                format!("I could not close {id}.")
            });
        }
        Ok(format!(
            "{id} is {}.",
            incident["status"].as_str().unwrap_or("unknown")
        ))
    });
    let finished = Run::new(&suite)
        .agent("rust:closure", agent)
        .execute(&mut ())
        .await?;
    let r = &finished.results;
    println!(
        "{} trials, pass rate {:?}",
        r.trials.len(),
        r.metrics.get("pass_rate")
    );
    println!("verdict: {:?} ({})", r.verdict, finished.dir.display());
    Ok(())
}
