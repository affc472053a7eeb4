//! What limits sign-in. A link token is 256 random bits and cannot be guessed, so checking
//! one is never rate-limited (a spray must not lock out the person holding a valid link).
//! What can be guessed is the 6-digit TOTP code: attempts carrying a code are limited per
//! client address, wrong codes count against the link (the fifth burns it), and a code
//! works once. Failed sign-ins are logged with address and reason, at a bounded rate.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Wrong codes a link survives; the next one burns it.
pub const MAX_CODE_FAILURES: u32 = 5;
/// Code attempts per address: 5 at once, then one every 12 s.
const PER_IP: (f64, f64) = (5.0, 1.0 / 12.0);
/// Refusal log lines: 10 at once, then one every 2 s (the rest are counted).
const LOG_RATE: (f64, f64) = (10.0, 0.5);
/// A code is valid for at most three 30 s steps; remember used ones a little longer.
const CODE_MEMORY: Duration = Duration::from_secs(120);
/// Above this many tracked entries, stale ones are dropped.
const PRUNE_AT: usize = 10_000;

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(burst: f64, now: Instant) -> Self {
        Bucket {
            tokens: burst,
            at: now,
        }
    }

    fn take(&mut self, (burst, rate): (f64, f64), now: Instant) -> bool {
        let dt = now.duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + dt * rate).min(burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[derive(Debug)]
struct State {
    per_ip: HashMap<IpAddr, Bucket>,
    /// Wrong codes per link (keyed by the token's hash).
    failures: HashMap<String, (u32, Instant)>,
    used_codes: HashMap<String, Instant>,
    log: Bucket,
    suppressed: u64,
}

/// The sign-in limits of one web prompt.
#[derive(Debug)]
pub struct SignInGuard {
    state: Mutex<State>,
}

impl Default for SignInGuard {
    fn default() -> Self {
        let now = Instant::now();
        SignInGuard {
            state: Mutex::new(State {
                per_ip: HashMap::new(),
                failures: HashMap::new(),
                used_codes: HashMap::new(),
                log: Bucket::full(LOG_RATE.0, now),
                suppressed: 0,
            }),
        }
    }
}

impl SignInGuard {
    fn lock(&self) -> MutexGuard<'_, State> {
        match self.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        }
    }

    /// Takes one code attempt for `ip`; false = refuse (429).
    pub fn allow_code_attempt(&self, ip: IpAddr) -> bool {
        let now = Instant::now();
        let mut s = self.lock();
        if s.per_ip.len() > PRUNE_AT {
            s.per_ip
                .retain(|_, b| now.duration_since(b.at) < Duration::from_secs(120));
        }
        s.per_ip
            .entry(ip)
            .or_insert_with(|| Bucket::full(PER_IP.0, now))
            .take(PER_IP, now)
    }

    /// Marks `code` used; false when it was already used (a code works once).
    pub fn claim_code(&self, code: &str) -> bool {
        let now = Instant::now();
        let mut s = self.lock();
        s.used_codes
            .retain(|_, at| now.duration_since(*at) < CODE_MEMORY);
        s.used_codes.insert(code.to_owned(), now).is_none()
    }

    /// Counts a wrong code against the link whose token hashes to `link`; true when that
    /// was the last one it survives (the caller burns the link).
    pub fn code_failed(&self, link: &str) -> bool {
        let now = Instant::now();
        let mut s = self.lock();
        if s.failures.len() > PRUNE_AT {
            s.failures
                .retain(|_, (_, at)| now.duration_since(*at) < Duration::from_secs(24 * 3600));
        }
        let e = s.failures.entry(link.to_owned()).or_insert((0, now));
        e.0 += 1;
        e.1 = now;
        e.0 >= MAX_CODE_FAILURES
    }

    /// Logs a refused sign-in (address and reason), unless the log allowance is spent;
    /// a later line says how many were left out.
    pub fn log_refusal(&self, peer: SocketAddr, reason: &str) {
        let now = Instant::now();
        let mut s = self.lock();
        let State {
            log, suppressed, ..
        } = &mut *s;
        if log.take(LOG_RATE, now) {
            let left_out = std::mem::take(suppressed);
            tracing::warn!(peer = %peer.ip(), reason, left_out, "web: sign-in refused");
        } else {
            *suppressed += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_once_links_burn_at_five_and_addresses_apart() {
        let g = SignInGuard::default();
        assert!(g.claim_code("123456"));
        assert!(!g.claim_code("123456"));
        assert!((1..MAX_CODE_FAILURES).all(|_| !g.code_failed("L")));
        assert!(g.code_failed("L"));
        assert!(!g.code_failed("M"));
        let a: IpAddr = [127, 0, 0, 2].into();
        let b: IpAddr = [127, 0, 0, 3].into();
        assert!((0..5).all(|_| g.allow_code_attempt(a)));
        assert!(!g.allow_code_attempt(a));
        assert!(g.allow_code_attempt(b));
    }
}
