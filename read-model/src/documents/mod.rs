//! The documents the public API serves, one module per resource.
//!
//! Each document is denormalized for its endpoint, so that serving it is one
//! key read. The projector renders them to JSON once, at projection time; the
//! query API sends the stored bytes as they are, and decodes a document only
//! where the answer depends on the request (the time of the request for
//! verification and evidence, the media type for Dublin Core XML).
//!
//! Nothing here holds personal data: a party appears by id, public name, kind
//! and public identifiers only ([`PartyReference`]).

mod bulk_row;
mod dublin_core;
mod evidence;
mod license_status;
mod provenance;
mod rights_profile;
mod sandbox_fixture;
mod verification;
mod vocabulary;

pub use bulk_row::{BulkCreator, BulkRow};
pub use dublin_core::DublinCoreRecord;
pub use evidence::EvidenceInputs;
pub use license_status::LicenseStatusDocument;
pub use provenance::ProvenanceEntry;
pub use rights_profile::{RightHolding, RightsProfile, ShareTotal, percent_of};
pub use sandbox_fixture::{FixtureResource, SandboxFixture};
pub use verification::{CertificateRecord, VerificationInputs};
pub use vocabulary::{
    CreatorRole, DisputeStatus, DisputeSummary, HolderRole, LicenseKind, LicenseStatus, PartyKind, PartyReference,
    RightType, WorkStatus, WorkType,
};

/// The kinds of single-key documents. On ScyllaDB each kind has a table of
/// its own; on SQLite a work's four kinds share one row (`work_documents`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum DocumentKind {
    /// [`RightsProfile`], keyed by lccId.
    RightsProfile,
    /// [`VerificationInputs`], keyed by lccId.
    Verification,
    /// [`DublinCoreRecord`], keyed by lccId.
    Metadata,
    /// [`EvidenceInputs`], keyed by lccId.
    Evidence,
    /// [`LicenseStatusDocument`], keyed by license id.
    LicenseStatus,
}

impl DocumentKind {
    /// Every kind, in a fixed order.
    pub const ALL: [DocumentKind; 5] = [
        DocumentKind::RightsProfile,
        DocumentKind::Verification,
        DocumentKind::Metadata,
        DocumentKind::Evidence,
        DocumentKind::LicenseStatus,
    ];

    /// The kind's name: the stem of its ScyllaDB table, SQLite's table of
    /// license statuses, and the label of its store-read metrics.
    pub fn table(self) -> &'static str {
        match self {
            DocumentKind::RightsProfile => "rights_profiles",
            DocumentKind::Verification => "verification_inputs",
            DocumentKind::Metadata => "dublin_core_records",
            DocumentKind::Evidence => "evidence_inputs",
            DocumentKind::LicenseStatus => "license_statuses",
        }
    }
}
