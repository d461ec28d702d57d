//! `okfit validate` over real third-party OKF bundles in `../shared/corpora`
//! (beside the repository). When that directory is absent every test says
//! so and passes; the corpora are never copied into the repository.
//!
//! Each bundle is validated through a temporary okfit.toml that points
//! `[bundle] path` at the corpus bundle (absolute) with `profile = "none"`,
//! passed with `--config`, at a fixed `--now`, as `--format json`, in a
//! cleared environment whose HOME and XDG_CONFIG_HOME are temporary.
//! No timing is asserted: speed is measured by the benchmarks.

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

const NOW: &str = "2026-09-01T00:00:00Z";

/// Every code okfit may report (conformance, lint, profile).
fn known_code(code: &str) -> bool {
    use okfit_core::diag::{CONFORMANCE_CODES, LINT_DEFAULTS, PROFILE_CODES};
    CONFORMANCE_CODES.contains(&code)
        || PROFILE_CODES.contains(&code)
        || LINT_DEFAULTS.iter().any(|(c, _)| *c == code)
}

/// `../shared/corpora` beside the repository, or `None` (with a note).
fn corpora() -> Option<PathBuf> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpora");
    match std::fs::canonicalize(&p) {
        Ok(c) if c.is_dir() => Some(c),
        _ => {
            eprintln!("corpora not found at {}; skipping", p.display());
            None
        }
    }
}

/// One validation run.
struct Report {
    code: i32,
    stdout: String,
    json: Value,
}

impl Report {
    fn diags(&self) -> &Vec<Value> {
        self.json["diagnostics"].as_array().expect("diagnostics")
    }

    fn with_code(&self, code: &str) -> Vec<&Value> {
        self.diags().iter().filter(|d| d["code"] == code).collect()
    }

    fn summary(&self, key: &str) -> u64 {
        self.json["summary"][key]
            .as_u64()
            .unwrap_or_else(|| panic!("summary.{key}"))
    }

    fn code_counts(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for d in self.diags() {
            *m.entry(d["code"].as_str().unwrap().to_string())
                .or_insert(0) += 1;
        }
        m
    }
}

fn toml_string(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Validates `bundle` (absolute) through a temporary okfit.toml.
fn validate(bundle: &Path) -> Report {
    assert!(
        bundle.is_dir(),
        "missing corpus bundle {}",
        bundle.display()
    );
    let tmp = tempfile::Builder::new()
        .prefix("okfit-corpora-")
        .tempdir()
        .unwrap();
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let cfg = tmp.path().join("okfit.toml");
    std::fs::write(
        &cfg,
        format!(
            "[bundle]\npath = {}\nprofile = \"none\"\n",
            toml_string(bundle.to_str().unwrap())
        ),
    )
    .unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_okfit"))
        .current_dir(tmp.path())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("XDG_CONFIG_HOME", &home)
        .env("LC_ALL", "C")
        .args([
            "validate",
            "--config",
            cfg.to_str().unwrap(),
            "--now",
            NOW,
            "--format",
            "json",
            // The corpora are judged on their content alone: git history
            // depends on where they sit (inside some repository or not).
            "--skip-provenance",
        ])
        .stdin(Stdio::null())
        .output()
        .expect("run okfit");
    let stdout = String::from_utf8(out.stdout).expect("UTF-8 stdout");
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let code = out.status.code().unwrap_or(-1);
    assert!(
        [0, 1, 2].contains(&code),
        "{}: okfit exited {code} (a crash or an infrastructure failure)\nstderr:\n{stderr}",
        bundle.display()
    );
    let json: Value = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "{}: stdout is not one JSON document ({e})\nstderr:\n{stderr}",
            bundle.display()
        )
    });
    assert_eq!(json["exit_code"], code, "{}", bundle.display());
    assert_eq!(
        Path::new(json["root"].as_str().unwrap()),
        bundle,
        "root is the absolute bundle root"
    );
    Report { code, stdout, json }
}

fn sample(c: &Path, version: &str, name: &str) -> PathBuf {
    c.join("google-okf-samples").join(version).join(name)
}

fn subdirs(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    v.sort();
    v
}

const V02: [&str; 4] = ["acme_retail", "crypto_bitcoin", "ga4", "stackoverflow"];

