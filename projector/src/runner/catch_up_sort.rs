//! The sorted catch-up: when a run starts on a store that holds nothing of
//! its source (a rebuild, a first run), the loop takes in everything the
//! source holds before it writes anything, and writes it sorted by
//! aggregate: parties, then licenses, then each work with all of its own
//! topics. A batch then holds a few thousand works' whole histories, so each
//! state is written once, each work is rendered once from states in memory,
//! and the rows of a batch land in neighbouring pages, where the source's
//! order scatters a work's events over the whole stream.
//!
//! Documents do not depend on the order of events across aggregates (the
//! projection's invariant); within an aggregate the source's order is kept,
//! by position (an aggregate's events sit in one partition, or for the file
//! source in files read in name order), so the source may send its
//! partitions in any order, and the file source reads files side by side.

//!
//! Checkpoints: a checkpoint says everything before it is written, which no
//! sorted batch but the last can say. So the sorted batches carry none, and
//! the last carries, for each partition, the offset after the last event
//! taken in ([`SortedEvents::checkpoints`]). A crash before the last leaves
//! the store without checkpoints, and the next run sorts everything again:
//! events already applied are skipped as duplicates of their aggregates'
//! versions, and documents rendered again to the same bytes.
//!
//! Memory: events wait in runs of at most `run_events`, each sorted and
//! spilled to a file when full, and the runs are merged as the loop asks
//! for batches. Up to [`SPILLS_AT_ONCE`] full runs are being written while
//! the next fills. The files live in a directory of the catch-up's own
//! ([`SpillDirectory`]), removed when the sorted events are, or by a later
//! run's sweep when a kill left it.
//!
//! It owns the order and the spill files; it must not write to the store or
//! park events: the loop does both, batch by batch.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, VecDeque};
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use read_model::Checkpoint;
use read_model::calendar::Timestamp;
use serde::{Deserialize, Serialize};

use super::spill_directory::SpillDirectory;
use crate::contract::Topic;
use crate::source::{NextOffsets, OriginalMessage, Partition, Position, Rejection, SourcedEvent};

/// Events a run holds in memory before it is spilled, by default: about
/// 50 MiB of decoded events. With [`SPILLS_AT_ONCE`] runs being written
/// beside the one filling, that leaves the batches written after them room
/// within the projector's memory bound; the merge keeps one file open per
/// run (over 300 at 3,000,000 works), so the projector raises its open-file
/// limit at start.
pub const RUN_EVENTS: usize = 50_000;

/// Full runs written at once, each on a thread of its own. Writing a run
/// (sorting, encoding, freeing its events) costs more than reading and
/// decoding the next one, so a single writer would hold the source back;
/// two let the taking in use both cores, for one more run in memory.
const SPILLS_AT_ONCE: usize = 2;

/// Where an event goes in the sorted order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
struct SortKey {
    group: Group,
    aggregate_id: String,
    position: Position,
}

/// The groups in the order they are written. Rejected events come first, so
/// that they are parked with the first batch; parties and licenses before
/// works, so that a work rendered names parties already written, and a party
/// written names no work yet (nothing to render again).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
enum Group {
    Rejected,
    Parties,
    Licenses,
    Works,
}

impl SortKey {
    fn of(event: &SourcedEvent) -> SortKey {
        let (group, aggregate_id) = match &event.outcome {
            Ok(event) => {
                let group = match event.topic {
                    Topic::Parties => Group::Parties,
                    Topic::Licenses => Group::Licenses,
                    Topic::Works | Topic::Rights | Topic::Disputes | Topic::Certificates => Group::Works,
                };
                (group, event.envelope.aggregate_id.clone())
            }
            Err(_) => (Group::Rejected, String::new()),
        };
        SortKey { group, aggregate_id, position: event.position.clone() }
    }
}

/// An event as a spill file holds it.
#[derive(Debug, Serialize, Deserialize)]
struct Spilled {
    /// The key holds the event's position.
    key: SortKey,
    outcome: Result<crate::events::Event, Rejection>,
    original: Option<OriginalMessage>,
}

