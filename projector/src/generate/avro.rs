//! Encoding generated events as Avro values of the contract's writer schemas.
//!
//! Values are built with explicit union branches and enum indexes, exactly as
//! a producer in another language would write them from the `.avsc` files.

use apache_avro::types::Value;
use read_model::calendar::{Date, Timestamp};
use serde::Serialize;

use super::drafts::{Draft, Malformation, Payload, PersonalData};
use crate::contract::Topic;
use crate::events::{Creator, RightRecord, WorkAmendment, WorkRecord};

const CREATOR_ROLES: &[&str] =
    &["AUTHOR", "COMPOSER", "LYRICIST", "ARRANGER", "TRANSLATOR", "PERFORMER", "PRODUCER", "OTHER"];
const WORK_TYPES: &[&str] =
    &["MUSICAL_WORK", "SOUND_RECORDING", "LITERARY_WORK", "AUDIOVISUAL_WORK", "VISUAL_WORK", "SOFTWARE", "OTHER"];
const RIGHT_TYPES: &[&str] = &["AUTHORS_RIGHT", "RELATED_RIGHT"];
const HOLDER_ROLES: &[&str] =
    &["AUTHOR", "COMPOSER", "LYRICIST", "PUBLISHER", "PERFORMER", "PRODUCER", "BROADCASTER", "SUCCESSOR", "OTHER"];
const LICENSE_KINDS: &[&str] = &["Blanket", "Individual"];
const LICENSE_STATUSES: &[&str] = &["PENDING", "ACTIVE", "SUSPENDED", "EXPIRED", "TERMINATED", "REVOKED"];
const DISPUTE_GROUNDS: &[&str] = &["OWNERSHIP", "SHARE_SPLIT", "ATTRIBUTION", "PLAGIARISM", "OTHER"];
const DISPUTE_PROGRESS: &[&str] = &["OPEN", "UNDER_REVIEW", "IN_MEDIATION"];
const DISPUTE_OUTCOMES: &[&str] = &["UPHELD", "REJECTED", "SETTLED", "WITHDRAWN"];
const PARTY_KINDS: &[&str] = &["PERSON", "ORGANISATION"];

fn string(text: &str) -> Value {
    Value::String(text.to_owned())
}

fn optional_string(text: Option<&str>) -> Value {
    match text {
        Some(text) => Value::Union(1, Box::new(string(text))),
        None => Value::Union(0, Box::new(Value::Null)),
    }
}

fn optional(value: Option<Value>) -> Value {
    match value {
        Some(value) => Value::Union(1, Box::new(value)),
        None => Value::Union(0, Box::new(Value::Null)),
    }
}

fn date(day: Date) -> Value {
    Value::Date(day.0)
}

fn timestamp(instant: Timestamp) -> Value {
    Value::TimestampMillis(instant.0)
}

fn strings(items: &[String]) -> Value {
    Value::Array(items.iter().map(|item| string(item)).collect())
}

fn record(fields: Vec<(&str, Value)>) -> Value {
    Value::Record(fields.into_iter().map(|(name, value)| (name.to_owned(), value)).collect())
}

/// An enum value from its symbol; the symbol lists mirror the `.avsc` files.
fn symbol(symbols: &[&str], name: &str) -> Value {
    let index = symbols.iter().position(|candidate| *candidate == name).unwrap_or(symbols.len() - 1);
    Value::Enum(index as u32, symbols[index].to_owned())
}

/// The Avro symbol of a read-model enum (`MusicalWork` is `MUSICAL_WORK`).
fn symbol_of(symbols: &[&str], value: &impl Serialize) -> Value {
    let name = serde_json::to_value(value)
        .ok()
        .and_then(|json| json.as_str().map(str::to_ascii_uppercase))
        .unwrap_or_default();
    let exact = symbols.iter().find(|candidate| candidate.eq_ignore_ascii_case(&name)).copied().unwrap_or("");
    symbol(symbols, exact)
}

fn creators(items: &[Creator]) -> Value {
    Value::Array(
        items
            .iter()
            .map(|creator| {
                record(vec![("partyId", string(&creator.party_id)), ("role", symbol_of(CREATOR_ROLES, &creator.role))])
            })
            .collect(),
    )
}

