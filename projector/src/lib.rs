//! The projector: the write side of the read model.
//!
//! It reads the registry's change events from a source ([`source`]), decodes
//! and validates them ([`events`]), applies them idempotently to per-aggregate
//! state and renders the documents that state implies ([`projection`]), and
//! writes each batch, checkpoints included, to the store in one atomic step
//! ([`runner`]). Events it cannot use are parked ([`dead_letter`]).
//!
//! It must not serve HTTP reads of documents, and it is the only program that
//! writes them.

pub mod admin;
pub mod backoff;
pub mod canonical_form;
pub mod contract;
pub mod datum_codec;
pub mod dead_letter;
pub mod events;
pub mod generate;
pub mod metrics;
pub mod progress;
pub mod projection;
pub mod render_deferral;
pub mod resolution;
pub mod run_progress;
pub mod runner;
pub mod source;
pub mod source_and_sink;
