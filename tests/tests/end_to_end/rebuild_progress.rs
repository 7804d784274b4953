//! A rebuild shows its progress: on a terminal (a real pseudo-terminal, from
//! util-linux's `script`) a line rewritten in place that ends with every
//! event of the source and none left, with log lines kept off it; elsewhere
//! log lines, and the metrics (rate, events and time left) on its admin
//! listener while it follows.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use end_to_end_tests::{KillOnDrop, avro_files_in, binary, committed_events, http, metric, spawn_listening};
use projector::generate::{GenerateOptions, generate};
use projector::run_progress::grouped;
use projector::source::record_count::records_in;

/// How a terminal's line is cleared before it is drawn again.
const CLEAR_LINE: &str = "\r\x1b[2K";

/// The value of the unlabelled series `name` on the admin listener `admin`, if it is exported.
fn gauge(admin: &str, name: &str) -> Option<f64> {
    let (_, _, metrics) = http(admin, "GET", "/metrics", &[], "");
    let prefix = format!("{name} ");
    metrics.lines().find_map(|line| line.strip_prefix(&prefix)).map(|value| value.parse().expect("a number"))
}

#[test]
fn a_rebuild_shows_its_progress_on_a_terminal_in_its_log_and_in_its_metrics() {
    let directory = tempfile::tempdir().expect("tempdir");
    let events = directory.path().join("events");
    let options = GenerateOptions { works: 3_000, seed: 5, events_per_segment: 2_000, sandbox: false };
    let manifest = generate(&options, &events).expect("generate");

    // What the progress counts before reading: every record of every file, from block headers alone.
    let counted: u64 = avro_files_in(&events).iter().map(|file| records_in(file).expect("a container file")).sum();
    let decoded: usize = avro_files_in(&events)
        .iter()
        .map(|file| apache_avro::Reader::new(std::fs::File::open(file).expect("open")).expect("a container").count())
        .sum();
    assert_eq!(counted, decoded as u64, "block headers count every record");
    assert_eq!(counted, manifest.events as u64, "the generator's manifest agrees");
    let total = format!("{} events in", grouped(counted));

    // On a terminal: the line is rewritten in place; the log line of the
    // shutdown request, written while the line shows, takes a line of its own
    // above it; the last line ends with every event and none left.
    let data = directory.path().join("data");
    let rebuild = format!(
        "exec {} rebuild --into 2 --data-dir {} --source file://{} --admin-listen 127.0.0.1:0",
        binary("projector").display(),
        data.display(),
        events.display()
    );
    let terminal_output = directory.path().join("terminal");
    let script = Command::new("script")
        .args(["--quiet", "--return", "--command", &rebuild, "/dev/null"])
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(Stdio::from(std::fs::File::create(&terminal_output).expect("a file")))
        .spawn()
        .expect("util-linux's script runs");
    let mut script = KillOnDrop(script);
    let terminal = || String::from_utf8_lossy(&std::fs::read(&terminal_output).expect("the output")).into_owned();
    let caught_up = format!("rebuilding model version 2: {total}");
    let started = Instant::now();
    while !terminal().rsplit(CLEAR_LINE).next().is_some_and(|shown| shown.starts_with(&caught_up)) {
        assert!(started.elapsed() < Duration::from_secs(120), "no line showed every event: {:?}", terminal());
        std::thread::sleep(Duration::from_millis(100));
    }
    // `exec` made the projector the shell that script started.
    let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", script.0.id())).expect("children");
    let projector = children.split_whitespace().next().expect("the projector's process id");
    assert!(Command::new("kill").args(["-TERM", projector]).status().expect("kill").success());
    let exited = script.0.wait().expect("script exits");
    let terminal = terminal();
    assert!(exited.success(), "the rebuild failed on a terminal: {terminal}");
    // What a terminal shows of each line: what follows its last clearing.
    let shown: Vec<&str> = terminal.lines().map(|line| line.rsplit(CLEAR_LINE).next().unwrap_or(line)).collect();
    let request = shown.iter().find(|line| line.contains("shutdown requested")).expect("the shutdown's log line");
    assert!(!request.contains("rebuilding model version"), "a log line broke the status line: {terminal:?}");
    // The totals follow on standard output, through the same terminal.
    let last = shown.iter().rfind(|line| line.contains("rebuild into model version 2 ended: ")).expect("a last line");
    assert!(last.starts_with("rebuild into model version 2 ended: "), "{terminal:?}");
    assert!(last.contains(&total) && last.ends_with(", none left to read"), "{last}");
    eprintln!("the last line on the terminal: {last}");

    // Elsewhere: log lines, and while the rebuild follows the directory, its metrics.
    let log = directory.path().join("rebuild.log");
    let mut following = Command::new(binary("projector"));
    following
        .args(["rebuild", "--into", "3", "--admin-listen", "127.0.0.1:0", "--data-dir"])
        .arg(&data)
        .arg("--source")
        .arg(format!("file://{}", events.display()))
        .env("RUST_LOG", "info")
        .stderr(Stdio::from(std::fs::File::create(&log).expect("a log file")));
    let (child, listening) = spawn_listening(&mut following);
    let child = KillOnDrop(child);
    let admin = &listening["admin"];
    let started = Instant::now();
    while committed_events(admin) < counted || metric(admin, "lcc_projector_documents_awaiting_render") > 0 {
        assert!(started.elapsed() < Duration::from_secs(120), "the rebuild did not catch up");
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(gauge(admin, "lcc_projector_events_left"), Some(0.0));
    assert_eq!(gauge(admin, "lcc_projector_estimated_seconds_left"), Some(0.0));
    let rate = gauge(admin, "lcc_projector_events_per_second").expect("a rate");
    assert!(rate > 0.0, "{rate}");
    eprintln!("caught up: {counted} events committed, 0 left, {rate:.0} events/s by the metrics");

    let stopped = Command::new("kill").arg("-TERM").arg(child.0.id().to_string()).status().expect("kill");
    assert!(stopped.success());
    let mut child = child;
    assert!(child.0.wait().expect("exit").success(), "SIGTERM ends the rebuild cleanly");
    let logged = std::fs::read_to_string(&log).expect("the log");
    let ended = logged.lines().find(|line| line.contains("rebuild ended: ")).expect("the last progress line");
    assert!(ended.contains(&total) && ended.contains("none left to read"), "{ended}");
}
