//! Calendar dates and UTC instants as the read model stores and prints them.
//!
//! Events carry Avro `date` (days since 1970-01-01) and `timestamp-millis`
//! values; documents print them as ISO 8601 (`2026-01-31`,
//! `2026-01-31T12:00:00.000Z`). Only the proleptic Gregorian calendar in UTC is
//! needed, so the conversions are written here (Howard Hinnant's civil-date
//! algorithms) instead of pulling in a date-time crate.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A calendar day, counted in days since 1970-01-01.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Date(pub i32);

/// A UTC instant with millisecond precision, counted since the Unix epoch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Timestamp(pub i64);

const MILLIS_PER_DAY: i64 = 86_400_000;

/// Converts a day count into (year, month, day).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_index = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_index + 2) / 5 + 1) as u32;
    let month = if month_index < 10 { month_index + 3 } else { month_index - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Converts (year, month, day) into a day count; the inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year.rem_euclid(400);
    let month = i64::from(month);
    let day_of_year = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

impl Date {
    /// Builds a date from its parts, or `None` when they name no real day.
    pub fn from_ymd(year: i32, month: u32, day: u32) -> Option<Date> {
        if !(1..=12).contains(&month) || day == 0 || day > days_in_month(i64::from(year), month) {
            return None;
        }
        i32::try_from(days_from_civil(i64::from(year), month, day)).ok().map(Date)
    }

    /// The year, month and day of this date.
    pub fn ymd(self) -> (i64, u32, u32) {
        civil_from_days(i64::from(self.0))
    }

    /// Parses `YYYY-MM-DD`.
    pub fn parse(text: &str) -> Option<Date> {
        let bytes = text.as_bytes();
        if bytes.len() != 10 || bytes[4] != b'-' || bytes[7] != b'-' {
            return None;
        }
        let year = text[0..4].parse().ok()?;
        let month = text[5..7].parse().ok()?;
        let day = text[8..10].parse().ok()?;
        Date::from_ymd(year, month, day)
    }

    /// The day this instant falls on, in UTC.
    pub fn of(instant: Timestamp) -> Date {
        Date(instant.0.div_euclid(MILLIS_PER_DAY) as i32)
    }

    /// Whole days from `self` to `later` (negative when `later` is earlier).
    pub fn days_until(self, later: Date) -> i64 {
        i64::from(later.0) - i64::from(self.0)
    }

    /// The calendar distance to a later date as (years, months, days): the
    /// most whole months that fit (a month added to the 31st lands on the
    /// month's last day), then the days left. 2024-01-31 to 2024-03-01 is
    /// 1 month and 1 day. Zero when `later` is not after `self`.
    pub fn calendar_distance(self, later: Date) -> (i64, i64, i64) {
        if later <= self {
            return (0, 0, 0);
        }
        let (from_year, from_month, _) = self.ymd();
        let (to_year, to_month, _) = later.ymd();
        let mut months = (to_year - from_year) * 12 + i64::from(to_month) - i64::from(from_month);
        if self.add_months(months) > later {
            months -= 1;
        }
        let days = self.add_months(months).days_until(later);
        (months / 12, months % 12, days)
    }

    /// This date `months` months later, on the same day or the month's last day.
    fn add_months(self, months: i64) -> Date {
        let (year, month, day) = self.ymd();
        let index = year * 12 + i64::from(month) - 1 + months;
        let (new_year, new_month) = (index.div_euclid(12), (index.rem_euclid(12) + 1) as u32);
        let new_day = day.min(days_in_month(new_year, new_month));
        Date(days_from_civil(new_year, new_month, new_day) as i32)
    }
}

impl Timestamp {
    /// The current instant from the system clock.
    pub fn now() -> Timestamp {
        let elapsed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
        Timestamp(i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX))
    }

    /// Parses the form this type prints: `YYYY-MM-DDTHH:MM:SS.mmmZ`.
    pub fn parse(text: &str) -> Option<Timestamp> {
        let bytes = text.as_bytes();
        if bytes.len() != 24
            || bytes[10] != b'T'
            || bytes[13] != b':'
            || bytes[16] != b':'
            || bytes[19] != b'.'
            || bytes[23] != b'Z'
        {
            return None;
        }
        let date = Date::parse(&text[0..10])?;
        let hours: i64 = text[11..13].parse().ok()?;
        let minutes: i64 = text[14..16].parse().ok()?;
        let seconds: i64 = text[17..19].parse().ok()?;
        let millis: i64 = text[20..23].parse().ok()?;
        if hours > 23 || minutes > 59 || seconds > 59 {
            return None;
        }
        Some(Timestamp(i64::from(date.0) * MILLIS_PER_DAY + ((hours * 60 + minutes) * 60 + seconds) * 1000 + millis))
    }
}

/// The ISO 8601 text of a date or instant, written digit by digit.
///
/// Documents carry several dates each; printing them through `core::fmt`
/// (padding, one call per number) cost the projector's critical thread 16% of
/// its instructions. Only years 0 to 9999 have this four-digit form; the
/// dates of other years print through `core::fmt`, as before.
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

