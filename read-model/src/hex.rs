//! Lowercase hexadecimal, the one encoding of digests, keys and ids in
//! text: entity tags, key hashes, snapshot and evidence digests.
//!
//! Written digit by digit rather than through `format!("{byte:02x}")`: the
//! formatting machinery costs more per byte than the digest it prints, and
//! entity tags and key hashes are on the path of every request.

const DIGITS: &[u8; 16] = b"0123456789abcdef";

/// Writes the two digits of each byte of `bytes` into `digits`, which must
/// be exactly twice as long.
pub fn write_lower_hex(bytes: &[u8], digits: &mut [u8]) {
    debug_assert_eq!(digits.len(), bytes.len() * 2, "two digits per byte");
    for (pair, byte) in digits.chunks_exact_mut(2).zip(bytes) {
        pair[0] = DIGITS[usize::from(byte >> 4)];
        pair[1] = DIGITS[usize::from(byte & 0x0f)];
    }
}

/// `bytes` as lowercase hexadecimal, two digits a byte.
pub fn lower_hex(bytes: &[u8]) -> String {
    let mut digits = vec![0_u8; bytes.len() * 2];
    write_lower_hex(bytes, &mut digits);
    // Only digits were written, so this is never the empty default.
    String::from_utf8(digits).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_byte_is_two_lowercase_digits_as_the_formatter_writes_them() {
        let every_byte: Vec<u8> = (0..=u8::MAX).collect();
        let formatted: String = every_byte.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(lower_hex(&every_byte), formatted);
        assert_eq!(lower_hex(&[]), "");
        assert_eq!(lower_hex(&[0x00, 0x0f, 0xa5, 0xff]), "000fa5ff");
    }
}
