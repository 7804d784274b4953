//! Bodies as the stores keep them: each document, provenance entry, bulk row
//! and projector state is compressed with a dictionary trained for its kind
//! of body, as a zstd frame or as an LZ4 block (whichever its kind uses),
//! and read back to exactly the bytes written; a body too short to gain
//! from it is kept as it is.
//!
//! Why: bodies of one kind repeat their keys and most of their structure,
//! and a dictionary holds that once for all of them, so a body shrinks to a
//! fifth or less of its JSON where compressing it alone would halve it. A
//! store of a national registry then fits the page cache that serves it.
//! A short body (a projector state, the tags a notification memo keeps)
//! gains little or nothing: the frame's header and tables take most of what
//! its content would save, and its compression costs nearly as much as a
//! long one's.
//!
//! Why two codecs: a lookup that is not served from memory decompresses
//! the document it reads, and so does a document cache that holds stored
//! bodies; zstd's entropy coding spends about 8,000 instructions on a rights
//! profile, a sixth of such a lookup, where an LZ4 block made against the
//! same dictionary decodes in about 2,500 ([`BodyKind::codec`] says which
//! kinds use which). LZ4 has no entropy coding, so its blocks are
//! larger, and its high-compression mode costs the projector more per body,
//! so only the rights profile, the document lookups read most, uses it.
//!
//! The dictionaries are committed (`schemas/dictionaries/`, trained by
//! `scripts/train-dictionaries.sh`) and compiled in; an LZ4 block is made
//! against the same file as zstd's frames, whose trained content is at its
//! end, where LZ4 looks for matches. Every body names its dictionary's id,
//! and a body whose dictionary the program lacks is refused as corrupt:
//! retraining means keeping the old files beside the new ones, or
//! rebuilding every store. A store may hold both codecs for one kind (a
//! body written before its kind changed codec is read as it was written).
//! A body that is neither (a short one, one stored before compression, or a
//! sandbox fixture) is read as it is: JSON and the projector's MessagePack
//! states never begin with zstd's magic number, nor with [`BLOCK_MAGIC`].
//!
//! It must not interpret what it compresses.

use std::cell::RefCell;
use std::sync::LazyLock;

use zstd::bulk::{Compressor, Decompressor};
use zstd::dict::{DecoderDictionary, EncoderDictionary};

use crate::records::StoreError;

/// The kinds of body, each with a dictionary of its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyKind {
    RightsProfile,
    Verification,
    Metadata,
    Evidence,
    LicenseStatus,
    Provenance,
    /// A bulk row, and the same body in the change feed.
    BulkRow,
    AggregateState,
}

/// How a kind's bodies are compressed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Zstd,
    Lz4,
}

impl BodyKind {
    /// The kind of a document's body.
    pub fn of_document(kind: crate::documents::DocumentKind) -> BodyKind {
        use crate::documents::DocumentKind;
        match kind {
            DocumentKind::RightsProfile => BodyKind::RightsProfile,
            DocumentKind::Verification => BodyKind::Verification,
            DocumentKind::Metadata => BodyKind::Metadata,
            DocumentKind::Evidence => BodyKind::Evidence,
            DocumentKind::LicenseStatus => BodyKind::LicenseStatus,
        }
    }

    const ALL: [BodyKind; 8] = [
        BodyKind::RightsProfile,
        BodyKind::Verification,
        BodyKind::Metadata,
        BodyKind::Evidence,
        BodyKind::LicenseStatus,
        BodyKind::Provenance,
        BodyKind::BulkRow,
        BodyKind::AggregateState,
    ];

    fn index(self) -> usize {
        self as usize
    }

    /// The codec of the kind's bodies. The rights profile uses LZ4: lookups
    /// decode it most, and its block (with its header) stays within 11% of
    /// its zstd frame. Verification, evidence and provenance blocks would
    /// be a fifth to a third larger than their frames; for the other kinds
    /// LZ4's compression costs the projector more than their reads gain (a
    /// state is compressed for nearly every event, and each kind's liblz4
    /// context takes 256 KiB of the processor's caches). docs/benchmarks.md
    /// has the lookup's and the projector's instructions with this choice.
    fn codec(self) -> Codec {
        match self {
            BodyKind::RightsProfile => Codec::Lz4,
            BodyKind::Verification
            | BodyKind::Metadata
            | BodyKind::Evidence
            | BodyKind::LicenseStatus
            | BodyKind::Provenance
            | BodyKind::BulkRow
            | BodyKind::AggregateState => Codec::Zstd,
        }
    }
}

