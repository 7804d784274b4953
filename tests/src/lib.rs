//! Helpers for the end-to-end tests: find (building if needed) the real
//! binaries, run them on isolated directories, and compare stores.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use projector::generate::{GenerateOptions, Manifest, generate};
use read_model::sqlite::{ProvenanceKey, provenance_entries};
use rusqlite::types::ValueRef;

pub mod balancer;
pub mod cql;
mod engines;
pub mod kafka;
mod service;
pub mod stores;

pub use self::engines::KillOnDrop;
pub use self::service::{
    ALL_SCOPES, RunningService, committed_events, events_committed, every_notification, issue_production_key,
    issue_production_key_with_id, metric, register_sandbox_key, revoke_production_key, wait_until_the_feed_settles,
};
pub use self::stores::{CqlStore, TestStore};

/// The path of a workspace binary, built once per test process.
pub fn binary(name: &str) -> PathBuf {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let status = Command::new(env!("CARGO"))
            .args(["build", "--quiet", "--bins", "--workspace"])
            .current_dir(workspace_root())
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the binaries failed");
    });
    // Test executables live in target/<profile>/deps; binaries one level up.
    let executable = std::env::current_exe().expect("test executable path");
    let profile_directory = executable.parent().and_then(Path::parent).expect("target/<profile>");
    let path = profile_directory.join(name);
    assert!(path.exists(), "{} was not built", path.display());
    path
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("workspace root").to_path_buf()
}

/// The JSON summary `projector run` prints on its last stdout line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunSummary {
    pub events: u64,
    pub applied: u64,
    pub skipped_as_duplicates: u64,
    pub parked: u64,
    pub write_conflicts: u64,
    /// Store writes: batches of events, and batches of deferred documents.
    pub batches: u64,
}

/// Runs `projector run --exit-when-caught-up` to completion.
pub fn project(events: &Path, data: &(impl TestStore + ?Sized), batch_size: usize) -> RunSummary {
    project_with_environment(events, data, batch_size, &[])
}

/// [`project`], with further environment variables (the projector's flags fall back to them).
pub fn project_with_environment(
    events: &Path,
    data: &(impl TestStore + ?Sized),
    batch_size: usize,
    environment: &[(&str, &str)],
) -> RunSummary {
    let output = projector_command(events, data, batch_size)
        .envs(environment.iter().copied())
        .stderr(Stdio::inherit())
        .output()
        .expect("projector starts");
    assert!(output.status.success(), "projector failed: {:?}", output.status);
    summary_of(&String::from_utf8_lossy(&output.stdout))
}

/// A generated production-like stream and its file-source projection: what
/// the Kafka tests compare the projector on real topics with.
#[derive(Debug)]
pub struct ProjectedStream {
    /// The generated files (`DIRECTORY/events`).
    pub events: PathBuf,
    pub manifest: Manifest,
    /// The store of one clean file-source run (`DIRECTORY/file-projection`).
    pub clean: PathBuf,
    pub clean_run: RunSummary,
}

/// Generates `works` works with `seed` into `directory` and projects them from
/// files in batches of 500.
pub fn generate_and_project(directory: &Path, works: usize, seed: u64, events_per_segment: usize) -> ProjectedStream {
    let events = directory.join("events");
    let manifest =
        generate(&GenerateOptions { works, seed, events_per_segment, sandbox: false }, &events).expect("generate");
    let clean = directory.join("file-projection");
    let clean_run = project(&events, &clean, 500);
    ProjectedStream { events, manifest, clean, clean_run }
}

/// The Avro container files of `directory`, in name order (the order a file source reads them).
pub fn avro_files_in(directory: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(directory)
        .expect("list the directory")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|extension| extension == "avro"))
        .collect();
    files.sort();
    files
}

/// Copies `files` into the directory `into`, under their own names.
pub fn copy_files(files: &[PathBuf], into: &Path) {
    for file in files {
        std::fs::copy(file, into.join(file.file_name().expect("name"))).expect("copy");
    }
}

