//! The `projector` command: run the projection from files or Kafka, rebuild
//! and switch model versions, handle dead letters, generate event streams,
//! and migrate the store.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::{Parser, Subcommand};
use projector::contract::Contract;
use projector::dead_letter::DeadLetterFile;
use projector::generate::{GenerateOptions, generate};
use projector::metrics::{AdminState, Observers, ProjectorMetrics, admin_router};
use projector::progress::PartitionBoard;
use projector::render_deferral::RenderDeferral;
use projector::runner::{BatchObserver, DeadLetterSink, RunOptions, RunTotals, SourceFeed, run, start_file_feed};
use projector::source::file::FileSource;
use projector::source::kafka::KafkaSettings;
use projector::source::kafka::consumer::{ConsumerOptions, ConsumerShared, start_consumer};
use projector::source::kafka::dead_letter_topic::{DeadLetterTopic, list_dead_letters, redrive_dead_letters};
use projector::source::wire::SchemaIds;
use read_model::store_arguments::StoreArguments;
use read_model::{ModelVersion, Store};
use tokio::sync::watch;

#[derive(Debug, Parser)]
#[command(name = "projector", version, about = "Materializes the registry's change events into the read model.")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Project events from a source into the store, following it.
    Run(RunArguments),
    /// Replay every topic from the earliest offset into a fresh model version,
    /// while the active version keeps serving; then keep it up to date.
    Rebuild(RebuildArguments),
    /// Switch readers (the query API, without a restart) to a model version.
    Activate(VersionArguments),
    /// Remove a model version that is not active.
    Drop(VersionArguments),
    /// List the model versions and which one is active.
    Versions(StoreArguments),
    /// List or re-drive the events parked on the dead-letter topic.
    #[command(subcommand)]
    DeadLetters(DeadLetterCommand),
    /// Generate a deterministic event stream as Avro container files.
    Generate(GenerateArguments),
    /// Create or upgrade the store's schema (idempotent).
    Migrate(StoreArguments),
}

#[derive(Debug, clap::Args)]
struct VersionArguments {
    /// The model version.
    version: u32,
    #[command(flatten)]
    store: StoreArguments,
}

#[derive(Debug, clap::Args)]
struct KafkaArguments {
    /// The consumer group; projector instances of one group split the partitions.
    #[arg(long, env = "LCC_KAFKA_GROUP_ID", default_value = "rights-projector")]
    kafka_group_id: String,
    /// Prepended to the six topic names (`works`, `rights`, `licenses`, `disputes`, `certificates`, `parties`).
    #[arg(long, env = "LCC_KAFKA_TOPIC_PREFIX", default_value = "")]
    kafka_topic_prefix: String,
    /// The topic poison events are parked on.
    #[arg(long, env = "LCC_DEAD_LETTER_TOPIC", default_value = "rights-projector.dead-letters")]
    dead_letter_topic: String,
}

impl KafkaArguments {
    fn settings(&self, bootstrap_servers: &str) -> KafkaSettings {
        KafkaSettings {
            bootstrap_servers: bootstrap_servers.to_owned(),
            topic_prefix: self.kafka_topic_prefix.clone(),
            group_id: self.kafka_group_id.clone(),
            dead_letter_topic: self.dead_letter_topic.clone(),
        }
    }
}

#[derive(Debug, clap::Args)]
struct RunArguments {
    /// Where events come from: `file://DIRECTORY` (Avro container files, read
    /// in name order) or `kafka://HOST:PORT[,HOST:PORT…]`.
    #[arg(long, env = "LCC_SOURCE")]
    source: String,
    #[command(flatten)]
    store: StoreArguments,
    /// Model version to write; created when missing. Default: the active one (version 1 on a new store).
    #[arg(long, env = "LCC_MODEL_VERSION")]
    model_version: Option<u32>,
    #[command(flatten)]
    tuning: RunTuning,
}

