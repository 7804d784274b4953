//! Writer-to-reader schema resolution: files written by an older or newer
//! upstream are read against the contract, by Avro's rules, with payload
//! branches matched by record name.

mod support;

use std::path::Path;

use apache_avro::types::Value;
use apache_avro::{Schema, Writer};
use projector::contract::Topic;
use read_model::DocumentKind;
use read_model::documents::RightsProfile;
use support::Projection;

fn envelope(event_type: &str, version: i64) -> Value {
    Value::Record(vec![
        ("eventId".into(), Value::String(format!("e-{version}"))),
        ("eventType".into(), Value::String(event_type.into())),
        ("aggregateId".into(), Value::String("LCC-1".into())),
        ("aggregateVersion".into(), Value::Long(version)),
        ("occurredAt".into(), Value::TimestampMillis(1_704_067_200_000 + version)),
        ("recordedAt".into(), Value::TimestampMillis(1_704_067_200_000 + version)),
        ("sourceSystem".into(), Value::String("older-registry".into())),
    ])
}

/// The works schema as an upstream that evolved differently would write it:
/// `WorkRegistered` has a new field `mood` (with a default) and lacks
/// `subjects` (which the contract defaults to []); `WorkPublished` comes
/// before `WorkRegistered` in the union; `WorkAmended` is absent.
fn evolved_works_schema() -> Schema {
    let mut json: serde_json::Value = serde_json::from_str(Topic::Works.schema_text()).expect("json");
    let branches = json["fields"][1]["type"].as_array_mut().expect("union");
    let mut registered = branches[0].clone();
    let fields = registered["fields"].as_array_mut().expect("fields");
    fields.retain(|field| field["name"] != "subjects");
    fields.push(serde_json::json!({"name": "mood", "type": "string", "default": "calm", "doc": "New upstream field."}));
    let published = branches[2].clone();
    *branches = vec![published, registered];
    Schema::parse(&json).expect("evolved schema parses")
}

#[tokio::test]
async fn an_evolved_writer_schema_is_resolved_by_field_defaults_and_branch_names() {
    let schema = evolved_works_schema();
    let registered = Value::Record(vec![
        ("title".into(), Value::String("Evolved".into())),
        ("alternativeTitles".into(), Value::Array(vec![])),
        ("iswc".into(), Value::Union(0, Box::new(Value::Null))),
        ("isrcs".into(), Value::Array(vec![])),
        ("creators".into(), Value::Array(vec![])),
        ("language".into(), Value::Union(1, Box::new(Value::String("sv".into())))),
        ("workType".into(), Value::Enum(1, "SOUND_RECORDING".into())),
        ("createdOn".into(), Value::Union(0, Box::new(Value::Null))),
        ("description".into(), Value::Union(0, Box::new(Value::Null))),
        ("publisherPartyId".into(), Value::Union(0, Box::new(Value::Null))),
        ("relatedWorkIds".into(), Value::Array(vec![])),
        ("fileSha256".into(), Value::String("ef".repeat(32))),
        ("fileFormat".into(), Value::Union(0, Box::new(Value::Null))),
        ("earliestRecordedAt".into(), Value::TimestampMillis(1_704_000_000_000)),
        ("mood".into(), Value::String("stormy".into())),
    ]);
    let published = Value::Record(vec![("publishedAt".into(), Value::TimestampMillis(1_704_067_300_000))]);
    let events = [
        Value::Record(vec![
            ("envelope".into(), envelope("WorkRegistered", 1)),
            ("payload".into(), Value::Union(1, Box::new(registered))),
        ]),
        Value::Record(vec![
            ("envelope".into(), envelope("WorkPublished", 2)),
            ("payload".into(), Value::Union(0, Box::new(published))),
        ]),
    ];

    let projection = Projection::new().await;
    let directory = projection.directory.path().join("evolved");
    std::fs::create_dir_all(&directory).expect("mkdir");
    let file = std::fs::File::create(directory.join("000001-works.avro")).expect("create");
    let mut writer = Writer::new(&schema, file).expect("writer");
    for event in events {
        writer.append_value(event).expect("append");
    }
    writer.flush().expect("flush");
    drop(writer);

    let totals = projection.project(&directory, 10).await;
    assert_eq!((totals.applied, totals.parked), (2, 0), "both events resolve");
    let profile: RightsProfile = projection.document(DocumentKind::RightsProfile, "LCC-1").await.expect("profile");
    assert_eq!(profile.title, "Evolved");
    assert_eq!(
        profile.status,
        read_model::documents::WorkStatus::Published,
        "WorkPublished must not be read as another branch"
    );
    let metadata: read_model::documents::DublinCoreRecord =
        projection.document(DocumentKind::Metadata, "LCC-1").await.expect("metadata");
    assert!(metadata.subject.is_empty(), "the missing field takes the contract's default");
    assert_eq!(metadata.language, ["sv"]);
}