/// The summary on the last line of a projector run's standard output.
pub fn summary_of(stdout: &str) -> RunSummary {
    let line = stdout.lines().last().expect("a summary line");
    let json: serde_json::Value = serde_json::from_str(line).expect("summary is JSON");
    let number = |key: &str| json[key].as_u64().expect("a count");
    RunSummary {
        events: number("events"),
        applied: number("applied"),
        skipped_as_duplicates: number("skippedAsDuplicates"),
        batches: number("batches"),
        parked: number("parked"),
        write_conflicts: number("writeConflicts"),
    }
}

/// How many events the file-source projections into `data` parked: the
/// lines of its one dead-letter file.
pub fn parked_events(data: &Path) -> usize {
    let letters =
        std::fs::read_dir(data.join("dead-letters")).expect("dead letters").next().expect("one file").expect("entry");
    projector::dead_letter::DeadLetterFile::read_all(&letters.path()).expect("read").len()
}

/// Lets `child` run for `delay`, then kills it with SIGKILL if it still runs.
/// Returns whether it was killed (rather than having exited by itself).
pub fn sigkill_after(child: &mut Child, delay: Duration) -> bool {
    let started = Instant::now();
    while started.elapsed() < delay && child.try_wait().expect("wait").is_none() {
        std::thread::sleep(Duration::from_millis(5));
    }
    let killed = child.try_wait().expect("wait").is_none();
    if killed {
        child.kill().expect("SIGKILL");
    }
    child.wait().expect("reaped");
    killed
}

/// Waits until the projector `child`, whose admin listener is `admin`, has
/// committed `batches` batches, lets it run for `then` more, and kills it
/// with SIGKILL: a kill at a point of the stream, not of the clock, so a
/// slow machine moves when it lands but not what it leaves written. Panics
/// if the run ends first or commits nothing for two minutes.
pub fn sigkill_once_committed(child: &mut Child, admin: &str, batches: u64, then: Duration) {
    let started = Instant::now();
    while metric(admin, "lcc_projector_batches_total") < batches {
        assert!(child.try_wait().expect("wait").is_none(), "a run finished before its kill");
        assert!(started.elapsed() < Duration::from_secs(120), "the projector committed nothing");
        std::thread::sleep(Duration::from_millis(5));
    }
    std::thread::sleep(then);
    child.kill().expect("SIGKILL");
    child.wait().expect("reaped");
}

/// Starts a process `attempts` times with `start` and kills each with
/// SIGKILL, if it still runs, after a delay drawn between `shortest_ms` and
/// `longest_ms` from a generator seeded with `seed`; asserts that at least
/// three kills hit a running process, or the test proved little.
pub fn sigkill_at_random_points(
    attempts: usize,
    seed: u64,
    (shortest_ms, longest_ms): (i64, i64),
    mut start: impl FnMut() -> Child,
) {
    let mut random = projector::generate::Random::new(seed);
    let mut killed_mid_stream = 0;
    for attempt in 0..attempts {
        let mut child = start();
        let delay = Duration::from_millis(random.range(shortest_ms, longest_ms) as u64);
        if sigkill_after(&mut child, delay) {
            killed_mid_stream += 1;
            eprintln!("attempt {attempt}: killed after {delay:?}");
        }
    }
    assert!(killed_mid_stream >= 3, "only {killed_mid_stream} kills hit a running process; the test proved little");
}

/// The command line of a projector run that exits when caught up, to spawn and kill.
pub fn projector_command(events: &Path, data: &(impl TestStore + ?Sized), batch_size: usize) -> Command {
    let mut command = following_projector_command(events, data, batch_size);
    command.arg("--exit-when-caught-up");
    command
}

