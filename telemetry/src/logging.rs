//! Log output: human-readable lines on standard error, filtered by `RUST_LOG`
//! (`info` when unset), so standard output stays free for what a command
//! prints (an issued key, a listing). A log line never breaks a status line
//! shown on a terminal ([`crate::status_line`]).

use tracing_subscriber::EnvFilter;

use crate::status_line::LogWriter;

/// Installs the process's log subscriber; call once, first thing in `main`.
pub fn init() {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(LogWriter)
        .init();
}
