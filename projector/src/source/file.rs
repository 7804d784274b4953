//! The file source: Avro object container files in a directory, read in
//! file-name order as if each file were a stretch of its topic.
//!
//! A file's topic is the one whose event record its writer schema names, so
//! files can be named freely (the generator names them `SEGMENT-TOPIC.avro`).
//! The position of an event is (file name, 0, record index), and the store's
//! checkpoint for a file is the next record index to read. Files are expected
//! to appear whole (written elsewhere, then renamed into the directory).

use std::collections::HashMap;
use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::sync::mpsc;

use super::container::{Container, ContainerError};
use super::{
    Backlog, Position, Rejection, SourceFeed, SourceMessage, SourcedEvent, accept, event_from_value, record_count,
    resume_from_loop,
};
use crate::contract::{Contract, Topic};
use crate::datum_codec::DatumCodec;
use crate::events::Event;
use crate::events::decode::{DatumError, decode_datum};
use crate::resolution::Resolver;

/// A directory of Avro container files.
#[derive(Debug, Clone)]
pub struct FileSource {
    directory: PathBuf,
    source_id: String,
    contract: Arc<Contract>,
}

/// Why a directory cannot be read at all.
#[derive(Debug, thiserror::Error)]
#[error("cannot list event files in {directory}: {error}")]
pub struct ListError {
    directory: String,
    error: std::io::Error,
}

impl FileSource {
    pub fn new(directory: &Path, contract: Arc<Contract>) -> FileSource {
        let canonical = directory.canonicalize().unwrap_or_else(|_| directory.to_path_buf());
        FileSource { source_id: format!("file:{}", canonical.display()), directory: canonical, contract }
    }

    /// The id under which this source's checkpoints are stored.
    pub fn source_id(&self) -> &str {
        &self.source_id
    }

    /// Starts the reader thread: every file from its checkpoint on (asked of
    /// the loop, as every source does), then, when following, new files and
    /// grown ones, looked for every `poll_interval`. `channel_capacity` events
    /// wait in the channel while the loop projects (a batch's worth).
    pub fn start(self, channel_capacity: usize, poll_interval: Duration) -> anyhow::Result<SourceFeed> {
        let (sender, receiver) = mpsc::channel(channel_capacity.div_ceil(EVENTS_PER_MESSAGE).max(1));
        let stop = Arc::new(AtomicBool::new(false));
        let source_id = self.source_id.clone();
        let reader_stop = Arc::clone(&stop);
        let found = Arc::new(RecordsFound::default());
        let reader_found = Arc::clone(&found);
        let reader = std::thread::Builder::new()
            .name("file-source".into())
            .spawn(move || read_files(&self, &sender, &reader_stop, &reader_found, poll_interval))
            .context("failed to start the file reader")?;
        Ok(SourceFeed { source_id, receiver, stop, reader, backlog: found })
    }

