//! When a failed delivery is tried again: the Standard Webhooks schedule,
//! ten attempts over about three days (immediately, then after 5 s, 5 min,
//! 30 min, 2 h, 5 h, 10 h, 14 h, 20 h and 24 h). A delivery that fails all
//! ten pauses its subscription until the operator resumes it.

use std::time::Duration;

/// The waits before the second to the tenth attempt.
pub const RETRY_DELAYS: [Duration; 9] = [
    Duration::from_secs(5),
    Duration::from_secs(5 * 60),
    Duration::from_secs(30 * 60),
    Duration::from_secs(2 * 3600),
    Duration::from_secs(5 * 3600),
    Duration::from_secs(10 * 3600),
    Duration::from_secs(14 * 3600),
    Duration::from_secs(20 * 3600),
    Duration::from_secs(24 * 3600),
];

/// The wait after `failures` failed attempts of one message, or `None` when
/// the schedule is spent.
pub fn delay_after(failures: u32) -> Option<Duration> {
    let index = usize::try_from(failures).ok()?.checked_sub(1)?;
    RETRY_DELAYS.get(index).copied()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_attempts_over_the_schedule_then_none() {
        assert_eq!(delay_after(0), None, "no failure, no wait");
        assert_eq!(delay_after(1), Some(Duration::from_secs(5)));
        assert_eq!(delay_after(9), Some(Duration::from_secs(86_400)));
        assert_eq!(delay_after(10), None, "the tenth failure ends the schedule");
        let total: Duration = RETRY_DELAYS.iter().sum();
        assert_eq!(total, Duration::from_secs(5 + 300 + 1_800 + 75 * 3_600));
    }
}
