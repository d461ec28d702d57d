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
    if let Some(i) = canonical(s) {
        return Ok(Parsed::Instant(i));
    }
    let ts: jiff::Timestamp = s
        .parse()
        .map_err(|_| format!("{OFFSET_MESSAGE}; \"{s}\" is not a valid timestamp"))?;
    Ok(Parsed::Instant(Instant(ts.as_millisecond())))
}

/// The shape nearly every timestamp is written in, read without the
/// general parser (a frontmatter holds several, and jiff's parser is most
/// of their cost): `YYYY-MM-DDTHH:MM:SS`, an optional fraction of up to
/// nine digits, then `Z` or `+HH:MM`/`-HH:MM`, years 1971 to 9998. `None` for
/// anything else, which jiff then reads (and judges).
fn canonical(s: &str) -> Option<Instant> {
    let b = s.as_bytes();
    let digit = |i: usize| -> Option<i64> {
        let c = *b.get(i)?;
        c.is_ascii_digit().then(|| i64::from(c - b'0'))
    };
    let two = |i: usize| Some(digit(i)? * 10 + digit(i + 1)?);
    if b.len() < 20
        || b[4] != b'-'
        || b[7] != b'-'
        || b[10] != b'T'
        || b[13] != b':'
        || b[16] != b':'
    {
        return None;
    }
    let year = two(0)? * 100 + two(2)?;
    if !(1971..=9998).contains(&year) {
        return None;
    }
    // jiff judges the calendar (days per month, leap years) and counts the
    // days; only its text parser is skipped.
    let datetime = jiff::civil::DateTime::new(
        i16::try_from(year).ok()?,
        i8::try_from(two(5)?).ok()?,
        i8::try_from(two(8)?).ok()?,
        i8::try_from(two(11)?).ok()?,
        i8::try_from(two(14)?).ok()?,
        i8::try_from(two(17)?).ok()?,
        0,
    )
    .ok()?;
    let mut i = 19;
    let mut millis = 0;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start || i - start > 9 {
            return None;
        }
        // Milliseconds are the first three digits; finer ones are dropped,
        // as `Timestamp::as_millisecond` does after 1970.
        for k in start..start + 3 {
            millis = millis * 10 + if k < i { digit(k)? } else { 0 };
        }
    }
    let offset = match &b[i..] {
        [b'Z'] => 0,
        [sign @ (b'+' | b'-'), _, _, b':', _, _] => {
            let (h, m) = (two(i + 1)?, two(i + 4)?);
            if h > 23 || m > 59 || (*sign == b'-' && h == 0 && m == 0) {
                return None;
            }
            let secs = i32::try_from(h * 3600 + m * 60).ok()?;
            if *sign == b'-' {
                -secs
            } else {
                secs
            }
        }
        _ => return None,
    };
    let at = jiff::tz::Offset::from_seconds(offset)
        .ok()?
        .to_timestamp(datetime)
        .ok()?;
    Some(Instant(at.as_millisecond() + millis))
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
    use proptest::prelude::*;

    /// jiff's reading of a timestamp with an explicit offset.
    fn general(s: &str) -> Option<Instant> {
        s.parse::<jiff::Timestamp>()
            .ok()
            .map(|t| Instant(t.as_millisecond()))
    }

    #[test]
    fn canonical_shape_reads_as_jiff_does() {
        let cases = [
            "2026-02-11T07:12:12Z",
            "2024-02-29T23:59:59.999+05:30",
            "2023-02-29T00:00:00Z",
            "2000-02-29T12:00:00-08:00",
            "1900-02-29T00:00:00Z",
            "1971-01-01T00:00:00+23:59",
            "1970-12-31T23:00:00-01:00",
            "2026-12-31T23:59:60Z",
            "2026-04-31T00:00:00Z",
            "2026-13-01T00:00:00Z",
            "2026-01-01T24:00:00Z",
            "2026-01-01T00:00:00.123456789Z",
            "2026-01-01T00:00:00.1234567891Z",
            "2026-01-01T00:00:00.Z",
            "2026-01-01T00:00:00-00:00",
            "2026-01-01T00:00:00+24:00",
            "2026-01-01t00:00:00z",
            "2026-01-01 00:00:00Z",
            "9999-12-31T23:59:59.5Z",
        ];
        for s in cases {
            if let Some(i) = canonical(s) {
                assert_eq!(Some(i), general(s), "{s}");
            }
        }
        assert!(canonical("2026-02-11T07:12:12Z").is_some());
        assert!(canonical("2024-02-29T23:59:59.999+05:30").is_some());
    }

    proptest! {
        /// Whatever the fast reading accepts, jiff reads to the same instant;
        /// what it declines, `parse` still answers as before.
        #[test]
        fn canonical_agrees_with_jiff(
            year in prop_oneof![1960i64..2100, 1960i64..10000],
            month in 0i64..14,
            day in 0i64..33,
            hour in 0i64..26,
            minute in 0i64..61,
            second in 0i64..62,
            frac in proptest::option::of("[0-9]{0,11}"),
            off in prop_oneof![
                Just("Z".to_string()),
                (0i64..26, 0i64..61, any::<bool>()).prop_map(|(h, m, neg)| format!(
                    "{}{h:02}:{m:02}",
                    if neg { '-' } else { '+' }
                )),
            ],
        ) {
            let frac = frac.map(|f| format!(".{f}")).unwrap_or_default();
            let s = format!("{year:04}-{month:02}-{day:02}T{hour:02}:{minute:02}:{second:02}{frac}{off}");
            match canonical(&s) {
                Some(i) => prop_assert_eq!(Some(i), general(&s), "{}", s),
                // Declined only outside the shape it promises to read.
                None => prop_assert!(
                    general(&s).is_none()
                        || !(1971..=9998).contains(&year)
                        || second > 59
                        || frac.len() > 10
                        || frac == "."
                        || off == "-00:00"
                        || off.get(1..3).and_then(|h| h.parse::<i64>().ok()).is_some_and(|h| h > 23),
                    "{}", s
                ),
            }
        }
    }

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