/// Both types travel as ISO 8601 text, so their schemas are strings with a format.
#[cfg(feature = "openapi")]
mod openapi_schemas {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};

    use super::{Date, Timestamp};

    fn iso_text(format: KnownFormat, description: &str, example: &str) -> RefOr<Schema> {
        ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(format)))
            .description(Some(description))
            .examples([example])
            .into()
    }

    impl utoipa::PartialSchema for Date {
        fn schema() -> RefOr<Schema> {
            iso_text(KnownFormat::Date, "A calendar day (UTC), YYYY-MM-DD.", "2026-01-31")
        }
    }

    impl utoipa::ToSchema for Date {}

    impl utoipa::PartialSchema for Timestamp {
        fn schema() -> RefOr<Schema> {
            iso_text(
                KnownFormat::DateTime,
                "A UTC instant with milliseconds, YYYY-MM-DDTHH:MM:SS.mmmZ.",
                "2026-01-31T12:00:00.000Z",
            )
        }
    }

    impl utoipa::ToSchema for Timestamp {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn epoch_and_known_days_print_as_iso_dates() {
        assert_eq!(Date(0).to_string(), "1970-01-01");
        assert_eq!(Date(-1).to_string(), "1969-12-31");
        assert_eq!(Date(19_782).to_string(), "2024-02-29");
        assert_eq!(Date::parse("2024-02-29"), Some(Date(19_782)));
    }

    #[test]
    fn every_day_round_trips_through_its_text() {
        for day in -800_000..800_000 {
            let date = Date(day);
            assert_eq!(Date::parse(&date.to_string()), Some(date), "day {day}");
        }
    }

    /// The text `core::fmt` gives, which the digit-by-digit form must equal.
    fn formatted_date(date: Date) -> String {
        let (year, month, day) = date.ymd();
        format!("{year:04}-{month:02}-{day:02}")
    }

    #[test]
    fn dates_print_as_core_fmt_prints_them_in_every_year() {
        // Years -220 to 4160, then the edges of the four-digit form.
        let days = (-800_000..800_000).chain([-719_529, -719_528, 2_932_896, 2_932_897, i32::MIN, i32::MAX]);
        for day in days {
            let date = Date(day);
            let expected = formatted_date(date);
            assert_eq!(date.to_string(), expected, "day {day}");
            assert_eq!(serde_json::to_string(&date).expect("serializes"), format!("\"{expected}\""), "day {day}");
        }
    }

    #[test]
    fn timestamps_print_as_core_fmt_prints_them() {
        let instants = (-3_000_i64..3_000).map(|step| step * 7_919_993_311).chain([
            0,
            -1,
            1,
            MILLIS_PER_DAY - 1,
            -62_167_219_200_000,
            -62_167_219_200_001,
            253_402_300_799_999,
        ]);
        for millis in instants {
            let instant = Timestamp(millis);
            let of_day = millis.rem_euclid(MILLIS_PER_DAY);
            let expected = format!(
                "{}T{:02}:{:02}:{:02}.{:03}Z",
                formatted_date(Date::of(instant)),
                of_day / 3_600_000,
                of_day / 60_000 % 60,
                of_day / 1000 % 60,
                of_day % 1000
            );
            assert_eq!(instant.to_string(), expected, "{millis}");
            assert_eq!(serde_json::to_string(&instant).expect("serializes"), format!("\"{expected}\""));
        }
    }

    #[test]
    fn impossible_dates_are_rejected() {
        for text in ["2023-02-29", "2024-13-01", "2024-00-10", "2024-04-31", "24-01-01", "2024/01/01"] {
            assert_eq!(Date::parse(text), None, "{text}");
        }
    }

    #[test]
    fn timestamps_print_with_milliseconds_in_utc_and_parse_back() {
        let instant = Timestamp(1_700_000_000_123);
        assert_eq!(instant.to_string(), "2023-11-14T22:13:20.123Z");
        assert_eq!(Timestamp::parse("2023-11-14T22:13:20.123Z"), Some(instant));
        assert_eq!(Timestamp(-1).to_string(), "1969-12-31T23:59:59.999Z");
        assert_eq!(Timestamp::parse("2023-11-14T24:13:20.123Z"), None);
    }

    #[test]
    fn calendar_distances_count_years_months_and_days() {
        let date = |text| Date::parse(text).expect("valid");
        assert_eq!(date("2024-01-31").calendar_distance(date("2024-03-01")), (0, 1, 1));
        assert_eq!(date("2026-11-21").calendar_distance(date("2096-12-31")), (70, 1, 10));
        assert_eq!(date("2024-02-29").calendar_distance(date("2025-02-28")), (1, 0, 0));
        assert_eq!(date("2024-03-15").calendar_distance(date("2025-03-14")), (0, 11, 27));
        assert_eq!(date("2025-01-01").calendar_distance(date("2024-01-01")), (0, 0, 0));
        assert_eq!(date("2025-01-01").calendar_distance(date("2025-01-01")), (0, 0, 0));
    }

    #[test]
    fn day_differences_are_signed() {
        let start = Date::parse("2024-01-01").expect("valid");
        let end = Date::parse("2025-01-01").expect("valid");
        assert_eq!(start.days_until(end), 366);
        assert_eq!(end.days_until(start), -366);
    }
}
