//! Signed webhooks from the real binaries to an independent receiver
//! (`tests/webhooks/receiver.py`: Python's standard library and
//! `cryptography`), over HTTPS with a certificate of the receiver's own
//! authority: every delivery's `v1a` signature verifies with the key set
//! served at `/keys`, a changed body or an old timestamp is rejected, and a
//! delivering process killed mid-delivery and started again loses nothing
//! and repeats only a message the receiver already knows by its id. In
//! production, an endpoint on a loopback, private or metadata address is
//! refused when added, and a name that resolves to one only at delivery
//! time is refused then.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use end_to_end_tests::{
    BASE_PATH, KillOnDrop, avro_files_in, binary, copy_files, every_notification, http, issue_production_key_with_id,
    project, require_external_tool, spawn_listening, workspace_root,
};
use projector::generate::{GenerateOptions, generate};
use serde_json::Value;

/// The independent receiver, serving HTTPS on a loopback port.
struct Receiver {
    child: Child,
    lines: BufReader<ChildStdout>,
    port: u16,
    directory: PathBuf,
}

impl Receiver {
    /// Starts it; it reads the key set from `DIRECTORY/keys.json` at its first request.
    fn start(directory: &Path, hold_first_seconds: u32) -> Receiver {
        std::fs::create_dir_all(directory).expect("receiver directory");
        let mut child = Command::new("python3")
            .arg(workspace_root().join("tests/webhooks/receiver.py"))
            .args(["serve", "--keys-file"])
            .arg(directory.join("keys.json"))
            .arg("--directory")
            .arg(directory)
            .args(["--hold-first", &hold_first_seconds.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the receiver");
        let mut lines = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        lines.read_line(&mut line).expect("the receiver reports its port");
        let port = line.trim().strip_prefix("listening ").and_then(|port| port.parse().ok()).expect("listening PORT");
        Receiver { child, lines, port, directory: directory.to_owned() }
    }

    /// The next line it prints.
    fn next_line(&mut self) -> String {
        let mut line = String::new();
        self.lines.read_line(&mut line).expect("a line of the receiver");
        line
    }

    fn ca(&self) -> PathBuf {
        self.directory.join("ca.pem")
    }

    /// Every request it logged: {"id", "verdict", "headers", "body"}.
    fn log(&self) -> Vec<Value> {
        let text = std::fs::read_to_string(self.directory.join("log.jsonl")).unwrap_or_default();
        text.lines().map(|line| serde_json::from_str(line).expect("a JSON line")).collect()
    }

    /// Waits until its log satisfies `condition`.
    fn wait_for(&self, what: &str, condition: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        let deadline = Instant::now() + Duration::from_secs(90);
        loop {
            let log = self.log();
            if condition(&log) {
                return log;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}: {} requests logged", log.len());
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `query-api serve` on `data` delivering webhooks promptly, trusting the
/// roots of `ca` (Mozilla's without): the process and its public address.
fn serve(data: &Path, ca: Option<&Path>, arguments: &[&str]) -> (KillOnDrop, String) {
    let mut command = Command::new(binary("query-api"));
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--admin-listen", "127.0.0.1:0", "--snapshot-interval-minutes", "0"])
        .args(["--webhook-poll-milliseconds", "100", "--webhook-lease-seconds", "3", "--webhook-batch", "25"]);
    if let Some(ca) = ca {
        command.arg("--webhook-ca-file").arg(ca);
    }
    command.arg("--data-dir").arg(data).args(arguments).env("RUST_LOG", "warn");
    let (child, mut listening) = spawn_listening(&mut command);
    (KillOnDrop(child), listening.remove("public").expect("public"))
}

/// Runs `query-api webhooks --data-dir DATA ARGUMENTS…`: (success, stdout, stderr).
fn webhooks_command(data: &Path, arguments: &[&str]) -> (bool, String, String) {
    let output = Command::new(binary("query-api"))
        .arg("webhooks")
        .arg("--data-dir")
        .arg(data)
        .args(arguments)
        .env("RUST_LOG", "warn")
        .output()
        .expect("query-api webhooks runs");
    let text = |bytes: &[u8]| String::from_utf8_lossy(bytes).into_owned();
    (output.status.success(), text(&output.stdout), text(&output.stderr))
}

/// The notifications the receiver stored, in order, checking that each
/// stored message continues from the one before.
fn stored_notifications(log: &[Value]) -> Vec<Value> {
    let mut previous: Option<Value> = None;
    let mut notifications = Vec::new();
    for entry in log.iter().filter(|entry| entry["verdict"] == "stored") {
        let message: Value = serde_json::from_str(entry["body"].as_str().expect("body")).expect("JSON");
        if let Some(previous) = &previous {
            assert_eq!(&message["previous"], previous, "each message continues from the one before");
        }
        previous = Some(message["next"].clone());
        notifications.extend(message["notifications"].as_array().expect("notifications").iter().cloned());
    }
    notifications
}

fn write_key_set(address: &str, receiver: &Receiver) {
    let (status, _, key_set) = http(address, "GET", &format!("{BASE_PATH}/keys"), &[], "");
    assert_eq!(status, 200);
    std::fs::write(receiver.directory.join("keys.json"), key_set).expect("keys.json");
}

/// The key's first webhook subscription as `GET /webhooks` shows it, once an attempt failed.
fn wait_for_attempt(address: &str, key: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, _, body) = http(address, "GET", &format!("{BASE_PATH}/webhooks"), &[("x-api-key", key)], "");
        assert_eq!(status, 200, "{body}");
        let listed: Value = serde_json::from_str(&body).expect("JSON");
        if listed["webhooks"][0]["lastError"].is_string() {
            return listed["webhooks"][0].clone();
        }
        assert!(Instant::now() < deadline, "no failed attempt within 30 s: {listed}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Runs the receiver's offline check on one logged request.
fn check(receiver: &Receiver, entry: &Value, now: Option<i64>) -> (bool, String) {
    let message = receiver.directory.join("message.json");
    std::fs::write(&message, entry.to_string()).expect("message.json");
    let mut command = Command::new("python3");
    command.arg(workspace_root().join("tests/webhooks/receiver.py")).args(["check", "--keys"]);
    command.arg(receiver.directory.join("keys.json")).arg("--message").arg(&message);
    if let Some(now) = now {
        command.args(["--now", &now.to_string()]);
    }
    let output = command.output().expect("python3 runs the check");
    (output.status.success(), String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

#[test]
fn deliveries_verify_with_the_published_key_and_a_killed_deliverer_loses_nothing() {
    require_external_tool("python3");
    let directory = tempfile::tempdir().expect("tempdir");
    let generated = directory.path().join("generated");
    generate(&GenerateOptions { works: 60, seed: 48, events_per_segment: 150, sandbox: false }, &generated)
        .expect("generate");
    let files = avro_files_in(&generated);
    let third = files.len() / 3;
    let (events, data) = (directory.path().join("events"), directory.path().join("data"));
    std::fs::create_dir_all(&events).expect("events");
    copy_files(&files[..third], &events);
    project(&events, &data, 500);
    let (key, key_id) = issue_production_key_with_id(&data, &["notifications:read"], 1_000);

    let mut receiver = Receiver::start(&directory.path().join("receiver"), 30);
    // First without the receiver's authority among the trusted roots: TLS is verified.
    let (api, address) = serve(&data, None, &[]);
    write_key_set(&address, &receiver);
    let before = every_notification(&address, &key);
    let endpoint = format!("https://127.0.0.1:{}/hooks", receiver.port);
    let (added, id, told) = webhooks_command(&data, &["add", "--key", &key_id, "--endpoint", &endpoint]);
    assert!(added, "{told}");
    let id = id.trim().to_owned();
    assert!(id.starts_with("wh_"), "{id}");
    let refused = wait_for_attempt(&address, &key);
    let error = refused["lastError"].as_str().unwrap_or_default();
    assert!(error.contains("UnknownIssuer"), "a certificate of an unknown authority is refused: {error}");
    assert!(receiver.log().is_empty(), "nothing was posted over the unverified connection");
    drop(api);

    let (mut api, _) = serve(&data, Some(&receiver.ca()), &[]);
    receiver.wait_for("the challenge", |log| log.iter().any(|entry| entry["verdict"] == "challenge"));

    // The registry moves on; the receiver holds its answer to the first
    // delivery, and the delivering process is killed meanwhile.
    copy_files(&files[third..2 * third], &events);
    project(&events, &data, 500);
    let holding = receiver.next_line();
    assert!(holding.starts_with("holding msg_"), "{holding}");
    api.0.kill().expect("kill the delivering process");
    api.0.wait().expect("killed");

    let (_api, address) = serve(&data, Some(&receiver.ca()), &[]);
    copy_files(&files[2 * third..], &events);
    project(&events, &data, 500);
    let everything = every_notification(&address, &key);
    let expected = &everything[before.len()..];
    assert!(expected.len() > 50, "{} notifications after the webhook was added", expected.len());
    let newest = everything.last().expect("notifications")["cursor"].clone();
    let log = receiver.wait_for("every notification", |log| {
        stored_notifications(log).last().is_some_and(|last| last["cursor"] == newest)
    });
    // Deliveries start at the millisecond the webhook was added in the
    // feed's time, which runs ahead of the clock while batches commit
    // faster than one a millisecond: a few recorded just before may come too.
    let delivered = stored_notifications(&log);
    let start = everything.len() - delivered.len();
    assert!(start <= before.len(), "nothing recorded after the webhook was added is missing");
    assert_eq!(delivered, everything[start..], "every notification, in order, as the pull feed serves it");

    let stored: Vec<&Value> = log.iter().filter(|entry| entry["verdict"] == "stored").collect();
    let duplicates: Vec<&Value> = log.iter().filter(|entry| entry["verdict"] == "duplicate").collect();
    assert!(!duplicates.is_empty(), "the message in flight when the process died was posted again");
    for duplicate in &duplicates {
        assert!(stored.iter().any(|entry| entry["id"] == duplicate["id"]), "a repeat carries a known webhook-id");
    }
    let rejected: Vec<&Value> = log
        .iter()
        .filter(|entry| entry["verdict"].as_str().is_some_and(|verdict| verdict.starts_with("rejected")))
        .collect();
    assert!(rejected.is_empty(), "every delivery verifies with a key of /keys: {rejected:?}");
    for entry in &log {
        assert!(entry["headers"]["webhook-signature"].as_str().is_some_and(|signature| signature.starts_with("v1a,")));
    }

    // The receiver's check rejects a changed body and an old timestamp.
    let genuine = stored[0];
    assert_eq!(check(&receiver, genuine, None), (true, "valid".to_owned()));
    let mut changed = genuine.clone();
    changed["body"] = Value::from(genuine["body"].as_str().expect("body").replacen("\"version\":", "\"version\":1", 1));
    assert_eq!(check(&receiver, &changed, None), (false, "rejected: no signature verifies".to_owned()));
    let timestamp: i64 = genuine["headers"]["webhook-timestamp"].as_str().expect("timestamp").parse().expect("seconds");
    let late = check(&receiver, genuine, Some(timestamp + 600));
    assert_eq!(late, (false, "rejected: timestamp too old or too new".to_owned()));

    // What the partner and the operator read of it.
    let (status, _, body) = http(&address, "GET", &format!("{BASE_PATH}/webhooks"), &[("x-api-key", &key)], "");
    assert_eq!(status, 200, "{body}");
    let listed: Value = serde_json::from_str(&body).expect("JSON");
    let view = &listed["webhooks"][0];
    assert_eq!((view["id"].as_str(), view["status"].as_str()), (Some(id.as_str()), Some("active")), "{view}");
    assert_eq!(view["delivered"].as_u64(), Some(delivered.len() as u64));
    let (listed, lines, _) = webhooks_command(&data, &["list"]);
    assert!(listed && lines.contains(&id) && lines.contains("\tactive\t"), "{lines}");
    let (paused, _, _) = webhooks_command(&data, &["pause", &id]);
    let (_, lines, _) = webhooks_command(&data, &["list"]);
    assert!(paused && lines.contains("\tpaused\t"), "{lines}");
    let (removed, _, _) = webhooks_command(&data, &["remove", &id]);
    let (_, lines, _) = webhooks_command(&data, &["list"]);
    assert!(removed && lines.trim().is_empty(), "{lines}");
    eprintln!(
        "{} notifications in {} messages, {} posted again after the kill, all verified by the Python receiver",
        delivered.len(),
        stored.len(),
        duplicates.len()
    );
}

#[test]
fn in_production_refused_addresses_are_refused_when_added_and_when_a_name_resolves_there_at_delivery() {
    require_external_tool("python3");
    let directory = tempfile::tempdir().expect("tempdir");
    let generated = directory.path().join("generated");
    generate(&GenerateOptions { works: 10, seed: 49, events_per_segment: 10_000, sandbox: false }, &generated)
        .expect("generate");
    let data = directory.path().join("data");
    project(&generated, &data, 500);
    let (key, key_id) = issue_production_key_with_id(&data, &["notifications:read"], 1_000);
    let init = Command::new(binary("query-api")).args(["signing-keys", "--data-dir"]).arg(&data).arg("init").output();
    assert!(init.expect("signing-keys init").status.success());
    let production = ["--environment", "production"];
    for endpoint in
        ["https://127.0.0.1/hooks", "https://10.1.2.3/hooks", "https://169.254.169.254/latest", "http://example.org/"]
    {
        let (added, _, told) = webhooks_command(
            &data,
            &[&["add", "--key", &key_id, "--endpoint", endpoint][..], &production[..]].concat(),
        );
        assert!(!added, "{endpoint} is refused in production");
        assert!(told.contains("refused") || told.contains("https://"), "{endpoint}: {told}");
    }

    // A name that resolves to a public address when added and to loopback when delivered.
    let receiver = Receiver::start(&directory.path().join("receiver"), 0);
    let endpoint = format!("https://hooks.partner.test:{}/hooks", receiver.port);
    let arguments =
        ["add", "--key", &key_id, "--endpoint", &endpoint, "--webhook-resolve", "hooks.partner.test=192.0.2.10"];
    let (added, _, told) = webhooks_command(&data, &[&arguments[..], &production[..]].concat());
    assert!(added, "{told}");
    let (_api, address) = serve(
        &data,
        Some(&receiver.ca()),
        &[
            "--environment",
            "production",
            "--sandbox-key-secret",
            "webhooks-test-secret",
            "--webhook-resolve",
            "hooks.partner.test=127.0.0.1",
        ],
    );
    let view = wait_for_attempt(&address, &key);
    let error = view["lastError"].as_str().expect("lastError");
    assert!(error.contains("refused: hooks.partner.test resolves to 127.0.0.1, a loopback address"), "{error}");
    assert_eq!(view["status"], "retrying");
    assert!(receiver.log().is_empty(), "nothing reached the receiver");
}
