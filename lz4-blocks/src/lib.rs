//! LZ4 blocks compressed against a prepared dictionary, through liblz4 (the
//! C library that `lz4-sys` builds): the one call sequence stored bodies
//! need, behind a safe interface.
//!
//! Why a crate of its own: the workspace forbids unsafe code, and liblz4 is
//! an FFI boundary over raw pointers. Why liblz4 and not a pure-Rust LZ4: a
//! body of a few hundred bytes gains little from LZ4 alone, and liblz4's
//! high-compression mode with a dictionary keeps it near zstd's size, while
//! it decodes in about a third of zstd's instructions (`read-model`'s
//! `stored_bodies` has the figures); `lz4_flex` has no such mode.
//!
//! How: a [`Dictionary`] loads its bytes once into a compression context
//! that is read, never written, from then on. Each thread that compresses
//! keeps one working context of its own (256 KiB), resets it before each
//! body and attaches the dictionary's context to it
//! (`LZ4_attach_HC_dictionary`), so a body costs no load of the dictionary
//! and no copy of its tables (but one over 4 KiB, for which liblz4 copies
//! the dictionary's context into the working one, finding matches faster).
//! Each block stands alone: it is decoded with the dictionary's bytes and
//! nothing else.
//!
//! This crate knows nothing of what it compresses, nor of how a block is
//! framed where it is kept: the caller records the body's size and which
//! dictionary it used.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, c_void};
use std::ptr::NonNull;

/// A body larger than this is not one block (liblz4's `LZ4_MAX_INPUT_SIZE`).
pub const LARGEST_BODY: usize = 0x7E00_0000;

/// Why a body could not be compressed or a block decoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Lz4Error {
    #[error("liblz4 could not allocate a compression context")]
    OutOfMemory,
    #[error("a body of {0} bytes is larger than an LZ4 block holds")]
    TooLarge(usize),
    #[error("liblz4 failed to compress a body")]
    CompressionFailed,
    #[error("the block is malformed, or does not decode to the size given")]
    Malformed,
}

// liblz4's high-compression streaming interface (lz4hc.h). The two calls
// marked static-only are declared there under LZ4_HC_STATIC_LINKING_ONLY:
// they are compiled into the library `lz4-sys` builds and links statically.
unsafe extern "C" {
    fn LZ4_createStreamHC() -> *mut c_void;
    fn LZ4_freeStreamHC(stream: *mut c_void) -> c_int;
    fn LZ4_loadDictHC(stream: *mut c_void, dictionary: *const c_char, dictionary_size: c_int) -> c_int;
    /// Static-only: makes a used context ready for a new, independent block.
    fn LZ4_resetStreamHC_fast(stream: *mut c_void, level: c_int);
    /// Static-only: lets `working` find matches in `dictionary`'s context.
    fn LZ4_attach_HC_dictionary(working: *mut c_void, dictionary: *const c_void);
    fn LZ4_compress_HC_continue(
        stream: *mut c_void,
        source: *const c_char,
        destination: *mut c_char,
        source_size: c_int,
        destination_capacity: c_int,
    ) -> c_int;
    fn LZ4_decompress_safe_usingDict(
        source: *const c_char,
        destination: *mut c_char,
        source_size: c_int,
        destination_capacity: c_int,
        dictionary: *const c_char,
        dictionary_size: c_int,
    ) -> c_int;
}

/// One liblz4 high-compression context, freed when dropped.
#[derive(Debug)]
struct Context(NonNull<c_void>);

impl Context {
    fn new() -> Result<Context, Lz4Error> {
        // SAFETY: no arguments; a null result (allocation failed) is handled.
        NonNull::new(unsafe { LZ4_createStreamHC() }).map(Context).ok_or(Lz4Error::OutOfMemory)
    }
}

impl Drop for Context {
    fn drop(&mut self) {
        // SAFETY: the pointer came from LZ4_createStreamHC and is freed once, here.
        unsafe { LZ4_freeStreamHC(self.0.as_ptr()) };
    }
}

/// A dictionary prepared for compressing at one level, and its bytes for decoding.
#[derive(Debug)]
pub struct Dictionary {
    bytes: &'static [u8],
    level: c_int,
    context: Context,
}

// SAFETY: once `Dictionary::new` has loaded it, the context is only read:
// liblz4 reads an attached dictionary's tables and never writes them (it
// writes the working context only), so threads may attach it at once. The
// bytes it points into are 'static.
unsafe impl Send for Dictionary {}
// SAFETY: as for Send: shared use only reads the context.
unsafe impl Sync for Dictionary {}