#[tokio::test]
async fn an_event_type_the_contract_does_not_know_is_parked_as_undecodable() {
    let schema = projector::generate::future_works_schema().expect("schema");
    let archived = Value::Record(vec![("archivedBy".into(), Value::String("robot".into()))]);
    let event = Value::Record(vec![
        ("envelope".into(), envelope("WorkArchived", 1)),
        ("payload".into(), Value::Union(4, Box::new(archived))),
    ]);
    let projection = Projection::new().await;
    let directory = projection.directory.path().join("future");
    std::fs::create_dir_all(&directory).expect("mkdir");
    let file = std::fs::File::create(directory.join("000001-works.avro")).expect("create");
    let mut writer = Writer::new(&schema, file).expect("writer");
    writer.append_value(event).expect("append");
    writer.flush().expect("flush");
    drop(writer);

    let totals = projection.project(&directory, 10).await;
    assert_eq!((totals.applied, totals.parked), (0, 1));
    let letters =
        projector::dead_letter::DeadLetterFile::read_all(&projection.dead_letter_path(&directory)).expect("letters");
    assert!(letters[0].reason.contains("WorkArchived is not part of the works contract"), "{}", letters[0].reason);
    assert_eq!(letters[0].topic.as_deref(), Some("works"));
}

#[tokio::test]
async fn a_file_that_is_not_avro_is_parked_and_the_directory_goes_on() {
    let projection = Projection::new().await;
    let directory = projection.write("events", vec![support::work("LCC-1", "PTY-1", support::T0)], 10);
    std::fs::write(directory.join("000000-garbage.avro"), b"this is not an avro file").expect("write");
    let totals = projection.project(&directory, 10).await;
    assert_eq!((totals.applied, totals.parked), (1, 1));
    let letters =
        projector::dead_letter::DeadLetterFile::read_all(&projection.dead_letter_path(&directory)).expect("letters");
    assert_eq!(letters[0].stream, "000000-garbage.avro");
    assert!(letters[0].reason.starts_with("unreadable Avro container file"), "{}", letters[0].reason);
}

/// A container file whose header names a record with a name that is not an
/// Avro name (apache-avro before 0.22 panicked on it, apache/avro-rs#547)
/// is parked like any unreadable file. A one-byte change of a fixture's
/// header names such a record.
#[tokio::test]
async fn a_file_whose_header_names_a_record_invalidly_is_parked_and_the_directory_goes_on() {
    let projection = Projection::new().await;
    let directory = projection.write("events", vec![support::work("LCC-1", "PTY-1", support::T0)], 10);
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("../schemas/fixtures/sandbox/000001-disputes.avro");
    let mut bytes = std::fs::read(fixture).expect("fixture");
    let name = b"\"DisputeUpdated\"";
    let at = bytes.windows(name.len()).position(|window| window == name).expect("the record's name in the header");
    bytes[at + 10] = b'`';
    std::fs::write(directory.join("000000-invalid-name.avro"), bytes).expect("write");
    let totals = projection.project(&directory, 10).await;
    assert_eq!((totals.applied, totals.parked), (1, 1));
    let letters =
        projector::dead_letter::DeadLetterFile::read_all(&projection.dead_letter_path(&directory)).expect("letters");
    assert_eq!(letters[0].stream, "000000-invalid-name.avro");
    assert!(letters[0].reason.contains("Invalid schema name DisputeUp`ated"), "{}", letters[0].reason);
}
