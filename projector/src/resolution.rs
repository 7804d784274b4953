//! Writer-to-reader schema resolution for one topic.
//!
//! When the writer schema equals the contract, values pass through untouched
//! (the common, fast case). Otherwise the payload union is resolved by record
//! name, as the Avro specification requires: apache-avro's value resolution
//! picks the first union branch that the value fits structurally, which for a
//! union of records can choose the wrong event type (every writer record fits
//! `WorkAmended`, whose fields all have defaults). Inside the matched branch,
//! fields, defaults, enums and nested unions resolve by Avro's usual rules.
//!
//! Resolving a value with apache-avro walks the whole reader schema first,
//! which costs more than decoding the event. A newer writer usually
//! changes one event type, or adds one, and writes every other part exactly
//! as the contract reads it, so the parts that read unchanged are found once,
//! when the resolver is built, and their values pass through as written.

use std::collections::HashSet;

use apache_avro::Schema;
use apache_avro::schema::{Name, NamesRef, RecordSchema, ResolvedSchema};
use apache_avro::types::Value;

use crate::canonical_form::canonical_form;
use crate::contract::{Contract, Topic, branch_names};

/// Resolves values written with one writer schema of one topic.
#[derive(Debug, Clone)]
pub struct Resolver {
    topic: Topic,
    evolution: Option<Evolution>,
    /// Values decode straight from the writer's bytes (see [`Resolver::reads_directly`]).
    direct: bool,
}

#[derive(Debug, Clone)]
struct Evolution {
    reader: Schema,
    /// The reader's envelope, or `None` when the writer's reads unchanged.
    reader_envelope: Option<Schema>,
    writer_branches: Vec<WriterBranch>,
    reader_branches: Vec<(String, Schema)>,
}

/// One branch of the writer's payload union.
#[derive(Debug, Clone)]
struct WriterBranch {
    name: String,
    /// The branch is the reader's branch of the same name, named types it refers to included.
    reads_unchanged: bool,
}

impl Resolver {
    /// Prepares resolution of values written with `writer` on `topic`.
    pub fn new(contract: &Contract, topic: Topic, writer: &Schema) -> Result<Resolver, String> {
        if contract.is_reader_schema(topic, writer) {
            return Ok(Resolver { topic, evolution: None, direct: true });
        }
        let reader = contract.reader_schema(topic).clone();
        let (_, reader_envelope, reader_union) =
            envelope_and_payload(&reader).ok_or("the contract has no envelope and payload")?;
        let (writer_record, writer_envelope, writer_union) = envelope_and_payload(writer)
            .ok_or_else(|| format!("the writer schema of {} has no envelope and payload", topic.name()))?;
        let Schema::Union(writer_union) = writer_union else {
            return Err("the writer payload is not a union".into());
        };
        let Schema::Union(reader_union) = reader_union else {
            return Err("the contract payload is not a union".into());
        };
        let writer_names = ResolvedSchema::try_from(writer).map_err(|error| error.to_string())?;
        let reader_names = ResolvedSchema::try_from(&reader).map_err(|error| error.to_string())?;
        let unchanged = |writer_part: &Schema, reader_part: &Schema| {
            reads_unchanged(writer_part, reader_part, writer_names.get_names(), reader_names.get_names())
        };
        let reader_envelope = (!unchanged(writer_envelope, reader_envelope)).then(|| reader_envelope.clone());
        let reader_branches: Vec<(String, Schema)> =
            branch_names(reader_union).into_iter().zip(reader_union.variants().iter().cloned()).collect();
        let writer_branches: Vec<WriterBranch> = branch_names(writer_union)
            .into_iter()
            .zip(writer_union.variants())
            .map(|(name, variant)| {
                let reader_branch = reader_branches.iter().find(|(reader_name, _)| *reader_name == name);
                let reads_unchanged =
                    reader_branch.is_some_and(|(_, reader_variant)| unchanged(variant, reader_variant));
                WriterBranch { name, reads_unchanged }
            })
            .collect();
        let direct = writer_record.fields.iter().map(|field| field.name.as_str()).eq(["envelope", "payload"])
            && reader_envelope.is_none()
            && writer_branches.iter().enumerate().all(|(index, branch)| {
                match reader_branches.iter().position(|(reader_name, _)| *reader_name == branch.name) {
                    Some(reader_index) => reader_index == index && branch.reads_unchanged,
                    None => true,
                }
            });
        let evolution = Evolution { reader_envelope, writer_branches, reader_branches, reader };
        Ok(Resolver { topic, evolution: Some(evolution), direct })
    }

