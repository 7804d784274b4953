//! Identifier rules shared by the projector (which validates events) and the
//! query API (which validates requests): ISWC and ISRC shapes, the check
//! characters of IPI name numbers and ISNIs, and the `SANDBOX-` prefix that
//! separates simulated records from real ones.

use serde::{Deserialize, Serialize};

/// The prefix every sandbox record id carries.
pub const SANDBOX_PREFIX: &str = "SANDBOX-";

/// Which population a record belongs to. Sandbox keys read sandbox records
/// only; production listings never include sandbox records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Audience {
    Production,
    Sandbox,
}

impl Audience {
    /// The audience a record id belongs to, decided by its prefix alone.
    pub fn of(id: &str) -> Audience {
        if id.starts_with(SANDBOX_PREFIX) { Audience::Sandbox } else { Audience::Production }
    }

    /// The stable code stored in keys and indexes.
    pub fn code(self) -> &'static str {
        match self {
            Audience::Production => "production",
            Audience::Sandbox => "sandbox",
        }
    }
}

/// Why an international identifier was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdentifierError {
    #[error("an ISWC is `T` followed by ten digits, optionally written T-123.456.789-0")]
    IswcShape,
    #[error("the ISWC check digit does not match its nine digits")]
    IswcCheckDigit,
    #[error(
        "an ISRC is two letters, three letters or digits, two digits and five digits (for example US-S1Z-99-00001)"
    )]
    IsrcShape,
    #[error("an IPI name number is eleven digits")]
    IpiShape,
    #[error("the IPI name number's last two digits are not the check number of its first nine")]
    IpiCheckNumber,
    #[error("an ISNI is fifteen digits and a check character (a digit or X), optionally in groups of four")]
    IsniShape,
    #[error("the ISNI check character does not match its fifteen digits")]
    IsniCheckCharacter,
}

/// Normalizes an ISWC to `T` + ten digits, checking shape and check digit.
///
/// Accepts the compact form (`T0345246801`) and the printed form
/// (`T-034.524.680-1`). The check digit makes `1 + Σ i·dᵢ + c` a multiple of ten.
pub fn normalize_iswc(text: &str) -> Result<String, IdentifierError> {
    let compact: String = text.trim().chars().filter(|c| *c != '-' && *c != '.').collect();
    let compact = compact.to_ascii_uppercase();
    let digits = compact.strip_prefix('T').ok_or(IdentifierError::IswcShape)?;
    if digits.len() != 10 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(IdentifierError::IswcShape);
    }
    if text.trim().contains(['-', '.']) && !is_printed_iswc(text.trim()) {
        return Err(IdentifierError::IswcShape);
    }
    let values: Vec<u32> = digits.bytes().map(|b| u32::from(b - b'0')).collect();
    if iswc_check_digit(&values[..9]) != values[9] {
        return Err(IdentifierError::IswcCheckDigit);
    }
    Ok(compact)
}

fn is_printed_iswc(text: &str) -> bool {
    let bytes = text.as_bytes();
    bytes.len() == 15
        && matches!(bytes[0], b'T' | b't')
        && bytes[1] == b'-'
        && bytes[5] == b'.'
        && bytes[9] == b'.'
        && bytes[13] == b'-'
}

/// The ISWC check digit for nine digits.
pub fn iswc_check_digit(nine_digits: &[u32]) -> u32 {
    let weighted: u32 = nine_digits.iter().zip(1..).map(|(digit, weight)| digit * weight).sum();
    (10 - (1 + weighted) % 10) % 10
}

/// Prints a normalized ISWC in its customary form, `T-034.524.680-1`.
pub fn display_iswc(normalized: &str) -> String {
    if normalized.len() != 11 {
        return normalized.to_owned();
    }
    format!("T-{}.{}.{}-{}", &normalized[1..4], &normalized[4..7], &normalized[7..10], &normalized[10..11])
}

/// Normalizes an ISRC to twelve upper-case characters without hyphens.
pub fn normalize_isrc(text: &str) -> Result<String, IdentifierError> {
    let trimmed = text.trim();
    let compact: String = trimmed.chars().filter(|c| *c != '-').collect::<String>().to_ascii_uppercase();
    let bytes = compact.as_bytes();
    let shape_ok = bytes.len() == 12
        && bytes[0..2].iter().all(u8::is_ascii_uppercase)
        && bytes[2..5].iter().all(u8::is_ascii_alphanumeric)
        && bytes[5..12].iter().all(u8::is_ascii_digit);
    let hyphens_ok = !trimmed.contains('-') || {
        let parts: Vec<&str> = trimmed.split('-').collect();
        parts.iter().map(|part| part.len()).eq([2, 3, 2, 5])
    };
    if shape_ok && hyphens_ok { Ok(compact) } else { Err(IdentifierError::IsrcShape) }
}

/// Checks an IPI name number: eleven digits, the last two the check number
/// of the first nine (each weighted 10 down to 2, the sum taken modulo 101).
pub fn normalize_ipi(text: &str) -> Result<String, IdentifierError> {
    let compact = text.trim();
    if compact.len() != 11 || !compact.bytes().all(|b| b.is_ascii_digit()) {
        return Err(IdentifierError::IpiShape);
    }
    let digits: Vec<u32> = compact.bytes().map(|b| u32::from(b - b'0')).collect();
    if ipi_check_number(&digits[..9]) != digits[9] * 10 + digits[10] {
        return Err(IdentifierError::IpiCheckNumber);
    }
    Ok(compact.to_owned())
}

