//! One run: along the change feed from the copy's cursor until caught up,
//! starting from the newest verified snapshot when the copy is new or when
//! the registry can no longer continue from its cursor (410: retention
//! passed it, or a rebuild replaced the model version it names).
//!
//! It decides the order of the steps; the copy keeps each step's result
//! with its cursor, and the registry module says what the answers mean.

use std::path::PathBuf;
use std::time::Duration;

use serde::Deserialize;

use crate::copy::{ChangeItem, Copy, SyncState};
use crate::progress::Progress;
use crate::registry::{Registry, RegistryError};
use crate::snapshot::{self, KeySource};

/// Items asked per feed page: the API's largest page.
const PAGE_LIMIT: u32 = 1_000;
/// The pause before asking again for changes that are still settling.
const SETTLING_WAIT: Duration = Duration::from_secs(1);
/// Snapshots loaded in one run after a 410 at most: a registry that answers
/// 410 to the cursor of the snapshot it just served is not making progress.
const MOST_RESYNCHRONISATIONS: u32 = 2;

/// What the run needs besides the registry and the copy.
#[derive(Debug, Clone)]
pub struct SyncOptions {
    pub keys: KeySource,
    /// Where snapshot files are downloaded (and kept until loaded).
    pub downloads: PathBuf,
}

/// What a run did so far; reported whether it ends well or not.
#[derive(Debug, Default, Clone, Copy)]
pub struct RunTotals {
    pub snapshot_rows: u64,
    pub feed_items: u64,
    pub resynchronisations: u32,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChangePage {
    items: Vec<ChangeItem>,
    next: String,
    caught_up: bool,
}

/// Brings the copy up to date with the registry.
pub fn run(registry: &Registry, copy: &mut Copy, options: &SyncOptions, totals: &mut RunTotals) -> anyhow::Result<()> {
    let mut progress = Progress::new();
    if copy.state()?.is_none() {
        load_snapshot(registry, copy, options, totals, &progress)?;
    }
    loop {
        match follow(registry, copy, totals, &mut progress) {
            Err(error) if is_gone(&error) && totals.resynchronisations < MOST_RESYNCHRONISATIONS => {
                tracing::warn!(%error, "re-synchronising from the newest snapshot");
                totals.resynchronisations += 1;
                load_snapshot(registry, copy, options, totals, &progress)?;
            }
            other => return other,
        }
    }
}

fn is_gone(error: &anyhow::Error) -> bool {
    matches!(error.downcast_ref::<RegistryError>(), Some(RegistryError::Gone { .. }))
}

/// Replaces the copy's rows with the newest verified snapshot.
fn load_snapshot(
    registry: &Registry,
    copy: &mut Copy,
    options: &SyncOptions,
    totals: &mut RunTotals,
    progress: &Progress,
) -> anyhow::Result<()> {
    let verified = snapshot::newest(registry, &options.keys, &options.downloads, progress)?;
    let manifest = &verified.manifest;
    let state = SyncState {
        registry: registry.base_url().to_owned(),
        audience: manifest.audience.clone(),
        snapshot_id: manifest.snapshot_id.clone(),
        model_version: manifest.model_version,
        cursor: manifest.changes_cursor.clone(),
        signed_by: verified.signed_by.clone(),
    };
    let rows = copy.replace_with_snapshot(&verified.files, &state, |rows| progress.loading(rows))?;
    anyhow::ensure!(
        rows == manifest.row_count,
        "snapshot {} holds {rows} rows, its manifest states {}",
        manifest.snapshot_id,
        manifest.row_count
    );
    // Loaded: its files are no longer needed.
    let _ = std::fs::remove_dir_all(options.downloads.join(&manifest.snapshot_id));
    totals.snapshot_rows += rows;
    tracing::info!(snapshot = %manifest.snapshot_id, rows, "loaded the snapshot");
    Ok(())
}

/// Applies feed pages until a page says it caught up.
fn follow(registry: &Registry, copy: &mut Copy, totals: &mut RunTotals, progress: &mut Progress) -> anyhow::Result<()> {
    loop {
        let cursor = copy.state()?.map(|state| state.cursor).unwrap_or_default();
        let page: ChangePage = registry.json(&format!("/bulk/changes?since={cursor}&limit={PAGE_LIMIT}"))?;
        totals.feed_items += copy.apply_page(&page.items, &page.next)?;
        progress.feed_page(totals.snapshot_rows, totals.feed_items);
        if page.caught_up {
            progress.caught_up(totals.snapshot_rows, totals.feed_items);
            return Ok(());
        }
        if page.items.is_empty() {
            // Newer changes are committed but still settling (a replicated store); they are served in seconds.
            std::thread::sleep(SETTLING_WAIT);
        }
    }
}
