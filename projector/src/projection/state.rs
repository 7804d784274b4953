//! The projector's state of each upstream aggregate: enough to render every
//! document again from scratch, and nothing personal.
//!
//! States are stored in the read-model store beside the documents (with the
//! aggregate version in its own column), so that a restarted or second
//! projector continues from exactly what the documents reflect.
//!
//! They are encoded as MessagePack with each struct's fields in declaration
//! order (no field names), and dates and timestamps as integers: every batch
//! decodes and encodes each state it touches, and as JSON that was an eighth
//! of the projector's CPU. Because fields are positional, a field may only
//! be added at the end of its struct, with `#[serde(default)]`, so that the
//! states already stored still decode. States that earlier releases stored
//! as JSON (always a `{`, a byte that starts no MessagePack array) are still
//! read.

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
///
/// It serializes as the state it holds, with no tag: the topic is stored
/// beside it and says which state to decode.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
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
        super::exact_bytes::message_pack(self)
    }

    /// Decodes a stored state of `topic`, in either encoding.
    pub fn decode(topic: Topic, bytes: &[u8]) -> Result<AggregateState, StateDecodeError> {
        if bytes.first() == Some(&b'{') {
            return Ok(decode_as::<Json>(topic, bytes)?);
        }
        Ok(decode_as::<MessagePack>(topic, bytes)?)
    }
}

