//! The two wire formats of the upstream contract, as Kafka message values:
//!
//! - Avro single-object encoding: `C3 01`, the 8-byte little-endian
//!   CRC-64-AVRO fingerprint of the writer schema's canonical form, then the
//!   datum. Fingerprints resolve against the contract's own schemas and,
//!   optionally, a directory of further writer schemas that is read again
//!   when an unknown fingerprint arrives (so a new upstream schema is picked
//!   up by dropping its file there, without a redeploy).
//! - The Confluent format: `00`, a 4-byte big-endian schema id, then the
//!   datum. Ids resolve through [`super::schema_ids`] (a schema registry or
//!   a local id map); each id is looked up once and cached.
//!
//! The format is told by the first byte, so both can share a topic. A writer
//! schema is resolved against the contract's reader schema by Avro's rules,
//! so an upstream change that adds a field with a default is read as is.
//!
//! This module decodes; it never talks to Kafka and never parks anything. A
//! payload that can never be decoded is a [`WireError::Poison`]; a registry
//! that cannot be reached right now is a [`WireError::Unavailable`], which the
//! caller retries instead of parking the event.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use apache_avro::Schema;
use apache_avro::writer::datum::GenericDatumWriter;
use read_model::clock::Clock;

use super::fingerprint::fingerprint;
use super::schema_ids::SchemaIdLookup;
pub use super::schema_ids::SchemaIds;
use crate::contract::{Contract, Topic};
use crate::datum_codec::DatumCodec;
use crate::events::Event;
use crate::events::decode::{DatumError, decode_datum};
use crate::resolution::Resolver;
use crate::source::{Rejection, accept, event_from_value};

/// The first bytes of an Avro single-object encoded value.
pub const SINGLE_OBJECT_MAGIC: [u8; 2] = [0xC3, 0x01];
/// The first byte of a Confluent-framed value.
pub const CONFLUENT_MAGIC: u8 = 0x00;

/// `value` as a single-object encoded message value written with `schema`,
/// as upstream producers write it (and the fuzz seeds are made).
pub fn encode_single_object(schema: &Schema, value: apache_avro::types::Value) -> Result<Vec<u8>, apache_avro::Error> {
    let mut bytes = SINGLE_OBJECT_MAGIC.to_vec();
    bytes.extend_from_slice(&fingerprint(schema));
    bytes.extend(GenericDatumWriter::builder(schema).build()?.write_value_to_vec(value)?);
    Ok(bytes)
}

/// `value` as a Confluent-framed message value under schema id `id`.
pub fn encode_confluent(
    id: u32,
    schema: &Schema,
    value: apache_avro::types::Value,
) -> Result<Vec<u8>, apache_avro::Error> {
    let mut bytes = vec![CONFLUENT_MAGIC];
    bytes.extend_from_slice(&id.to_be_bytes());
    bytes.extend(GenericDatumWriter::builder(schema).build()?.write_value_to_vec(value)?);
    Ok(bytes)
}

/// Why a value was not decoded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WireError {
    /// The value can never be decoded as it is; park it.
    #[error("{}", .0.reason)]
    Poison(Rejection),
    /// A lookup failed for a reason that may pass (the registry is down); retry.
    #[error("schema lookup unavailable: {0}")]
    Unavailable(String),
}

/// A writer schema known to the decoder, with its resolution to the contract.
#[derive(Debug)]
struct WriterSchema {
    codec: Arc<DatumCodec>,
    topic: Topic,
    resolver: Result<Resolver, String>,
}

/// Decodes message values of both wire formats; caches writer schemas.
#[derive(Debug)]
pub struct WireDecoder {
    contract: Arc<Contract>,
    by_fingerprint: HashMap<[u8; 8], Arc<WriterSchema>>,
    by_schema_id: HashMap<u32, Arc<WriterSchema>>,
    schema_ids: SchemaIdLookup,
    writer_schema_dir: Option<PathBuf>,
    /// When the writer-schema directory was last read; it is read at most once a second.
    writer_schema_dir_read: Option<Instant>,
    /// The time that paces those reads.
    clock: Clock,
}

