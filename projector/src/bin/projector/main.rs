//! The `projector` command: run the projection from files or Kafka, rebuild
//! and switch model versions, handle dead letters, generate event streams,
//! and migrate the store.

mod arguments;
mod project;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Parser;
use projector::dead_letter::topic::{list_dead_letters, redrive_dead_letters};
use projector::generate::{GenerateOptions, generate};
use projector::source::kafka::KafkaSettings;
use read_model::store_arguments::StoreArguments;
use read_model::{ModelVersion, Store};

use crate::arguments::{Cli, Command, DeadLetterCommand};
use crate::project::project;

/// The projector allocates and frees many small strings per event; with
/// glibc's allocator a quarter of its critical thread went to malloc and free.
#[global_allocator]
static ALLOCATOR: allocator::Allocator = allocator::Allocator;

fn main() -> anyhow::Result<()> {
    telemetry::logging::init();
    let cli = Cli::parse();
    let runtime =
        tokio::runtime::Builder::new_multi_thread().enable_all().build().context("failed to start the runtime")?;
    runtime.block_on(async move {
        match cli.command {
            Command::Run(arguments) => {
                within_stop_bound(async {
                    let store = open_store(&arguments.store, true).await?;
                    let version = choose_version(store.as_ref(), arguments.model_version).await?;
                    project(store, &arguments.store, version, &arguments.source, &arguments.tuning, false).await
                })
                .await
            }
            Command::Rebuild(arguments) => {
                within_stop_bound(async {
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
                })
                .await
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

/// The longest `run` and `rebuild` go on after SIGTERM or Ctrl-C.
const STOP_BOUND: Duration = Duration::from_secs(15);

/// Runs a long-running command to its end or, once a stop signal has come,
/// for at most [`STOP_BOUND`] more. The loop itself stops within one store
/// call; this bounds what it does not see, such as a store that never
/// answers while being opened. Leaving loses nothing: what did not commit
/// is read again after a restart, from the store's checkpoints.
async fn within_stop_bound(command: impl Future<Output = anyhow::Result<()>>) -> anyhow::Result<()> {
    tokio::select! {
        result = command => result,
        () = async {
            telemetry::shutdown::signal().await;
            tokio::time::sleep(STOP_BOUND).await;
        } => bail!(
            "still running {} s after the stop signal; leaving: a restart resumes from the store's checkpoints",
            STOP_BOUND.as_secs()
        ),
    }
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
