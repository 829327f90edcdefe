//! What a run is asked to do, as one value whatever the door: `gauntlet run`'s flags (the CLI
//! flattens [`RunRequest`] into its arguments), `gauntlet.run`'s keyword arguments (a dict,
//! deserialised), a Ray part's options (the same dict). It is validated once, here, with
//! messages that name the option by its key, and becomes a [`Run`] with
//! [`Run::from_request`]. A new run option is a field here and its use in the run.

use std::path::PathBuf;
use std::time::Duration;

use gauntlet_model::{Classified, ErrorKind, Shard};
use gauntlet_process::Isolation;
use gauntlet_suite::Suite;
use serde::{Deserialize, Serialize};

use crate::agents::{GatewayOptions, upstream_key};
use crate::{Run, RunOptions};

/// A run's options. Every field is optional: what is absent takes the suite's value, else the
/// default the field names. Unknown keys are refused (a misspelt option is an error, not
/// silently ignored).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "clap", derive(clap::Args))]
pub struct RunRequest {
    /// The agent under test (default: the suite's `agent`, else script:reference).
    #[cfg_attr(feature = "clap", arg(long))]
    pub agent: Option<String>,
    /// The run folder to write (default: SUITE/.gauntlet/runs/RUN_ID).
    #[cfg_attr(feature = "clap", arg(long))]
    pub out: Option<PathBuf>,
    /// The run's seed (default: the suite's `seed`, else 0).
    #[cfg_attr(feature = "clap", arg(long))]
    pub seed: Option<u64>,
    /// Repetitions of each case (default: the suite's `epochs`, else 1).
    #[cfg_attr(feature = "clap", arg(long))]
    pub epochs: Option<u32>,
    /// Trials running at once (default 4).
    #[cfg_attr(feature = "clap", arg(long))]
    pub concurrency: Option<usize>,
    /// Wall-time limit of one trial, in seconds (default 300); a trial over it ends with status
    /// error.
    #[cfg_attr(feature = "clap", arg(long, value_name = "SECONDS"))]
    pub trial_timeout: Option<f64>,
    /// Play a trial that ends in a harness error (status error, not failed) again, up to N
    /// times, before its error counts; the run says how many trials were retried.
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", default_value_t = 0))]
    pub retry_errors: u32,
    /// Stop starting trials once the trials run so far cost this much (the agent's and the
    /// simulated user's model calls, in euros). The trials already running finish; the run
    /// then stops as an interrupted one does: its finished trials are kept, no verdict is
    /// given (exit 3), and `--resume RUN_DIR` with a larger budget goes on.
    #[cfg_attr(feature = "clap", arg(long, value_name = "EUR"))]
    pub max_cost_eur: Option<f64>,
    /// Apply a suite-wide fault profile from gauntlet.yaml's `fault_profiles` (`none` for none;
    /// default: the suite's `fault_profile`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub faults: Option<String>,
    /// Run every case under one of gauntlet.yaml's `attacks`: its text at its injection vectors,
    /// its goal judged by effect (each case scores `utility` and `security`).
    #[cfg_attr(feature = "clap", arg(long))]
    pub attack: Option<String>,
    /// The model endpoint behind the LLM gateway (an OpenAI-compatible base URL); agents get the
    /// gateway as OPENAI_BASE_URL and never see the upstream key.
    #[cfg_attr(feature = "clap", arg(long))]
    pub gateway_upstream: Option<String>,
    /// Record every model call into this cassette (JSON Lines). (`--record` also works.)
    #[cfg_attr(
        feature = "clap",
        arg(
            long,
            value_name = "CASSETTE",
            alias = "record",
            conflicts_with = "replay_cassette"
        )
    )]
    pub record_cassette: Option<PathBuf>,
    /// Answer model calls from this cassette only: no upstream, no key. Not to be confused
    /// with `--agent replay:FILE`, which replays an agent's recorded tool calls. (`--replay`
    /// also works.)
    #[cfg_attr(feature = "clap", arg(long, value_name = "CASSETTE", alias = "replay"))]
    pub replay_cassette: Option<PathBuf>,
    /// The model that plays users with an LLM `persona`, when their case names none (default:
    /// the suite's `user_model`). Its calls go through the gateway like the agent's.
    #[cfg_attr(feature = "clap", arg(long))]
    pub user_model: Option<String>,
    /// Only run cases whose id contains this text.
    #[cfg_attr(feature = "clap", arg(long))]
    pub filter: Option<String>,
    /// Finish a run that stopped early (killed, crashed): run only the trials RUN_DIR lacks,
    /// with the run's own agent, seed, epochs, fault profile and filter, then write its
    /// results. Refused if the suite changed since the run started.
    #[cfg_attr(feature = "clap", arg(long, value_name = "RUN_DIR", conflicts_with_all = ["agent", "out", "seed", "epochs", "faults", "filter", "record_cassette", "shard", "run_id", "name"]))]
    pub resume: Option<PathBuf>,
    /// With --resume: move lines of trials.jsonl that are not trial records to
    /// trials.corrupt.jsonl (nothing is lost) and run their trials again.
    #[cfg_attr(feature = "clap", arg(long, requires = "resume"))]
    pub set_aside_corrupt: bool,
    /// Run one part of the run, I of N (such as 2/4): the trials whose position in the plan
    /// leaves I-1 when divided by N. The parts of one run (same suite, agent, seed, epochs)
    /// make the whole with `gauntlet merge`; a part exits 0 and leaves the verdict to it.
    /// `auto` takes the part from the environment: GAUNTLET_SHARD=I/N (any CI matrix), else a
    /// Kubernetes Indexed Job's JOB_COMPLETION_INDEX (from 0: index 0 is part 1) with
    /// --shard-count N.
    #[cfg_attr(feature = "clap", arg(long, value_name = "I/N|auto"))]
    pub shard: Option<String>,
    /// With `--shard auto` in an Indexed Job: how many parts there are (the Job's
    /// completions).
    #[cfg_attr(feature = "clap", arg(long, value_name = "N", requires = "shard"))]
    pub shard_count: Option<u32>,
    /// The run's id (letters, digits, `.`, `_`, `-`), so that parts run apart share one (trace
    /// ids derive from it); a fresh one when absent.
    #[cfg_attr(feature = "clap", arg(long))]
    pub run_id: Option<String>,
    /// A name for the run (letters, digits, `.`, `_`, `-`), such as `baseline`: kept in its
    /// header and the suite's index, so that `compare`, `report`, `gate` and `view` run from the
    /// suite's folder take it instead of the run folder (the newest run of that name).
    #[cfg_attr(feature = "clap", arg(long))]
    pub name: Option<String>,
    /// How command agents are isolated: `auto` runs each in a bubblewrap sandbox (own PID and
    /// user namespaces, the host read-only, a private /tmp) when bubblewrap works here, and
    /// warns loudly when it does not; `bubblewrap` refuses to run without it; `none` runs agents
    /// as plain processes (they can then read gauntlet's environment), with a warning.
    #[cfg_attr(feature = "clap", arg(long, value_parser = ["auto", "bubblewrap", "none"]))]
    pub isolation: Option<String>,
}

