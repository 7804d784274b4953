//! Identifier rules shared by the projector (which validates events) and the
//! query API (which validates requests): ISWC and ISRC shapes, and the
//! `SANDBOX-` prefix that separates simulated records from real ones.

use serde::{Deserialize, Serialize};

/// The prefix every sandbox record id carries.
pub const SANDBOX_PREFIX: &str = "SANDBOX-";

/// Which population a record belongs to. Sandbox keys read sandbox records
/// only; production listings never include sandbox records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
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
    fn audience_follows_the_sandbox_prefix() {
        assert_eq!(Audience::of("SANDBOX-LCC-1"), Audience::Sandbox);
        assert_eq!(Audience::of("LCC-1"), Audience::Production);
        assert_eq!(Audience::of("sandbox-LCC-1"), Audience::Production);
    }
}