/// [`Spilled`] as written: the same fields, borrowed from the run.
#[derive(Serialize)]
struct SpilledRef<'a> {
    key: &'a SortKey,
    outcome: &'a Result<crate::events::Event, Rejection>,
    original: Option<&'a OriginalMessage>,
}

impl Spilled {
    fn into_event(self) -> (SortKey, SourcedEvent) {
        let event = SourcedEvent {
            position: self.key.position.clone(),
            outcome: self.outcome,
            original: self.original.map(Arc::new),
        };
        (self.key, event)
    }
}

/// Why the sort cannot go on: its spill files cannot be written or read.
#[derive(Debug, thiserror::Error)]
pub(super) enum SortError {
    #[error("failed to use the sorted catch-up's spill file {path}: {error}")]
    Io { path: String, error: std::io::Error },
    #[error("failed to write an event to the spill file {path}: {error}")]
    Encode { path: String, error: postcard::Error },
    #[error("failed to write an event of {bytes} bytes to the spill file {path}: a record holds at most 4 GiB")]
    TooLarge { path: String, bytes: usize },
    #[error("failed to read an event back from the spill file {path}: {error}")]
    Decode { path: String, error: postcard::Error },
}

/// What the sort has taken in: the run being filled, the runs spilled, and
/// where each partition stands.
#[derive(Debug)]
pub(super) struct CatchUpSort {
    directory: SpillDirectory,
    run_events: usize,
    filling: Taken,
    spilled: Vec<PathBuf>,
    /// The runs being written, oldest first, each on a thread of its own,
    /// while the next fills; each gives back its run's memory, emptied, for
    /// a later run.
    writing: VecDeque<std::thread::JoinHandle<Result<Taken, SortError>>>,
    taken_in: u64,
    next_offsets: NextOffsets,
    last_recorded_at: BTreeMap<Partition, Timestamp>,
}

impl CatchUpSort {
    /// A sort spilling runs of `run_events` into a fresh directory under `spill_parent`.
    pub(super) fn new(run_events: usize, spill_parent: &Path) -> Result<CatchUpSort, SortError> {
        let directory = SpillDirectory::create(spill_parent)
            .map_err(|error| SortError::Io { path: spill_parent.display().to_string(), error })?;
        Ok(CatchUpSort {
            directory,
            run_events: run_events.max(1),
            filling: Vec::new(),
            spilled: Vec::new(),
            writing: VecDeque::with_capacity(SPILLS_AT_ONCE),
            taken_in: 0,
            next_offsets: NextOffsets::default(),
            last_recorded_at: BTreeMap::new(),
        })
    }

    /// Takes in the next event of the source.
    pub(super) fn push(&mut self, event: SourcedEvent) {
        if let Ok(decoded) = &event.outcome {
            self.last_recorded_at.insert(event.position.partition(), decoded.envelope.recorded_at);
        }
        self.next_offsets.advance(&event.position);
        let key = SortKey::of(&event);
        self.taken_in += 1;
        self.filling.push((key, event));
    }

    /// Whether the run being filled is full and must be spilled.
    pub(super) fn run_is_full(&self) -> bool {
        self.filling.len() >= self.run_events
    }

    /// Events taken in so far.
    pub(super) fn taken_in(&self) -> u64 {
        self.taken_in
    }

    /// Hands the run being filled to a thread that sorts it and writes it to
    /// a spill file. Blocking while [`SPILLS_AT_ONCE`] runs are being
    /// written, until the oldest is.
    pub(super) fn spill(&mut self) -> Result<(), SortError> {
        let emptied =
            if self.writing.len() >= SPILLS_AT_ONCE { self.wait_for_oldest_spill()? } else { None }.unwrap_or_default();
        let run = std::mem::replace(&mut self.filling, emptied);
        let path = self.directory.path().join(format!("run-{:06}", self.spilled.len()));
        self.spilled.push(path.clone());
        let writer = std::thread::Builder::new()
            .name("catch-up-spill".into())
            .spawn(move || write_run(run, &path))
            .map_err(|error| SortError::Io { path: "a spill thread".to_owned(), error })?;
        self.writing.push_back(writer);
        Ok(())
    }

