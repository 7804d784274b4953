//! Connections that never finish their request head, through the real
//! binary: one address opens twice its connection cap of them, the ones
//! past the cap are closed at once, another address (127.0.0.2) is served
//! normally while they are held, and the held ones are closed once the
//! header timeout passes. Oversized and malformed requests are refused at
//! once, as they were before the listener was ours.

use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use end_to_end_tests::{BASE_PATH, RunningService, metric, resident_kib};

const PER_ADDRESS: usize = 50;
const HEADER_TIMEOUT_SECONDS: u64 = 5;

/// Whether the server has closed `stream`: a read gives end of file or a
/// reset. Waits at most `patience` (none: looks without waiting).
fn closed_by_server(stream: &mut TcpStream, patience: Option<Duration>) -> bool {
    stream.set_nonblocking(patience.is_none()).expect("blocking mode");
    stream.set_read_timeout(patience).expect("timeout");
    let mut buffer = [0; 512];
    match stream.read(&mut buffer) {
        Ok(0) => true,
        Ok(_) => false,
        Err(error) => !matches!(error.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut),
    }
}

/// A GET from `source` (a loopback address of the caller's choice) to `server`.
fn get_from(source: Ipv4Addr, server: SocketAddr, path: &str) -> u16 {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    runtime.block_on(async {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.bind(SocketAddr::from((source, 0))).expect("bind the source address");
        let mut stream = socket.connect(server).await.expect("connect");
        let request = format!("GET {BASE_PATH}{path} HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.expect("send");
        let mut response = Vec::new();
        stream.read_to_end(&mut response).await.expect("receive");
        let text = String::from_utf8_lossy(&response);
        text.split_whitespace().nth(1).and_then(|status| status.parse().ok()).unwrap_or(0)
    })
}

#[test]
fn one_address_holding_stalled_connections_cannot_starve_another() {
    let per_address = PER_ADDRESS.to_string();
    let timeout = HEADER_TIMEOUT_SECONDS.to_string();
    let service = RunningService::start(
        &[
            ("LCC_MAX_CONNECTIONS_PER_ADDRESS", per_address.as_str()),
            ("LCC_HEADER_READ_TIMEOUT_SECONDS", timeout.as_str()),
            ("LCC_DEFAULT_RATE_LIMIT", "1000"),
        ],
        |_| {},
    );
    let server: SocketAddr = service.address.parse().expect("address");
    let before = resident_kib(service.pid());
    // The start-up's own requests may hold a connection the server has not
    // yet seen closed, which would count against the cap.
    let started = Instant::now();
    while metric(&service.admin, "lcc_http_connections_open ") != 0 {
        assert!(started.elapsed() < Duration::from_secs(10), "the start-up's connections stay open");
        std::thread::sleep(Duration::from_millis(20));
    }

    // Twice the cap of connections from 127.0.0.1, each with half a request head.
    let opened_at = Instant::now();
    let mut stalled: Vec<TcpStream> = (0..2 * PER_ADDRESS)
        .map(|_| {
            let mut stream = TcpStream::connect(server).expect("connect");
            let half_a_head = format!("GET {BASE_PATH}/openapi.json HTTP/1.1\r\nhost: test\r\n");
            // A connection the server already closed may refuse the write; that is what is checked next.
            let _ = stream.write_all(half_a_head.as_bytes());
            stream
        })
        .collect();
    let mut closed = vec![false; stalled.len()];
    let deadline = Instant::now() + Duration::from_secs(2);
    while closed.iter().filter(|closed| **closed).count() < PER_ADDRESS && Instant::now() < deadline {
        for (stream, closed) in stalled.iter_mut().zip(&mut closed) {
            *closed = *closed || closed_by_server(stream, None);
        }
    }
    let expected: Vec<bool> = (0..2 * PER_ADDRESS).map(|index| index >= PER_ADDRESS).collect();
    assert_eq!(closed, expected, "exactly the connections past the per-address cap are closed at once");
    let held = resident_kib(service.pid());

    // Another address is served while they are held.
    let other = Ipv4Addr::new(127, 0, 0, 2);
    for _ in 0..20 {
        assert_eq!(get_from(other, server, "/sandbox/fixtures"), 200, "127.0.0.2 is served");
    }
    assert!(opened_at.elapsed() < Duration::from_secs(HEADER_TIMEOUT_SECONDS), "checked while they were held");

    // The held ones are closed once the header timeout passes (with a margin for scheduling).
    let deadline = opened_at + Duration::from_secs(HEADER_TIMEOUT_SECONDS + 5);
    for stream in &mut stalled[..PER_ADDRESS] {
        let patience = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(1));
        assert!(closed_by_server(stream, Some(patience)), "a stalled connection outlived the header timeout");
    }
    let closed_after = opened_at.elapsed();
    let after = resident_kib(service.pid());
    eprintln!(
        "resident memory: {before} KiB before, {held} KiB holding {PER_ADDRESS} stalled connections, {after} KiB after \
         they were closed ({:.1} s after opening, header timeout {HEADER_TIMEOUT_SECONDS} s)",
        closed_after.as_secs_f64()
    );
    assert_eq!(get_from(Ipv4Addr::LOCALHOST, server, "/openapi.json"), 200, "the address is served again");
}

