//! Provenance: one entry per change applied to a work's record.

use serde::{Deserialize, Serialize};

use crate::calendar::Timestamp;

/// One applied change, served in a list by `GET /rights/{lccId}/provenance`,
/// ordered by `recordedAt`, then topic, then version.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ProvenanceEntry {
    pub event_id: String,
    pub event_type: String,
    /// The upstream topic: works, rights, disputes or certificates.
    pub topic: String,
    pub aggregate_version: u64,
    pub occurred_at: Timestamp,
    pub recorded_at: Timestamp,
    pub source_system: String,
    /// Names of the public fields the change set.
    pub changed: Vec<String>,
}
