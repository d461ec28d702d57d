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

/// The repository's root.
pub fn repo() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The real corpora (`../shared/corpora`), or `None` when they are absent,
/// said on stderr so that a run without them shows what did not run.
pub fn corpora() -> Option<std::path::PathBuf> {
    let corpora = repo().join("../shared/corpora");
    if corpora.is_dir() {
        return Some(corpora);
    }
    eprintln!(
        "corpora not found at {}: the corpus comparison did not run",
        corpora.display()
    );
    None
}

/// Every `.md` file under `dir`, recursively (none when it cannot be read).
pub fn markdown_under(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    fn walk(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(ft) = e.file_type() else { continue };
            if ft.is_dir() {
                walk(&p, out);
            } else if ft.is_file() && p.extension().is_some_and(|x| x == "md") {
                out.push(p);
            }
        }
    }
    let mut out = vec![];
    walk(dir, &mut out);
    out
}

/// How many of `n` values drawn from `strategy` (deterministically) `check`
/// answers: a fast reader's differential test compares real answers only
/// if the generator often produces input the reader takes.
pub fn answered<S: proptest::strategy::Strategy>(
    strategy: S,
    n: usize,
    mut check: impl FnMut(&S::Value) -> bool,
) -> usize {
    use proptest::strategy::ValueTree;
    let mut runner = proptest::test_runner::TestRunner::deterministic();
    (0..n)
        .filter(|_| check(&strategy.new_tree(&mut runner).unwrap().current()))
        .count()
}

/// The checks of a fast reader's differential test, `agree` comparing it
/// with the full reader on one input (panicking where they differ) and
/// saying whether the fast one answered: over `cases` values of `any` they
/// never differ; over `cases` values of `common` the fast reader always
/// answers; and it answers more than one in `share` of `cases` values of
/// `any`, so that the first check compares real answers, not only
/// refusals.
pub fn differential<S, C>(
    any: S,
    common: C,
    cases: u32,
    share: usize,
    agree: impl Fn(&S::Value) -> bool,
) where
    S: proptest::strategy::Strategy,
    C: proptest::strategy::Strategy<Value = S::Value>,
{
    property(&any, cases, false, &agree);
    property(common, cases, true, &agree);
    let n = cases as usize;
    let read = answered(&any, n, &agree);
    eprintln!("{read} of {n} generated inputs answered by the fast reader");
    assert!(
        read * share > n,
        "only {read} of {n} generated inputs were answered by the fast reader"
    );
}

/// Runs `agree` as a property over `cases` values of `strategy` (a failure
/// is shrunk to the smallest input, as `proptest!` does). `agree` compares
/// a fast reader with the full one, panicking where they differ, and says
/// whether the fast one answered; with `must_answer` a value it declines
/// fails too.
pub fn property<S: proptest::strategy::Strategy>(
    strategy: S,
    cases: u32,
    must_answer: bool,
    agree: impl Fn(&S::Value) -> bool,
) {
    use proptest::test_runner::{Config, TestRunner};
    let config = Config {
        failure_persistence: None,
        ..Config::with_cases(cases)
    };
    let result = TestRunner::new(config).run(&strategy, |v| {
        let answered = agree(&v);
        proptest::prop_assert!(answered || !must_answer, "declined {v:?}");
        Ok(())
    });
    if let Err(e) = result {
        panic!("{e}");
    }
}
