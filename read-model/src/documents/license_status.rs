//! The status of a license of kind Blanket or Individual.

use serde::{Deserialize, Serialize};

use super::vocabulary::{LicenseKind, LicenseStatus, PartyReference};
use crate::calendar::{Date, Timestamp};

/// Served by `GET /licenses/{id}/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct LicenseStatusDocument {
    pub license_id: String,
    pub kind: LicenseKind,
    pub status: LicenseStatus,
    pub status_effective_from: Date,
    pub status_reason: Option<String>,
    pub valid_from: Date,
    pub valid_until: Option<Date>,
    pub licensee: PartyReference,
    /// Works an Individual license covers; empty for Blanket.
    pub covered_work_ids: Vec<String>,
    /// Repertoire a Blanket license covers.
    pub repertoire: Option<String>,
    pub territory: String,
    pub updated_at: Timestamp,
}
