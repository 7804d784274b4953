//! The loop's state between two cuts and its steps: wait for the next cut
//! ([`BatchLoop::next_cut`]), write what it closes ([`BatchLoop::write_cut`]),
//! and at the end write what is left ([`BatchLoop::finish`]). `run` strings
//! them together.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use anyhow::Context;

use read_model::Checkpoint;
use read_model::calendar::Timestamp;
use tokio::sync::mpsc;
use tracing::Instrument;

use super::RunOptions;
use super::catch_up_sort::CatchUpSort;
use super::deferred_rendering::{CONCURRENT_RENDERS, render_deferred};
use super::retry::{while_sink_unavailable, while_store_unavailable};
use super::stop_request::StopRequest;
use super::writing::{Committed, InFlight, Progress, Reprojection, Writing};
use crate::dead_letter::{DeadLetterSink, ParkedEvent};
use crate::projection::batch::{Rendering, project_batch};
use crate::render_deferral::DeferredRenders;
use crate::source::{OriginalMessage, Partition, Position, Rejection, Resume, SourceMessage, SourcedEvent};

/// How long the loop waits, idle, before it asks the store to finish what
/// it keeps off the batch path ([`read_model::ProjectionWrites::settle`]).
const SETTLE_INTERVAL: Duration = Duration::from_secs(30);

/// The most messages the loop takes off the source's channel at once,
/// then handles one by one: one wait on the channel, and one look at the
/// loop's other conditions (shutdown, deadlines, the write in flight),
/// serve them all rather than one each.
const RECEIVED_AT_ONCE: usize = 256;

/// Where the source answers a barrier.
type BarrierReply = std::sync::mpsc::SyncSender<Result<Resume, String>>;

/// Why the events gathered so far are written now.
#[derive(Debug)]
pub(super) struct Cut {
    /// The batch is full: more events wait.
    filled: bool,
    /// The batch waited its linger time.
    lingered: bool,
    /// The reader ended: nothing more comes.
    pub(super) end: bool,
    /// A source's barrier, answered once everything before it is written.
    barrier: Option<BarrierReply>,
}

/// What woke the loop.
// Lives for one iteration; boxing the message would cost an allocation per event.
#[allow(clippy::large_enum_variant)]
enum Step {
    Received(Option<SourceMessage>),
    LingerElapsed,
    /// Deferred documents have waited as long as they may.
    RenderDeadline,
}

/// The loop's state: the batch being gathered, the write in flight, what
/// waits to be rendered, and what has committed.
pub(super) struct BatchLoop<'a, Shutdown: Future<Output = ()>> {
    pub(super) writing: Writing<'a>,
    pub(super) options: &'a RunOptions,
    pub(super) receiver: mpsc::Receiver<SourceMessage>,
    /// Messages taken off the channel and not handled yet, in order.
    received: std::vec::IntoIter<SourceMessage>,
    /// The events of a message of several not handled yet, in order, before
    /// the messages after it.
    received_events: std::vec::IntoIter<SourcedEvent>,
    pub(super) dead_letters: Box<dyn DeadLetterSink>,
    pub(super) stop_request: StopRequest<'a, Shutdown>,
    /// Set once the loop stops reading: after a shutdown request, or once
    /// caught up when the run exits then.
    stopping: bool,
    pub(super) committed: Committed,
    /// The first event's arrival: throughput without the time spent joining a group.
    pub(super) first_event_at: Option<Instant>,
    batch: Vec<SourcedEvent>,
    batch_started: Instant,
    in_flight: Option<InFlight>,
    deferred: DeferredRenders,
    batches_started: u64,
    settle_deadline: tokio::time::Instant,
    /// Whether the first barrier may still start a sorted catch-up.
    may_sort: bool,
    /// The sorted catch-up taking in events, until the first cut.
    catch_up: Option<CatchUpSort>,
}