    /// Whether values decode straight from the writer's bytes into the
    /// contract's record types: the writer schema is the contract's own, or
    /// differs from it only by payload branches the contract does not have
    /// (a newer event type), every other part reading unchanged and each
    /// branch of the contract at its own place in the union. A value of a
    /// branch outside the contract is then rejected with
    /// [`Resolver::outside_contract`].
    pub fn reads_directly(&self) -> bool {
        self.direct
    }

    /// Why a value of the writer's payload branch `index` is rejected, when
    /// that branch is not part of the contract.
    pub fn outside_contract(&self, index: u32) -> String {
        let name = self
            .evolution
            .as_ref()
            .and_then(|evolution| evolution.writer_branches.get(index as usize))
            .map_or_else(|| format!("#{index}"), |branch| branch.name.clone());
        self.not_in_contract(&name)
    }

    fn not_in_contract(&self, name: &str) -> String {
        format!("event type {name} is not part of the {} contract this projector reads", self.topic.name())
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
        let envelope = envelope.ok_or("the event has no envelope")?;
        let envelope = match &evolution.reader_envelope {
            None => envelope,
            Some(reader_envelope) => envelope
                .resolve_schemata(reader_envelope, vec![&evolution.reader])
                .map_err(|error| format!("envelope does not resolve against the contract: {error}"))?,
        };
        let Some(Value::Union(writer_index, record)) = payload else {
            return Err("the payload is not a union".into());
        };
        let branch = evolution
            .writer_branches
            .get(writer_index as usize)
            .ok_or_else(|| format!("payload branch {writer_index} is outside the writer schema"))?;
        let name = &branch.name;
        let (reader_index, reader_branch) = evolution
            .reader_branches
            .iter()
            .enumerate()
            .find(|(_, (candidate, _))| candidate == name)
            .map(|(index, (_, schema))| (index, schema))
            .ok_or_else(|| self.not_in_contract(name))?;
        let record = if branch.reads_unchanged {
            *record
        } else {
            record
                .resolve_schemata(reader_branch, vec![&evolution.reader])
                .map_err(|error| format!("{name} does not resolve against the contract: {error}"))?
        };
        Ok(Value::Record(vec![
            ("envelope".to_owned(), envelope),
            ("payload".to_owned(), Value::Union(reader_index as u32, Box::new(record))),
        ]))
    }
}

/// An event record, with the schemas of its `envelope` and `payload` fields.
fn envelope_and_payload(schema: &Schema) -> Option<(&RecordSchema, &Schema, &Schema)> {
    let Schema::Record(record) = schema else {
        return None;
    };
    let field = |name: &str| record.fields.iter().find(|field| field.name == name).map(|field| &field.schema);
    Some((record, field("envelope")?, field("payload")?))
}

/// Whether values written with `writer` read as `reader` with nothing to
/// resolve: both have the same canonical form, and so does every named type
/// they refer to by name, on the writer's side and on the reader's.
fn reads_unchanged(writer: &Schema, reader: &Schema, writer_names: &NamesRef<'_>, reader_names: &NamesRef<'_>) -> bool {
    let mut pending = vec![(writer, reader)];
    let mut compared: HashSet<&Name> = HashSet::new();
    while let Some((writer, reader)) = pending.pop() {
        if canonical_form(writer) != canonical_form(reader) {
            return false;
        }
        let mut references = Vec::new();
        named_references(writer, &mut references);
        for name in references {
            if !compared.insert(name) {
                continue;
            }
            match (writer_names.get(name), reader_names.get(name)) {
                (Some(writer_definition), Some(reader_definition)) => {
                    pending.push((writer_definition, reader_definition))
                }
                _ => return false,
            }
        }
    }
    true
}

