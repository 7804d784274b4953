//! Exponential backoff for the projector's retries: the loop's, while the
//! store or the dead-letter sink is unavailable, and the Kafka thread's,
//! while the schema registry or the store cannot answer. Consumption pauses
//! while it waits; nothing is lost.
//!
//! It only computes delays; the caller sleeps (asynchronously or not).

use std::time::Duration;

/// Delays from 200 ms, doubling up to a ceiling.
#[derive(Debug)]
pub struct Backoff {
    delay: Duration,
    ceiling: Duration,
}

impl Backoff {
    pub fn up_to(ceiling: Duration) -> Backoff {
        Backoff { delay: Duration::from_millis(200), ceiling }
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.delay;
        self.delay = (self.delay * 2).min(self.ceiling);
        delay
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delays_double_up_to_the_ceiling() {
        let mut backoff = Backoff::up_to(Duration::from_secs(10));
        let delays: Vec<u64> = (0..8).map(|_| backoff.next_delay().as_millis() as u64).collect();
        assert_eq!(delays, [200, 400, 800, 1_600, 3_200, 6_400, 10_000, 10_000]);
    }
}
