//! The shutdown request as the loop sees it: the shutdown future until it
//! resolves, then a stop that the reader and every wait of `retry` are told
//! of, so the loop ends within one store call.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use tokio::sync::watch;

pub(super) struct StopRequest<'a, Shutdown: Future<Output = ()>> {
    pub(super) shutdown: Pin<&'a mut Shutdown>,
    pub(super) requested: bool,
    /// The reader's stop flag.
    pub(super) reader: Arc<AtomicBool>,
    /// What the waits of `retry` watch.
    pub(super) waits: watch::Sender<bool>,
}

impl<Shutdown: Future<Output = ()>> StopRequest<'_, Shutdown> {
    pub(super) fn request(&mut self) {
        tracing::info!(
            "shutdown requested: writing what the source has sent, without waiting for an unavailable store"
        );
        self.requested = true;
        self.reader.store(true, Ordering::Relaxed);
        let _ = self.waits.send(true);
    }

    /// Awaits `work`; a shutdown that arrives meanwhile is requested at once,
    /// so that the waits inside `work` give up.
    pub(super) async fn minding<T>(&mut self, work: impl Future<Output = T>) -> T {
        if self.requested {
            return work.await;
        }
        tokio::pin!(work);
        tokio::select! {
            biased;
            value = &mut work => value,
            () = self.shutdown.as_mut() => {
                self.request();
                work.await
            }
        }
    }
}
