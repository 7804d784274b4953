//! The sandbox fixture catalogue: each sandbox record with the scenarios it
//! demonstrates.
//!
//! The scenarios are derived by the projector from the projected record
//! itself, so the catalogue cannot drift from the data it describes.

use serde::{Deserialize, Serialize};

/// Which endpoint family a fixture id belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FixtureResource {
    /// An lccId for the `/rights/{lccId}…` endpoints.
    Work,
    /// A license id for `/licenses/{id}/status`.
    License,
}

/// One entry of `GET /sandbox/fixtures`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "camelCase")]
pub struct SandboxFixture {
    pub id: String,
    pub resource: FixtureResource,
    /// Short names of the scenarios, for example `split_rights`.
    pub scenarios: Vec<String>,
    /// International identifiers to try on `GET /rights?iswc=` or `?isrc=`.
    pub iswc: Option<String>,
    pub isrcs: Vec<String>,
}