/// The two-digit check number of an IPI name number's first nine digits.
pub fn ipi_check_number(nine_digits: &[u32]) -> u32 {
    let weighted: u32 = nine_digits.iter().zip((2..=10).rev()).map(|(digit, weight)| digit * weight).sum();
    match weighted % 101 {
        0 => 0,
        remainder => (101 - remainder) % 100,
    }
}

/// Normalizes an ISNI to sixteen characters without spaces: fifteen digits
/// and a check character (ISO 7064 MOD 11-2, `X` for ten). Accepts the
/// printed form in groups of four (`0000 0001 2281 955X`).
pub fn normalize_isni(text: &str) -> Result<String, IdentifierError> {
    let trimmed = text.trim();
    let compact: String = trimmed.chars().filter(|c| *c != ' ').collect::<String>().to_ascii_uppercase();
    let bytes = compact.as_bytes();
    let grouped = !trimmed.contains(' ') || trimmed.split(' ').map(str::len).eq([4, 4, 4, 4]);
    if bytes.len() != 16 || !grouped || !bytes[..15].iter().all(u8::is_ascii_digit) {
        return Err(IdentifierError::IsniShape);
    }
    let digits: Vec<u32> = bytes[..15].iter().map(|b| u32::from(b - b'0')).collect();
    if char::from(bytes[15]) != isni_check_character(&digits) {
        return Err(IdentifierError::IsniCheckCharacter);
    }
    Ok(compact)
}

/// The ISO 7064 MOD 11-2 check character of an ISNI's fifteen digits.
pub fn isni_check_character(fifteen_digits: &[u32]) -> char {
    let total = fifteen_digits.iter().fold(0, |total, digit| (total + digit) * 2 % 11);
    match (12 - total) % 11 {
        10 => 'X',
        check => char::from_digit(check, 10).unwrap_or('0'),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iswc_accepts_compact_and_printed_forms() {
        assert_eq!(normalize_iswc("T-034.524.680-1").as_deref(), Ok("T0345246801"));
        assert_eq!(normalize_iswc("T0345246801").as_deref(), Ok("T0345246801"));
        assert_eq!(normalize_iswc("t0345246801").as_deref(), Ok("T0345246801"));
        assert_eq!(display_iswc("T0345246801"), "T-034.524.680-1");
    }

    #[test]
    fn iswc_rejects_bad_shapes_and_check_digits() {
        assert_eq!(normalize_iswc("T0345246802"), Err(IdentifierError::IswcCheckDigit));
        for bad in ["", "T", "X0345246801", "T034524680", "T03452468011", "T-0345.24.680-1", "T03452468O1"] {
            assert_eq!(normalize_iswc(bad), Err(IdentifierError::IswcShape), "{bad}");
        }
    }

    #[test]
    fn every_nine_digit_prefix_has_exactly_one_valid_check_digit() {
        let nine = [1, 2, 3, 4, 5, 6, 7, 8, 9];
        let valid: Vec<u32> = (0..10)
            .filter(|check| {
                let text = format!("T123456789{check}");
                normalize_iswc(&text).is_ok()
            })
            .collect();
        assert_eq!(valid, vec![iswc_check_digit(&nine)]);
    }

    #[test]
    fn isrc_accepts_hyphenated_and_compact_forms() {
        assert_eq!(normalize_isrc("US-S1Z-99-00001").as_deref(), Ok("USS1Z9900001"));
        assert_eq!(normalize_isrc("uss1z9900001").as_deref(), Ok("USS1Z9900001"));
    }

    #[test]
    fn isrc_rejects_bad_shapes() {
        for bad in ["", "US-S1Z-99-0001", "1SS1Z9900001", "USS1Z99000A1", "USS-1Z-99-00001", "USS1Z99000012"] {
            assert_eq!(normalize_isrc(bad), Err(IdentifierError::IsrcShape), "{bad}");
        }
    }

    #[test]
    fn ipi_name_numbers_carry_a_two_digit_check_number() {
        assert_eq!(normalize_ipi(" 00052210040 ").as_deref(), Ok("00052210040"));
        assert_eq!(normalize_ipi("00052210041"), Err(IdentifierError::IpiCheckNumber));
        for bad in ["", "0005221004", "000522100400", "0005221004O"] {
            assert_eq!(normalize_ipi(bad), Err(IdentifierError::IpiShape), "{bad}");
        }
        let nine = [2, 7, 1, 8, 2, 8, 1, 8, 2];
        let valid: Vec<u32> = (0..100).filter(|check| normalize_ipi(&format!("271828182{check:02}")).is_ok()).collect();
        assert_eq!(valid, vec![ipi_check_number(&nine)], "exactly one check number per base");
    }

    #[test]
    fn isni_check_characters_follow_iso_7064_mod_11_2() {
        // Published ISNIs, one of them with the check character X.
        assert_eq!(normalize_isni("0000 0001 2281 955X").as_deref(), Ok("000000012281955X"));
        assert_eq!(normalize_isni("0000000121032683").as_deref(), Ok("0000000121032683"));
        assert_eq!(normalize_isni("0000000121032684"), Err(IdentifierError::IsniCheckCharacter));
        for bad in ["", "000000012103268", "00000001210326833", "0000 00012103 2683", "X000000121032683"] {
            assert_eq!(normalize_isni(bad), Err(IdentifierError::IsniShape), "{bad}");
        }
    }

    #[test]
    fn audience_follows_the_sandbox_prefix() {
        assert_eq!(Audience::of("SANDBOX-LCC-1"), Audience::Sandbox);
        assert_eq!(Audience::of("LCC-1"), Audience::Production);
        assert_eq!(Audience::of("sandbox-LCC-1"), Audience::Production);
    }
}
