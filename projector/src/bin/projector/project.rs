//! `projector run` and `rebuild`: the source and its dead-letter sink chosen
//! from `--source`, the admin listener, and the loop until caught up (when
//! asked) or a signal; then the run's totals as one JSON line.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use projector::contract::Contract;
use projector::dead_letter::topic::DeadLetterTopic;
use projector::dead_letter::{DeadLetterFile, DeadLetterSink};
use projector::metrics::{AdminState, Observers, ProjectorMetrics, admin_router};
use projector::progress::PartitionBoard;
use projector::render_deferral::RenderDeferral;
use projector::runner::{BatchObserver, RunOptions, RunTotals, run};
use projector::source::SourceFeed;
use projector::source::file::{FileSource, start_file_feed};
use projector::source::kafka::KafkaSettings;
use projector::source::kafka::consumer::{ConsumerOptions, ConsumerShared, start_consumer};
use projector::source::kafka::wire::SchemaIds;
use read_model::store_arguments::StoreArguments;
use read_model::{ModelVersion, Store};
use tokio::sync::watch;

use crate::arguments::RunTuning;

/// Runs the projection from `source` into `version`, with the admin listener, until
/// caught up (when asked) or a signal.
pub(crate) async fn project(
    store: Arc<dyn Store>,
    store_arguments: &StoreArguments,
    version: ModelVersion,
    source: &str,
    tuning: &RunTuning,
    rebuild: bool,
) -> anyhow::Result<()> {
    store.check_writer_settings().await.context("the projector cannot write to this store")?;
    let contract = Arc::new(Contract::load()?);
    let options = RunOptions {
        change_feed_retention: Duration::from_secs(tuning.change_feed_retention_days * 24 * 60 * 60),
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
        // One batch of decoded events waits while the current one is projected.
        let feed = start_file_feed(store.as_ref(), version, source, options.batch_size, options.poll_interval).await?;
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
        run(store, version, feed, dead_letters, Arc::new(Observers(observers)), options, telemetry::shutdown::signal())
            .await;
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
