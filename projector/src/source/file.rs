//! The file source: Avro object container files in a directory, read in
//! file-name order as if each file were a stretch of its topic.
//!
//! A file's topic is the one whose event record its writer schema names, so
//! files can be named freely (the generator names them `SEGMENT-TOPIC.avro`).
//! The position of an event is (file name, 0, record index), and the store's
//! checkpoint for a file is the next record index to read. Files are expected
//! to appear whole (written elsewhere, then renamed into the directory).

use std::fs::File;
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use apache_avro::Reader;

use super::{Position, Rejection, SourcedEvent, event_from_value};
use crate::contract::{Contract, Topic};
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

    /// Reads the events of `name` from record `start` on, handing each to
    /// `emit` until it returns false. Returns the next record index to read.
    ///
    /// An unreadable stretch (a corrupt block, a broken header) ends the file:
    /// it is reported once, as a rejection at the first record that could not
    /// be read, and the file is not read past it.
    pub fn read_file(&self, name: &str, start: i64, emit: &mut dyn FnMut(SourcedEvent) -> bool) -> i64 {
        let position = |offset| Position { stream: name.to_owned(), partition: 0, offset };
        let reader = File::open(self.directory.join(name))
            .map_err(|error| error.to_string())
            .and_then(|file| Reader::new(BufReader::with_capacity(1 << 20, file)).map_err(|error| error.to_string()));
        let reader = match reader {
            Ok(reader) => reader,
            Err(error) => {
                if start == 0 {
                    emit(SourcedEvent {
                        position: position(0),
                        outcome: Err(Rejection::unidentified(format!("unreadable Avro container file: {error}"), None)),
                        original: None,
                    });
                }
                return start.max(1);
            }
        };
        let writer = reader.writer_schema().clone();
        let topic = self.contract.topic_of(&writer);
        let resolver = topic.map(|topic| Resolver::new(&self.contract, topic, &writer));
        let mut offset = 0_i64;
        for record in reader {
            if offset < start {
                if record.is_err() {
                    // Reported when first read; the file ends here.
                    return start;
                }
                offset += 1;
                continue;
            }
            let (outcome, stop) = match record {
                Ok(value) => (self.event_from_value(topic, resolver.as_ref(), value), false),
                Err(error) => {
                    (Err(Rejection::unidentified(format!("unreadable from this record on: {error}"), topic)), true)
                }
            };
            let proceed = emit(SourcedEvent { position: position(offset), outcome, original: None });
            offset += 1;
            if stop || !proceed {
                break;
            }
        }
        offset
    }

    fn event_from_value(
        &self,
        topic: Option<Topic>,
        resolver: Option<&Result<Resolver, String>>,
        value: apache_avro::types::Value,
    ) -> Result<crate::events::Event, Rejection> {
        let (Some(topic), Some(resolver)) = (topic, resolver) else {
            return Err(Rejection::unidentified("the writer schema names no topic of the contract".into(), None));
        };
        let resolver = resolver.as_ref().map_err(|error| Rejection::unidentified(error.clone(), Some(topic)))?;
        event_from_value(&self.contract, topic, resolver, value)
    }
}
