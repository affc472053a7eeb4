//! The gateway connection: challenge → signed `connect` → invokes, reconnecting as
//! `openclaw::reconnect` says (the identity is re-sent on every connect). When the gateway
//! says the device is not paired it prints the node id and the commands a person must run,
//! once per pairing request; it keeps retrying meanwhile.

use super::identity::{DeviceIdentity, ProofInput};
use super::invoke::{Handler, Requester, Send};
use super::protocol::{self as p, InvokeRequest};
use crate::engine::decision::now_ms;
pub use crate::openclaw::reconnect::SessionError;
use crate::openclaw::reconnect::{Ended, Reconnect};
use crate::openclaw::ws::{challenge, text_of};
use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{mpsc, watch};
use tokio_tungstenite::tungstenite::Message;

/// Connection settings.
pub struct Gateway {
    pub url: String,
    pub token: String,
    pub display_name: String,
    /// Where the node keeps its identity; `approval.json` there tells `doctor` whether the
    /// gateway still waits for `openclaw nodes approve`.
    pub node_dir: std::path::PathBuf,
}

/// Runs sessions until `shutdown`, waiting between them as [`Reconnect`] says. A wait on
/// the gateway's start or on a person's pairing is said once, not at every retry.
pub async fn run(
    gw: Gateway,
    id: Arc<DeviceIdentity>,
    handler: Arc<Handler>,
    mut shutdown: watch::Receiver<bool>,
) {
    let mut reconnect = Reconnect::default();
    let mut said: Option<String> = None;
    while !*shutdown.borrow() {
        let started = std::time::Instant::now();
        let e = match session(&gw, &id, &handler, shutdown.clone()).await {
            Ok(()) => return,
            Err(e) => e,
        };
        let ended = e.ended();
        let text = e.to_string();
        if ended == Ended::Other || said.as_deref() != Some(text.as_str()) {
            match &e {
                SessionError::NotPaired(rid) => print_pairing(id.device_id(), rid),
                e => eprintln!("sanctum-guard node: gateway session ended: {e}"),
            }
        }
        said = Some(text);
        tokio::select! {
            _ = tokio::time::sleep(reconnect.next(ended, started.elapsed())) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// Prints what a person must do when the gateway has not paired this device yet.
fn print_pairing(node_id: &str, rid: &str) {
    eprintln!("sanctum-guard node: NOT PAIRED: this node ({node_id}) waits for approval.");
    eprintln!("sanctum-guard node: on the gateway, run:");
    eprintln!("sanctum-guard node:   openclaw devices approve {rid}");
    eprintln!("sanctum-guard node: then approve its commands:");
    eprintln!("sanctum-guard node:   openclaw nodes pending   # find the node's requestId");
    eprintln!("sanctum-guard node:   openclaw nodes approve <requestId>");
}

/// One gateway session: the signed handshake, then invokes until the gateway closes or the
/// node stops.
async fn session(
    gw: &Gateway,
    id: &DeviceIdentity,
    handler: &Arc<Handler>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), SessionError> {
    let (ws, _) = tokio_tungstenite::connect_async(gw.url.as_str()).await?;
    let (mut sink, mut stream) = ws.split();
    let nonce = challenge(&mut stream).await?;
    sink.send(Message::text(connect_frame(gw, id, handler, &nonce)))
        .await?;
    let (tx, mut rx) = mpsc::unbounded_channel::<String>();
    let send = outbox(tx);
    // Dropped when this session ends, however it ends: its pending invokes are then gone.
    let (_conn, requester) = Requester::new();
    let mut connected = false;
    let mut _approval: Option<AbortOnDrop> = None;
    loop {
        tokio::select! {
            m = stream.next() => {
                let Some(m) = m else { return Err(SessionError::Closed) };
                let m = m?;
                if let Message::Close(_) = m {
                    return Err(SessionError::Closed);
                }
                let Some(v) = text_of(m) else { continue };
                if !connected && v["type"] == "res" && v["id"] == "connect" {
                    connect_answer(&v, id)?;
                    connected = true;
                    _approval = Some(AbortOnDrop(tokio::spawn(watch_approval(
                        gw.url.clone(),
                        gw.token.clone(),
                        id.device_id().to_owned(),
                        gw.node_dir.join(super::pending::STATUS_FILE),
                    ))));
                    continue;
                }
                on_gateway_message(&v, id, handler, &send, &requester);
            }
            Some(line) = rx.recv() => {
                sink.send(Message::text(line)).await?;
            }
            _ = shutdown.changed() => {
                let _ = sink.send(Message::Close(None)).await;
                return Ok(());
            }
        }
    }
}

/// Stops a session's helper task when the session ends.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `connected as node` is not usable yet while the gateway waits for a person to approve the
/// node's commands: says so, naming the request, until it is approved (asked every 5 s).
async fn watch_approval(url: String, token: String, node_id: String, status: std::path::PathBuf) {
    let mut told: Option<String> = None;
    loop {
        let seen = super::pending::surface(&url, &token, &node_id).await;
        super::pending::write_status(&status, seen.as_ref());
        match seen {
            Some(super::pending::Surface::Pending(rid)) => {
                if told.as_deref() != Some(rid.as_str()) {
                    eprintln!(
                        "sanctum-guard node: not usable yet: its commands (system.run) wait for \
                         `openclaw nodes approve {rid}` (see `openclaw nodes pending`)"
                    );
                    told = Some(rid);
                }
            }
            Some(super::pending::Surface::Clear) => {
                if told.is_some() {
                    eprintln!("sanctum-guard node: commands approved: agent execs can reach it");
                }
                return;
            }
            // The gateway does not answer this client (not loopback): nothing to tell.
            None => return,
        }
        tokio::time::sleep(Duration::from_secs(5)).await;
    }
}

/// The `connect` request: the device's identity and its signature over the challenge.
fn connect_frame(gw: &Gateway, id: &DeviceIdentity, handler: &Handler, nonce: &str) -> String {
    let signed_at = now_ms();
    let scopes: Vec<String> = Vec::new();
    let signature = id.sign(&ProofInput {
        client_id: p::CLIENT_ID,
        client_mode: p::CLIENT_MODE,
        role: p::ROLE,
        scopes: &scopes,
        signed_at_ms: signed_at,
        token: &gw.token,
        nonce,
        platform: p::PLATFORM,
        device_family: p::DEVICE_FAMILY,
    });
    let path_env = handler.decider.judge().deployment().agent_path.clone();
    let params = p::connect_params(&p::ConnectInfo {
        display_name: &gw.display_name,
        device_id: id.device_id(),
        public_key: id.public_key(),
        signature: &signature,
        signed_at_ms: signed_at,
        nonce,
        token: &gw.token,
        path_env: &path_env,
    });
    p::req("connect", "connect", params)
}

/// Frames for the gateway, numbered `n0`, `n1`, … and queued for the session's writer.
fn outbox(tx: mpsc::UnboundedSender<String>) -> Arc<Send> {
    let seq = AtomicU64::new(0);
    Arc::new(Box::new(move |method: &str, params: Value| {
        let n = seq.fetch_add(1, Ordering::Relaxed);
        let _ = tx.send(p::req(&format!("n{n}"), method, params));
    }))
}

/// The gateway's answer to `connect`: Ok when connected; not paired yet (the request a
/// person must approve), or refused, otherwise.
fn connect_answer(v: &Value, id: &DeviceIdentity) -> Result<(), SessionError> {
    if v["ok"] == true {
        eprintln!("sanctum-guard node: connected as node {}", id.device_id());
        return Ok(());
    }
    let err = &v["error"];
    if err["code"] == "NOT_PAIRED" || err["details"]["code"] == "PAIRING_REQUIRED" {
        let rid = err["details"]["requestId"]
            .as_str()
            .unwrap_or("<requestId>");
        return Err(SessionError::NotPaired(rid.to_owned()));
    }
    Err(SessionError::Refused(err.to_string()))
}

/// One message from a connected gateway: an invoke is handled in its own task; pairing news
/// and refusals are reported.
fn on_gateway_message(
    v: &Value,
    id: &DeviceIdentity,
    handler: &Arc<Handler>,
    send: &Arc<Send>,
    requester: &Requester,
) {
    match (v["type"].as_str(), v["event"].as_str()) {
        (Some("event"), Some("node.invoke.request")) => {
            let Ok(inv) = serde_json::from_value::<InvokeRequest>(v["payload"].clone()) else {
                tracing::warn!("malformed node.invoke.request");
                return;
            };
            let (h, s, r) = (handler.clone(), send.clone(), requester.clone());
            tokio::spawn(async move { h.handle_for(inv, &s, r).await });
        }
        (Some("event"), Some("node.pair.requested")) => {
            eprintln!("sanctum-guard node: pairing requested: {}", v["payload"]);
        }
        (Some("event"), Some("node.pair.resolved")) => {
            eprintln!("sanctum-guard node: pairing resolved: {}", v["payload"]);
        }
        (Some("res"), _) if v["ok"] == false => {
            let e = &v["error"];
            tracing::warn!(error = %e, "gateway refused a node request");
            if e.to_string().contains("awaiting operator approval") {
                eprintln!(
                    "sanctum-guard node: the gateway waits for `openclaw nodes approve` of node {}",
                    id.device_id()
                );
            }
        }
        _ => {}
    }
}
