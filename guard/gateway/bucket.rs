//! The front door's per-client flood limit: a token bucket of frames.

use std::time::Instant;

/// A token bucket: `rate` frames per second, up to `burst` at once.
pub(super) struct Bucket {
    rate: f64,
    burst: f64,
    tokens: f64,
    at: Instant,
}

impl Bucket {
    pub(super) fn new(rate: u32, burst: u32) -> Self {
        Bucket {
            rate: f64::from(rate),
            burst: f64::from(burst.max(1)),
            tokens: f64::from(burst.max(1)),
            at: Instant::now(),
        }
    }

    pub(super) fn take(&mut self) -> bool {
        let now = Instant::now();
        self.tokens =
            (self.tokens + now.duration_since(self.at).as_secs_f64() * self.rate).min(self.burst);
        self.at = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bucket_allows_the_burst_then_the_rate() {
        let mut b = Bucket::new(1, 3);
        assert!(b.take() && b.take() && b.take());
        assert!(!b.take());
    }
}