/// The command line of a projector run that follows its source until stopped.
pub fn following_projector_command(events: &Path, data: &(impl TestStore + ?Sized), batch_size: usize) -> Command {
    let mut command = Command::new(binary("projector"));
    command
        .arg("run")
        .arg("--source")
        .arg(format!("file://{}", events.display()))
        .arg("--batch-size")
        .arg(batch_size.to_string())
        .args(["--admin-listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped());
    data.add_store_flags(&mut command);
    command
}

/// Every row of every document and state table of model version 1, in a
/// canonical order: equal dumps mean byte-identical documents. Provenance
/// is dumped entry by entry (see `provenance_dump`). Checkpoints are left
/// out, since they name the source, and so are the per-batch change
/// records, the change feed and the notifications, which follow batch
/// boundaries and commit times.
pub fn dump_documents(data: &Path) -> BTreeMap<String, Vec<String>> {
    dump_model_version(data, 1)
}

/// [`dump_documents`] of model version `version`.
pub fn dump_model_version(data: &Path, version: u32) -> BTreeMap<String, Vec<String>> {
    let connection = rusqlite::Connection::open_with_flags(
        data.join(format!("model-v{version}.sqlite")),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .expect("open model");
    let tables: Vec<String> = connection
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' \
             AND name NOT IN ('checkpoints', 'document_changes', 'change_feed', 'change_feed_state', \
             'notifications', 'notifications_state') ORDER BY name",
        )
        .expect("prepare")
        .query_map([], |row| row.get(0))
        .expect("tables")
        .collect::<Result<_, _>>()
        .expect("names");
    let mut dump = BTreeMap::new();
    for table in tables {
        if table == "provenance_entries" {
            dump.insert(table, provenance_dump(&connection));
            continue;
        }
        let mut statement = connection.prepare(&format!("SELECT * FROM {table}")).expect("select");
        let columns = statement.column_count();
        let mut rows: Vec<String> = statement
            .query_map([], |row| {
                let cells: Vec<String> = (0..columns)
                    .map(|index| match row.get_ref(index) {
                        Ok(ValueRef::Text(bytes) | ValueRef::Blob(bytes)) => {
                            String::from_utf8_lossy(bytes).into_owned()
                        }
                        Ok(ValueRef::Integer(number)) => number.to_string(),
                        Ok(other) => format!("{other:?}"),
                        Err(error) => format!("error: {error}"),
                    })
                    .collect();
                Ok(cells.join(" | "))
            })
            .expect("rows")
            .collect::<Result<_, _>>()
            .expect("row values");
        // What was last notified follows batch boundaries, as the notifications do.
        rows.retain(|row| !row.starts_with("notified-"));
        rows.sort();
        dump.insert(table, rows);
    }
    dump
}

/// Every work's provenance entries as the store serves them, one row each:
/// the rows that hold them follow batch boundaries (a batch's entries of a
/// work share one), so two stores of the same events hold different rows.
fn provenance_dump(connection: &rusqlite::Connection) -> Vec<String> {
    let mut statement = connection
        .prepare("SELECT lcc_id, recorded_at, topic, aggregate_version, body FROM provenance_entries ORDER BY lcc_id")
        .expect("select provenance");
    let rows: Vec<(String, ProvenanceKey, Vec<u8>)> = statement
        .query_map([], |row| Ok((row.get(0)?, (row.get(1)?, row.get(2)?, row.get::<_, i64>(3)? as u64), row.get(4)?)))
        .expect("provenance rows")
        .collect::<Result<_, _>>()
        .expect("provenance row values");
    let mut dump = Vec::new();
    for work in rows.chunk_by(|left, right| left.0 == right.0) {
        let stored = work.iter().map(|(_, key, body)| (key.clone(), body.clone()));
        for entry in provenance_entries(stored).expect("a work's provenance reads") {
            dump.push(format!("{} | {}", work[0].0, String::from_utf8_lossy(&entry)));
        }
    }
    dump
}

/// Asserts two dumps are equal, naming the first difference.
pub fn assert_same_documents(expected: &BTreeMap<String, Vec<String>>, actual: &BTreeMap<String, Vec<String>>) {
    assert_eq!(expected.keys().collect::<Vec<_>>(), actual.keys().collect::<Vec<_>>(), "tables differ");
    for (table, rows) in expected {
        let other = &actual[table];
        if rows != other {
            let missing: Vec<&String> = rows.iter().filter(|row| !other.contains(row)).take(3).collect();
            let extra: Vec<&String> = other.iter().filter(|row| !rows.contains(row)).take(3).collect();
            panic!(
                "table {table} differs ({} rows expected, {} found)\n missing: {missing:#?}\n unexpected: {extra:#?}",
                rows.len(),
                other.len()
            );
        }
    }
    let documents: usize = expected.values().map(Vec::len).sum();
    assert!(documents > 0, "the stores are empty: nothing was compared");
}

/// A minimal HTTP/1.1 exchange over a fresh connection: (status, headers, body).
pub fn http(
    address: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, Vec<(String, String)>, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(address).expect("connect");
    // No answer in two minutes is a hang, which fails the test rather than holding it.
    stream.set_read_timeout(Some(Duration::from_secs(120))).expect("a read timeout");
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nhost: {address}\r\nconnection: close\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("receive");
    let (head, body) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let mut lines = head.lines();
    let status =
        lines.next().and_then(|line| line.split_whitespace().nth(1)).and_then(|code| code.parse().ok()).unwrap_or(0);
    let headers = lines
        .filter_map(|line| line.split_once(':'))
        .map(|(name, value)| (name.trim().to_ascii_lowercase(), value.trim().to_owned()))
        .collect();
    (status, headers, body.to_owned())
}

/// Starts `command`, one of our binaries given port 0 in its listen
/// addresses, and waits for the line in which it reports the addresses it
/// bound (see `telemetry::listening`). Returns the child and the addresses
/// by listener name (`public`, `admin`). The rest of its standard output is
/// read and dropped by a thread, so the program never blocks on a full pipe.
pub fn spawn_listening(command: &mut Command) -> (Child, BTreeMap<String, String>) {
    use std::io::{BufRead, BufReader};
    let mut child = command.stdout(Stdio::piped()).spawn().expect("the program starts");
    let stdout = BufReader::new(child.stdout.take().expect("stdout is piped"));
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in stdout.lines().map_while(Result::ok) {
            if let Some(addresses) = telemetry::listening::parse(&line) {
                // Only the first line is awaited; a closed channel drops the rest.
                let _ = sender.send(addresses);
            }
        }
    });
    let addresses = receiver
        .recv_timeout(Duration::from_secs(60))
        .unwrap_or_else(|_| panic!("the program did not report its listeners: {:?}", child.try_wait()));
    let addresses = addresses.into_iter().map(|(name, address)| (name, address.to_string())).collect();
    (child, addresses)
}

