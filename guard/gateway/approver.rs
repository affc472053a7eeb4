//! The guard's approver connection: an operator of the gateway with its own Ed25519 device
//! identity, scopes `operator.admin` + `operator.approvals` (a non-admin approver never sees
//! approvals other devices requested) and caps `exec-approvals` + `plugin-approvals`. Every
//! approval the gateway broadcasts is decided by the engine (the policy at once, or a person
//! through the inbox and web prompt before the deadline) and resolved with a decision the
//! gateway offered. An approval resolved by someone else closes its inbox entry. Reconnects
//! as `openclaw::reconnect` says; resolve frames decided while the gateway was away are sent
//! on reconnect.
//!
//! While the guard is away the gateway has no approval route: it expires each new request at
//! once (`no-approval-route`) and applies `askFallback`, which is `deny` under the Sanctum
//! config.

use super::approval::{self, Kind, Pending};
use super::rpc::Rpc;
use crate::engine::decision::now_ms;
use crate::engine::Engine;
use crate::inbox::Cancel;
use crate::openclaw::identity::{DeviceIdentity, ProofInput};
pub use crate::openclaw::reconnect::SessionError;
use crate::openclaw::reconnect::{Ended, Reconnect};
use crate::openclaw::ws::{challenge, req, text_of};
use crate::policy::request::DecisionKind;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{mpsc, oneshot, watch};
use tokio_tungstenite::tungstenite::Message;

/// How this client names itself in `connect` (fixed ids the gateway accepts).
const CLIENT_ID: &str = "gateway-client";
const CLIENT_MODE: &str = "backend";
const ROLE: &str = "operator";
const PLATFORM: &str = "linux";
const DEVICE_FAMILY: &str = "Linux";
pub const SCOPES: [&str; 2] = ["operator.admin", "operator.approvals"];
pub const CAPS: [&str; 2] = ["exec-approvals", "plugin-approvals"];

/// The approver's settings.
pub struct Approver {
    pub url: String,
    pub token: String,
    /// The longest a person may take (the gateway's own `expiresAtMs` may come first).
    pub ask_timeout_ms: u64,
    /// The deny is sent this long before the gateway's `expiresAtMs`.
    pub margin_ms: u64,
    pub engine: Arc<Engine>,
    pub identity: Arc<DeviceIdentity>,
    /// Outgoing frames and the Agent page's calls on this connection.
    pub rpc: Arc<Rpc>,
    /// Where the last connect answer is kept for `doctor` ([`STATUS_FILE`] in the state dir).
    pub status_path: std::path::PathBuf,
    /// Checks the gateway's posture after each connect and sets the engine's gate.
    pub posture: Arc<super::posture_check::PostureCheck>,
}

/// The approver's last connect answer, in the guard's state dir, for `doctor`.
pub const STATUS_FILE: &str = "gateway-approver.json";

/// Approvals waiting for the engine: a resolve seen from someone else ends the wait.
#[derive(Default)]
struct Waiting {
    by_id: Mutex<HashMap<String, oneshot::Sender<String>>>,
}

impl Waiting {
    fn insert(&self, id: &str) -> oneshot::Receiver<String> {
        let (tx, rx) = oneshot::channel();
        if let Ok(mut m) = self.by_id.lock() {
            m.insert(id.to_owned(), tx);
        }
        rx
    }

    /// Removes `id`; true when it was still waiting (nobody else resolved it).
    fn take(&self, id: &str) -> Option<oneshot::Sender<String>> {
        self.by_id.lock().ok().and_then(|mut m| m.remove(id))
    }
}

