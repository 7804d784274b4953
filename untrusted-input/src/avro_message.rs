//! Kafka message values, as `WireDecoder::decode` reads them: the framing
//! of both wire formats, the Avro datum, its resolution to the contract,
//! decoding into an event and validation.
//!
//! The input's first byte chooses the topic the value was read from; the
//! rest is the value. Confluent schema ids 1 to 6 name the contract's own
//! schemas through a local id map, so both formats are decoded.

use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use apache_avro::Reader;
use projector::contract::{Contract, Topic};
use projector::generate::{GenerateOptions, generate};
use projector::source::kafka::wire::{SchemaIds, WireDecoder, WireError, encode_confluent, encode_single_object};

use crate::events::{assert_accepted, assert_parked};
use crate::repository;

/// The decoder, with the directory of its schema id map (kept while it lives).
struct Decoding {
    decoder: WireDecoder,
    _schema_ids: tempfile::TempDir,
}

fn decoding() -> &'static Mutex<Decoding> {
    static DECODING: OnceLock<Mutex<Decoding>> = OnceLock::new();
    DECODING.get_or_init(|| {
        let schema_ids = tempfile::tempdir().expect("a directory for the schema id map");
        let map: serde_json::Map<String, serde_json::Value> = Topic::ALL
            .iter()
            .enumerate()
            .map(|(index, topic)| {
                let file = repository::root().join(format!("schemas/avro/{}.avsc", topic.name()));
                ((index + 1).to_string(), file.display().to_string().into())
            })
            .collect();
        let map_file = schema_ids.path().join("ids.json");
        std::fs::write(&map_file, serde_json::Value::Object(map).to_string()).expect("the schema id map");
        let contract = Arc::new(Contract::load().expect("the contract"));
        let decoder = WireDecoder::new(contract, SchemaIds::LocalMap(map_file), None);
        Mutex::new(Decoding { decoder, _schema_ids: schema_ids })
    })
}

fn topic_of_byte(byte: u8) -> Topic {
    Topic::ALL[usize::from(byte) % Topic::ALL.len()]
}

fn byte_of_topic(topic: Topic) -> u8 {
    Topic::ALL.iter().position(|candidate| *candidate == topic).and_then(|index| u8::try_from(index).ok()).unwrap_or(0)
}

/// Decoding never panics; a value is either an event that validates again
/// unchanged or parked with a reason; with a local id map, no value is
/// "unavailable" (which would stop the stream to retry instead of parking).
pub fn check(input: &[u8]) {
    let Some((&topic_byte, value)) = input.split_first() else { return };
    let topic = topic_of_byte(topic_byte);
    let mut decoding = decoding().lock().unwrap_or_else(PoisonError::into_inner);
    match decoding.decoder.decode(topic, value) {
        Ok(event) => assert_accepted(&event, Some(topic)),
        Err(WireError::Poison(rejection)) => {
            assert_parked(&rejection);
            assert!(rejection.topic.is_none_or(|parked| parked == topic), "parked under another topic: {rejection:?}");
        }
        Err(WireError::Unavailable(reason)) => panic!("a value was held back as unavailable, not parked: {reason}"),
    }
}

/// Every event of the sandbox fixtures and of a small generated registry,
/// in both wire formats.
pub fn seeds() -> Vec<Vec<u8>> {
    let generated = tempfile::tempdir().expect("a directory for generated events");
    generate(&GenerateOptions { works: 25, seed: 7, events_per_segment: 1_000, sandbox: false }, generated.path())
        .expect("generated events");
    let contract = Contract::load().expect("the contract");
    let mut seeds = Vec::new();
    for directory in [repository::sandbox_events(), generated.path().to_path_buf()] {
        let files = repository::avro_files_in(&directory);
        for file in files {
            let reader = Reader::new(std::fs::File::open(&file).expect("an event file")).expect("a container file");
            let schema = reader.writer_schema().clone();
            let Some(topic) = contract.topic_of(&schema) else { continue };
            let schema_id = u32::from(byte_of_topic(topic)) + 1;
            for (index, value) in reader.filter_map(Result::ok).enumerate() {
                let value = if index % 4 == 3 {
                    encode_confluent(schema_id, &schema, value)
                } else {
                    encode_single_object(&schema, value)
                };
                let mut seed = vec![byte_of_topic(topic)];
                seed.extend(value.expect("a fixture event encodes"));
                seeds.push(seed);
            }
        }
    }
    seeds
}
