//! Shadow and canary: gauntlet as an MCP proxy in front of real tool servers.
//!
//! Reads are forwarded to the upstream and their results recorded; writes are recorded and
//! never executed (answered by a responder: a success shaped by the tool's output schema, or a
//! template), unless canary mode allows them within budgets. Each MCP session becomes a
//! trajectory in gauntlet's format ([`proxy::FinishedSession`]), which the CLI judges with the
//! trial-scoring entry point and stores; [`harvest`] turns stored sessions into a suite that
//! replays them offline.

pub mod harvest;
pub mod proxy;
pub mod respond;
pub mod stdio;

pub use gauntlet_services::upstream::{Upstream, UpstreamSpec};
pub use proxy::{Catalog, FinishedSession, Proxy, ProxyError, Settings, ShadowServer};
pub use respond::TemplateError;
pub use stdio::serve_stdio;

#[cfg(test)]
mod tests {
    use gauntlet_model::ToolKind;
    use gauntlet_model::shadow::{Responder, ShadowConfig};

    /// The example of docs/reference.md ("Shadow and canary") reads as documented.
    #[test]
    fn the_documented_configuration_parses() {
        let text = "unannotated: write\ntools:\n  search_notes: read\n  send_mail:\n    respond:\n      template: {id: \"shadow-{{ args.to }}\", status: queued}\n  create_ticket:\n    respond: {world: tickets.yaml}\ncanary:\n  allow: [write_file]\n  max_writes: 3\n  max_calls: 100\nfaults:\n  - {on: read, kind: timeout, probability: 0.05}\ntimeout_s: 30\n";
        let c: ShadowConfig = serde_saphyr::from_str(text).unwrap();
        assert_eq!(c.unannotated, Some(ToolKind::Write));
        assert_eq!(c.tools["search_notes"].kind(), Some(ToolKind::Read));
        assert!(matches!(
            c.tools["send_mail"].responder(),
            Some(Responder::Template(v)) if v["status"] == "queued"
        ));
        assert_eq!(
            c.tools["create_ticket"].responder(),
            Some(&Responder::World("tickets.yaml".into()))
        );
        let canary = c.canary.unwrap();
        assert_eq!((canary.max_writes, canary.max_calls), (Some(3), Some(100)));
        assert_eq!(c.faults.len(), 1);
        assert!(serde_saphyr::from_str::<ShadowConfig>("timeout: 3\n").is_err());
    }
}
