//! The catalogue snapshots: the list (newest first), a manifest, and the
//! files, served with a strong entity tag (the file's SHA-256) and byte
//! ranges so that a download of many gigabytes resumes where it stopped.
//!
//! Files are streamed from disk in chunks; only a name a manifest lists can
//! be served, and only from the caller's audience.

use std::io::SeekFrom;
use std::path::PathBuf;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde::Serialize;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use utoipa::ToSchema;

use super::json_of;
use super::parameters::{PathParameters, SnapshotFilePath, SnapshotPath};
use crate::access::Credentials;
use crate::app::{App, BASE_PATH};
use crate::conditional::{names_tag, unmodified_since};
use crate::errors::ApiError;
use crate::keys::Scope;
use crate::snapshots::manifest::{Manifest, ManifestFile, NDJSON_GZ};

/// Bytes read from disk per chunk of a download.
const CHUNK_BYTES: usize = 256 * 1024;

/// The snapshots of the caller's audience.
#[derive(Debug, Serialize, ToSchema)]
pub struct SnapshotList {
    /// Newest first.
    pub snapshots: Vec<SnapshotSummary>,
}

/// A snapshot as the list names it.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct SnapshotSummary {
    pub snapshot_id: String,
    pub created_at: String,
    pub row_count: u64,
    /// The manifest's absolute URL.
    pub manifest: String,
}

/// `GET /bulk/snapshots`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/bulk/snapshots",
    operation_id = "listSnapshots",
    tag = "Bulk",
    summary = "Snapshots of the whole catalogue",
    description = "Every published work's bulk row in files, cut at a known position of the change feed, newest first. Download a snapshot's files, check each against its manifest, then follow `/bulk/changes` from the manifest's `changesCursor`. A sandbox key lists the sandbox snapshots only; a production key never sees them.",
    responses((status = 200, description = "The snapshots, newest first.", body = SnapshotList)),
    security(("apiKey" = ["bulk:read"])),
)]
pub async fn list(State(app): State<Arc<App>>, credentials: Credentials) -> Response {
    app.answer_authorized(&credentials, Scope::BulkRead, None, async |granted| {
        let snapshots = app
            .snapshots
            .list(granted.audience())
            .into_iter()
            .map(|manifest| SnapshotSummary {
                manifest: app.public_url(&format!("/bulk/snapshots/{}", manifest.snapshot_id)),
                snapshot_id: manifest.snapshot_id,
                created_at: manifest.created_at,
                row_count: manifest.row_count,
            })
            .collect();
        json_of(StatusCode::OK, &SnapshotList { snapshots })
    })
    .await
}

/// `GET /bulk/snapshots/{snapshotId}`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/bulk/snapshots/{snapshotId}",
    operation_id = "getSnapshotManifest",
    tag = "Bulk",
    summary = "A snapshot's manifest",
    description = "What the snapshot holds: its model version, audience, row count, the change-feed cursor to continue from, and every file with its format, size, rows and SHA-256.",
    params(SnapshotPath),
    responses(
        (status = 200, description = "The manifest.", body = Manifest),
        (status = 404, description = "No snapshot of that id in the caller's audience.", body = crate::errors::Problem, content_type = "application/problem+json"),
    ),
    security(("apiKey" = ["bulk:read"])),
)]
pub async fn manifest(
    State(app): State<Arc<App>>,
    PathParameters(path): PathParameters<SnapshotPath>,
    credentials: Credentials,
) -> Response {
    app.answer_authorized(&credentials, Scope::BulkRead, None, async |granted| {
        let manifest = app
            .snapshots
            .manifest(granted.audience(), &path.snapshot_id)
            .ok_or_else(|| ApiError::NotFound(format!("no snapshot {}", path.snapshot_id)))?;
        let mut response = json_of(StatusCode::OK, &manifest)?;
        if let Some(date) = last_modified(&manifest) {
            response.headers_mut().insert(header::LAST_MODIFIED, date);
        }
        Ok(response)
    })
    .await
}