/// Where a sorted batch leaves the source: nowhere but for the last one.
struct SortedPlace {
    checkpoints: Vec<Checkpoint>,
    last_recorded_at: Vec<(Partition, Timestamp)>,
    /// Every batch but the last defers its index entries, which batches of
    /// works in id order would scatter over their tables; the last writes
    /// them all ([`read_model::WriteBatch::defer_index_entries`]).
    defer_index_entries: bool,
}

impl<'a, Shutdown: Future<Output = ()>> BatchLoop<'a, Shutdown> {
    pub(super) fn new(
        writing: Writing<'a>,
        options: &'a RunOptions,
        receiver: mpsc::Receiver<SourceMessage>,
        dead_letters: Box<dyn DeadLetterSink>,
        stop_request: StopRequest<'a, Shutdown>,
    ) -> Self {
        BatchLoop {
            writing,
            options,
            receiver,
            received: Vec::new().into_iter(),
            received_events: Vec::new().into_iter(),
            dead_letters,
            stop_request,
            stopping: false,
            committed: Committed::default(),
            first_event_at: None,
            batch: Vec::with_capacity(options.batch_size),
            batch_started: Instant::now(),
            in_flight: None,
            deferred: DeferredRenders::default(),
            batches_started: 0,
            settle_deadline: tokio::time::Instant::now() + SETTLE_INTERVAL,
            may_sort: options.sorted_catch_up,
            catch_up: None,
        }
    }

    /// Gathers events until the batch must be written, and says why. Meanwhile
    /// it requests the shutdown when it comes, reports a write that commits
    /// at once (the source's progress follows the store), and settles the
    /// store when idle.
    pub(super) async fn next_cut(&mut self) -> anyhow::Result<Cut> {
        let store = self.writing.store;
        let version = self.writing.version;
        let give_up = self.writing.give_up;
        loop {
            let step = if let Some(event) = self.received_events.next() {
                Step::Received(Some(SourceMessage::Event(event)))
            } else if let Some(message) = self.received.next() {
                Step::Received(Some(message))
            } else {
                let linger_deadline = tokio::time::Instant::from_std(self.batch_started + self.options.linger);
                let idle = self.batch.is_empty() && self.in_flight.is_none() && !self.deferred.is_waiting();
                let render_deadline =
                    self.deferred.deadline(self.options.render_deferral).map(tokio::time::Instant::from_std);
                let mut received = Vec::with_capacity(RECEIVED_AT_ONCE);
                tokio::select! {
                    biased;
                    () = self.stop_request.shutdown.as_mut(), if !self.stop_request.requested => {
                        self.stop_request.request();
                        self.stopping = true;
                        continue;
                    }
                    count = self.receiver.recv_many(&mut received, RECEIVED_AT_ONCE) => {
                        if count == 0 {
                            Step::Received(None)
                        } else {
                            self.received = received.into_iter();
                            continue;
                        }
                    }
                    () = tokio::time::sleep_until(linger_deadline), if !self.batch.is_empty() => Step::LingerElapsed,
                    () = sleep_until_some(render_deadline), if render_deadline.is_some() => Step::RenderDeadline,
                    () = tokio::time::sleep_until(self.settle_deadline), if idle => {
                        self.stop_request.minding(while_store_unavailable(give_up, || store.settle(version))).await?;
                        self.settle_deadline = tokio::time::Instant::now() + SETTLE_INTERVAL;
                        continue;
                    }
                    written = async { (&mut self.in_flight.as_mut().expect("guarded by is_some").task).await }, if self.in_flight.is_some() => {
                        if let Some(written_batch) = self.in_flight.take() {
                            self.committed.record(written_batch, written, self.writing.observer)?;
                        }
                        continue;
                    }
                }
            };
            let cut = |filled, end, barrier| Cut { filled, lingered: false, end, barrier };
            match step {
                Step::LingerElapsed => return Ok(Cut { lingered: true, ..cut(false, false, None) }),
                Step::RenderDeadline => return Ok(cut(false, false, None)),
                Step::Received(Some(SourceMessage::Event(event))) => {
                    self.first_event_at.get_or_insert_with(Instant::now);
                    self.may_sort = false;
                    if let Some(sort) = self.catch_up.as_mut() {
                        sort.push(event);
                        if sort.run_is_full() {
                            self.spill_run().await?;
                        }
                        continue;
                    }
                    if self.batch.is_empty() {
                        self.batch_started = Instant::now();
                    }
                    self.batch.push(event);
                    if self.batch.len() >= self.options.batch_size {
                        return Ok(cut(true, false, None));
                    }
                }
                Step::Received(Some(SourceMessage::Events(events))) => {
                    self.received_events = events.into_iter();
                }
                Step::Received(Some(SourceMessage::CaughtUp)) => {
                    if self.options.exit_when_caught_up && !self.stopping {
                        self.stopping = true;
                        self.stop_request.reader.store(true, Ordering::Relaxed);
                    }
                    return Ok(cut(false, false, None));
                }
                Step::Received(Some(SourceMessage::Failed(error))) => anyhow::bail!("the source failed: {error}"),
                Step::Received(Some(SourceMessage::Barrier(reply))) => return Ok(cut(false, false, Some(reply))),
                // The reader ended: after a stop, or on its own.
                Step::Received(None) => return Ok(cut(false, true, None)),
            }
        }
    }

