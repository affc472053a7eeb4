//! A destination no rule covers: asked of a person through the guard (`super::ask`) when the
//! proxy has a guard to ask, else refused. Every answer is an audit record of its own, and a
//! refusal's body says why and which rule would let the destination through. While a person
//! is asked, the client is watched: if it hangs up, the ask is dropped, which closes the
//! proxy's connection to the guard, and the guard withdraws the inbox request at once
//! (`requester-gone`) rather than leaving a card nobody is waiting on until its deadline.

use super::ask::Query;
use super::proxy::Options;
use crate::audit::event::EgressRecord;
use crate::audit::{AuditEvent, AuditLog};
use crate::policy::egress::EgressRule;
use crate::policy::egress_ask::{proposed_rule, rule_toml, target, AnswerKind};
use tokio::net::TcpStream;

/// Bytes a waiting client may send (a plain request's body) that are kept for the upstream;
/// past them the client is no longer watched (what it sends waits in the kernel's buffer).
const EARLY_MAX: usize = 64 * 1024;

/// A refusal: `rec.reason` holds the sentence the client reads.
pub struct Refused {
    /// Counted like other denials (no person was asked); else already audited in full.
    pub counted: bool,
    /// The client left while a person was asked: there is no one to answer.
    pub gone: bool,
}

/// [`resolve`], watching `client` meanwhile: what it sends is appended to `early`; if it
/// closes (or its connection fails) the ask is withdrawn and audited, and `Refused.gone`.
/// The proxy reads a client's EOF as its end (as `splice` does): an HTTP client through a
/// proxy does not half-close before its answer.
pub async fn resolve_while_connected(
    opts: &Options,
    audit: &AuditLog,
    rec: &mut EgressRecord,
    q: &Query<'_>,
    client: &TcpStream,
    early: &mut Vec<u8>,
) -> Result<EgressRule, Refused> {
    let outcome = {
        let asked = resolve(opts, audit, rec, q);
        let gone = closed(client, early);
        tokio::select! {
            r = asked => Some(r),
            () = gone => None,
        }
    };
    if let Some(r) = outcome {
        return r;
    }
    rec.reason = format!(
        "the client closed the connection while a person was asked about {}; the ask is withdrawn",
        target(q.host, q.port)
    );
    let mut asked = rec.clone();
    asked.phase = "asked";
    let _ = audit.record(AuditEvent::Egress(Box::new(asked))).await;
    Err(Refused {
        counted: false,
        gone: true,
    })
}

/// Resolves when `s` reaches EOF or fails; keeps what it reads in `early`.
async fn closed(s: &TcpStream, early: &mut Vec<u8>) {
    let mut buf = [0u8; 4096];
    loop {
        if early.len() >= EARLY_MAX {
            return std::future::pending().await;
        }
        if s.readable().await.is_err() {
            return;
        }
        match s.try_read(&mut buf) {
            Ok(0) => return,
            Ok(n) => early.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return,
        }
    }
}

/// The rule a connection to `q` proceeds under, or why it is refused (in `rec.reason`).
pub async fn resolve(
    opts: &Options,
    audit: &AuditLog,
    rec: &mut EgressRecord,
    q: &Query<'_>,
) -> Result<EgressRule, Refused> {
    let tgt = target(q.host, q.port);
    let raw = proposed_rule(q.host, q.port, q.path.is_none());
    let rule = rule_toml(&raw);
    let how = format!(
        "to reach it, an operator can approve it in the guard's inbox when it is asked, or add this rule to the policy's [[egress.rules]]: {rule}"
    );
    let Some(asker) = &opts.asker else {
        rec.reason = format!("no egress rule covers {tgt}; {how}");
        return Err(Refused {
            counted: true,
            gone: false,
        });
    };
    let asked = asker.ask(q).await;
    let outcome = match asked {
        Err(why) => Err(why),
        Ok(a) => match a.decision {
            AnswerKind::Deny => Err(format!("a person or the guard refused it ({})", a.reason)),
            AnswerKind::AllowOnce => Ok((format!("allow-once by {}", a.reason), None)),
            AnswerKind::AllowFor => Ok((
                format!(
                    "allow-for {tgt} until {} (epoch ms) by {}",
                    a.until_ms.unwrap_or(0),
                    a.reason
                ),
                None,
            )),
            AnswerKind::AllowAlways => match a.rule {
                Some(r) if r == rule => Ok((format!("allow-always by {}", a.reason), Some(r))),
                _ => Err("the guard's rule is not the one asked for".into()),
            },
        },
    };
    let mut asked = rec.clone();
    asked.phase = "asked";
    let granted = match outcome {
        Err(why) => {
            rec.reason =
                format!("no egress rule covers {tgt} and it was not allowed: {why}; {how}");
            asked.reason = rec.reason.clone();
            let _ = audit.record(AuditEvent::Egress(Box::new(asked))).await;
            return Err(Refused {
                counted: false,
                gone: false,
            });
        }
        Ok(g) => g,
    };
    let (origin, always) = granted;
    let mut served = EgressRule::from_raw(&raw, origin.clone()).map_err(|e| {
        rec.reason = format!("the proposed rule for {tgt} is invalid: {e}");
        Refused {
            counted: true,
            gone: false,
        }
    })?;
    if let Some(text) = always {
        match opts.rules.add(&text) {
            Ok(r) => served = r,
            // The person allowed it: this connection goes; the rule is asked again next time.
            Err(e) => tracing::error!(error = %e, "egress: storing an always rule failed"),
        }
    }
    asked.verdict = "allow";
    asked.reason = origin;
    if audit
        .record(AuditEvent::Egress(Box::new(asked)))
        .await
        .is_err()
    {
        rec.reason = "the audit log cannot record this decision".into();
        return Err(Refused {
            counted: true,
            gone: false,
        });
    }
    Ok(served)
}
