//! The Prometheus exposition (`GET /metrics`, text format via `prometheus-client`): pending
//! count, decisions by kind and by who, decision latency, rejections (denies) by reason,
//! sandbox runs by outcome, and the web door's own refusals. One process-wide set
//! ([`global`]); the engine reports to it through its `MetricsSink` seam, wired by `serve`.
//!
//! Two registries, because `/metrics` answers without sign-in: the open one says how the
//! guard is doing; the sign-in one (the web door's refusals by reason: `bad-totp`,
//! `bad-login`, `rate-limited`, …) tells whoever can read it whether a login link they
//! tried is still live, so it is served only to a scraper presenting the operator's bearer
//! token ([`SCRAPE_TOKEN_FILE`]), and to nobody when no token is configured.

use crate::policy::request::{DecidedBy, Decision};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use std::path::Path;
use std::sync::LazyLock;

/// The scrape token's file in the state dir (written by the operator, e.g. 0600, ≥ 32
/// characters): present = `Authorization: Bearer <its content>` gets the sign-in series too.
pub const SCRAPE_TOKEN_FILE: &str = "web-metrics-token";
/// A shorter token is taken as no token (fail closed: nothing guessable unlocks the series).
const MIN_TOKEN_LEN: usize = 32;

/// What one scrape may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scrape {
    /// No credential sent: the open series only.
    Open,
    /// The configured token: every series.
    Full,
    /// A credential that is not the configured token (or none is configured): 401.
    Refused,
}

/// Who the `Authorization` header value `auth` makes this scrape. The file is read per
/// scrape, so the operator can rotate the token without restarting the guard.
pub fn scrape_access(state_dir: &Path, auth: Option<&str>) -> Scrape {
    let Some(auth) = auth else {
        return Scrape::Open;
    };
    let configured = std::fs::read_to_string(state_dir.join(SCRAPE_TOKEN_FILE))
        .ok()
        .map(|t| t.trim().to_owned())
        .filter(|t| t.len() >= MIN_TOKEN_LEN);
    let sent = auth.strip_prefix("Bearer ").map(str::trim);
    match (configured, sent) {
        (Some(c), Some(s)) if super::secret::eq_ct(c.as_bytes(), s.as_bytes()) => Scrape::Full,
        _ => Scrape::Refused,
    }
}

type Labels = Vec<(&'static str, String)>;

/// Every metric the guard exports.
pub struct Metrics {
    registry: Registry,
    /// Series that reveal sign-in state: token holders only.
    signin_registry: Registry,
    pub pending: Gauge,
    decisions: Family<Labels, Counter>,
    human_decisions: Family<Labels, Counter>,
    latency: Histogram,
    rejections: Family<Labels, Counter>,
    runs: Family<Labels, Counter>,
    web_refusals: Family<Labels, Counter>,
    notify_messages: Family<Labels, Counter>,
    notify_dropped: Family<Labels, Counter>,
}

static METRICS: LazyLock<Metrics> = LazyLock::new(Metrics::new);

/// The process-wide metrics.
pub fn global() -> &'static Metrics {
    &METRICS
}

/// Who decided, as a low-cardinality label.
fn by_class(by: &DecidedBy) -> &'static str {
    match by {
        DecidedBy::Policy => "policy",
        DecidedBy::Human(_) => "human",
        DecidedBy::Fallback => "fallback",
    }
}

/// Label values are request-derived only through reason codes; cap them so an odd reason
/// cannot grow the exposition without bound.
fn cap(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_ascii_alphanumeric() || "-_=:.".contains(*c))
        .take(48)
        .collect()
}

