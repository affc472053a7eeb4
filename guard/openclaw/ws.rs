//! The gateway WebSocket handshake as every client of ours speaks it: frames are JSON text,
//! the gateway opens with `connect.challenge` (its nonce is what the device proof signs), and
//! requests are `{"type":"req","id","method","params"}`.

use futures_util::StreamExt;
use serde_json::{json, Value};
use std::time::Duration;
use tokio_tungstenite::tungstenite::{Error as WsError, Message};

/// How long the gateway may take to send its challenge.
pub const CHALLENGE_WAIT: Duration = Duration::from_secs(10);

/// Why no challenge nonce was read.
#[derive(Debug, thiserror::Error)]
pub enum ChallengeError {
    #[error("websocket: {0}")]
    Ws(#[from] WsError),
    #[error("the gateway closed the connection")]
    Closed,
    #[error("no connect.challenge from the gateway")]
    NoChallenge,
}

/// A text frame as JSON; anything else (binary, ping, bad JSON) is `None`.
pub fn text_of(m: Message) -> Option<Value> {
    match m {
        Message::Text(t) => serde_json::from_str(t.as_str()).ok(),
        _ => None,
    }
}

/// A request frame to the gateway.
pub fn req(id: &str, method: &str, params: Value) -> String {
    json!({"type":"req","id":id,"method":method,"params":params}).to_string()
}

/// The nonce of the gateway's `connect.challenge` (within [`CHALLENGE_WAIT`]).
pub async fn challenge<S>(stream: &mut S) -> Result<String, ChallengeError>
where
    S: futures_util::Stream<Item = Result<Message, WsError>> + Unpin,
{
    tokio::time::timeout(CHALLENGE_WAIT, async {
        while let Some(m) = stream.next().await {
            if let Some(v) = text_of(m?) {
                if v["event"] == "connect.challenge" {
                    return Ok(v["payload"]["nonce"].as_str().map(str::to_owned));
                }
            }
        }
        Err(ChallengeError::Closed)
    })
    .await
    .map_err(|_| ChallengeError::NoChallenge)??
    .ok_or(ChallengeError::NoChallenge)
}