impl Dictionary {
    /// `bytes` prepared for compression at `level` (2 to 12, liblz4's
    /// high-compression levels). liblz4 keeps pointers into `bytes` rather
    /// than a copy, hence 'static; it matches against their last 64 KiB.
    pub fn new(bytes: &'static [u8], level: i32) -> Result<Dictionary, Lz4Error> {
        let size = c_int::try_from(bytes.len()).map_err(|_| Lz4Error::TooLarge(bytes.len()))?;
        let context = Context::new()?;
        // SAFETY: the context is fresh and ours; `bytes` is valid for `size`
        // bytes and outlives the context ('static).
        unsafe {
            LZ4_resetStreamHC_fast(context.0.as_ptr(), level);
            LZ4_loadDictHC(context.0.as_ptr(), bytes.as_ptr().cast(), size);
        }
        Ok(Dictionary { bytes, level, context })
    }

    /// The bytes a block made with this dictionary is decoded with.
    pub fn bytes(&self) -> &'static [u8] {
        self.bytes
    }
}

thread_local! {
    /// The context each compressing thread resets for every body: creating
    /// one costs more than compressing a body.
    static WORKING: RefCell<Option<Context>> = const { RefCell::new(None) };
}

/// Appends to `out` the LZ4 block of `body`, made with `dictionary`.
pub fn compress_into(dictionary: &Dictionary, body: &[u8], out: &mut Vec<u8>) -> Result<(), Lz4Error> {
    let size = c_int::try_from(body.len())
        .ok()
        .filter(|_| body.len() <= LARGEST_BODY)
        .ok_or(Lz4Error::TooLarge(body.len()))?;
    // SAFETY: a pure function of its argument, which is at most LZ4_MAX_INPUT_SIZE.
    let bound = unsafe { lz4_sys::LZ4_compressBound(size) };
    let capacity = usize::try_from(bound).map_err(|_| Lz4Error::TooLarge(body.len()))?;
    out.reserve(capacity);
    WORKING.with(|working| {
        let mut working = working.borrow_mut();
        let context = match &mut *working {
            Some(context) => context,
            empty => empty.insert(Context::new()?),
        };
        // SAFETY: both contexts are live liblz4 contexts; the working one is
        // this thread's alone and the dictionary's is only read (see its
        // Send impl). `body` is valid for `size` bytes; `out` has `bound`
        // bytes of spare capacity after its length, and liblz4 writes no
        // more than the capacity it is given.
        let written = unsafe {
            LZ4_resetStreamHC_fast(context.0.as_ptr(), dictionary.level);
            LZ4_attach_HC_dictionary(context.0.as_ptr(), dictionary.context.0.as_ptr());
            LZ4_compress_HC_continue(
                context.0.as_ptr(),
                body.as_ptr().cast(),
                out.as_mut_ptr().add(out.len()).cast(),
                size,
                bound,
            )
        };
        let written = usize::try_from(written).ok().filter(|written| *written > 0 && *written <= capacity);
        let written = written.ok_or(Lz4Error::CompressionFailed)?;
        // SAFETY: liblz4 initialised `written` bytes after the old length,
        // within the capacity reserved above.
        unsafe { out.set_len(out.len() + written) };
        Ok(())
    })
}

