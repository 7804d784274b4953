//! Bodies as the stores keep them: each document, provenance entry, bulk row
//! and projector state is one zstd frame, compressed with a dictionary
//! trained for its kind of body, and read back to exactly the bytes written;
//! a body too short to gain from it is kept as it is.
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
//! The dictionaries are committed (`schemas/dictionaries/`, trained by
//! `scripts/train-dictionaries.sh`) and compiled in. Every frame names its
//! dictionary's id, and a body whose dictionary the program lacks is
//! refused as corrupt: retraining means keeping the old files beside the
//! new ones, or rebuilding every store. A body that is not a zstd frame (a
//! short one, one stored before compression, or a sandbox fixture) is read
//! as it is: JSON and the projector's MessagePack states never begin with
//! the frame's magic number.
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

/// No stored body is larger; a frame that claims more is corrupt.
const LARGEST_BODY: u64 = 64 << 20;

struct Dictionary {
    id: u32,
    encoder: EncoderDictionary<'static>,
    decoder: DecoderDictionary<'static>,
}

static DICTIONARIES: LazyLock<Vec<Dictionary>> = LazyLock::new(|| {
    DICTIONARY_FILES
        .iter()
        .map(|file| Dictionary {
            id: dictionary_id(file),
            encoder: EncoderDictionary::copy(file, LEVEL),
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

/// `body` as stored: a zstd frame made with `kind`'s dictionary, or the
/// body itself when it is too short to gain from one.
pub fn compress(kind: BodyKind, body: &[u8]) -> Result<Vec<u8>, StoreError> {
    if body.len() <= LONGEST_BODY_STORED_AS_IT_IS {
        return Ok(body.to_vec());
    }
    COMPRESSORS.with(|compressors| {
        let mut compressors = compressors.borrow_mut();
        let slot = &mut compressors[kind.index()];
        let compressor = match slot {
            Some(compressor) => compressor,
            None => slot.insert(
                Compressor::with_prepared_dictionary(&DICTIONARIES[kind.index()].encoder)
                    .map_err(|error| StoreError::Corrupt(format!("cannot start compressing: {error}")))?,
            ),
        };
        compressor.compress(body).map_err(|error| StoreError::Corrupt(format!("cannot compress a body: {error}")))
    })
}

/// The body a stored value holds: the frame decompressed, or the value
/// itself when it is not a frame.
pub fn decompress(stored: Vec<u8>) -> Result<Vec<u8>, StoreError> {
    if !stored.starts_with(&FRAME_MAGIC) {
        return Ok(stored);
    }
    decompress_frame(&stored)
}

/// [`decompress`] of a stored value that stays where it is (a cached one).
pub fn decompress_borrowed(stored: &[u8]) -> Result<Vec<u8>, StoreError> {
    if !stored.starts_with(&FRAME_MAGIC) {
        return Ok(stored.to_vec());
    }
    decompress_frame(stored)
}

fn decompress_frame(stored: &[u8]) -> Result<Vec<u8>, StoreError> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("a stored body {what}"));
    let id = zstd::zstd_safe::get_dict_id_from_frame(stored).map_or(0, std::num::NonZeroU32::get);
    let dictionary = DICTIONARIES
        .iter()
        .find(|dictionary| dictionary.id == id)
        .ok_or_else(|| corrupt(&format!("names dictionary {id}, which this program does not have")))?;
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

    #[test]
    fn every_kind_has_a_dictionary_of_its_own_id() {
        let mut ids: Vec<u32> = DICTIONARIES.iter().map(|dictionary| dictionary.id).collect();
        assert!(ids.iter().all(|id| *id >= 32_768), "ids below 32,768 are reserved: {ids:?}");
        ids.dedup();
        assert_eq!(ids.len(), BodyKind::ALL.len());
    }

    #[test]
    fn a_body_reads_back_to_the_bytes_written_and_shrinks() {
        let body = br#"{"lccId":"LCC-0000000001","title":"Title of LCC-0000000001","holders":[{"partyId":"PTY-0000000001","name":"Ada","role":"author"}]}"#;
        assert!(body.len() > LONGEST_BODY_STORED_AS_IT_IS);
        for kind in BodyKind::ALL {
            let stored = compress(kind, body).expect("compress");
            assert!(stored.starts_with(&FRAME_MAGIC));
            assert_eq!(decompress_borrowed(&stored).expect("decompress"), body, "{kind:?}");
            assert_eq!(decompress(stored).expect("decompress"), body, "{kind:?}");
        }
        let profile = br#"{"lccId":"LCC-1","title":"Title of LCC-1","iswc":null,"isrcs":[],"status":"published","openForLicensing":true,"holders":[],"splitRatio":[]}"#;
        assert!(compress(BodyKind::RightsProfile, profile).expect("compress").len() < profile.len() / 2);
    }

    #[test]
    fn a_short_body_is_stored_and_read_as_it_is() {
        let memo = [0xC4_u8; LONGEST_BODY_STORED_AS_IT_IS];
        for kind in BodyKind::ALL {
            let stored = compress(kind, &memo).expect("compress");
            assert_eq!(stored, memo, "{kind:?}");
            assert_eq!(decompress(stored).expect("read"), memo, "{kind:?}");
        }
        assert!(
            compress(BodyKind::AggregateState, &[0xC4; LONGEST_BODY_STORED_AS_IT_IS + 1])
                .expect("compress")
                .starts_with(&FRAME_MAGIC)
        );
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
        let mut damaged = compress(BodyKind::BulkRow, row).expect("compress");
        assert!(damaged.starts_with(&FRAME_MAGIC));
        let last = damaged.len() - 1;
        damaged[last] ^= 0xFF;
        damaged.truncate(last);
        assert!(decompress(damaged).is_err());
    }
}