#[derive(Debug, clap::Args)]
struct RebuildArguments {
    /// The model version to build; it must not be the active one.
    #[arg(long)]
    into: u32,
    /// The Kafka cluster: `kafka://HOST:PORT[,HOST:PORT…]` (or `file://DIRECTORY`).
    #[arg(long, env = "LCC_SOURCE")]
    source: String,
    #[command(flatten)]
    store: StoreArguments,
    #[command(flatten)]
    tuning: RunTuning,
}

#[derive(Debug, clap::Args)]
struct RunTuning {
    /// Events per batch; each batch is one atomic store write.
    #[arg(long, env = "LCC_BATCH_SIZE", default_value_t = 30_000)]
    batch_size: usize,
    /// The longest a started batch waits for more events, in milliseconds.
    #[arg(long, env = "LCC_BATCH_LINGER_MS", default_value_t = 100)]
    batch_linger_ms: u64,
    /// While batches fill up (the source is behind), the documents they change
    /// wait to be rendered once, up to this many; 0 renders each batch's documents in the batch.
    #[arg(long, env = "LCC_RENDER_DEFERRAL_MAX_DOCUMENTS", default_value_t = RenderDeferral::DEFAULT.max_documents)]
    render_deferral_max_documents: usize,
    /// The longest a deferred document waits to be rendered, in seconds.
    #[arg(long, env = "LCC_RENDER_DEFERRAL_MAX_SECONDS", default_value_t = RenderDeferral::DEFAULT.max_wait.as_secs())]
    render_deferral_max_seconds: u64,
    /// Exit once every event present has been projected, instead of following the source.
    #[arg(long)]
    exit_when_caught_up: bool,
    /// Directory for dead-letter files of a file source. Default: `DATA_DIR/dead-letters`.
    #[arg(long, env = "LCC_DEAD_LETTER_DIR")]
    dead_letter_dir: Option<PathBuf>,
    #[command(flatten)]
    kafka: KafkaArguments,
    /// Schema registry for Confluent-framed values (`GET URL/schemas/ids/{id}`).
    #[arg(long, env = "LCC_SCHEMA_REGISTRY_URL", conflicts_with = "schema_id_map")]
    schema_registry_url: Option<String>,
    /// A JSON file `{"ID": "schema file"}` for Confluent-framed values, instead of a registry.
    #[arg(long, env = "LCC_SCHEMA_ID_MAP")]
    schema_id_map: Option<PathBuf>,
    /// Further writer schemas (`*.avsc`) for single-object values; read again when an unknown fingerprint arrives.
    #[arg(long, env = "LCC_WRITER_SCHEMA_DIR")]
    writer_schema_dir: Option<PathBuf>,
    /// A partition with lag and no progress for this many seconds is stalled (metric and readiness).
    #[arg(long, env = "LCC_STALL_AFTER_SECONDS", default_value_t = 60)]
    stall_after_seconds: u64,
    /// The admin listener (`/metrics`, `/healthz`, `/readyz`); port 0 picks a free port.
    #[arg(long, env = "LCC_PROJECTOR_ADMIN_LISTEN", default_value = "127.0.0.1:8091")]
    admin_listen: SocketAddr,
}

#[derive(Debug, Subcommand)]
enum DeadLetterCommand {
    /// Print every parked event (one JSON object per line), once per origin position.
    List(DeadLetterArguments),
    /// Produce every parked event not re-driven before back onto its origin topic.
    Redrive(DeadLetterArguments),
}