/// `GET /bulk/snapshots/{snapshotId}/files/{name}`.
#[utoipa::path(
    get,
    context_path = BASE_PATH,
    path = "/bulk/snapshots/{snapshotId}/files/{name}",
    operation_id = "downloadSnapshotFile",
    tag = "Bulk",
    summary = "Download a snapshot file",
    description = "The file's bytes, with `Content-Length`, a strong `ETag` (its SHA-256) and `Accept-Ranges: bytes`. Send `Range: bytes=N-` (with `If-Range` naming the ETag) to resume an interrupted download; the answer is 206 with `Content-Range`. A range that starts past the end gets 416.",
    params(
        SnapshotFilePath,
        ("Range" = Option<String>, Header, description = "One byte range, `bytes=start-end`, `bytes=start-` or `bytes=-suffix`."),
        ("If-Range" = Option<String>, Header, description = "The ETag the partial download began with; if the file differs, the whole file is sent."),
    ),
    responses(
        (status = 200, description = "The whole file: `application/gzip` (NDJSON) or `application/vnd.apache.parquet`.",
         content((String = "application/gzip"), (String = "application/vnd.apache.parquet")),
         headers(("ETag" = String, description = "The file's SHA-256, quoted."), ("Accept-Ranges" = String, description = "`bytes`."))),
        (status = 206, description = "The requested range.",
         content((String = "application/gzip"), (String = "application/vnd.apache.parquet")),
         headers(("Content-Range" = String, description = "`bytes start-end/length`."))),
        (status = 404, description = "No such snapshot or file in the caller's audience.", body = crate::errors::Problem, content_type = "application/problem+json"),
        (status = 416, description = "The range starts past the end of the file.", body = crate::errors::Problem, content_type = "application/problem+json",
         headers(("Content-Range" = String, description = "`bytes */length`."))),
    ),
    security(("apiKey" = ["bulk:read"])),
)]
pub async fn file(
    State(app): State<Arc<App>>,
    PathParameters(path): PathParameters<SnapshotFilePath>,
    credentials: Credentials,
    headers: HeaderMap,
) -> Response {
    app.answer_authorized(&credentials, Scope::BulkRead, None, async |granted| {
        let (location, file, manifest) = app
            .snapshots
            .file(granted.audience(), &path.snapshot_id, &path.name)
            .ok_or_else(|| ApiError::NotFound(format!("no file {} in snapshot {}", path.name, path.snapshot_id)))?;
        let etag = format!("\"{}\"", file.sha256);
        let modified = last_modified(&manifest);
        let held = match (headers.get(header::IF_NONE_MATCH), headers.get(header::IF_MODIFIED_SINCE)) {
            (Some(condition), _) => names_tag(condition, &etag),
            (None, Some(since)) => unmodified_since(modified.as_ref(), since),
            (None, None) => false,
        };
        if held {
            return not_modified(&etag);
        }
        let if_range_matches = headers.get(header::IF_RANGE).is_none_or(|value| value.as_bytes() == etag.as_bytes());
        let range = match headers.get(header::RANGE).and_then(|value| value.to_str().ok()) {
            Some(text) if if_range_matches => requested_range(text, file.bytes)?,
            _ => None,
        };
        let mut response = serve_file(location, &file, &etag, range).await?;
        if let Some(date) = modified {
            response.headers_mut().insert(header::LAST_MODIFIED, date);
        }
        Ok(response)
    })
    .await
}

/// `Last-Modified` of a snapshot and its files: the moment it was cut
/// (nothing in it changes after).
fn last_modified(manifest: &Manifest) -> Option<HeaderValue> {
    let created = read_model::calendar::Timestamp::parse(&manifest.created_at)?;
    HeaderValue::from_str(&crate::http_date::format(created)).ok()
}

/// `304` for a file the client holds.
fn not_modified(etag: &str) -> Result<Response, ApiError> {
    let mut response = StatusCode::NOT_MODIFIED.into_response();
    response.headers_mut().insert(header::ETAG, HeaderValue::from_str(etag).map_err(|_| ApiError::Internal)?);
    Ok(response)
}

