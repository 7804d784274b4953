//! Calendar dates and UTC instants as the read model stores and prints them.
//!
//! Events carry Avro `date` (days since 1970-01-01) and `timestamp-millis`
//! values; documents print them as ISO 8601 (`2026-01-31`,
//! `2026-01-31T12:00:00.000Z`). Only the proleptic Gregorian calendar in UTC is
//! needed, so the conversions are written here (Howard Hinnant's civil-date
//! algorithms) instead of pulling in a date-time crate.

mod iso_text;

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
