//! From a resolved Avro value (shaped by the reader schema) to an [`Event`].

use apache_avro::types::Value;
use read_model::documents::{
    CreatorRole, DisputeStatus, HolderRole, LicenseKind, LicenseStatus, PartyKind, RightType, WorkType,
};

use super::{Change, Creator, Envelope, Event, LicenseGrant, PartyProfile, RightRecord, WorkAmendment, WorkRecord};
use crate::avro_value::{Fields, ShapeError};
use crate::contract::{Contract, Topic};

/// Decodes one event of `topic`; `value` must already match the reader schema.
pub fn decode_event(contract: &Contract, topic: Topic, value: &Value) -> Result<Event, ShapeError> {
    let event = Fields::of("event", value)?;
    let envelope = decode_envelope(event.record("envelope")?)?;
    let Value::Union(branch, payload) = event.raw("payload")? else {
        return Err(ShapeError("event.payload: expected a union".into()));
    };
    let branches = contract.payload_branches(topic);
    let branch_name = branches.get(*branch as usize).ok_or_else(|| {
        ShapeError(format!("event.payload: union branch {branch} is not in the {} contract", topic.name()))
    })?;
    let payload = Fields::of("payload", payload)?;
    let change = decode_change(branch_name, payload)?;
    Ok(Event { topic, envelope, change })
}

fn decode_envelope(fields: Fields<'_>) -> Result<Envelope, ShapeError> {
    let version = fields.long("aggregateVersion")?;
    Ok(Envelope {
        event_id: fields.string("eventId")?,
        event_type: fields.string("eventType")?,
        aggregate_id: fields.string("aggregateId")?,
        aggregate_version: u64::try_from(version).unwrap_or(0),
        occurred_at: fields.timestamp("occurredAt")?,
        recorded_at: fields.timestamp("recordedAt")?,
        source_system: fields.string("sourceSystem")?,
    })
}

fn decode_change(branch: &str, fields: Fields<'_>) -> Result<Change, ShapeError> {
    Ok(match branch {
        "WorkRegistered" => Change::WorkRegistered(decode_work_record(fields)?),
        "WorkAmended" => Change::WorkAmended(decode_work_amendment(fields)?),
        "WorkPublished" => Change::WorkPublished { published_at: fields.timestamp("publishedAt")? },
        "WorkWithdrawn" => Change::WorkWithdrawn { reason: fields.string("reason")? },
        "RightsChainRecorded" => Change::RightsChainRecorded {
            rights: fields
                .array("rights")?
                .iter()
                .map(|right| decode_right(Fields::of("right", right)?))
                .collect::<Result<_, _>>()?,
            open_for_licensing: fields.boolean("openForLicensing")?,
        },
        "LicensingAvailabilityChanged" => {
            Change::LicensingAvailabilityChanged { open_for_licensing: fields.boolean("openForLicensing")? }
        }
        "LicenseGranted" => Change::LicenseGranted(LicenseGrant {
            kind: license_kind(fields.symbol("kind")?)?,
            licensee_party_id: fields.string("licenseePartyId")?,
            status: license_status(fields.symbol("status")?)?,
            valid_from: fields.date("validFrom")?,
            valid_until: fields.optional_date("validUntil")?,
            covered_work_ids: fields.string_array("coveredWorkIds")?,
            repertoire: fields.optional_string("repertoire")?,
            territory: fields.string("territory")?,
        }),
        "LicenseStatusChanged" => Change::LicenseStatusChanged {
            status: license_status(fields.symbol("status")?)?,
            effective_from: fields.date("effectiveFrom")?,
            reason: fields.optional_string("reason")?,
        },
        "LicenseRenewed" => Change::LicenseRenewed { valid_until: fields.optional_date("validUntil")? },
        "DisputeOpened" => Change::DisputeOpened {
            dispute_id: fields.string("disputeId")?,
            grounds: fields.symbol("grounds")?.to_ascii_lowercase(),
        },
        "DisputeUpdated" => Change::DisputeUpdated {
            dispute_id: fields.string("disputeId")?,
            status: match fields.symbol("progress")? {
                "OPEN" => DisputeStatus::Open,
                "UNDER_REVIEW" => DisputeStatus::UnderReview,
                "IN_MEDIATION" => DisputeStatus::InMediation,
                other => return Err(unknown_symbol("progress", other)),
            },
        },
        "DisputeResolved" => Change::DisputeResolved {
            dispute_id: fields.string("disputeId")?,
            status: match fields.symbol("outcome")? {
                "UPHELD" => DisputeStatus::ResolvedUpheld,
                "REJECTED" => DisputeStatus::ResolvedRejected,
                "SETTLED" => DisputeStatus::Settled,
                "WITHDRAWN" => DisputeStatus::Withdrawn,
                other => return Err(unknown_symbol("outcome", other)),
            },
        },
        "CertificateIssued" => Change::CertificateIssued {
            certificate_id: fields.string("certificateId")?,
            sha256: fields.string("sha256")?,
            issued_at: fields.timestamp("issuedAt")?,
        },
        "CertificateRevoked" => Change::CertificateRevoked {
            certificate_id: fields.string("certificateId")?,
            reason: fields.string("reason")?,
        },
        "PartyRegistered" => {
            // Only the public profile is read; `personalData` is skipped unread.
            let profile = fields.record("profile")?;
            Change::PartyRegistered(PartyProfile {
                name: profile.string("name")?,
                kind: match profile.symbol("kind")? {
                    "PERSON" => PartyKind::Person,
                    "ORGANISATION" => PartyKind::Organisation,
                    other => return Err(unknown_symbol("kind", other)),
                },
                ipi: profile.optional_string("ipi")?,
                isni: profile.optional_string("isni")?,
            })
        }
        "PartyRenamed" => Change::PartyRenamed { name: fields.string("name")? },
        "PartyIdentifiersChanged" => Change::PartyIdentifiersChanged {
            ipi: fields.optional_string("ipi")?,
            isni: fields.optional_string("isni")?,
        },
        "PartyPersonalDataChanged" => Change::PartyPersonalDataChanged,
        other => return Err(ShapeError(format!("payload: unknown event type {other}"))),
    })
}

