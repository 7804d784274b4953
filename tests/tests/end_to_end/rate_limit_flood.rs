//! The rate limiter under a flood of distinct clients, through the real
//! binary behind a (simulated) proxy: 200,000 addresses, each one request,
//! must not restore the quota of a client that is being refused, and must
//! not grow the process without bound.

use std::io::{Read, Write};
use std::net::TcpStream;

use end_to_end_tests::{BASE_PATH, RunningService, resident_kib};

const ADDRESSES: u32 = 200_000;
const CONNECTIONS: u32 = 4;
/// Requests written before their answers are read, per connection.
const PIPELINED: u32 = 200;

#[test]
fn a_refused_client_is_still_refused_after_two_hundred_thousand_other_addresses() {
    // One request a minute per address: the refused client cannot regain a
    // request while the test runs, so only a limiter that forgot it could let it in.
    let service =
        RunningService::start(&[("LCC_TRUST_X_FORWARDED_FOR", "true"), ("LCC_DEFAULT_RATE_LIMIT", "1")], |_| {});
    let refused_client = "192.0.2.1";
    let status_of = |address: &str| {
        let forwarded = [("x-forwarded-for", address)];
        service.request("GET", "/openapi.json", &forwarded, "").0
    };
    assert_eq!(status_of(refused_client), 200);
    assert_eq!(status_of(refused_client), 429, "the second request of the minute is refused");
    let before = resident_kib(service.pid());

    let workers: Vec<_> = (0..CONNECTIONS)
        .map(|connection| {
            let address = service.address.clone();
            std::thread::spawn(move || flood(&address, connection))
        })
        .collect();
    let answered_200: u32 = workers.into_iter().map(|worker| worker.join().expect("flood thread")).sum();
    assert_eq!(answered_200, ADDRESSES, "each new address has its own quota");

    let after = resident_kib(service.pid());
    eprintln!(
        "resident memory: {} MiB before the flood, {} MiB after {ADDRESSES} addresses",
        before / 1024,
        after / 1024
    );
    assert_eq!(status_of(refused_client), 429, "the refused client is still refused");
    assert!(after < before + 256 * 1024, "the flood grew the process by {} MiB", (after - before) / 1024);
}

/// Sends one `HEAD` request from each of this connection's share of the
/// addresses over one keep-alive connection, pipelined; returns how many were answered 200.
fn flood(address: &str, connection: u32) -> u32 {
    let mut stream = TcpStream::connect(address).expect("connect");
    let mut answered_200 = 0;
    let mut pending = Vec::new();
    let mut addresses = (connection..ADDRESSES).step_by(CONNECTIONS as usize).peekable();
    while addresses.peek().is_some() {
        let mut requests = String::new();
        let mut sent = 0;
        for client in addresses.by_ref().take(PIPELINED as usize) {
            requests.push_str(&format!(
                "HEAD {BASE_PATH}/openapi.json HTTP/1.1\r\nhost: {address}\r\nx-forwarded-for: 10.{}.{}.{}\r\n\r\n",
                client >> 16,
                (client >> 8) & 255,
                client & 255
            ));
            sent += 1;
        }
        stream.write_all(requests.as_bytes()).expect("send");
        // HEAD answers carry no body: each ends at its blank line.
        let mut heads = 0;
        let mut buffer = [0_u8; 64 * 1024];
        while heads < sent {
            let read = stream.read(&mut buffer).expect("receive");
            assert!(read > 0, "the service closed the connection");
            pending.extend_from_slice(&buffer[..read]);
            while let Some(end) = pending.windows(4).position(|window| window == b"\r\n\r\n") {
                if pending.starts_with(b"HTTP/1.1 200 ") {
                    answered_200 += 1;
                }
                pending.drain(..end + 4);
                heads += 1;
            }
        }
    }
    answered_200
}
