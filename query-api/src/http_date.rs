//! HTTP dates (RFC 9110, section 5.6.7) for `Last-Modified` and
//! `If-Modified-Since`: written in the preferred IMF-fixdate form
//! (`Tue, 24 Nov 2026 21:27:32 GMT`) and read in that form only. A date in
//! an obsolete form is therefore not understood, and the condition that
//! carries it is ignored, which RFC 9110 asks of a date a recipient cannot
//! parse (the full answer is sent).

use read_model::calendar::{Date, Timestamp};

const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
const MONTHS: [&str; 12] = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];

/// The IMF-fixdate of `instant`, to the second (HTTP dates have no fraction).
pub fn format(instant: Timestamp) -> String {
    let date = Date::of(instant);
    let (year, month, day) = date.ymd();
    let seconds_of_day = instant.0.rem_euclid(86_400_000) / 1000;
    format!(
        "{}, {day:02} {} {year:04} {:02}:{:02}:{:02} GMT",
        WEEKDAYS[usize::try_from(i64::from(date.0).rem_euclid(7)).unwrap_or(0)],
        MONTHS[(month - 1) as usize],
        seconds_of_day / 3600,
        seconds_of_day / 60 % 60,
        seconds_of_day % 60
    )
}

/// The instant an IMF-fixdate names; `None` for anything else.
pub fn parse(text: &str) -> Option<Timestamp> {
    let mut parts = text.split(' ');
    let (Some(weekday), Some(day), Some(month), Some(year), Some(time), Some("GMT"), None) =
        (parts.next(), parts.next(), parts.next(), parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return None;
    };
    let weekday = weekday.strip_suffix(',')?;
    let month = MONTHS.iter().position(|name| *name == month)? as u32 + 1;
    if day.len() != 2 || year.len() != 4 || time.len() != 8 {
        return None;
    }
    let date = Date::from_ymd(year.parse().ok()?, month, day.parse().ok()?)?;
    if WEEKDAYS[usize::try_from(i64::from(date.0).rem_euclid(7)).ok()?] != weekday {
        return None;
    }
    let mut clock = time.split(':').map(|part| part.parse::<i64>().ok().filter(|_| part.len() == 2));
    let (Some(Some(hours)), Some(Some(minutes)), Some(Some(seconds)), None) =
        (clock.next(), clock.next(), clock.next(), clock.next())
    else {
        return None;
    };
    if hours > 23 || minutes > 59 || seconds > 60 {
        return None;
    }
    Some(Timestamp(i64::from(date.0) * 86_400_000 + ((hours * 60 + minutes) * 60 + seconds.min(59)) * 1000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_are_written_and_read_in_the_imf_fixdate_form() {
        let instant = Timestamp::parse("2026-11-24T21:27:32.999Z").expect("instant");
        assert_eq!(format(instant), "Tue, 24 Nov 2026 21:27:32 GMT");
        assert_eq!(parse("Tue, 24 Nov 2026 21:27:32 GMT"), Timestamp::parse("2026-11-24T21:27:32.000Z"));
        assert_eq!(format(Timestamp(0)), "Thu, 01 Jan 1970 00:00:00 GMT");
        assert_eq!(parse("Sun, 06 Nov 1994 08:49:37 GMT"), Timestamp::parse("1994-11-06T08:49:37.000Z"));
        for obsolete_or_wrong in [
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "Mon, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 31 Feb 1994 08:49:37 GMT",
            "",
        ] {
            assert_eq!(parse(obsolete_or_wrong), None, "{obsolete_or_wrong}");
        }
    }
}
