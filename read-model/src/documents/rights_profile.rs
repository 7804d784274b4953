//! The rights profile: who holds a work, in which shares, and whether it is
//! open for licensing.

use serde::{Deserialize, Serialize};

use super::vocabulary::{HolderRole, PartyReference, RightType, WorkStatus};
use crate::calendar::{Date, Timestamp};

/// Served by `GET /rights/{lccId}` and by the ISWC / ISRC lookups.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RightsProfile {
    pub lcc_id: String,
    pub title: String,
    /// Printed form, `T-034.524.680-1`.
    pub iswc: Option<String>,
    /// Compact form, twelve characters each.
    pub isrcs: Vec<String>,
    pub status: WorkStatus,
    pub open_for_licensing: bool,
    /// Every right held in the work, authors' rights first, then by right id.
    pub holders: Vec<RightHolding>,
    /// The split ratio: the total share recorded per right type.
    pub shares: Vec<ShareTotal>,
    /// Recorded-at time of the newest change reflected here.
    pub updated_at: Timestamp,
}

/// One link of the rights chain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct RightHolding {
    pub right_id: String,
    pub right_type: RightType,
    pub holder: PartyReference,
    pub role: HolderRole,
    /// Share of this right type, in basis points (10000 = 100%).
    pub share_basis_points: u32,
    /// The same share in percent, two decimals.
    pub share_percent: f64,
    pub acquired_from: Option<PartyReference>,
    pub territory: String,
    pub valid_from: Date,
    pub valid_until: Option<Date>,
    pub protection_ends_on: Date,
}

/// The total share recorded for one right type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct ShareTotal {
    pub right_type: RightType,
    pub basis_points: u32,
    pub holders: u32,
    /// Whether the shares add up to exactly 100%.
    pub complete: bool,
}

/// Converts basis points to percent with two decimals, exactly.
pub fn percent_of(basis_points: u32) -> f64 {
    f64::from(basis_points) / 100.0
}
