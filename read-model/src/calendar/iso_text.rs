//! Writing dates and instants as ISO 8601 text, digit by digit, and
//! carrying them through serde: as text in JSON, as their number in binary
//! formats. Parsing is `Date::parse` and `Timestamp::parse`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Date, MILLIS_PER_DAY, Timestamp};

/// The ISO 8601 text of a date or instant, written digit by digit.
///
/// Documents carry several dates each, and printing them through `core::fmt`
/// (padding, one call per number) is a large part of rendering them. Only
/// years 0 to 9999 have this four-digit form; the dates of other years print
/// through `core::fmt`.
struct IsoText {
    bytes: [u8; 24],
    len: usize,
}

impl IsoText {
    fn of_date(date: Date) -> Option<IsoText> {
        let (year, month, day) = date.ymd();
        let year = u32::try_from(year).ok().filter(|year| *year <= 9999)?;
        let mut text = IsoText { bytes: *b"0000-00-00T00:00:00.000Z", len: 10 };
        put_digits(&mut text.bytes[0..4], year);
        put_digits(&mut text.bytes[5..7], month);
        put_digits(&mut text.bytes[8..10], day);
        Some(text)
    }

    fn of_timestamp(instant: Timestamp) -> Option<IsoText> {
        let mut text = IsoText::of_date(Date::of(instant))?;
        text.bytes[10..].copy_from_slice(&time_of_day(instant));
        text.len = 24;
        Some(text)
    }

    fn as_str(&self) -> &str {
        ascii(&self.bytes[..self.len])
    }
}

/// `THH:MM:SS.mmmZ`: the part of an instant's text after its date, the same
/// in every year.
fn time_of_day(instant: Timestamp) -> [u8; 14] {
    let mut text = *b"T00:00:00.000Z";
    // In 0..86,400,000, so every part below fits a u32.
    let millis_of_day = instant.0.rem_euclid(MILLIS_PER_DAY) as u32;
    let seconds = millis_of_day / 1000;
    put_digits(&mut text[1..3], seconds / 3600);
    put_digits(&mut text[4..6], seconds / 60 % 60);
    put_digits(&mut text[7..9], seconds % 60);
    put_digits(&mut text[10..13], millis_of_day % 1000);
    text
}

fn ascii(bytes: &[u8]) -> &str {
    // Only ASCII digits and separators are ever written.
    std::str::from_utf8(bytes).unwrap_or_default()
}

/// Writes `value` into `slots` as decimal digits, zero-padded on the left.
fn put_digits(slots: &mut [u8], mut value: u32) {
    for slot in slots.iter_mut().rev() {
        *slot = b'0' + (value % 10) as u8;
        value /= 10;
    }
}

impl fmt::Display for Date {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(text) = IsoText::of_date(*self) {
            return formatter.write_str(text.as_str());
        }
        let (year, month, day) = self.ymd();
        write!(formatter, "{year:04}-{month:02}-{day:02}")
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match IsoText::of_timestamp(*self) {
            Some(text) => formatter.write_str(text.as_str()),
            None => {
                fmt::Display::fmt(&Date::of(*self), formatter)?;
                formatter.write_str(ascii(&time_of_day(*self)))
            }
        }
    }
}

/// Human-readable formats (JSON) carry both types as ISO 8601 text; binary
/// formats (the projector's stored states) as their inner number, which
/// neither formats nor parses anything.
macro_rules! serde_as_iso_text {
    ($type:ty, $number:ty, $iso_text:path, $expected:literal) => {
        impl Serialize for $type {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                if !serializer.is_human_readable() {
                    return self.0.serialize(serializer);
                }
                match $iso_text(*self) {
                    Some(text) => serializer.serialize_str(text.as_str()),
                    None => serializer.collect_str(self),
                }
            }
        }

        impl<'de> Deserialize<'de> for $type {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                if !deserializer.is_human_readable() {
                    return <$number>::deserialize(deserializer).map(Self);
                }
                let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
                <$type>::parse(&text).ok_or_else(|| serde::de::Error::custom(concat!("expected ", $expected)))
            }
        }
    };
}

serde_as_iso_text!(Date, i32, IsoText::of_date, "a date as YYYY-MM-DD");
serde_as_iso_text!(Timestamp, i64, IsoText::of_timestamp, "a UTC timestamp as YYYY-MM-DDTHH:MM:SS.mmmZ");
