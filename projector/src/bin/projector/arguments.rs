//! The projector's command line: its subcommands and flags, each with an
//! environment fallback and a default that works on one machine.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use clap::{Parser, Subcommand};
use projector::render_deferral::RenderDeferral;
use projector::runner::{RUN_EVENTS, RunOptions};
use projector::source::kafka::KafkaSettings;
use projector::source::kafka::wire::SchemaIds;
use projector::source_and_sink::{KafkaOptions, SourceOptions};
use read_model::store_arguments::StoreArguments;

#[derive(Debug, Parser)]
#[command(name = "projector", version, about = "Materializes the registry's change events into the read model.")]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) command: Command,
}

#[derive(Debug, Subcommand)]
pub(crate) enum Command {
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
pub(crate) struct VersionArguments {
    /// The model version.
    pub(crate) version: u32,
    #[command(flatten)]
    pub(crate) store: StoreArguments,
}

#[derive(Debug, clap::Args)]
pub(crate) struct KafkaArguments {
    /// The consumer group; projector instances of one group split the partitions.
    #[arg(long, env = "LCC_KAFKA_GROUP_ID", default_value = "rights-projector")]
    pub(crate) kafka_group_id: String,
    /// Prepended to the six topic names (`works`, `rights`, `licenses`, `disputes`, `certificates`, `parties`).
    #[arg(long, env = "LCC_KAFKA_TOPIC_PREFIX", default_value = "")]
    pub(crate) kafka_topic_prefix: String,
    /// The topic poison events are parked on.
    #[arg(long, env = "LCC_DEAD_LETTER_TOPIC", default_value = "rights-projector.dead-letters")]
    pub(crate) dead_letter_topic: String,
}

impl KafkaArguments {
    pub(crate) fn settings(&self, bootstrap_servers: &str) -> KafkaSettings {
        KafkaSettings {
            bootstrap_servers: bootstrap_servers.to_owned(),
            topic_prefix: self.kafka_topic_prefix.clone(),
            group_id: self.kafka_group_id.clone(),
            dead_letter_topic: self.dead_letter_topic.clone(),
        }
    }
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunArguments {
    /// Where events come from: `file://DIRECTORY` (Avro container files, read
    /// in name order) or `kafka://HOST:PORT[,HOST:PORT…]`.
    #[arg(long, env = "LCC_SOURCE")]
    pub(crate) source: String,
    #[command(flatten)]
    pub(crate) store: StoreArguments,
    /// Model version to write; created when missing. Default: the active one (version 1 on a new store).
    #[arg(long, env = "LCC_MODEL_VERSION")]
    pub(crate) model_version: Option<u32>,
    #[command(flatten)]
    pub(crate) tuning: RunTuning,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RebuildArguments {
    /// The model version to build; it must not be the active one.
    #[arg(long)]
    pub(crate) into: u32,
    /// The Kafka cluster: `kafka://HOST:PORT[,HOST:PORT…]` (or `file://DIRECTORY`).
    #[arg(long, env = "LCC_SOURCE")]
    pub(crate) source: String,
    #[command(flatten)]
    pub(crate) store: StoreArguments,
    #[command(flatten)]
    pub(crate) tuning: RunTuning,
}

#[derive(Debug, clap::Args)]
pub(crate) struct RunTuning {
    /// Events per batch; each batch is one atomic store write.
    #[arg(long, env = "LCC_BATCH_SIZE", default_value_t = 30_000)]
    pub(crate) batch_size: usize,
    /// The longest a started batch waits for more events, in milliseconds.
    #[arg(long, env = "LCC_BATCH_LINGER_MS", default_value_t = 100)]
    pub(crate) batch_linger_ms: u64,
    /// While batches fill up (the source is behind), the documents they change
    /// wait to be rendered once, up to this many; 0 renders each batch's documents in the batch.
    #[arg(long, env = "LCC_RENDER_DEFERRAL_MAX_DOCUMENTS", default_value_t = RenderDeferral::DEFAULT.max_documents)]
    pub(crate) render_deferral_max_documents: usize,
    /// On a store that holds nothing of the source (a rebuild, a first run),
    /// take in everything the source holds, sorted by aggregate in temporary
    /// files, before writing it; nothing is visible until it is all written.
    #[arg(long, env = "LCC_SORTED_CATCH_UP", default_value_t = true, action = clap::ArgAction::Set)]
    pub(crate) sorted_catch_up: bool,
    /// Events a sorted catch-up holds in memory (about 1 KiB each) before it
    /// sorts them into a spill file.
    #[arg(long, env = "LCC_CATCH_UP_RUN_EVENTS", default_value_t = RUN_EVENTS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub(crate) catch_up_run_events: usize,
    /// Where sorted catch-ups keep their spill files (about 230 bytes an
    /// event); each run removes those that killed runs left. Default:
    /// `DATA_DIR/catch-up-spill`.
    #[arg(long, env = "LCC_SPILL_DIR")]
    pub(crate) spill_dir: Option<PathBuf>,
    /// The longest a deferred document waits to be rendered, in seconds
    /// [default: 120 for `run`, 600 for `rebuild`].
    #[arg(long, env = "LCC_RENDER_DEFERRAL_MAX_SECONDS")]
    pub(crate) render_deferral_max_seconds: Option<u64>,
    /// How long the change feed keeps changes that a later change of the
    /// same work supersedes, and withdrawals, in days. A client whose cursor
    /// is older starts again from a snapshot.
    #[arg(long, env = "LCC_CHANGE_FEED_RETENTION_DAYS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3650))]
    pub(crate) change_feed_retention_days: u64,
    /// Exit once every event present has been projected, instead of following the source.
    #[arg(long)]
    pub(crate) exit_when_caught_up: bool,
    /// Directory for dead-letter files of a file source. Default: `DATA_DIR/dead-letters`.
    #[arg(long, env = "LCC_DEAD_LETTER_DIR")]
    pub(crate) dead_letter_dir: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) kafka: KafkaArguments,
    /// Schema registry for Confluent-framed values (`GET URL/schemas/ids/{id}`).
    #[arg(long, env = "LCC_SCHEMA_REGISTRY_URL", conflicts_with = "schema_id_map")]
    pub(crate) schema_registry_url: Option<String>,
    /// A JSON file `{"ID": "schema file"}` for Confluent-framed values, instead of a registry.
    #[arg(long, env = "LCC_SCHEMA_ID_MAP")]
    pub(crate) schema_id_map: Option<PathBuf>,
    /// Further writer schemas (`*.avsc`) for single-object values; read again when an unknown fingerprint arrives.
    #[arg(long, env = "LCC_WRITER_SCHEMA_DIR")]
    pub(crate) writer_schema_dir: Option<PathBuf>,
    /// A partition with lag and no progress for this many seconds is stalled (metric and readiness).
    #[arg(long, env = "LCC_STALL_AFTER_SECONDS", default_value_t = 60)]
    pub(crate) stall_after_seconds: u64,
    /// The admin listener (`/metrics`, `/healthz`, `/readyz`); port 0 picks a free port.
    #[arg(long, env = "LCC_PROJECTOR_ADMIN_LISTEN", default_value = "127.0.0.1:8091")]
    pub(crate) admin_listen: SocketAddr,
}

impl RunTuning {
    /// How the loop runs, for a rebuild or not, on the store in `data_dir`.
    pub(crate) fn run_options(&self, rebuild: bool, data_dir: &Path) -> RunOptions {
        let deferral = if rebuild { RenderDeferral::REBUILD } else { RenderDeferral::DEFAULT };
        RunOptions {
            change_feed_retention: Duration::from_secs(self.change_feed_retention_days * 24 * 60 * 60),
            batch_size: self.batch_size.max(1),
            linger: Duration::from_millis(self.batch_linger_ms),
            exit_when_caught_up: self.exit_when_caught_up,
            render_deferral: RenderDeferral {
                max_documents: self.render_deferral_max_documents,
                max_wait: self.render_deferral_max_seconds.map_or(deferral.max_wait, Duration::from_secs),
                ..deferral
            },
            sorted_catch_up: self.sorted_catch_up,
            catch_up_run_events: self.catch_up_run_events,
            spill_directory: self.spill_dir.clone().unwrap_or_else(|| data_dir.join("catch-up-spill")),
        }
    }