    /// Waits for every run being written.
    fn wait_for_spills(&mut self) -> Result<(), SortError> {
        while self.wait_for_oldest_spill()?.is_some() {}
        Ok(())
    }

    /// Waits for the oldest run being written, and gives back its memory.
    fn wait_for_oldest_spill(&mut self) -> Result<Option<Taken>, SortError> {
        match self.writing.pop_front().map(std::thread::JoinHandle::join) {
            None => Ok(None),
            Some(Ok(written)) => written.map(Some),
            Some(Err(panic)) => std::panic::resume_unwind(panic),
        }
    }

    /// Everything taken in, in sorted order. Blocking: it waits for the last
    /// spills, and spills the run still in memory too unless it is the only
    /// one, so that the batches written next have the memory.
    pub(super) fn into_sorted(mut self) -> Result<SortedEvents, SortError> {
        if !self.spilled.is_empty() && !self.filling.is_empty() {
            self.spill()?;
        }
        self.wait_for_spills()?;
        self.filling.sort_unstable_by(|left, right| left.0.cmp(&right.0));
        let mut runs = Vec::with_capacity(self.spilled.len() + 1);
        for path in &self.spilled {
            let file = File::open(path).map_err(|error| SortError::Io { path: path.display().to_string(), error })?;
            runs.push(Run::Spilled {
                path: path.clone(),
                reader: BufReader::with_capacity(64 * 1024, file),
                record: Vec::new(),
            });
        }
        runs.push(Run::InMemory(std::mem::take(&mut self.filling).into_iter()));
        let mut sorted = SortedEvents {
            heads: runs.iter().map(|_| None).collect(),
            runs,
            order: BinaryHeap::new(),
            left: self.taken_in,
            next_offsets: std::mem::take(&mut self.next_offsets),
            last_recorded_at: std::mem::take(&mut self.last_recorded_at),
            _directory: self.directory,
        };
        for index in 0..sorted.runs.len() {
            sorted.advance(index)?;
        }
        Ok(sorted)
    }
}

/// Events taken in, with their keys, in the order they came.
type Taken = Vec<(SortKey, SourcedEvent)>;

/// Writes `run` sorted to the spill file `path`, and gives back its memory.
/// It sorts the positions of the events rather than the events, which are
/// hundreds of bytes each.
fn write_run(mut run: Taken, path: &Path) -> Result<Taken, SortError> {
    let mut order: Vec<usize> = (0..run.len()).collect();
    order.sort_unstable_by(|&left, &right| run[left].0.cmp(&run[right].0));
    let io = |error| SortError::Io { path: path.display().to_string(), error };
    let mut writer = BufWriter::new(File::create(path).map_err(io)?);
    let mut record = Vec::new();
    for index in order {
        let (key, event) = &run[index];
        let spilled = SpilledRef { key, outcome: &event.outcome, original: event.original.as_deref() };
        record.clear();
        postcard::to_io(&spilled, &mut record)
            .map_err(|error| SortError::Encode { path: path.display().to_string(), error })?;
        let length = u32::try_from(record.len())
            .map_err(|_| SortError::TooLarge { path: path.display().to_string(), bytes: record.len() })?;
        writer.write_all(&length.to_le_bytes()).map_err(io)?;
        writer.write_all(&record).map_err(io)?;
    }
    writer.flush().map_err(io)?;
    run.clear();
    Ok(run)
}

