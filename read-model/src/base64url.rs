//! Unpadded base64url (RFC 4648, section 5): the change feed's cursors and
//! the signatures' JWS segments. Small enough to keep here rather than add
//! a dependency for it.

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

pub fn encode(bytes: &[u8]) -> String {
    let mut text = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let value =
            chunk.iter().enumerate().fold(0u32, |value, (index, byte)| value | u32::from(*byte) << (16 - 8 * index));
        for index in 0..=chunk.len() {
            text.push(char::from(ALPHABET[(value >> (18 - 6 * index) & 63) as usize]));
        }
    }
    text
}

pub fn decode(text: &str) -> Option<Vec<u8>> {
    let digits: Vec<u32> = text
        .bytes()
        .map(|byte| ALPHABET.iter().position(|symbol| *symbol == byte).map(|position| position as u32))
        .collect::<Option<_>>()?;
    let mut bytes = Vec::with_capacity(digits.len() * 3 / 4);
    for chunk in digits.chunks(4) {
        if chunk.len() == 1 {
            return None;
        }
        let value = chunk.iter().enumerate().fold(0u32, |value, (index, digit)| value | digit << (18 - 6 * index));
        let byte_count = chunk.len() - 1;
        // Bits below the last whole byte must be zero, so each text has one decoding.
        if value & ((1 << (24 - 8 * byte_count)) - 1) != 0 {
            return None;
        }
        bytes.extend((0..byte_count).map(|index| (value >> (16 - 8 * index)) as u8));
    }
    Some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64url_matches_rfc_4648_test_vectors() {
        for (plain, encoded) in [
            ("", ""),
            ("f", "Zg"),
            ("fo", "Zm8"),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg"),
            ("fooba", "Zm9vYmE"),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(encode(plain.as_bytes()), encoded);
            assert_eq!(decode(encoded).as_deref(), Some(plain.as_bytes()));
        }
        assert_eq!(encode(&[0xfb, 0xff]), "-_8");
        assert_eq!(decode("Zh"), None, "non-zero trailing bits");
        assert_eq!(decode("Z"), None);
        assert_eq!(decode("Zm9v="), None, "no padding");
    }
}
