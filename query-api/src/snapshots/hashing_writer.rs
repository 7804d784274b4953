//! A writer that counts and hashes what passes through it, so a snapshot
//! file's size and SHA-256 are known when it is closed, without reading it
//! again.

use std::io::Write;

use sha2::{Digest, Sha256};

#[derive(Debug)]
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    bytes: u64,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> HashingWriter<W> {
        HashingWriter { inner, hasher: Sha256::new(), bytes: 0 }
    }

    /// The inner writer, the bytes written and their SHA-256 in lowercase hexadecimal.
    pub fn finish(self) -> (W, u64, String) {
        let digest = self.hasher.finalize();
        (self.inner, self.bytes, read_model::hex::lower_hex(&digest))
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buffer)?;
        self.hasher.update(&buffer[..written]);
        self.bytes += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_and_hashes_what_it_writes() {
        let mut writer = HashingWriter::new(Vec::new());
        writer.write_all(b"ab").expect("write");
        writer.write_all(b"c").expect("write");
        let (inner, bytes, sha256) = writer.finish();
        assert_eq!((inner.as_slice(), bytes), (&b"abc"[..], 3));
        assert_eq!(sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
