//! The upstream contract: the six topics and their Avro schemas, exactly as
//! committed under `schemas/avro/`.
//!
//! These schemas are the projector's reader schemas. A writer schema that
//! differs (an older or newer upstream version) is resolved against them by
//! Avro's rules; a writer schema that is identical needs no resolution, which
//! is the common and fast case.

use std::sync::Arc;

use apache_avro::Schema;
use apache_avro::schema::{Name, UnionSchema};

use crate::canonical_form::canonical_form;
use crate::datum_codec::DatumCodec;

/// One upstream topic; each carries the events of one aggregate type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Topic {
    Works,
    Rights,
    Licenses,
    Disputes,
    Certificates,
    Parties,
}

impl Topic {
    pub const ALL: [Topic; 6] =
        [Topic::Works, Topic::Rights, Topic::Licenses, Topic::Disputes, Topic::Certificates, Topic::Parties];

    /// The topic name, also the stem of its schema file.
    pub fn name(self) -> &'static str {
        match self {
            Topic::Works => "works",
            Topic::Rights => "rights",
            Topic::Licenses => "licenses",
            Topic::Disputes => "disputes",
            Topic::Certificates => "certificates",
            Topic::Parties => "parties",
        }
    }

    pub fn from_name(name: &str) -> Option<Topic> {
        Topic::ALL.into_iter().find(|topic| topic.name() == name)
    }

    /// The committed schema text.
    pub fn schema_text(self) -> &'static str {
        match self {
            Topic::Works => include_str!("../../schemas/avro/works.avsc"),
            Topic::Rights => include_str!("../../schemas/avro/rights.avsc"),
            Topic::Licenses => include_str!("../../schemas/avro/licenses.avsc"),
            Topic::Disputes => include_str!("../../schemas/avro/disputes.avsc"),
            Topic::Certificates => include_str!("../../schemas/avro/certificates.avsc"),
            Topic::Parties => include_str!("../../schemas/avro/parties.avsc"),
        }
    }
}

/// The parsed reader schemas of all topics.
#[derive(Debug)]
pub struct Contract {
    topics: Vec<TopicSchema>,
}

#[derive(Debug)]
struct TopicSchema {
    topic: Topic,
    /// The reader schema, with the reader and writer of datums of it.
    codec: Arc<DatumCodec>,
    name: Name,
    canonical_form: String,
}

/// The contract files are part of this binary; failing to parse them is a build defect.
#[derive(Debug, thiserror::Error)]
#[error("the committed schema of topic {topic} is invalid: {reason}")]
pub struct ContractError {
    topic: &'static str,
    reason: String,
}

impl Contract {
    pub fn load() -> Result<Contract, ContractError> {
        let topics = Topic::ALL
            .into_iter()
            .map(|topic| {
                let invalid = |reason: String| ContractError { topic: topic.name(), reason };
                let schema = Schema::parse_str(topic.schema_text()).map_err(|error| invalid(error.to_string()))?;
                let Schema::Record(record) = &schema else {
                    return Err(invalid("not a record".into()));
                };
                let payload = record
                    .fields
                    .iter()
                    .find(|field| field.name == "payload")
                    .ok_or_else(|| invalid("no payload field".into()))?;
                let Schema::Union(_) = &payload.schema else {
                    return Err(invalid("payload is not a union".into()));
                };
                let (name, canonical_form) = (record.name.clone(), canonical_form(&schema));
                let codec = DatumCodec::new(schema).map_err(|error| invalid(error.to_string()))?;
                Ok(TopicSchema { topic, name, canonical_form, codec: Arc::new(codec) })
            })
            .collect::<Result<_, _>>()?;
        Ok(Contract { topics })
    }

    fn topic_schema(&self, topic: Topic) -> &TopicSchema {
        // `load` builds one entry per topic, in `Topic::ALL` order.
        &self.topics[Topic::ALL.iter().position(|candidate| *candidate == topic).unwrap_or_default()]
    }

    /// The reader schema of a topic.
    pub fn reader_schema(&self, topic: Topic) -> &Schema {
        self.topic_schema(topic).codec.schema()
    }

