//! The projector on real topics: an Apache Kafka broker, events produced by an
//! independent producer (Python confluent-kafka with fastavro) in both wire
//! formats, and the real projector binary. The store it builds must equal,
//! document for document, the file-source projection of the same events.

use end_to_end_tests::kafka::{
    Broker, SchemaRegistry, create_topics, kafka_projector_command, list_dead_letters, produce,
    project_until_caught_up, redrive_dead_letters,
};
use end_to_end_tests::{ProjectedStream, assert_same_documents, dump_documents, generate_and_project};

#[test]
fn both_wire_formats_give_the_file_projection_and_poison_is_parked_with_its_origin() {
    let directory = tempfile::tempdir().expect("tempdir");
    let ProjectedStream { events, manifest, clean, .. } = generate_and_project(directory.path(), 400, 41, 1_000);
    let expected = dump_documents(&clean);

    let broker = Broker::start(&directory.path().join("broker"));

    // Single-object encoding, plus undecodable messages. Some generated
    // files use a newer works schema; the producer publishes every writer
    // schema it uses, and the projector is given them as its writer-schema directory.
    create_topics(&broker, "a.", 3, &["a.dead-letters"]);
    let published = directory.path().join("published-schemas");
    let produced = produce(&broker, &events, "single-object", &published, &["--prefix", "a.", "--garbage", "6"]);
    assert_eq!(produced["produced"].as_u64(), Some(manifest.events as u64));
    let data = directory.path().join("single-object");
    let single_object_projector = || {
        let mut command = kafka_projector_command(&broker, &data, "projector-a", "a.");
        command.arg("--writer-schema-dir").arg(&published);
        command
    };
    let summary = project_until_caught_up(single_object_projector());
    assert_eq!(summary.events as usize, manifest.events + 6);
    assert_eq!(summary.parked as usize, manifest.malformed_events + 6);
    assert_same_documents(&expected, &dump_documents(&data));

    let parked = list_dead_letters(&broker, "projector-a", "a.");
    assert_eq!(parked.len(), manifest.malformed_events + 6, "each poison event is parked once");
    for record in &parked {
        let topic = record["originTopic"].as_str().expect("origin topic");
        assert!(topic.starts_with("a."), "{record}");
        assert!(record["originPartition"].as_i64().is_some_and(|partition| (0..3).contains(&partition)), "{record}");
        assert!(record["originOffset"].as_i64().is_some_and(|offset| offset >= 0), "{record}");
        assert!(!record["error"].as_str().expect("error").is_empty(), "{record}");
        assert!(record["parkedAt"].as_str().expect("parked at").ends_with('Z'), "{record}");
    }
    let garbage: Vec<_> = parked
        .iter()
        .filter(|record| record["error"].as_str().is_some_and(|error| error.starts_with("unknown wire format")))
        .collect();
    assert_eq!(garbage.len(), 6, "the undecodable messages name their cause");

    // Re-driving puts the parked events back on their topics; still poison, they are parked again.
    let redriven = redrive_dead_letters(&broker, "projector-a", "a.");
    assert_eq!(redriven.len(), parked.len());
    let again = project_until_caught_up(single_object_projector());
    assert_eq!(
        again.events as usize,
        parked.len(),
        "the projector resumes after its checkpoints and reads only the re-driven events"
    );
    assert_eq!(again.parked as usize, parked.len());
    assert!(
        redrive_dead_letters(&broker, "projector-a", "a.").len() == parked.len(),
        "only records parked since the last re-drive are re-driven"
    );
    assert_same_documents(&expected, &dump_documents(&data));

    // Confluent framing with a newer writer schema (a field added with a
    // default), resolved at run time through the schema registry.
    let schemas = directory.path().join("registry");
    let registry = SchemaRegistry::start(&schemas);
    create_topics(&broker, "b.", 2, &["b.dead-letters"]);
    produce(&broker, &events, "mixed", &schemas, &["--prefix", "b.", "--evolve"]);
    let data = directory.path().join("confluent");
    let mut command = kafka_projector_command(&broker, &data, "projector-b", "b.");
    command.args(["--schema-registry-url", &registry.url]);
    // The evolved schema's single-object half is found in the writer-schema directory.
    command.arg("--writer-schema-dir").arg(&schemas);
    let summary = project_until_caught_up(command);
    assert_eq!(summary.events as usize, manifest.events);
    assert_eq!(summary.parked as usize, manifest.malformed_events);
    assert_same_documents(&expected, &dump_documents(&data));
}
