//! `rights-sync`: keeps a verified copy of the registry's published works
//! in one command. The first run loads the newest snapshot (its manifest's
//! signature and every file's SHA-256 checked), later runs continue from the
//! cursor kept in the copy; every run follows the change feed until caught
//! up.
//!
//! Exit status, for scripts and cron: 0 caught up; 75 interrupted (the
//! registry could not answer): the copy is consistent at its last cursor,
//! run again; 1 failed (a snapshot that does not verify, a refused key, a
//! copy that cannot be written): the failing step changed nothing, and the
//! message says why; 2 bad arguments.

mod copy;
mod parquet_export;
mod registry;
mod snapshot;
mod sync;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, ValueEnum};

use crate::copy::{Copy, RunRecord};
use crate::registry::{Registry, RegistryError};
use crate::snapshot::KeySource;
use crate::sync::{RunTotals, SyncOptions};

/// The exit status of an interrupted run (EX_TEMPFAIL).
const INTERRUPTED: u8 = 75;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Format {
    /// One SQLite file (`--into copy.sqlite`).
    Sqlite,
    /// A directory (`--into DIR`) with `works.parquet`, rewritten after each
    /// run, beside the SQLite copy that keeps the sync's state.
    Parquet,
}

/// Keeps a verified copy of the registry's published works.
#[derive(Debug, Parser)]
#[command(version)]
struct Arguments {
    /// The registry's API: origin and base path.
    #[arg(long, env = "LCC_SYNC_FROM", value_name = "BASE_URL")]
    from: String,
    /// An API key with `bulk:read`; its audience is the copy's.
    #[arg(long, env = "LCC_SYNC_KEY", hide_env_values = true)]
    key: String,
    /// The copy: a SQLite file, or a directory with `--format parquet`.
    #[arg(long, env = "LCC_SYNC_INTO")]
    into: PathBuf,
    #[arg(long, value_enum, default_value_t = Format::Sqlite)]
    format: Format,
    /// A pinned key set (JWK Set) to check snapshot manifests against,
    /// instead of the registry's `/keys`.
    #[arg(long, env = "LCC_SYNC_KEYS")]
    keys: Option<PathBuf>,
}

fn main() -> ExitCode {
    telemetry::logging::init();
    let arguments = Arguments::parse();
    let started_at = copy::now();
    let (copy_path, parquet_path) = match arguments.format {
        Format::Sqlite => (arguments.into.clone(), None),
        Format::Parquet => (arguments.into.join("copy.sqlite"), Some(arguments.into.join("works.parquet"))),
    };
    if let Some(directory) = parquet_path.as_ref().and_then(|path| path.parent())
        && let Err(error) = std::fs::create_dir_all(directory)
    {
        eprintln!("rights-sync: failed: cannot create {}: {error}", directory.display());
        return ExitCode::FAILURE;
    }
    let mut copy = match Copy::open(&copy_path) {
        Ok(copy) => copy,
        Err(error) => {
            eprintln!("rights-sync: failed: cannot open the copy {}: {error:#}", copy_path.display());
            return ExitCode::FAILURE;
        }
    };
    let mut downloads = copy_path.clone().into_os_string();
    downloads.push(".downloads");
    let options = SyncOptions {
        keys: arguments.keys.map_or(KeySource::Registry, KeySource::Pinned),
        downloads: PathBuf::from(downloads),
    };
    let registry = Registry::new(&arguments.from, arguments.key);
    let mut totals = RunTotals::default();
    let mut result = sync::run(&registry, &mut copy, &options, &mut totals);
    if let (Ok(()), Some(path)) = (&result, &parquet_path) {
        result = parquet_export::write(&copy, path).map(drop);
    }
    let (outcome, status) = match &result {
        Ok(()) => ("caught_up", ExitCode::SUCCESS),
        Err(error) if is_interruption(error) => ("interrupted", ExitCode::from(INTERRUPTED)),
        Err(_) => ("failed", ExitCode::FAILURE),
    };
    let detail = result.as_ref().err().map(|error| format!("{error:#}"));
    let record = RunRecord {
        started_at,
        outcome,
        snapshot_rows: totals.snapshot_rows,
        feed_items: totals.feed_items,
        detail: detail.clone(),
    };
    if let Err(error) = copy.record_run(&record) {
        tracing::warn!(%error, "failed to record the run in the copy");
    }
    let summary = serde_json::json!({
        "outcome": outcome,
        "snapshotRows": totals.snapshot_rows,
        "feedItems": totals.feed_items,
        "resynchronisations": totals.resynchronisations,
    });
    println!("{summary}");
    if let Some(detail) = detail {
        eprintln!("rights-sync: {outcome}: {detail}");
    }
    status
}

/// Whether a run stopped because the registry could not answer, so that a
/// later run can go on from the copy's cursor.
fn is_interruption(error: &anyhow::Error) -> bool {
    matches!(error.downcast_ref::<RegistryError>(), Some(RegistryError::Unavailable { .. }))
}