/// The one byte range `text` asks for, as (first, last) inclusive; `None`
/// when the header is not one range of bytes (it is then ignored and the
/// whole file sent, as RFC 9110 allows).
fn requested_range(text: &str, length: u64) -> Result<Option<(u64, u64)>, ApiError> {
    let Some(spec) = text.trim().strip_prefix("bytes=") else { return Ok(None) };
    if spec.contains(',') {
        return Ok(None);
    }
    let Some((first, last)) = spec.split_once('-') else { return Ok(None) };
    let (first, last) = (first.trim(), last.trim());
    let range = match (first.parse::<u64>(), last.parse::<u64>()) {
        (Ok(first), Ok(last)) if first <= last => (first, last.min(length.saturating_sub(1))),
        (Ok(first), Err(_)) if last.is_empty() => (first, length.saturating_sub(1)),
        (Err(_), Ok(suffix)) if first.is_empty() && suffix > 0 => {
            (length.saturating_sub(suffix), length.saturating_sub(1))
        }
        _ => return Ok(None),
    };
    if range.0 >= length {
        return Err(ApiError::RangeNotSatisfiable(length));
    }
    Ok(Some(range))
}

async fn serve_file(
    location: PathBuf,
    file: &ManifestFile,
    etag: &str,
    range: Option<(u64, u64)>,
) -> Result<Response, ApiError> {
    let mut opened = tokio::fs::File::open(&location).await.map_err(|error| {
        tracing::error!(%error, path = %location.display(), "a listed snapshot file cannot be opened");
        ApiError::Internal
    })?;
    let (first, last) = range.unwrap_or((0, file.bytes.saturating_sub(1)));
    let length = if file.bytes == 0 { 0 } else { last - first + 1 };
    if first > 0 {
        opened.seek(SeekFrom::Start(first)).await.map_err(|_| ApiError::Internal)?;
    }
    let chunks = stream::unfold((opened, length), |(mut opened, remaining)| async move {
        if remaining == 0 {
            return None;
        }
        let mut buffer = vec![0; CHUNK_BYTES.min(usize::try_from(remaining).unwrap_or(CHUNK_BYTES))];
        match opened.read(&mut buffer).await {
            Ok(0) => Some((Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)), (opened, 0))),
            Ok(read) => {
                buffer.truncate(read);
                Some((Ok(Bytes::from(buffer)), (opened, remaining - read as u64)))
            }
            Err(error) => Some((Err(error), (opened, 0))),
        }
    });
    let status = if range.is_some() { StatusCode::PARTIAL_CONTENT } else { StatusCode::OK };
    let mut response = (status, Body::from_stream(chunks)).into_response();
    let headers = response.headers_mut();
    let content_type = if file.format == NDJSON_GZ { "application/gzip" } else { "application/vnd.apache.parquet" };
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
    headers.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    let text = |value: String| HeaderValue::from_str(&value).map_err(|_| ApiError::Internal);
    headers.insert(header::ETAG, text(etag.to_owned())?);
    headers.insert(header::CONTENT_DISPOSITION, text(format!("attachment; filename=\"{}\"", file.name))?);
    if range.is_some() {
        headers.insert(header::CONTENT_RANGE, text(format!("bytes {first}-{last}/{}", file.bytes))?);
    }
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_range_of_bytes_is_read_and_anything_else_ignored_or_refused() {
        assert_eq!(requested_range("bytes=0-99", 1_000).ok(), Some(Some((0, 99))));
        assert_eq!(requested_range("bytes=900-", 1_000).ok(), Some(Some((900, 999))));
        assert_eq!(requested_range("bytes=990-5000", 1_000).ok(), Some(Some((990, 999))));
        assert_eq!(requested_range("bytes=-10", 1_000).ok(), Some(Some((990, 999))));
        assert_eq!(requested_range("bytes=-5000", 1_000).ok(), Some(Some((0, 999))));
        for ignored in ["items=0-1", "bytes=0-1,5-6", "bytes=9-3", "bytes=x-", "bytes=-0", "bytes=-"] {
            assert_eq!(requested_range(ignored, 1_000).ok(), Some(None), "{ignored:?}");
        }
        assert!(matches!(requested_range("bytes=1000-", 1_000), Err(ApiError::RangeNotSatisfiable(1_000))));
        assert!(matches!(requested_range("bytes=0-", 0), Err(ApiError::RangeNotSatisfiable(0))));
    }
}
