//! One row of the bulk export of published works: open data, no personal data.

use serde::{Deserialize, Serialize};

use super::vocabulary::{CreatorRole, WorkType};
use crate::calendar::{Date, Timestamp};

/// A published work as the bulk export lists it.
///
/// Creators appear by the public name they are credited under and their role:
/// credits are public catalogue data. Nothing from a party's personal-data
/// record exists on the read side at all.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BulkRow {
    pub lcc_id: String,
    pub title: String,
    pub iswc: Option<String>,
    pub isrcs: Vec<String>,
    pub work_type: WorkType,
    pub language: Option<String>,
    pub created_on: Option<Date>,
    pub published_at: Timestamp,
    pub creators: Vec<BulkCreator>,
    pub open_for_licensing: bool,
}

/// A creator credit in the bulk export.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct BulkCreator {
    pub name: Option<String>,
    pub role: CreatorRole,
}
