//! A run's two ends outside the store: the source its `--source` address
//! names (`file://DIRECTORY` or `kafka://HOST:PORT[,…]`), started, and the
//! dead-letter sink that belongs to it (a file beside the store for files,
//! the dead-letter topic for Kafka). Both binaries that project start their
//! source here, so a file source and a Kafka source are set up once.
//!
//! It must not project or write the store: the loop (`runner`) does, over
//! what this hands it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};

use crate::contract::Contract;
use crate::dead_letter::topic::DeadLetterTopic;
use crate::dead_letter::{DeadLetterFile, DeadLetterSink};
use crate::progress::PartitionBoard;
use crate::source::SourceFeed;
use crate::source::file::FileSource;
use crate::source::kafka::KafkaSettings;
use crate::source::kafka::consumer::{ConsumerOptions, ConsumerShared, start_consumer};
use crate::source::kafka::wire::SchemaIds;

/// How a source is set up, whichever its address names.
#[derive(Debug, Clone)]
pub struct SourceOptions {
    /// Events waiting in the channel to the loop (about one batch).
    pub channel_capacity: usize,
    /// Where a file source's dead-letter file goes (one file per source directory).
    pub dead_letter_dir: PathBuf,
    /// How often a file source that follows its directory looks for new files.
    pub poll_interval: Duration,
    pub kafka: KafkaOptions,
}

/// What a Kafka source needs besides its brokers.
#[derive(Debug, Clone)]
pub struct KafkaOptions {
    pub group_id: String,
    pub topic_prefix: String,
    pub dead_letter_topic: String,
    /// Where Confluent-framed values' schema ids are resolved.
    pub schema_ids: SchemaIds,
    /// Further writer schemas of single-object values.
    pub writer_schema_dir: Option<PathBuf>,
    /// A partition with lag and no progress this long is stalled.
    pub stall_after: Duration,
}

impl SourceOptions {
    /// Options that work on one machine, with dead-letter files in `dead_letter_dir`.
    pub fn in_directory(dead_letter_dir: PathBuf) -> SourceOptions {
        SourceOptions {
            channel_capacity: 30_000,
            dead_letter_dir,
            poll_interval: Duration::from_secs(1),
            kafka: KafkaOptions {
                group_id: "rights-projector".into(),
                topic_prefix: String::new(),
                dead_letter_topic: "rights-projector.dead-letters".into(),
                schema_ids: SchemaIds::Unavailable,
                writer_schema_dir: None,
                stall_after: Duration::from_secs(60),
            },
        }
    }
}

/// A started source with its dead-letter sink.
pub struct SourceAndSink {
    pub feed: SourceFeed,
    pub dead_letters: Box<dyn DeadLetterSink>,
    /// The consumer's shared state (lag, reachability, offsets to commit), for a Kafka source.
    pub kafka: Option<Arc<ConsumerShared>>,
}

impl std::fmt::Debug for SourceAndSink {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.debug_struct("SourceAndSink").field("feed", &self.feed).finish_non_exhaustive()
    }
}

/// Starts the source `address` names, with its dead-letter sink.
pub fn start_source(address: &str, contract: Arc<Contract>, options: &SourceOptions) -> anyhow::Result<SourceAndSink> {
    if let Some(directory) = address.strip_prefix("file://") {
        let source = FileSource::new(&PathBuf::from(directory), contract);
        source.files().context("failed to read the source directory")?;
        let file_name: String = source
            .source_id()
            .chars()
            .map(|character| if character.is_ascii_alphanumeric() { character } else { '_' })
            .collect();
        let dead_letters = DeadLetterFile::open(&options.dead_letter_dir.join(format!("{file_name}.jsonl")))
            .context("failed to open the dead-letter file")?;
        tracing::info!(dead_letters = %dead_letters.path().display(), "dead letters go to a file");
        let feed = source.start(options.channel_capacity, options.poll_interval)?;
        return Ok(SourceAndSink { feed, dead_letters: Box::new(dead_letters), kafka: None });
    }
    let Some(servers) = KafkaSettings::bootstrap_servers_of(address) else {
        bail!("unsupported source {address:?}: expected file://DIRECTORY or kafka://HOST:PORT");
    };
    let kafka = &options.kafka;
    let settings = KafkaSettings {
        bootstrap_servers: servers.to_owned(),
        topic_prefix: kafka.topic_prefix.clone(),
        group_id: kafka.group_id.clone(),
        dead_letter_topic: kafka.dead_letter_topic.clone(),
    };
    let shared = Arc::new(ConsumerShared::new(Arc::new(PartitionBoard::new(kafka.stall_after))));
    let consumer_options = ConsumerOptions {
        schema_ids: kafka.schema_ids.clone(),
        writer_schema_dir: kafka.writer_schema_dir.clone(),
        channel_capacity: options.channel_capacity,
    };
    let dead_letters = DeadLetterTopic::new(&settings)?;
    tracing::info!(group = %settings.group_id, dead_letter_topic = %settings.dead_letter_topic, "consuming from Kafka");
    let feed = start_consumer(settings, contract, consumer_options, Arc::clone(&shared))?;
    Ok(SourceAndSink { feed, dead_letters: Box::new(dead_letters), kafka: Some(shared) })
}
