//! The Agent page's vocabulary: what a person may ask of the agent through the guard's own
//! gateway connection (list sessions, read a session's last message, start a task, stop a
//! run). The web door holds an [`AgentControl`]; the gateway door implements [`AgentLink`];
//! `serve` plugs one into the other, so neither door imports the other. Every action is
//! audited with who did it, and a task's text passes the same chat-directive check as the
//! front door (the guard's connection is an admin: it must not carry `/exec … ask=off`).

use super::Engine;
use crate::audit::event::{AgentAction, AuditEvent};
use crate::policy::gateway_filter::find_directive;
use serde_json::{json, Value};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// Why an agent call failed.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("no gateway connection: {0}")]
    Unavailable(String),
    #[error("the gateway refused: {0}")]
    Gateway(String),
    #[error("refused: {0}")]
    Forbidden(String),
    #[error("bad request: {0}")]
    Bad(String),
    #[error("the gateway did not answer in time")]
    Timeout,
    #[error("audit log unavailable: nothing was sent")]
    Audit,
}

/// The only calls the page can make.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentCall {
    ListSessions {
        limit: u32,
    },
    History {
        session_key: String,
        limit: u32,
    },
    Send {
        session_key: String,
        message: String,
        idempotency_key: String,
    },
    Abort {
        session_key: String,
    },
}

impl AgentCall {
    pub fn method(&self) -> &'static str {
        match self {
            AgentCall::ListSessions { .. } => "sessions.list",
            AgentCall::History { .. } => "chat.history",
            AgentCall::Send { .. } => "chat.send",
            AgentCall::Abort { .. } => "chat.abort",
        }
    }

    pub fn params(&self) -> Value {
        match self {
            AgentCall::ListSessions { limit } => json!({"limit": limit}),
            AgentCall::History { session_key, limit } => {
                json!({"sessionKey": session_key, "limit": limit})
            }
            AgentCall::Send {
                session_key,
                message,
                idempotency_key,
            } => json!({
                "sessionKey": session_key, "message": message, "idempotencyKey": idempotency_key
            }),
            AgentCall::Abort { session_key } => json!({"sessionKey": session_key}),
        }
    }
}

pub type LinkFuture<'a> = Pin<Box<dyn Future<Output = Result<Value, AgentError>> + Send + 'a>>;

/// A gateway connection that answers [`AgentCall`]s with the response's `payload`.
pub trait AgentLink: Send + Sync {
    fn call(&self, call: AgentCall) -> LinkFuture<'_>;
}

/// Sessions listed at most (each costs one `chat.history`).
pub const MAX_SESSIONS: u32 = 50;
/// A task's text at most, in bytes.
pub const MAX_MESSAGE: usize = 64 * 1024;

/// The page's agent actions, audited.
pub struct AgentControl {
    link: Arc<dyn AgentLink>,
    engine: Arc<Engine>,
}

/// A session key a person may name: what OpenClaw's own keys look like, nothing else.
fn key_ok(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 200
        && k.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_:.@+".contains(&b))
}

impl AgentControl {
    pub fn new(link: Arc<dyn AgentLink>, engine: Arc<Engine>) -> Self {
        AgentControl { link, engine }
    }

    /// Each session's row from `sessions.list` with `lastMessage` (the newest message of its
    /// `chat.history`, or null when that failed).
    pub async fn sessions(&self) -> Result<Vec<Value>, AgentError> {
        let list = self
            .link
            .call(AgentCall::ListSessions {
                limit: MAX_SESSIONS,
            })
            .await?;
        let rows = list["sessions"].as_array().cloned().unwrap_or_default();
        let mut out = Vec::with_capacity(rows.len());
        for mut row in rows.into_iter().take(MAX_SESSIONS as usize) {
            let last = match row["key"].as_str() {
                Some(k) => self
                    .link
                    .call(AgentCall::History {
                        session_key: k.to_owned(),
                        limit: 1,
                    })
                    .await
                    .ok()
                    .and_then(|h| h["messages"].as_array().and_then(|m| m.last().cloned())),
                None => None,
            };
            row["lastMessage"] = last.unwrap_or(Value::Null);
            out.push(row);
        }
        Ok(out)
    }

