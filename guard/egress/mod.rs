//! Door: the agent's one way out. A forward proxy (`sanctum-guard egress`) that the agent's
//! container reaches on its internal network, and that alone has a route to the outside. It
//! lets through exactly what its egress rules allow (the policy file's `[[egress.rules]]` and
//! its `--allow host:port` entries: `policy::egress`, then the overlay of stored "always"
//! answers: `overlay`), asks a person in the guard's inbox about a destination no rule covers
//! (`ask`, `unlisted`), refuses everything else with the reason (inside the tunnel for a
//! CONNECT when told to: `tunnel_refusal`), and writes every decision and
//! every closed tunnel to its own hash-chained audit log. It judges destinations only: what
//! flows inside a TLS tunnel to an allowed host is not seen (SECURITY.md says what that leaves
//! open). Its provider routes (`route`) are the one place the model key is: the agent calls
//! the proxy itself, which adds the key and speaks TLS to the provider.

pub mod ask;
mod head;
pub mod overlay;
pub mod proxy;
pub mod route;
mod route_tls;
pub mod rules;
mod tunnel_refusal;
mod unlisted;

use crate::audit::event::EgressRecord;
use crate::audit::{AuditError, AuditLog};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// A decision's audit record before it is decided: a deny with no reason yet, nothing
/// connected. The proxy and its routes start every record here, so a field added to the
/// record is set in one place.
pub(crate) fn undecided(client: SocketAddr, method: String, target: String) -> EgressRecord {
    EgressRecord {
        phase: "decided",
        client: client.to_string(),
        method,
        target,
        verdict: "deny",
        reason: String::new(),
        upstream: None,
        bytes_up: None,
        bytes_down: None,
        duration_ms: None,
    }
}

/// `sanctum-guard egress` settings.
pub struct EgressOptions {
    pub listen: SocketAddr,
    /// The rules served (`rules::rule_set`).
    pub rules: Vec<crate::policy::egress::EgressRule>,
    /// Holds the egress audit log (`egress-audit.jsonl`) and its key.
    pub state_dir: PathBuf,
    pub max_connections: usize,
    /// Where to ask a person about a destination no rule covers (`None`: refuse it).
    pub asker: Option<ask::Asker>,
    /// Provider routes (`route::Routes::new`; `Routes::none()` for none).
    pub routes: route::Routes,
    /// Refusals of a CONNECT are given inside the tunnel (`tunnel_refusal`).
    pub refuse_in_tunnel: bool,
    /// An allowed connection waits for its audit record's fsync (`proxy::Options`).
    pub durable_connections: bool,
}

/// Why the proxy could not start.
#[derive(Debug, thiserror::Error)]
pub enum EgressError {
    #[error("the proxy's own network interfaces: {0}")]
    Interfaces(std::io::Error),
    #[error("audit log: {0}")]
    Audit(#[from] AuditError),
    #[error("listen on {addr}: {source}")]
    Listen {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("signals: {0}")]
    Signal(std::io::Error),
    #[error("overlay rules: {0}")]
    Overlay(String),
}

/// Runs the proxy until SIGTERM or SIGINT. The state dir must exist and be the guard's
/// own (the command line checks it as for `serve`).
pub async fn serve(o: EgressOptions) -> Result<(), EgressError> {
    let rules = overlay::LiveRules::load(o.rules, Some(o.state_dir.join(overlay::OVERLAY_FILE)))
        .map_err(EgressError::Overlay)?;
    // Fail closed: without its own networks the proxy cannot tell which names lead home.
    let own = rules::OwnNets::read().map_err(EgressError::Interfaces)?;
    let (audit, _) = AuditLog::open(&o.state_dir.join("egress-audit.jsonl"))?;
    let listener = tokio::net::TcpListener::bind(o.listen)
        .await
        .map_err(|source| EgressError::Listen {
            addr: o.listen,
            source,
        })?;
    // The bound address, not the asked one: `--listen 127.0.0.1:0` takes a free port, and
    // this line is how whoever started the proxy learns which.
    let bound = listener
        .local_addr()
        .map_err(|source| EgressError::Listen {
            addr: o.listen,
            source,
        })?;
    let shown = rules.snapshot();
    eprintln!(
        "sanctum-guard: egress proxy   {bound} ({} rules)",
        shown.len()
    );
    if let Some(a) = &o.asker {
        eprintln!(
            "sanctum-guard: egress asks    {} (waits {} s)",
            a.socket.display(),
            a.wait.as_secs_f32()
        );
    }
    for r in &shown {
        eprintln!(
            "sanctum-guard: egress rule    {}",
            crate::policy::egress::describe(r)
        );
    }
    for line in o.routes.describe() {
        eprintln!("sanctum-guard: egress {line}");
    }
    let (tx, rx) = tokio::sync::watch::channel(false);
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).map_err(EgressError::Signal)?;
    let mut int = signal(SignalKind::interrupt()).map_err(EgressError::Signal)?;
    tokio::spawn(async move {
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        let _ = tx.send(true);
    });
    let opts = proxy::Options {
        rules,
        asker: o.asker,
        own,
        max_connections: o.max_connections,
        head_timeout: Duration::from_secs(10),
        idle_timeout: Duration::from_secs(300),
        routes: o.routes,
        refuse_in_tunnel: o.refuse_in_tunnel,
        durable_connections: o.durable_connections,
    };
    proxy::run(listener, opts, audit, rx).await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_undecided_record_is_a_deny_with_nothing_connected() {
        let r = undecided(
            "10.0.0.4:5000".parse().unwrap(),
            "CONNECT".into(),
            "example.com:443".into(),
        );
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            serde_json::json!({"phase":"decided","client":"10.0.0.4:5000","method":"CONNECT",
                "target":"example.com:443","verdict":"deny","reason":""})
        );
    }
}
