//! Per-file validation against the full run: for every Markdown file of
//! every bundle at hand (this repository's `okf/`, the test fixtures, and
//! the real corpora in `../shared/corpora` when present), the findings of
//! `validate_file` are exactly the full run's findings for that file.

use okfit_core::diag::Diagnostic;
use okfit_core::time::Instant;
use okfit_knowledge::project::{self, LoadOptions};
use okfit_store::discover::{self, Project};
use std::path::{Path, PathBuf};

/// 2026-09-01T00:00:00Z: some fixtures have passed `stale_after`.
const NOW: Instant = Instant(1_788_220_800_000);

fn repo() -> PathBuf {
    std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("..")).unwrap()
}

/// Bundle roots below `dir`: directories holding an `index.md` whose
/// parent holds none.
fn bundles_under(dir: &Path, depth: usize, out: &mut Vec<PathBuf>) {
    if dir.join("index.md").is_file() {
        out.push(dir.to_path_buf());
        return;
    }
    if depth == 0 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let mut subs: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_dir() && !p.file_name().unwrap().to_string_lossy().starts_with('.'))
        .collect();
    subs.sort();
    for s in subs {
        bundles_under(&s, depth - 1, out);
    }
}

fn full(p: &Project, skip_provenance: bool) -> Vec<Diagnostic> {
    let loaded = project::load(
        p,
        &LoadOptions {
            now: Some(NOW),
            git: !skip_provenance,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    project::validate(p, &loaded, skip_provenance).diagnostics
}

fn md_files(root: &Path) -> Vec<String> {
    okfit_store::walk::walk(root)
        .unwrap()
        .files
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p.ends_with(".md"))
        .collect()
}

/// Compares every file of `p`'s bundle; returns how many were compared.
fn compare(p: &Project, skip_provenance: bool) -> usize {
    let all = full(p, skip_provenance);
    let files = md_files(&p.bundle_root);
    for rel in &files {
        let expected: Vec<&Diagnostic> = all.iter().filter(|d| &d.file == rel).collect();
        let got = project::validate_file(p, rel, NOW, skip_provenance).unwrap();
        let got: Vec<&Diagnostic> = got.diagnostics.iter().collect();
        assert_eq!(got, expected, "{} in {}", rel, p.bundle_root.display());
    }
    files.len()
}

#[test]
fn per_file_findings_equal_the_full_runs_on_this_repository_and_the_fixtures() {
    let root = repo();
    let okf = discover::resolve(Some(&root), &root, None).unwrap();
    assert!(compare(&okf, true) > 15);
    // With the git tier too (this repository's history).
    compare(&okf, false);
    let mut bundles = vec![];
    bundles_under(&root.join("tests/fixtures"), 4, &mut bundles);
    assert!(bundles.len() >= 4, "{bundles:?}");
    let mut n = 0;
    for b in &bundles {
        // A fixture whose own config is broken has nothing to compare.
        let Ok(p) = discover::resolve_bundle(b, None) else {
            continue;
        };
        n += compare(&p, true);
        let p =
            discover::resolve_bundle(b, Some(&root.join("tests/fixtures/mcp/project/okfit.toml")));
        if let Ok(p) = p {
            compare(&p, true);
        }
    }
    assert!(n > 20, "{n} files compared");
}

#[test]
fn per_file_findings_equal_the_full_runs_on_the_corpora() {
    let corpora = repo().join("../shared/corpora");
    let Ok(corpora) = std::fs::canonicalize(&corpora) else {
        eprintln!("corpora not found at {}; skipping", corpora.display());
        return;
    };
    let mut bundles = vec![];
    bundles_under(&corpora, 5, &mut bundles);
    assert!(!bundles.is_empty());
    let mut n = 0;
    for b in &bundles {
        let p = discover::resolve_bundle(b, None).unwrap();
        n += compare(&p, true);
    }
    eprintln!("{n} files of {} corpus bundles compared", bundles.len());
    assert!(n > 100, "{n}");
}

#[test]
fn a_path_outside_the_bundle_is_refused() {
    let root = repo();
    let okf = discover::resolve(Some(&root), &root, None).unwrap();
    for rel in ["nope.md", "../README.md", "modules"] {
        let e = project::validate_file(&okf, rel, NOW, true).unwrap_err();
        assert!(
            e.to_string()
                .contains("is not a Markdown file of the bundle"),
            "{e}"
        );
    }
}
