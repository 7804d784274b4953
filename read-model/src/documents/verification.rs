//! What verification of a work's rights or certificate needs.
//!
//! The checks themselves run at request time, because "protection in force"
//! depends on the day of the request; this document holds their inputs.

use serde::{Deserialize, Serialize};

use super::rights_profile::ShareTotal;
use super::vocabulary::{DisputeStatus, WorkStatus};
use crate::calendar::{Date, Timestamp};

/// Inputs of `GET /rights/{lccId}/verify`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct VerificationInputs {
    pub lcc_id: String,
    pub status: WorkStatus,
    /// SHA-256 of the registered file, lowercase hex.
    pub file_sha256: String,
    pub certificate: Option<CertificateRecord>,
    /// One entry per right type recorded; empty when no chain was recorded.
    pub shares: Vec<ShareTotal>,
    pub dispute_status: DisputeStatus,
    /// Last day of protection of the authors' rights (else of the related
    /// rights); absent when no chain was recorded.
    pub protection_ends_on: Option<Date>,
    pub updated_at: Timestamp,
}

/// The current registration certificate of a work.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct CertificateRecord {
    pub certificate_id: String,
    pub sha256: String,
    pub issued_at: Timestamp,
    pub revoked: bool,
    pub revocation_reason: Option<String>,
}
