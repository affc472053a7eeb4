//! Is this node's command surface still waiting for a person? The gateway does not tell the
//! node: `node.pair.*` events need the `operator.pairing` scope, and `hello-ok` says nothing
//! about it. So the node asks as `openclaw nodes pending` does: a short operator session with
//! the gateway token (no device: the gateway keeps the requested scopes only for a local CLI
//! client with shared auth, so this answers on loopback and is `None` elsewhere), then
//! `node.pair.list`, and looks for its own node id.

use super::protocol as p;
use futures_util::{SinkExt, StreamExt};
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::Message;

/// The node's last view of its approval, in its identity dir, for `doctor`.
pub const STATUS_FILE: &str = "approval.json";

/// Records what the gateway said (`unknown` when it could not tell); best effort.
pub fn write_status(path: &std::path::Path, s: Option<&Surface>) {
    let v = match s {
        Some(Surface::Pending(rid)) => json!({"state":"pending","requestId":rid}),
        Some(Surface::Clear) => json!({"state":"approved"}),
        None => json!({"state":"unknown"}),
    };
    let v = json!({"state":v["state"],"requestId":v["requestId"],"atMs":crate::engine::decision::now_ms()});
    if let Err(e) = std::fs::write(path, v.to_string()) {
        tracing::debug!(error = %e, path = %path.display(), "approval status not written");
    }
}

/// What the gateway says about this node's commands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Surface {
    /// Waiting for `openclaw nodes approve <request id>`.
    Pending(String),
    /// Nothing pending for this node.
    Clear,
}

/// Asks the gateway at `url` (within 10 s); `None` when it cannot tell.
pub async fn surface(url: &str, token: &str, node_id: &str) -> Option<Surface> {
    tokio::time::timeout(Duration::from_secs(10), ask(url, token, node_id))
        .await
        .ok()
        .flatten()
}

async fn ask(url: &str, token: &str, node_id: &str) -> Option<Surface> {
    let (ws, _) = tokio_tungstenite::connect_async(url).await.ok()?;
    let (mut sink, mut stream) = ws.split();
    while next(&mut stream).await?["event"] != "connect.challenge" {}
    let connect = json!({"minProtocol":3,"maxProtocol":4,
        "client":{"id":"cli","version":env!("CARGO_PKG_VERSION"),"platform":p::PLATFORM,"mode":"cli"},
        "role":"operator","scopes":["operator.pairing"],"caps":[],"auth":{"token":token}});
    sink.send(Message::text(p::req("pc", "connect", connect)))
        .await
        .ok()?;
    let list = loop {
        let v = next(&mut stream).await?;
        if v["type"] == "res" && v["id"] == "pc" {
            if v["ok"] != true {
                return None;
            }
            sink.send(Message::text(p::req("pl", "node.pair.list", json!({}))))
                .await
                .ok()?;
        } else if v["type"] == "res" && v["id"] == "pl" {
            break v;
        }
    };
    let _ = sink.send(Message::Close(None)).await;
    if list["ok"] != true {
        return None;
    }
    let pending = list["payload"]["pending"].as_array()?;
    Some(
        pending
            .iter()
            .find(|e| e["nodeId"] == node_id)
            .and_then(|e| e["requestId"].as_str())
            .map_or(Surface::Clear, |r| Surface::Pending(r.to_owned())),
    )
}

/// The next JSON text frame; `None` when the connection ends.
async fn next<S>(stream: &mut S) -> Option<Value>
where
    S: futures_util::Stream<Item = Result<Message, tokio_tungstenite::tungstenite::Error>> + Unpin,
{
    while let Some(m) = stream.next().await {
        if let Message::Text(t) = m.ok()? {
            if let Ok(v) = serde_json::from_str::<Value>(t.as_str()) {
                return Some(v);
            }
        }
    }
    None
}
