//! Bounded grants on the web prompt: what each card offers (the exact patterns a grant of
//! each scope would store, computed by the same `grants::propose` that stores it), making
//! one with a person's allow-once, and the Grants page's list and Revoke
//! (`GET /api/grants`, `POST /api/grants/{id}/revoke`), signed in and CSRF-checked like
//! every other change.

use super::api::Shared;
use super::auth::SessionView;
use super::http::{error, json, Resp};
use crate::audit::event::{AuditEvent, GrantRecord};
use crate::engine::decision::now_ms;
use crate::engine::Engine;
use crate::grants::{propose, Ask, Grant, GrantError, GrantSpec, ProposeError, Scope};
use crate::inbox::{Entry, State};
use hyper::StatusCode;
use serde_json::{json, Value};

/// The defaults a card fills in for N.
const DEFAULT_MINUTES: u32 = 30;
const DEFAULT_USES: u32 = 5;

fn label(s: Scope) -> &'static str {
    match s {
        Scope::Session => "For this session",
        Scope::Minutes => "For N minutes",
        Scope::Uses => "For N uses",
        Scope::Prefix => "This prefix in this workspace",
    }
}

/// What `e`'s grant of `ask` would be, from the engine's deployment.
fn proposal(eng: &Engine, e: &Entry, ask: Ask) -> Result<GrantSpec, ProposeError> {
    let ws = eng.judge().deployment().workspace.display().to_string();
    propose(&e.request, &e.verdict, ask, &ws, now_ms(), |p| {
        eng.program_trusted(p)
    })
}

/// Where a grant applies, in words.
fn where_text(g: &GrantSpec) -> String {
    let at = match (&g.workspace, &g.cwd) {
        (Some(ws), _) => format!("in any directory inside {ws}"),
        (None, Some(c)) if !c.is_empty() => format!("in {c}"),
        _ => "with no cwd named".to_owned(),
    };
    let mut s = format!("agent {} · {at}", g.agent_id);
    if let Some(k) = &g.session_key {
        s.push_str(&format!(" · session {k}"));
    }
    if !g.env.is_empty() {
        let names: Vec<&str> = g.env.iter().map(|(n, _)| n.as_str()).collect();
        s.push_str(&format!(" · with env {}", names.join(" ")));
    }
    s
}

/// The card's `bounded` field: each scope this request can be granted with, the patterns it
/// would store and where they apply; null when none (a request with no session key offers
/// no session scope; a program with no subcommand word offers no prefix).
pub fn bounded_json(eng: Option<&Engine>, e: &Entry) -> Value {
    let Some(eng) = eng.filter(|g| g.grants().is_some()) else {
        return Value::Null;
    };
    if e.state != State::Pending || !e.offers(crate::policy::request::DecisionKind::AllowOnce) {
        return Value::Null;
    }
    let options: Vec<Value> = [Scope::Session, Scope::Minutes, Scope::Uses, Scope::Prefix]
        .into_iter()
        .filter_map(|scope| {
            let (n, max) = match scope {
                Scope::Minutes => (Some(DEFAULT_MINUTES), crate::grants::shape::MAX_MINUTES),
                Scope::Uses => (Some(DEFAULT_USES), crate::grants::shape::MAX_USES),
                _ => (None, 0),
            };
            let g = proposal(eng, e, Ask { scope, n }).ok()?;
            Some(json!({
                "scope": scope.as_str(),
                "label": label(scope),
                "patterns": g.shapes.iter().map(|s| s.pattern()).collect::<Vec<_>>(),
                "programs": g.shapes.iter().map(|s| s.program.clone()).collect::<Vec<_>>(),
                "where": where_text(&g),
                "n": n.map(|d| json!({"default": d, "max": max})),
            }))
        })
        .collect();
    if options.is_empty() {
        Value::Null
    } else {
        json!({"options": options})
    }
}

/// The `grant` of a decision body: `{scope, n?}`.
pub fn parse_ask(v: &Value) -> Result<Ask, Box<Resp>> {
    let bad = |m: &str| Box::new(error(StatusCode::BAD_REQUEST, "bad-grant", m));
    let scope = v["scope"]
        .as_str()
        .and_then(Scope::parse)
        .ok_or_else(|| bad("grant.scope is session, minutes, uses or prefix"))?;
    let n = match &v["n"] {
        Value::Null => None,
        x => Some(
            x.as_u64()
                .and_then(|n| u32::try_from(n).ok())
                .ok_or_else(|| bad("grant.n is a whole number"))?,
        ),
    };
    Ok(Ask { scope, n })
}