#[test]
fn v02_samples_have_no_conformance_errors() {
    let Some(c) = corpora() else { return };
    for name in V02 {
        let r = validate(&sample(&c, "v0.2", name));
        assert_eq!(
            r.summary("conformance_errors"),
            0,
            "{name}: {:?}",
            r.code_counts()
        );
        assert_ne!(r.code, 2, "{name}");
        assert!(r.summary("concepts") > 0, "{name}");
        assert!(
            r.diags().iter().all(|d| d["source"] != "core.conformance"),
            "{name}"
        );
    }
}

#[test]
fn v02_stackoverflow_footnotes_are_not_keyed_to_sources() {
    let Some(c) = corpora() else { return };
    let r = validate(&sample(&c, "v0.2", "stackoverflow"));
    assert_eq!(r.code, 0);
    assert_eq!(r.summary("concepts"), 26);
    let f = r.with_code("footnote-source-unknown");
    assert_eq!(f.len(), 11, "{:?}", r.code_counts());
    for d in &f {
        assert_eq!(d["severity"], "warning");
        assert_eq!(d["source"], "core.lint");
        assert_eq!(d["message"], "Footnote label \"1\" matches no sources[].id");
        assert!(d.get("range").is_some(), "{d}");
    }
    let files: BTreeSet<&str> = f.iter().map(|d| d["file"].as_str().unwrap()).collect();
    assert_eq!(files.len(), 11, "one per concept");
    assert_eq!(r.summary("lint_warnings"), 11, "{:?}", r.code_counts());
}

#[test]
fn v02_acme_retail_misses_its_attester_and_has_log_frontmatter() {
    let Some(c) = corpora() else { return };
    let r = validate(&sample(&c, "v0.2", "acme_retail"));
    assert_eq!(r.code, 0);
    assert_eq!(r.summary("concepts"), 9);
    let broken = r.with_code("broken-links");
    assert_eq!(broken.len(), 2, "{:?}", r.code_counts());
    for d in &broken {
        assert_eq!(d["severity"], "warning");
        assert_eq!(
            d["message"],
            "Link target \"attesters/sql_equality.py\" does not exist in the bundle"
        );
    }
    let files: BTreeSet<&str> = broken.iter().map(|d| d["file"].as_str().unwrap()).collect();
    assert_eq!(
        files,
        BTreeSet::from([
            "computations/gross-margin-period.md",
            "computations/revenue-ytd.md"
        ])
    );
    let log = r.with_code("log-frontmatter");
    assert_eq!(log.len(), 1, "{:?}", r.code_counts());
    assert_eq!(log[0]["file"], "log.md");
    assert_eq!(log[0]["severity"], "warning");
    assert_eq!(
        log[0]["message"],
        "log.md carries frontmatter; the spec defines none"
    );
    // Those three are the only warnings.
    assert_eq!(r.summary("lint_warnings"), 3, "{:?}", r.code_counts());
    assert_eq!(r.summary("lint_errors"), 0, "{:?}", r.code_counts());
}

#[test]
fn v02_crypto_bitcoin_and_ga4_are_spotless() {
    let Some(c) = corpora() else { return };
    for name in ["crypto_bitcoin", "ga4"] {
        let r = validate(&sample(&c, "v0.2", name));
        assert_eq!(r.code, 0, "{name}");
        assert!(r.diags().is_empty(), "{name}: {:?}", r.code_counts());
        assert_eq!(r.summary("concepts"), 9, "{name}");
    }
}

#[test]
fn v01_samples_report_one_legacy_timestamp_per_concept() {
    let Some(c) = corpora() else { return };
    let dirs = subdirs(&c.join("google-okf-samples/v0.1"));
    assert!(!dirs.is_empty());
    for dir in dirs {
        let r = validate(&dir);
        let concepts = r.summary("concepts");
        assert!(concepts > 0, "{}", dir.display());
        let legacy = r.with_code("legacy-timestamp");
        assert_eq!(
            legacy.len() as u64,
            concepts,
            "{}: {:?}",
            dir.display(),
            r.code_counts()
        );
        let files: BTreeSet<&str> = legacy.iter().map(|d| d["file"].as_str().unwrap()).collect();
        assert_eq!(files.len() as u64, concepts, "{}", dir.display());
        for d in &legacy {
            assert_eq!(d["severity"], "info");
            assert_eq!(d["source"], "core.lint");
            assert_eq!(d["message"], "legacy `timestamp` used as `generated.at`");
        }
        assert_eq!(r.summary("conformance_errors"), 0, "{}", dir.display());
    }
}