    /// The reader and writer of datums of a topic's reader schema.
    pub fn datum_codec(&self, topic: Topic) -> &Arc<DatumCodec> {
        &self.topic_schema(topic).codec
    }

    /// The topic whose top-level record has this writer schema's full name.
    pub fn topic_of(&self, writer: &Schema) -> Option<Topic> {
        let Schema::Record(record) = writer else {
            return None;
        };
        self.topics.iter().find(|candidate| candidate.name == record.name).map(|candidate| candidate.topic)
    }

    /// Whether a writer schema equals the reader schema, so values need no resolution.
    pub fn is_reader_schema(&self, topic: Topic, writer: &Schema) -> bool {
        self.topic_schema(topic).canonical_form == canonical_form(writer)
    }
}

/// The record names of a union's branches, in union order.
pub fn branch_names(union: &UnionSchema) -> Vec<String> {
    union
        .variants()
        .iter()
        .map(|variant| match variant {
            Schema::Record(record) => record.name.name().to_owned(),
            Schema::Ref { name } => name.name().to_owned(),
            other => format!("{other:?}"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_committed_schema_parses_and_names_its_topic() {
        let contract = Contract::load().expect("contract");
        for topic in Topic::ALL {
            assert_eq!(contract.topic_of(contract.reader_schema(topic)), Some(topic));
            assert!(contract.is_reader_schema(topic, contract.reader_schema(topic)));
        }
    }

    /// A registry team implements producers from these files alone, so every
    /// record, enum and field must say what it means.
    #[test]
    fn every_record_enum_and_field_has_a_doc() {
        fn walk(value: &serde_json::Value, path: &str, missing: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(object) => {
                    let kind = object.get("type").and_then(serde_json::Value::as_str);
                    let is_named = matches!(kind, Some("record" | "enum"));
                    let is_field = object.contains_key("name") && !is_named && object.contains_key("type");
                    let documented =
                        object.get("doc").and_then(serde_json::Value::as_str).is_some_and(|doc| !doc.trim().is_empty());
                    if (is_named || is_field) && !documented {
                        missing.push(format!(
                            "{path}/{}",
                            object.get("name").and_then(serde_json::Value::as_str).unwrap_or("?")
                        ));
                    }
                    for (key, child) in object {
                        walk(child, &format!("{path}/{key}"), missing);
                    }
                }
                serde_json::Value::Array(items) => items.iter().for_each(|item| walk(item, path, missing)),
                _ => {}
            }
        }
        for topic in Topic::ALL {
            let json: serde_json::Value = serde_json::from_str(topic.schema_text()).expect("json");
            let mut missing = Vec::new();
            walk(&json, topic.name(), &mut missing);
            assert!(missing.is_empty(), "undocumented in {}: {missing:?}", topic.name());
        }
    }

    /// The envelope is the same contract on every topic.
    #[test]
    fn the_envelope_is_identical_on_all_topics() {
        let envelope = |topic: Topic| {
            let json: serde_json::Value = serde_json::from_str(topic.schema_text()).expect("json");
            json["fields"][0]["type"].clone()
        };
        for topic in Topic::ALL {
            assert_eq!(envelope(topic), envelope(Topic::Works), "{}", topic.name());
        }
    }

    /// Personal data lives in its own record, referenced only from party events.
    #[test]
    fn personal_data_is_a_separate_record_used_only_on_the_parties_topic() {
        for topic in Topic::ALL {
            let uses = topic.schema_text().contains("PartyPersonalData");
            assert_eq!(uses, topic == Topic::Parties, "{}", topic.name());
        }
        let json: serde_json::Value = serde_json::from_str(Topic::Parties.schema_text()).expect("json");
        let profile = &json["fields"][1]["type"][0]["fields"][0]["type"];
        assert_eq!(profile["name"], "PartyPublicProfile");
        let profile_fields: Vec<&str> =
            profile["fields"].as_array().expect("fields").iter().filter_map(|field| field["name"].as_str()).collect();
        assert_eq!(profile_fields, ["name", "kind", "ipi", "isni"]);
    }
}
