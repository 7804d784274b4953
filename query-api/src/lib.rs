//! The query API: the stateless public HTTP service over the read model.
//!
//! It owns HTTP: routing ([`routes`]), access (keys, scopes and sandbox rules
//! in [`access`] and [`keys`]), rate limits ([`rate_limit`]) and the error
//! boundary ([`errors`]), and a span per request ([`request_tracing`]). It
//! reads documents through `read_model::DocumentReads` only, and never decodes Avro or writes
//! documents; the only things it writes are operator-issued production keys,
//! catalogue snapshots and its signing keyring ([`signing`]).

pub mod access;
pub mod app;
pub mod compression;
pub mod conditional;
pub mod config;
pub mod connection;
pub mod cross_origin;
pub mod edge;
pub mod errors;
pub mod http_date;
pub mod keys;
pub mod metered_reads;
pub mod metrics;
pub mod notification_streams;
pub mod oai;
pub mod provenance_chain;
pub mod rate_limit;
pub mod request_timeout;
pub mod request_tracing;
pub mod routes;
pub mod server;
pub mod signing;
pub mod snapshots;
pub mod webhooks;
