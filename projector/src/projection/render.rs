//! Rendering: from the states of a work's aggregates (and the parties they
//! name) to every document the API serves about it.
//!
//! Rendering is a pure function of the states. That is what makes the store
//! independent of arrival order: whichever event arrives last, the documents
//! are rendered again from the final states.

use std::collections::{BTreeMap, BTreeSet};

use read_model::calendar::{Date, Timestamp};
use read_model::documents::{
    BulkCreator, BulkRow, DisputeStatus, DublinCoreRecord, EvidenceInputs, FixtureResource, LicenseStatusDocument,
    PartyReference, RightHolding, RightType, RightsProfile, SandboxFixture, ShareTotal, VerificationInputs, WorkStatus,
    WorkType, percent_of,
};
use read_model::identifiers::{Audience, display_iswc};

use super::FastMap;
use super::state::{CertificateState, DisputesState, LicenseState, PartyState, RightsState, WorkState};

/// The public states of the parties a batch loaded, borrowed from the batch.
pub type PartyDirectory<'a> = FastMap<&'a str, &'a PartyState>;

/// The states a work's documents are rendered from.
#[derive(Debug, Clone, Copy)]
pub struct WorkInputs<'a> {
    pub lcc_id: &'a str,
    pub work: &'a WorkState,
    pub rights: Option<&'a RightsState>,
    pub disputes: Option<&'a DisputesState>,
    pub certificate: Option<&'a CertificateState>,
    pub parties: &'a PartyDirectory<'a>,
}

/// Every document of one work.
#[derive(Debug, Clone, PartialEq)]
pub struct RenderedWork {
    pub rights_profile: RightsProfile,
    pub verification: VerificationInputs,
    pub metadata: DublinCoreRecord,
    pub evidence: EvidenceInputs,
    /// Present only while the work is published.
    pub bulk_row: Option<BulkRow>,
    /// Present only for sandbox works.
    pub fixture: Option<SandboxFixture>,
}

/// The parties a work's documents name: creators, publisher, holders and transferors.
pub fn parties_named_by_work(work: &WorkState, rights: Option<&RightsState>) -> BTreeSet<String> {
    let record = &work.record;
    let mut parties: BTreeSet<String> = record.creators.iter().map(|creator| creator.party_id.clone()).collect();
    parties.extend(record.publisher_party_id.iter().cloned());
    for right in rights.map(|rights| rights.rights.as_slice()).unwrap_or_default() {
        parties.insert(right.holder_party_id.clone());
        parties.extend(right.acquired_from_party_id.iter().cloned());
    }
    parties
}

fn party_reference(party_id: &str, parties: &PartyDirectory<'_>) -> PartyReference {
    let party = parties.get(party_id);
    PartyReference {
        party_id: party_id.to_owned(),
        name: party.map(|party| party.name.clone()),
        kind: party.map(|party| party.kind),
        ipi: party.and_then(|party| party.ipi.clone()),
        isni: party.and_then(|party| party.isni.clone()),
    }
}

fn display_name(party_id: &str, parties: &PartyDirectory<'_>) -> String {
    parties.get(party_id).map_or_else(|| party_id.to_owned(), |party| party.name.clone())
}

