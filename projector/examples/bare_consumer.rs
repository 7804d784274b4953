//! The benchmark's baseline: an rdkafka consumer that drains the six topics
//! and does nothing with the messages. `scripts/bench-kafka.sh` runs it
//! beside the projector on the same topics, in the same run.
//!
//! `cargo run --release -p projector --example bare_consumer -- HOST:PORT [PREFIX]`
//! prints `{"messages": N, "seconds": S, "messagesPerSecond": R}`.

use std::time::{Duration, Instant};

use anyhow::Context;
use rdkafka::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::KafkaError;

fn main() -> anyhow::Result<()> {
    let mut arguments = std::env::args().skip(1);
    let bootstrap = arguments.next().context("usage: bare_consumer HOST:PORT [PREFIX]")?;
    let prefix = arguments.next().unwrap_or_default();
    let consumer: BaseConsumer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("group.id", format!("bare-consumer-{}", std::process::id()))
        .set("enable.auto.commit", "false")
        .set("auto.offset.reset", "earliest")
        .set("enable.partition.eof", "true")
        .create()
        .context("failed to create the consumer")?;
    let topics: Vec<String> = ["works", "rights", "licenses", "disputes", "certificates", "parties"]
        .iter()
        .map(|topic| format!("{prefix}{topic}"))
        .collect();
    consumer.subscribe(&topics.iter().map(String::as_str).collect::<Vec<_>>()).context("failed to subscribe")?;
    let mut partitions_at_end = 0;
    let mut messages = 0_u64;
    let mut started = None;
    loop {
        match consumer.poll(Duration::from_millis(500)) {
            Some(Ok(_)) => {
                started.get_or_insert_with(Instant::now);
                messages += 1;
            }
            // The topics are complete before the drain starts, so each
            // partition reaches its end once (the event names no topic).
            Some(Err(KafkaError::PartitionEOF(_))) => {
                partitions_at_end += 1;
                let assignment = consumer.assignment().context("failed to read the assignment")?;
                if started.is_some() && partitions_at_end >= assignment.count() {
                    break;
                }
            }
            Some(Err(error)) => return Err(error).context("failed to consume"),
            None => {}
        }
    }
    let seconds = started.map_or(0.0, |at| at.elapsed().as_secs_f64());
    println!(
        "{}",
        serde_json::json!({
            "messages": messages,
            "seconds": seconds,
            "messagesPerSecond": (messages as f64 / seconds.max(1e-9)).round(),
        })
    );
    Ok(())
}
