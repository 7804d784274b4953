//! Rules an event must satisfy, on its own, before it may change anything.
//!
//! A violation parks the event with the reason; nothing else stops. Rules
//! that need the current state (an amendment of an unknown work, say) live
//! with the projection rules instead. Validation also normalizes ISWC and
//! ISRC values, so that documents and indexes hold one spelling.

use std::collections::BTreeMap;

use read_model::identifiers::{Audience, normalize_ipi, normalize_isni, normalize_isrc, normalize_iswc};

use super::{Change, Event, WorkAmendment, WorkRecord};

/// Checks `event` and normalizes its identifiers, or gives the reason it is
/// invalid. Normalizing changes only the payload, never the envelope.
pub fn validate(event: &mut Event) -> Result<(), String> {
    let envelope = &event.envelope;
    let expected_type = event.change.type_name();
    if envelope.event_type != expected_type {
        return Err(format!("envelope.eventType is {:?} but the payload is {expected_type}", envelope.event_type));
    }
    if envelope.event_id.trim().is_empty() {
        return Err("envelope.eventId is empty".into());
    }
    if envelope.aggregate_id.trim().is_empty() {
        return Err("envelope.aggregateId is empty".into());
    }
    if envelope.aggregate_version == 0 {
        return Err("envelope.aggregateVersion must be 1 or more".into());
    }
    let audience = Audience::of(&envelope.aggregate_id);
    let same_audience = |field: &str, id: &str| {
        if Audience::of(id) == audience {
            Ok(())
        } else {
            Err(format!("{field} {id:?} mixes sandbox and production records"))
        }
    };
    match &mut event.change {
        Change::WorkRegistered(record) => {
            normalize_work_record(record)?;
            for creator in &record.creators {
                same_audience("creators.partyId", &creator.party_id)?;
            }
            if let Some(publisher) = &record.publisher_party_id {
                same_audience("publisherPartyId", publisher)?;
            }
            for related in &record.related_work_ids {
                same_audience("relatedWorkIds", related)?;
            }
        }
        Change::WorkAmended(amendment) => {
            normalize_amendment(amendment)?;
            for creator in amendment.creators.iter().flatten() {
                same_audience("creators.partyId", &creator.party_id)?;
            }
        }
        Change::RightsChainRecorded { rights, .. } => {
            let mut totals = BTreeMap::new();
            for right in rights.iter() {
                same_audience("holderPartyId", &right.holder_party_id)?;
                if let Some(from) = &right.acquired_from_party_id {
                    same_audience("acquiredFromPartyId", from)?;
                }
                if right.share_basis_points > 10_000 {
                    return Err(format!(
                        "right {} has a share of {} basis points",
                        right.right_id, right.share_basis_points
                    ));
                }
                if right.valid_until.is_some_and(|until| until < right.valid_from) {
                    return Err(format!("right {} ends before it starts", right.right_id));
                }
                *totals.entry(right.right_type).or_insert(0_u32) += right.share_basis_points;
            }
            if let Some((right_type, total)) = totals.iter().find(|(_, total)| **total > 10_000) {
                return Err(format!("shares of {right_type:?} add up to {total} basis points, more than 100%"));
            }
        }
        Change::LicenseGranted(grant) => {
            same_audience("licenseePartyId", &grant.licensee_party_id)?;
            for work in &grant.covered_work_ids {
                same_audience("coveredWorkIds", work)?;
            }
            if grant.valid_until.is_some_and(|until| until < grant.valid_from) {
                return Err("the license ends before it starts".into());
            }
            if grant.kind == read_model::documents::LicenseKind::Individual && grant.covered_work_ids.is_empty() {
                return Err("an Individual license must cover at least one work".into());
            }
        }
        Change::CertificateIssued { sha256, .. } => check_sha256("sha256", sha256)?,
        Change::PartyRegistered(profile) => {
            if profile.name.trim().is_empty() {
                return Err("profile.name is empty".into());
            }
            normalize_party_identifiers("profile.", &mut profile.ipi, &mut profile.isni)?;
        }
        Change::PartyIdentifiersChanged { ipi, isni } => normalize_party_identifiers("", ipi, isni)?,
        Change::PartyRenamed { name } if name.trim().is_empty() => {
            return Err("name is empty".into());
        }
        _ => {}
    }
    Ok(())
}

fn normalize_work_record(record: &mut WorkRecord) -> Result<(), String> {
    if record.title.trim().is_empty() {
        return Err("title is empty".into());
    }
    check_sha256("fileSha256", &record.file_sha256)?;
    if let Some(iswc) = &record.iswc {
        record.iswc = Some(normalize_iswc(iswc).map_err(|error| format!("iswc {iswc:?}: {error}"))?);
    }
    record.isrcs = normalize_isrcs(&record.isrcs)?;
    Ok(())
}

fn normalize_amendment(amendment: &mut WorkAmendment) -> Result<(), String> {
    if amendment.title.as_deref().is_some_and(|title| title.trim().is_empty()) {
        return Err("title is empty".into());
    }
    if let Some(iswc) = &amendment.iswc {
        amendment.iswc = Some(normalize_iswc(iswc).map_err(|error| format!("iswc {iswc:?}: {error}"))?);
    }
    if let Some(isrcs) = &amendment.isrcs {
        amendment.isrcs = Some(normalize_isrcs(isrcs)?);
    }
    Ok(())
}

/// Checks a party's IPI name number and ISNI, when given, and writes them in their compact forms.
fn normalize_party_identifiers(
    prefix: &str,
    ipi: &mut Option<String>,
    isni: &mut Option<String>,
) -> Result<(), String> {
    if let Some(value) = ipi.as_deref() {
        *ipi = Some(normalize_ipi(value).map_err(|error| format!("{prefix}ipi {value:?}: {error}"))?);
    }
    if let Some(value) = isni.as_deref() {
        *isni = Some(normalize_isni(value).map_err(|error| format!("{prefix}isni {value:?}: {error}"))?);
    }
    Ok(())
}

fn normalize_isrcs(isrcs: &[String]) -> Result<Vec<String>, String> {
    let mut normalized = isrcs
        .iter()
        .map(|isrc| normalize_isrc(isrc).map_err(|error| format!("isrc {isrc:?}: {error}")))
        .collect::<Result<Vec<_>, _>>()?;
    normalized.dedup();
    Ok(normalized)
}

fn check_sha256(field: &str, value: &str) -> Result<(), String> {
    if value.len() == 64 && value.bytes().all(|byte| byte.is_ascii_digit() || (b'a'..=b'f').contains(&byte)) {
        Ok(())
    } else {
        Err(format!("{field} must be 64 lowercase hexadecimal characters"))
    }
}
