//! The dead-letter file of a source: one JSON line per parked event.
//!
//! A line names where the event is (stream, partition, offset), what is known
//! of it (topic, event id and type, aggregate id), why it was parked, and when.
//! It never copies the event's content: the source still holds it, and a
//! party event's content may be personal data.
//!
//! Lines are appended as events are parked, and synced before a batch whose
//! checkpoints pass them commits. A crash in between parks the same events
//! again on restart; the file keeps one line per position, so that does not
//! duplicate them.

use std::collections::HashSet;
use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use read_model::calendar::Timestamp;
use serde::{Deserialize, Serialize};

use super::{DeadLetterSink, ParkedEvent};
use crate::source::{Position, Rejection};

/// One parked event, as written to the file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeadLetter {
    pub source: String,
    pub stream: String,
    pub partition: i32,
    pub offset: i64,
    pub topic: Option<String>,
    pub event_id: Option<String>,
    pub event_type: Option<String>,
    pub aggregate_id: Option<String>,
    pub reason: String,
    pub parked_at: Timestamp,
}

/// The dead-letter file of one source.
#[derive(Debug)]
pub struct DeadLetterFile {
    path: PathBuf,
    file: File,
    parked: HashSet<Position>,
    /// Whether lines were appended since the last sync.
    unsynced: bool,
}

impl DeadLetterFile {
    /// Opens (creating) the file, dropping a torn last line left by a crash.
    pub fn open(path: &Path) -> std::io::Result<DeadLetterFile> {
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let mut parked = HashSet::new();
        let mut intact_length = 0_u64;
        if let Ok(existing) = File::open(path) {
            let mut reader = BufReader::new(existing);
            let mut line = String::new();
            while reader.read_line(&mut line)? > 0 {
                if !line.ends_with('\n') {
                    break;
                }
                if let Ok(letter) = serde_json::from_str::<DeadLetter>(&line) {
                    parked.insert(Position {
                        stream: letter.stream,
                        partition: letter.partition,
                        offset: letter.offset,
                    });
                }
                intact_length += line.len() as u64;
                line.clear();
            }
        }
        let file = OpenOptions::new().create(true).append(true).open(path)?;
        file.set_len(intact_length)?;
        Ok(DeadLetterFile { path: path.to_path_buf(), file, parked, unsynced: false })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends the events not parked before; [`DeadLetterFile::sync`] makes
    /// them durable. Returns how many were new.
    pub fn park(&mut self, source: &str, events: &[(Position, Rejection)]) -> std::io::Result<usize> {
        let mut text = String::new();
        let now = Timestamp::now();
        let mut new_positions = HashSet::new();
        for (position, rejection) in events {
            if self.parked.contains(position) || !new_positions.insert(position.clone()) {
                continue;
            }
            let letter = DeadLetter {
                source: source.to_owned(),
                stream: position.stream.clone(),
                partition: position.partition,
                offset: position.offset,
                topic: rejection.topic.map(|topic| topic.name().to_owned()),
                event_id: rejection.event_id.clone(),
                event_type: rejection.event_type.clone(),
                aggregate_id: rejection.aggregate_id.clone(),
                reason: rejection.reason.clone(),
                parked_at: now,
            };
            text.push_str(&serde_json::to_string(&letter).map_err(std::io::Error::other)?);
            text.push('\n');
        }
        if text.is_empty() {
            return Ok(0);
        }
        self.file.write_all(text.as_bytes())?;
        self.unsynced = true;
        // Only once written: a failed write is retried with the same events.
        let count = new_positions.len();
        self.parked.extend(new_positions);
        Ok(count)
    }

    /// Syncs the lines appended since the last sync.
    pub fn sync(&mut self) -> std::io::Result<()> {
        if self.unsynced {
            self.file.sync_data()?;
            self.unsynced = false;
        }
        Ok(())
    }

    /// Every line of a dead-letter file.
    pub fn read_all(path: &Path) -> std::io::Result<Vec<DeadLetter>> {
        let reader = BufReader::new(File::open(path)?);
        reader.lines().map(|line| serde_json::from_str(&line?).map_err(std::io::Error::other)).collect()
    }
}

impl DeadLetterSink for DeadLetterFile {
    fn park(&mut self, source: &str, events: &[ParkedEvent]) -> anyhow::Result<usize> {
        let events: Vec<(Position, Rejection)> =
            events.iter().map(|event| (event.position.clone(), event.rejection.clone())).collect();
        Ok(DeadLetterFile::park(self, source, &events)?)
    }

    fn flush(&mut self) -> anyhow::Result<()> {
        Ok(self.sync()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parked(offset: i64) -> (Position, Rejection) {
        (
            Position { stream: "a.avro".into(), partition: 0, offset },
            Rejection::unidentified(format!("bad {offset}"), None),
        )
    }

    #[test]
    fn parking_the_same_position_twice_writes_one_line_even_across_reopen() {
        let directory = tempfile::tempdir().expect("tempdir");
        let path = directory.path().join("letters.jsonl");
        let mut letters = DeadLetterFile::open(&path).expect("open");
        assert_eq!(letters.park("file:x", &[parked(1), parked(2)]).expect("park"), 2);
        assert_eq!(letters.park("file:x", &[parked(2)]).expect("park"), 0);
        drop(letters);
        let mut letters = DeadLetterFile::open(&path).expect("reopen");
        assert_eq!(letters.park("file:x", &[parked(1), parked(3)]).expect("park"), 1);
        let all = DeadLetterFile::read_all(&path).expect("read");
        assert_eq!(all.iter().map(|letter| letter.offset).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(all[0].reason, "bad 1");
    }

    #[test]
    fn a_torn_last_line_is_dropped_on_open() {
        let directory = tempfile::tempdir().expect("tempdir");
        let path = directory.path().join("letters.jsonl");
        let mut letters = DeadLetterFile::open(&path).expect("open");
        letters.park("file:x", &[parked(1)]).expect("park");
        drop(letters);
        let mut file = OpenOptions::new().append(true).open(&path).expect("append");
        file.write_all(b"{\"source\":\"file:x\",\"str").expect("torn write");
        drop(file);
        let mut letters = DeadLetterFile::open(&path).expect("reopen");
        letters.park("file:x", &[parked(2)]).expect("park");
        let all = DeadLetterFile::read_all(&path).expect("every line parses");
        assert_eq!(all.len(), 2);
    }
}
