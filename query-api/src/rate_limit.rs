//! Per-client rate limits (GCRA, via governor's keyed limiters): per API key
//! on keyed endpoints, per client address on the others.
//!
//! A client's quota is N requests per minute with a burst of N; it refills
//! continuously at N per minute. Headers on every limited response:
//! `X-RateLimit-Limit` (N), `X-RateLimit-Remaining` (requests left now) and
//! `X-RateLimit-Reset` (whole seconds until the quota is fully restored).
//!
//! Clients of one limit share one keyed limiter, a sharded map from client to
//! its quota state, so two requests contend only when their clients fall in
//! the same shard; the default limit's limiter is reached without any lock.
//! Memory is bounded by evicting idle clients only: a client whose quota is
//! full again is indistinguishable from one never seen, so forgetting it
//! changes no decision, and a refused client is never forgotten while its
//! quota is short. The sweep runs when the number of clients has doubled
//! since the last one, so its cost is spread over the clients it removes.
//!
//! Why governor's keyed limiters and not `tower_governor`: that layer takes
//! one quota per layer and answers refusals itself, while here the quota
//! depends on the key (a production key may carry its own), is checked
//! after the key is authenticated and before the scope, and its headers go
//! on every answer, refusals of scope or audience included.
//!
//! This module must not know where a client comes from (key or address):
//! callers name the client. State is per replica.

use std::hash::{BuildHasher, BuildHasherDefault, Hasher, RandomState};
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, LazyLock};

use axum::body::Bytes;
use axum::http::{HeaderMap, HeaderName, HeaderValue};
use dashmap::DashMap;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DashMapStateStore;
use governor::{Quota, RateLimiter};

/// A client, by a 128-bit keyed hash of its name: fixed-size map keys cost no
/// allocation per request, and with keys drawn per process nobody can make
/// two clients collide. A name that many requests share (a key's id) is
/// hashed once, where its principal is made, not on each request.
///
/// Two halves rather than a `u128`, whose alignment of 16 would pass to
/// every future that holds a principal: those are then allocated on a
/// slower, aligned path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Client {
    high: u64,
    low: u64,
}

/// The keys of [`Client::named`]'s hash, drawn once per process.
static CLIENT_HASH_KEYS: LazyLock<(RandomState, RandomState)> =
    LazyLock::new(|| (RandomState::new(), RandomState::new()));

impl Client {
    /// The client of this name.
    pub fn named(name: &str) -> Client {
        let (high, low) = &*CLIENT_HASH_KEYS;
        Client { high: high.hash_one(name), low: low.hash_one(name) }
    }
}

type KeyedLimiter<C> =
    RateLimiter<Client, DashMapStateStore<Client, BuildHasherDefault<ClientKeyHash>>, C, StateInformationMiddleware>;

/// A limiter map's hash of a [`Client`]: its two halves folded. The key
/// is already a keyed hash, so hashing it again (the map's default SipHash,
/// on every request) would add nothing but cost.
#[derive(Debug, Default, Clone, Copy)]
struct ClientKeyHash(u64);

impl Hasher for ClientKeyHash {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(*byte);
        }
    }

    fn write_u64(&mut self, half: u64) {
        self.0 ^= half;
    }
}

// Built once: a name given as a string is parsed again on every insert.
const LIMIT_HEADER: HeaderName = HeaderName::from_static("x-ratelimit-limit");
const REMAINING_HEADER: HeaderName = HeaderName::from_static("x-ratelimit-remaining");
const RESET_HEADER: HeaderName = HeaderName::from_static("x-ratelimit-reset");

/// Clients tracked before the first sweep; later sweeps run once the count
/// has doubled since the previous one, and never below this.
const FIRST_SWEEP_AT: usize = 16_384;