    /// The `.avro` files of the directory, in name order.
    pub fn files(&self) -> Result<Vec<String>, ListError> {
        let error = |error| ListError { directory: self.directory.display().to_string(), error };
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.directory).map_err(error)? {
            let entry = entry.map_err(error)?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.ends_with(".avro") && entry.file_type().map_err(error)?.is_file() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    /// The length of file `name` now, if it can be read.
    pub fn file_length(&self, name: &str) -> Option<u64> {
        std::fs::metadata(self.directory.join(name)).ok().map(|metadata| metadata.len())
    }

    /// Reads the events of `name` from record `start` on, handing each to
    /// `emit` until it returns false. Returns the next record index to read.
    ///
    /// An unreadable stretch (a corrupt block, a broken header) ends the file:
    /// it is reported once, as a rejection at the first record that could not
    /// be read, and the file is not read past it.
    pub fn read_file(&self, name: &str, start: i64, emit: &mut dyn FnMut(SourcedEvent) -> bool) -> i64 {
        match File::open(self.directory.join(name)) {
            Ok(file) => self.read_container(BufReader::with_capacity(1 << 20, file), name, start, emit),
            Err(error) => unreadable(&error.to_string(), name, start, emit),
        }
    }

    /// Reads the events of one container file, given as any byte source,
    /// as [`FileSource::read_file`] does; `name` places them.
    pub fn read_container(
        &self,
        bytes: impl std::io::Read,
        name: &str,
        start: i64,
        emit: &mut dyn FnMut(SourcedEvent) -> bool,
    ) -> i64 {
        let mut container = match Container::open(bytes) {
            Ok(container) => container,
            Err(error) => return unreadable(&error.to_string(), name, start, emit),
        };
        let writer = container.writer_schema().clone();
        let topic = self.contract.topic_of(&writer);
        let resolver = topic.map(|topic| Resolver::new(&self.contract, topic, &writer));
        let codec = match DatumCodec::new(writer) {
            Ok(codec) => codec,
            Err(error) => return unreadable(&error.to_string(), name, start, emit),
        };
        match (topic, &resolver) {
            (Some(topic), Some(Ok(resolver))) if resolver.reads_directly() => {
                let records = std::iter::from_fn(|| container.next_datum(|datum| decode_datum(topic, &codec, datum)));
                let finish = |decoded| accept(topic, resolver, decoded);
                emit_records(records, finish, Some(topic), name, start, emit)
            }
            _ => {
                let records = std::iter::from_fn(|| {
                    container.next_datum(|datum| codec.read_value(datum).map_err(DatumError::from))
                });
                let finish = |value| self.event_from_value(topic, resolver.as_ref(), value);
                emit_records(records, finish, topic, name, start, emit)
            }
        }
    }

    fn event_from_value(
        &self,
        topic: Option<Topic>,
        resolver: Option<&Result<Resolver, String>>,
        value: apache_avro::types::Value,
    ) -> Result<Event, Rejection> {
        let (Some(topic), Some(resolver)) = (topic, resolver) else {
            return Err(Rejection::unidentified("the writer schema names no topic of the contract".into(), None));
        };
        let resolver = resolver.as_ref().map_err(|error| Rejection::unidentified(error.clone(), Some(topic)))?;
        event_from_value(&self.contract, topic, resolver, value)
    }
}

/// Hands the records of a container file read on `topic` to `emit`, from
/// record `start` on, as [`FileSource::read_container`] describes; returns
/// the next record index to read. `finish` makes each record read from
/// `start` on an event; records before `start` are read only to be passed,
/// and an unreadable one among them ends the file there, as it did when it
/// was first read.
fn emit_records<T>(
    records: impl Iterator<Item = Result<T, ContainerError>>,
    mut finish: impl FnMut(T) -> Result<Event, Rejection>,
    topic: Option<Topic>,
    name: &str,
    start: i64,
    emit: &mut dyn FnMut(SourcedEvent) -> bool,
) -> i64 {
    let mut offset = 0_i64;
    for record in records {
        if offset < start {
            if record.is_err() {
                // Reported when first read; the file ends here.
                return start;
            }
            offset += 1;
            continue;
        }
        let (outcome, stop) = match record {
            Ok(record) => (finish(record), false),
            Err(error) => {
                (Err(Rejection::unidentified(format!("unreadable from this record on: {error}"), topic)), true)
            }
        };
        let position = Position { stream: name.to_owned(), partition: 0, offset };
        let proceed = emit(SourcedEvent { position, outcome, original: None });
        offset += 1;
        if stop || !proceed {
            break;
        }
    }
    offset
}

/// A file that cannot be opened or whose header cannot be read: one
/// rejection at its first record, the first time it is read.
fn unreadable(error: &str, name: &str, start: i64, emit: &mut dyn FnMut(SourcedEvent) -> bool) -> i64 {
    if start == 0 {
        emit(SourcedEvent {
            position: Position { stream: name.to_owned(), partition: 0, offset: 0 },
            outcome: Err(Rejection::unidentified(format!("unreadable Avro container file: {error}"), None)),
            original: None,
        });
    }
    start.max(1)
}

/// The records the reader has found in the files beyond the checkpoints the
/// run started from, counted from each file's block headers before the file
/// is read (see [`record_count`]): the events the run has committed since
/// are the ones of these no longer waiting.
#[derive(Debug, Default)]
pub struct RecordsFound(AtomicU64);

impl RecordsFound {
    /// Records `records` more found.
    pub fn add(&self, records: u64) {
        self.0.fetch_add(records, Ordering::Relaxed);
    }
}

impl Backlog for RecordsFound {
    fn left(&self, committed: u64) -> Option<u64> {
        Some(self.0.load(Ordering::Relaxed).saturating_sub(committed))
    }
}

/// How far the reader has read each file: the next record to read, and, for
/// a file read to its end, the length it had then.
///
/// Reading a file from record N decodes the N records before it, since a
/// container file has no index. A file that was read to its end is
/// therefore not opened again while its length stays the same: following
/// a directory of 1,000,000 events, every poll decoded all of them again
/// (1.5 CPU seconds a poll) only to find nothing new.
#[derive(Debug, Default)]
pub struct FileProgress {
    next_offsets: HashMap<String, i64>,
    read_to_end: HashMap<String, u64>,
}

impl FileProgress {
    /// Progress as the store's checkpoints record it: (file name, next record).
    pub fn from_checkpoints(checkpoints: impl IntoIterator<Item = (String, i64)>) -> FileProgress {
        FileProgress { next_offsets: checkpoints.into_iter().collect(), read_to_end: HashMap::new() }
    }

