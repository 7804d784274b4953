//! The production shape on real engines: the registry's events produced to
//! Apache Kafka by the independent Python producer (both wire formats, with
//! undecodable messages), `projector run` from Kafka into Apache Cassandra,
//! and `query-api serve` over Cassandra. Every answer equals the answer of
//! the embedded default (the same events from files into SQLite), byte for
//! byte, compared by `tests/compare/answers.py`.

use std::path::Path;
use std::process::{Command, Stdio};

use end_to_end_tests::cql::{drop_keyspaces, fresh_keyspace, store_arguments};
use end_to_end_tests::kafka::{
    Broker, KillOnDrop, SchemaRegistry, create_topics, kafka_projector_command, produce, project_until_caught_up,
};
use end_to_end_tests::{
    ALL_SCOPES, BASE_PATH, binary, issue_production_key, project, serve_quietly, spawn_listening, workspace_root,
};
use projector::generate::{GenerateOptions, generate};

/// Works of the generated registry; the sandbox fixtures come with them.
const WORKS: usize = 3_000;
/// Undecodable messages among the produced ones.
const GARBAGE: usize = 5;

/// Issues a production key with every scope on the Cassandra store `keyspace`.
fn issue_cql_key(keyspace: &str) -> String {
    let mut command = Command::new(binary("query-api"));
    command.arg("keys");
    store_arguments(&mut command, keyspace);
    let output = command
        .args(["issue", "--partner", "Production shape", "--rate-limit", "1000000000"])
        .args(["--scopes", &ALL_SCOPES.join(",")])
        .env("RUST_LOG", "warn")
        .stderr(Stdio::inherit())
        .output()
        .expect("query-api keys runs");
    assert!(output.status.success(), "query-api keys issue on {keyspace} failed");
    String::from_utf8(output.stdout).expect("utf-8").lines().next().expect("the key").trim().to_owned()
}

/// `query-api serve` over the Cassandra store `keyspace`, on port 0; its public address.
fn serve_cql(keyspace: &str, data: &Path) -> (KillOnDrop, String) {
    let mut command = Command::new(binary("query-api"));
    command.args(["serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0"]);
    command.args(["--snapshot-interval-minutes", "0"]).arg("--data-dir").arg(data);
    store_arguments(&mut command, keyspace);
    let (child, mut listening) = spawn_listening(command.env("RUST_LOG", "warn"));
    (KillOnDrop(child), listening.remove("public").expect("public listener"))
}

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
    let keyspace = fresh_keyspace("production_shape");
    let data = directory.path().join("production");
    let mut projector = kafka_projector_command(&broker, &data, "production-shape", "");
    projector.args(["--schema-registry-url", &registry.url]).arg("--writer-schema-dir").arg(&schemas);
    store_arguments(&mut projector, &keyspace);
    let summary = project_until_caught_up(projector);
    assert_eq!(summary.parked as usize, manifest.malformed_events + GARBAGE, "poison is parked, not applied");
    let production_key = issue_cql_key(&keyspace);
    let (_production_server, production_address) = serve_cql(&keyspace, &data);

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
    drop_keyspaces(&keyspace);
}