/// How often (in checks) the number of tracked clients is counted: counting
/// visits every shard, so it is done on a small share of requests.
const COUNT_EVERY: u64 = 1_024;

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
    /// Adds the three `X-RateLimit-*` headers. Their digits are written into
    /// one buffer that the three values share, rather than one each: this
    /// runs on every keyed answer. The buffer is a fixed array that becomes
    /// the values' owner as it is, a single allocation (a growable buffer
    /// would be a second one when it is shared).
    pub fn write_headers(&self, headers: &mut HeaderMap) {
        let mut digits = Digits::default();
        let ends = [u64::from(self.limit), u64::from(self.remaining), self.reset_seconds].map(|number| {
            digits.push_decimal(number);
            digits.length
        });
        let digits = Bytes::from_owner(digits);
        let mut start = 0;
        for (name, end) in [LIMIT_HEADER, REMAINING_HEADER, RESET_HEADER].into_iter().zip(ends) {
            if let Ok(value) = HeaderValue::from_maybe_shared(digits.slice(start..end)) {
                headers.insert(name, value);
            }
            start = end;
        }
    }
}

/// The decimal digits of three numbers of up to 20 digits each, one after another.
struct Digits {
    bytes: [u8; 3 * 20],
    length: usize,
}

impl Default for Digits {
    fn default() -> Digits {
        Digits { bytes: [0; 3 * 20], length: 0 }
    }
}

impl Digits {
    /// Appends `number` in decimal.
    fn push_decimal(&mut self, mut number: u64) {
        let width = number.checked_ilog10().unwrap_or(0) as usize + 1;
        let end = self.length + width;
        for digit in self.bytes[self.length..end].iter_mut().rev() {
            *digit = b'0' + (number % 10) as u8;
            number /= 10;
        }
        self.length = end;
    }
}

/// The digits written so far: what the shared values slice.
impl AsRef<[u8]> for Digits {
    fn as_ref(&self) -> &[u8] {
        &self.bytes[..self.length]
    }
}

/// Every client's quota.
#[derive(Debug)]
pub struct RateLimits<C: Clock = DefaultClock> {
    clock: C,
    default_limit: NonZeroU32,
    /// The limiter of the default limit (keyless clients, sandbox keys, most production keys).
    default_limiter: KeyedLimiter<C>,
    /// The limiters of the other limits that production keys carry.
    other_limiters: DashMap<NonZeroU32, Arc<KeyedLimiter<C>>>,
    checks: AtomicU64,
    /// Clients tracked after the last sweep, at least [`FIRST_SWEEP_AT`] / 2.
    tracked_after_sweep: AtomicUsize,
    sweeping: AtomicBool,
}

impl RateLimits<DefaultClock> {
    /// Limits whose most common quota is `default_per_minute`.
    pub fn new(default_per_minute: u32) -> RateLimits {
        RateLimits::with_clock(default_per_minute, DefaultClock::default())
    }
}

impl<C: Clock + Clone> RateLimits<C> {
    /// Limits that read the time from `clock` (tests drive a fake one).
    pub fn with_clock(default_per_minute: u32, clock: C) -> RateLimits<C> {
        let default_limit = NonZeroU32::new(default_per_minute).unwrap_or(NonZeroU32::MIN);
        RateLimits {
            default_limiter: keyed_limiter(default_limit, &clock),
            clock,
            default_limit,
            other_limiters: DashMap::new(),
            checks: AtomicU64::new(0),
            tracked_after_sweep: AtomicUsize::new(FIRST_SWEEP_AT / 2),
            sweeping: AtomicBool::new(false),
        }
    }

    /// Counts one request of `client` against `per_minute`.
    ///
    /// A client whose limit changes (its key was reissued with another)
    /// starts a fresh quota at the new limit.
    pub fn check(&self, client: &str, per_minute: u32) -> RateDecision {
        self.check_cost(Client::named(client), per_minute, NonZeroU32::MIN)
    }