/// Checks that `entry` can be granted with `ask` before anything is decided (a refusal
/// decides nothing).
pub fn check(sh: &Shared, entry: &Entry, ask: Ask) -> Result<GrantSpec, Box<Resp>> {
    let Some(eng) = sh.engine.as_deref().filter(|e| e.grants().is_some()) else {
        return Err(Box::new(error(
            StatusCode::CONFLICT,
            "no-grants",
            "this guard keeps no grants: nothing was decided",
        )));
    };
    proposal(eng, entry, ask).map_err(|e| {
        Box::new(error(
            StatusCode::UNPROCESSABLE_ENTITY,
            "not-grantable",
            &format!("Not applied: {e}. Nothing was decided."),
        ))
    })
}

fn record(g: &Grant, action: &'static str, by: &str) -> AuditEvent {
    AuditEvent::Grant(GrantRecord {
        action,
        id: g.id.clone(),
        by: by.to_owned(),
        inbox_id: g.inbox_id.clone(),
        scope: g.spec.scope.as_str(),
        patterns: g.spec.shapes.iter().map(|s| s.pattern()).collect(),
        expires_ms: g.expires_ms,
        uses: g.uses_left,
    })
}

/// Stores `spec` (already approved once by `by` on `entry`) and records it.
pub async fn store(sh: &Shared, entry: &Entry, spec: GrantSpec, by: &str) -> Result<Grant, String> {
    let Some(eng) = sh.engine.clone() else {
        return Err("this guard keeps no grants".into());
    };
    let Some(store) = eng.grants().cloned() else {
        return Err("this guard keeps no grants".into());
    };
    let (inbox_id, request_id, by2) = (entry.id.clone(), entry.request.id.clone(), by.to_owned());
    // Bound to the guard whose agent asked (in a fleet, maybe not this one).
    let guard = entry.guard.clone();
    let g = tokio::task::spawn_blocking(move || {
        store.insert(
            &spec,
            &by2,
            &inbox_id,
            &request_id,
            guard.as_deref(),
            now_ms(),
        )
    })
    .await
    .map_err(|e| e.to_string())?
    .map_err(|e| e.to_string())?;
    eng.record(record(&g, "made", by)).await;
    Ok(g)
}

/// One grant as the Grants page shows it.
pub fn grant_json(g: &Grant) -> Value {
    json!({
        "id": g.id,
        "scope": g.spec.scope.as_str(),
        "patterns": g.spec.shapes.iter().map(|s| s.pattern()).collect::<Vec<_>>(),
        "programs": g.spec.shapes.iter().map(|s| s.program.clone()).collect::<Vec<_>>(),
        "where": where_text(&g.spec),
        "category": g.spec.category,
        "profile": g.spec.profile,
        "expiresMs": g.expires_ms,
        "usesLeft": g.uses_left,
        "madeBy": g.made_by,
        "inboxId": g.inbox_id,
        "requestId": g.request_id,
        "createdMs": g.created_ms,
        "revokedMs": g.revoked_ms,
        "guard": g.guard,
    })
}

fn store_error(e: GrantError) -> Resp {
    match e {
        GrantError::UnknownId(_) => error(StatusCode::NOT_FOUND, "unknown-id", "no such grant"),
        e @ GrantError::AlreadyRevoked(_) => error(StatusCode::CONFLICT, "stale", &e.to_string()),
        e => error(StatusCode::INTERNAL_SERVER_ERROR, "grants", &e.to_string()),
    }
}

/// `GET /api/grants`: every live grant, oldest first.
pub async fn list(sh: &Shared) -> Resp {
    let Some(store) = sh.engine.as_ref().and_then(|e| e.grants().cloned()) else {
        return json(StatusCode::OK, &json!({"grants": [], "nowMs": now_ms()}));
    };
    match tokio::task::spawn_blocking(move || store.live(now_ms())).await {
        Ok(Ok(gs)) => json(
            StatusCode::OK,
            &json!({"grants": gs.iter().map(grant_json).collect::<Vec<_>>(), "nowMs": now_ms()}),
        ),
        Ok(Err(e)) => store_error(e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "grants", &e.to_string()),
    }
}