impl WireDecoder {
    /// A decoder that knows the contract's schemas, plus those under `writer_schema_dir`.
    pub fn new(contract: Arc<Contract>, schema_ids: SchemaIds, writer_schema_dir: Option<PathBuf>) -> WireDecoder {
        WireDecoder::with_clock(contract, schema_ids, writer_schema_dir, Clock::system())
    }

    /// [`WireDecoder::new`], with the writer-schema directory's reads paced by `clock`.
    pub fn with_clock(
        contract: Arc<Contract>,
        schema_ids: SchemaIds,
        writer_schema_dir: Option<PathBuf>,
        clock: Clock,
    ) -> WireDecoder {
        let mut by_fingerprint = HashMap::new();
        for topic in Topic::ALL {
            let codec = Arc::clone(contract.datum_codec(topic));
            let writer = WriterSchema { resolver: Resolver::new(&contract, topic, codec.schema()), codec, topic };
            by_fingerprint.insert(fingerprint(writer.codec.schema()), Arc::new(writer));
        }
        let mut decoder = WireDecoder {
            contract,
            by_fingerprint,
            by_schema_id: HashMap::new(),
            schema_ids: SchemaIdLookup::new(schema_ids),
            writer_schema_dir,
            writer_schema_dir_read: None,
            clock,
        };
        decoder.read_writer_schema_dir();
        decoder
    }

    /// Decodes one message value read from `topic`.
    pub fn decode(&mut self, topic: Topic, value: &[u8]) -> Result<Event, WireError> {
        let poison = |reason: String| WireError::Poison(Rejection::unidentified(reason, Some(topic)));
        let (writer, mut datum) = match value {
            [0xC3, 0x01, rest @ ..] => {
                let (fingerprint, datum) = rest
                    .split_first_chunk::<8>()
                    .ok_or_else(|| poison("single-object value shorter than its header".into()))?;
                (
                    self.writer_by_fingerprint(fingerprint).ok_or_else(|| {
                        poison(format!("unknown writer schema fingerprint {}", read_model::hex::lower_hex(fingerprint)))
                    })?,
                    datum,
                )
            }
            [CONFLUENT_MAGIC, rest @ ..] => {
                let (id, datum) = rest
                    .split_first_chunk::<4>()
                    .ok_or_else(|| poison("Confluent value shorter than its header".into()))?;
                (self.writer_by_schema_id(topic, u32::from_be_bytes(*id))?, datum)
            }
            [] => return Err(poison("empty message value".into())),
            [first, ..] => return Err(poison(format!("unknown wire format (first byte {first:#04x})"))),
        };
        if writer.topic != topic {
            return Err(poison(format!(
                "the writer schema belongs to topic {}, not {}",
                writer.topic.name(),
                topic.name()
            )));
        }
        let resolver = writer.resolver.as_ref().map_err(|error| poison(error.clone()))?;
        let undecodable = |error: DatumError| poison(format!("undecodable datum: {error}"));
        let all_read = |datum: &[u8]| match datum {
            [] => Ok(()),
            left => Err(poison(format!("{} bytes left after the datum", left.len()))),
        };
        if resolver.reads_directly() {
            let decoded = decode_datum(topic, &writer.codec, &mut datum).map_err(undecodable)?;
            all_read(datum)?;
            return accept(topic, resolver, decoded).map_err(WireError::Poison);
        }
        let decoded = writer.codec.read_value(&mut datum).map_err(|error| undecodable(error.into()))?;
        all_read(datum)?;
        event_from_value(&self.contract, topic, resolver, decoded).map_err(WireError::Poison)
    }

    fn writer_by_fingerprint(&mut self, fingerprint: &[u8; 8]) -> Option<Arc<WriterSchema>> {
        if let Some(writer) = self.by_fingerprint.get(fingerprint) {
            return Some(Arc::clone(writer));
        }
        let recently = self.writer_schema_dir_read.is_some_and(|at| self.clock.since(at) < Duration::from_secs(1));
        if !recently {
            self.read_writer_schema_dir();
        }
        self.by_fingerprint.get(fingerprint).cloned()
    }

