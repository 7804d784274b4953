//! The projector's state of each upstream aggregate: enough to render every
//! document again from scratch, and nothing personal.
//!
//! States are stored in the read-model store beside the documents (as JSON,
//! with the aggregate version in its own column), so that a restarted or
//! second projector continues from exactly what the documents reflect.

use read_model::calendar::{Date, Timestamp};
use read_model::documents::{CertificateRecord, DisputeSummary, LicenseKind, LicenseStatus, PartyKind, WorkStatus};
use serde::{Deserialize, Serialize};

use crate::contract::Topic;
use crate::events::{RightRecord, WorkRecord};

/// State of a work (topic `works`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkState {
    pub record: WorkRecord,
    pub status: WorkStatus,
    pub published_at: Option<Timestamp>,
    pub withdrawal_reason: Option<String>,
    pub updated_at: Timestamp,
}

/// State of a work's rights chain (topic `rights`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RightsState {
    pub rights: Vec<RightRecord>,
    pub open_for_licensing: bool,
    pub updated_at: Timestamp,
}

/// State of the disputes about a work (topic `disputes`), in opening order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DisputesState {
    pub disputes: Vec<DisputeSummary>,
    pub updated_at: Timestamp,
}

/// State of a work's certificate (topic `certificates`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CertificateState {
    pub certificate: Option<CertificateRecord>,
    pub updated_at: Timestamp,
}

/// State of a license (topic `licenses`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LicenseState {
    pub kind: LicenseKind,
    pub licensee_party_id: String,
    pub status: LicenseStatus,
    pub status_effective_from: Date,
    pub status_reason: Option<String>,
    pub valid_from: Date,
    pub valid_until: Option<Date>,
    pub covered_work_ids: Vec<String>,
    pub repertoire: Option<String>,
    pub territory: String,
    pub updated_at: Timestamp,
}

/// Public state of a party (topic `parties`). There is deliberately no field
/// that could hold personal data.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartyState {
    pub name: String,
    pub kind: PartyKind,
    pub ipi: Option<String>,
    pub isni: Option<String>,
}

/// The state of any aggregate.
///
/// The variants differ much in size; a batch keeps each state in one box
/// (see `batch::Entry`), so boxing a variant as well would allocate twice.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AggregateState {
    Work(WorkState),
    Rights(RightsState),
    Disputes(DisputesState),
    Certificate(CertificateState),
    License(LicenseState),
    Party(PartyState),
}

impl AggregateState {
    /// The stored encoding.
    pub fn encode(&self) -> Vec<u8> {
        let encoded = match self {
            AggregateState::Work(state) => serde_json::to_vec(state),
            AggregateState::Rights(state) => serde_json::to_vec(state),
            AggregateState::Disputes(state) => serde_json::to_vec(state),
            AggregateState::Certificate(state) => serde_json::to_vec(state),
            AggregateState::License(state) => serde_json::to_vec(state),
            AggregateState::Party(state) => serde_json::to_vec(state),
        };
        // Serializing these plain structs to a Vec cannot fail.
        encoded.unwrap_or_default()
    }

    /// Decodes a stored state of `topic`.
    pub fn decode(topic: Topic, bytes: &[u8]) -> Result<AggregateState, serde_json::Error> {
        Ok(match topic {
            Topic::Works => AggregateState::Work(serde_json::from_slice(bytes)?),
            Topic::Rights => AggregateState::Rights(serde_json::from_slice(bytes)?),
            Topic::Disputes => AggregateState::Disputes(serde_json::from_slice(bytes)?),
            Topic::Certificates => AggregateState::Certificate(serde_json::from_slice(bytes)?),
            Topic::Licenses => AggregateState::License(serde_json::from_slice(bytes)?),
            Topic::Parties => AggregateState::Party(serde_json::from_slice(bytes)?),
        })
    }
}