    /// Counts `cost` requests of `client` at once (a batch of lookups): all
    /// of them pass, or none does and the quota is left as it was.
    pub fn check_cost(&self, client: Client, per_minute: u32, cost: NonZeroU32) -> RateDecision {
        let limit = NonZeroU32::new(per_minute).unwrap_or(NonZeroU32::MIN);
        let other;
        let limiter = if limit == self.default_limit {
            &self.default_limiter
        } else {
            other = self.limiter_of(limit);
            &*other
        };
        // A cost above the whole quota can never pass. It is refused,
        // counted as one request, so that the headers tell what is left.
        let (outcome, counted, over_quota) = match limiter.check_key_n(&client, cost) {
            Ok(outcome) => (outcome, cost, false),
            Err(_) => (limiter.check_key(&client), NonZeroU32::MIN, true),
        };
        if self.checks.fetch_add(1, Ordering::Relaxed) % COUNT_EVERY == COUNT_EVERY - 1 {
            self.sweep_if_grown();
        }
        let limit = limit.get();
        // Seconds per request of quota, as a fraction.
        let interval = 60.0 / f64::from(limit);
        match outcome {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity().min(limit);
                let reset_seconds = (f64::from(limit - remaining) * interval).ceil() as u64;
                // Waiting does not let a batch over the whole quota pass; a
                // minute is when a split batch's first part does.
                RateDecision { limit, remaining, reset_seconds, retry_after: over_quota.then_some(60) }
            }
            Err(not_until) => {
                // The quota holds `counted` requests once `wait` has passed,
                // so it holds what refilling during `wait` does not add now.
                let wait = not_until.wait_time_from(self.clock.now()).as_secs_f64();
                let missing = ((wait / interval).ceil() as u32).min(counted.get());
                let remaining = (counted.get() - missing).min(limit);
                let retry_after = wait.ceil().max(1.0) as u64;
                let reset_seconds = (f64::from(limit - remaining) * interval).ceil() as u64;
                RateDecision { limit, remaining, reset_seconds, retry_after: Some(retry_after) }
            }
        }
    }

    /// The number of clients whose quota is tracked now.
    pub fn tracked_clients(&self) -> usize {
        self.default_limiter.len() + self.other_limiters.iter().map(|limiter| limiter.len()).sum::<usize>()
    }

    /// Forgets every client whose quota is full again.
    pub fn forget_idle_clients(&self) {
        self.default_limiter.retain_recent();
        self.default_limiter.shrink_to_fit();
        for limiter in self.other_limiters.iter() {
            limiter.retain_recent();
            limiter.shrink_to_fit();
        }
    }

    fn limiter_of(&self, limit: NonZeroU32) -> Arc<KeyedLimiter<C>> {
        if let Some(limiter) = self.other_limiters.get(&limit) {
            return Arc::clone(&limiter);
        }
        let limiter = self.other_limiters.entry(limit).or_insert_with(|| Arc::new(keyed_limiter(limit, &self.clock)));
        Arc::clone(&limiter)
    }

    /// Sweeps once the clients tracked have doubled since the last sweep;
    /// one request sweeps while the others go on.
    fn sweep_if_grown(&self) {
        let tracked = self.tracked_clients();
        if tracked < 2 * self.tracked_after_sweep.load(Ordering::Relaxed) {
            return;
        }
        if self.sweeping.swap(true, Ordering::Acquire) {
            return;
        }
        self.forget_idle_clients();
        let remaining = self.tracked_clients().max(FIRST_SWEEP_AT / 2);
        self.tracked_after_sweep.store(remaining, Ordering::Relaxed);
        tracing::debug!(before = tracked, after = remaining, "forgot the rate limits of idle clients");
        self.sweeping.store(false, Ordering::Release);
    }
}

