//! OKF timestamps: ISO 8601 instants with an explicit offset, read into
//! milliseconds since the Unix epoch.

/// An instant, in milliseconds since 1970-01-01T00:00:00Z.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Instant(pub i64);

/// The exact message for a timestamp without an explicit offset.
pub const OFFSET_MESSAGE: &str =
    "Expected an ISO 8601 timestamp with an explicit offset (Z, +hh:mm or -hh:mm)";

/// How a timestamp string was read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Parsed {
    /// A full instant with an explicit offset.
    Instant(Instant),
    /// A bare `YYYY-MM-DD`, read as `T00:00:00Z` of that day.
    DateOnly(Instant),
}

impl Parsed {
    /// The instant, whichever way it was written.
    pub fn instant(self) -> Instant {
        match self {
            Parsed::Instant(i) | Parsed::DateOnly(i) => i,
        }
    }
}

fn has_explicit_offset(s: &str) -> bool {
    let b = s.as_bytes();
    if b.last() == Some(&b'Z') {
        return true;
    }
    if b.len() < 6 {
        return false;
    }
    let t = &b[b.len() - 6..];
    (t[0] == b'+' || t[0] == b'-')
        && t[1].is_ascii_digit()
        && t[2].is_ascii_digit()
        && t[3] == b':'
        && t[4].is_ascii_digit()
        && t[5].is_ascii_digit()
}

/// True for exactly `YYYY-MM-DD`.
pub fn is_date_shape(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// Parses an OKF timestamp. Offset-less datetimes are rejected with
/// [`OFFSET_MESSAGE`]; a bare date is accepted as midnight UTC.
pub fn parse(s: &str) -> Result<Parsed, String> {
    let s = s.trim();
    if is_date_shape(s) {
        let d: jiff::civil::Date = s
            .parse()
            .map_err(|_| format!("\"{s}\" is not a valid calendar date"))?;
        let ts = jiff::tz::Offset::UTC
            .to_timestamp(d.to_datetime(jiff::civil::Time::midnight()))
            .map_err(|e| e.to_string())?;
        return Ok(Parsed::DateOnly(Instant(ts.as_millisecond())));
    }
    if !has_explicit_offset(s) {
        return Err(OFFSET_MESSAGE.to_string());
    }
    let ts: jiff::Timestamp = s
        .parse()
        .map_err(|_| format!("{OFFSET_MESSAGE}; \"{s}\" is not a valid timestamp"))?;
    Ok(Parsed::Instant(Instant(ts.as_millisecond())))
}

/// Parses a caller-supplied `now`: must be a full instant with an offset.
pub fn parse_now(s: &str) -> Result<Instant, String> {
    match parse(s)? {
        Parsed::Instant(i) => Ok(i),
        Parsed::DateOnly(_) => Err(OFFSET_MESSAGE.to_string()),
    }
}

/// Formats as `YYYY-MM-DDTHH:MM:SS.sssZ` (milliseconds always present).
pub fn format_millis(i: Instant) -> String {
    match jiff::Timestamp::from_millisecond(i.0) {
        Ok(ts) => {
            let dt = jiff::tz::Offset::UTC.to_datetime(ts);
            format!(
                "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
                dt.year(),
                dt.month(),
                dt.day(),
                dt.hour(),
                dt.minute(),
                dt.second(),
                dt.subsec_nanosecond() / 1_000_000
            )
        }
        Err(_) => i.0.to_string(),
    }
}

/// Formats as `YYYY-MM-DDTHH:MM:SSZ`, the milliseconds dropped: how okfit
/// writes the instants it records (`generated.at`, `verified[].at`).
pub fn format_seconds(i: Instant) -> String {
    let whole = Instant(i.0 - i.0.rem_euclid(1000));
    let s = format_millis(whole);
    match s.strip_suffix(".000Z") {
        Some(head) => format!("{head}Z"),
        None => s,
    }
}

/// Whole days from `from` to `to`, floored (0 when `to < from`).
pub fn whole_days(from: Instant, to: Instant) -> i64 {
    (to.0 - from.0).max(0) / 86_400_000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_offsets_and_dates() {
        assert_eq!(
            parse("2020-01-01T00:00:00Z").unwrap(),
            Parsed::Instant(Instant(1_577_836_800_000))
        );
        assert_eq!(
            parse("2020-01-01T01:00:00+01:00").unwrap().instant(),
            Instant(1_577_836_800_000)
        );
        assert_eq!(
            parse("2020-01-01").unwrap(),
            Parsed::DateOnly(Instant(1_577_836_800_000))
        );
        assert_eq!(parse("2020-01-01T00:00:00").unwrap_err(), OFFSET_MESSAGE);
        assert!(parse("2020-13-01").is_err());
        assert!(parse("garbageZ").is_err());
        assert!(parse_now("2020-01-01").is_err());
        assert_eq!(
            format_millis(Instant(1_577_836_800_000)),
            "2020-01-01T00:00:00.000Z"
        );
        assert_eq!(
            whole_days(Instant(0), Instant(10 * 86_400_000 + 43_200_000)),
            10
        );
    }

    #[test]
    fn formats_whole_seconds() {
        assert_eq!(
            format_seconds(Instant(1_788_220_800_999)),
            "2026-09-01T00:00:00Z"
        );
        assert_eq!(
            format_seconds(Instant(1_788_220_801_000)),
            "2026-09-01T00:00:01Z"
        );
    }
}
