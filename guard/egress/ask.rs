//! Asking the guard about a destination no rule covers: one `egress-ask` line on the approvals
//! socket (`policy::egress_ask`), authenticated by the socket token, and one answer back. The
//! connection waits meanwhile, up to the configured time. Fail closed: a guard that cannot be
//! reached, a reply that is not the answer to this ask, or no reply in time is a refusal, and
//! the reason says which.

use crate::policy::egress::DestHost;
use crate::policy::egress_ask::{
    host_text, parse_answer, Answer, AskFrame, EgressAsk, MAX_ANSWER_BYTES, MAX_PATH_CHARS,
};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::UnixStream;
use tokio::sync::Semaphore;

/// Connections that may wait for a person at once; more are refused at once, so a burst of
/// unknown hosts cannot pile up in the inbox.
pub const MAX_WAITING: usize = 32;

/// How the proxy reaches the guard.
pub struct Asker {
    pub socket: PathBuf,
    pub token: String,
    /// How long a connection waits for a person.
    pub wait: Duration,
    /// How long an "allow for a while" lasts.
    pub grant: Duration,
    waiting: Semaphore,
}

/// One destination to ask about.
pub struct Query<'a> {
    pub host: &'a DestHost,
    pub port: u16,
    pub method: &'a str,
    pub path: Option<&'a str>,
    pub client: SocketAddr,
}

impl Asker {
    pub fn new(socket: PathBuf, token: String, wait: Duration, grant: Duration) -> Asker {
        Asker {
            socket,
            token,
            wait,
            grant,
            waiting: Semaphore::new(MAX_WAITING),
        }
    }

    /// Asks and waits; `Err` is the refusal's reason.
    pub async fn ask(&self, q: &Query<'_>) -> Result<Answer, String> {
        let Ok(_slot) = self.waiting.try_acquire() else {
            return Err(format!(
                "{MAX_WAITING} connections already wait for a person; try again later"
            ));
        };
        let id = uuid::Uuid::new_v4().simple().to_string();
        let client = q.client.to_string();
        let path = q.path.map(|p| {
            if p.chars().count() > MAX_PATH_CHARS {
                let mut cut: String = p.chars().take(MAX_PATH_CHARS).collect();
                cut.push('…');
                cut
            } else {
                p.to_owned()
            }
        });
        let frame = AskFrame {
            ty: "egress-ask".into(),
            id: id.clone(),
            token: self.token.clone(),
            ask: EgressAsk {
                host: host_text(q.host),
                port: q.port,
                method: q.method.to_owned(),
                path,
                client: (!client.contains('%')).then_some(client),
                wait_ms: u64::try_from(self.wait.as_millis()).unwrap_or(u64::MAX),
                grant_secs: self.grant.as_secs().max(1),
            },
        };
        let mut line = serde_json::to_vec(&frame).map_err(|e| e.to_string())?;
        line.push(b'\n');
        let unreachable =
            |e: &dyn std::fmt::Display| format!("the guard cannot be reached to ask a person: {e}");
        let mut s =
            match tokio::time::timeout(Duration::from_secs(2), UnixStream::connect(&self.socket))
                .await
            {
                Ok(Ok(s)) => s,
                Ok(Err(e)) => return Err(unreachable(&e)),
                Err(_) => return Err(unreachable(&"connect timed out")),
            };
        s.write_all(&line).await.map_err(|e| unreachable(&e))?;
        // The guard answers at its deadline (the wait); a little more for the answer's trip.
        let limit = self.wait + Duration::from_secs(5);
        let reply = match tokio::time::timeout(limit, read_line(&mut s)).await {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => return Err(format!("no answer from the guard: {e}")),
            Err(_) => return Err("no answer from the guard in time".into()),
        };
        parse_answer(&reply, &id).map_err(|e| match refusal(&reply) {
            Some(why) => format!("the guard refused the ask: {why}"),
            None => format!("the guard's answer was not understood: {e}"),
        })
    }
}

/// One line (without `\n`), at most [`MAX_ANSWER_BYTES`].
async fn read_line(s: &mut UnixStream) -> Result<Vec<u8>, String> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let n = s.read(&mut chunk).await.map_err(|e| e.to_string())?;
        if n == 0 {
            return Err("the guard closed the connection".into());
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(at) = memchr::memchr(b'\n', &buf) {
            buf.truncate(at);
            return Ok(buf);
        }
        if buf.len() > MAX_ANSWER_BYTES {
            return Err("answer too long".into());
        }
    }
}

/// The reason of a socket rejection (`{"type":"decision","decision":"deny","reason":…}`).
fn refusal(line: &[u8]) -> Option<String> {
    let v: serde_json::Value = serde_json::from_slice(line).ok()?;
    (v["type"] == "decision" && v["decision"] == "deny")
        .then(|| v["reason"].as_str().unwrap_or("deny").to_owned())
}
