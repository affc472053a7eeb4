//! Running a judged plan: the profile it gets, the queue it waits in, and the sandbox call.

use super::fair::FairPool;
use super::*;
use crate::policy::profile::AUTONOMOUS_PROFILE;

impl Judge {
    /// The profile a run of `verdict` gets: the autonomous one when nobody approved it
    /// (whatever the category's profile says), else the category's (`workspace-write` when
    /// it names none).
    pub fn run_profile(&self, verdict: &Verdict, autonomous: bool) -> String {
        if autonomous {
            autonomous_profile(verdict).to_owned()
        } else {
            verdict
                .profile
                .clone()
                .unwrap_or_else(|| "workspace-write".into())
        }
    }

    /// Runs an approved plan under the sandbox profile the verdict names, with the plan's
    /// program, argv, cwd and environment, writable only in the deployment's workspace.
    /// `who` is the request that let it run (the read proxy ties the run's requests to its
    /// id) and whose queue share it takes.
    pub async fn run(
        &self,
        verdict: &Verdict,
        mut plan: ExecPlan,
        autonomous: bool,
        budget: Duration,
        who: RunFor<'_>,
    ) -> Result<RunOutcome, JudgeError> {
        let request_id = who.request_id;
        let name = self.run_profile(verdict, autonomous);
        let spec = self
            .profiles
            .get(&name)
            .ok_or_else(|| JudgeError::NoProfile(name.clone()))?;
        let mut profile = spec
            .resolve_with(&plan.workspace, &self.deployment.agent_home, &self.deny)?
            .with_run_as(self.run_as)?;
        // Held until the run ends: dropping it revokes the run's proxy credential.
        let _pass = match profile.network {
            sandbox::NetworkSpec::ReadProxy => {
                let proxy = self
                    .read_proxy
                    .get()
                    .ok_or_else(|| JudgeError::NoReadProxy(name.clone()))?;
                let pass = proxy.admit(request_id)?;
                crate::readproxy::confine(&mut profile, &mut plan.env, &pass);
                Some(pass)
            }
            _ => None,
        };
        if autonomous {
            plan.neutralise_git();
        }
        let timeout = plan.timeout.map_or(budget, |t| t.min(budget));
        // A run beyond its profile's cap, or beyond its session's share of it, waits for a
        // slot within its own time.
        let waited = std::time::Instant::now();
        let autonomous_cap = self
            .profiles
            .get(AUTONOMOUS_PROFILE)
            .map(|p| p.limits.concurrent);
        let (pool, cap) = pool(&name, autonomous, spec.limits.concurrent, autonomous_cap);
        let _slot = match self.slots.get(pool, cap) {
            None => None,
            Some(pool) => match tokio::time::timeout(timeout, pool.acquire(&who.queue_key())).await
            {
                Ok(Some(slot)) => Some(slot),
                _ => {
                    return Err(JudgeError::QueueTimeout {
                        profile: name,
                        waited: timeout,
                    })
                }
            },
        };
        let queued = waited.elapsed();
        let timeout = timeout.saturating_sub(queued);
        let outcome = sandbox::run(RunSpec {
            program: Some(plan.program),
            inherit_env: false,
            argv: plan.argv,
            cwd: plan.cwd,
            env: plan.env,
            timeout,
            output_cap: crate::engine::OUTPUT_CAP,
            profile,
        })
        .await?;
        Ok(RunOutcome {
            queued_ms: queued.as_millis() as u64,
            ..outcome
        })
    }
}

/// The pool every autonomous run waits in (not a profile name: a policy cannot define it).
const AUTONOMOUS_POOL: &str = "\0autonomous";

/// The concurrency pool of a run and its cap. Every run nobody approved shares one pool,
/// whichever autonomous profile it got, with the autonomous profile's cap (a pool per
/// profile let the two autonomous profiles run twice the cap at once); an approved run
/// queues in its profile's own pool.
fn pool(profile: &str, autonomous: bool, cap: u64, autonomous_cap: Option<u64>) -> (&str, u64) {
    match (autonomous, autonomous_cap) {
        (true, Some(shared)) => (AUTONOMOUS_POOL, shared),
        (true, None) => (AUTONOMOUS_POOL, cap),
        (false, _) => (profile, cap),
    }
}