/// The committed dictionaries, in the order of [`BodyKind::ALL`].
const DICTIONARY_FILES: [&[u8]; 8] = [
    include_bytes!("../../schemas/dictionaries/rights_profile.zdict"),
    include_bytes!("../../schemas/dictionaries/verification.zdict"),
    include_bytes!("../../schemas/dictionaries/metadata.zdict"),
    include_bytes!("../../schemas/dictionaries/evidence.zdict"),
    include_bytes!("../../schemas/dictionaries/license_status.zdict"),
    include_bytes!("../../schemas/dictionaries/provenance.zdict"),
    include_bytes!("../../schemas/dictionaries/bulk_row.zdict"),
    include_bytes!("../../schemas/dictionaries/aggregate_state.zdict"),
];

/// zstd's fastest standard level. The projector compresses every body it
/// writes, and with a dictionary trained for the kind of body, level 1
/// keeps a body nearly as small as the default level 3 at a good part less
/// of the projector's time (`scripts/compare-projectors.sh` measures both).
const LEVEL: i32 = 1;

/// liblz4's lowest level that searches hash chains. At level 2 a rights
/// profile's block is about a third larger than its zstd frame; higher
/// levels make it a few percent smaller for up to twice the projector's
/// time per profile.
const LZ4_LEVEL: i32 = 3;

/// Bodies this long or shorter are stored as they are. On the generated
/// registry's bodies (`scripts/bench-scale.sh` stores) those are projector
/// states and notification memos: up to 96 bytes a frame takes no less room
/// than the body; from 97 to 128 (about one state a work, mostly a
/// certificate's) a frame saves a quarter of the body, about 29 bytes a
/// work in all (1% of the store), for about 12,000 instructions of the
/// projector each (1.8% of its instructions per event). Longer bodies
/// shrink to a half or less.
const LONGEST_BODY_STORED_AS_IT_IS: usize = 128;

/// The first four bytes of every zstd frame.
const FRAME_MAGIC: [u8; 4] = [0x28, 0xB5, 0x2F, 0xFD];

/// The first byte of every stored LZ4 block, which its header follows: the
/// dictionary's id (four bytes, little-endian), then the body's size
/// (LEB128, at most four bytes), then the block. No JSON text begins with
/// it (it is never part of UTF-8), and MessagePack never uses it.
const BLOCK_MAGIC: u8 = 0xC1;

/// No stored body is larger; a frame or block that claims more is corrupt.
const LARGEST_BODY: u64 = 64 << 20;

struct Dictionary {
    id: u32,
    bytes: &'static [u8],
    encoder: Encoder,
    decoder: DecoderDictionary<'static>,
}

