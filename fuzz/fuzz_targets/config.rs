//! okfit.toml: `okfit_core::config::resolve` over arbitrary text, then the
//! fixture bundle validated under whatever config resolved, and the
//! duration grammar (`lifecycle.default_stale_after`) on every line.
#![no_main]

use libfuzzer_sys::fuzz_target;
use okfit_core::bundle::{self, Bundle};
use okfit_core::config::{self, Config};
use okfit_core::doc::ParseOptions;
use okfit_core::time::Instant;

const NOW: Instant = Instant(1_772_323_200_000);

const CODES: [&str; 6] = [
    "unknown-type",
    "status-missing",
    "stale",
    "unknown-tag",
    "config-unknown-key",
    "no-such-code",
];

fn duration(s: &str) {
    if let Ok(ms) = config::parse_duration(s) {
        let shown = config::format_duration(ms);
        assert_eq!(
            config::parse_duration(&shown),
            Ok(ms),
            "format_duration({ms}) = {shown:?} does not read back (from {s:?})"
        );
    }
}

fn validate_fixture(cfg: &Config) {
    let opts = ParseOptions {
        config: cfg,
        now: Some(NOW),
        keep_frontmatter: false,
        digests: true,
        diagnostics: true,
        skip_body: false,
    };
    let files = okfit_fuzz::FIXTURE_DOCS
        .iter()
        .map(|(p, t)| (*p, t.as_bytes()))
        .chain([("schema.sql", &b""[..])]);
    let b = Bundle::load(files, &opts);
    let r = bundle::validate(&b, cfg, vec![]);
    let _ = r.exit_code();
}

fuzz_target!(|data: &[u8]| {
    let text = okfit_fuzz::lossy(data);
    for line in text.lines().take(8) {
        duration(line.trim());
        if let Some((_, v)) = line.split_once('=') {
            duration(v.trim().trim_matches('"'));
        }
    }
    let Ok(cfg) = config::resolve(Some(&text)) else {
        return;
    };
    for code in CODES {
        let _ = cfg.severity(code);
    }
    // Resolving is deterministic.
    assert_eq!(
        config::resolve(Some(&text)).as_ref(),
        Ok(&cfg),
        "resolve gave two answers for one text"
    );
    validate_fixture(&cfg);
});