/// Starts `query-api serve` over the store `data` on port 0, without a
/// snapshot schedule and logging warnings only. Returns the child and the
/// public listener's address.
pub fn serve_quietly(data: &(impl TestStore + ?Sized)) -> (Child, String) {
    let mut serve = Command::new(binary("query-api"));
    serve
        .args(["serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--snapshot-interval-minutes", "0"])
        .env("RUST_LOG", "warn");
    data.add_store_flags(&mut serve);
    let (server, mut listening) = spawn_listening(&mut serve);
    (server, listening.remove("public").expect("public listener"))
}

/// Fails the test when an external tool (a checker, a browser, the broker)
/// is not installed: a check that did not run must not pass.
/// `scripts/test.sh` installs every one of them.
pub fn require_external_tool(program: &str) {
    if let Err(error) = Command::new(program).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status() {
        panic!("{program} is not installed ({error}); scripts/test.sh installs it");
    }
}

/// The flags every test's Chromium runs with: no background requests, and
/// every host but 127.0.0.1 resolving to nothing, so a page can reach only
/// the test's servers.
pub const CHROMIUM_FLAGS: [&str; 9] = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
];

/// Headless Chromium as the tests run it, with [`CHROMIUM_FLAGS`] and a
/// profile of its own under `profile`.
pub fn headless_chromium(profile: &Path) -> Command {
    let mut command = Command::new("chromium");
    command
        .args(["--headless", "--virtual-time-budget=10000"])
        .args(CHROMIUM_FLAGS)
        .arg(format!("--user-data-dir={}", profile.join("user-data").display()));
    command
}

/// Runs an external checker on `input` (its standard input); the checker must accept it.
pub fn external_check(program: &str, arguments: &[&str], input: &str) {
    use std::io::Write;
    require_external_tool(program);
    let mut child = Command::new(program)
        .args(arguments)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the checker starts");
    child.stdin.take().expect("stdin").write_all(input.as_bytes()).expect("write");
    let output = child.wait_with_output().expect("checker runs");
    assert!(
        output.status.success(),
        "{program} {arguments:?} rejected the input:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The base path of the public API.
pub const BASE_PATH: &str = "/api/v1/public/v1";

/// The resident set size of a process, in KiB.
pub fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("the process's status");
    status
        .lines()
        .find_map(|line| line.strip_prefix("VmRSS:"))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .expect("VmRSS")
}