pub fn render_work(inputs: WorkInputs<'_>) -> RenderedWork {
    let WorkInputs { lcc_id, work, rights, disputes, certificate, parties } = inputs;
    let record = &work.record;
    // Each document's `updatedAt` covers only the aggregates it is rendered
    // from, so a change elsewhere leaves the document byte for byte as it was.
    let profile_updated_at = work.updated_at.max(rights.map_or(work.updated_at, |state| state.updated_at));
    let updated_at = [disputes.map(|state| state.updated_at), certificate.map(|state| state.updated_at)]
        .into_iter()
        .flatten()
        .fold(profile_updated_at, Timestamp::max);

    let holdings: Vec<RightHolding> = rights
        .map(|state| state.rights.as_slice())
        .unwrap_or_default()
        .iter()
        .map(|right| RightHolding {
            right_id: right.right_id.clone(),
            right_type: right.right_type,
            holder: party_reference(&right.holder_party_id, parties),
            role: right.role,
            share_basis_points: right.share_basis_points,
            share_percent: percent_of(right.share_basis_points),
            acquired_from: right.acquired_from_party_id.as_deref().map(|party| party_reference(party, parties)),
            territory: right.territory.clone(),
            valid_from: right.valid_from,
            valid_until: right.valid_until,
            protection_ends_on: right.protection_ends_on,
        })
        .collect();
    let shares = share_totals(&holdings);
    let open_for_licensing = rights.is_some_and(|state| state.open_for_licensing);
    let protection_ends_on = protection_end(&holdings);
    let dispute_status = overall_dispute_status(disputes);
    let certificate_record = certificate.and_then(|state| state.certificate.clone());
    let iswc = record.iswc.as_deref().map(display_iswc);

    let rights_profile = RightsProfile {
        lcc_id: lcc_id.to_owned(),
        title: record.title.clone(),
        iswc: iswc.clone(),
        isrcs: record.isrcs.clone(),
        status: work.status,
        open_for_licensing,
        holders: holdings.clone(),
        shares: shares.clone(),
        updated_at: profile_updated_at,
    };
    let verification = VerificationInputs {
        lcc_id: lcc_id.to_owned(),
        status: work.status,
        file_sha256: record.file_sha256.clone(),
        certificate: certificate_record.clone(),
        shares: shares.clone(),
        dispute_status,
        protection_ends_on,
        updated_at,
    };
    let (authors_rights, related_rights): (Vec<_>, Vec<_>) =
        holdings.iter().cloned().partition(|holding| holding.right_type == RightType::AuthorsRight);
    let evidence = EvidenceInputs {
        lcc_id: lcc_id.to_owned(),
        title: record.title.clone(),
        status: work.status,
        earliest_recorded_at: record.earliest_recorded_at,
        file_sha256: record.file_sha256.clone(),
        authors_rights,
        related_rights,
        protection_ends_on,
        dispute_status,
        disputes: disputes.map(|state| state.disputes.clone()).unwrap_or_default(),
        certificate: certificate_record.clone(),
        updated_at,
    };
    let metadata = dublin_core(inputs, &holdings, open_for_licensing, iswc.as_deref());
    let bulk_row = (work.status == WorkStatus::Published).then(|| BulkRow {
        lcc_id: lcc_id.to_owned(),
        title: record.title.clone(),
        iswc: iswc.clone(),
        isrcs: record.isrcs.clone(),
        work_type: record.work_type,
        language: record.language.clone(),
        created_on: record.created_on,
        published_at: work.published_at.unwrap_or(work.updated_at),
        creators: record
            .creators
            .iter()
            .map(|creator| BulkCreator {
                name: parties.get(creator.party_id.as_str()).map(|party| party.name.clone()),
                role: creator.role,
            })
            .collect(),
        open_for_licensing,
    });
    let fixture = (Audience::of(lcc_id) == Audience::Sandbox).then(|| SandboxFixture {
        id: lcc_id.to_owned(),
        resource: FixtureResource::Work,
        scenarios: work_scenarios(&verification, &rights_profile, Date::of(updated_at)),
        iswc,
        isrcs: record.isrcs.clone(),
    });
    RenderedWork { rights_profile, verification, metadata, evidence, bulk_row, fixture }
}

fn share_totals(holdings: &[RightHolding]) -> Vec<ShareTotal> {
    let mut totals: BTreeMap<RightType, (u32, BTreeSet<&str>)> = BTreeMap::new();
    for holding in holdings {
        let entry = totals.entry(holding.right_type).or_default();
        entry.0 += holding.share_basis_points;
        entry.1.insert(&holding.holder.party_id);
    }
    totals
        .into_iter()
        .map(|(right_type, (basis_points, holders))| ShareTotal {
            right_type,
            basis_points,
            holders: holders.len() as u32,
            complete: basis_points == 10_000,
        })
        .collect()
}