/// Who a run is for: the request that let it run, and the agent session whose share of
/// its pool it takes.
#[derive(Debug, Clone, Copy)]
pub struct RunFor<'a> {
    pub request_id: &'a str,
    pub agent_id: &'a str,
    pub session_key: Option<&'a str>,
}

impl RunFor<'_> {
    /// The requester a pool shares its slots between: the agent's session (the agent alone
    /// when the request names no session).
    fn queue_key(&self) -> String {
        format!("{}\0{}", self.agent_id, self.session_key.unwrap_or(""))
    }
}

/// One fair pool per pool name (a profile name, or the autonomous pool) that has a cap.
#[derive(Default)]
pub(super) struct Slots(std::sync::Mutex<HashMap<String, Arc<FairPool>>>);

impl Slots {
    /// The pool of `profile` with `cap` slots (made on first use); `None`: no cap.
    fn get(&self, profile: &str, cap: u64) -> Option<Arc<FairPool>> {
        if cap == 0 {
            return None;
        }
        let mut map = self.0.lock().unwrap_or_else(|p| p.into_inner());
        let pool = map
            .entry(profile.to_owned())
            .or_insert_with(|| FairPool::new(usize::try_from(cap).unwrap_or(usize::MAX)));
        Some(pool.clone())
    }
}

/// The profile of a run nobody approved, whatever the category's profile says: the
/// workspace and system dirs only, no writes but a private tmp, and the guard's read proxy
/// as its only network when a segment is an HTTP read. (A policy may redefine these two names, e.g. to add caches.)
fn autonomous_profile(v: &Verdict) -> &'static str {
    use crate::policy::profile::{AUTONOMOUS_HTTP_PROFILE, AUTONOMOUS_PROFILE};
    let http = v.category == Category::HttpRead
        || v.segments.iter().any(|s| s.category == Category::HttpRead);
    if http {
        AUTONOMOUS_HTTP_PROFILE
    } else {
        AUTONOMOUS_PROFILE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Both autonomous profiles wait in one pool with the autonomous cap, whatever cap their
    /// own profile names; an approved run waits in its own profile's pool.
    #[test]
    fn every_autonomous_run_shares_one_pool() {
        /// Profile, autonomous, its cap, the autonomous cap: the pool and its cap.
        type Row<'a> = (&'a str, bool, u64, Option<u64>, (&'a str, u64));
        let rows: [Row; 6] = [
            ("autonomous-read", true, 4, Some(4), (AUTONOMOUS_POOL, 4)),
            (
                "autonomous-http-read",
                true,
                4,
                Some(4),
                (AUTONOMOUS_POOL, 4),
            ),
            (
                "autonomous-http-read",
                true,
                9,
                Some(2),
                (AUTONOMOUS_POOL, 2),
            ),
            ("my-profile", true, 0, None, (AUTONOMOUS_POOL, 0)),
            ("workspace-write", false, 0, Some(4), ("workspace-write", 0)),
            ("autonomous-read", false, 4, Some(4), ("autonomous-read", 4)),
        ];
        for (profile, autonomous, cap, shared, want) in rows {
            assert_eq!(
                pool(profile, autonomous, cap, shared),
                want,
                "{profile} {autonomous}"
            );
        }
    }

    /// Two handles on one pool are one pool: a slot taken through one is missing from the
    /// other.
    #[tokio::test]
    async fn one_pool_is_one_semaphore() {
        let slots = Slots::default();
        let a = slots.get(AUTONOMOUS_POOL, 1).expect("capped");
        let b = slots.get(AUTONOMOUS_POOL, 1).expect("capped");
        let _held = a.acquire("s").await.expect("free");
        let second = tokio::time::timeout(Duration::from_millis(50), b.acquire("t")).await;
        assert!(second.is_err(), "the second profile found a free slot");
        assert!(slots.get("anything", 0).is_none(), "cap 0 means no queue");
    }
}