/// The status of a raw request: `head` is written whole, then at most
/// `body_bytes` zeros, then the answer's status line is read.
fn raw_status(server: SocketAddr, head: &[u8], body_bytes: usize) -> u16 {
    let mut stream = TcpStream::connect(server).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    // The server may answer and close before everything is written; the answer is what is checked.
    let _ = stream.write_all(head);
    let _ = stream.write_all(&vec![0; body_bytes]);
    let mut answer = Vec::new();
    let mut buffer = [0; 1024];
    while !answer.windows(2).any(|pair| pair == b"\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) | Err(_) => break,
            Ok(read) => answer.extend_from_slice(&buffer[..read]),
        }
    }
    let text = String::from_utf8_lossy(&answer);
    text.split_whitespace().nth(1).and_then(|status| status.parse().ok()).unwrap_or(0)
}

#[test]
fn oversized_and_malformed_requests_are_refused_at_once() {
    let service = RunningService::start(&[], |_| {});
    let server: SocketAddr = service.address.parse().expect("address");
    let long_path = format!("GET {BASE_PATH}/rights/{} HTTP/1.1\r\nhost: test\r\n\r\n", "A".repeat(100_000));
    assert_eq!(raw_status(server, long_path.as_bytes(), 0), 414, "a 100 kB path");
    let large_header =
        format!("GET {BASE_PATH}/openapi.json HTTP/1.1\r\nhost: test\r\nx-large: {}\r\n\r\n", "a".repeat(1 << 20));
    assert_eq!(raw_status(server, large_header.as_bytes(), 0), 431, "a 1 MB header");
    let many: String = (0..10_000).map(|index| format!("x-header-{index}: a\r\n")).collect();
    let many_headers = format!("GET {BASE_PATH}/openapi.json HTTP/1.1\r\nhost: test\r\n{many}\r\n");
    assert_eq!(raw_status(server, many_headers.as_bytes(), 0), 431, "10,000 headers");
    let mut not_utf8 = format!("GET {BASE_PATH}/rights/").into_bytes();
    not_utf8.extend_from_slice(b"%FF%FE HTTP/1.1\r\nhost: test\r\nx-api-key: lcc_live_x\r\n\r\n");
    assert_eq!(raw_status(server, &not_utf8, 0), 400, "a path that is not UTF-8");
    let large_body = format!(
        "POST {BASE_PATH}/sandbox/register HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\n\
         content-length: 52428800\r\n\r\n"
    );
    assert_eq!(raw_status(server, large_body.as_bytes(), 64 * 1024), 413, "a 50 MB body");
}
