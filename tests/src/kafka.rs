//! Real Kafka parts for the end-to-end tests: Apache Kafka brokers (KRaft)
//! started by `scripts/kafka.sh` from the jars `scripts/install-engines.sh`
//! fetched, the independent Python producer and schema registry of
//! `tests/kafka/`, and the projector binary pointed at them.
//!
//! Without Java or the fetched jars a test fails.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{binary, workspace_root};

/// Apache Kafka nodes (each broker and controller) under a directory of
/// their own, stopped when dropped. Their data is on disk, so a node
/// restarted finds its topics again.
#[derive(Debug)]
pub struct Broker {
    directory: PathBuf,
    nodes: usize,
    bootstrap: String,
}

/// Runs `scripts/kafka.sh` with `arguments`.
fn kafka_script(arguments: &[&str]) -> String {
    crate::engines::engine_script("kafka.sh", arguments)
}

impl Broker {
    /// Starts one node under `directory`.
    pub fn start(directory: &Path) -> Broker {
        Broker::cluster(directory, 1)
    }

    /// Starts `nodes` nodes under `directory`, one controller quorum.
    pub fn cluster(directory: &Path, nodes: usize) -> Broker {
        let path = directory.to_str().expect("utf-8 path");
        let bootstrap = kafka_script(&["start", path, &nodes.to_string()]);
        Broker { directory: directory.to_path_buf(), nodes, bootstrap }
    }

    pub fn bootstrap(&self) -> String {
        self.bootstrap.clone()
    }

    /// The projector's `--source` for this broker.
    pub fn source(&self) -> String {
        format!("kafka://{}", self.bootstrap())
    }

    /// Kills every node (SIGKILL).
    pub fn kill(&mut self) {
        for node in 1..=self.nodes {
            self.kill_node(node);
        }
    }

    /// Kills node `node` (1-based) at once.
    pub fn kill_node(&mut self, node: usize) {
        kafka_script(&["kill", self.directory.to_str().expect("utf-8 path"), &node.to_string()]);
    }

    /// Starts every node again on its data and ports.
    pub fn restart(&mut self) {
        for node in 1..=self.nodes {
            self.restart_node(node);
        }
    }

    /// Starts node `node` again on its data and ports.
    pub fn restart_node(&mut self, node: usize) {
        kafka_script(&["restart", self.directory.to_str().expect("utf-8 path"), &node.to_string()]);
    }

    /// Where node `node` logs, for a failing test to print.
    pub fn log(&self, node: usize) -> PathBuf {
        self.directory.join(format!("node-{node}")).join("server.log")
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        crate::engines::stop_engine("kafka.sh", &self.directory);
    }
}

/// Runs `tests/kafka/produce.py` with `arguments`; returns its JSON summary.
pub fn python_producer(arguments: &[&str]) -> serde_json::Value {
    let script = workspace_root().join("tests/kafka/produce.py");
    let output =
        Command::new("python3").arg(&script).args(arguments).stderr(Stdio::inherit()).output().expect("python3 runs");
    assert!(output.status.success(), "produce.py {arguments:?} failed: {:?}", output.status);
    let stdout = String::from_utf8_lossy(&output.stdout);
    serde_json::from_str(stdout.lines().last().expect("a summary line")).expect("summary is JSON")
}

/// Produces the generated events in `events` with the independent producer
/// in wire `format` (`single-object`, `confluent` or `mixed`), publishing the
/// writer schemas it uses in `schemas`, with further producer arguments
/// (`--prefix`, `--garbage`, `--evolve`, …); returns its summary.
pub fn produce(broker: &Broker, events: &Path, format: &str, schemas: &Path, more: &[&str]) -> serde_json::Value {
    let bootstrap = broker.bootstrap();
    let mut arguments = vec![
        "produce",
        "--bootstrap",
        bootstrap.as_str(),
        "--events",
        events.to_str().expect("utf-8 path"),
        "--format",
        format,
        "--schemas",
        schemas.to_str().expect("utf-8 path"),
    ];
    arguments.extend_from_slice(more);
    python_producer(&arguments)
}

/// Produces the generated events in `events` single-object encoded, and
/// publishes every writer schema used in `published` (the projector's
/// `--writer-schema-dir`).
pub fn produce_single_object(broker: &Broker, events: &Path, published: &Path) {
    produce(broker, events, "single-object", published, &[]);
}