/// A dictionary prepared for its kind's codec.
enum Encoder {
    Zstd(EncoderDictionary<'static>),
    Lz4(lz4_blocks::Dictionary),
}

static DICTIONARIES: LazyLock<Vec<Dictionary>> = LazyLock::new(|| {
    BodyKind::ALL
        .iter()
        .zip(DICTIONARY_FILES)
        .map(|(kind, file)| Dictionary {
            id: dictionary_id(file),
            bytes: file,
            encoder: match kind.codec() {
                Codec::Zstd => Encoder::Zstd(EncoderDictionary::copy(file, LEVEL)),
                // Fails only when liblz4 cannot allocate a context, which
                // leaves nothing to compress with; the dictionary is ours.
                Codec::Lz4 => Encoder::Lz4(
                    lz4_blocks::Dictionary::new(file, LZ4_LEVEL).expect("failed to prepare an LZ4 dictionary"),
                ),
            },
            decoder: DecoderDictionary::copy(file),
        })
        .collect()
});

/// The id a dictionary file declares (bytes 4 to 8, little-endian, after its magic number).
fn dictionary_id(file: &[u8]) -> u32 {
    file.get(4..8).and_then(|bytes| bytes.try_into().ok()).map_or(0, u32::from_le_bytes)
}

thread_local! {
    /// One compression context per kind and thread: creating one costs more than compressing a body.
    static COMPRESSORS: RefCell<Vec<Option<Compressor<'static>>>> = RefCell::new((0..BodyKind::ALL.len()).map(|_| None).collect());
    static DECOMPRESSOR: RefCell<Option<Decompressor<'static>>> = const { RefCell::new(None) };
}

/// `body` as stored: compressed with `kind`'s dictionary and codec, or the
/// body itself when it is too short to gain from it.
pub fn compress(kind: BodyKind, body: &[u8]) -> Result<Vec<u8>, StoreError> {
    if body.len() <= LONGEST_BODY_STORED_AS_IT_IS {
        return Ok(body.to_vec());
    }
    let dictionary = &DICTIONARIES[kind.index()];
    match &dictionary.encoder {
        Encoder::Lz4(encoder) => compress_block(dictionary.id, encoder, body),
        Encoder::Zstd(encoder) => COMPRESSORS.with(|compressors| {
            let mut compressors = compressors.borrow_mut();
            let slot = &mut compressors[kind.index()];
            let compressor = match slot {
                Some(compressor) => compressor,
                None => slot.insert(
                    Compressor::with_prepared_dictionary(encoder)
                        .map_err(|error| StoreError::Corrupt(format!("cannot start compressing: {error}")))?,
                ),
            };
            compressor.compress(body).map_err(|error| StoreError::Corrupt(format!("cannot compress a body: {error}")))
        }),
    }
}

/// The stored LZ4 block of `body`, after its header ([`BLOCK_MAGIC`]).
fn compress_block(id: u32, encoder: &lz4_blocks::Dictionary, body: &[u8]) -> Result<Vec<u8>, StoreError> {
    if body.len() as u64 > LARGEST_BODY {
        return Err(StoreError::Corrupt(format!("cannot compress a body of {} bytes", body.len())));
    }
    let mut stored = Vec::new();
    stored.push(BLOCK_MAGIC);
    stored.extend_from_slice(&id.to_le_bytes());
    let mut size = body.len();
    while size >= 0x80 {
        stored.push((size & 0x7F) as u8 | 0x80);
        size >>= 7;
    }
    stored.push(size as u8);
    lz4_blocks::compress_into(encoder, body, &mut stored)
        .map_err(|error| StoreError::Corrupt(format!("cannot compress a body: {error}")))?;
    Ok(stored)
}

/// The body a stored value holds: the frame or block decompressed, or the
/// value itself when it is neither.
pub fn decompress(stored: Vec<u8>) -> Result<Vec<u8>, StoreError> {
    match compressed_as(&stored) {
        Some(codec) => decompress_with(codec, &stored),
        None => Ok(stored),
    }
}

/// [`decompress`] of a stored value that stays where it is (a cached one).
pub fn decompress_borrowed(stored: &[u8]) -> Result<Vec<u8>, StoreError> {
    match compressed_as(stored) {
        Some(codec) => decompress_with(codec, stored),
        None => Ok(stored.to_vec()),
    }
}

/// The codec that wrote `stored`, or `None` when it is kept as it is.
fn compressed_as(stored: &[u8]) -> Option<Codec> {
    if stored.first() == Some(&BLOCK_MAGIC) {
        Some(Codec::Lz4)
    } else if stored.starts_with(&FRAME_MAGIC) {
        Some(Codec::Zstd)
    } else {
        None
    }
}

fn decompress_with(codec: Codec, stored: &[u8]) -> Result<Vec<u8>, StoreError> {
    match codec {
        Codec::Lz4 => decompress_block(stored),
        Codec::Zstd => decompress_frame(stored),
    }
}

fn corrupt(what: &str) -> StoreError {
    StoreError::Corrupt(format!("a stored body {what}"))
}

/// The dictionary whose id a stored body names.
fn named_dictionary(id: u32) -> Result<&'static Dictionary, StoreError> {
    DICTIONARIES
        .iter()
        .find(|dictionary| dictionary.id == id)
        .ok_or_else(|| corrupt(&format!("names dictionary {id}, which this program does not have")))
}

fn decompress_block(stored: &[u8]) -> Result<Vec<u8>, StoreError> {
    let id = stored.get(1..5).and_then(|bytes| bytes.try_into().ok()).map(u32::from_le_bytes);
    let dictionary = named_dictionary(id.ok_or_else(|| corrupt("ends in its header"))?)?;
    let mut size: u64 = 0;
    let mut at = 5;
    for shift in [0, 7, 14, 21] {
        let byte = *stored.get(at).ok_or_else(|| corrupt("ends in its header"))?;
        size |= u64::from(byte & 0x7F) << shift;
        at += 1;
        if byte & 0x80 == 0 {
            break;
        }
        if shift == 21 {
            return Err(corrupt("has too long a size"));
        }
    }
    if size > LARGEST_BODY {
        return Err(corrupt("has too large a size"));
    }
    let size = usize::try_from(size).map_err(|_| corrupt("has too large a size"))?;
    lz4_blocks::decompress(dictionary.bytes, &stored[at..], size)
        .map_err(|error| corrupt(&format!("does not decompress: {error}")))
}

