//! The evidence package, less what depends on the request: the remaining term
//! of protection is computed from `protectionEndsOn` at request time, and the
//! public lookup link from the service's configured public base URL.

use serde::{Deserialize, Serialize};

use super::rights_profile::RightHolding;
use super::verification::CertificateRecord;
use super::vocabulary::{DisputeStatus, DisputeSummary, WorkStatus};
use crate::calendar::{Date, Timestamp};

/// Inputs of `GET /rights/{lccId}/evidence`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct EvidenceInputs {
    pub lcc_id: String,
    pub title: String,
    pub status: WorkStatus,
    pub earliest_recorded_at: Timestamp,
    pub file_sha256: String,
    pub authors_rights: Vec<RightHolding>,
    pub related_rights: Vec<RightHolding>,
    pub protection_ends_on: Option<Date>,
    pub dispute_status: DisputeStatus,
    pub disputes: Vec<DisputeSummary>,
    pub certificate: Option<CertificateRecord>,
    pub updated_at: Timestamp,
}