/// The last day of protection: of the authors' rights when any are recorded, else of the related rights.
fn protection_end(holdings: &[RightHolding]) -> Option<Date> {
    let latest = |right_type: RightType| {
        holdings
            .iter()
            .filter(|holding| holding.right_type == right_type)
            .map(|holding| holding.protection_ends_on)
            .max()
    };
    latest(RightType::AuthorsRight).or_else(|| latest(RightType::RelatedRight))
}

/// The work's dispute status: the most recently changed unresolved dispute,
/// else the most recently resolved one, else `none`.
fn overall_dispute_status(disputes: Option<&DisputesState>) -> DisputeStatus {
    let disputes = disputes.map(|state| state.disputes.as_slice()).unwrap_or_default();
    let latest = |unresolved: bool| {
        disputes
            .iter()
            .filter(|dispute| dispute.status.is_unresolved() == unresolved)
            .max_by_key(|dispute| dispute.updated_at)
            .map(|dispute| dispute.status)
    };
    latest(true).or_else(|| latest(false)).unwrap_or(DisputeStatus::None)
}

fn dublin_core(
    inputs: WorkInputs<'_>,
    holdings: &[RightHolding],
    open_for_licensing: bool,
    iswc: Option<&str>,
) -> DublinCoreRecord {
    let WorkInputs { lcc_id, work, parties, .. } = inputs;
    let record = &work.record;
    let mut contributors: Vec<String> = Vec::new();
    let push_unique = |list: &mut Vec<String>, value: String| {
        if !list.contains(&value) {
            list.push(value);
        }
    };
    for creator in record.creators.iter().filter(|creator| !creator.role.is_primary_creator()) {
        push_unique(&mut contributors, display_name(&creator.party_id, parties));
    }
    for holding in holdings.iter().filter(|holding| holding.right_type == RightType::RelatedRight) {
        push_unique(&mut contributors, display_name(&holding.holder.party_id, parties));
    }
    let mut identifier = vec![lcc_id.to_owned()];
    identifier.extend(iswc.map(|iswc| format!("ISWC {iswc}")));
    identifier.extend(record.isrcs.iter().map(|isrc| format!("ISRC {isrc}")));
    let mut date: Vec<String> = record.created_on.iter().map(ToString::to_string).collect();
    date.extend(work.published_at.map(|published| Date::of(published).to_string()));
    let dcmi_type = match record.work_type {
        WorkType::MusicalWork | WorkType::SoundRecording => Some("Sound"),
        WorkType::LiteraryWork => Some("Text"),
        WorkType::AudiovisualWork => Some("MovingImage"),
        WorkType::VisualWork => Some("StillImage"),
        WorkType::Software => Some("Software"),
        WorkType::Other => None,
    };
    let coverage: BTreeSet<String> = holdings.iter().map(|holding| holding.territory.clone()).collect();
    let mut rights = Vec::new();
    for (right_type, label) in
        [(RightType::AuthorsRight, "Authors' rights"), (RightType::RelatedRight, "Related rights")]
    {
        let held: Vec<String> = holdings
            .iter()
            .filter(|holding| holding.right_type == right_type)
            .map(|holding| format!("{} {}%", display_name(&holding.holder.party_id, parties), holding.share_percent))
            .collect();
        if !held.is_empty() {
            rights.push(format!("{label}: {}", held.join(", ")));
        }
    }
    rights.push(if open_for_licensing { "Open for licensing" } else { "Not open for licensing" }.to_owned());
    DublinCoreRecord {
        lcc_id: lcc_id.to_owned(),
        title: std::iter::once(record.title.clone()).chain(record.alternative_titles.iter().cloned()).collect(),
        creator: record
            .creators
            .iter()
            .filter(|creator| creator.role.is_primary_creator())
            .map(|creator| display_name(&creator.party_id, parties))
            .collect(),
        subject: record.subjects.clone(),
        description: record.description.iter().cloned().collect(),
        publisher: record.publisher_party_id.iter().map(|party| display_name(party, parties)).collect(),
        contributor: contributors,
        date,
        work_type: dcmi_type.into_iter().map(str::to_owned).collect(),
        format: record.file_format.iter().cloned().collect(),
        identifier,
        source: Vec::new(),
        language: record.language.iter().cloned().collect(),
        relation: record.related_work_ids.clone(),
        coverage: coverage.into_iter().collect(),
        rights,
    }
}