/// One sorted run: a spill file or the run left in memory. A spill file is
/// a sequence of records, each an event's length (four bytes,
/// little-endian) and the event in postcard's format, so that an event is
/// read whole into one buffer and decoded from memory, where decoding from
/// the file would copy each of its strings out of the reader on its own.
///
/// Postcard rather than a self-describing format: a spill file is read
/// only by the run that wrote it, so it needs no field names, types or
/// version of its own, and bare varints and lengths are the cheapest to
/// encode and decode.
#[derive(Debug)]
enum Run {
    Spilled { path: PathBuf, reader: BufReader<File>, record: Vec<u8> },
    InMemory(std::vec::IntoIter<(SortKey, SourcedEvent)>),
}

impl Run {
    fn next(&mut self) -> Result<Option<(SortKey, SourcedEvent)>, SortError> {
        match self {
            Run::InMemory(events) => Ok(events.next()),
            Run::Spilled { path, reader, record } => {
                let io = |error| SortError::Io { path: path.display().to_string(), error };
                if reader.fill_buf().map_err(io)?.is_empty() {
                    return Ok(None);
                }
                let mut length = [0; 4];
                reader.read_exact(&mut length).map_err(io)?;
                record.resize(u32::from_le_bytes(length) as usize, 0);
                reader.read_exact(record).map_err(io)?;
                let spilled: Spilled = postcard::from_bytes(record)
                    .map_err(|error| SortError::Decode { path: path.display().to_string(), error })?;
                Ok(Some(spilled.into_event()))
            }
        }
    }
}

/// The events a sort took in, merged from its runs in sorted order.
#[derive(Debug)]
pub(super) struct SortedEvents {
    runs: Vec<Run>,
    /// The next event of each run.
    heads: Vec<Option<SourcedEvent>>,
    /// The runs by the key of their next event.
    order: BinaryHeap<Reverse<(SortKey, usize)>>,
    left: u64,
    next_offsets: NextOffsets,
    last_recorded_at: BTreeMap<Partition, Timestamp>,
    /// Removed, with the spill files, when the events are.
    _directory: SpillDirectory,
}

impl SortedEvents {
    /// Up to `size` next events. Blocking: it reads spill files.
    pub(super) fn next_batch(&mut self, size: usize) -> Result<Vec<SourcedEvent>, SortError> {
        let mut batch = Vec::with_capacity(size.min(self.left as usize));
        while batch.len() < size {
            let Some(Reverse((_, index))) = self.order.pop() else { break };
            batch.extend(self.heads[index].take());
            self.advance(index)?;
        }
        self.left -= batch.len() as u64;
        Ok(batch)
    }

    /// Events not handed out yet.
    pub(super) fn left(&self) -> u64 {
        self.left
    }

    /// The checkpoints of everything taken in: the offset after the last
    /// event of each partition.
    pub(super) fn checkpoints(&self, source: &str) -> Vec<Checkpoint> {
        self.next_offsets.checkpoints(source)
    }

    /// The recorded-at time of the last usable event of each partition taken in.
    pub(super) fn last_recorded_at(&self) -> Vec<(Partition, Timestamp)> {
        self.last_recorded_at.iter().map(|(partition, at)| (partition.clone(), *at)).collect()
    }

