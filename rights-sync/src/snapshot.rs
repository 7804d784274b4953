//! The newest snapshot of the key's audience, verified before a row of it is
//! used: the manifest's signature against the registry's key set (fetched,
//! or a pinned file), then every NDJSON file's size and SHA-256 against the
//! manifest. Files are downloaded into a directory beside the copy, and a
//! download an earlier run left unfinished continues where it stopped.
//!
//! It must not touch the copy: a snapshot that does not verify leaves the
//! copy as it was.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use query_api::signing::{KeySet, verify_document};
use query_api::snapshots::Manifest;
use query_api::snapshots::hashing_writer::HashingWriter;
use query_api::snapshots::manifest::NDJSON_GZ;
use serde::Deserialize;

use crate::progress::Progress;
use crate::registry::{Download, Registry, RegistryError};

/// Where the manifest's signature is checked against.
#[derive(Debug, Clone)]
pub enum KeySource {
    /// The registry's key set of the manifest's audience (`/keys`).
    Registry,
    /// A key set file the operator pinned (`--keys`).
    Pinned(PathBuf),
}

/// A snapshot whose manifest and files verified.
#[derive(Debug)]
pub struct VerifiedSnapshot {
    pub manifest: Manifest,
    /// The key that signed the manifest.
    pub signed_by: String,
    /// The NDJSON files, in the manifest's order.
    pub files: Vec<PathBuf>,
}

/// Why a snapshot is not used.
#[derive(Debug, thiserror::Error)]
pub enum Rejected {
    #[error("the registry lists no snapshot of this key's audience to start from")]
    NoSnapshot,
    #[error("the manifest of snapshot {snapshot} does not verify: {reason}")]
    Manifest { snapshot: String, reason: String },
    #[error("file {name} of snapshot {snapshot} does not match its signed manifest: {reason}")]
    File { snapshot: String, name: String, reason: String },
    #[error("the pinned key set {path} cannot be used: {reason}")]
    PinnedKeys { path: PathBuf, reason: String },
}

#[derive(Debug, Deserialize)]
struct SnapshotList {
    snapshots: Vec<SnapshotSummary>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct SnapshotSummary {
    snapshot_id: String,
    created_at: String,
}

/// Finds, verifies and downloads the newest snapshot into `downloads`.
pub fn newest(
    registry: &Registry,
    keys: &KeySource,
    downloads: &Path,
    progress: &Progress,
) -> anyhow::Result<VerifiedSnapshot> {
    let list: SnapshotList = registry.json("/bulk/snapshots")?;
    let newest =
        list.snapshots.into_iter().max_by(|a, b| a.created_at.cmp(&b.created_at)).ok_or(Rejected::NoSnapshot)?;
    let snapshot = newest.snapshot_id;
    let manifest_bytes = registry.bytes(&format!("/bulk/snapshots/{snapshot}"))?;
    let audience = serde_json::from_slice::<serde_json::Value>(&manifest_bytes)
        .ok()
        .and_then(|manifest| manifest["audience"].as_str().map(str::to_owned))
        .unwrap_or_default();
    let key_set = key_set(registry, keys, &audience)?;
    let verified = verify_document(&manifest_bytes, &key_set)
        .map_err(|rejection| Rejected::Manifest { snapshot: snapshot.clone(), reason: rejection.to_string() })?;
    let manifest: Manifest = serde_json::from_slice(&manifest_bytes)
        .map_err(|error| Rejected::Manifest { snapshot: snapshot.clone(), reason: error.to_string() })?;
    if manifest.snapshot_id != snapshot {
        let reason = format!("it names snapshot {}", manifest.snapshot_id);
        return Err(Rejected::Manifest { snapshot, reason }.into());
    }
    tracing::info!(%snapshot, rows = manifest.row_count, key = %verified.kid, "the snapshot's manifest is signed by the registry");
    let directory = downloads.join(&snapshot);
    std::fs::create_dir_all(&directory)?;
    let mut files = Vec::new();
    let entries: Vec<_> = manifest.files.iter().filter(|file| file.format == NDJSON_GZ).collect();
    for (index, entry) in entries.iter().enumerate() {
        progress.downloading(&snapshot, index + 1, entries.len(), &entry.name);
        let target = directory.join(&entry.name);
        let path = format!("/bulk/snapshots/{snapshot}/files/{}", entry.name);
        download(registry, &path, &target, entry.bytes, &entry.sha256)?;
        if let Err(reason) = check_file(&target, entry.bytes, &entry.sha256) {
            // The next run downloads it again rather than resuming wrong bytes.
            let _ = std::fs::remove_file(&target);
            return Err(Rejected::File { snapshot: snapshot.clone(), name: entry.name.clone(), reason }.into());
        }
        files.push(target);
    }
    Ok(VerifiedSnapshot { manifest, signed_by: verified.kid, files })
}

/// The key set the manifest is checked against.
fn key_set(registry: &Registry, keys: &KeySource, audience: &str) -> anyhow::Result<KeySet> {
    Ok(match keys {
        KeySource::Registry => registry.json(&format!("/keys?audience={audience}"))?,
        KeySource::Pinned(path) => {
            let text = std::fs::read(path)
                .map_err(|error| Rejected::PinnedKeys { path: path.clone(), reason: error.to_string() })?;
            serde_json::from_slice(&text).map_err(|error| Rejected::PinnedKeys {
                path: path.clone(),
                reason: format!("not a JWK Set: {error}"),
            })?
        }
    })
}

/// Downloads `path` into `target`, continuing a partial file left by an
/// earlier run when the registry still serves the same file.
fn download(registry: &Registry, path: &str, target: &Path, bytes: u64, sha256: &str) -> Result<(), anyhow::Error> {
    let have = std::fs::metadata(target).map(|metadata| metadata.len()).unwrap_or(0);
    if have == bytes {
        return Ok(());
    }
    let offset = if have < bytes { have } else { 0 };
    let answer = registry.download(path, offset, &format!("\"{sha256}\""))?;
    let (mut file, body) = match answer {
        Download::Rest(body) => {
            tracing::info!(file = %target.display(), offset, "resuming an interrupted download");
            (OpenOptions::new().append(true).open(target)?, body)
        }
        Download::Whole(body) => (File::create(target)?, body),
    };
    let mut reader = body.into_reader();
    std::io::copy(&mut reader, &mut file).map_err(|error| RegistryError::Unavailable {
        path: path.to_owned(),
        reason: format!("the download broke off: {error}"),
    })?;
    file.flush()?;
    file.sync_all()?;
    Ok(())
}

/// Whether a downloaded file has the size and SHA-256 the manifest states.
fn check_file(target: &Path, bytes: u64, sha256: &str) -> Result<(), String> {
    let mut file = File::open(target).map_err(|error| error.to_string())?;
    let mut hashing = HashingWriter::new(std::io::sink());
    std::io::copy(&mut file, &mut hashing).map_err(|error| error.to_string())?;
    let (_, read, actual) = hashing.finish();
    if read != bytes {
        return Err(format!("{read} bytes, the manifest states {bytes}"));
    }
    if actual != sha256 {
        return Err(format!("SHA-256 {actual}, the manifest states {sha256}"));
    }
    Ok(())
}