fn work_registered(work: &WorkRecord) -> Value {
    record(vec![
        ("title", string(&work.title)),
        ("alternativeTitles", strings(&work.alternative_titles)),
        ("iswc", optional_string(work.iswc.as_deref())),
        ("isrcs", strings(&work.isrcs)),
        ("creators", creators(&work.creators)),
        ("language", optional_string(work.language.as_deref())),
        ("workType", symbol_of(WORK_TYPES, &work.work_type)),
        ("createdOn", optional(work.created_on.map(date))),
        ("description", optional_string(work.description.as_deref())),
        ("subjects", strings(&work.subjects)),
        ("publisherPartyId", optional_string(work.publisher_party_id.as_deref())),
        ("relatedWorkIds", strings(&work.related_work_ids)),
        ("fileSha256", string(&work.file_sha256)),
        ("fileFormat", optional_string(work.file_format.as_deref())),
        ("earliestRecordedAt", timestamp(work.earliest_recorded_at)),
    ])
}

fn work_amended(amendment: &WorkAmendment) -> Value {
    record(vec![
        ("title", optional_string(amendment.title.as_deref())),
        ("alternativeTitles", optional(amendment.alternative_titles.as_deref().map(strings))),
        ("iswc", optional_string(amendment.iswc.as_deref())),
        ("isrcs", optional(amendment.isrcs.as_deref().map(strings))),
        ("creators", optional(amendment.creators.as_deref().map(creators))),
        ("language", optional_string(amendment.language.as_deref())),
        ("workType", optional(amendment.work_type.as_ref().map(|kind| symbol_of(WORK_TYPES, kind)))),
        ("createdOn", optional(amendment.created_on.map(date))),
        ("description", optional_string(amendment.description.as_deref())),
        ("subjects", optional(amendment.subjects.as_deref().map(strings))),
        ("publisherPartyId", optional_string(amendment.publisher_party_id.as_deref())),
        ("relatedWorkIds", optional(amendment.related_work_ids.as_deref().map(strings))),
        ("fileFormat", optional_string(amendment.file_format.as_deref())),
    ])
}

fn right(right: &RightRecord) -> Value {
    record(vec![
        ("rightId", string(&right.right_id)),
        ("rightType", symbol_of(RIGHT_TYPES, &right.right_type)),
        ("holderPartyId", string(&right.holder_party_id)),
        ("role", symbol_of(HOLDER_ROLES, &right.role)),
        ("shareBasisPoints", Value::Int(right.share_basis_points as i32)),
        ("acquiredFromPartyId", optional_string(right.acquired_from_party_id.as_deref())),
        ("territory", string(&right.territory)),
        ("validFrom", date(right.valid_from)),
        ("validUntil", optional(right.valid_until.map(date))),
        ("protectionEndsOn", date(right.protection_ends_on)),
    ])
}

fn personal_data(personal: &PersonalData) -> Value {
    record(vec![
        ("email", optional_string(Some(&personal.email))),
        ("phone", optional_string(Some(&personal.phone))),
        ("postalAddress", optional_string(Some(&personal.postal_address))),
        ("birthDate", optional(personal.birth_date.map(date))),
        ("nationalId", optional_string(Some(&personal.national_id))),
    ])
}