/// Runs sessions until `shutdown`, waiting between them as [`Reconnect`] says. A wait on
/// the gateway's start or on a person's pairing is said once, not at every retry.
pub async fn run(a: Arc<Approver>, mut shutdown: watch::Receiver<bool>) {
    let Some(mut rx) = a.rpc.take_rx() else {
        tracing::error!("gateway approver started twice on one connection state");
        return;
    };
    let out = a.rpc.clone();
    let waiting = Arc::new(Waiting::default());
    let mut reconnect = Reconnect::default();
    let mut said: Option<String> = None;
    while !*shutdown.borrow() {
        let started = std::time::Instant::now();
        let result = session(&a, &out, &mut rx, &waiting, shutdown.clone()).await;
        out.set_connected(false);
        let e = match result {
            Ok(()) => return,
            Err(e) => e,
        };
        let ended = e.ended();
        a.posture.gate.set_unreachable(ended == Ended::Unreachable);
        out.drop_stale_calls(&mut rx);
        let text = e.to_string();
        if ended == Ended::Other || said.as_deref() != Some(text.as_str()) {
            match &e {
                SessionError::NotPaired(rid) => {
                    let device = a.identity.device_id();
                    eprintln!(
                        "sanctum-guard: gateway approver NOT PAIRED: device {device} waits for approval."
                    );
                    eprintln!(
                        "sanctum-guard: on the gateway, run:  openclaw devices approve {rid}"
                    );
                }
                e => eprintln!("sanctum-guard: gateway approver: session ended: {e}"),
            }
        }
        said = Some(text);
        tokio::select! {
            _ = tokio::time::sleep(reconnect.next(ended, started.elapsed())) => {}
            _ = shutdown.changed() => return,
        }
    }
}

/// The signed operator `connect` request for `nonce`.
fn connect_frame(a: &Approver, nonce: &str) -> String {
    operator_connect(&a.identity, &a.token, nonce)
}

/// The approver's signed `connect` request (admin + approvals, approval caps) for `nonce`.
pub fn operator_connect(id: &DeviceIdentity, token: &str, nonce: &str) -> String {
    let signed_at = now_ms();
    let scopes: Vec<String> = SCOPES.iter().map(|s| (*s).to_owned()).collect();
    let signature = id.sign(&ProofInput {
        client_id: CLIENT_ID,
        client_mode: CLIENT_MODE,
        role: ROLE,
        scopes: &scopes,
        signed_at_ms: signed_at,
        token,
        nonce,
        platform: PLATFORM,
        device_family: DEVICE_FAMILY,
    });
    let params = json!({"minProtocol":3,"maxProtocol":4,
        "client":{"id":CLIENT_ID,"displayName":"sanctum-guard","version":env!("CARGO_PKG_VERSION"),
                  "platform":PLATFORM,"deviceFamily":DEVICE_FAMILY,"mode":CLIENT_MODE,
                  "instanceId":id.device_id()},
        "role":ROLE,"scopes":scopes,"caps":CAPS,
        "auth":{"token":token},
        "device":{"id":id.device_id(),"publicKey":id.public_key(),"signature":signature,
                  "signedAt":signed_at,"nonce":nonce}});
    req("connect", "connect", params)
}

/// One session: the signed handshake, then approval events until the gateway closes or the
/// guard stops.
async fn session(
    a: &Arc<Approver>,
    out: &Arc<Rpc>,
    rx: &mut mpsc::UnboundedReceiver<String>,
    waiting: &Arc<Waiting>,
    mut shutdown: watch::Receiver<bool>,
) -> Result<(), SessionError> {
    let (ws, _) = tokio_tungstenite::connect_async(a.url.as_str()).await?;
    let (mut sink, mut stream) = ws.split();
    let nonce = challenge(&mut stream).await?;
    sink.send(Message::text(connect_frame(a, &nonce))).await?;
    let mut connected = false;
    let mut _checking = None;
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
                    connect_answer(&v, a.identity.device_id(), &a.status_path)?;
                    connected = true;
                    out.set_connected(true);
                    let task = tokio::spawn(a.posture.clone().watch(out.clone()));
                    _checking = Some(super::posture_check::AbortOnDrop(task));
                    continue;
                }
                on_message(&v, a, out, waiting, &shutdown);
            }
            Some(line) = rx.recv(), if connected => {
                sink.send(Message::text(line)).await?;
            }
            _ = shutdown.changed() => {
                let _ = sink.send(Message::Close(None)).await;
                return Ok(());
            }
        }
    }
}