    /// The next record to read of `name`.
    pub fn next_offset(&self, name: &str) -> i64 {
        self.next_offsets.get(name).copied().unwrap_or(0)
    }

    /// Whether `name`, now `length` bytes long (`None`: unknown), may hold records not read yet.
    pub fn may_have_more(&self, name: &str, length: Option<u64>) -> bool {
        length.is_none() || self.read_to_end.get(name) != length.as_ref()
    }

    /// The records of `name` (now `records`, `None` when they cannot be
    /// counted) not counted before: beyond what `counted` holds for it, else
    /// beyond its checkpoint. Records `records` in `counted`.
    pub fn newly_found(&self, counted: &mut HashMap<String, i64>, name: &str, records: Option<u64>) -> u64 {
        let Some(records) = records.and_then(|records| i64::try_from(records).ok()) else { return 0 };
        let before = counted.get(name).copied().unwrap_or_else(|| self.next_offset(name));
        counted.insert(name.to_owned(), records.max(before));
        u64::try_from(records - before).unwrap_or(0)
    }

    /// Notes that `name`, `length` bytes long before it was read, was read to
    /// its end (or to a stretch that cannot be read); `next` is the next record.
    pub fn read_to_end(&mut self, name: String, length: Option<u64>, next: i64) {
        if let Some(length) = length {
            self.read_to_end.insert(name.clone(), length);
        }
        self.next_offsets.insert(name, next);
    }
}

/// The events the reader sends in one message ([`SourceMessage::Events`]),
/// fewer at the end of a file. The channel holds messages, so its
/// capacity in events is divided by this.
const EVENTS_PER_MESSAGE: usize = 256;

/// Files read side by side when the loop takes events in any order (a
/// sorted catch-up): decoding is then all the projector does, and one
/// reader keeps one core busy.
const SIDE_BY_SIDE_READERS: usize = 2;

/// The reader thread: reads every file from where the store left it, says
/// when it has caught up, and (when following) looks again after
/// `poll_interval`. Before each pass it counts the records of the files it
/// will read into `found`. When the loop takes events in any order, the
/// first pass reads files side by side.
fn read_files(
    source: &FileSource,
    sender: &mpsc::Sender<SourceMessage>,
    stop: &AtomicBool,
    found: &RecordsFound,
    poll_interval: Duration,
) {
    let stopped = || stop.load(Ordering::Relaxed);
    let Some(resume) = resume_from_loop(sender, &stopped) else { return };
    let mut progress = FileProgress::from_checkpoints(
        resume.checkpoints.into_iter().map(|checkpoint| (checkpoint.stream, checkpoint.next_offset)),
    );
    let send = |message| !stopped() && sender.blocking_send(message).is_ok();
    let mut counted = HashMap::new();
    let mut any_order = resume.any_order;
    loop {
        let files = match source.files() {
            Ok(files) => files,
            Err(error) => {
                let _ = sender.blocking_send(SourceMessage::Failed(error.to_string()));
                return;
            }
        };
        for name in &files {
            if progress.may_have_more(name, source.file_length(name)) {
                let records = record_count::records_in(&source.directory.join(name));
                found.add(progress.newly_found(&mut counted, name, records));
            }
        }
        let to_read: Vec<(String, Option<u64>)> = files
            .into_iter()
            .map(|name| {
                let length = source.file_length(&name);
                (name, length)
            })
            .filter(|(name, length)| progress.may_have_more(name, *length))
            .collect();
        let readers = if std::mem::take(&mut any_order) { SIDE_BY_SIDE_READERS } else { 1 };
        let Some(read) = read_side_by_side(source, &to_read, &progress, readers, &send) else { return };
        for ((name, length), next) in to_read.into_iter().zip(read) {
            progress.read_to_end(name, length, next);
        }
        if !send(SourceMessage::CaughtUp) {
            return;
        }
        std::thread::sleep(poll_interval);
    }
}

/// Reads `files` from their next offsets with `readers` threads, each
/// taking the next file not taken yet, and sends their events (up to
/// [`EVENTS_PER_MESSAGE`] a message, never two files' in one); one reader
/// reads them in order. Returns each file's next offset, or `None` once the
/// loop is gone or a stop was asked for.
fn read_side_by_side(
    source: &FileSource,
    files: &[(String, Option<u64>)],
    progress: &FileProgress,
    readers: usize,
    send: &(dyn Fn(SourceMessage) -> bool + Sync),
) -> Option<Vec<i64>> {
    let taken = std::sync::atomic::AtomicUsize::new(0);
    let closed = AtomicBool::new(false);
    let next_offsets: Vec<AtomicI64> = files.iter().map(|_| AtomicI64::new(0)).collect();
    let read = || {
        loop {
            let index = taken.fetch_add(1, Ordering::Relaxed);
            let Some((name, _)) = files.get(index) else { return };
            if closed.load(Ordering::Relaxed) {
                return;
            }
            let mut open = true;
            let mut events = Vec::with_capacity(EVENTS_PER_MESSAGE);
            let next = source.read_file(name, progress.next_offset(name), &mut |event| {
                events.push(event);
                if events.len() == EVENTS_PER_MESSAGE {
                    let full = std::mem::replace(&mut events, Vec::with_capacity(EVENTS_PER_MESSAGE));
                    open = send(SourceMessage::Events(full));
                }
                open
            });
            if open && !events.is_empty() {
                open = send(SourceMessage::Events(events));
            }
            if !open {
                closed.store(true, Ordering::Relaxed);
                return;
            }
            next_offsets[index].store(next, Ordering::Relaxed);
        }
    };
    std::thread::scope(|scope| {
        for _ in 1..readers {
            scope.spawn(read);
        }
        read();
    });
    if closed.load(Ordering::Relaxed) {
        return None;
    }
    Some(next_offsets.into_iter().map(AtomicI64::into_inner).collect())
}

#[cfg(test)]
mod tests {
    use super::FileProgress;

