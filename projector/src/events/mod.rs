//! Typed upstream events: what the projector understands of each topic.
//!
//! Decoding ([`decode`]) turns the Avro bytes of an event into an [`Event`];
//! validation ([`validate`]) rejects events that decode but cannot be true.
//! A party's personal-data record has no counterpart here at all: it is
//! dropped during decoding, so no later stage can leak it.

pub mod decode;
pub mod validate;

use read_model::calendar::{Date, Timestamp};
use read_model::documents::{
    CreatorRole, DisputeStatus, HolderRole, LicenseKind, LicenseStatus, PartyKind, RightType, WorkType,
};
use serde::{Deserialize, Serialize};

use crate::contract::Topic;

/// The envelope every event carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Envelope {
    pub event_id: String,
    pub event_type: String,
    pub aggregate_id: String,
    pub aggregate_version: u64,
    pub occurred_at: Timestamp,
    pub recorded_at: Timestamp,
    pub source_system: String,
}

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub topic: Topic,
    pub envelope: Envelope,
    pub change: Change,
}

/// What an event changes, one variant per payload record of the contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum Change {
    WorkRegistered(WorkRecord),
    WorkAmended(WorkAmendment),
    WorkPublished {
        published_at: Timestamp,
    },
    WorkWithdrawn {
        reason: String,
    },
    RightsChainRecorded {
        rights: Vec<RightRecord>,
        open_for_licensing: bool,
    },
    LicensingAvailabilityChanged {
        open_for_licensing: bool,
    },
    LicenseGranted(LicenseGrant),
    LicenseStatusChanged {
        status: LicenseStatus,
        effective_from: Date,
        reason: Option<String>,
    },
    LicenseRenewed {
        valid_until: Option<Date>,
    },
    DisputeOpened {
        dispute_id: String,
        grounds: String,
    },
    DisputeUpdated {
        dispute_id: String,
        status: DisputeStatus,
    },
    DisputeResolved {
        dispute_id: String,
        status: DisputeStatus,
    },
    CertificateIssued {
        certificate_id: String,
        sha256: String,
        issued_at: Timestamp,
    },
    CertificateRevoked {
        certificate_id: String,
        reason: String,
    },
    PartyRegistered(PartyProfile),
    PartyRenamed {
        name: String,
    },
    PartyIdentifiersChanged {
        ipi: Option<String>,
        isni: Option<String>,
    },
    /// Carries only personal data, which is not read: the event counts as
    /// applied (it advances the party's version) and changes no document.
    PartyPersonalDataChanged,
}

/// The public record of a work as registered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkRecord {
    pub title: String,
    pub alternative_titles: Vec<String>,
    /// Normalized (`T` + ten digits) once validated.
    pub iswc: Option<String>,
    /// Normalized (twelve characters) once validated.
    pub isrcs: Vec<String>,
    pub creators: Vec<Creator>,
    pub language: Option<String>,
    pub work_type: WorkType,
    pub created_on: Option<Date>,
    pub description: Option<String>,
    pub subjects: Vec<String>,
    pub publisher_party_id: Option<String>,
    pub related_work_ids: Vec<String>,
    pub file_sha256: String,
    pub file_format: Option<String>,
    pub earliest_recorded_at: Timestamp,
}

/// A creator credit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Creator {
    pub party_id: String,
    pub role: CreatorRole,
}

/// Fields an amendment replaces; `None` leaves a field as it was.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct WorkAmendment {
    pub title: Option<String>,
    pub alternative_titles: Option<Vec<String>>,
    pub iswc: Option<String>,
    pub isrcs: Option<Vec<String>>,
    pub creators: Option<Vec<Creator>>,
    pub language: Option<String>,
    pub work_type: Option<WorkType>,
    pub created_on: Option<Date>,
    pub description: Option<String>,
    pub subjects: Option<Vec<String>>,
    pub publisher_party_id: Option<String>,
    pub related_work_ids: Option<Vec<String>>,
    pub file_format: Option<String>,
}

/// One right of a rights chain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RightRecord {
    pub right_id: String,
    pub right_type: RightType,
    pub holder_party_id: String,
    pub role: HolderRole,
    pub share_basis_points: u32,
    pub acquired_from_party_id: Option<String>,
    pub territory: String,
    pub valid_from: Date,
    pub valid_until: Option<Date>,
    pub protection_ends_on: Date,
}