    /// Writes what `cut` closes: what a sorted catch-up took in, or the
    /// batch gathered (rendering its documents or deferring them), then what
    /// waits to be rendered unless the loop is still behind, then the answer
    /// to a barrier.
    pub(super) async fn write_cut(&mut self, cut: Cut) -> anyhow::Result<()> {
        // A sorted catch-up ends at the first cut: the source caught up, it
        // ended, or a barrier asks for everything sent to be written. After a
        // stop request what it took in is dropped, to be read again.
        if let Some(sort) = self.catch_up.take()
            && !self.stop_request.requested
        {
            self.write_sorted(sort).await?;
        }
        // A batch cut because it filled up says that more events wait. So does
        // a linger cut while documents wait: the source was briefly slower,
        // and says itself when it has caught up. Any other cut (caught up,
        // barrier, end, deadline) renders what waits.
        let behind = cut.filled || (cut.lingered && self.deferred.is_waiting());
        let keep_deferring = behind && self.deferred.may_defer(self.options.render_deferral, Instant::now());
        if !self.batch.is_empty() {
            self.write_batch(keep_deferring).await?;
        }
        if !keep_deferring && self.deferred.is_waiting() {
            self.render_deferred().await?;
        }
        if let Some(reply) = cut.barrier {
            self.answer_barrier(reply).await?;
        }
        Ok(())
    }

    /// Hands the sorted catch-up's full run to its spill thread, waiting
    /// off the loop's thread while the run before it is still being written.
    async fn spill_run(&mut self) -> anyhow::Result<()> {
        let mut sort = self.catch_up.take().expect("called while sorting");
        let sort = tokio::task::spawn_blocking(move || sort.spill().map(|()| sort))
            .await
            .context("the spill task failed")??;
        tracing::info!(events = sort.taken_in(), "sorted catch-up: taking in events");
        self.catch_up = Some(sort);
        Ok(())
    }