/// The scenarios a sandbox work demonstrates, derived from its documents.
/// "Protection expired" is judged against the record's own last change, so
/// that the catalogue does not depend on the day it was projected.
fn work_scenarios(verification: &VerificationInputs, profile: &RightsProfile, as_of: Date) -> Vec<String> {
    let mut scenarios = Vec::new();
    scenarios.push(if profile.open_for_licensing { "open_for_licensing" } else { "closed_for_licensing" }.to_owned());
    let holders: BTreeSet<&str> = profile.holders.iter().map(|holding| holding.holder.party_id.as_str()).collect();
    match holders.len() {
        0 => scenarios.push("no_rights_recorded".to_owned()),
        1 => scenarios.push("single_holder".to_owned()),
        _ => scenarios.push("split_rights".to_owned()),
    }
    if profile.holders.iter().any(|holding| holding.right_type == RightType::RelatedRight) {
        scenarios.push("related_rights".to_owned());
    }
    if profile.shares.iter().any(|total| !total.complete) {
        scenarios.push("incomplete_rights_chain".to_owned());
    }
    let dispute = serde_json::to_value(verification.dispute_status).ok();
    let dispute = dispute.as_ref().and_then(serde_json::Value::as_str).unwrap_or("none");
    scenarios.push(format!("dispute_{dispute}"));
    if verification.protection_ends_on.is_some_and(|ends| ends < as_of) {
        scenarios.push("protection_expired".to_owned());
    }
    match &verification.certificate {
        None => scenarios.push("no_certificate".to_owned()),
        Some(certificate) if certificate.revoked => scenarios.push("certificate_revoked".to_owned()),
        Some(_) => scenarios.push("certificate_valid".to_owned()),
    }
    if profile.iswc.is_some() {
        scenarios.push("found_by_iswc".to_owned());
    }
    if !profile.isrcs.is_empty() {
        scenarios.push("found_by_isrc".to_owned());
    }
    scenarios.push(format!(
        "work_{}",
        match profile.status {
            WorkStatus::Registered => "registered",
            WorkStatus::Published => "published",
            WorkStatus::Withdrawn => "withdrawn",
        }
    ));
    scenarios
}

/// The status document of a license, and its fixture entry when it is a sandbox license.
pub fn render_license(
    license_id: &str,
    license: &LicenseState,
    parties: &PartyDirectory<'_>,
) -> (LicenseStatusDocument, Option<SandboxFixture>) {
    let document = LicenseStatusDocument {
        license_id: license_id.to_owned(),
        kind: license.kind,
        status: license.status,
        status_effective_from: license.status_effective_from,
        status_reason: license.status_reason.clone(),
        valid_from: license.valid_from,
        valid_until: license.valid_until,
        licensee: party_reference(&license.licensee_party_id, parties),
        covered_work_ids: license.covered_work_ids.clone(),
        repertoire: license.repertoire.clone(),
        territory: license.territory.clone(),
        updated_at: license.updated_at,
    };
    let fixture = (Audience::of(license_id) == Audience::Sandbox).then(|| {
        let kind = serde_json::to_value(license.kind).ok();
        let status = serde_json::to_value(license.status).ok();
        let text = |value: &Option<serde_json::Value>| {
            value.as_ref().and_then(serde_json::Value::as_str).unwrap_or_default().to_ascii_lowercase()
        };
        SandboxFixture {
            id: license_id.to_owned(),
            resource: FixtureResource::License,
            scenarios: vec![format!("license_{}_{}", text(&kind), text(&status))],
            iswc: None,
            isrcs: Vec::new(),
        }
    });
    (document, fixture)
}
