//! The notification stream through the shipped balancer configuration in a
//! real nginx, in front of two real replicas over one store that a real
//! projector writes while the stream is open: events arrive as they are
//! recorded, and a client that loses its connection and its replica
//! resumes with `Last-Event-ID` on the other and misses nothing.

use std::io::{BufRead, BufReader, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use end_to_end_tests::balancer::{Balancer, Replica};
use end_to_end_tests::{BASE_PATH, avro_files_in, copy_files, every_notification, issue_production_key, project};
use projector::generate::{GenerateOptions, generate};
use serde_json::Value;

/// An open stream: the connection, and the notifications its reader thread has parsed.
struct EventStream {
    connection: TcpStream,
    events: Receiver<(String, Value)>,
}

impl EventStream {
    /// Opens the stream through `address` as HTTP/1.0, so that the body is
    /// the events as they are, delimited by the connection's end.
    fn open(address: &str, key: &str, last_event_id: Option<&str>) -> EventStream {
        let mut connection = TcpStream::connect(address).expect("connect");
        let resume = last_event_id.map(|id| format!("last-event-id: {id}\r\n")).unwrap_or_default();
        let request = format!(
            "GET {BASE_PATH}/notifications/stream HTTP/1.0\r\nhost: {address}\r\nx-api-key: {key}\r\n{resume}\r\n"
        );
        connection.write_all(request.as_bytes()).expect("send");
        let mut reader = BufReader::new(connection.try_clone().expect("clone"));
        let mut status = String::new();
        reader.read_line(&mut status).expect("status line");
        assert!(status.contains(" 200 "), "{status}");
        let (sender, events) = channel();
        std::thread::spawn(move || {
            let (mut id, mut data, mut name): (Option<String>, Option<String>, Option<String>) = (None, None, None);
            for line in reader.lines() {
                let Ok(line) = line else { return };
                if line.is_empty() {
                    if let (Some("notification"), Some(id), Some(data)) = (name.as_deref(), id.take(), data.take()) {
                        let data: Value = serde_json::from_str(&data).expect("JSON data");
                        if sender.send((id, data)).is_err() {
                            return;
                        }
                    }
                    name = None;
                } else if let Some(value) = line.strip_prefix("event: ") {
                    name = Some(value.to_owned());
                } else if let Some(value) = line.strip_prefix("id: ") {
                    id = Some(value.to_owned());
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data = Some(value.to_owned());
                }
            }
        });
        EventStream { connection, events }
    }

    /// The next `count` notifications, within a deadline.
    fn next(&self, count: usize) -> Vec<(String, Value)> {
        let deadline = Instant::now() + Duration::from_secs(60);
        (0..count)
            .map(|received| match self.events.recv_timeout(deadline.saturating_duration_since(Instant::now())) {
                Ok(event) => event,
                Err(RecvTimeoutError::Timeout) => panic!("{received} of {count} notifications within a minute"),
                Err(RecvTimeoutError::Disconnected) => panic!("the stream ended after {received} of {count}"),
            })
            .collect()
    }

    fn disconnect(self) {
        let _ = self.connection.shutdown(Shutdown::Both);
    }
}

fn cursors(items: &[Value]) -> Vec<String> {
    items.iter().map(|item| item["cursor"].as_str().expect("cursor").to_owned()).collect()
}

fn project_files(files: &[std::path::PathBuf], events: &Path, data: &Path) {
    copy_files(files, events);
    project(events, data, 500);
}

#[test]
fn a_stream_through_the_balancer_resumes_on_the_other_replica_and_misses_nothing() {
    let directory = tempfile::tempdir().expect("tempdir");
    let generated = directory.path().join("generated");
    generate(&GenerateOptions { works: 90, seed: 46, events_per_segment: 150, sandbox: false }, &generated)
        .expect("generate");
    let files = avro_files_in(&generated);
    let third = files.len() / 3;
    let (events, data) = (directory.path().join("events"), directory.path().join("data"));
    std::fs::create_dir_all(&events).expect("events");
    project_files(&files[..third], &events, &data);
    let key = issue_production_key(&data, &["notifications:read"], 1_000);
    let replicas = [Replica::start(&data, 1_000), Replica::start(&data, 1_000)];
    let balancer = Balancer::start(directory.path(), [replicas[0].public.as_str(), replicas[1].public.as_str()]);

    let before = [replicas[0].answered(), replicas[1].answered()];
    let stream = EventStream::open(&balancer.address, &key, None);
    let first = every_notification(&balancer.address, &key);
    assert!(!first.is_empty());
    let mut received = stream.next(first.len());
    let serving = usize::from(replicas[1].answered() > before[1] && replicas[0].answered() == before[0]);

    // The registry moves on while the stream is open: its notifications arrive as they are recorded.
    project_files(&files[third..2 * third], &events, &data);
    let second = every_notification(&balancer.address, &key);
    assert!(second.len() > first.len(), "the second part notifies");
    let moved_on = second.len() - first.len();
    received.extend(stream.next(moved_on / 2));

    // The client loses its connection and its replica; the registry moves on again.
    stream.disconnect();
    let [one, other] = replicas;
    let survivor = if serving == 0 {
        drop(one);
        other
    } else {
        drop(other);
        one
    };
    project_files(&files[2 * third..], &events, &data);
    let last_id = received.last().expect("events").0.clone();
    let resumed = EventStream::open(&balancer.address, &key, Some(&last_id));
    let everything = every_notification(&balancer.address, &key);
    received.extend(resumed.next(everything.len() - received.len()));
    assert!(survivor.answered() > 0, "the survivor serves the resumed stream");

    let ids: Vec<String> = received.iter().map(|(id, _)| id.clone()).collect();
    assert_eq!(ids, cursors(&everything), "every notification once, in order, across the disconnect");
    let data: Vec<&Value> = received.iter().map(|(_, data)| data).collect();
    assert_eq!(data, everything.iter().collect::<Vec<_>>(), "each event is the pull feed's item");
    eprintln!("{} notifications streamed through nginx, resumed once on the other replica", received.len());
}