/// Ok when connected; otherwise not paired yet (the request a person must approve) or the
/// refusal. Kept in the status file for `doctor` either way.
pub(crate) fn connect_answer(
    v: &Value,
    device_id: &str,
    status: &std::path::Path,
) -> Result<(), SessionError> {
    let keep = |state: &str, request_id: Option<&str>, error: Option<&Value>| {
        let s = serde_json::json!({"state": state, "deviceId": device_id, "requestId": request_id,
            "error": error, "atMs": crate::engine::decision::now_ms()});
        if let Err(e) = std::fs::write(status, s.to_string()) {
            tracing::warn!(error = %e, path = %status.display(), "approver status not written");
        }
    };
    if v["ok"] == true {
        keep("paired", None, None);
        eprintln!("sanctum-guard: gateway approver connected as device {device_id}");
        return Ok(());
    }
    let err = &v["error"];
    if err["code"] == "NOT_PAIRED" || err["details"]["code"] == "PAIRING_REQUIRED" {
        let rid = err["details"]["requestId"]
            .as_str()
            .unwrap_or("<requestId>");
        keep("pending", Some(rid), None);
        return Err(SessionError::NotPaired(rid.to_owned()));
    }
    keep("refused", None, Some(err));
    Err(SessionError::Refused(err.to_string()))
}

/// One gateway message: a new approval is decided in its own task; a resolve by someone else
/// ends that task's wait; a refused resolve is logged.
fn on_message(
    v: &Value,
    a: &Arc<Approver>,
    out: &Arc<Rpc>,
    waiting: &Arc<Waiting>,
    shutdown: &watch::Receiver<bool>,
) {
    if v["type"] == "res" {
        if out.answer(v) {
            return;
        }
        if v["ok"] == false {
            tracing::warn!(error = %v["error"], id = %v["id"], "gateway refused an approver request");
        }
        return;
    }
    let event = v["event"].as_str().unwrap_or_default();
    let payload = &v["payload"];
    if let Some(kind) = Kind::of_requested(event) {
        let p = match approval::pending(kind, payload, now_ms(), a.ask_timeout_ms, a.margin_ms) {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e, "malformed approval event: denying");
                if let Some(id) = payload["id"].as_str() {
                    out.send(
                        kind.resolve_method(),
                        approval::resolve_params(id, DecisionKind::Deny),
                    );
                }
                return;
            }
        };
        let elsewhere = waiting.insert(&p.id);
        let (a, out, waiting, shutdown) =
            (a.clone(), out.clone(), waiting.clone(), shutdown.clone());
        tokio::spawn(async move { answer(&a, p, elsewhere, &out, &waiting, shutdown).await });
    } else if Kind::of_resolved(event).is_some() {
        let Some(id) = payload["id"].as_str() else {
            return;
        };
        // Still waiting here means this resolve was not ours.
        if let Some(tx) = waiting.take(id) {
            let _ = tx.send(approval::resolved_by(payload));
        }
    }
}

/// Decides one approval and sends the resolve, unless someone else resolved it first.
async fn answer(
    a: &Approver,
    p: Pending,
    elsewhere: oneshot::Receiver<String>,
    out: &Rpc,
    waiting: &Waiting,
    shutdown: watch::Receiver<bool>,
) {
    let cancel = async move {
        match elsewhere.await {
            Ok(by) => Cancel::ResolvedElsewhere(by),
            Err(_) => std::future::pending().await,
        }
    };
    let (d, _) = a
        .engine
        .decide_until(&p.requester, &p.request, None, shutdown, cancel)
        .await;
    if waiting.take(&p.id).is_none() {
        return; // resolved elsewhere: the inbox entry says by whom
    }
    let decision = approval::wire_decision(d.kind, p.allowed.as_deref());
    out.send(
        p.kind.resolve_method(),
        approval::resolve_params(&p.id, decision),
    );
}
