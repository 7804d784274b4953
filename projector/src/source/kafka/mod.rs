//! The Kafka source: the six upstream topics, consumed as a consumer group.
//!
//! - [`consumer`] reads and decodes on a thread of its own and hands events to
//!   the projection loop. On every rebalance it first has the loop write what
//!   it was sent (a barrier), so revoked partitions are released fully
//!   written, and assigned partitions start at the store's checkpoints.
//!   Kafka's committed offsets are written after each batch commits and are
//!   advisory: nothing reads them back.
//! - [`wire`] reads the two Kafka wire formats: Avro single-object encoding
//!   (writer schemas named by their [`fingerprint`]) and the Confluent
//!   framing with schema ids.
//!
//! It owns the connection settings, which the dead-letter topic
//! ([`crate::dead_letter::topic`]) shares; it must not apply events.

pub mod consumer;
pub mod fingerprint;
pub mod schema_ids;
pub mod wire;

use rdkafka::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::types::RDKafkaErrorCode;

use crate::contract::Topic;

/// How to reach the broker and which topics to read.
#[derive(Debug, Clone)]
pub struct KafkaSettings {
    /// `HOST:PORT[,HOST:PORT…]`.
    pub bootstrap_servers: String,
    /// Prepended to every topic name (`prod.` gives `prod.works`).
    pub topic_prefix: String,
    /// The consumer group; instances of one group split the partitions.
    pub group_id: String,
    /// Where poison events go.
    pub dead_letter_topic: String,
}

impl KafkaSettings {
    /// The settings of `kafka://HOST:PORT[,HOST:PORT…]`, if `source` is such an address.
    pub fn bootstrap_servers_of(source: &str) -> Option<&str> {
        source.strip_prefix("kafka://").map(|servers| servers.trim_end_matches('/'))
    }

    /// The Kafka topic name of an upstream topic.
    pub fn topic_name(&self, topic: Topic) -> String {
        format!("{}{}", self.topic_prefix, topic.name())
    }

    /// The upstream topic of a Kafka topic name.
    pub fn topic_of(&self, name: &str) -> Option<Topic> {
        name.strip_prefix(&self.topic_prefix).and_then(Topic::from_name)
    }

    /// The id under which checkpoints are stored: one per topic prefix, so
    /// every instance of a group, and a rebuild in another group, share the
    /// meaning of (topic, partition, offset).
    pub fn source_id(&self) -> String {
        format!("kafka:{}", self.topic_prefix)
    }

    /// Settings every client of this source shares.
    pub fn client_config(&self) -> ClientConfig {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &self.bootstrap_servers)
            .set("client.id", "rights-projector")
            // Reconnection backoff stays short so a returning broker is found quickly.
            .set("reconnect.backoff.max.ms", "2000")
            .set("socket.keepalive.enable", "true");
        config
    }
}

/// Whether `error` says a broker cannot be reached: the client reconnects by
/// itself, so a reader waits (within its own deadline) instead of failing.
pub fn is_transport_error(error: &KafkaError) -> bool {
    matches!(
        error.rdkafka_error_code(),
        Some(
            RDKafkaErrorCode::BrokerTransportFailure
                | RDKafkaErrorCode::AllBrokersDown
                | RDKafkaErrorCode::Resolve
                | RDKafkaErrorCode::BrokerNotAvailable
                | RDKafkaErrorCode::NetworkException
        )
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(prefix: &str) -> KafkaSettings {
        KafkaSettings {
            bootstrap_servers: "127.0.0.1:9092".into(),
            topic_prefix: prefix.into(),
            group_id: "g".into(),
            dead_letter_topic: "dead".into(),
        }
    }

    #[test]
    fn topic_names_carry_the_prefix_both_ways() {
        let settings = settings("prod.");
        assert_eq!(settings.topic_name(Topic::Rights), "prod.rights");
        assert_eq!(settings.topic_of("prod.rights"), Some(Topic::Rights));
        assert_eq!(settings.topic_of("rights"), None);
        assert_eq!(settings.topic_of("prod.unknown"), None);
        assert_eq!(settings.source_id(), "kafka:prod.");
    }

    #[test]
    fn the_bootstrap_servers_come_from_the_source_address() {
        assert_eq!(KafkaSettings::bootstrap_servers_of("kafka://a:1,b:2/"), Some("a:1,b:2"));
        assert_eq!(KafkaSettings::bootstrap_servers_of("file:///x"), None);
    }
}
