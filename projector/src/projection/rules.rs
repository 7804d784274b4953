//! The projection rules: how one event changes the state of its aggregate.
//!
//! Each rule is a pure function of the current state and the event. Rules
//! reject an event that needs a state that does not exist (an amendment of an
//! unregistered work, a status change of an unknown license); the caller parks
//! it. Version checks happen before a rule runs.

use read_model::documents::{CertificateRecord, DisputeStatus, DisputeSummary, WorkStatus};

use super::state::{AggregateState, CertificateState, DisputesState, LicenseState, PartyState, RightsState, WorkState};
use crate::events::{Change, Event, WorkAmendment, WorkRecord};

/// The new state after `event`, or why the event cannot apply.
pub fn apply(current: Option<&AggregateState>, event: &Event) -> Result<AggregateState, String> {
    let at = event.envelope.recorded_at;
    match (&event.change, current) {
        (Change::WorkRegistered(record), current) => {
            // A registration on an existing work replaces its public record
            // and keeps its publication status.
            let (status, published_at, withdrawal_reason) = match current {
                Some(AggregateState::Work(work)) => (work.status, work.published_at, work.withdrawal_reason.clone()),
                _ => (WorkStatus::Registered, None, None),
            };
            Ok(AggregateState::Work(WorkState {
                record: record.clone(),
                status,
                published_at,
                withdrawal_reason,
                updated_at: at,
            }))
        }
        (Change::WorkAmended(amendment), Some(AggregateState::Work(work))) => {
            let mut work = work.clone();
            amend(&mut work.record, amendment);
            work.updated_at = at;
            Ok(AggregateState::Work(work))
        }
        (Change::WorkPublished { published_at }, Some(AggregateState::Work(work))) => {
            let mut work = work.clone();
            if work.status != WorkStatus::Withdrawn {
                work.status = WorkStatus::Published;
            }
            work.published_at = Some(*published_at);
            work.updated_at = at;
            Ok(AggregateState::Work(work))
        }
        (Change::WorkWithdrawn { reason }, Some(AggregateState::Work(work))) => {
            let mut work = work.clone();
            work.status = WorkStatus::Withdrawn;
            work.withdrawal_reason = Some(reason.clone());
            work.updated_at = at;
            Ok(AggregateState::Work(work))
        }
        (Change::WorkAmended(_) | Change::WorkPublished { .. } | Change::WorkWithdrawn { .. }, _) => {
            Err(format!("{} for a work that was never registered", event.envelope.event_type))
        }

        (Change::RightsChainRecorded { rights, open_for_licensing }, _) => {
            let mut rights = rights.clone();
            rights.sort_by(|left, right| (left.right_type, &left.right_id).cmp(&(right.right_type, &right.right_id)));
            Ok(AggregateState::Rights(RightsState { rights, open_for_licensing: *open_for_licensing, updated_at: at }))
        }
        (Change::LicensingAvailabilityChanged { open_for_licensing }, current) => {
            let rights = match current {
                Some(AggregateState::Rights(state)) => state.rights.clone(),
                _ => Vec::new(),
            };
            Ok(AggregateState::Rights(RightsState { rights, open_for_licensing: *open_for_licensing, updated_at: at }))
        }

        (Change::DisputeOpened { dispute_id, grounds }, current) => {
            let mut state = disputes_or_empty(current, at);
            if state.disputes.iter().any(|dispute| &dispute.dispute_id == dispute_id) {
                return Err(format!("dispute {dispute_id} is already open"));
            }
            state.disputes.push(DisputeSummary {
                dispute_id: dispute_id.clone(),
                grounds: grounds.clone(),
                status: DisputeStatus::Open,
                opened_at: at,
                updated_at: at,
            });
            state.updated_at = at;
            Ok(AggregateState::Disputes(state))
        }
        (Change::DisputeUpdated { dispute_id, status } | Change::DisputeResolved { dispute_id, status }, current) => {
            let mut state = disputes_or_empty(current, at);
            let dispute = state
                .disputes
                .iter_mut()
                .find(|dispute| &dispute.dispute_id == dispute_id)
                .ok_or_else(|| format!("{} for unknown dispute {dispute_id}", event.envelope.event_type))?;
            dispute.status = *status;
            dispute.updated_at = at;
            state.updated_at = at;
            Ok(AggregateState::Disputes(state))
        }

        (Change::CertificateIssued { certificate_id, sha256, issued_at }, _) => {
            Ok(AggregateState::Certificate(CertificateState {
                certificate: Some(CertificateRecord {
                    certificate_id: certificate_id.clone(),
                    sha256: sha256.clone(),
                    issued_at: *issued_at,
                    revoked: false,
                    revocation_reason: None,
                }),
                updated_at: at,
            }))
        }
        (Change::CertificateRevoked { certificate_id, reason }, Some(AggregateState::Certificate(state)))
            if state.certificate.as_ref().is_some_and(|current| &current.certificate_id == certificate_id) =>
        {
            let mut state = state.clone();
            if let Some(certificate) = state.certificate.as_mut() {
                certificate.revoked = true;
                certificate.revocation_reason = Some(reason.clone());
            }
            state.updated_at = at;
            Ok(AggregateState::Certificate(state))
        }
        (Change::CertificateRevoked { certificate_id, .. }, _) => {
            Err(format!("revocation of certificate {certificate_id}, which is not the work's current certificate"))
        }

        (Change::LicenseGranted(grant), _) => Ok(AggregateState::License(LicenseState {
            kind: grant.kind,
            licensee_party_id: grant.licensee_party_id.clone(),
            status: grant.status,
            status_effective_from: grant.valid_from,
            status_reason: None,
            valid_from: grant.valid_from,
            valid_until: grant.valid_until,
            covered_work_ids: grant.covered_work_ids.clone(),
            repertoire: grant.repertoire.clone(),
            territory: grant.territory.clone(),
            updated_at: at,
        })),
        (Change::LicenseStatusChanged { status, effective_from, reason }, Some(AggregateState::License(license))) => {
            let mut license = license.clone();
            license.status = *status;
            license.status_effective_from = *effective_from;
            license.status_reason = reason.clone();
            license.updated_at = at;
            Ok(AggregateState::License(license))
        }
        (Change::LicenseRenewed { valid_until }, Some(AggregateState::License(license))) => {
            let mut license = license.clone();
            license.valid_until = *valid_until;
            license.updated_at = at;
            Ok(AggregateState::License(license))
        }
        (Change::LicenseStatusChanged { .. } | Change::LicenseRenewed { .. }, _) => {
            Err(format!("{} for a license that was never granted", event.envelope.event_type))
        }

        (Change::PartyRegistered(profile), _) => Ok(AggregateState::Party(PartyState {
            name: profile.name.clone(),
            kind: profile.kind,
            ipi: profile.ipi.clone(),
            isni: profile.isni.clone(),
        })),
        (Change::PartyRenamed { name }, Some(AggregateState::Party(party))) => {
            Ok(AggregateState::Party(PartyState { name: name.clone(), ..party.clone() }))
        }
        (Change::PartyIdentifiersChanged { ipi, isni }, Some(AggregateState::Party(party))) => {
            Ok(AggregateState::Party(PartyState { ipi: ipi.clone(), isni: isni.clone(), ..party.clone() }))
        }
        (Change::PartyPersonalDataChanged, Some(party @ AggregateState::Party(_))) => Ok(party.clone()),
        (
            Change::PartyRenamed { .. } | Change::PartyIdentifiersChanged { .. } | Change::PartyPersonalDataChanged,
            _,
        ) => Err(format!("{} for a party that was never registered", event.envelope.event_type)),
    }
}