    fn advance(&mut self, index: usize) -> Result<(), SortError> {
        if let Some((key, event)) = self.runs[index].next()? {
            self.heads[index] = Some(event);
            self.order.push(Reverse((key, index)));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use read_model::calendar::Timestamp;

    use super::*;
    use crate::events::{Change, Envelope, Event};

    fn event(topic: Topic, id: &str, version: u64, stream: &str, offset: i64) -> SourcedEvent {
        let envelope = Envelope {
            event_id: format!("{id}-{version}"),
            event_type: "WorkPublished".to_owned(),
            aggregate_id: id.to_owned(),
            aggregate_version: version,
            occurred_at: Timestamp(offset),
            recorded_at: Timestamp(1_000 + offset),
            source_system: "registry".to_owned(),
        };
        let change = Change::WorkPublished { published_at: Timestamp(offset) };
        SourcedEvent {
            position: Position { stream: stream.to_owned(), partition: 0, offset },
            outcome: Ok(Event { topic, envelope, change }),
            original: None,
        }
    }

    fn rejected(stream: &str, offset: i64) -> SourcedEvent {
        SourcedEvent {
            position: Position { stream: stream.to_owned(), partition: 0, offset },
            outcome: Err(Rejection::unidentified("undecodable: truncated".to_owned(), Some(Topic::Works))),
            original: Some(Arc::new(OriginalMessage { key: Some(b"LCC-9".to_vec()), value: Some(vec![0, 1, 2]) })),
        }
    }

    /// The stream of three partitions as a source delivers it: works, rights
    /// and parties interleaved, each aggregate's events far apart.
    fn stream() -> Vec<SourcedEvent> {
        let mut events = Vec::new();
        for round in 0..5_u64 {
            for work in (0..7).rev() {
                let offset = (round * 7 + (6 - work)) as i64;
                events.push(event(Topic::Works, &format!("LCC-{work}"), round + 1, "works", offset));
                events.push(event(Topic::Rights, &format!("LCC-{work}"), round + 1, "rights", offset));
            }
            events.push(event(Topic::Parties, &format!("PTY-{}", 4 - round), 1, "parties", round as i64));
            if round == 2 {
                events.push(rejected("works", 35));
            }
        }
        events
    }

    fn sorted(events: Vec<SourcedEvent>, run_events: usize, batch: usize) -> (Vec<SourcedEvent>, SortedEvents) {
        let mut sort = CatchUpSort::new(run_events, &std::env::temp_dir()).expect("sort");
        for event in events {
            sort.push(event);
            if sort.run_is_full() {
                sort.spill().expect("spill");
            }
        }
        let mut sorted = sort.into_sorted().expect("sorted");
        let mut out = Vec::new();
        loop {
            let next = sorted.next_batch(batch).expect("batch");
            if next.is_empty() {
                break;
            }
            out.extend(next);
        }
        (out, sorted)
    }

    fn described(event: &SourcedEvent) -> String {
        match &event.outcome {
            Ok(event) => {
                format!("{:?} {} v{}", event.topic, event.envelope.aggregate_id, event.envelope.aggregate_version)
            }
            Err(rejection) => format!("rejected: {}", rejection.reason),
        }
    }

    #[test]
    fn events_come_out_by_group_then_aggregate_each_aggregate_in_the_order_of_its_positions() {
        let (out, sorted) = sorted(stream(), 1_000, 8);
        let order: Vec<String> = out.iter().map(described).collect();
        assert_eq!(order.len(), 76, "{order:?}");
        assert_eq!(order[0], "rejected: undecodable: truncated");
        assert_eq!(
            order[1..6],
            ["Parties PTY-0 v1", "Parties PTY-1 v1", "Parties PTY-2 v1", "Parties PTY-3 v1", "Parties PTY-4 v1"]
        );
        let first_work: Vec<&str> = order[6..16].iter().map(String::as_str).collect();
        assert_eq!(
            first_work,
            [
                "Rights LCC-0 v1",
                "Rights LCC-0 v2",
                "Rights LCC-0 v3",
                "Rights LCC-0 v4",
                "Rights LCC-0 v5",
                "Works LCC-0 v1",
                "Works LCC-0 v2",
                "Works LCC-0 v3",
                "Works LCC-0 v4",
                "Works LCC-0 v5"
            ],
            "a work's topics together, each aggregate in the order of its positions"
        );
        assert_eq!(order.last().map(String::as_str), Some("Works LCC-6 v5"));
        assert_eq!(sorted.left(), 0);
    }

    #[test]
    fn spilled_runs_merge_into_the_order_of_one_run_and_keep_what_rejected_events_carry() {
        let (in_memory, _) = sorted(stream(), 1_000, 1_000);
        for run_events in [1, 3, 10] {
            let (merged, _) = sorted(stream(), run_events, 7);
            let described_merged: Vec<String> = merged.iter().map(described).collect();
            let described_in_memory: Vec<String> = in_memory.iter().map(described).collect();
            assert_eq!(described_merged, described_in_memory, "runs of {run_events}");
            let positions: Vec<&Position> = merged.iter().map(|event| &event.position).collect();
            let expected: Vec<&Position> = in_memory.iter().map(|event| &event.position).collect();
            assert_eq!(positions, expected, "runs of {run_events}");
            assert_eq!(merged[0].original, in_memory[0].original, "the original message of a rejected event");
            assert_eq!(merged[1].outcome, in_memory[1].outcome, "a decoded event read back from a spill file");
        }
    }

    #[test]
    fn the_checkpoints_are_the_offsets_after_the_last_event_of_each_partition_taken_in() {
        let (_, sorted) = sorted(stream(), 4, 5);
        let checkpoints: Vec<(String, i64)> =
            sorted.checkpoints("file:/events").into_iter().map(|c| (c.stream, c.next_offset)).collect();
        assert_eq!(checkpoints, [("parties".to_owned(), 5), ("rights".to_owned(), 35), ("works".to_owned(), 36)]);
        let recorded: Vec<(String, i64)> =
            sorted.last_recorded_at().into_iter().map(|(partition, at)| (partition.stream, at.0)).collect();
        assert_eq!(
            recorded,
            [("parties".to_owned(), 1_004), ("rights".to_owned(), 1_034), ("works".to_owned(), 1_034)],
            "a rejected event has no recorded-at time"
        );
    }

    #[test]
    fn every_event_of_a_generated_stream_reads_back_from_the_spill_files_as_it_was_taken_in() {
        let directory = tempfile::tempdir().expect("tempdir");
        let options =
            crate::generate::GenerateOptions { works: 400, seed: 11, events_per_segment: 500, sandbox: false };
        crate::generate::generate(&options, directory.path()).expect("generate");
        let contract = Arc::new(crate::contract::Contract::load().expect("contract"));
        let source = crate::source::file::FileSource::new(directory.path(), contract);
        let mut events = Vec::new();
        for name in source.files().expect("files") {
            source.read_file(&name, 0, &mut |event| {
                events.push(event);
                true
            });
        }
        let kinds: std::collections::BTreeSet<&str> = events
            .iter()
            .filter_map(|event| event.outcome.as_ref().ok())
            .map(|event| event.change.type_name())
            .collect();
        assert!(kinds.len() >= 15, "the stream has most kinds of change: {kinds:?}");
        assert!(events.iter().any(|event| event.outcome.is_err()), "and rejected events");

        let mut by_position: std::collections::HashMap<Position, SourcedEvent> =
            events.iter().map(|event| (event.position.clone(), event.clone())).collect();
        let (out, _) = sorted(events, 97, 1_000);
        for event in &out {
            let taken_in = by_position.remove(&event.position).expect("each position once");
            assert_eq!(event.outcome, taken_in.outcome, "{:?}", event.position);
            assert_eq!(event.original, taken_in.original, "{:?}", event.position);
        }
        assert!(by_position.is_empty(), "every event comes out");
    }

    #[test]
    fn the_spill_files_go_with_the_sorted_events() {
        let parent = tempfile::tempdir().expect("tempdir");
        let mut sort = CatchUpSort::new(2, parent.path()).expect("sort");
        for event in stream().into_iter().take(6) {
            sort.push(event);
            if sort.run_is_full() {
                sort.spill().expect("spill");
            }
        }
        let directory = sort.directory.path().to_path_buf();
        sort.wait_for_spills().expect("the last spills");
        assert_eq!(std::fs::read_dir(&directory).expect("list").count(), 3);
        let sorted = sort.into_sorted().expect("sorted");
        drop(sorted);
        assert!(!directory.exists(), "the spill directory is removed");
        assert_eq!(std::fs::read_dir(parent.path()).expect("list").count(), 0, "and its lock file");
    }
}