    /// How the source is set up; a file source's dead letters go to
    /// `--dead-letter-dir`, else to `DATA_DIR/dead-letters`.
    pub(crate) fn source_options(&self, data_dir: &Path) -> SourceOptions {
        let schema_ids = match (&self.schema_registry_url, &self.schema_id_map) {
            (Some(url), _) => SchemaIds::Registry(url.clone()),
            (None, Some(map)) => SchemaIds::LocalMap(map.clone()),
            (None, None) => SchemaIds::Unavailable,
        };
        SourceOptions {
            // One batch of decoded events waits while the current one is projected.
            channel_capacity: self.batch_size.max(1),
            kafka: KafkaOptions {
                group_id: self.kafka.kafka_group_id.clone(),
                topic_prefix: self.kafka.kafka_topic_prefix.clone(),
                dead_letter_topic: self.kafka.dead_letter_topic.clone(),
                schema_ids,
                writer_schema_dir: self.writer_schema_dir.clone(),
                stall_after: Duration::from_secs(self.stall_after_seconds),
            },
            ..SourceOptions::in_directory(self.dead_letter_dir.clone().unwrap_or_else(|| data_dir.join("dead-letters")))
        }
    }
}

#[derive(Debug, Subcommand)]
pub(crate) enum DeadLetterCommand {
    /// Print every parked event (one JSON object per line), once per origin position.
    List(DeadLetterArguments),
    /// Produce every parked event not re-driven before back onto its origin topic.
    Redrive(DeadLetterArguments),
}

#[derive(Debug, clap::Args)]
pub(crate) struct DeadLetterArguments {
    /// The Kafka cluster: `kafka://HOST:PORT[,HOST:PORT…]`.
    #[arg(long, env = "LCC_SOURCE")]
    pub(crate) source: String,
    #[command(flatten)]
    pub(crate) kafka: KafkaArguments,
}

#[derive(Debug, clap::Args)]
pub(crate) struct GenerateArguments {
    /// Number of works (about 5.4 events each).
    #[arg(long, default_value_t = 1_000)]
    pub(crate) works: usize,
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
    /// Output directory.
    #[arg(long)]
    pub(crate) out: PathBuf,
    /// Events per segment (a segment is up to one file per topic).
    #[arg(long, default_value_t = 20_000)]
    pub(crate) events_per_segment: usize,
    /// Generate the sandbox fixtures instead of a production-like stream.
    #[arg(long)]
    pub(crate) sandbox: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tuning(arguments: &[&str]) -> RunTuning {
        let command = [&["projector"], arguments, &["--source", "file:///events"]].concat();
        match Cli::try_parse_from(command).expect("parses").command {
            Command::Run(run) => run.tuning,
            Command::Rebuild(rebuild) => rebuild.tuning,
            other => panic!("not a projection: {other:?}"),
        }
    }