impl Metrics {
    fn new() -> Self {
        let mut registry = Registry::with_prefix("sanctum");
        let pending = Gauge::default();
        let decisions = Family::<Labels, Counter>::default();
        let human_decisions = Family::<Labels, Counter>::default();
        // 50 ms .. ~30 min: policy answers are sub-millisecond, people take seconds to minutes.
        let latency = Histogram::new([
            0.001, 0.01, 0.05, 0.25, 1.0, 2.5, 5.0, 10.0, 15.0, 30.0, 60.0, 300.0, 1800.0,
        ]);
        let rejections = Family::<Labels, Counter>::default();
        let runs = Family::<Labels, Counter>::default();
        let web_refusals = Family::<Labels, Counter>::default();
        let notify_messages = Family::<Labels, Counter>::default();
        let notify_dropped = Family::<Labels, Counter>::default();
        registry.register(
            "notify_messages",
            "Push messages by channel and result (delivered, failed after its attempts)",
            notify_messages.clone(),
        );
        registry.register(
            "notify_dropped",
            "Notices dropped because a channel's queue was full (a decision never waits)",
            notify_dropped.clone(),
        );
        registry.register(
            "pending_requests",
            "Requests waiting for a human",
            pending.clone(),
        );
        registry.register(
            "decisions",
            "Decisions by kind and by who decided (policy, human, fallback)",
            decisions.clone(),
        );
        registry.register(
            "human_decisions",
            "Decisions given by people, by the door they answered through (never who)",
            human_decisions.clone(),
        );
        registry.register(
            "decision_latency_seconds",
            "Time from a request's arrival to its decision",
            latency.clone(),
        );
        registry.register(
            "rejections",
            "Denied requests by reason code",
            rejections.clone(),
        );
        registry.register(
            "sandbox_runs",
            "Approved execs by run outcome",
            runs.clone(),
        );
        let mut signin_registry = Registry::with_prefix("sanctum");
        signin_registry.register(
            "web_refusals",
            "Web requests refused by reason (unauthenticated, csrf, origin, rate-limit, ...)",
            web_refusals.clone(),
        );
        Metrics {
            registry,
            signin_registry,
            pending,
            decisions,
            human_decisions,
            latency,
            rejections,
            runs,
            web_refusals,
            notify_messages,
            notify_dropped,
        }
    }

    /// Counts one decision; `received_ms` gives its latency when known.
    pub fn decision(&self, d: &Decision, received_ms: Option<u64>) {
        self.decisions
            .get_or_create(&vec![
                ("kind", d.kind.as_str().to_owned()),
                ("by", by_class(&d.by).to_owned()),
            ])
            .inc();
        if let DecidedBy::Human(name) = &d.by {
            // The door only (`web`, `cli`, `gateway`, …): /metrics is unauthenticated, so it
            // names no approver; who decided is in the audit log.
            let via = name.split([':', '@', '/']).next().unwrap_or("");
            self.human_decisions
                .get_or_create(&vec![("via", cap(via))])
                .inc();
        }
        if d.kind == crate::policy::request::DecisionKind::Deny {
            let reason = d.reason.as_deref().unwrap_or("unspecified");
            let code = if matches!(d.by, DecidedBy::Human(_)) {
                "user-denied"
            } else {
                reason
            };
            self.rejections
                .get_or_create(&vec![("reason", cap(code))])
                .inc();
        }
        if let Some(r) = received_ms {
            self.latency
                .observe(d.at_ms.saturating_sub(r) as f64 / 1000.0);
        }
    }

    /// Counts one sandboxed run: `success`, `exit-nonzero`, `timeout`, `error`,
    /// `queue-timeout`, `sandbox-unavailable` or `shutdown`.
    pub fn run(&self, outcome: &'static str) {
        self.runs
            .get_or_create(&vec![("outcome", outcome.to_owned())])
            .inc();
    }

    /// Counts one refusal of the web door.
    pub fn web_refusal(&self, reason: &'static str) {
        self.web_refusals
            .get_or_create(&vec![("reason", reason.to_owned())])
            .inc();
    }

    /// The exposition text: the open series, and the sign-in ones too with `full`.
    pub fn render(&self, full: bool) -> String {
        let mut out = String::new();
        if encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        if full {
            let mut more = String::new();
            if encode(&mut more, &self.signin_registry).is_ok() {
                // One exposition ends with one `# EOF`: drop the first one's.
                out = out.trim_end_matches("# EOF\n").to_owned() + &more;
            }
        }
        out
    }
}

/// The engine's counts land in this registry (`serve` plugs it in).
impl crate::engine::MetricsSink for Metrics {
    fn decision(&self, d: &Decision, received_ms: Option<u64>) {
        Metrics::decision(self, d, received_ms)
    }

    fn run(&self, outcome: &'static str) {
        Metrics::run(self, outcome)
    }
}

/// The notifier's counts land in the global registry (`serve` plugs it in).
pub struct NotifyCounts;

impl crate::notify::NotifyMetrics for NotifyCounts {
    fn sent(&self, channel: &str, ok: bool) {
        let result = if ok { "delivered" } else { "failed" };
        global()
            .notify_messages
            .get_or_create(&vec![
                ("channel", cap(channel)),
                ("result", result.to_owned()),
            ])
            .inc();
    }

    fn dropped(&self, channel: &str) {
        global()
            .notify_dropped
            .get_or_create(&vec![("channel", cap(channel))])
            .inc();
    }
}