/// A stored state that neither encoding reads.
#[derive(Debug, thiserror::Error)]
pub enum StateDecodeError {
    #[error("not a state in MessagePack: {0}")]
    MessagePack(#[from] rmp_serde::decode::Error),
    #[error("not a state in JSON: {0}")]
    Json(#[from] serde_json::Error),
}

/// One of the encodings a state may be stored in.
trait StateEncoding {
    type Error;
    fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Self::Error>;
}

/// How every state is stored now.
struct MessagePack;

impl StateEncoding for MessagePack {
    type Error = rmp_serde::decode::Error;
    fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Self::Error> {
        rmp_serde::from_slice(bytes)
    }
}

/// How releases before MessagePack stored states.
struct Json;

impl StateEncoding for Json {
    type Error = serde_json::Error;
    fn from_slice<'de, T: Deserialize<'de>>(bytes: &'de [u8]) -> Result<T, Self::Error> {
        serde_json::from_slice(bytes)
    }
}

fn decode_as<E: StateEncoding>(topic: Topic, bytes: &[u8]) -> Result<AggregateState, E::Error> {
    Ok(match topic {
        Topic::Works => AggregateState::Work(E::from_slice(bytes)?),
        Topic::Rights => AggregateState::Rights(E::from_slice(bytes)?),
        Topic::Disputes => AggregateState::Disputes(E::from_slice(bytes)?),
        Topic::Certificates => AggregateState::Certificate(E::from_slice(bytes)?),
        Topic::Licenses => AggregateState::License(E::from_slice(bytes)?),
        Topic::Parties => AggregateState::Party(E::from_slice(bytes)?),
    })
}

#[cfg(test)]
mod tests {
    use read_model::documents::{CreatorRole, DisputeStatus, HolderRole, RightType, WorkType};

    use super::*;
    use crate::events::Creator;

    fn day(text: &str) -> Date {
        Date::parse(text).expect("date")
    }

    fn at(text: &str) -> Timestamp {
        Timestamp::parse(text).expect("timestamp")
    }

    /// One state of every topic, with optional fields both set and unset.
    fn states() -> Vec<(Topic, AggregateState)> {
        let record = WorkRecord {
            title: "Nocturne \"No. 2\"".into(),
            alternative_titles: vec!["Nachtstück".into()],
            iswc: Some("T1234567890".into()),
            isrcs: vec![],
            creators: vec![Creator { party_id: "P-1".into(), role: CreatorRole::Composer }],
            language: None,
            work_type: WorkType::MusicalWork,
            created_on: Some(day("1830-05-01")),
            description: None,
            subjects: vec!["piano".into()],
            publisher_party_id: Some("P-2".into()),
            related_work_ids: vec![],
            file_sha256: "ab".repeat(32),
            file_format: None,
            earliest_recorded_at: at("2026-01-02T03:04:05.678Z"),
        };
        let right = RightRecord {
            right_id: "R-1".into(),
            right_type: RightType::AuthorsRight,
            holder_party_id: "P-1".into(),
            role: HolderRole::Composer,
            share_basis_points: 10_000,
            acquired_from_party_id: None,
            territory: "WORLD".into(),
            valid_from: day("2020-01-01"),
            valid_until: None,
            protection_ends_on: day("2090-12-31"),
        };
        let updated_at = at("2026-03-04T05:06:07.089Z");
        vec![
            (
                Topic::Works,
                AggregateState::Work(WorkState {
                    record,
                    status: WorkStatus::Withdrawn,
                    published_at: Some(updated_at),
                    withdrawal_reason: Some("duplicate".into()),
                    updated_at,
                }),
            ),
            (
                Topic::Rights,
                AggregateState::Rights(RightsState { rights: vec![right], open_for_licensing: true, updated_at }),
            ),
            (
                Topic::Disputes,
                AggregateState::Disputes(DisputesState {
                    disputes: vec![DisputeSummary {
                        dispute_id: "D-1".into(),
                        grounds: "ownership".into(),
                        status: DisputeStatus::UnderReview,
                        opened_at: updated_at,
                        updated_at,
                    }],
                    updated_at,
                }),
            ),
            (
                Topic::Certificates,
                AggregateState::Certificate(CertificateState {
                    certificate: Some(CertificateRecord {
                        certificate_id: "C-1".into(),
                        sha256: "cd".repeat(32),
                        issued_at: updated_at,
                        revoked: false,
                        revocation_reason: None,
                    }),
                    updated_at,
                }),
            ),
            (
                Topic::Licenses,
                AggregateState::License(LicenseState {
                    kind: LicenseKind::Blanket,
                    licensee_party_id: "P-3".into(),
                    status: LicenseStatus::Active,
                    status_effective_from: day("2026-02-01"),
                    status_reason: None,
                    valid_from: day("2026-02-01"),
                    valid_until: Some(day("2027-01-31")),
                    covered_work_ids: vec![],
                    repertoire: Some("all".into()),
                    territory: "DE".into(),
                    updated_at,
                }),
            ),
            (
                Topic::Parties,
                AggregateState::Party(PartyState {
                    name: "Frédéric".into(),
                    kind: PartyKind::Person,
                    ipi: None,
                    isni: Some("0000000121032683".into()),
                }),
            ),
        ]
    }

    /// A state as releases before MessagePack stored it.
    fn as_json(state: &AggregateState) -> Vec<u8> {
        serde_json::to_vec(state).expect("json")
    }

    #[test]
    fn every_state_decodes_to_itself_and_is_smaller_than_its_json() {
        for (topic, state) in states() {
            let encoded = state.encode();
            assert_ne!(encoded.first(), Some(&b'{'), "{topic:?} would be read as JSON");
            assert_eq!(AggregateState::decode(topic, &encoded).expect("decodes"), state);
            assert!(encoded.len() < as_json(&state).len(), "{topic:?}: {} bytes", encoded.len());
        }
    }

    #[test]
    fn states_stored_as_json_by_earlier_releases_are_still_read() {
        for (topic, state) in states() {
            let json = as_json(&state);
            assert!(String::from_utf8_lossy(&json).contains("updatedAt") || topic == Topic::Parties);
            assert_eq!(AggregateState::decode(topic, &json).expect("decodes"), state);
        }
    }

    #[test]
    fn a_field_added_at_the_end_with_a_default_reads_states_stored_without_it() {
        #[derive(Serialize)]
        struct Stored {
            name: String,
        }
        #[derive(Debug, Deserialize, PartialEq)]
        struct Evolved {
            name: String,
            #[serde(default)]
            ipi: Option<String>,
        }
        let stored = rmp_serde::to_vec(&Stored { name: "P".into() }).expect("encodes");
        let evolved: Evolved = rmp_serde::from_slice(&stored).expect("decodes");
        assert_eq!(evolved, Evolved { name: "P".into(), ipi: None });
    }

    #[test]
    fn a_state_that_neither_encoding_reads_is_an_error_naming_the_encoding() {
        let broken = AggregateState::decode(Topic::Works, &[0x93, 0x01]).expect_err("too short");
        assert!(broken.to_string().starts_with("not a state in MessagePack"), "{broken}");
        let broken_json = AggregateState::decode(Topic::Works, b"{\"title\":").expect_err("cut off");
        assert!(broken_json.to_string().starts_with("not a state in JSON"), "{broken_json}");
    }
}
