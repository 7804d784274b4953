//! The snapshot directory: one folder per audience, one per snapshot in it
//! (named by its id, with `manifest.json` and the files the manifest lists).
//! Every API replica reads it; whoever cuts publishes into it by renaming a
//! finished folder into place.
//!
//! It serves only what a manifest lists, so a request can never name a path
//! of its own; it must not cut snapshots.

use std::path::{Path, PathBuf};

use read_model::Audience;

use super::errors::SnapshotError;
use super::manifest::{Manifest, ManifestFile};

/// The name of a snapshot's manifest file.
pub const MANIFEST: &str = "manifest.json";

#[derive(Debug, Clone)]
pub struct SnapshotLibrary {
    root: PathBuf,
}

impl SnapshotLibrary {
    pub fn new(root: impl Into<PathBuf>) -> SnapshotLibrary {
        SnapshotLibrary { root: root.into() }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn audience_directory(&self, audience: Audience) -> PathBuf {
        self.root.join(audience.code())
    }

    /// Where a snapshot is written before it is published; hidden from listings.
    pub(super) fn partial_directory(&self, audience: Audience, snapshot_id: &str) -> PathBuf {
        self.audience_directory(audience).join(format!(".partial-{snapshot_id}"))
    }

    /// Writes the manifest into a finished folder and renames it into place.
    pub(super) fn publish(&self, audience: Audience, partial: &Path, manifest: &Manifest) -> Result<(), SnapshotError> {
        let io_error = |path: &Path| {
            let path = path.to_owned();
            move |source| SnapshotError::Io { path, source }
        };
        let manifest_path = partial.join(MANIFEST);
        let text = serde_json::to_vec_pretty(manifest).map_err(|error| SnapshotError::Task(error.to_string()))?;
        std::fs::write(&manifest_path, text).map_err(io_error(&manifest_path))?;
        let published = self.audience_directory(audience).join(&manifest.snapshot_id);
        std::fs::rename(partial, &published).map_err(io_error(&published))
    }

    /// The audience's snapshots, newest first. A folder without a readable
    /// manifest is not a snapshot.
    pub fn list(&self, audience: Audience) -> Vec<Manifest> {
        let Ok(entries) = std::fs::read_dir(self.audience_directory(audience)) else { return Vec::new() };
        let mut names: Vec<String> = entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| is_snapshot_id(name))
            .collect();
        names.sort_unstable_by(|a, b| b.cmp(a));
        names.iter().filter_map(|name| self.manifest(audience, name)).collect()
    }

    /// The newest snapshot of the audience.
    pub fn latest(&self, audience: Audience) -> Option<Manifest> {
        self.list(audience).into_iter().next()
    }

    /// One snapshot's manifest.
    pub fn manifest(&self, audience: Audience, snapshot_id: &str) -> Option<Manifest> {
        if !is_snapshot_id(snapshot_id) {
            return None;
        }
        let text = std::fs::read(self.audience_directory(audience).join(snapshot_id).join(MANIFEST)).ok()?;
        serde_json::from_slice(&text).ok()
    }

    /// A file the snapshot's manifest lists, with where it lies, and the
    /// manifest (read once for both).
    pub fn file(&self, audience: Audience, snapshot_id: &str, name: &str) -> Option<(PathBuf, ManifestFile, Manifest)> {
        let manifest = self.manifest(audience, snapshot_id)?;
        let file = manifest.files.iter().find(|file| file.name == name)?.clone();
        Some((self.audience_directory(audience).join(snapshot_id).join(&file.name), file, manifest))
    }

    /// Removes all but the newest `keep` snapshots of the audience, and
    /// folders left half written by a cut that did not finish.
    pub fn prune(&self, audience: Audience, keep: usize) {
        let directory = self.audience_directory(audience);
        for manifest in self.list(audience).into_iter().skip(keep.max(1)) {
            if let Err(error) = std::fs::remove_dir_all(directory.join(&manifest.snapshot_id)) {
                tracing::warn!(%error, snapshot = manifest.snapshot_id, "failed to remove an old snapshot");
            }
        }
        let Ok(entries) = std::fs::read_dir(&directory) else { return };
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with(".partial-") {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Whether a name can be a snapshot's: what `cutting::snapshot_id` makes.
pub fn is_snapshot_id(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.'))
}
