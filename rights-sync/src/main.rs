//! `rights-sync`: keeps a verified copy of the registry's published works
//! in one command. The first run loads the newest snapshot (its manifest's
//! signature and every file's SHA-256 checked), later runs continue from the
//! cursor kept in the copy; every run follows the change feed until caught
//! up.
//!
//! Exit status, for scripts and cron: 0 caught up; 75 interrupted (the
//! registry could not answer): the copy is consistent at its last cursor,
//! run again; 1 failed (a snapshot that does not verify, a refused key, a
//! copy that cannot be written, or `--check` found differences): the
//! failing step changed nothing, and the message says why; 2 bad arguments.
//! With `--follow` it does not exit by itself: it polls the feed, waiting
//! longer after each failure, until a signal stops it (the copy is
//! consistent whenever that comes).

mod check;
mod copy;
mod parquet_export;
mod progress;
mod registry;
mod snapshot;
mod sync;

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

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
// No `Debug`: it holds the key.
#[derive(Parser)]
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
    /// Keep the copy current: poll the change feed until stopped.
    #[arg(long, conflicts_with = "check")]
    follow: bool,
    /// Seconds between polls with `--follow`; after a failure the wait doubles, up to 5 minutes.
    #[arg(long, env = "LCC_SYNC_POLL_SECONDS", default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=3600))]
    poll_seconds: u64,
    /// Once caught up, compare the copy with the registry's export and report differences.
    #[arg(long)]
    check: bool,
}

/// The longest wait between polls after failures.
const LONGEST_BACKOFF: Duration = Duration::from_secs(300);

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
    if arguments.follow {
        return follow(&registry, &mut copy, &options, parquet_path.as_deref(), arguments.poll_seconds);
    }
    let (mut result, totals) = run_once(&registry, &mut copy, &options, parquet_path.as_deref());
    let mut check = None;
    if result.is_ok() && arguments.check {
        (check, result) = check_against_the_export(&registry, &copy);
    }
    let (outcome, status) = outcome_of(&result);
    record(&copy, started_at, outcome, &totals, &result);
    let mut summary = serde_json::json!({
        "outcome": outcome,
        "snapshotRows": totals.snapshot_rows,
        "feedItems": totals.feed_items,
        "resynchronisations": totals.resynchronisations,
    });
    if let Some(check) = check {
        summary["check"] = check;
    }
    println!("{summary}");
    if let Err(error) = &result {
        eprintln!("rights-sync: {outcome}: {error:#}");
    }
    status
}

/// `--check`: the report for the summary line, and an error when the copy differs.
fn check_against_the_export(registry: &Registry, copy: &Copy) -> (Option<serde_json::Value>, anyhow::Result<()>) {
    match check::compare(registry, copy) {
        Ok(report) if report.is_equal() => (Some(report.to_json()), Ok(())),
        Ok(report) => {
            let differs = anyhow::anyhow!(
                "the copy differs from the registry's export: {} missing, {} extra, {} differing",
                report.missing.len(),
                report.extra.len(),
                report.differing.len()
            );
            (Some(report.to_json()), Err(differs))
        }
        Err(error) => (None, Err(error)),
    }
}

/// One run to caught up, and the Parquet file rewritten after it.
fn run_once(
    registry: &Registry,
    copy: &mut Copy,
    options: &SyncOptions,
    parquet_path: Option<&Path>,
) -> (anyhow::Result<()>, RunTotals) {
    let mut totals = RunTotals::default();
    let mut result = sync::run(registry, copy, options, &mut totals);
    if let (Ok(()), Some(path)) = (&result, parquet_path) {
        result = parquet_export::write(copy, path).map(drop);
    }
    (result, totals)
}

/// `--follow`: runs, then polls, until a failure no later run can mend.
fn follow(
    registry: &Registry,
    copy: &mut Copy,
    options: &SyncOptions,
    parquet_path: Option<&Path>,
    poll_seconds: u64,
) -> ExitCode {
    let poll = Duration::from_secs(poll_seconds);
    let mut wait = poll;
    loop {
        let started_at = copy::now();
        let (result, totals) = run_once(registry, copy, options, parquet_path);
        let (outcome, status) = outcome_of(&result);
        if totals.snapshot_rows > 0 || totals.feed_items > 0 || result.is_err() {
            record(copy, started_at, outcome, &totals, &result);
        }
        match &result {
            Ok(()) => wait = poll,
            Err(error) if is_interruption(error) => {
                tracing::warn!(error = %format!("{error:#}"), seconds = wait.as_secs(), "interrupted; trying again later");
                std::thread::sleep(wait);
                wait = (wait * 2).min(LONGEST_BACKOFF);
                continue;
            }
            Err(error) => {
                eprintln!("rights-sync: {outcome}: {error:#}");
                return status;
            }
        }
        std::thread::sleep(wait);
    }
}

fn outcome_of(result: &anyhow::Result<()>) -> (&'static str, ExitCode) {
    match result {
        Ok(()) => ("caught_up", ExitCode::SUCCESS),
        Err(error) if is_interruption(error) => ("interrupted", ExitCode::from(INTERRUPTED)),
        Err(_) => ("failed", ExitCode::FAILURE),
    }
}

/// Keeps the run's line in the copy; a copy that cannot take it is only logged.
fn record(copy: &Copy, started_at: String, outcome: &'static str, totals: &RunTotals, result: &anyhow::Result<()>) {
    let run = RunRecord {
        started_at,
        outcome,
        snapshot_rows: totals.snapshot_rows,
        feed_items: totals.feed_items,
        detail: result.as_ref().err().map(|error| format!("{error:#}")),
    };
    if let Err(error) = copy.record_run(&run) {
        tracing::warn!(%error, "failed to record the run in the copy");
    }
}

/// Whether a run stopped because the registry could not answer, so that a
/// later run can go on from the copy's cursor.
fn is_interruption(error: &anyhow::Error) -> bool {
    matches!(error.downcast_ref::<RegistryError>(), Some(RegistryError::Unavailable { .. }))
}
