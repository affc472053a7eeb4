//! What the engine counts, as a sink it reports to: decisions (kind, who, latency) and how
//! approved runs ended. The engine calls the sink and knows nothing of how it is exposed; the
//! web door implements it (Prometheus at `/metrics`) and the app wiring plugs it in, so no
//! arrow runs from the engine to a door.

use crate::policy::request::Decision;
use crate::sandbox::RunOutcome;

/// Receives the engine's counts. Calls are on the decision path: keep them cheap.
pub trait MetricsSink: Send + Sync {
    /// One decision; `received_ms` gives its latency when known.
    fn decision(&self, d: &Decision, received_ms: Option<u64>);
    /// One approved exec's end: `success`, `exit-nonzero`, `timeout`, `error`,
    /// `queue-timeout` (nothing ran: no slot in time), `sandbox-unavailable` or `shutdown`.
    fn run(&self, outcome: &'static str);
}

/// The sink of an engine nobody reads metrics from (the node's in-process engine, tests).
pub struct NoMetrics;

impl MetricsSink for NoMetrics {
    fn decision(&self, _: &Decision, _: Option<u64>) {}
    fn run(&self, _: &'static str) {}
}

/// The run-outcome label of a finished run.
pub fn run_class(o: &RunOutcome) -> &'static str {
    if o.timed_out {
        "timeout"
    } else if o.error.is_some() {
        "error"
    } else if o.success {
        "success"
    } else {
        "exit-nonzero"
    }
}