    #[test]
    fn a_file_read_to_its_end_is_read_again_only_once_its_length_changes() {
        let mut progress = FileProgress::from_checkpoints([("a.avro".to_owned(), 7)]);
        assert_eq!(progress.next_offset("a.avro"), 7, "resumes from the checkpoint");
        assert!(progress.may_have_more("a.avro", Some(100)), "not known to be read to its end");
        progress.read_to_end("a.avro".into(), Some(100), 9);
        assert_eq!(progress.next_offset("a.avro"), 9);
        assert!(!progress.may_have_more("a.avro", Some(100)));
        assert!(progress.may_have_more("a.avro", Some(140)), "it grew");
        assert!(progress.may_have_more("a.avro", None), "its length cannot be read");
        assert!(progress.may_have_more("b.avro", Some(100)), "a new file");
    }

    #[test]
    fn records_are_found_once_beyond_the_checkpoint() {
        let progress = FileProgress::from_checkpoints([("a.avro".to_owned(), 7)]);
        let mut counted = std::collections::HashMap::new();
        assert_eq!(progress.newly_found(&mut counted, "a.avro", Some(10)), 3, "beyond the checkpoint");
        assert_eq!(progress.newly_found(&mut counted, "a.avro", Some(10)), 0, "counted before");
        assert_eq!(progress.newly_found(&mut counted, "a.avro", Some(15)), 5, "it grew");
        assert_eq!(progress.newly_found(&mut counted, "a.avro", None), 0, "it cannot be counted");
        assert_eq!(progress.newly_found(&mut counted, "b.avro", Some(4)), 4, "a new file");
        assert_eq!(progress.newly_found(&mut counted, "c.avro", Some(0)), 0);
    }
}