#[test]
fn okfm_mesh_bundles_report_index_frontmatter_without_crashing() {
    let Some(c) = corpora() else { return };
    let mesh = c.join("okfm-mesh");
    let mut bundles = subdirs(&mesh.join(".okfm"));
    assert!(!bundles.is_empty());
    bundles.push(mesh.join("examples/warehouse/knowledge"));
    for dir in bundles {
        let r = validate(&dir);
        assert_eq!(r.code, 2, "{}: {:?}", dir.display(), r.code_counts());
        let idx = r.with_code("index-frontmatter");
        assert!(!idx.is_empty(), "{}: {:?}", dir.display(), r.code_counts());
        for d in &idx {
            assert_eq!(d["source"], "core.conformance");
            assert_eq!(d["severity"], "error");
            assert!(d["file"].as_str().unwrap().ends_with("index.md"), "{d}");
        }
        assert!(r.summary("conformance_errors") >= idx.len() as u64);
        assert!(r.summary("concepts") > 0, "{}", dir.display());
    }
}

#[test]
fn databricks_subset_is_large_untyped_and_broken_but_finishes() {
    let Some(c) = corpora() else { return };
    let r = validate(&c.join("databricks-okf-subset"));
    assert_eq!(r.code, 2);
    assert_eq!(r.summary("concepts"), 840);
    let untyped = r.with_code("type-missing");
    assert_eq!(untyped.len(), 316, "{:?}", r.code_counts());
    for d in &untyped {
        assert_eq!(d["source"], "core.conformance");
        assert_eq!(d["severity"], "error");
        assert!(
            d["file"].as_str().unwrap().starts_with("references/"),
            "untyped references pages: {d}"
        );
    }
    assert_eq!(r.summary("conformance_errors"), 316);
    let broken = r.with_code("broken-links");
    assert!(
        broken.len() >= 1000,
        "thousands of broken links, got {}",
        broken.len()
    );
    assert!(broken.iter().all(|d| d["severity"] == "warning"));
}

/// Every corpus bundle: known codes only, summary counts that match the
/// diagnostics, sorted output, and identical reports on a second run.
#[test]
fn every_corpus_report_is_consistent_and_deterministic() {
    let Some(c) = corpora() else { return };
    let mut bundles = vec![];
    for v in ["v0.1", "v0.2"] {
        bundles.extend(subdirs(&c.join("google-okf-samples").join(v)));
    }
    bundles.extend(subdirs(&c.join("okfm-mesh/.okfm")));
    bundles.push(c.join("okfm-mesh/examples/warehouse/knowledge"));
    bundles.push(c.join("databricks-okf-subset"));
    for dir in bundles {
        let r = validate(&dir);
        let mut count: BTreeMap<(&str, &str), u64> = BTreeMap::new();
        for d in r.diags() {
            let code = d["code"].as_str().unwrap();
            assert!(known_code(code), "{}: unknown code {code}", dir.display());
            *count
                .entry((
                    d["source"].as_str().unwrap(),
                    d["severity"].as_str().unwrap(),
                ))
                .or_insert(0) += 1;
        }
        let get = |k: (&str, &str)| count.get(&k).copied().unwrap_or(0);
        assert_eq!(
            r.summary("conformance_errors"),
            get(("core.conformance", "error"))
        );
        assert_eq!(r.summary("lint_errors"), get(("core.lint", "error")));
        assert_eq!(r.summary("lint_warnings"), get(("core.lint", "warning")));
        assert_eq!(r.summary("lint_info"), get(("core.lint", "info")));
        assert_eq!(r.summary("profile_errors"), 0, "profile = \"none\"");
        assert!(r.json["profile"].is_null());
        let key = |d: &Value| {
            (
                d["file"].as_str().unwrap().to_string(),
                d.get("range").map(|x| x["offset"].as_u64().unwrap()),
                d["code"].as_str().unwrap().to_string(),
            )
        };
        for w in r.diags().windows(2) {
            assert!(key(&w[0]) <= key(&w[1]), "{}: unsorted", dir.display());
        }
        let again = validate(&dir);
        assert!(
            again.stdout == r.stdout,
            "{}: two runs differ",
            dir.display()
        );
    }
}
