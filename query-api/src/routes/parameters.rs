//! The path and query parameters of every endpoint, as the handlers extract
//! them and as the OpenAPI document describes them: one definition for both.
//!
//! Query values are read as text and checked by the handlers, so that a bad
//! value gets a precise problem body. What cannot be read at all (a name given
//! twice, a path that is not UTF-8) is refused by the extractors here, also
//! as a problem body, never as the framework's plain-text rejection.

use axum::extract::{FromRequestParts, Path, Query};
use axum::http::request::Parts;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use utoipa::IntoParams;

use crate::errors::ApiError;

/// Path parameters, refused with a problem body when they cannot be read.
#[derive(Debug)]
pub struct PathParameters<T>(pub T);

impl<T: DeserializeOwned + Send, S: Send + Sync> FromRequestParts<S> for PathParameters<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Path::<T>::from_request_parts(parts, state).await {
            Ok(Path(value)) => Ok(PathParameters(value)),
            Err(rejection) => Err(ApiError::InvalidParameter(rejection.body_text())),
        }
    }
}

/// Query parameters, refused with a problem body when they cannot be read.
#[derive(Debug)]
pub struct QueryParameters<T>(pub T);

impl<T: DeserializeOwned, S: Send + Sync> FromRequestParts<S> for QueryParameters<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        match Query::<T>::from_request_parts(parts, state).await {
            Ok(Query(value)) => Ok(QueryParameters(value)),
            Err(rejection) => Err(ApiError::InvalidParameter(rejection.body_text())),
        }
    }
}

/// The path of every `/rights/{lccId}…` endpoint.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct WorkPath {
    /// The registry's work identifier; sandbox works start with `SANDBOX-`.
    #[serde(rename = "lccId")]
    #[param(rename = "lccId")]
    pub lcc_id: String,
}

/// The query of the lookup by international identifier: exactly one of the two.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct IdentifierQuery {
    /// International Standard Musical Work Code, printed (`T-034.524.680-1`)
    /// or compact (`T0345246801`); the check digit is verified.
    #[param(pattern = r"^[Tt](-[0-9]{3}\.[0-9]{3}\.[0-9]{3}-[0-9]|[0-9]{10})$")]
    pub iswc: Option<String>,
    /// International Standard Recording Code, twelve characters (`GBAYE6900500`),
    /// compact or hyphenated (`GB-AYE-69-00500`).
    #[param(pattern = r"^[A-Za-z]{2}(-[A-Za-z0-9]{3}-[0-9]{2}-[0-9]{5}|[A-Za-z0-9]{3}[0-9]{7})$")]
    pub isrc: Option<String>,
}

/// The path of `/licenses/{id}/status`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct LicensePath {
    /// The license identifier; sandbox licenses start with `SANDBOX-`.
    pub id: String,
}

/// The optional file hash a client holds.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct VerifyQuery {
    /// SHA-256 of a file the client holds, 64 hexadecimal characters; adds the
    /// check `file_hash_matches`.
    #[param(pattern = r"^[0-9A-Fa-f]{64}$")]
    pub sha256: Option<String>,
}

/// The paging query. Both are read as text and checked here, so that a bad
/// value gets a precise problem body.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BulkQuery {
    /// The page, from 1.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 2_147_483_647, default = 1)]
    pub page: Option<String>,
    /// The page size, from 1 to the configured maximum; 100 by default.
    #[param(value_type = Option<u32>, minimum = 1, default = 100)]
    pub limit: Option<String>,
}

/// The feed's query; both read as text and checked here.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ChangesQuery {
    /// Continue after this cursor: a page's `next`, or a snapshot manifest's
    /// `changesCursor`. Absent: from the oldest retained change.
    #[param(pattern = r"^c1\.[A-Za-z0-9_-]+$")]
    pub since: Option<String>,
    /// Items per page, from 1 to 1,000; 100 by default.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000, default = 100)]
    pub limit: Option<String>,
}

/// The query of `GET /notifications`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NotificationsQuery {
    /// Continue after this cursor: a page's `next`, or a 410's `resumeFrom`.
    /// Absent: from the oldest retained notification.
    #[param(pattern = r"^n1\.[A-Za-z0-9_-]+$")]
    pub since: Option<String>,
    /// Items per page, from 1 to 1,000; 100 by default.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 1000, default = 100)]
    pub limit: Option<String>,
}

/// The query of `GET /notifications/stream`.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct NotificationsStreamQuery {
    /// Continue after this cursor (a page's `next`, an event's `id`), when
    /// no `Last-Event-ID` is sent. Absent: from the oldest retained notification.
    #[param(pattern = r"^n1\.[A-Za-z0-9_-]+$")]
    pub since: Option<String>,
}

/// The path of one snapshot.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct SnapshotPath {
    /// A `snapshotId` from the list.
    #[serde(rename = "snapshotId")]
    #[param(rename = "snapshotId")]
    pub snapshot_id: String,
}

/// The path of one file of a snapshot.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Path)]
pub struct SnapshotFilePath {
    /// A `snapshotId` from the list.
    #[serde(rename = "snapshotId")]
    #[param(rename = "snapshotId")]
    pub snapshot_id: String,
    /// A file `name` from the manifest.
    pub name: String,
}

/// Whose key set.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct KeySetQuery {
    /// `production` (the default): the keys of production evidence and
    /// manifests; `sandbox`: the sandbox's, which never verify production ones.
    #[param(pattern = "^(production|sandbox)$", default = "production")]
    pub audience: Option<String>,
}