#[derive(Debug, clap::Args)]
struct DeadLetterArguments {
    /// The Kafka cluster: `kafka://HOST:PORT[,HOST:PORT…]`.
    #[arg(long, env = "LCC_SOURCE")]
    source: String,
    #[command(flatten)]
    kafka: KafkaArguments,
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

/// The projector allocates and frees many small strings per event; with
/// glibc's allocator a quarter of its critical thread went to malloc and free.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    telemetry::logging::init();
    let cli = Cli::parse();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("failed to start the runtime")?;
    runtime.block_on(async move {
        match cli.command {
            Command::Run(arguments) => {
                let store = open_store(&arguments.store, true).await?;
                let version = choose_version(store.as_ref(), arguments.model_version).await?;
                project(store, &arguments.store, version, &arguments.source, &arguments.tuning, false).await
            }
            Command::Rebuild(arguments) => {
                let store = open_store(&arguments.store, true).await?;
                let version = ModelVersion(arguments.into);
                if store.active_model_version().await? == Some(version) {
                    bail!("model version {version} is active; rebuild into a new version");
                }
                store.create_model_version(version).await.context("failed to create the model version")?;
                let mut tuning = arguments.tuning;
                // A group of its own: the rebuild reads every partition from the start, beside the live group.
                tuning.kafka.kafka_group_id = format!("{}.rebuild-v{}", tuning.kafka.kafka_group_id, version.0);
                project(store, &arguments.store, version, &arguments.source, &tuning, true).await
            }
            Command::Activate(arguments) => {
                let store = open_store(&arguments.store, false).await?;
                store.activate_model_version(ModelVersion(arguments.version)).await.context("failed to activate")?;
                println!("model version {} is active", arguments.version);
                Ok(())
            }
            Command::Drop(arguments) => {
                let store = open_store(&arguments.store, false).await?;
                store.drop_model_version(ModelVersion(arguments.version)).await.context("failed to drop")?;
                println!("model version {} dropped", arguments.version);
                Ok(())
            }
            Command::Versions(arguments) => {
                let store = open_store(&arguments, false).await?;
                for info in store.model_versions().await? {
                    println!("{}", serde_json::json!({"version": info.version.0, "active": info.active}));
                }
                Ok(())
            }
            Command::DeadLetters(command) => dead_letters(command).await,
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
                open_store(&arguments, false).await?;
                println!("the {} is at the current schema", arguments.describe());
                Ok(())
            }
        }
    })
}

