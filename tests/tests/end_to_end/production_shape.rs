//! The production shape on real engines: the registry's events produced to
//! Apache Kafka by the independent Python producer (both wire formats, with
//! undecodable messages), `projector run` from Kafka into Apache Cassandra,
//! and `query-api serve` over Cassandra. Every answer equals the answer of
//! the embedded default (the same events from files into SQLite), byte for
//! byte, compared by `tests/compare/answers.py`.

use std::process::{Command, Stdio};

use end_to_end_tests::cql::{Cluster, fresh_keyspace};
use end_to_end_tests::kafka::{
    Broker, SchemaRegistry, create_topics, kafka_projector_command, produce, project_until_caught_up,
};
use end_to_end_tests::{
    ALL_SCOPES, BASE_PATH, issue_production_key, project, serve_quietly, wait_until_the_feed_settles, workspace_root,
};
use projector::generate::{GenerateOptions, generate};

/// Works of the generated registry; the sandbox fixtures come with them.
const WORKS: usize = 3_000;
/// Undecodable messages among the produced ones.
const GARBAGE: usize = 5;

#[test]
fn kafka_into_cassandra_serves_every_answer_the_embedded_default_serves() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: WORKS, seed: 5, events_per_segment: 5_000, sandbox: false };
    let manifest = generate(&options, &events).expect("generate");
    let sandbox = workspace_root().join("schemas/fixtures/sandbox");

    // The embedded default: the same events from files into SQLite.
    let embedded = directory.path().join("embedded");
    project(&events, &embedded, 1_000);
    project(&sandbox, &embedded, 1_000);
    let embedded_key = issue_production_key(&embedded, &ALL_SCOPES, 1_000_000_000);
    let (mut embedded_server, embedded_address) = serve_quietly(&embedded);

    // Production: Kafka, the projector into Cassandra, the API over Cassandra.
    let broker = Broker::start(&directory.path().join("broker"));
    create_topics(&broker, "", 3, &["dead-letters"]);
    let schemas = directory.path().join("schemas");
    let registry = SchemaRegistry::start(&schemas);
    let produced = produce(&broker, &events, "mixed", &schemas, &["--garbage", &GARBAGE.to_string()]);
    assert_eq!(produced["produced"].as_u64(), Some(manifest.events as u64));
    produce(&broker, &sandbox, "single-object", &schemas, &[]);
    let cluster = Cluster::shared();
    let keyspace = fresh_keyspace("production_shape");
    let data = directory.path().join("production");
    let mut projector = kafka_projector_command(&broker, &data, "production-shape", "");
    projector.args(["--schema-registry-url", &registry.url]).arg("--writer-schema-dir").arg(&schemas);
    cluster.store_arguments(&mut projector, &keyspace);
    let summary = project_until_caught_up(projector);
    assert_eq!(summary.parked as usize, manifest.malformed_events + GARBAGE, "poison is parked, not applied");
    let production_key = cluster.issue_key(&keyspace, &ALL_SCOPES);
    let (_production_server, mut listening) = cluster.serve(&keyspace, &data);
    let production_address = listening.remove("public").expect("public listener");
    wait_until_the_feed_settles(&production_address, &production_key);

    let output = Command::new("python3")
        .arg(workspace_root().join("tests/compare/answers.py"))
        .arg(format!("http://{embedded_address}{BASE_PATH}"))
        .arg(&embedded_key)
        .arg(format!("http://{production_address}{BASE_PATH}"))
        .arg(&production_key)
        .arg(WORKS.to_string())
        .args(["--feed", "newest-per-work"])
        .stderr(Stdio::inherit())
        .output()
        .expect("python3 runs");
    let report = String::from_utf8_lossy(&output.stdout);
    eprintln!("SQLite from files against Cassandra from Kafka:\n{report}");
    assert!(output.status.success(), "the two services answer differently:\n{report}");
    assert!(report.contains("0 differences"), "{report}");
    let _ = embedded_server.kill();
    let _ = embedded_server.wait();
    cluster.drop_keyspaces(&keyspace);
}