fn decompress_frame(stored: &[u8]) -> Result<Vec<u8>, StoreError> {
    let id = zstd::zstd_safe::get_dict_id_from_frame(stored).map_or(0, std::num::NonZeroU32::get);
    let dictionary = named_dictionary(id)?;
    let size = match zstd::zstd_safe::get_frame_content_size(stored) {
        Ok(Some(size)) if size <= LARGEST_BODY => size,
        _ => return Err(corrupt("has no size, or too large a one")),
    };
    DECOMPRESSOR.with(|decompressor| {
        let mut decompressor = decompressor.borrow_mut();
        let decompressor = match &mut *decompressor {
            Some(decompressor) => decompressor,
            empty => empty.insert(Decompressor::new().map_err(|error| corrupt(&format!("cannot be read: {error}")))?),
        };
        decompressor
            .set_prepared_dictionary(&dictionary.decoder)
            .map_err(|error| corrupt(&format!("cannot be read: {error}")))?;
        let capacity = usize::try_from(size).unwrap_or(usize::MAX);
        decompressor.decompress(stored, capacity).map_err(|error| corrupt(&format!("does not decompress: {error}")))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `stored` is written the way `kind`'s codec writes.
    fn written_by_codec(kind: BodyKind, stored: &[u8]) -> bool {
        compressed_as(stored) == Some(kind.codec())
    }

    const PROFILE: &[u8] = br#"{"lccId":"LCC-0000000001","title":"Title of LCC-0000000001","holders":[{"partyId":"PTY-0000000001","name":"Ada","role":"author"}]}"#;

    #[test]
    fn every_kind_has_a_dictionary_of_its_own_id() {
        let mut ids: Vec<u32> = DICTIONARIES.iter().map(|dictionary| dictionary.id).collect();
        assert!(ids.iter().all(|id| *id >= 32_768), "ids below 32,768 are reserved: {ids:?}");
        ids.dedup();
        assert_eq!(ids.len(), BodyKind::ALL.len());
    }

    #[test]
    fn a_body_reads_back_to_the_bytes_written_and_shrinks() {
        assert!(PROFILE.len() > LONGEST_BODY_STORED_AS_IT_IS);
        for kind in BodyKind::ALL {
            let stored = compress(kind, PROFILE).expect("compress");
            assert!(written_by_codec(kind, &stored), "{kind:?}");
            assert_eq!(decompress_borrowed(&stored).expect("decompress"), PROFILE, "{kind:?}");
            assert_eq!(decompress(stored).expect("decompress"), PROFILE, "{kind:?}");
        }
        let profile = br#"{"lccId":"LCC-1","title":"Title of LCC-1","iswc":null,"isrcs":[],"status":"published","openForLicensing":true,"holders":[],"splitRatio":[]}"#;
        assert!(compress(BodyKind::RightsProfile, profile).expect("compress").len() < profile.len() / 2);
    }

    #[test]
    fn both_codecs_serve_some_kinds() {
        assert_eq!(BodyKind::RightsProfile.codec(), Codec::Lz4);
        assert_eq!(BodyKind::Provenance.codec(), Codec::Zstd);
    }

    #[test]
    fn a_body_of_the_other_codec_reads_back_whatever_its_kind_uses_now() {
        // A store written before its kind changed codec holds zstd frames
        // of an LZ4 kind, and the other way round once changed back.
        let rights = BodyKind::RightsProfile.index();
        let frame = Compressor::with_dictionary(LEVEL, DICTIONARY_FILES[rights])
            .and_then(|mut compressor| compressor.compress(PROFILE))
            .expect("a zstd frame");
        assert!(frame.starts_with(&FRAME_MAGIC));
        assert_eq!(decompress(frame).expect("frame"), PROFILE);
        let provenance = &DICTIONARIES[BodyKind::Provenance.index()];
        let encoder = lz4_blocks::Dictionary::new(provenance.bytes, LZ4_LEVEL).expect("dictionary");
        let block = compress_block(provenance.id, &encoder, PROFILE).expect("block");
        assert_eq!(decompress_borrowed(&block).expect("block"), PROFILE);
    }

    #[test]
    fn a_block_header_holds_the_dictionary_and_the_size() {
        let stored = compress(BodyKind::RightsProfile, PROFILE).expect("compress");
        assert_eq!(stored[1..5], DICTIONARIES[BodyKind::RightsProfile.index()].id.to_le_bytes());
        // 130 bytes: 2 and 1 in base 128, least significant first.
        assert_eq!(PROFILE.len(), 130);
        assert_eq!(stored[5..7], [0x82, 0x01]);
        // 26,000 bytes: 16, 75 and 1 in base 128.
        let long = PROFILE.repeat(200);
        let stored = compress(BodyKind::RightsProfile, &long).expect("compress");
        assert_eq!(stored[5..8], [0x90, 0xCB, 0x01]);
        assert_eq!(decompress(stored).expect("long"), long);
    }

    #[test]
    fn a_short_body_is_stored_and_read_as_it_is() {
        let memo = [0xC4_u8; LONGEST_BODY_STORED_AS_IT_IS];
        for kind in BodyKind::ALL {
            let stored = compress(kind, &memo).expect("compress");
            assert_eq!(stored, memo, "{kind:?}");
            assert_eq!(decompress(stored).expect("read"), memo, "{kind:?}");
        }
        for kind in BodyKind::ALL {
            let stored = compress(kind, &[0xC4; LONGEST_BODY_STORED_AS_IT_IS + 1]).expect("compress");
            assert!(written_by_codec(kind, &stored), "{kind:?}");
        }
    }

    #[test]
    fn a_body_stored_before_compression_reads_as_it_is() {
        assert_eq!(decompress(b"{\"a\":1}".to_vec()).expect("read"), b"{\"a\":1}");
        assert_eq!(decompress_borrowed(b"{\"a\":1}").expect("read"), b"{\"a\":1}");
        assert_eq!(decompress(Vec::new()).expect("read"), b"");
    }

    #[test]
    fn a_frame_of_an_unknown_dictionary_or_a_damaged_one_is_corrupt() {
        let plain = zstd::bulk::compress(b"{\"a\":1}", 3).expect("compress");
        assert!(decompress(plain).is_err(), "a frame without a dictionary id");
        let row =
            br#"{"lccId":"LCC-0000000001","title":"Title of LCC-0000000001","iswc":"T-000.000.001-0","isrcs":["QZSB12500001"],"status":"published"}"#;
        for kind in [BodyKind::Provenance, BodyKind::RightsProfile] {
            let mut damaged = compress(kind, row).expect("compress");
            assert!(written_by_codec(kind, &damaged), "{kind:?}");
            let last = damaged.len() - 1;
            damaged[last] ^= 0xFF;
            damaged.truncate(last);
            assert!(decompress(damaged).is_err(), "{kind:?}");
        }
    }

    #[test]
    fn a_block_of_an_unknown_dictionary_or_a_damaged_header_is_corrupt() {
        let stored = compress(BodyKind::RightsProfile, PROFILE).expect("compress");
        let mut unknown = stored.clone();
        unknown[1..5].copy_from_slice(&7_u32.to_le_bytes());
        let corrupt = |stored: &[u8]| match decompress_borrowed(stored) {
            Err(StoreError::Corrupt(reason)) => reason,
            other => panic!("not corrupt: {other:?}"),
        };
        assert!(corrupt(&unknown).contains("names dictionary 7"));
        assert!(corrupt(&stored[..3]).contains("ends in its header"));
        assert!(corrupt(&stored[..6]).contains("ends in its header"));
        let mut endless = stored[..5].to_vec();
        endless.extend([0xFF; 5]);
        assert!(corrupt(&endless).contains("too long a size"));
        let mut huge = stored[..5].to_vec();
        huge.extend([0xFF, 0xFF, 0xFF, 0x7F]);
        assert!(corrupt(&huge).contains("too large a size"));
        let mut wrong_size = stored[..5].to_vec();
        wrong_size.extend([0x83, 0x01]);
        wrong_size.extend(&stored[7..]);
        assert!(corrupt(&wrong_size).contains("does not decompress"));
    }
}
