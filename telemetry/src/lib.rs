//! What every binary of the service shares for operators: how it logs, and
//! the routes of its admin listener (`/metrics`, `/healthz`, `/readyz`).
//!
//! Each binary decides what its metrics and its readiness are; this crate
//! only gives them one shape, so an operator scrapes and probes the projector
//! and the API alike. It must not know any metric, store or source.

pub mod admin;
pub mod logging;