    /// Adds every schema file of the writer-schema directory; unreadable files are logged and left out.
    fn read_writer_schema_dir(&mut self) {
        let Some(directory) = self.writer_schema_dir.clone() else { return };
        self.writer_schema_dir_read = Some(self.clock.now());
        let entries = match std::fs::read_dir(&directory) {
            Ok(entries) => entries,
            Err(error) => {
                tracing::warn!(directory = %directory.display(), %error, "cannot read the writer-schema directory");
                return;
            }
        };
        for path in entries.filter_map(Result::ok).map(|entry| entry.path()) {
            if path.extension().is_none_or(|extension| extension != "avsc") {
                continue;
            }
            match self.writer_from_file(&path) {
                Ok(writer) => {
                    self.by_fingerprint.entry(fingerprint(writer.codec.schema())).or_insert_with(|| Arc::new(writer));
                }
                Err(reason) => tracing::warn!(file = %path.display(), %reason, "writer schema left out"),
            }
        }
    }

    fn writer_from_file(&self, path: &Path) -> Result<WriterSchema, String> {
        let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
        self.writer_from_text(&text)
    }

    fn writer_from_text(&self, text: &str) -> Result<WriterSchema, String> {
        let schema = Schema::parse_str(text).map_err(|error| format!("not an Avro schema: {error}"))?;
        let topic = self.contract.topic_of(&schema).ok_or("the schema names no topic of the contract")?;
        let resolver = Resolver::new(&self.contract, topic, &schema);
        let codec = DatumCodec::new(schema).map_err(|error| format!("not a usable Avro schema: {error}"))?;
        Ok(WriterSchema { codec: Arc::new(codec), topic, resolver })
    }

    fn writer_by_schema_id(&mut self, topic: Topic, id: u32) -> Result<Arc<WriterSchema>, WireError> {
        if let Some(writer) = self.by_schema_id.get(&id) {
            return Ok(Arc::clone(writer));
        }
        let poison = |reason: String| WireError::Poison(Rejection::unidentified(reason, Some(topic)));
        let text = self.schema_ids.schema_text(id).map_err(|unavailable| WireError::Unavailable(unavailable.0))?;
        let text = text.map_err(poison)?;
        let writer =
            Arc::new(self.writer_from_text(&text).map_err(|reason| poison(format!("schema id {id}: {reason}")))?);
        self.by_schema_id.insert(id, Arc::clone(&writer));
        Ok(writer)
    }
}

#[cfg(test)]
mod tests {
    use apache_avro::types::Value;

    use super::*;

    fn contract() -> Arc<Contract> {
        Arc::new(Contract::load().expect("contract"))
    }

    /// The first works event of the sandbox fixtures, with its writer schema.
    fn works_value() -> (Schema, Value) {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/fixtures/sandbox/000001-works.avro");
        let reader = apache_avro::Reader::new(std::fs::File::open(path).expect("fixture")).expect("container");
        let schema = reader.writer_schema().clone();
        let value = reader.into_iter().next().expect("one record").expect("readable");
        (schema, value)
    }

    fn single_object(schema: &Schema, value: Value) -> Vec<u8> {
        encode_single_object(schema, value).expect("encode")
    }

    fn confluent(id: u32, schema: &Schema, value: Value) -> Vec<u8> {
        encode_confluent(id, schema, value).expect("encode")
    }

    /// The works schema with a new top-level field that has a default, and the value to match.
    fn evolved_works() -> (Schema, Value) {
        let mut json: serde_json::Value = serde_json::from_str(Topic::Works.schema_text()).expect("json");
        json["fields"].as_array_mut().expect("fields").push(serde_json::json!({
            "name": "traceId", "type": "string", "default": "", "doc": "A newer upstream field."
        }));
        let (_, value) = works_value();
        let Value::Record(mut fields) = value else { panic!("a record") };
        fields.push(("traceId".into(), Value::String("t-1".into())));
        (Schema::parse(&json).expect("evolved schema"), Value::Record(fields))
    }

    fn poison_reason(result: Result<Event, WireError>) -> String {
        match result {
            Err(WireError::Poison(rejection)) => rejection.reason,
            other => panic!("expected poison, got {other:?}"),
        }
    }

    #[test]
    fn a_single_object_value_of_the_contract_schema_decodes_to_the_event_of_the_file() {
        let (schema, value) = works_value();
        let contract = contract();
        let expected = event_from_value(
            &contract,
            Topic::Works,
            &Resolver::new(&contract, Topic::Works, &schema).expect("resolver"),
            value.clone(),
        )
        .expect("event");
        let mut decoder = WireDecoder::new(contract, SchemaIds::Unavailable, None);
        let event = decoder.decode(Topic::Works, &single_object(&schema, value)).expect("decodes");
        assert_eq!(event, expected);
        assert!(event.envelope.aggregate_id.starts_with("SANDBOX-"));
    }