/// A license as granted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LicenseGrant {
    pub kind: LicenseKind,
    pub licensee_party_id: String,
    pub status: LicenseStatus,
    pub valid_from: Date,
    pub valid_until: Option<Date>,
    pub covered_work_ids: Vec<String>,
    pub repertoire: Option<String>,
    pub territory: String,
}

/// The public profile of a party.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PartyProfile {
    pub name: String,
    pub kind: PartyKind,
    pub ipi: Option<String>,
    pub isni: Option<String>,
}

impl Change {
    /// The name of the payload record this change came from.
    pub fn type_name(&self) -> &'static str {
        match self {
            Change::WorkRegistered(_) => "WorkRegistered",
            Change::WorkAmended(_) => "WorkAmended",
            Change::WorkPublished { .. } => "WorkPublished",
            Change::WorkWithdrawn { .. } => "WorkWithdrawn",
            Change::RightsChainRecorded { .. } => "RightsChainRecorded",
            Change::LicensingAvailabilityChanged { .. } => "LicensingAvailabilityChanged",
            Change::LicenseGranted(_) => "LicenseGranted",
            Change::LicenseStatusChanged { .. } => "LicenseStatusChanged",
            Change::LicenseRenewed { .. } => "LicenseRenewed",
            Change::DisputeOpened { .. } => "DisputeOpened",
            Change::DisputeUpdated { .. } => "DisputeUpdated",
            Change::DisputeResolved { .. } => "DisputeResolved",
            Change::CertificateIssued { .. } => "CertificateIssued",
            Change::CertificateRevoked { .. } => "CertificateRevoked",
            Change::PartyRegistered(_) => "PartyRegistered",
            Change::PartyRenamed { .. } => "PartyRenamed",
            Change::PartyIdentifiersChanged { .. } => "PartyIdentifiersChanged",
            Change::PartyPersonalDataChanged => "PartyPersonalDataChanged",
        }
    }

    /// The names of the public fields this change sets, for provenance.
    pub fn changed_fields(&self) -> Vec<String> {
        let names: &[&str] = match self {
            Change::WorkRegistered(_) => {
                &["title", "iswc", "isrcs", "creators", "workType", "fileSha256", "earliestRecordedAt"]
            }
            Change::WorkAmended(amendment) => return amendment.changed_fields(),
            Change::WorkPublished { .. } => &["status", "publishedAt"],
            Change::WorkWithdrawn { .. } => &["status"],
            Change::RightsChainRecorded { .. } => &["rights", "openForLicensing"],
            Change::LicensingAvailabilityChanged { .. } => &["openForLicensing"],
            Change::DisputeOpened { .. } | Change::DisputeUpdated { .. } | Change::DisputeResolved { .. } => {
                &["disputeStatus"]
            }
            Change::CertificateIssued { .. } | Change::CertificateRevoked { .. } => &["certificate"],
            Change::LicenseGranted(_)
            | Change::LicenseStatusChanged { .. }
            | Change::LicenseRenewed { .. }
            | Change::PartyRegistered(_)
            | Change::PartyRenamed { .. }
            | Change::PartyIdentifiersChanged { .. }
            | Change::PartyPersonalDataChanged => &[],
        };
        names.iter().map(|name| (*name).to_owned()).collect()
    }
}

impl WorkAmendment {
    fn changed_fields(&self) -> Vec<String> {
        let candidates = [
            ("title", self.title.is_some()),
            ("alternativeTitles", self.alternative_titles.is_some()),
            ("iswc", self.iswc.is_some()),
            ("isrcs", self.isrcs.is_some()),
            ("creators", self.creators.is_some()),
            ("language", self.language.is_some()),
            ("workType", self.work_type.is_some()),
            ("createdOn", self.created_on.is_some()),
            ("description", self.description.is_some()),
            ("subjects", self.subjects.is_some()),
            ("publisher", self.publisher_party_id.is_some()),
            ("relatedWorkIds", self.related_work_ids.is_some()),
            ("fileFormat", self.file_format.is_some()),
        ];
        candidates.into_iter().filter(|(_, set)| *set).map(|(name, _)| name.to_owned()).collect()
    }
}