/// The body of `block`, which decodes with `dictionary` to exactly `size`
/// bytes; any other block is [`Lz4Error::Malformed`].
pub fn decompress(dictionary: &[u8], block: &[u8], size: usize) -> Result<Vec<u8>, Lz4Error> {
    let block_size = c_int::try_from(block.len()).map_err(|_| Lz4Error::Malformed)?;
    let capacity = c_int::try_from(size).ok().filter(|_| size <= LARGEST_BODY).ok_or(Lz4Error::Malformed)?;
    let dictionary_size = c_int::try_from(dictionary.len()).map_err(|_| Lz4Error::Malformed)?;
    let mut body: Vec<u8> = Vec::with_capacity(size);
    // SAFETY: `block` and `dictionary` are valid for their sizes; `body`
    // has `size` bytes of capacity. The safe decoder never reads outside
    // its input nor writes beyond the capacity given, whatever the block
    // holds, and returns a negative number for a malformed one.
    let decoded = unsafe {
        LZ4_decompress_safe_usingDict(
            block.as_ptr().cast(),
            body.as_mut_ptr().cast(),
            block_size,
            capacity,
            dictionary.as_ptr().cast(),
            dictionary_size,
        )
    };
    if decoded != capacity {
        return Err(Lz4Error::Malformed);
    }
    // SAFETY: the decoder wrote all `size` bytes, from the start of `body`.
    unsafe { body.set_len(size) };
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A dictionary made of the structure the bodies below repeat.
    static DICTIONARY: &[u8] = br#"{"lccId":"LCC-0000000000","title":"","iswc":null,"isrcs":[],"status":"published","openForLicensing":false,"holders":[{"rightId":"","rightType":"authors_right","holder":{"partyId":"PTY-0000000","name":"","kind":"person","ipi":null,"isni":null},"role":"author","shareBasisPoints":5000,"sharePercent":50.0,"acquiredFrom":null,"territory":"WORLD","validFrom":"2023-01-06","validUntil":null}]}"#;

    fn body(number: usize) -> Vec<u8> {
        format!(
            r#"{{"lccId":"LCC-{number:010}","title":"Title {number}","iswc":null,"isrcs":[],"status":"published","openForLicensing":true,"holders":[{{"rightId":"LCC-{number:010}-A0","rightType":"authors_right","holder":{{"partyId":"PTY-{number:07}","name":"Name {number}","kind":"person","ipi":null,"isni":null}},"role":"author","shareBasisPoints":10000,"sharePercent":100.0,"acquiredFrom":null,"territory":"WORLD","validFrom":"2023-01-06","validUntil":null}}]}}"#
        )
        .into_bytes()
    }

    fn dictionary() -> Dictionary {
        Dictionary::new(DICTIONARY, 3).expect("dictionary")
    }

    #[test]
    fn a_block_decodes_to_its_body_and_is_smaller_with_the_dictionary_than_without() {
        let dictionary = dictionary();
        let empty = Dictionary::new(b"", 3).expect("empty dictionary");
        for number in [1, 22, 333] {
            let body = body(number);
            let mut block = Vec::new();
            compress_into(&dictionary, &body, &mut block).expect("compress");
            assert_eq!(decompress(dictionary.bytes(), &block, body.len()).expect("decode"), body);
            let mut alone = Vec::new();
            compress_into(&empty, &body, &mut alone).expect("compress without");
            assert_eq!(decompress(b"", &alone, body.len()).expect("decode without"), body);
            assert!(
                block.len() * 2 < alone.len(),
                "{} bytes with the dictionary, {} without",
                block.len(),
                alone.len()
            );
        }
    }

    #[test]
    fn blocks_stand_alone_though_one_context_made_them_in_turn() {
        let dictionary = dictionary();
        let blocks: Vec<(Vec<u8>, Vec<u8>)> = (0..50)
            .map(|number| {
                let body = body(number);
                let mut block = Vec::new();
                compress_into(&dictionary, &body, &mut block).expect("compress");
                (body, block)
            })
            .collect();
        // Decoded in reverse order, each with the dictionary alone.
        for (body, block) in blocks.iter().rev() {
            assert_eq!(&decompress(DICTIONARY, block, body.len()).expect("decode"), body);
        }
    }

    #[test]
    fn a_block_is_appended_after_what_the_buffer_holds() {
        let dictionary = dictionary();
        let body = body(7);
        let mut out = b"head".to_vec();
        compress_into(&dictionary, &body, &mut out).expect("compress");
        assert!(out.starts_with(b"head"));
        assert_eq!(decompress(DICTIONARY, &out[4..], body.len()).expect("decode"), body);
    }

    #[test]
    fn threads_compress_against_one_dictionary_at_once() {
        let dictionary = dictionary();
        std::thread::scope(|scope| {
            for thread in 0..4 {
                let dictionary = &dictionary;
                scope.spawn(move || {
                    for number in (0..200).map(|index| thread * 1000 + index) {
                        let body = body(number);
                        let mut block = Vec::new();
                        compress_into(dictionary, &body, &mut block).expect("compress");
                        assert_eq!(decompress(DICTIONARY, &block, body.len()).expect("decode"), body);
                    }
                });
            }
        });
    }

    #[test]
    fn a_body_beyond_the_window_and_an_empty_one_read_back() {
        let dictionary = dictionary();
        let long: Vec<u8> = (0..300).flat_map(body).collect();
        assert!(long.len() > 64 * 1024);
        for body in [long, Vec::new()] {
            let mut block = Vec::new();
            compress_into(&dictionary, &body, &mut block).expect("compress");
            assert_eq!(decompress(DICTIONARY, &block, body.len()).expect("decode"), body);
        }
    }

    #[test]
    fn a_damaged_block_a_wrong_size_or_a_wrong_dictionary_is_malformed() {
        let dictionary = dictionary();
        let body = body(5);
        let mut block = Vec::new();
        compress_into(&dictionary, &body, &mut block).expect("compress");
        assert_eq!(decompress(DICTIONARY, &block, body.len() - 1), Err(Lz4Error::Malformed));
        assert_eq!(decompress(DICTIONARY, &block, body.len() + 1), Err(Lz4Error::Malformed));
        assert_eq!(decompress(DICTIONARY, &block[..block.len() / 2], body.len()), Err(Lz4Error::Malformed));
        assert_eq!(decompress(DICTIONARY, &[0xFF; 40], body.len()), Err(Lz4Error::Malformed));
        // A block whose matches reach into the dictionary cannot decode without it.
        assert_eq!(decompress(b"", &block, body.len()), Err(Lz4Error::Malformed));
    }
}