    #[test]
    fn a_confluent_value_of_an_evolved_schema_resolves_through_the_local_id_map() {
        let (schema, value) = evolved_works();
        let directory = tempfile::tempdir().expect("tempdir");
        std::fs::write(directory.path().join("works-v2.avsc"), schema.canonical_form()).expect("schema file");
        std::fs::write(directory.path().join("ids.json"), r#"{"42": "works-v2.avsc"}"#).expect("map");
        let mut decoder = WireDecoder::new(contract(), SchemaIds::LocalMap(directory.path().join("ids.json")), None);
        let event = decoder.decode(Topic::Works, &confluent(42, &schema, value.clone())).expect("decodes");
        let (_, plain) = works_value();
        let mut plain_decoder = WireDecoder::new(contract(), SchemaIds::Unavailable, None);
        let (reader, _) = works_value();
        assert_eq!(event, plain_decoder.decode(Topic::Works, &single_object(&reader, plain)).expect("plain"));
        let reason = poison_reason(decoder.decode(Topic::Works, &confluent(43, &schema, value)));
        assert_eq!(reason, "schema id 43 is not in the local id map");
    }

    #[test]
    fn a_new_writer_schema_dropped_into_the_directory_is_picked_up_without_a_restart() {
        let (schema, value) = evolved_works();
        let directory = tempfile::tempdir().expect("tempdir");
        let clock = Clock::manual();
        let mut decoder = WireDecoder::with_clock(
            contract(),
            SchemaIds::Unavailable,
            Some(directory.path().to_path_buf()),
            clock.clone(),
        );
        let bytes = single_object(&schema, value);
        assert!(poison_reason(decoder.decode(Topic::Works, &bytes)).starts_with("unknown writer schema fingerprint"));
        std::fs::write(directory.path().join("works-v2.avsc"), schema.canonical_form()).expect("schema file");
        // The directory is read at most once a second: not yet, then once the second has passed.
        clock.advance(Duration::from_millis(999));
        assert!(poison_reason(decoder.decode(Topic::Works, &bytes)).starts_with("unknown writer schema fingerprint"));
        clock.advance(Duration::from_millis(1));
        let event = decoder.decode(Topic::Works, &bytes).expect("decodes once the schema is there");
        assert_eq!(event.topic, Topic::Works);
    }

    #[test]
    fn malformed_values_are_poison_with_a_precise_reason() {
        let (schema, value) = works_value();
        let good = single_object(&schema, value.clone());
        let mut decoder = WireDecoder::new(contract(), SchemaIds::Unavailable, None);
        assert_eq!(poison_reason(decoder.decode(Topic::Works, &[])), "empty message value");
        assert_eq!(poison_reason(decoder.decode(Topic::Works, b"{}")), "unknown wire format (first byte 0x7b)");
        assert_eq!(
            poison_reason(decoder.decode(Topic::Works, &good[..5])),
            "single-object value shorter than its header"
        );
        assert!(poison_reason(decoder.decode(Topic::Works, &good[..good.len() - 3])).starts_with("undecodable datum"));
        let mut trailing = good.clone();
        trailing.push(0);
        assert_eq!(poison_reason(decoder.decode(Topic::Works, &trailing)), "1 bytes left after the datum");
        assert_eq!(
            poison_reason(decoder.decode(Topic::Rights, &good)),
            "the writer schema belongs to topic works, not rights"
        );
        assert_eq!(
            poison_reason(decoder.decode(Topic::Works, &confluent(1, &schema, value))),
            "schema id 1: no schema registry or id map is configured"
        );
    }

    #[test]
    fn an_unreachable_registry_is_unavailable_not_poison() {
        let (schema, value) = works_value();
        // A port that was just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port();
        let mut decoder = WireDecoder::new(contract(), SchemaIds::Registry(format!("http://127.0.0.1:{port}")), None);
        let result = decoder.decode(Topic::Works, &confluent(7, &schema, value));
        assert!(matches!(result, Err(WireError::Unavailable(_))), "{result:?}");
    }
}
