//! Helpers shared by the core's integration tests.
#![allow(dead_code)]

use okfit_core::bundle::{Bundle, Report};
use okfit_core::config::{self, Config};
use okfit_core::diag::Diagnostic;
use okfit_core::doc::ParseOptions;
use okfit_core::time::parse_now;

/// okfit.toml text that switches the profile off.
pub const NONE: &str = "[bundle]\nprofile = \"none\"\n";

/// The config with no profile.
pub fn none() -> Config {
    config::resolve(Some(NONE)).unwrap()
}

/// Loads `(path, bytes)` files with every finding, digest and frontmatter kept.
pub fn load_bytes(files: &[(&str, &[u8])], cfg: &Config, now: Option<&str>) -> Bundle {
    let opts = ParseOptions {
        config: cfg,
        now: now.map(|n| parse_now(n).unwrap()),
        keep_frontmatter: true,
        digests: true,
        diagnostics: true,
        skip_body: false,
    };
    Bundle::load(files.iter().copied(), &opts)
}

/// [`load_bytes`] over text files.
pub fn load_text(files: &[(&str, &str)], cfg: &Config, now: Option<&str>) -> Bundle {
    let v: Vec<(&str, &[u8])> = files.iter().map(|(p, t)| (*p, t.as_bytes())).collect();
    load_bytes(&v, cfg, now)
}

/// The diagnostics with this code.
pub fn with_code<'a>(r: &'a Report, code: &str) -> Vec<&'a Diagnostic> {
    r.diagnostics.iter().filter(|d| d.code == code).collect()
}

/// Exactly one diagnostic with this code.
pub fn single<'a>(r: &'a Report, code: &str) -> &'a Diagnostic {
    let v = with_code(r, code);
    assert_eq!(v.len(), 1, "expected one {code}, got {:#?}", r.diagnostics);
    v[0]
}

/// No diagnostic with this code.
pub fn none_of(r: &Report, code: &str) {
    assert!(
        with_code(r, code).is_empty(),
        "expected no {code}, got {:#?}",
        r.diagnostics
    );
}