    /// `chat.send` into `session_key`, or a new session; refused when the text carries a chat
    /// directive. Audited (before it is sent) with `who`.
    pub async fn new_task(
        &self,
        who: &str,
        session_key: Option<String>,
        message: &str,
    ) -> Result<Value, AgentError> {
        let key = session_key.unwrap_or_else(|| format!("agent:main:web-{}", uuid::Uuid::new_v4()));
        let refusal = if !key_ok(&key) {
            Some(AgentError::Bad(
                "sessionKey has characters a session key never has".into(),
            ))
        } else if message.trim().is_empty() || message.len() > MAX_MESSAGE {
            Some(AgentError::Bad(format!(
                "message is 1 to {MAX_MESSAGE} bytes"
            )))
        } else {
            let tables = self.engine.judge().gateway_tables();
            find_directive(&tables.chat_directives, message).map(|d| {
                AgentError::Forbidden(format!(
                    "the message carries the chat directive {d}: only the guard changes exec settings"
                ))
            })
        };
        let idem = uuid::Uuid::new_v4().to_string();
        if let Some(e) = refusal {
            self.audit(who, "task", &key, None, Some(&e)).await;
            return Err(e);
        }
        if !self.audit(who, "task", &key, Some(&idem), None).await {
            return Err(AgentError::Audit);
        }
        let call = AgentCall::Send {
            session_key: key.clone(),
            message: message.to_owned(),
            idempotency_key: idem,
        };
        let mut r = self.link.call(call).await?;
        r["sessionKey"] = Value::String(key);
        Ok(r)
    }

    /// `chat.abort` of the session's active run(s). Audited (before it is sent) with `who`.
    pub async fn stop(&self, who: &str, session_key: &str) -> Result<Value, AgentError> {
        if !key_ok(session_key) {
            let e = AgentError::Bad("not a session key".into());
            self.audit(who, "stop", session_key, None, Some(&e)).await;
            return Err(e);
        }
        if !self.audit(who, "stop", session_key, None, None).await {
            return Err(AgentError::Audit);
        }
        self.link
            .call(AgentCall::Abort {
                session_key: session_key.to_owned(),
            })
            .await
    }

    async fn audit(
        &self,
        who: &str,
        action: &str,
        key: &str,
        run_id: Option<&str>,
        refused: Option<&AgentError>,
    ) -> bool {
        self.engine
            .record(AuditEvent::AgentAction(AgentAction {
                who: who.to_owned(),
                action: action.to_owned(),
                session_key: key.chars().take(200).collect(),
                run_id: run_id.map(str::to_owned),
                refused: refused.map(|e| e.to_string()),
            }))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_keys_are_plain() {
        for (k, ok) in [
            ("agent:main:main", true),
            ("agent:main:web-0f1e", true),
            ("", false),
            ("a/b", false),
            ("a b", false),
            ("a\u{202e}b", false),
            ("../x", false),
        ] {
            assert_eq!(key_ok(k), ok, "{k:?}");
        }
        assert!(!key_ok(&"a".repeat(201)));
    }

    #[test]
    fn calls_name_their_methods_and_params() {
        let s = AgentCall::Send {
            session_key: "k".into(),
            message: "m".into(),
            idempotency_key: "i".into(),
        };
        assert_eq!(s.method(), "chat.send");
        assert_eq!(
            s.params(),
            json!({"sessionKey":"k","message":"m","idempotencyKey":"i"})
        );
        let a = AgentCall::Abort {
            session_key: "k".into(),
        };
        assert_eq!(
            (a.method(), a.params()),
            ("chat.abort", json!({"sessionKey":"k"}))
        );
    }
}
