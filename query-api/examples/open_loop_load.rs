//! An open-loop load of rights-by-id lookups for the scale benchmark
//! (`scripts/bench-scale.sh`): requests are sent on a fixed schedule, the
//! i-th at `start + i / RATE`, whatever the answers before it took, and a
//! request that waits for a busy connection has its latency measured from
//! the time it was due, not from when a connection got round to sending it.
//! A closed loop such as wrk's waits for an answer before it sends the next
//! request, so a slow answer delays the requests behind it and their wait is
//! never counted; this load counts it.
//!
//! The due requests are shared by `CONNECTIONS` keep-alive HTTP/1.1
//! connections, one request at a time each; when all are busy the next due
//! request waits, and its wait is part of its latency. Ids are drawn
//! uniformly from `LCC-0000000000` to `LCC-<WORKS - 1>`. It prints one JSON
//! line: the rate asked for and reached, the latency percentiles in
//! milliseconds, and the answers that were not 200 (errors).
//!
//!     open_loop_load ADDRESS WORKS RATE SECONDS CONNECTIONS   (key in BENCH_API_KEY)

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::{Context, bail};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::Instant;

const USAGE: &str = "usage: open_loop_load ADDRESS WORKS RATE SECONDS CONNECTIONS";

struct Load {
    address: String,
    works: u64,
    rate: f64,
    duration: Duration,
    api_key: String,
}

/// What one connection saw: each answer's latency in microseconds, and how
/// many answers were not 200.
#[derive(Default)]
struct Answers {
    latencies_micros: Vec<u64>,
    errors: u64,
}

fn main() -> anyhow::Result<()> {
    let mut arguments = std::env::args().skip(1);
    let mut next = |name: &str| arguments.next().with_context(|| format!("missing {name}; {USAGE}"));
    let address = next("ADDRESS")?;
    let works: u64 = next("WORKS")?.parse().context("WORKS is a number")?;
    let rate: f64 = next("RATE")?.parse().context("RATE is a number")?;
    let seconds: f64 = next("SECONDS")?.parse().context("SECONDS is a number")?;
    let connections: u64 = next("CONNECTIONS")?.parse().context("CONNECTIONS is a number")?;
    if works == 0 || rate <= 0.0 || seconds <= 0.0 || connections == 0 {
        bail!("WORKS, RATE, SECONDS and CONNECTIONS must be positive; {USAGE}");
    }
    let api_key = std::env::var("BENCH_API_KEY").unwrap_or_default();
    let load = Arc::new(Load { address, works, rate, duration: Duration::from_secs_f64(seconds), api_key });
    // One thread: the load shares the machine with the server it measures.
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().context("failed to start")?;
    runtime.block_on(run(load, connections))
}

async fn run(load: Arc<Load>, connections: u64) -> anyhow::Result<()> {
    let start = Instant::now() + Duration::from_millis(100);
    let next_request = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for connection in 0..connections {
        let (load, next_request) = (Arc::clone(&load), Arc::clone(&next_request));
        tasks.push(tokio::spawn(async move { send_due_requests(&load, start, &next_request, connection + 1).await }));
    }
    let mut answers = Answers::default();
    for task in tasks {
        let connection = task.await.context("a connection's task failed")??;
        answers.latencies_micros.extend(connection.latencies_micros);
        answers.errors += connection.errors;
    }
    let elapsed = start.elapsed().as_secs_f64();
    answers.latencies_micros.sort_unstable();
    let percentile = |fraction: f64| {
        let sorted = &answers.latencies_micros;
        let index = ((sorted.len() as f64 * fraction).ceil() as usize).clamp(1, sorted.len().max(1)) - 1;
        sorted.get(index).map_or(0.0, |micros| *micros as f64 / 1000.0)
    };
    println!(
        "{{\"rateAsked\":{:.0},\"rateReached\":{:.0},\"requests\":{},\"p50Ms\":{:.2},\"p99Ms\":{:.2},\"p999Ms\":{:.2},\"maxMs\":{:.2},\"errors\":{}}}",
        load.rate,
        answers.latencies_micros.len() as f64 / elapsed,
        answers.latencies_micros.len(),
        percentile(0.5),
        percentile(0.99),
        percentile(0.999),
        percentile(1.0),
        answers.errors
    );
    Ok(())
}

/// Takes the next due request, waits until it is due, sends it and reads
/// the answer, until the requests due within the duration run out.
async fn send_due_requests(
    load: &Load,
    start: Instant,
    next_request: &AtomicU64,
    seed: u64,
) -> anyhow::Result<Answers> {
    let stream =
        TcpStream::connect(&load.address).await.with_context(|| format!("failed to connect to {}", load.address))?;
    stream.set_nodelay(true).context("failed to set TCP_NODELAY")?;
    let (reader, mut writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    let mut random = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut answers = Answers::default();
    let mut line = String::new();
    let mut body = Vec::new();
    loop {
        let index = next_request.fetch_add(1, Ordering::Relaxed);
        let due = start + Duration::from_secs_f64(index as f64 / load.rate);
        if due >= start + load.duration {
            return Ok(answers);
        }
        let taken = Instant::now();
        tokio::time::sleep_until(due).await;
        // A request taken before it was due waited only for this program's
        // timer, which wakes up to a millisecond late: its latency counts from
        // when it was sent. One taken late waited for a busy connection, that
        // is for the server: its latency counts from when it was due.
        let counted_from = if taken < due { Instant::now() } else { due };
        // xorshift64: cheap, and uniform enough to spread ids over the registry.
        random ^= random << 13;
        random ^= random >> 7;
        random ^= random << 17;
        let request = format!(
            "GET /api/v1/public/v1/rights/LCC-{:010} HTTP/1.1\r\nhost: {}\r\nx-api-key: {}\r\n\r\n",
            random % load.works,
            load.address,
            load.api_key
        );
        writer.write_all(request.as_bytes()).await.context("failed to send a request")?;
        line.clear();
        reader.read_line(&mut line).await.context("failed to read a status line")?;
        let status = line.split_whitespace().nth(1).context("an answer without a status")?.to_owned();
        let mut content_length = None;
        loop {
            line.clear();
            if reader.read_line(&mut line).await.context("failed to read a header")? == 0 {
                bail!("the server closed the connection");
            }
            let header = line.trim_end();
            if header.is_empty() {
                break;
            }
            if let Some((name, value)) = header.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                content_length = Some(value.trim().parse::<usize>().context("a content-length that is not a number")?);
            }
        }
        body.resize(content_length.context("an answer without content-length")?, 0);
        reader.read_exact(&mut body).await.context("failed to read a body")?;
        answers.latencies_micros.push(counted_from.elapsed().as_micros() as u64);
        if status != "200" {
            answers.errors += 1;
        }
    }
}
