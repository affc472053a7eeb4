//! `GET /api/requests`: the inbox and History lists, filtered, searched and paged here so a
//! page (History's search box among them) reaches every decision, not only those it loaded.

use super::api::{query_param, Shared};
use super::http::{error, json, Resp};
use super::view::{audit_history, entry_json, source_name};
use crate::inbox::{InboxError, StateFilter};
use hyper::StatusCode;
use serde_json::json;
use std::sync::Arc;

/// `GET /api/requests?state=pending|resolved|all[&source=..][&agent=..][&by=..][&status=..][&q=..][&limit=N][&offset=N]`:
/// pending oldest deadline first; otherwise newest first, with the guard's own decisions
/// (from the audit log's tail) among the people's. `by` (`policy`, `human`, `fallback`) keeps
/// one decider's, `status` one outcome (`approved`, `denied`, `expired`,
/// `resolved-elsewhere`); `q` searches the summary, id, reason and the deciding person's
/// name. `total` is how many match before the page (`offset`, `limit`) is cut, so a client
/// knows what it does not show (History pages and searches through every decision here).
pub async fn list(sh: &Arc<Shared>, q: &str) -> Resp {
    let filter = match query_param(q, "state").as_deref() {
        None | Some("pending") => StateFilter::Pending,
        Some("resolved") => StateFilter::Resolved,
        Some("all") => StateFilter::All,
        Some(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "bad-state",
                "state is pending, resolved or all",
            )
        }
    };
    let source = query_param(q, "source").filter(|s| !s.is_empty());
    // One agent's requests (a fleet's page lists every guard's agents).
    let agent = query_param(q, "agent").filter(|s| !s.is_empty());
    let by = query_param(q, "by").filter(|s| !s.is_empty());
    let status = query_param(q, "status").filter(|s| !s.is_empty());
    let with_own = filter != StateFilter::Pending && by.as_deref().is_none_or(|b| b == "policy");
    let with_inbox = by.as_deref() != Some("policy");
    let text = query_param(q, "q")
        .map(|s| s.to_lowercase())
        .filter(|s| !s.is_empty());
    let limit = query_param(q, "limit")
        .and_then(|l| l.parse::<usize>().ok())
        .unwrap_or(500)
        .min(5000);
    let offset = query_param(q, "offset")
        .and_then(|o| o.parse::<usize>().ok())
        .unwrap_or(0);
    // Without a source or text filter the store cuts the page itself (only the page is
    // decoded); with one, every entry of the state is read and filtered here.
    // The guard's own decisions come merged in: the store's first `offset + limit` are all
    // the page can hold of its entries.
    let paged =
        source.is_none() && agent.is_none() && text.is_none() && by.is_none() && status.is_none();
    // Alone (pending: no own decisions to merge), the store cuts the page at its offset too:
    // page 10 of 10,000 pending decodes its 1,000 entries, not the 10,000 before them.
    let store_cut = paged && !with_own;
    let sh2 = sh.clone();
    let res = tokio::task::spawn_blocking(move || {
        let (mut entries, total) = if !with_inbox {
            (Vec::new(), 0)
        } else if store_cut {
            sh2.inbox.page(filter, offset, limit)?
        } else if paged {
            sh2.inbox.page(filter, 0, offset.saturating_add(limit))?
        } else {
            let entries = sh2.inbox.list(filter)?;
            let n = entries.len();
            (entries, n)
        };
        let (runs, own) = if filter == StateFilter::Pending {
            Default::default()
        } else {
            audit_history(&sh2.audit_path, with_own)
        };
        let total = total + own.len();
        entries.extend(own);
        Ok::<_, InboxError>((entries, total, runs))
    })
    .await;
    let (mut entries, mut total, runs) = match res {
        Ok(Ok(x)) => x,
        // The page shows this message in place of the list: the database is away.
        Ok(Err(InboxError::StoreUnavailable(_))) => {
            return error(
                StatusCode::SERVICE_UNAVAILABLE,
                "store-unavailable",
                "The inbox database cannot be reached: new requests are denied (store-unavailable) until it returns.",
            )
        }
        Ok(Err(e)) => return error(StatusCode::INTERNAL_SERVER_ERROR, "inbox", &e.to_string()),
        Err(e) => return error(StatusCode::INTERNAL_SERVER_ERROR, "inbox", &e.to_string()),
    };
    let offset = if store_cut {
        offset.min(total)
    } else if paged {
        if with_own {
            entries.sort_by_key(|e| std::cmp::Reverse(e.resolved_ms.unwrap_or(e.created_ms)));
        }
        let offset = offset.min(total);
        entries.drain(..offset.min(entries.len()));
        entries.truncate(limit);
        offset
    } else {
        entries.retain(|e| {
            source
                .as_deref()
                .is_none_or(|s| source_name(e.request.who.source) == s)
                && agent.as_deref().is_none_or(|a| e.request.who.agent_id == a)
                && by
                    .as_deref()
                    .is_none_or(|b| e.decision.as_ref().is_some_and(|d| decided_by(d) == b))
                && status.as_deref().is_none_or(|st| e.state.as_str() == st)
                && text.as_deref().is_none_or(|t| {
                    e.summary().to_lowercase().contains(t)
                        || e.id.contains(t)
                        || e.decision.as_ref().is_some_and(|d| {
                            d.reason.as_deref().unwrap_or("").to_lowercase().contains(t)
                                || decider_name(d).to_lowercase().contains(t)
                        })
                })
        });
        if filter == StateFilter::Pending {
            entries.sort_by_key(|e| (e.deadline_ms, e.created_ms));
        } else {
            entries.sort_by_key(|e| std::cmp::Reverse(e.resolved_ms.unwrap_or(e.created_ms)));
        }
        total = entries.len();
        let offset = offset.min(total);
        entries.drain(..offset);
        entries.truncate(limit);
        offset
    };
    let mut items: Vec<_> = entries
        .iter()
        .map(|e| entry_json(e, runs.get(&e.request.id), sh.engine.as_deref()))
        .collect();
    if let Err(r) = super::reviewer_gate::add_votes(sh, &mut items).await {
        return r;
    }
    json(
        StatusCode::OK,
        &json!({"requests": items, "total": total, "offset": offset,
            "nowMs": crate::engine::decision::now_ms()}),
    )
}

/// The person who made `d` (empty for the policy and the fallback).
fn decider_name(d: &crate::policy::request::Decision) -> &str {
    match &d.by {
        crate::policy::request::DecidedBy::Human(n) => n,
        _ => "",
    }
}

/// Who made `d`, as `by=` names it.
fn decided_by(d: &crate::policy::request::Decision) -> &'static str {
    use crate::policy::request::DecidedBy;
    match d.by {
        DecidedBy::Policy => "policy",
        DecidedBy::Human(_) => "human",
        DecidedBy::Fallback => "fallback",
    }
}
