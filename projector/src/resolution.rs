//! Writer-to-reader schema resolution for one topic.
//!
//! When the writer schema equals the contract, values pass through untouched
//! (the common, fast case). Otherwise the payload union is resolved by record
//! name, as the Avro specification requires: apache-avro's value resolution
//! picks the first union branch that the value fits structurally, which for a
//! union of records can choose the wrong event type (every writer record fits
//! `WorkAmended`, whose fields all have defaults). Inside the matched branch,
//! fields, defaults, enums and nested unions resolve by Avro's usual rules.

use apache_avro::Schema;
use apache_avro::types::Value;

use crate::contract::{Contract, Topic, branch_names};

/// Resolves values written with one writer schema of one topic.
#[derive(Debug, Clone)]
pub struct Resolver {
    topic: Topic,
    evolution: Option<Evolution>,
}

#[derive(Debug, Clone)]
struct Evolution {
    reader: Schema,
    reader_envelope: Schema,
    writer_branches: Vec<String>,
    reader_branches: Vec<(String, Schema)>,
}

impl Resolver {
    /// Prepares resolution of values written with `writer` on `topic`.
    pub fn new(contract: &Contract, topic: Topic, writer: &Schema) -> Result<Resolver, String> {
        if contract.is_reader_schema(topic, writer) {
            return Ok(Resolver { topic, evolution: None });
        }
        let reader = contract.reader_schema(topic).clone();
        let (reader_envelope, reader_union) =
            envelope_and_payload(&reader).ok_or("the contract has no envelope and payload")?;
        let (_, writer_union) = envelope_and_payload(writer)
            .ok_or_else(|| format!("the writer schema of {} has no payload union", topic.name()))?;
        let Schema::Union(writer_union) = writer_union else {
            return Err("the writer payload is not a union".into());
        };
        let Schema::Union(reader_union) = reader_union else {
            return Err("the contract payload is not a union".into());
        };
        let reader_branches =
            branch_names(reader_union).into_iter().zip(reader_union.variants().iter().cloned()).collect();
        Ok(Resolver {
            topic,
            evolution: Some(Evolution {
                reader_envelope: reader_envelope.clone(),
                writer_branches: branch_names(writer_union),
                reader_branches,
                reader: reader.clone(),
            }),
        })
    }

    /// The value in the shape of the contract's reader schema.
    pub fn resolve(&self, value: Value) -> Result<Value, String> {
        let Some(evolution) = &self.evolution else {
            return Ok(value);
        };
        let Value::Record(fields) = value else {
            return Err("the event is not a record".into());
        };
        let mut envelope = None;
        let mut payload = None;
        for (name, field) in fields {
            match name.as_str() {
                "envelope" => envelope = Some(field),
                "payload" => payload = Some(field),
                _ => {}
            }
        }
        let envelope = envelope
            .ok_or("the event has no envelope")?
            .resolve_schemata(&evolution.reader_envelope, vec![&evolution.reader])
            .map_err(|error| format!("envelope does not resolve against the contract: {error}"))?;
        let Some(Value::Union(writer_index, record)) = payload else {
            return Err("the payload is not a union".into());
        };
        let name = evolution
            .writer_branches
            .get(writer_index as usize)
            .ok_or_else(|| format!("payload branch {writer_index} is outside the writer schema"))?;
        let (reader_index, reader_branch) = evolution
            .reader_branches
            .iter()
            .enumerate()
            .find(|(_, (candidate, _))| candidate == name)
            .map(|(index, (_, schema))| (index, schema))
            .ok_or_else(|| {
                format!("event type {name} is not part of the {} contract this projector reads", self.topic.name())
            })?;
        let record = record
            .resolve_schemata(reader_branch, vec![&evolution.reader])
            .map_err(|error| format!("{name} does not resolve against the contract: {error}"))?;
        Ok(Value::Record(vec![
            ("envelope".to_owned(), envelope),
            ("payload".to_owned(), Value::Union(reader_index as u32, Box::new(record))),
        ]))
    }
}

/// The schemas of the `envelope` and `payload` fields of an event record.
fn envelope_and_payload(schema: &Schema) -> Option<(&Schema, &Schema)> {
    let Schema::Record(record) = schema else {
        return None;
    };
    let field = |name: &str| record.fields.iter().find(|field| field.name == name).map(|field| &field.schema);
    Some((field("envelope")?, field("payload")?))
}
