//! Real Kafka parts for the end-to-end tests: a `tansu` broker on a free
//! port, the independent Python producer and schema registry of
//! `tests/kafka/`, and the projector binary pointed at them.
//!
//! Without `tansu` (installed by `scripts/test.sh`) a test fails.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::{binary, require_external_tool, workspace_root};

/// A running `tansu` broker, killed when dropped.
#[derive(Debug)]
pub struct Broker {
    child: Option<Child>,
    pub port: u16,
    storage: PathBuf,
    engine: &'static str,
}

/// Topics in memory: fast, and gone when the broker stops.
const MEMORY_ENGINE: &str = "memory://tansu/";
/// Topics in a SQLite file under the broker's storage directory, kept across
/// a restart; needs tansu built with the `libsql` feature (`scripts/install-tansu.sh`).
const SQLITE_ENGINE: &str = "sqlite://tansu.db";

/// A port that was free a moment ago on the loopback interface, for the
/// broker alone: tansu takes its port from its command line and cannot
/// report one it picked, and a restarted broker must come back on the same
/// port. Every program of ours listens on port 0 and reports its port.
fn free_port_for_the_broker() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").expect("bind").local_addr().expect("address").port()
}

impl Broker {
    /// Starts a broker on a free port that keeps its topics in memory.
    pub fn start(storage: &Path) -> Broker {
        Broker::launched(storage, MEMORY_ENGINE)
    }

    /// Starts a broker that keeps its topics in a file under `storage`, so a
    /// restart finds them again (tansu built with its SQLite engine).
    pub fn start_persistent(storage: &Path) -> Broker {
        Broker::launched(storage, SQLITE_ENGINE)
    }

    fn launched(storage: &Path, engine: &'static str) -> Broker {
        require_external_tool("tansu");
        let mut broker =
            Broker { child: None, port: free_port_for_the_broker(), storage: storage.to_path_buf(), engine };
        broker.launch().unwrap_or_else(|reason| panic!("{reason}"));
        broker
    }

    fn launch(&mut self) -> Result<(), String> {
        std::fs::create_dir_all(&self.storage).expect("broker storage");
        let listener = format!("tcp://127.0.0.1:{}", self.port);
        let mut child = Command::new("tansu")
            .arg("broker")
            .args(["--listener-url", &listener, "--advertised-listener-url", &listener])
            .args(["--storage-engine", self.engine])
            .env("RUST_LOG", "warn")
            .current_dir(&self.storage)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|error| format!("tansu does not start: {error}"))?;
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                return Err(format!("tansu with storage {} exited at start ({status})", self.engine));
            }
            if started.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("tansu does not listen on port {} after 30 s", self.port));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        self.child = Some(child);
        Ok(())
    }

    pub fn bootstrap(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The projector's `--source` for this broker.
    pub fn source(&self) -> String {
        format!("kafka://{}", self.bootstrap())
    }

    /// Kills the broker (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts it again on the same port and storage.
    pub fn restart(&mut self) {
        self.kill();
        self.launch().expect("tansu starts again");
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.kill();
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
/// `--writer-schema-dir`); one record per batch when `record_per_batch`.
pub fn produce_single_object(broker: &Broker, events: &Path, published: &Path, record_per_batch: bool) {
    let more: &[&str] = if record_per_batch { &["--record-per-batch"] } else { &[] };
    produce(broker, events, "single-object", published, more);
}

/// Waits until the projector whose admin listener is `admin` is ready and
/// reports `partitions` partitions, each with a known high watermark and no lag.
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
            if lags.len() == partitions && lags.iter().all(|line| line.ends_with(" 0")) {
                return;
            }
        }
        assert!(started.elapsed() < Duration::from_secs(120), "the projector at {admin} did not catch up");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The value of the first series on the projector's `/metrics` at `admin`
/// whose line starts with `series` (a name, or a name with its labels); 0
/// when there is none yet.
pub fn metric(admin: &str, series: &str) -> u64 {
    let (_, _, metrics) = crate::http(admin, "GET", "/metrics", &[], "");
    let line = metrics.lines().find(|line| line.starts_with(series)).unwrap_or_default();
    line.rsplit(' ').next().and_then(|value| value.parse().ok()).unwrap_or(0)
}

/// Creates the six topics (and any extra ones) with `partitions` partitions.
pub fn create_topics(broker: &Broker, prefix: &str, partitions: u32, extra: &[&str]) {
    let partitions = partitions.to_string();
    let bootstrap = broker.bootstrap();
    let mut arguments = vec!["topics", "--bootstrap", bootstrap.as_str(), "--prefix", prefix];
    arguments.extend(["--partitions", partitions.as_str()]);
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
pub fn kafka_projector_command(broker: &Broker, data: &Path, group: &str, prefix: &str) -> Command {
    let mut command = Command::new(binary("projector"));
    command
        .args(["run", "--source", &broker.source()])
        .arg("--data-dir")
        .arg(data)
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

/// A child process killed when dropped, so a failing test leaves none behind.
#[derive(Debug)]
pub struct KillOnDrop(pub Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}