    /// Writes what a sorted catch-up took in, batch by batch in sorted
    /// order, each rendering its documents; the last batch carries the
    /// checkpoints of everything taken in. A batch is projected while the
    /// one before it is written, as any batch is.
    async fn write_sorted(&mut self, sort: CatchUpSort) -> anyhow::Result<()> {
        let source_id = self.writing.source_id;
        tracing::info!(events = sort.taken_in(), "sorted catch-up: writing in the order of aggregates");
        let mut sorted =
            tokio::task::spawn_blocking(move || sort.into_sorted()).await.context("the sorting task failed")??;
        // A sorted batch renders its documents as well as applying its
        // events, so it holds half a batch's events to stay within the
        // memory a batch of events or of deferred documents takes.
        let size = (self.options.batch_size / 2).max(1);
        // After a stop request the rest is dropped: no checkpoint was
        // written, so a restart takes everything in again.
        while sorted.left() > 0 && !self.stop_request.requested {
            // On the loop's thread, which would wait for it anyway: like
            // projecting the batch next, it holds the thread while it works
            // (it reads a batch's worth of the spill files, and decodes
            // them). The events are then made on the thread that frees them
            // (the write gives them back).
            self.batch = sorted.next_batch(size)?;
            self.batch_started = Instant::now();
            let place = if sorted.left() == 0 {
                SortedPlace {
                    checkpoints: sorted.checkpoints(source_id),
                    last_recorded_at: sorted.last_recorded_at(),
                    defer_index_entries: false,
                }
            } else {
                SortedPlace { checkpoints: Vec::new(), last_recorded_at: Vec::new(), defer_index_entries: true }
            };
            self.write_events(Rendering::InBatch, Some(place)).await?;
        }
        Ok(())
    }

    /// Projects the gathered batch, parks what it rejected, and starts its
    /// write once the write before it has committed.
    async fn write_batch(&mut self, keep_deferring: bool) -> anyhow::Result<()> {
        let rendering =
            if keep_deferring || self.deferred.is_waiting() { Rendering::Deferred } else { Rendering::InBatch };
        self.write_events(rendering, None).await
    }

    /// [`Self::write_batch`] with the rendering decided; a sorted batch
    /// (`sorted` set) writes the checkpoints given instead of its own.
    async fn write_events(&mut self, rendering: Rendering, sorted: Option<SortedPlace>) -> anyhow::Result<()> {
        let writing = &self.writing;
        let (store, version, source_id, give_up) = (writing.store, writing.version, writing.source_id, writing.give_up);
        self.batches_started += 1;
        let span = tracing::info_span!("batch", number = self.batches_started, events = self.batch.len());
        let pending = self.in_flight.as_ref().map(|write| Arc::clone(&write.batch));
        let read_after = self.committed.last_mark;
        let batch = &self.batch;
        let mut outcome = self
            .stop_request
            .minding(
                while_store_unavailable(give_up, || {
                    project_batch(store.as_ref(), version, source_id, batch, pending.as_deref(), rendering)
                })
                .instrument(span.clone()),
            )
            .await?;
        outcome.write.read_set.read_after = read_after;
        let mut last_recorded_at = match sorted {
            Some(place) => {
                outcome.write.checkpoints = place.checkpoints;
                outcome.write.defer_index_entries = place.defer_index_entries;
                place.last_recorded_at
            }
            None => last_recorded_at(&self.batch),
        };
        let parked = with_originals(&outcome.parked, &self.batch);
        let dead_letters = &mut self.dead_letters;
        self.stop_request.minding(while_sink_unavailable(give_up, || dead_letters.park(source_id, &parked))).await?;
        self.stop_request.minding(self.committed.finish(self.in_flight.take(), writing.observer)).await?;
        let mut held_back = Vec::new();
        if rendering == Rendering::Deferred {
            held_back.clone_from(&outcome.held_checkpoints);
            self.deferred.hold(&mut outcome, &last_recorded_at, self.batch_started);
            last_recorded_at.clear();
        }
        let events = std::mem::replace(&mut self.batch, Vec::with_capacity(self.options.batch_size));
        let reprojection = Reprojection::Events { events, rendering };
        let progress = Progress {
            last_recorded_at,
            started: self.batch_started,
            awaiting: self.deferred.document_count(),
            held_back,
        };
        if !outcome.write.checkpoints.is_empty() {
            let dead_letters = &mut self.dead_letters;
            self.stop_request.minding(while_sink_unavailable(give_up, || dead_letters.flush())).await?;
        }
        self.in_flight = Some(span.in_scope(|| writing.start(reprojection, outcome, progress)));
        Ok(())
    }