fn disputes_or_empty(current: Option<&AggregateState>, at: read_model::calendar::Timestamp) -> DisputesState {
    match current {
        Some(AggregateState::Disputes(state)) => state.clone(),
        _ => DisputesState { disputes: Vec::new(), updated_at: at },
    }
}

fn amend(record: &mut WorkRecord, amendment: &WorkAmendment) {
    fn replace<T: Clone>(field: &mut T, new: &Option<T>) {
        if let Some(value) = new {
            *field = value.clone();
        }
    }
    fn replace_optional<T: Clone>(field: &mut Option<T>, new: &Option<T>) {
        if new.is_some() {
            field.clone_from(new);
        }
    }
    replace(&mut record.title, &amendment.title);
    replace(&mut record.alternative_titles, &amendment.alternative_titles);
    replace_optional(&mut record.iswc, &amendment.iswc);
    replace(&mut record.isrcs, &amendment.isrcs);
    replace(&mut record.creators, &amendment.creators);
    replace_optional(&mut record.language, &amendment.language);
    replace(&mut record.work_type, &amendment.work_type);
    replace_optional(&mut record.created_on, &amendment.created_on);
    replace_optional(&mut record.description, &amendment.description);
    replace(&mut record.subjects, &amendment.subjects);
    replace_optional(&mut record.publisher_party_id, &amendment.publisher_party_id);
    replace(&mut record.related_work_ids, &amendment.related_work_ids);
    replace_optional(&mut record.file_format, &amendment.file_format);
}
