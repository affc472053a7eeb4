//! The Agent page's API, through the guard's own gateway connection
//! ([`AgentControl`](crate::engine::agent::AgentControl)): `GET /api/agent/sessions` (each
//! session's state, active runs, last update, last message and pending approvals),
//! `POST /api/agent/tasks {sessionKey?, message}` (`chat.send`) and
//! `POST /api/agent/sessions/{key}/stop` (`chat.abort`). The router has already checked
//! Host, Origin, the session and CSRF; actions are audited as `web:<name>/<session>@<address>`.

use super::api::{percent_decode, Shared};
use super::auth::SessionView;
use super::http::{error, json, read_body, Resp};
use super::view::entry_json;
use crate::engine::agent::AgentError;
use crate::inbox::StateFilter;
use hyper::body::Incoming;
use hyper::header::CONTENT_LENGTH;
use hyper::{Method, Request, StatusCode};
use serde_json::{json, Value};
use std::net::SocketAddr;

pub async fn route(
    sh: &Shared,
    req: Request<Incoming>,
    segs: &[&str],
    session: &SessionView,
    peer: SocketAddr,
) -> Resp {
    let Some(agent) = sh.agent.clone() else {
        return error(
            StatusCode::SERVICE_UNAVAILABLE,
            "no-gateway",
            "no gateway connection: the Agent page uses the guard's own. Start serve with \
             --gateway-url URL --gateway-token-file FILE (the quick start's gateway: \
             ws://127.0.0.1:18789 and ~/.openclaw-gateway-token) and approve its device once \
             (sanctum-guard approver-id); serve checks the gateway's posture first",
        );
    };
    let who = format!("{}@{peer}", session.identity);
    match (req.method().clone(), segs) {
        (Method::GET, ["agent", "sessions"]) => match agent.sessions().await {
            Ok(rows) => sessions_json(sh, rows),
            Err(e) => agent_error(e),
        },
        (Method::POST, ["agent", "tasks"]) => {
            let v = match body_json(req).await {
                Ok(v) => v,
                Err(r) => return r,
            };
            let Some(message) = v["message"].as_str() else {
                return error(
                    StatusCode::BAD_REQUEST,
                    "bad-message",
                    "message is required",
                );
            };
            let key = match &v["sessionKey"] {
                Value::Null => None,
                Value::String(k) if k.is_empty() => None,
                Value::String(k) => Some(k.clone()),
                _ => {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "bad-session",
                        "sessionKey is a string",
                    )
                }
            };
            match agent.new_task(&who, key, message).await {
                Ok(r) => json(StatusCode::ACCEPTED, &r),
                Err(e) => agent_error(e),
            }
        }
        (Method::POST, ["agent", "sessions", key, "stop"]) => {
            match agent.stop(&who, &percent_decode(key)).await {
                Ok(r) => json(StatusCode::OK, &r),
                Err(e) => agent_error(e),
            }
        }
        (_, ["agent", "sessions" | "tasks"]) => error(
            StatusCode::METHOD_NOT_ALLOWED,
            "method",
            "method not allowed",
        ),
        _ => error(StatusCode::NOT_FOUND, "not-found", "no such endpoint"),
    }
}

async fn body_json(req: Request<Incoming>) -> Result<Value, Resp> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok());
    let body = read_body(req.into_body(), declared)
        .await
        .map_err(|e| e.response())?;
    serde_json::from_slice(&body)
        .map_err(|_| error(StatusCode::BAD_REQUEST, "bad-json", "body is not JSON"))
}

/// The rows, each with the inbox's pending approvals of its session.
fn sessions_json(sh: &Shared, mut rows: Vec<Value>) -> Resp {
    let pending = sh.inbox.list(StateFilter::Pending).unwrap_or_default();
    for row in &mut rows {
        let key = row["key"].as_str().unwrap_or_default().to_owned();
        let mine: Vec<Value> = pending
            .iter()
            .filter(|e| e.request.who.session_key.as_deref() == Some(key.as_str()))
            .map(|e| entry_json(e, None, sh.engine.as_deref()))
            .collect();
        row["pendingApprovals"] = Value::Array(mine);
    }
    json(
        StatusCode::OK,
        &json!({"sessions": rows, "nowMs": crate::engine::decision::now_ms()}),
    )
}

fn agent_error(e: AgentError) -> Resp {
    let (status, code) = match &e {
        AgentError::Unavailable(_) => (StatusCode::SERVICE_UNAVAILABLE, "gateway-unavailable"),
        AgentError::Timeout => (StatusCode::GATEWAY_TIMEOUT, "gateway-timeout"),
        AgentError::Gateway(_) => (StatusCode::BAD_GATEWAY, "gateway-refused"),
        AgentError::Forbidden(_) => (StatusCode::FORBIDDEN, "forbidden"),
        AgentError::Bad(_) => (StatusCode::BAD_REQUEST, "bad-request"),
        AgentError::Audit => (StatusCode::INTERNAL_SERVER_ERROR, "audit"),
    };
    error(status, code, &e.to_string())
}