fn decode_work_record(fields: Fields<'_>) -> Result<WorkRecord, ShapeError> {
    Ok(WorkRecord {
        title: fields.string("title")?,
        alternative_titles: fields.string_array("alternativeTitles")?,
        iswc: fields.optional_string("iswc")?,
        isrcs: fields.string_array("isrcs")?,
        creators: decode_creators(fields.array("creators")?)?,
        language: fields.optional_string("language")?,
        work_type: work_type(fields.symbol("workType")?)?,
        created_on: fields.optional_date("createdOn")?,
        description: fields.optional_string("description")?,
        subjects: fields.string_array("subjects")?,
        publisher_party_id: fields.optional_string("publisherPartyId")?,
        related_work_ids: fields.string_array("relatedWorkIds")?,
        file_sha256: fields.string("fileSha256")?,
        file_format: fields.optional_string("fileFormat")?,
        earliest_recorded_at: fields.timestamp("earliestRecordedAt")?,
    })
}

fn decode_work_amendment(fields: Fields<'_>) -> Result<WorkAmendment, ShapeError> {
    Ok(WorkAmendment {
        title: fields.optional_string("title")?,
        alternative_titles: fields.optional_string_array("alternativeTitles")?,
        iswc: fields.optional_string("iswc")?,
        isrcs: fields.optional_string_array("isrcs")?,
        creators: fields.optional_array("creators")?.map(decode_creators).transpose()?,
        language: fields.optional_string("language")?,
        work_type: fields.optional_symbol("workType")?.map(work_type).transpose()?,
        created_on: fields.optional_date("createdOn")?,
        description: fields.optional_string("description")?,
        subjects: fields.optional_string_array("subjects")?,
        publisher_party_id: fields.optional_string("publisherPartyId")?,
        related_work_ids: fields.optional_string_array("relatedWorkIds")?,
        file_format: fields.optional_string("fileFormat")?,
    })
}

