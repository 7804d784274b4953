//! `manifest.json`: what a snapshot holds and where the change feed
//! continues from it. Clients check every file against it.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

/// A snapshot's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    pub snapshot_id: String,
    /// When the snapshot was cut (RFC 3339, UTC).
    pub created_at: String,
    /// The model version the rows were read from; the cursor names it too.
    pub model_version: u32,
    /// `production` or `sandbox`.
    pub audience: String,
    /// Continue the change feed from here (`/bulk/changes?since=`): every
    /// change before it is in the files; a later one may be too, which
    /// applying the feed makes harmless.
    pub changes_cursor: String,
    /// Published works in the snapshot.
    pub row_count: u64,
    pub files: Vec<ManifestFile>,
    /// A detached JWS (EdDSA, Ed25519) over the RFC 8785 canonical JSON of
    /// this manifest without `signature`, by a key of the audience's key set
    /// at `/keys`: the manifest, and through its hashes every file, is
    /// provably this registry's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<String>,
}

/// One file of a snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ManifestFile {
    pub name: String,
    /// `ndjson.gz` (one bulk row per line, exactly as `/bulk/works` serves it,
    /// gzip-compressed) or `parquet` (typed columns, Snappy-compressed).
    pub format: String,
    pub bytes: u64,
    pub rows: u64,
    /// SHA-256 of the file's bytes, lowercase hexadecimal.
    pub sha256: String,
}

/// The format names of [`ManifestFile::format`].
pub const NDJSON_GZ: &str = "ndjson.gz";
pub const PARQUET: &str = "parquet";