/// The named types `schema` refers to by name (not those it defines inline).
fn named_references<'s>(schema: &'s Schema, references: &mut Vec<&'s Name>) {
    match schema {
        Schema::Ref { name } => references.push(name),
        Schema::Record(record) => record.fields.iter().for_each(|field| named_references(&field.schema, references)),
        Schema::Array(array) => named_references(&array.items, references),
        Schema::Map(map) => named_references(&map.types, references),
        Schema::Union(union) => union.variants().iter().for_each(|variant| named_references(variant, references)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The works schema with `change` applied to its JSON.
    fn works_schema_with(change: impl FnOnce(&mut serde_json::Value)) -> Schema {
        let mut json: serde_json::Value = serde_json::from_str(Topic::Works.schema_text()).expect("works schema");
        change(&mut json);
        Schema::parse(&json).expect("changed schema parses")
    }

    /// Which writer branches (by name) and whether the envelope read unchanged.
    fn unchanged_parts(writer: &Schema) -> (bool, Vec<(String, bool)>) {
        let resolver = Resolver::new(&Contract::load().expect("contract"), Topic::Works, writer).expect("resolver");
        let evolution = resolver.evolution.expect("the writer differs from the contract");
        let branches = evolution.writer_branches.into_iter().map(|branch| (branch.name, branch.reads_unchanged));
        (evolution.reader_envelope.is_none(), branches.collect())
    }

    #[test]
    fn a_writer_that_only_adds_an_event_type_passes_every_other_part_through() {
        let writer = crate::generate::future_works_schema().expect("future schema");
        let (envelope_unchanged, branches) = unchanged_parts(&writer);
        assert!(envelope_unchanged);
        let expected = [("WorkRegistered", true), ("WorkAmended", true), ("WorkPublished", true)]
            .into_iter()
            .chain([("WorkWithdrawn", true), ("WorkArchived", false)])
            .map(|(name, unchanged)| (name.to_owned(), unchanged))
            .collect::<Vec<_>>();
        assert_eq!(branches, expected);
    }

    #[test]
    fn a_changed_named_type_changes_every_branch_that_refers_to_it() {
        // WorkType is defined inside WorkRegistered and referred to by name from WorkAmended.
        let writer = works_schema_with(|json| {
            let work_type = &mut json["fields"][1]["type"][0]["fields"]
                .as_array_mut()
                .expect("fields")
                .iter_mut()
                .find(|field| field["name"] == "workType")
                .expect("workType")["type"];
            work_type["symbols"].as_array_mut().expect("symbols").push("PODCAST".into());
        });
        let (envelope_unchanged, branches) = unchanged_parts(&writer);
        assert!(envelope_unchanged);
        let unchanged: Vec<bool> = branches.iter().map(|(_, unchanged)| *unchanged).collect();
        assert_eq!(unchanged, [false, false, true, true], "{branches:?}");
    }

    #[test]
    fn a_value_of_an_unchanged_branch_is_kept_and_one_of_an_unknown_type_refused() {
        let writer = crate::generate::future_works_schema().expect("future schema");
        let resolver = Resolver::new(&Contract::load().expect("contract"), Topic::Works, &writer).expect("resolver");
        let envelope = Value::Record(vec![
            ("eventId".into(), Value::String("e-1".into())),
            ("eventType".into(), Value::String("WorkPublished".into())),
            ("aggregateId".into(), Value::String("LCC-1".into())),
            ("aggregateVersion".into(), Value::Long(2)),
            ("occurredAt".into(), Value::TimestampMillis(1)),
            ("recordedAt".into(), Value::TimestampMillis(2)),
            ("sourceSystem".into(), Value::String("registry".into())),
        ]);
        let published = Value::Record(vec![("publishedAt".into(), Value::TimestampMillis(3))]);
        let event = |payload| Value::Record(vec![("envelope".into(), envelope.clone()), ("payload".into(), payload)]);
        let kept = resolver.resolve(event(Value::Union(2, Box::new(published.clone())))).expect("resolves");
        assert_eq!(kept, event(Value::Union(2, Box::new(published.clone()))));
        let contract = Contract::load().expect("contract");
        let reader = contract.reader_schema(Topic::Works);
        let Some((_, _, Schema::Union(reader_union))) = envelope_and_payload(reader) else { panic!("a payload union") };
        let resolved = published.clone().resolve_schemata(&reader_union.variants()[2], vec![reader]).expect("resolves");
        assert_eq!(resolved, published, "passing the branch through gives what resolving it would");
        let archived = Value::Record(vec![("archivedBy".into(), Value::String("robot".into()))]);
        let error = resolver.resolve(event(Value::Union(4, Box::new(archived)))).expect_err("unknown type");
        assert!(error.contains("WorkArchived is not part of the works contract"), "{error}");
    }
}
