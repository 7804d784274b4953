//! Per-client rate limits (GCRA, via governor): per API key on keyed
//! endpoints, per client address on the others.
//!
//! A client's quota is N requests per minute with a burst of N; it refills
//! continuously at N per minute. Headers on every limited response:
//! `X-RateLimit-Limit` (N), `X-RateLimit-Remaining` (requests left now) and
//! `X-RateLimit-Reset` (whole seconds until the quota is fully restored).
//!
//! State is per replica: with R replicas behind a balancer that spreads a
//! client's requests, the effective limit is up to R × N. Operators size N
//! per replica accordingly (documented in the README).

use std::collections::HashMap;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, PoisonError};

use axum::http::{HeaderMap, HeaderName, HeaderValue};
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::{InMemoryState, NotKeyed};
use governor::{Quota, RateLimiter};

type Limiter = RateLimiter<NotKeyed, InMemoryState, DefaultClock, StateInformationMiddleware>;

// Built once: a name given as a string is parsed again on every insert.
const LIMIT_HEADER: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const REMAINING_HEADER: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const RESET_HEADER: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// Limiters kept before the map is cleared: bounds memory under many distinct addresses.
const MAX_TRACKED_CLIENTS: usize = 100_000;

/// The state of a client's quota after a decision.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateDecision {
    pub limit: u32,
    pub remaining: u32,
    pub reset_seconds: u64,
    /// Present when the request was refused: seconds until one more request is allowed.
    pub retry_after: Option<u64>,
}

impl RateDecision {
    /// Adds the three `X-RateLimit-*` headers.
    pub fn write_headers(&self, headers: &mut HeaderMap) {
        headers.insert(LIMIT_HEADER, HeaderValue::from(self.limit));
        headers.insert(REMAINING_HEADER, HeaderValue::from(self.remaining));
        headers.insert(RESET_HEADER, HeaderValue::from(self.reset_seconds));
    }
}

/// A client's limiter and the per-minute limit it was made for.
type ClientLimiter = (u32, Arc<Limiter>);

/// All clients' limiters.
#[derive(Debug, Default)]
pub struct RateLimits {
    limiters: Mutex<HashMap<Box<str>, ClientLimiter>>,
}

impl RateLimits {
    /// Counts one request of `client` against `per_minute`.
    pub fn check(&self, client: &str, per_minute: u32) -> RateDecision {
        let per_minute = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        let limiter = {
            let mut limiters = self.limiters.lock().unwrap_or_else(PoisonError::into_inner);
            match limiters.get(client) {
                // The common case allocates nothing: the client is known at this limit.
                Some((limit, limiter)) if *limit == per_minute.get() => Arc::clone(limiter),
                // New client, or its key's limit changed: a fresh quota.
                _ => {
                    if limiters.len() >= MAX_TRACKED_CLIENTS {
                        limiters.clear();
                    }
                    let limiter = Arc::new(RateLimiter::direct(Quota::per_minute(per_minute)).with_middleware());
                    limiters.insert(client.into(), (per_minute.get(), Arc::clone(&limiter)));
                    limiter
                }
            }
        };
        let limit = per_minute.get();
        // Seconds per request of quota, as a fraction.
        let interval = 60.0 / f64::from(limit);
        match limiter.check() {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity().min(limit);
                let reset_seconds = (f64::from(limit - remaining) * interval).ceil() as u64;
                RateDecision { limit, remaining, reset_seconds, retry_after: None }
            }
            Err(not_until) => {
                let wait = not_until.wait_time_from(DefaultClock::default().now()).as_secs_f64();
                let retry_after = wait.ceil().max(1.0) as u64;
                let reset_seconds = (wait + f64::from(limit - 1) * interval).ceil() as u64;
                RateDecision { limit, remaining: 0, reset_seconds, retry_after: Some(retry_after) }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_the_quota_passes_then_requests_are_refused() {
        let limits = RateLimits::default();
        for expected_remaining in (0..5).rev() {
            let decision = limits.check("key", 5);
            assert_eq!((decision.limit, decision.remaining, decision.retry_after), (5, expected_remaining, None));
        }
        let refused = limits.check("key", 5);
        assert_eq!(refused.remaining, 0);
        assert!(refused.retry_after.is_some_and(|seconds| (1..=12).contains(&seconds)), "{refused:?}");
        assert!(refused.reset_seconds >= 48 && refused.reset_seconds <= 61, "{refused:?}");
        assert_eq!(limits.check("other", 5).remaining, 4, "clients are independent");
        assert_eq!(limits.check("key", 6).remaining, 5, "a changed limit starts a fresh quota");
    }

    #[test]
    fn reset_counts_the_seconds_until_the_quota_is_full_again() {
        let limits = RateLimits::default();
        let first = limits.check("key", 60);
        assert_eq!((first.remaining, first.reset_seconds), (59, 1));
        let second = limits.check("key", 60);
        assert_eq!((second.remaining, second.reset_seconds), (58, 2));
    }
}