/// `POST /api/grants/{id}/revoke`: at once; the next request it would have covered is asked.
pub async fn revoke(sh: &Shared, id: &str, session: &SessionView) -> Resp {
    let Some(eng) = sh.engine.clone() else {
        return error(StatusCode::NOT_FOUND, "unknown-id", "no such grant");
    };
    let Some(store) = eng.grants().cloned() else {
        return error(StatusCode::NOT_FOUND, "unknown-id", "no such grant");
    };
    let by = format!("web:{}", session.identity);
    let (id2, by2) = (id.to_owned(), by.clone());
    match tokio::task::spawn_blocking(move || store.revoke(&id2, &by2, now_ms())).await {
        Ok(Ok(g)) => {
            eng.record(record(&g, "revoked", &by)).await;
            json(StatusCode::OK, &grant_json(&g))
        }
        Ok(Err(e)) => store_error(e),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "grants", &e.to_string()),
    }
}

/// How many of the newest approvals suggestions look at.
const SUGGEST_SCAN: usize = 2000;

/// The suggestions History offers now: shapes approved by people at least 5 times in 7 days
/// that no live grant covers yet, each as the exact grant it would make.
fn suggestions(sh: &Shared) -> Result<Vec<crate::grants::Suggestion>, String> {
    let Some(eng) = sh.engine.as_deref() else {
        return Ok(vec![]);
    };
    let Some(store) = eng.grants() else {
        return Ok(vec![]);
    };
    let now = now_ms();
    let (approved, _) = sh
        .inbox
        .page(
            crate::inbox::StateFilter::Only(State::Approved),
            0,
            SUGGEST_SCAN,
        )
        .map_err(|e| e.to_string())?;
    let seen: Vec<crate::grants::Approved<'_>> = approved
        .iter()
        .map(|e| crate::grants::Approved {
            request: &e.request,
            verdict: &e.verdict,
            at_ms: e.resolved_ms.unwrap_or(e.created_ms),
            inbox_id: &e.id,
        })
        .collect();
    let ws = eng.judge().deployment().workspace.display().to_string();
    let live = store.live(now).map_err(|e| e.to_string())?;
    let found = crate::grants::suggest(&seen, sh.suggest, now, &ws, |p| eng.program_trusted(p));
    // One a live grant already covers is not offered again.
    Ok(found
        .into_iter()
        .filter(|s| {
            approved
                .iter()
                .find(|e| e.id == s.inbox_id)
                .is_some_and(|e| {
                    crate::grants::covering(
                        live.iter().map(|g| (g.id.as_str(), &g.spec)),
                        &e.request,
                        &e.verdict,
                    )
                    .is_none()
                })
        })
        .collect())
}

/// `GET /api/grants/suggestions`: `{suggestions: [{inboxId, approvals, patterns, where,
/// expiresMs}]}`.
pub fn suggestions_json(sh: &Shared) -> Resp {
    match suggestions(sh) {
        Ok(list) => json(
            StatusCode::OK,
            &json!({"suggestions": list.iter().map(|s| json!({
                "inboxId": s.inbox_id,
                "approvals": s.approvals,
                "patterns": s.spec.shapes.iter().map(|x| x.pattern()).collect::<Vec<_>>(),
                "where": where_text(&s.spec),
                "expiresMs": s.spec.expires_ms,
            })).collect::<Vec<_>>()}),
        ),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "grants", &e),
    }
}

/// `POST /api/grants/suggestions/{inboxId}/accept`: makes the grant suggested on that
/// approval (recomputed now: a suggestion no longer offered is refused).
pub async fn accept(sh: &Shared, inbox_id: &str, session: &SessionView) -> Resp {
    let found = match suggestions(sh) {
        Ok(list) => list.into_iter().find(|s| s.inbox_id == inbox_id),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "grants", &e),
    };
    let Some(s) = found else {
        return error(
            StatusCode::CONFLICT,
            "stale",
            "no such suggestion now: nothing was made",
        );
    };
    let entry = match sh.inbox.get(inbox_id) {
        Ok(Some(e)) => e,
        _ => return error(StatusCode::NOT_FOUND, "unknown-id", "no such request"),
    };
    let by = format!("web:{}", session.identity);
    match store(sh, &entry, s.spec, &by).await {
        Ok(g) => json(StatusCode::OK, &grant_json(&g)),
        Err(e) => error(StatusCode::INTERNAL_SERVER_ERROR, "grants", &e),
    }
}