/// Opens the store and brings its schema up to date. Long-running commands
/// wait for a store that cannot be reached yet; one-off commands fail at once.
async fn open_store(arguments: &StoreArguments, wait: bool) -> anyhow::Result<Arc<dyn Store>> {
    let opened = if wait { arguments.open_waiting().await } else { arguments.open().await };
    let store = opened.with_context(|| format!("failed to open the {}", arguments.describe()))?;
    store.migrate().await.with_context(|| format!("failed to migrate the {}", arguments.describe()))?;
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

/// Runs the projection from `source` into `version`, with the admin listener, until
/// caught up (when asked) or a signal.
async fn project(
    store: Arc<dyn Store>,
    store_arguments: &StoreArguments,
    version: ModelVersion,
    source: &str,
    tuning: &RunTuning,
    rebuild: bool,
) -> anyhow::Result<()> {
    let contract = Arc::new(Contract::load()?);
    let options = RunOptions {
        batch_size: tuning.batch_size.max(1),
        linger: Duration::from_millis(tuning.batch_linger_ms),
        exit_when_caught_up: tuning.exit_when_caught_up,
        poll_interval: Duration::from_secs(1),
        render_deferral: RenderDeferral {
            max_documents: tuning.render_deferral_max_documents,
            max_wait: Duration::from_secs(tuning.render_deferral_max_seconds),
            ..RenderDeferral::DEFAULT
        },
    };
    let metrics = Arc::new(ProjectorMetrics::new(version, rebuild).context("failed to register metrics")?);
    let (feed, dead_letters, kafka): (SourceFeed, Box<dyn DeadLetterSink>, Option<Arc<ConsumerShared>>) = if let Some(
        directory,
    ) =
        source.strip_prefix("file://")
    {
        let source = FileSource::new(&PathBuf::from(directory), contract);
        source.files().context("failed to read the source directory")?;
        let dead_letter_dir =
            tuning.dead_letter_dir.clone().unwrap_or_else(|| store_arguments.data_dir.join("dead-letters"));
        let file_name: String = source
            .source_id()
            .chars()
            .map(|character| if character.is_ascii_alphanumeric() { character } else { '_' })
            .collect();
        let dead_letters = DeadLetterFile::open(&dead_letter_dir.join(format!("{file_name}.jsonl")))
            .context("failed to open the dead-letter file")?;
        tracing::info!(dead_letters = %dead_letters.path().display(), "dead letters go to a file");
        let feed = start_file_feed(store.as_ref(), version, source, &options).await?;
        (feed, Box::new(dead_letters), None)
    } else if let Some(servers) = KafkaSettings::bootstrap_servers_of(source) {
        let settings = tuning.kafka.settings(servers);
        let schema_ids = match (&tuning.schema_registry_url, &tuning.schema_id_map) {
            (Some(url), _) => SchemaIds::Registry(url.clone()),
            (None, Some(map)) => SchemaIds::LocalMap(map.clone()),
            (None, None) => SchemaIds::Unavailable,
        };
        let shared = Arc::new(ConsumerShared::new(Arc::new(PartitionBoard::new(Duration::from_secs(
            tuning.stall_after_seconds,
        )))));
        let consumer_options = ConsumerOptions {
            schema_ids,
            writer_schema_dir: tuning.writer_schema_dir.clone(),
            channel_capacity: options.batch_size,
        };
        let dead_letters = DeadLetterTopic::new(&settings)?;
        tracing::info!(group = %settings.group_id, dead_letter_topic = %settings.dead_letter_topic, "consuming from Kafka");
        let feed = start_consumer(settings, contract, consumer_options, Arc::clone(&shared))?;
        (feed, Box::new(dead_letters), Some(shared))
    } else {
        bail!("unsupported source {source:?}: expected file://DIRECTORY or kafka://HOST:PORT");
    };
    tracing::info!(source = %feed.source_id, %version, rebuild, "projecting");

    let mut observers: Vec<Arc<dyn BatchObserver>> = vec![Arc::clone(&metrics) as Arc<dyn BatchObserver>];
    if let Some(shared) = &kafka {
        observers.push(Arc::clone(shared) as Arc<dyn BatchObserver>);
    }
    let admin = AdminState { metrics, kafka, store: Arc::clone(&store) };
    let listener = tokio::net::TcpListener::bind(tuning.admin_listen)
        .await
        .with_context(|| format!("failed to listen on {}", tuning.admin_listen))?;
    tracing::info!(admin = %listener.local_addr()?, "admin listener");
    telemetry::listening::announce(&[("admin", listener.local_addr()?)]);
    let (stop_admin, admin_stopped) = watch::channel(false);
    let admin_server = tokio::spawn(async move {
        let mut stopped = admin_stopped;
        axum::serve(listener, admin_router(admin))
            .with_graceful_shutdown(async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            })
            .await
    });

    let totals =
        run(store, version, feed, dead_letters, Arc::new(Observers(observers)), options, shutdown_signal()).await;
    let _ = stop_admin.send(true);
    let _ = admin_server.await;
    print_totals(totals?);
    Ok(())
}

fn print_totals(totals: RunTotals) {
    println!(
        "{}",
        serde_json::json!({
            "events": totals.events,
            "applied": totals.applied,
            "skippedAsDuplicates": totals.skipped_as_duplicates,
            "parked": totals.parked,
            "batches": totals.batches,
            "writeConflicts": totals.write_conflicts,
        })
    );
}

async fn dead_letters(command: DeadLetterCommand) -> anyhow::Result<()> {
    let (arguments, redrive) = match command {
        DeadLetterCommand::List(arguments) => (arguments, false),
        DeadLetterCommand::Redrive(arguments) => (arguments, true),
    };
    let Some(servers) = KafkaSettings::bootstrap_servers_of(&arguments.source) else {
        bail!("dead letters of a file source are in its dead-letter file; expected kafka://HOST:PORT");
    };
    let settings = arguments.kafka.settings(servers);
    let records = tokio::task::spawn_blocking(move || {
        if redrive { redrive_dead_letters(&settings) } else { list_dead_letters(&settings) }
    })
    .await
    .context("the dead-letter task failed")??;
    for record in &records {
        println!("{}", serde_json::to_string(record)?);
    }
    if redrive {
        eprintln!("re-drove {} parked events onto their origin topics", records.len());
    }
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