fn decode_creators(items: &[Value]) -> Result<Vec<Creator>, ShapeError> {
    items
        .iter()
        .map(|item| {
            let creator = Fields::of("creator", item)?;
            Ok(Creator { party_id: creator.string("partyId")?, role: creator_role(creator.symbol("role")?)? })
        })
        .collect()
}

fn decode_right(fields: Fields<'_>) -> Result<RightRecord, ShapeError> {
    let share = fields.int("shareBasisPoints")?;
    Ok(RightRecord {
        right_id: fields.string("rightId")?,
        right_type: match fields.symbol("rightType")? {
            "AUTHORS_RIGHT" => RightType::AuthorsRight,
            "RELATED_RIGHT" => RightType::RelatedRight,
            other => return Err(unknown_symbol("rightType", other)),
        },
        holder_party_id: fields.string("holderPartyId")?,
        role: holder_role(fields.symbol("role")?)?,
        share_basis_points: u32::try_from(share)
            .map_err(|_| ShapeError(format!("right.shareBasisPoints: {share} is negative")))?,
        acquired_from_party_id: fields.optional_string("acquiredFromPartyId")?,
        territory: fields.string("territory")?,
        valid_from: fields.date("validFrom")?,
        valid_until: fields.optional_date("validUntil")?,
        protection_ends_on: fields.date("protectionEndsOn")?,
    })
}

fn unknown_symbol(field: &str, symbol: &str) -> ShapeError {
    ShapeError(format!("{field}: unknown symbol {symbol}"))
}

fn work_type(symbol: &str) -> Result<WorkType, ShapeError> {
    Ok(match symbol {
        "MUSICAL_WORK" => WorkType::MusicalWork,
        "SOUND_RECORDING" => WorkType::SoundRecording,
        "LITERARY_WORK" => WorkType::LiteraryWork,
        "AUDIOVISUAL_WORK" => WorkType::AudiovisualWork,
        "VISUAL_WORK" => WorkType::VisualWork,
        "SOFTWARE" => WorkType::Software,
        "OTHER" => WorkType::Other,
        other => return Err(unknown_symbol("workType", other)),
    })
}

fn creator_role(symbol: &str) -> Result<CreatorRole, ShapeError> {
    Ok(match symbol {
        "AUTHOR" => CreatorRole::Author,
        "COMPOSER" => CreatorRole::Composer,
        "LYRICIST" => CreatorRole::Lyricist,
        "ARRANGER" => CreatorRole::Arranger,
        "TRANSLATOR" => CreatorRole::Translator,
        "PERFORMER" => CreatorRole::Performer,
        "PRODUCER" => CreatorRole::Producer,
        "OTHER" => CreatorRole::Other,
        other => return Err(unknown_symbol("role", other)),
    })
}

fn holder_role(symbol: &str) -> Result<HolderRole, ShapeError> {
    Ok(match symbol {
        "AUTHOR" => HolderRole::Author,
        "COMPOSER" => HolderRole::Composer,
        "LYRICIST" => HolderRole::Lyricist,
        "PUBLISHER" => HolderRole::Publisher,
        "PERFORMER" => HolderRole::Performer,
        "PRODUCER" => HolderRole::Producer,
        "BROADCASTER" => HolderRole::Broadcaster,
        "SUCCESSOR" => HolderRole::Successor,
        "OTHER" => HolderRole::Other,
        other => return Err(unknown_symbol("role", other)),
    })
}

fn license_kind(symbol: &str) -> Result<LicenseKind, ShapeError> {
    Ok(match symbol {
        "Blanket" => LicenseKind::Blanket,
        "Individual" => LicenseKind::Individual,
        other => return Err(unknown_symbol("kind", other)),
    })
}

fn license_status(symbol: &str) -> Result<LicenseStatus, ShapeError> {
    Ok(match symbol {
        "PENDING" => LicenseStatus::Pending,
        "ACTIVE" => LicenseStatus::Active,
        "SUSPENDED" => LicenseStatus::Suspended,
        "EXPIRED" => LicenseStatus::Expired,
        "TERMINATED" => LicenseStatus::Terminated,
        "REVOKED" => LicenseStatus::Revoked,
        other => return Err(unknown_symbol("status", other)),
    })
}
