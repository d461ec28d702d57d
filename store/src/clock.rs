//! The wall clock, read in one place: everything below it takes `now` as
//! a value so tests and `--now` can fix it.

use crate::error::Error;
use okfit_core::time::{self, Instant};

/// The current time.
pub fn wall_clock() -> Instant {
    let ms = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0);
    Instant(ms)
}

/// Resolves `now`: the flag, else `OKFIT_NOW`, else the wall clock.
pub fn resolve_now(flag: Option<&str>) -> Result<Instant, Error> {
    let (src, value) = match flag {
        Some(v) => ("--now", v.to_string()),
        None => match std::env::var("OKFIT_NOW") {
            Ok(v) if !v.trim().is_empty() => ("OKFIT_NOW", v),
            _ => return Ok(wall_clock()),
        },
    };
    time::parse_now(&value).map_err(|_| {
        Error::Usage(format!(
            "{src} must be an ISO 8601 instant with an explicit offset, for example 2026-09-06T00:00:00Z (got \"{}\")",
            crate::error::truncate(&value)
        ))
    })
}

/// The `okfit --version` line.
pub fn version_line() -> String {
    format!(
        "okfit {} (engine {}, okf {}, config-schema 1.0)",
        crate::VERSION,
        okfit_core::report::ENGINE_VERSION,
        okfit_core::config::OKF_VERSION
    )
}