/// An option of a [`RunRequest`] that cannot be used, named by its key.
#[derive(Debug, thiserror::Error)]
#[error("`{key}` {message}")]
pub struct RequestError {
    /// The option's key (`epochs`, `trial_timeout`, …).
    pub key: &'static str,
    /// What is wrong with it.
    pub message: String,
}

impl Classified for RequestError {
    fn kind(&self) -> ErrorKind {
        ErrorKind::InvalidInput
    }
}

fn bad(key: &'static str, message: impl Into<String>) -> RequestError {
    RequestError {
        key,
        message: message.into(),
    }
}

impl RunRequest {
    /// Every check an option needs before a run starts; the first that fails.
    pub fn validate(&self) -> Result<(), RequestError> {
        if self.epochs == Some(0) {
            return Err(bad("epochs", "must be at least 1"));
        }
        if self.concurrency == Some(0) {
            return Err(bad("concurrency", "must be at least 1 (trials at once)"));
        }
        if let Some(s) = self.trial_timeout
            && !(s > 0.0 && s.is_finite() && s <= 1e9)
        {
            return Err(bad(
                "trial_timeout",
                format!("must be a positive number of seconds, not {s}"),
            ));
        }
        if let Some(eur) = self.max_cost_eur
            && !(eur > 0.0 && eur.is_finite())
        {
            return Err(bad(
                "max_cost_eur",
                format!("must be a positive number of euros, not {eur}"),
            ));
        }
        if self.record_cassette.is_some() && self.replay_cassette.is_some() {
            return Err(bad(
                "record_cassette",
                "and `replay_cassette` exclude each other",
            ));
        }
        if self.shard_count.is_some() && self.shard.is_none() {
            return Err(bad("shard_count", "needs `shard` (auto)"));
        }
        if self.set_aside_corrupt && self.resume.is_none() {
            return Err(bad("set_aside_corrupt", "needs `resume`"));
        }
        self.isolation()?;
        if self.shard.as_deref() != Some("auto") {
            self.shard_part(|_| None)?;
        }
        Ok(())
    }

