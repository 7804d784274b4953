//! The properties every decoder of untrusted input keeps, in one place for
//! the two kinds of test that check them: property tests on stable
//! (`tests/properties.rs`, which CI runs briefly over mutations of the
//! seeds) and the coverage-guided `cargo fuzz` targets under `fuzz/`, which
//! `scripts/fuzz.sh` runs for a fixed time each.
//!
//! A target takes raw bytes, as a fuzzer gives them, hands them to the
//! service's own decoder, and panics when a property does not hold; a panic
//! is what both kinds of test report. The properties are the contract for
//! untrusted input: decoding never panics, a malformed event is parked with
//! a reason, a malformed cursor, token or parameter is a precise 4xx
//! problem, and what decodes is read back the same.
//!
//! This crate must not decode anything itself: it calls the projector's and
//! the API's code, and only builds inputs and checks outcomes.

pub mod avro_file;
pub mod avro_message;
pub mod batch_lookup;
pub mod feed_cursor;
pub mod mutation;
pub mod notification_cursor;
pub mod request_parameters;
pub mod resumption_token;
pub mod sandbox_key;
pub mod service;

mod events;
mod repository;

/// One decoder of untrusted input, as a fuzz target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// A Kafka message value: framing, Avro datum, resolution, decoding, validation.
    AvroMessage,
    /// An Avro object container file of the file source.
    AvroFile,
    /// The change feed's `since` cursor.
    FeedCursor,
    /// The notification feed's `since` cursor.
    NotificationCursor,
    /// OAI-PMH's `resumptionToken`.
    ResumptionToken,
    /// A sandbox API key.
    SandboxKey,
    /// The body of `POST /rights/lookup`, through the router.
    BatchLookup,
    /// The path and query of any request, through the router.
    RequestParameters,
}

impl Target {
    pub const ALL: [Target; 8] = [
        Target::AvroMessage,
        Target::AvroFile,
        Target::FeedCursor,
        Target::NotificationCursor,
        Target::ResumptionToken,
        Target::SandboxKey,
        Target::BatchLookup,
        Target::RequestParameters,
    ];

    /// The name of the target, and of its file under `fuzz/fuzz_targets/`.
    pub fn name(self) -> &'static str {
        match self {
            Target::AvroMessage => "avro_message",
            Target::AvroFile => "avro_file",
            Target::FeedCursor => "feed_cursor",
            Target::NotificationCursor => "notification_cursor",
            Target::ResumptionToken => "resumption_token",
            Target::SandboxKey => "sandbox_key",
            Target::BatchLookup => "batch_lookup",
            Target::RequestParameters => "request_parameters",
        }
    }

    pub fn from_name(name: &str) -> Option<Target> {
        Target::ALL.into_iter().find(|target| target.name() == name)
    }

    /// Decodes `input` with the service's code; panics when a property fails.
    pub fn check(self, input: &[u8]) {
        match self {
            Target::AvroMessage => avro_message::check(input),
            Target::AvroFile => avro_file::check(input),
            Target::FeedCursor => feed_cursor::check(input),
            Target::NotificationCursor => notification_cursor::check(input),
            Target::ResumptionToken => resumption_token::check(input),
            Target::SandboxKey => sandbox_key::check(input),
            Target::BatchLookup => batch_lookup::check(input),
            Target::RequestParameters => request_parameters::check(input),
        }
    }

    /// Valid inputs made from the fixtures, which the fuzzers and the
    /// property tests start from and mutate.
    pub fn seeds(self) -> Vec<Vec<u8>> {
        match self {
            Target::AvroMessage => avro_message::seeds(),
            Target::AvroFile => avro_file::seeds(),
            Target::FeedCursor => feed_cursor::seeds(),
            Target::NotificationCursor => notification_cursor::seeds(),
            Target::ResumptionToken => resumption_token::seeds(),
            Target::SandboxKey => sandbox_key::seeds(),
            Target::BatchLookup => batch_lookup::seeds(),
            Target::RequestParameters => request_parameters::seeds(),
        }
    }
}
