//! The `projector` command: run the projection, generate event streams, or
//! migrate the store.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use projector::contract::Contract;
use projector::dead_letter::DeadLetterFile;
use projector::generate::{GenerateOptions, generate};
use projector::runner::{RunOptions, run_file_source};
use projector::source::file::FileSource;
use read_model::{ModelVersion, ModelVersions, SqliteStore, Store};

#[derive(Debug, Parser)]
#[command(name = "projector", version, about = "Materializes the registry's change events into the read model.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Project events from a source into the store.
    Run(RunArguments),
    /// Generate a deterministic event stream as Avro container files.
    Generate(GenerateArguments),
    /// Create or upgrade the store's schema (idempotent).
    Migrate(StoreArguments),
}

#[derive(Debug, clap::Args)]
struct StoreArguments {
    /// Directory of the embedded SQLite store.
    #[arg(long, env = "LCC_DATA_DIR", default_value = "data")]
    data_dir: PathBuf,
}

#[derive(Debug, clap::Args)]
struct RunArguments {
    /// Where events come from: `file://DIRECTORY` (Avro container files, read in name order).
    #[arg(long, env = "LCC_SOURCE")]
    source: String,
    #[command(flatten)]
    store: StoreArguments,
    /// Model version to write; created when missing. Default: the active one (version 1 on a new store).
    #[arg(long, env = "LCC_MODEL_VERSION")]
    model_version: Option<u32>,
    /// Events per batch; each batch is one atomic store write.
    #[arg(long, env = "LCC_BATCH_SIZE", default_value_t = 5_000)]
    batch_size: usize,
    /// Exit once every event present has been projected, instead of following the source.
    #[arg(long)]
    exit_when_caught_up: bool,
    /// Directory for dead-letter files. Default: `DATA_DIR/dead-letters`.
    #[arg(long, env = "LCC_DEAD_LETTER_DIR")]
    dead_letter_dir: Option<PathBuf>,
}

#[derive(Debug, clap::Args)]
struct GenerateArguments {
    /// Number of works (about 5.4 events each).
    #[arg(long, default_value_t = 1_000)]
    works: usize,
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Output directory.
    #[arg(long)]
    out: PathBuf,
    /// Events per segment (a segment is up to one file per topic).
    #[arg(long, default_value_t = 20_000)]
    events_per_segment: usize,
    /// Generate the sandbox fixtures instead of a production-like stream.
    #[arg(long)]
    sandbox: bool,
}

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("failed to start the runtime")?;
    runtime.block_on(async move {
        match cli.command {
            Command::Run(arguments) => run(arguments).await,
            Command::Generate(arguments) => {
                let options = GenerateOptions {
                    works: arguments.works,
                    seed: arguments.seed,
                    events_per_segment: arguments.events_per_segment,
                    sandbox: arguments.sandbox,
                };
                let manifest = generate(&options, &arguments.out)?;
                println!("{}", serde_json::to_string(&manifest)?);
                Ok(())
            }
            Command::Migrate(arguments) => {
                let store = open_store(&arguments).await?;
                println!("store at {} is at the current schema", store.directory().display());
                Ok(())
            }
        }
    })
}

async fn open_store(arguments: &StoreArguments) -> anyhow::Result<SqliteStore> {
    let store = SqliteStore::open(&arguments.data_dir)
        .with_context(|| format!("failed to open the store in {}", arguments.data_dir.display()))?;
    store.migrate().await.context("failed to migrate the store")?;
    Ok(store)
}

/// The version to write: the one asked for, else the active one, else a new version 1, activated.
async fn choose_version(store: &dyn Store, requested: Option<u32>) -> anyhow::Result<ModelVersion> {
    if let Some(version) = requested {
        store.create_model_version(ModelVersion(version)).await.context("failed to create the model version")?;
        return Ok(ModelVersion(version));
    }
    read_model::active_or_first_version(store).await.context("failed to choose the model version")
}

async fn run(arguments: RunArguments) -> anyhow::Result<()> {
    let Some(directory) = arguments.source.strip_prefix("file://") else {
        bail!("unsupported source {:?}: expected file://DIRECTORY", arguments.source);
    };
    let store = open_store(&arguments.store).await?;
    let version = choose_version(&store, arguments.model_version).await?;
    let contract = Arc::new(Contract::load()?);
    let source = FileSource::new(&PathBuf::from(directory), contract);
    source.files().context("failed to read the source directory")?;
    let dead_letter_dir = arguments.dead_letter_dir.unwrap_or_else(|| arguments.store.data_dir.join("dead-letters"));
    let file_name: String = source
        .source_id()
        .chars()
        .map(|character| if character.is_ascii_alphanumeric() { character } else { '_' })
        .collect();
    let dead_letters = DeadLetterFile::open(&dead_letter_dir.join(format!("{file_name}.jsonl")))
        .context("failed to open the dead-letter file")?;
    tracing::info!(source = source.source_id(), %version, dead_letters = %dead_letters.path().display(), "projecting");
    let options = RunOptions {
        batch_size: arguments.batch_size.max(1),
        exit_when_caught_up: arguments.exit_when_caught_up,
        poll_interval: Duration::from_secs(1),
    };
    let store: Arc<dyn Store> = Arc::new(store);
    let totals = run_file_source(store, version, source, dead_letters, options, shutdown_signal()).await?;
    println!(
        "{}",
        serde_json::json!({
            "events": totals.events,
            "applied": totals.applied,
            "skippedAsDuplicates": totals.skipped_as_duplicates,
            "parked": totals.parked,
            "batches": totals.batches,
        })
    );
    Ok(())
}

/// Resolves on SIGTERM or Ctrl-C.
async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate = match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(signal) => signal,
            Err(_) => return std::future::pending().await,
        };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = interrupt.await;
    }
}