    /// `isolation`, parsed (default `auto`).
    pub fn isolation(&self) -> Result<Isolation, RequestError> {
        Ok(match self.isolation.as_deref() {
            None | Some("auto") => Isolation::Auto,
            Some("bubblewrap") => Isolation::Bubblewrap,
            Some("none") => Isolation::None,
            Some(other) => {
                return Err(bad(
                    "isolation",
                    format!("must be \"auto\", \"bubblewrap\" or \"none\", not {other:?}"),
                ));
            }
        })
    }

    /// The part of the run to run: `shard` as given, or `auto` read from the environment
    /// `var` reads (GAUNTLET_SHARD=I/N, else JOB_COMPLETION_INDEX of `shard_count` parts).
    pub fn shard_part(
        &self,
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<Option<Shard>, RequestError> {
        let Some(text) = self.shard.as_deref() else {
            return Ok(None);
        };
        if text != "auto" {
            let s: Shard = text.parse().map_err(|e| bad("shard", format!("{e}")))?;
            if self.shard_count.is_some_and(|n| n != s.count) {
                return Err(bad(
                    "shard",
                    format!(
                        "{s} and `shard_count` {} disagree",
                        self.shard_count.unwrap_or_default()
                    ),
                ));
            }
            return Ok(Some(s));
        }
        shard_from_env(self.shard_count, var).map(Some)
    }

    /// The options the plan takes.
    fn run_options(&self, shard: Option<Shard>) -> RunOptions {
        RunOptions {
            agent: self.agent.clone(),
            seed: self.seed,
            epochs: self.epochs,
            filter: self.filter.clone(),
            faults: self.faults.clone(),
            attack: self.attack.clone(),
            shard,
            run_id: self.run_id.clone(),
            name: self.name.clone(),
        }
    }
}

/// `shard: auto`: GAUNTLET_SHARD=I/N, else JOB_COMPLETION_INDEX (from 0) of `count` parts.
fn shard_from_env(
    count: Option<u32>,
    var: impl Fn(&str) -> Option<String>,
) -> Result<Shard, RequestError> {
    if let Some(text) = var("GAUNTLET_SHARD") {
        return text
            .trim()
            .parse()
            .map_err(|e| bad("shard", format!("auto: GAUNTLET_SHARD=`{text}`: {e}")));
    }
    let Some(index) = var("JOB_COMPLETION_INDEX") else {
        return Err(bad(
            "shard",
            "auto found no part: set GAUNTLET_SHARD=I/N, or run in a Kubernetes Indexed Job (JOB_COMPLETION_INDEX) with `shard_count` N",
        ));
    };
    let index: u32 = index.trim().parse().map_err(|_| {
        bad(
            "shard",
            format!("auto: JOB_COMPLETION_INDEX=`{index}` is not a number from 0"),
        )
    })?;
    let Some(count) = count else {
        return Err(bad(
            "shard",
            format!(
                "auto: JOB_COMPLETION_INDEX={index} needs `shard_count` N (the Job's completions)"
            ),
        ));
    };
    if count == 0 || index >= count {
        return Err(bad(
            "shard",
            format!(
                "auto: JOB_COMPLETION_INDEX={index} is not one of `shard_count` {count} parts (0 to {})",
                count.saturating_sub(1)
            ),
        ));
    }
    Ok(Shard {
        index: index + 1,
        count,
    })
}

impl<'s> Run<'s> {
    /// The run `request` asks for, validated; `shard: auto` is read from this process's
    /// environment. The agent is the request's spec (or the suite's); [`Run::agent`] after this
    /// gives one of its own.
    pub fn from_request(suite: &'s Suite, request: RunRequest) -> Result<Self, RequestError> {
        request.validate()?;
        let shard = request.shard_part(|k| std::env::var(k).ok())?;
        let mut run = Run::new(suite)
            .options(request.run_options(shard))
            .gateway(GatewayOptions {
                upstream: request.gateway_upstream.clone(),
                record: request.record_cassette.clone(),
                replay: request.replay_cassette.clone(),
                api_key: upstream_key(),
            })
            .retry_errors(request.retry_errors)
            .isolation(request.isolation()?)
            .user_model(request.user_model.clone())
            .max_cost_eur(request.max_cost_eur);
        if let Some(agent) = &request.agent {
            run = run.agent_spec(agent.clone());
        }
        if let Some(n) = request.concurrency {
            run = run.concurrency(n);
        }
        if let Some(s) = request.trial_timeout {
            run = run.trial_timeout(Duration::from_secs_f64(s));
        }
        if let Some(out) = &request.out {
            run = run.out(out);
        }
        if let Some(dir) = &request.resume {
            run = run.resume(dir, request.set_aside_corrupt);
        }
        Ok(run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_option_is_named_by_its_key() {
        let cases: [(RunRequest, &str); 5] = [
            (
                RunRequest {
                    epochs: Some(0),
                    ..Default::default()
                },
                "`epochs` must be at least 1",
            ),
            (
                RunRequest {
                    trial_timeout: Some(f64::NAN),
                    ..Default::default()
                },
                "`trial_timeout` must be a positive number of seconds, not NaN",
            ),
            (
                RunRequest {
                    isolation: Some("docker".into()),
                    ..Default::default()
                },
                "`isolation` must be \"auto\", \"bubblewrap\" or \"none\", not \"docker\"",
            ),
            (
                RunRequest {
                    max_cost_eur: Some(-1.0),
                    ..Default::default()
                },
                "`max_cost_eur` must be a positive number of euros, not -1",
            ),
            (
                RunRequest {
                    shard: Some("3/2".into()),
                    ..Default::default()
                },
                "`shard` ",
            ),
        ];
        for (request, message) in cases {
            let e = request.validate().unwrap_err().to_string();
            assert!(e.starts_with(message), "{e} / {message}");
        }
    }

    #[test]
    fn an_unknown_key_is_refused() {
        let e = serde_json::from_value::<RunRequest>(serde_json::json!({"epoch": 3}))
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown field `epoch`"), "{e}");
    }

    #[test]
    fn shard_auto_reads_the_environment() {
        let r = RunRequest {
            shard: Some("auto".into()),
            shard_count: Some(4),
            ..Default::default()
        };
        let env = |k: &str| (k == "JOB_COMPLETION_INDEX").then(|| "2".to_owned());
        assert_eq!(
            r.shard_part(env).unwrap(),
            Some(Shard { index: 3, count: 4 })
        );
        let env = |k: &str| (k == "GAUNTLET_SHARD").then(|| "1/2".to_owned());
        assert_eq!(
            r.shard_part(env).unwrap(),
            Some(Shard { index: 1, count: 2 })
        );
    }
}