/// Waits until the projector whose admin listener is `admin` is ready and
/// reports `partitions` partitions, each with a known high watermark and no
/// lag, and no document waiting to be rendered.
pub fn wait_until_caught_up(admin: &str, partitions: usize) {
    let started = Instant::now();
    loop {
        // The listener may not accept connections yet.
        let answers = std::panic::catch_unwind(|| {
            (crate::http(admin, "GET", "/readyz", &[], "").0, crate::http(admin, "GET", "/metrics", &[], "").2)
        });
        if let Ok((200, metrics)) = answers {
            let lags: Vec<&str> =
                metrics.lines().filter(|line| line.starts_with("lcc_projector_partition_lag_messages")).collect();
            let rendered = metrics.lines().any(|line| line == "lcc_projector_documents_awaiting_render 0");
            if lags.len() == partitions && lags.iter().all(|line| line.ends_with(" 0")) && rendered {
                return;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the projector at {admin} did not catch up");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// Creates the six topics (and any extra ones) with `partitions` partitions,
/// each replicated on up to three of the broker's nodes.
pub fn create_topics(broker: &Broker, prefix: &str, partitions: u32, extra: &[&str]) {
    let partitions = partitions.to_string();
    let bootstrap = broker.bootstrap();
    // Every partition on as many brokers as a production cluster keeps, up to three.
    let replication_factor = broker.nodes.min(3).to_string();
    let mut arguments = vec!["topics", "--bootstrap", bootstrap.as_str(), "--prefix", prefix];
    arguments.extend(["--partitions", partitions.as_str(), "--replication-factor", replication_factor.as_str()]);
    for topic in extra {
        arguments.extend(["--extra-topic", topic]);
    }
    python_producer(&arguments);
}

/// The test schema registry, serving the ids produce.py registers in `directory`.
#[derive(Debug)]
pub struct SchemaRegistry {
    child: Child,
    pub url: String,
}

impl SchemaRegistry {
    pub fn start(directory: &Path) -> SchemaRegistry {
        std::fs::create_dir_all(directory).expect("schema directory");
        let port_file = directory.join("registry.port");
        let child = Command::new("python3")
            .arg(workspace_root().join("tests/kafka/schema_registry.py"))
            .arg("--dir")
            .arg(directory)
            .arg("--port-file")
            .arg(&port_file)
            .spawn()
            .expect("the registry starts");
        let started = Instant::now();
        let port = loop {
            if let Ok(text) = std::fs::read_to_string(&port_file) {
                break text.trim().parse::<u16>().expect("a port");
            }
            assert!(started.elapsed() < Duration::from_secs(20), "the registry did not start");
            std::thread::sleep(Duration::from_millis(50));
        };
        SchemaRegistry { child, url: format!("http://127.0.0.1:{port}") }
    }
}

impl Drop for SchemaRegistry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `projector run` against the broker, with an isolated store and its admin
/// listener on a port it picks and reports (read it with [`crate::spawn_listening`]).
pub fn kafka_projector_command(
    broker: &Broker,
    data: &(impl crate::TestStore + ?Sized),
    group: &str,
    prefix: &str,
) -> Command {
    let mut command = Command::new(binary("projector"));
    command.args(["run", "--source", &broker.source()]);
    data.add_store_flags(&mut command);
    command
        .args(["--kafka-group-id", group, "--kafka-topic-prefix", prefix])
        .args(["--dead-letter-topic", &format!("{prefix}dead-letters")])
        .args(["--admin-listen", "127.0.0.1:0", "--batch-size", "500", "--batch-linger-ms", "50"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped());
    command
}

/// The JSON lines `projector dead-letters list` prints.
pub fn list_dead_letters(broker: &Broker, group: &str, prefix: &str) -> Vec<serde_json::Value> {
    dead_letter_command(broker, group, prefix, "list")
}

/// Re-drives the parked events; returns the JSON lines printed.
pub fn redrive_dead_letters(broker: &Broker, group: &str, prefix: &str) -> Vec<serde_json::Value> {
    dead_letter_command(broker, group, prefix, "redrive")
}

fn dead_letter_command(broker: &Broker, group: &str, prefix: &str, verb: &str) -> Vec<serde_json::Value> {
    let output = Command::new(binary("projector"))
        .args(["dead-letters", verb, "--source", &broker.source()])
        .args(["--kafka-group-id", group, "--kafka-topic-prefix", prefix])
        .args(["--dead-letter-topic", &format!("{prefix}dead-letters")])
        .env("RUST_LOG", "warn")
        .stderr(Stdio::inherit())
        .output()
        .expect("projector runs");
    assert!(output.status.success(), "projector dead-letters {verb} failed: {:?}", output.status);
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).expect("a JSON line"))
        .collect()
}

/// Runs a projector command to completion with `--exit-when-caught-up`.
pub fn project_until_caught_up(mut command: Command) -> crate::RunSummary {
    let output = command.arg("--exit-when-caught-up").stderr(Stdio::inherit()).output().expect("projector starts");
    assert!(output.status.success(), "projector failed: {:?}", output.status);
    crate::summary_of(&String::from_utf8_lossy(&output.stdout))
}
