//! `cargo run --release`: the whole read side on one machine, on the
//! embedded default. The projector follows the bundled sandbox event files
//! (and any file added beside them) into the SQLite store, and the public API
//! serves it. One signal (Ctrl-C or SIGTERM) stops both cleanly.
//!
//! The two halves keep their boundaries in one process: the projector writes
//! through `ProjectionWrites`, the API reads through `DocumentReads`.

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::Context;
use clap::Parser;
use projector::contract::Contract;
use projector::runner::{NoObserver, RunOptions};
use projector::source_and_sink::{SourceAndSink, SourceOptions, start_source};
use query_api::config::ServeConfig;
use query_api::snapshots::run_snapshot_schedule;
use read_model::sqlite::DEFAULT_DOCUMENT_CACHE_BYTES;
use read_model::{ModelVersions, SqliteStore, Store};
use tokio::sync::watch;

#[derive(Debug, Parser)]
#[command(name = "rights-service", version, about = "The read side on one machine: projector and public API.")]
struct Cli {
    /// Directory of the embedded SQLite store.
    #[arg(long, env = "LCC_DATA_DIR", default_value = "data")]
    data_dir: PathBuf,
    /// Event files to project (the bundled sandbox fixtures by default).
    #[arg(long, env = "LCC_EVENTS_DIR", default_value = "schemas/fixtures/sandbox")]
    events_dir: PathBuf,
    /// Memory for documents the API has read, in MiB, dropped when a batch
    /// changes them; 0 turns the cache off.
    #[arg(long, env = "LCC_DOCUMENT_CACHE_MIB", default_value_t = DEFAULT_DOCUMENT_CACHE_BYTES >> 20)]
    document_cache_mib: u64,
    #[command(flatten)]
    serve: ServeConfig,
}

/// The projector's allocator (see `projector/src/bin/projector/main.rs`), for both halves.
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

fn main() -> anyhow::Result<()> {
    telemetry::logging::init();
    let cli = Cli::parse();
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("failed to start the runtime")?
        .block_on(run(cli))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let store = SqliteStore::open_with_document_cache(&cli.data_dir, cli.document_cache_mib.saturating_mul(1 << 20))
        .context("failed to open the store")?;
    store.migrate().await.context("failed to migrate the store")?;
    let version = read_model::active_or_first_version(&store).await.context("failed to choose the model version")?;
    let (stop, stopped) = watch::channel(false);
    let wait_for_stop = |mut stopped: watch::Receiver<bool>| async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    };

    let events = format!("file://{}", cli.events_dir.display());
    let SourceAndSink { feed, dead_letters, .. } = start_source(
        &events,
        Arc::new(Contract::load()?),
        &SourceOptions { channel_capacity: 5_000, ..SourceOptions::in_directory(cli.data_dir.join("dead-letters")) },
    )
    .context("failed to start reading the events directory")?;
    let options = RunOptions { batch_size: 5_000, ..RunOptions::default() };
    let projection_store: Arc<dyn Store> = Arc::new(store.clone());
    let projection = tokio::spawn(projector::runner::run(
        projection_store,
        version,
        feed,
        dead_letters,
        Arc::new(NoObserver),
        options,
        wait_for_stop(stopped.clone()),
    ));

    let app = query_api::app::App::from_config(&cli.serve, Arc::new(store), &cli.data_dir)?;
    let listener = tokio::net::TcpListener::bind(&cli.serve.listen)
        .await
        .with_context(|| format!("failed to listen on {}", cli.serve.listen))?;
    let admin = tokio::net::TcpListener::bind(&cli.serve.admin_listen)
        .await
        .with_context(|| format!("failed to listen on {}", cli.serve.admin_listen))?;
    tracing::info!(
        address = %listener.local_addr()?,
        admin = %admin.local_addr()?,
        events = %cli.events_dir.display(),
        "serving the public API"
    );
    telemetry::listening::announce(&[("public", listener.local_addr()?), ("admin", admin.local_addr()?)]);
    // The admin listener outlives the public one, so that `/readyz` answers
    // false while requests in flight finish.
    let (stop_admin, admin_stopped) = tokio::sync::oneshot::channel::<()>();
    let admin_server = tokio::spawn(query_api::server::admin::run(admin, Arc::clone(&app), async move {
        let _ = admin_stopped.await;
    }));
    let snapshots = cli.serve.snapshot_schedule(&cli.data_dir, &app.signer).map(|schedule| {
        tokio::spawn(run_snapshot_schedule(Arc::clone(&app.store), schedule, wait_for_stop(stopped.clone())))
    });
    let server = tokio::spawn(query_api::server::run(listener, app, wait_for_stop(stopped)));

    telemetry::shutdown::signal().await;
    tracing::info!("stopping");
    let _ = stop.send(true);
    if let Some(snapshots) = snapshots {
        snapshots.await.context("the snapshot task failed")?;
    }
    server.await.context("the server task failed")?.context("the server failed")?;
    let _ = stop_admin.send(());
    admin_server.await.context("the admin task failed")?.context("the admin listener failed")?;
    projection.await.context("the projector task failed")?.context("the projector failed")?;
    Ok(())
}
