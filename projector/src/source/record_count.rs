//! Counting the records of an Avro object container file from its block
//! headers, without decoding them: how the file source learns, before it
//! reads a file, how many events the file holds (for the run's progress).
//!
//! A container file is a header (magic, a metadata map, a sync marker) and
//! blocks, each a record count, a byte size, that many bytes and the sync
//! marker; so counting seeks past every block's data. It reads nothing the
//! projection relies on: a file it cannot count is simply not counted.

use std::io::{BufReader, Read, Seek};
use std::path::Path;

use super::container::{self, MAGIC};

/// The length of a file's sync marker.
const SYNC_LENGTH: i64 = 16;

/// The records in the whole blocks of the container file at `path`, or
/// `None` when it cannot be read as one. A block cut short (a file still
/// being written) ends the count.
pub fn records_in(path: &Path) -> Option<u64> {
    let file = std::fs::File::open(path).ok()?;
    let length = file.metadata().ok()?.len();
    count_records(&mut BufReader::with_capacity(64 * 1024, file), length)
}

/// The records of a container file of `length` bytes read from `bytes`.
fn count_records(bytes: &mut (impl Read + Seek), length: u64) -> Option<u64> {
    let mut magic = [0_u8; 4];
    bytes.read_exact(&mut magic).ok()?;
    if magic != MAGIC {
        return None;
    }
    skip_metadata(bytes)?;
    bytes.seek_relative(SYNC_LENGTH).ok()?;
    let mut records = 0_u64;
    loop {
        let Some(count) = read_long(bytes) else { return Some(records) };
        let size = read_long(bytes)?;
        let Ok(count) = u64::try_from(count) else { return None };
        if size < 0 {
            return None;
        }
        let end = bytes.stream_position().ok()?.checked_add(size as u64)?.checked_add(SYNC_LENGTH as u64)?;
        if end > length {
            return Some(records);
        }
        bytes.seek_relative(size + SYNC_LENGTH).ok()?;
        records = records.checked_add(count)?;
    }
}

/// Skips the header's metadata map: blocks of entries (a string key, a
/// bytes value), a negative count followed by the block's size in bytes,
/// and a count of 0 at the end.
fn skip_metadata(bytes: &mut (impl Read + Seek)) -> Option<()> {
    loop {
        let count = read_long(bytes)?;
        if count == 0 {
            return Some(());
        }
        if count < 0 {
            let size = read_long(bytes)?;
            if size < 0 {
                return None;
            }
            bytes.seek_relative(size).ok()?;
            continue;
        }
        for _ in 0..count {
            for _ in 0..2 {
                let length = read_long(bytes)?;
                if length < 0 {
                    return None;
                }
                bytes.seek_relative(length).ok()?;
            }
        }
    }
}

/// One long of the header or a block's; `None` at the end of the bytes or
/// on a long of more than ten bytes.
fn read_long(bytes: &mut impl Read) -> Option<i64> {
    container::read_long(bytes).ok().flatten()
}

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use apache_avro::types::Value;
    use apache_avro::{Schema, Writer};

    use super::*;

    /// A container file of `records` longs, flushed into a block every `per_block`.
    fn container(records: usize, per_block: usize) -> Vec<u8> {
        let schema = Schema::parse_str(r#""long""#).expect("schema");
        let mut writer = Writer::new(&schema, Vec::new()).expect("a writer");
        for record in 0..records {
            writer.append_value(Value::Long(record as i64)).expect("append");
            if (record + 1) % per_block == 0 {
                writer.flush().expect("flush");
            }
        }
        writer.into_inner().expect("a container file")
    }

    fn count(bytes: &[u8]) -> Option<u64> {
        count_records(&mut Cursor::new(bytes), bytes.len() as u64)
    }

    #[test]
    fn every_block_is_counted_without_decoding() {
        assert_eq!(count(&container(0, 1)), Some(0));
        assert_eq!(count(&container(1, 1)), Some(1));
        assert_eq!(count(&container(1_000, 7)), Some(1_000), "143 blocks");
    }

    #[test]
    fn a_block_cut_short_ends_the_count_and_a_file_of_another_kind_is_not_counted() {
        let whole = container(30, 10);
        assert_eq!(count(&whole[..whole.len() - 1]), Some(20), "the last block is cut short");
        assert_eq!(count(b"PAR1 not a container"), None);
        assert_eq!(count(&whole[..3]), None, "a cut magic");
    }

    #[test]
    fn longs_are_zigzag_varints() {
        for (bytes, value) in [(&[0x00][..], 0), (&[0x01], -1), (&[0x02], 1), (&[0xac, 0x02], 150), (&[0x7f], -64)] {
            assert_eq!(read_long(&mut Cursor::new(bytes)), Some(value), "{bytes:?}");
        }
        assert_eq!(read_long(&mut Cursor::new(&[0xff; 11])), None, "longer than ten bytes");
    }
}