fn keyed_limiter<C: Clock + Clone>(per_minute: NonZeroU32, clock: &C) -> KeyedLimiter<C> {
    RateLimiter::dashmap_with_clock_and_hasher(
        Quota::per_minute(per_minute),
        clock.clone(),
        BuildHasherDefault::default(),
    )
    .with_middleware()
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use governor::clock::FakeRelativeClock;

    use super::*;

    #[test]
    fn the_three_headers_carry_the_decision_in_decimal() {
        for (limit, remaining, reset_seconds) in
            [(60, 59, 1), (1_000_000_000, 0, 60), (1, 1, 0), (u32::MAX, 7, u64::MAX)]
        {
            let decision = RateDecision { limit, remaining, reset_seconds, retry_after: None };
            let mut headers = HeaderMap::new();
            decision.write_headers(&mut headers);
            assert_eq!(headers[LIMIT_HEADER], limit.to_string().as_str());
            assert_eq!(headers[REMAINING_HEADER], remaining.to_string().as_str());
            assert_eq!(headers[RESET_HEADER], reset_seconds.to_string().as_str());
        }
    }

    #[test]
    fn a_client_hashed_once_shares_the_quota_of_its_name() {
        let limits = RateLimits::new(60);
        assert_eq!(Client::named("key"), Client::named("key"));
        assert_ne!(Client::named("key"), Client::named("other"));
        limits.check("key", 5);
        let decision = limits.check_cost(Client::named("key"), 5, NonZeroU32::MIN);
        assert_eq!(decision.remaining, 3, "the name and its client are one client");
        assert_eq!(limits.check_cost(Client::named("other"), 5, NonZeroU32::MIN).remaining, 4);
    }

    #[test]
    fn exactly_the_quota_passes_then_requests_are_refused() {
        let limits = RateLimits::new(60);
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
        let limits = RateLimits::new(60);
        let first = limits.check("key", 60);
        assert_eq!((first.remaining, first.reset_seconds), (59, 1));
        let second = limits.check("key", 60);
        assert_eq!((second.remaining, second.reset_seconds), (58, 2));
    }

    #[test]
    fn a_refused_client_stays_refused_while_two_hundred_thousand_others_come_and_go() {
        let clock = FakeRelativeClock::default();
        let limits = RateLimits::with_clock(60, clock.clone());
        for _ in 0..60 {
            assert_eq!(limits.check("address:192.0.2.1", 60).retry_after, None);
        }
        assert!(limits.check("address:192.0.2.1", 60).retry_after.is_some());
        // 200,000 other clients within half a second: several sweeps run.
        for client in 0..200_000 {
            limits.check(&format!("address:10.{}.{}.{}", client >> 16, (client >> 8) & 255, client & 255), 60);
            clock.advance(Duration::from_nanos(2_500));
        }
        let still = limits.check("address:192.0.2.1", 60);
        assert_eq!((still.remaining, still.retry_after.is_some()), (0, true), "still refused: {still:?}");
        // Three seconds on, the others are idle and forgotten; the first client
        // is not, and has the three requests those seconds gave back, not a fresh quota.
        clock.advance(Duration::from_secs(3));
        limits.forget_idle_clients();
        assert_eq!(limits.tracked_clients(), 1, "only the client whose quota is short is kept");
        let after = limits.check("address:192.0.2.1", 60);
        assert_eq!((after.remaining, after.retry_after), (2, None), "{after:?}");
    }

    #[test]
    fn a_million_distinct_clients_leave_only_the_recent_ones_tracked() {
        let clock = FakeRelativeClock::default();
        let limits = RateLimits::with_clock(60, clock.clone());
        let mut most_tracked = 0;
        // 1,000,000 clients at 25,000 requests per second, some of them keys with a limit of their own.
        for client in 0..1_000_000_u32 {
            let limit = if client % 10 == 0 { 600 } else { 60 };
            limits.check(&format!("client-{client}"), limit);
            clock.advance(Duration::from_micros(40));
            if client % 10_000 == 0 {
                most_tracked = most_tracked.max(limits.tracked_clients());
            }
        }
        // A client of 60 a minute is forgotten 2 s after its request (its
        // quota is full after one second, and the sweep keeps one more), so
        // about 50,000 are recent at once; sweeps run when the count doubles.
        assert!(most_tracked <= 150_000, "at most {most_tracked} clients were tracked at once");
        clock.advance(Duration::from_secs(61));
        limits.forget_idle_clients();
        assert_eq!(limits.tracked_clients(), 0, "every client is idle a minute later");
    }
}
