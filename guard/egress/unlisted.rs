//! A destination no rule covers: asked of a person through the guard (`super::ask`) when the
//! proxy has a guard to ask, else refused. Every answer is an audit record of its own, and a
//! refusal's body says why and which rule would let the destination through.

use super::ask::Query;
use super::proxy::Options;
use crate::audit::event::EgressRecord;
use crate::audit::{AuditEvent, AuditLog};
use crate::policy::egress::EgressRule;
use crate::policy::egress_ask::{proposed_rule, rule_toml, target, AnswerKind};

/// A refusal: `rec.reason` holds the sentence the client reads.
pub struct Refused {
    /// Counted like other denials (no person was asked); else already audited in full.
    pub counted: bool,
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
        return Err(Refused { counted: true });
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
            return Err(Refused { counted: false });
        }
        Ok(g) => g,
    };
    let (origin, always) = granted;
    let mut served = EgressRule::from_raw(&raw, origin.clone()).map_err(|e| {
        rec.reason = format!("the proposed rule for {tgt} is invalid: {e}");
        Refused { counted: true }
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
        return Err(Refused { counted: true });
    }
    Ok(served)
}