/// The payload's union branch index (in its topic's writer schema) and record.
fn payload(payload: &Payload) -> (u32, Value) {
    match payload {
        Payload::WorkRegistered(work) => (0, work_registered(work)),
        Payload::WorkAmended(amendment) => (1, work_amended(amendment)),
        Payload::WorkPublished(at) => (2, record(vec![("publishedAt", timestamp(*at))])),
        Payload::WorkWithdrawn(reason) => (3, record(vec![("reason", string(reason))])),
        Payload::WorkArchived => (4, record(vec![("archivedBy", string("archive-service"))])),
        Payload::RightsChain(rights, open) => (
            0,
            record(vec![
                ("rights", Value::Array(rights.iter().map(right).collect())),
                ("openForLicensing", Value::Boolean(*open)),
            ]),
        ),
        Payload::Availability(open) => (1, record(vec![("openForLicensing", Value::Boolean(*open))])),
        Payload::LicenseGranted(grant) => (
            0,
            record(vec![
                ("kind", symbol_of(LICENSE_KINDS, &grant.kind)),
                ("licenseePartyId", string(&grant.licensee_party_id)),
                ("status", symbol_of(LICENSE_STATUSES, &grant.status)),
                ("validFrom", date(grant.valid_from)),
                ("validUntil", optional(grant.valid_until.map(date))),
                ("coveredWorkIds", strings(&grant.covered_work_ids)),
                ("repertoire", optional_string(grant.repertoire.as_deref())),
                ("territory", string(&grant.territory)),
            ]),
        ),
        Payload::LicenseStatus(status, effective, reason) => (
            1,
            record(vec![
                ("status", symbol_of(LICENSE_STATUSES, status)),
                ("effectiveFrom", date(*effective)),
                ("reason", optional_string(reason.as_deref())),
            ]),
        ),
        Payload::LicenseRenewed(until) => (2, record(vec![("validUntil", optional(until.map(date)))])),
        Payload::DisputeOpened(id, grounds) => {
            (0, record(vec![("disputeId", string(id)), ("grounds", symbol(DISPUTE_GROUNDS, grounds))]))
        }
        Payload::DisputeUpdated(id, progress) => {
            (1, record(vec![("disputeId", string(id)), ("progress", symbol(DISPUTE_PROGRESS, progress))]))
        }
        Payload::DisputeResolved(id, outcome) => {
            (2, record(vec![("disputeId", string(id)), ("outcome", symbol(DISPUTE_OUTCOMES, outcome))]))
        }
        Payload::CertificateIssued(id, sha256, at) => {
            (0, record(vec![("certificateId", string(id)), ("sha256", string(sha256)), ("issuedAt", timestamp(*at))]))
        }
        Payload::CertificateRevoked(id, reason) => {
            (1, record(vec![("certificateId", string(id)), ("reason", string(reason))]))
        }
        Payload::PartyRegistered(profile, personal) => (
            0,
            record(vec![
                (
                    "profile",
                    record(vec![
                        ("name", string(&profile.name)),
                        ("kind", symbol_of(PARTY_KINDS, &profile.kind)),
                        ("ipi", optional_string(profile.ipi.as_deref())),
                        ("isni", optional_string(profile.isni.as_deref())),
                    ]),
                ),
                ("personalData", personal_data(personal)),
            ]),
        ),
        Payload::PartyRenamed(name) => (1, record(vec![("name", string(name))])),
        Payload::PartyIdentifiers(ipi, isni) => {
            (2, record(vec![("ipi", optional_string(ipi.as_deref())), ("isni", optional_string(isni.as_deref()))]))
        }
        Payload::PartyPersonalData(personal) => (3, record(vec![("personalData", personal_data(personal))])),
    }
}

/// The whole event record of a draft with its assigned version.
pub fn event_value(draft: &Draft, version: u64, event_id: &str) -> Value {
    let (branch, body) = payload(&draft.payload);
    let event_type = match draft.malformation {
        Some(Malformation::WrongEventType) => "WorkPublished".to_owned(),
        _ => draft.payload.type_name().to_owned(),
    };
    let version = match draft.malformation {
        Some(Malformation::ZeroVersion) => 0,
        _ => version as i64,
    };
    record(vec![
        (
            "envelope",
            record(vec![
                ("eventId", string(event_id)),
                ("eventType", Value::String(event_type)),
                ("aggregateId", string(&draft.aggregate_id)),
                ("aggregateVersion", Value::Long(version)),
                ("occurredAt", timestamp(Timestamp(draft.at.0 - 60_000))),
                ("recordedAt", timestamp(draft.at)),
                ("sourceSystem", string(if draft.topic == Topic::Parties { "party-registry" } else { "registry-web" })),
            ]),
        ),
        ("payload", Value::Union(branch, Box::new(body))),
    ])
}
