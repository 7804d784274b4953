//! When the loop parks poison events and when it waits for them to be
//! durable: parked as each batch is projected, flushed only before a write
//! that carries checkpoints.

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use projector::contract::{Contract, Topic};
use projector::dead_letter::{DeadLetterFile, DeadLetterSink, ParkedEvent};
use projector::generate::drafts::{Draft, Payload};
use projector::render_deferral::RenderDeferral;
use projector::runner::{NoObserver, RunOptions, run};
use projector::source::file::FileSource;
use read_model::calendar::Timestamp;
use read_model::{ModelVersion, ProjectionWrites, Store};
use support::{Projection, T0, party, published, work};

/// What the loop asked of the sink, in order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Call {
    /// Events handed over.
    Park(usize),
    Flush,
}

/// The dead-letter file, noting each call.
struct RecordingSink {
    file: DeadLetterFile,
    calls: Arc<Mutex<Vec<Call>>>,
}

impl DeadLetterSink for RecordingSink {
    fn park(&mut self, source: &str, events: &[ParkedEvent]) -> anyhow::Result<usize> {
        if !events.is_empty() {
            self.calls.lock().expect("calls").push(Call::Park(events.len()));
        }
        DeadLetterSink::park(&mut self.file, source, events)
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        self.calls.lock().expect("calls").push(Call::Flush);
        DeadLetterSink::flush(&mut self.file)
    }
}

/// Two parties, then (the works topic's file) a work with four poison events
/// among its own: in batches of two, every batch of the work's file holds poison.
fn stream_with_poison() -> Vec<Draft> {
    let unregistered = |id: &str, at| Draft::new(Topic::Works, id, at, Payload::WorkPublished(Timestamp(at)));
    vec![
        party("PTY-1", "Ada Adler", T0),
        party("PTY-2", "Bo Berg", T0 + 1),
        unregistered("LCC-404", T0 + 2),
        work("LCC-1", "PTY-1", T0 + 3),
        unregistered("LCC-405", T0 + 4),
        published("LCC-1", T0 + 5),
        unregistered("LCC-406", T0 + 6),
        unregistered("LCC-407", T0 + 7),
    ]
}

/// The number of events handed over in `calls`.
fn parked(calls: &[Call]) -> usize {
    calls.iter().map(|call| if let Call::Park(count) = call { *count } else { 0 }).sum()
}

/// Projects the stream in batches of two; returns the sink's calls and the batches written.
async fn project_with_poison(render_deferral: RenderDeferral) -> (Vec<Call>, u64, Projection) {
    let projection = Projection::new().await;
    let events = projection.write("events", stream_with_poison(), 100);
    let source = FileSource::new(&events, Arc::new(Contract::load().expect("contract")));
    let source_id = source.source_id().to_owned();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let file = DeadLetterFile::open(&projection.dead_letter_path(&events)).expect("dead letters");
    let sink = RecordingSink { file, calls: Arc::clone(&calls) };
    let options = RunOptions {
        batch_size: 2,
        linger: Duration::from_secs(3600),
        exit_when_caught_up: true,
        render_deferral,
        ..RunOptions::default()
    };
    let store: Arc<dyn Store> = Arc::new(projection.store.clone());
    let version = ModelVersion(1);
    let feed = source.start(options.batch_size, Duration::from_millis(10)).expect("reader");
    let totals = run(Arc::clone(&store), version, feed, Box::new(sink), Arc::new(NoObserver), options, async {
        std::future::pending::<()>().await;
    })
    .await
    .expect("run");
    assert_eq!((totals.applied, totals.parked), (4, 4));
    let parked = DeadLetterFile::read_all(&projection.dead_letter_path(&events)).expect("letters");
    assert_eq!(parked.len(), 4, "every poison event is in the file");
    let checkpoints = projection.store.checkpoints(version, &source_id).await.expect("checkpoints");
    assert_eq!(checkpoints.iter().map(|checkpoint| checkpoint.next_offset).sum::<i64>(), 8, "{checkpoints:?}");
    let calls = calls.lock().expect("calls").clone();
    (calls, totals.batches, projection)
}

#[tokio::test]
async fn deferred_batches_park_their_poison_at_once_and_flush_once_before_the_checkpoints_are_written() {
    let (calls, _, _projection) = project_with_poison(RenderDeferral::DEFAULT).await;
    assert_eq!(parked(&calls), 4, "{calls:?}");
    assert!(calls.iter().filter(|call| matches!(call, Call::Park(_))).count() >= 2, "parked batch by batch: {calls:?}");
    let flushes: Vec<usize> = (0..calls.len()).filter(|index| calls[*index] == Call::Flush).collect();
    assert_eq!(flushes, [calls.len() - 1], "one flush, after every park: {calls:?}");
}

#[tokio::test]
async fn batches_that_write_their_checkpoints_flush_their_poison_before_each_write() {
    let no_deferral = RenderDeferral { max_documents: 0, max_wait: Duration::ZERO, ..RenderDeferral::DEFAULT };
    let (calls, batches, _projection) = project_with_poison(no_deferral).await;
    assert_eq!(parked(&calls), 4, "{calls:?}");
    let flushes = calls.iter().filter(|call| **call == Call::Flush).count() as u64;
    assert_eq!(flushes, batches, "one flush per write with checkpoints: {calls:?}");
    for (index, call) in calls.iter().enumerate() {
        if matches!(call, Call::Park(_)) {
            assert_eq!(
                calls.get(index + 1),
                Some(&Call::Flush),
                "a batch's poison is durable before its write: {calls:?}"
            );
        }
    }
}
