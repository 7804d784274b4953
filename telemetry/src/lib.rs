//! What every binary of the service shares for operators: how it logs (and
//! keeps a command's status line on a terminal apart from its log), the
//! routes of its admin listener (`/metrics`, `/healthz`, `/readyz`), the
//! line that says where its listeners are bound, its open-file limit, and
//! the signal to stop.
//!
//! Each binary decides what its metrics and its readiness are; this crate
//! only gives them one shape, so an operator scrapes and probes the projector
//! and the API alike. It must not know any metric, store or source.

pub mod admin;
pub mod listening;
pub mod logging;
pub mod open_files;
pub mod shutdown;
pub mod status_line;
