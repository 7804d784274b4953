//! The loop's one way of waiting for something outside the projector: while
//! the store is unavailable, or a dead-letter sink cannot be written, the
//! attempt is repeated after the backoff's next delay, with a log line that
//! says what waits and why. Consumption pauses meanwhile; nothing is lost.
//!
//! A stop request ([`GiveUp`]) ends every wait at once with the last error:
//! what was not written is read again after a restart, from the store's
//! checkpoints, so waiting on would only hold the stop up.
//!
//! It must not decide what is worth retrying: the caller says which errors
//! pass with time.

use std::future::Future;
use std::time::Duration;

use read_model::StoreError;
use tokio::sync::watch;

use crate::backoff::Backoff;

/// Set to `true` when the projector is asked to stop: waits give up.
pub(super) type GiveUp = watch::Receiver<bool>;

/// The longest wait between two attempts.
const RETRY_CEILING: Duration = Duration::from_secs(30);

/// Runs a store operation until it succeeds or fails for a reason other
/// than the store's unavailability.
pub(super) async fn while_store_unavailable<T, Attempt: Future<Output = Result<T, StoreError>>>(
    give_up: &GiveUp,
    attempt: impl FnMut() -> Attempt,
) -> Result<T, StoreError> {
    retry("store unavailable", store_unavailable, give_up, attempt).await
}

/// Runs a dead-letter sink's operation until it succeeds: a sink that cannot
/// be written (a topic unreachable or missing, a full disk) is waited for,
/// since a poison event is never dropped.
pub(super) async fn while_sink_unavailable<T>(
    give_up: &GiveUp,
    mut attempt: impl FnMut() -> anyhow::Result<T>,
) -> anyhow::Result<T> {
    let passing = |error: &anyhow::Error| Some(format!("{error:#}"));
    retry("cannot park events", passing, give_up, || std::future::ready(attempt())).await
}

/// Runs `attempt` until it succeeds, fails with an error that `passing`
/// does not call passing (`passing` gives the reason to log for one that
/// is), or `give_up` is set, which returns the last error.
async fn retry<T, E, Attempt: Future<Output = Result<T, E>>>(
    what: &str,
    passing: impl Fn(&E) -> Option<String>,
    give_up: &GiveUp,
    mut attempt: impl FnMut() -> Attempt,
) -> Result<T, E> {
    let mut backoff = Backoff::up_to(RETRY_CEILING);
    let mut give_up = give_up.clone();
    loop {
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        let Some(reason) = passing(&error) else { return Err(error) };
        if *give_up.borrow() {
            tracing::warn!(%reason, "{what}; stopping as asked instead of retrying");
            return Err(error);
        }
        let delay = backoff.next_delay();
        tracing::warn!(%reason, retry_in_ms = delay.as_millis() as u64, "{what}; retrying");
        tokio::select! {
            () = tokio::time::sleep(delay) => {}
            // A closed channel means nobody can ask to stop any more: keep waiting.
            Ok(_) = give_up.wait_for(|stop| *stop) => {
                tracing::warn!(%reason, "{what}; stopping as asked instead of retrying");
                return Err(error);
            }
        }
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
        let (_keep, never) = watch::channel(false);
        let mut attempts = 0;
        let result: Result<u32, StoreError> = retry("test", store_unavailable, &never, || {
            attempts += 1;
            std::future::ready(if attempts < 3 { Err(StoreError::Unavailable("down".into())) } else { Ok(attempts) })
        })
        .await;
        assert_eq!(result.ok(), Some(3));

        let mut attempts = 0;
        let result: Result<(), StoreError> = retry("test", store_unavailable, &never, || {
            attempts += 1;
            std::future::ready(Err(StoreError::Corrupt("bad".into())))
        })
        .await;
        assert!(matches!(result, Err(StoreError::Corrupt(_))));
        assert_eq!(attempts, 1, "a lasting error is not retried");
    }

    #[tokio::test]
    async fn a_stop_request_ends_the_wait_with_the_last_error() {
        let (stop, give_up) = watch::channel(false);
        let attempts = std::cell::Cell::new(0);
        let waiting = retry("test", store_unavailable, &give_up, || {
            attempts.set(attempts.get() + 1);
            std::future::ready(Err::<(), _>(StoreError::Unavailable("disk full".into())))
        });
        tokio::pin!(waiting);
        tokio::select! {
            _ = &mut waiting => panic!("an unavailable store is waited for"),
            () = tokio::task::yield_now() => {}
        }
        let _ = stop.send(true);
        let result = waiting.await;
        assert!(matches!(result, Err(StoreError::Unavailable(reason)) if reason == "disk full"));
        assert_eq!(attempts.get(), 1, "no attempt after the stop");

        let mut attempts = 0;
        let result = retry("test", store_unavailable, &give_up, || {
            attempts += 1;
            std::future::ready(Err::<(), _>(StoreError::Unavailable("down".into())))
        })
        .await;
        assert!(result.is_err());
        assert_eq!(attempts, 1, "a wait that starts after the stop gives up after its first attempt");
    }
}
