//! The one way every binary learns that it should stop: SIGTERM (what
//! container runtimes and supervisors send) or Ctrl-C. What stopping means
//! is each binary's own: the API drains its connections, the projector
//! writes what it has read.

/// Resolves on SIGTERM or Ctrl-C. Where SIGTERM cannot be watched, on Ctrl-C alone.
pub async fn signal() {
    let interrupt = tokio::signal::ctrl_c();
    let Ok(mut terminate) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) else {
        let _ = interrupt.await;
        return;
    };
    tokio::select! {
        _ = interrupt => {}
        _ = terminate.recv() => {}
    }
}
