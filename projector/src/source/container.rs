//! Avro object container files read block by block: the header (the writer
//! schema, the codec, the sync marker), then each block's datums, from one
//! buffer of the block's bytes decompressed.
//!
//! It finds datums and nothing more: what one holds is said by the reader
//! the caller gives for it (the contract's records, or apache-avro's values
//! of the writer schema), which leaves its slice after the datum. apache-
//! avro's own container reader hands its datums only to its own decoders,
//! so the projector's reader of the contract's records could not be used
//! with it.

use std::io::Read;
use std::str::FromStr;

use apache_avro::reader::datum::GenericDatumReader;
use apache_avro::types::Value;
use apache_avro::{Codec, Schema};

use crate::events::decode::DatumError;

/// The first bytes of every container file.
pub(super) const MAGIC: [u8; 4] = *b"Obj\x01";

/// Why a container file, or a block of it, cannot be read.
#[derive(Debug, thiserror::Error)]
pub enum ContainerError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("not an Avro container file: it does not start with Obj\\x01")]
    Magic,
    #[error("the header {0}")]
    Header(String),
    #[error("a block's {0} is negative")]
    Negative(&'static str),
    #[error("a block's sync marker is not the file's")]
    Marker,
    #[error("a datum of no bytes in a block that claims more")]
    EmptyDatum,
    #[error(transparent)]
    Avro(#[from] apache_avro::Error),
    #[error(transparent)]
    Datum(#[from] DatumError),
}

/// A container file being read, one datum at a time.
#[derive(Debug)]
pub struct Container<R> {
    bytes: R,
    schema: Schema,
    codec: Codec,
    marker: [u8; 16],
    block: Vec<u8>,
    /// How far into `block` its datums have been read.
    read: usize,
    /// The datums of `block` not read yet.
    left: u64,
    /// An error has been returned: nothing after it is read.
    failed: bool,
}

impl<R: Read> Container<R> {
    /// Reads the header of the container file `bytes` begins with.
    pub fn open(mut bytes: R) -> Result<Container<R>, ContainerError> {
        let mut magic = [0_u8; 4];
        bytes.read_exact(&mut magic)?;
        if magic != MAGIC {
            return Err(ContainerError::Magic);
        }
        let metadata_schema = Schema::map(Schema::Bytes).build();
        let Value::Map(metadata) = GenericDatumReader::builder(&metadata_schema).build()?.read_value(&mut bytes)?
        else {
            return Err(ContainerError::Header("metadata is not a map".into()));
        };
        let entry = |key: &str| match metadata.get(key) {
            Some(Value::Bytes(value)) => Ok(Some(value.as_slice())),
            Some(_) => Err(ContainerError::Header(format!("entry {key} is not bytes"))),
            None => Ok(None),
        };
        let schema = entry("avro.schema")?.ok_or_else(|| ContainerError::Header("has no avro.schema".into()))?;
        let schema: serde_json::Value = serde_json::from_slice(schema)
            .map_err(|error| ContainerError::Header(format!("avro.schema is not JSON: {error}")))?;
        let schema = Schema::parse(&schema)?;
        let codec = match entry("avro.codec")? {
            None => Codec::Null,
            Some(name) => str::from_utf8(name)
                .ok()
                .and_then(|name| Codec::from_str(name).ok())
                .ok_or_else(|| ContainerError::Header(format!("names a codec this build cannot read: {name:?}")))?,
        };
        let mut marker = [0_u8; 16];
        bytes.read_exact(&mut marker)?;
        Ok(Container { bytes, schema, codec, marker, block: Vec::new(), read: 0, left: 0, failed: false })
    }

    pub fn writer_schema(&self) -> &Schema {
        &self.schema
    }

    /// Reads the next datum with `read`, which must leave its slice after
    /// the datum; `None` after the last datum of the file's last whole
    /// block. After an error the file cannot be read further.
    pub fn next_datum<T>(
        &mut self,
        read: impl FnOnce(&mut &[u8]) -> Result<T, DatumError>,
    ) -> Option<Result<T, ContainerError>> {
        if self.failed {
            return None;
        }
        let datum = self.read_datum(read);
        self.failed = matches!(datum, Some(Err(_)));
        datum
    }

    fn read_datum<T>(
        &mut self,
        read: impl FnOnce(&mut &[u8]) -> Result<T, DatumError>,
    ) -> Option<Result<T, ContainerError>> {
        if self.left == 0 {
            match self.next_block() {
                Ok(true) => {}
                Ok(false) => return None,
                Err(error) => return Some(Err(error)),
            }
        }
        let before = &self.block[self.read..];
        let mut datum = before;
        let value = read(&mut datum).map_err(ContainerError::from);
        let length = before.len() - datum.len();
        // A datum that takes no bytes would let a block's count, however
        // large, be read without reading anything.
        if value.is_ok() && length == 0 {
            return Some(Err(ContainerError::EmptyDatum));
        }
        self.read += length;
        self.left -= 1;
        Some(value)
    }

    /// Reads the next block into `block`; false at the end of the file, or
    /// after blocks of no datums up to it.
    fn next_block(&mut self) -> Result<bool, ContainerError> {
        loop {
            let Some(count) = read_long(&mut self.bytes)? else { return Ok(false) };
            let count = u64::try_from(count).map_err(|_| ContainerError::Negative("record count"))?;
            let size = read_long(&mut self.bytes)?.ok_or_else(|| eof("a block's size"))?;
            let size = u64::try_from(size).map_err(|_| ContainerError::Negative("size"))?;
            self.block.clear();
            // Read through `take`, so the buffer grows with the bytes there
            // are, not with the size a corrupt header claims.
            (&mut self.bytes).take(size).read_to_end(&mut self.block)?;
            if (self.block.len() as u64) < size {
                return Err(eof("a block"));
            }
            let mut marker = [0_u8; 16];
            self.bytes.read_exact(&mut marker).map_err(|error| cut_short(error, "a block's sync marker"))?;
            if marker != self.marker {
                return Err(ContainerError::Marker);
            }
            self.codec.decompress(&mut self.block)?;
            self.read = 0;
            self.left = count;
            if count > 0 {
                return Ok(true);
            }
        }
    }
}

/// One zigzag-encoded variable-length long of a file's header or a block's;
/// `None` at the end of the bytes, before its first byte.
pub(super) fn read_long(bytes: &mut impl Read) -> Result<Option<i64>, ContainerError> {
    let mut value = 0_u64;
    for (index, shift) in (0..64).step_by(7).enumerate() {
        let mut byte = [0_u8];
        if bytes.read(&mut byte)? == 0 {
            return if index == 0 { Ok(None) } else { Err(eof("a block's header")) };
        }
        value |= u64::from(byte[0] & 0x7f) << shift;
        if byte[0] & 0x80 == 0 {
            return Ok(Some((value >> 1) as i64 ^ -((value & 1) as i64)));
        }
    }
    Err(ContainerError::Header("of a block has a long of more than ten bytes".into()))
}

/// `error`, or that the file ends inside `what` when that is what it says.
fn cut_short(error: std::io::Error, what: &str) -> ContainerError {
    match error.kind() {
        std::io::ErrorKind::UnexpectedEof => eof(what),
        _ => ContainerError::Io(error),
    }
}

fn eof(what: &str) -> ContainerError {
    ContainerError::Io(std::io::Error::new(std::io::ErrorKind::UnexpectedEof, format!("the file ends inside {what}")))
}

#[cfg(test)]
mod tests {
    use apache_avro::{DeflateSettings, Writer};

    use super::*;

    /// A container file of the longs `0..records`, a block every `per_block`.
    fn container(records: i64, per_block: i64, codec: Codec) -> Vec<u8> {
        let schema = Schema::parse_str(r#""long""#).expect("schema");
        let mut writer = Writer::with_codec(&schema, Vec::new(), codec).expect("a writer");
        for record in 0..records {
            writer.append_value(Value::Long(record)).expect("append");
            if (record + 1) % per_block == 0 {
                writer.flush().expect("flush");
            }
        }
        writer.into_inner().expect("a container file")
    }

    fn longs(bytes: &[u8]) -> Vec<Result<i64, String>> {
        let mut file = Container::open(bytes).expect("a header");
        assert_eq!(file.writer_schema(), &Schema::Long);
        let mut read = Vec::new();
        let reader = GenericDatumReader::builder(&Schema::Long).build().expect("a reader");
        while let Some(datum) = file.next_datum(|datum| {
            let value = reader.read_value(datum)?;
            Ok(if let Value::Long(value) = value { value } else { -1 })
        }) {
            let failed = datum.is_err();
            read.push(datum.map_err(|error| error.to_string()));
            if failed {
                break;
            }
        }
        read
    }

    #[test]
    fn every_datum_of_every_block_is_read_in_order_whatever_the_codec() {
        for codec in [Codec::Null, Codec::Deflate(DeflateSettings::default())] {
            let read = longs(&container(1_000, 7, codec));
            assert_eq!(read, (0..1_000).map(Ok).collect::<Vec<_>>(), "{codec:?}");
        }
        assert!(longs(&container(0, 1, Codec::Null)).is_empty());
    }

    #[test]
    fn a_block_cut_short_or_with_a_foreign_marker_ends_the_file_with_an_error() {
        let whole = container(30, 10, Codec::Null);
        let cut = longs(&whole[..whole.len() - 1]);
        assert_eq!(cut.len(), 21, "two whole blocks, then the error");
        assert_eq!(cut[20], Err("the file ends inside a block's sync marker".into()));
        let cut = longs(&whole[..whole.len() - 20]);
        assert_eq!(cut[20], Err("the file ends inside a block".into()));
        let mut foreign = whole.clone();
        let last = foreign.len() - 1;
        foreign[last] ^= 1;
        assert_eq!(longs(&foreign)[20], Err(ContainerError::Marker.to_string()));
        // The marker after the second block changed (the header has it
        // first): that block is refused whole, and the one after it is not read.
        let marker = &whole[whole.len() - 16..];
        let after_second_block =
            (1..whole.len() - 16).filter(|&at| &whole[at..at + 16] == marker).nth(2).expect("a third marker");
        let mut foreign = whole.clone();
        foreign[after_second_block] ^= 1;
        let read = longs(&foreign);
        assert_eq!(read.len(), 11);
        assert_eq!(read[10], Err(ContainerError::Marker.to_string()));
        let mut file = Container::open(foreign.as_slice()).expect("a header");
        let outcomes: Vec<bool> = std::iter::from_fn(|| file.next_datum(|datum| Ok(datum.split_off_first().copied())))
            .map(|outcome| outcome.is_ok())
            .collect();
        assert_eq!(outcomes, [[true; 10].as_slice(), &[false]].concat(), "nothing is read after an error");
        assert!(matches!(Container::open(&b"PAR1 not a container"[..]), Err(ContainerError::Magic)));
    }
}