    /// Renders every deferred document; the last write carries the checkpoints they held back.
    async fn render_deferred(&mut self) -> anyhow::Result<()> {
        let span = tracing::info_span!("deferred documents", documents = self.deferred.document_count());
        let documents_per_write = (self.options.batch_size / CONCURRENT_RENDERS)
            .clamp(1, self.options.render_deferral.max_documents_per_write.max(1));
        self.in_flight = self
            .stop_request
            .minding(
                render_deferred(
                    &self.writing,
                    self.dead_letters.as_mut(),
                    &mut self.deferred,
                    self.in_flight.take(),
                    &mut self.committed,
                    documents_per_write,
                )
                .instrument(span),
            )
            .await?;
        Ok(())
    }

    /// Writes everything sent before a barrier, then answers it with the store's checkpoints.
    async fn answer_barrier(&mut self, reply: BarrierReply) -> anyhow::Result<()> {
        self.stop_request.minding(self.committed.finish(self.in_flight.take(), self.writing.observer)).await?;
        let (store, version, source_id) = (self.writing.store, self.writing.version, self.writing.source_id);
        let checkpoints = store.checkpoints(version, source_id).await.map_err(|error| error.to_string());
        // The first barrier comes before any event: a store without
        // checkpoints of the source starts with a sorted catch-up.
        if std::mem::take(&mut self.may_sort) && checkpoints.as_ref().is_ok_and(Vec::is_empty) {
            let options = self.options;
            self.catch_up = Some(CatchUpSort::new(options.catch_up_run_events, &options.spill_directory)?);
        }
        let any_order = self.catch_up.is_some();
        let checkpoints = checkpoints.map(|checkpoints| Resume { checkpoints, any_order });
        // The source may have gone away meanwhile; then nobody waits for the answer.
        let _ = reply.send(checkpoints);
        Ok(())
    }

    /// Waits for the last write, and lets the store settle unless a stop was requested.
    pub(super) async fn finish(&mut self) -> anyhow::Result<()> {
        self.stop_request.minding(self.committed.finish(self.in_flight.take(), self.writing.observer)).await?;
        if !self.stop_request.requested {
            let (store, version, give_up) = (self.writing.store, self.writing.version, self.writing.give_up);
            self.stop_request.minding(while_store_unavailable(give_up, || store.settle(version))).await?;
        }
        Ok(())
    }
}

/// Sleeps until `deadline`; the loop polls it only when there is one.
async fn sleep_until_some(deadline: Option<tokio::time::Instant>) {
    if let Some(deadline) = deadline {
        tokio::time::sleep_until(deadline).await;
    }
}

/// The parked events of a batch with the original messages the source kept.
fn with_originals(parked: &[(Position, Rejection)], batch: &[SourcedEvent]) -> Vec<ParkedEvent> {
    if parked.is_empty() {
        return Vec::new();
    }
    let originals: HashMap<&Position, &Arc<OriginalMessage>> =
        batch.iter().filter_map(|event| event.original.as_ref().map(|original| (&event.position, original))).collect();
    parked
        .iter()
        .map(|(position, rejection)| ParkedEvent {
            position: position.clone(),
            rejection: rejection.clone(),
            original: originals.get(position).map(|original| Arc::clone(original)),
        })
        .collect()
}

/// The recorded-at time of the last usable event of each partition in a batch.
fn last_recorded_at(batch: &[SourcedEvent]) -> Vec<(Partition, Timestamp)> {
    let mut last: Vec<(Partition, Timestamp)> = Vec::new();
    for event in batch {
        let Ok(decoded) = &event.outcome else { continue };
        let at = decoded.envelope.recorded_at;
        let position = &event.position;
        match last
            .iter_mut()
            .find(|(partition, _)| partition.stream == position.stream && partition.number == position.partition)
        {
            Some(entry) => entry.1 = at,
            None => last.push((position.partition(), at)),
        }
    }
    last
}
