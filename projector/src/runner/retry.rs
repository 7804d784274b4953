//! The loop's one way of waiting for something outside the projector: while
//! the store is unavailable, or a dead-letter sink cannot be written, the
//! attempt is repeated after the backoff's next delay, with a log line that
//! says what waits and why. Consumption pauses meanwhile; nothing is lost.
//!
//! It must not decide what is worth retrying: the caller says which errors
//! pass with time.

use std::future::Future;
use std::time::Duration;

use read_model::StoreError;

use crate::backoff::Backoff;

/// The longest wait between two attempts.
const RETRY_CEILING: Duration = Duration::from_secs(30);

/// Runs a store operation until it succeeds or fails for a reason other
/// than the store's unavailability.
pub(super) async fn while_store_unavailable<T, Attempt: Future<Output = Result<T, StoreError>>>(
    attempt: impl FnMut() -> Attempt,
) -> Result<T, StoreError> {
    retry("store unavailable", store_unavailable, attempt).await
}

/// Runs a dead-letter sink's operation until it succeeds: a sink that cannot
/// be written (a topic unreachable or missing, a full disk) is waited for,
/// since a poison event is never dropped.
pub(super) async fn while_sink_unavailable<T>(mut attempt: impl FnMut() -> anyhow::Result<T>) -> anyhow::Result<T> {
    retry("cannot park events", |error: &anyhow::Error| Some(format!("{error:#}")), || std::future::ready(attempt()))
        .await
}

/// Runs `attempt` until it succeeds or fails with an error that `passing`
/// does not call passing; `passing` gives the reason to log for one that is.
async fn retry<T, E, Attempt: Future<Output = Result<T, E>>>(
    what: &str,
    passing: impl Fn(&E) -> Option<String>,
    mut attempt: impl FnMut() -> Attempt,
) -> Result<T, E> {
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    loop {
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let Some(reason) = passing(&error) else { return Err(error) };
        let delay = backoff.next_delay();
        tracing::warn!(%reason, retry_in_ms = delay.as_millis() as u64, "{what}; retrying");
        tokio::time::sleep(delay).await;
    }
}

/// The store's unavailability passes; any other store error does not.
fn store_unavailable(error: &StoreError) -> Option<String> {
    match error {
        StoreError::Unavailable(reason) => Some(reason.clone()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn passing_errors_are_retried_and_others_returned() {
        let mut attempts = 0;
        let result: Result<u32, StoreError> = retry("test", store_unavailable, || {
            attempts += 1;
            std::future::ready(if attempts < 3 { Err(StoreError::Unavailable("down".into())) } else { Ok(attempts) })
        })
        .await;
        assert_eq!(result.ok(), Some(3));

        let mut attempts = 0;
        let result: Result<(), StoreError> = retry("test", store_unavailable, || {
            attempts += 1;
            std::future::ready(Err(StoreError::Corrupt("bad".into())))
        })
        .await;
        assert!(matches!(result, Err(StoreError::Corrupt(_))));
        assert_eq!(attempts, 1, "a lasting error is not retried");
    }
}
