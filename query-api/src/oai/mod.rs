//! OAI-PMH 2.0 for metadata harvesters: the protocol's six verbs over the
//! `oai_dc` format, backed by the change feed's current records (each
//! published work's newest change, and withdrawals as deleted records for
//! as long as the feed keeps them: `deletedRecord` is `transient`).
//!
//! `arguments` turns a request's arguments into a verb or a protocol error,
//! `resumption` encodes the paging token, `xml` writes the answers. The
//! handler (`routes::oai`) reads the store. Nothing here knows HTTP status
//! codes: OAI-PMH answers every request with 200 and its own error codes.

pub mod arguments;
pub mod resumption;
pub mod xml;

/// The one metadata format served.
pub const OAI_DC: &str = "oai_dc";

/// Records per list response.
pub const PAGE_SIZE: u32 = 200;

/// An OAI-PMH error: its code and what it says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OaiError {
    pub code: &'static str,
    pub message: String,
}

impl OaiError {
    pub fn new(code: &'static str, message: impl Into<String>) -> OaiError {
        OaiError { code, message: message.into() }
    }

    /// Whether the request element of the answer must not echo the arguments.
    pub fn hides_arguments(&self) -> bool {
        matches!(self.code, "badVerb" | "badArgument")
    }
}