    #[test]
    fn a_rebuild_defers_rendering_longer_than_a_run_unless_told_otherwise() {
        let wait = |arguments: &[&str], rebuild| {
            tuning(arguments).run_options(rebuild, Path::new("data")).render_deferral.max_wait
        };
        assert_eq!(wait(&["run"], false), RenderDeferral::DEFAULT.max_wait);
        assert_eq!(wait(&["rebuild", "--into", "2"], true), RenderDeferral::REBUILD.max_wait);
        assert!(RenderDeferral::REBUILD.max_wait > RenderDeferral::DEFAULT.max_wait);
        let told = ["rebuild", "--into", "2", "--render-deferral-max-seconds", "45"];
        assert_eq!(wait(&told, true), Duration::from_secs(45));
        let documents = tuning(&["run", "--render-deferral-max-documents", "7"])
            .run_options(false, Path::new("data"))
            .render_deferral;
        assert_eq!((documents.max_documents, documents.max_wait), (7, RenderDeferral::DEFAULT.max_wait));
    }

    #[test]
    fn a_catch_up_spills_into_the_data_directory_unless_told_otherwise() {
        let data = Path::new("/srv/lcc");
        let options = tuning(&["run"]).run_options(false, data);
        assert_eq!(options.spill_directory, data.join("catch-up-spill"));
        assert_eq!(options.catch_up_run_events, RUN_EVENTS);
        let told = tuning(&["rebuild", "--into", "2", "--spill-dir", "/fast/spill", "--catch-up-run-events", "5000"])
            .run_options(true, data);
        assert_eq!((told.spill_directory.as_path(), told.catch_up_run_events), (Path::new("/fast/spill"), 5_000));
        let refused = Cli::try_parse_from(["projector", "run", "--source", "file:///e", "--catch-up-run-events", "0"]);
        assert!(refused.is_err(), "a run of no events is refused");
    }
}
