//! End-to-end tests of the `okfit` binary: exit codes, output formats,
//! config discovery, the bundle walk, the git tier of
//! `generated-at-drift`, and the `stale`, `graph` and `query` commands.
//!
//! Every run goes through the real binary with a controlled environment:
//! the environment is cleared, `HOME` and `XDG_CONFIG_HOME` point into a
//! temporary directory (so no user config leaks in), `OKFIT_NOW` is fixed,
//! and stdout/stderr are pipes (so no colour). Contract: reference
//! `okfit.md` §1.2, §2, §7.6, §7.7, §10, §11.

mod common;

use serde_json::Value;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// The `now` every run uses unless a test says otherwise.
const NOW: &str = "2026-03-01T00:00:00Z";
/// The CLI's version.
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// A run that takes longer than this is treated as a hang (not a timing
/// assertion: the walk tests need a bound so that a loop fails the test
/// instead of wedging the suite).
const HANG: Duration = Duration::from_secs(300);

// ------------------------------------------------------------------------
// Harness
// ------------------------------------------------------------------------

/// What one run of the binary produced.
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Out {
    /// stdout parsed as exactly one JSON document.
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout).unwrap_or_else(|e| {
            panic!(
                "stdout is not exactly one JSON document ({e})\nstdout:\n{}\nstderr:\n{}",
                self.stdout, self.stderr
            )
        })
    }

    fn stderr_lines(&self) -> Vec<&str> {
        self.stderr.lines().collect()
    }

    fn stdout_lines(&self) -> Vec<&str> {
        self.stdout.lines().collect()
    }

    #[track_caller]
    fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code, code,
            "unexpected exit code\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
}

/// A temporary directory with `home/` and `xdg/` for the environment, and
/// room for projects. Its path is canonical, so expected paths compare
/// with what the binary prints.
type Sandbox = common::Dir;

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox::with_prefix("okfit-cli-")
    }

    fn home(&self) -> PathBuf {
        self.root.join("home")
    }

    fn xdg(&self) -> PathBuf {
        self.root.join("xdg")
    }

    fn mkdir(&self, rel: &str) -> PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(&p).unwrap();
        p
    }

    fn command(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_okfit"));
        c.current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.home())
            .env("XDG_CONFIG_HOME", self.xdg())
            .env("OKFIT_NOW", NOW)
            .env("LC_ALL", "C")
            .args(args);
        c
    }

    fn run(&self, cwd: &Path, args: &[&str]) -> Out {
        finish(self.command(cwd, args))
    }

    fn run_env(&self, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
        let mut c = self.command(cwd, args);
        for (k, v) in env {
            c.env(k, v);
        }
        finish(c)
    }
}

/// Runs a command to completion with piped output, failing on a hang.
fn finish(cmd: Command) -> Out {
    let out = common::run(cmd, None, HANG);
    Out {
        code: out.code,
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: out.stderr,
    }
}

/// Runs a command whose stdout is already set, capturing stderr only.
fn finish_keeping_stdout(mut cmd: Command) -> Out {
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    let out = cmd.output().expect("spawn okfit");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::new(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A fixture bundle under `tests/fixtures/` (canonical path).
fn fixture(name: &str) -> PathBuf {
    let p = common::fixture("", name);
    std::fs::canonicalize(&p).unwrap_or_else(|e| panic!("fixture {}: {e}", p.display()))
}

fn repo_root() -> PathBuf {
    std::fs::canonicalize(Path::new(env!("CARGO_MANIFEST_DIR")).join("..")).unwrap()
}

fn keys(v: &Value) -> Vec<&str> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .map(String::as_str)
        .collect()
}

fn diags(v: &Value) -> &Vec<Value> {
    v["diagnostics"].as_array().expect("diagnostics array")
}

fn codes(v: &Value) -> Vec<&str> {
    diags(v)
        .iter()
        .map(|d| d["code"].as_str().unwrap())
        .collect()
}

fn with_code<'a>(v: &'a Value, code: &str) -> Vec<&'a Value> {
    diags(v).iter().filter(|d| d["code"] == code).collect()
}

/// The human line the contract (§7.7) derives from a JSON diagnostic.
fn human_line(d: &Value) -> String {
    let file = match d["file"].as_str().unwrap() {
        "" => "(bundle)",
        f => f,
    };
    let sev = d["severity"].as_str().unwrap();
    let code = d["code"].as_str().unwrap();
    let msg = d["message"].as_str().unwrap();
    match d.get("range") {
        Some(r) => format!(
            "{file}:{}:{} {sev} {code} {msg}",
            r["line"].as_u64().unwrap() + 1,
            r["character"].as_u64().unwrap() + 1
        ),
        None => format!("{file} {sev} {code} {msg}"),
    }
}

fn root_of(v: &Value) -> PathBuf {
    PathBuf::from(v["root"].as_str().expect("root"))
}

const NONE_PROFILE: &str = "[bundle]\nprofile = \"none\"\n";

fn note(title: &str, body: &str) -> String {
    format!("---\ntype: Note\ntitle: {title}\ndescription: {title}.\n---\n\n# {title}\n\n{body}\n")
}

// ------------------------------------------------------------------------
// Version, help and usage errors
// ------------------------------------------------------------------------

#[test]
fn version_prints_the_version_line() {
    let sb = Sandbox::new();
    for flag in ["--version", "-V"] {
        let out = sb.run(&sb.root, &[flag]);
        out.expect_code(0);
        let line = out.stdout.trim_end_matches('\n');
        assert!(!line.contains('\n'), "one line: {line:?}");
        let prefix = format!("okfit {VERSION} (engine ");
        assert!(line.starts_with(&prefix), "{line:?}");
        assert!(line.ends_with(", okf 0.2, config-schema 1.0)"), "{line:?}");
        // The engine version is the one the JSON envelope stamps.
        let clean = sb.run(&fixture("clean"), &["validate", "--format", "json"]);
        let engine = clean.json()["engine_version"].as_str().unwrap().to_string();
        assert_eq!(
            line,
            format!("okfit {VERSION} (engine {engine}, okf 0.2, config-schema 1.0)")
        );
        assert_eq!(out.stderr, "");
    }
}

#[test]
fn bare_okfit_prints_help_and_exits_0() {
    let sb = Sandbox::new();
    let out = sb.run(&sb.root, &[]);
    out.expect_code(0);
    for cmd in ["validate", "lint", "stale", "graph", "query"] {
        assert!(
            out.stdout.contains(cmd),
            "help lists {cmd}:\n{}",
            out.stdout
        );
    }
    assert!(out.stdout.contains("Usage:"), "{}", out.stdout);
    let help = sb.run(&sb.root, &["--help"]);
    help.expect_code(0);
    assert!(help.stdout.contains("Usage:"));
}

#[test]
fn usage_errors_exit_64_with_one_error_line_and_empty_stdout() {
    let sb = Sandbox::new();
    let cases: &[&[&str]] = &[
        &["bogus"],
        &["--bogus"],
        &["validate", "--bogus"],
        &["validate", "--format", "xml"],
        &["validate", "a", "b"],
        &["lint", "--format", "mermaid"],
        &["stale", "--format", "sarif"],
        &["graph", "--format", "human"],
        &["query", "list", "--limit", "many"],
        &["query", "bogus"],
    ];
    for args in cases {
        let out = sb.run(&sb.root, args);
        assert_eq!(out.code, 64, "okfit {args:?}: {}", out.stderr);
        assert_eq!(out.stdout, "", "okfit {args:?}: stdout must be empty");
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "okfit {args:?}: one stderr line: {lines:?}");
        assert!(lines[0].starts_with("error: "), "okfit {args:?}: {lines:?}");
    }
}

/// Output nobody reads any more (`okfit validate | head`) ends the run
/// quietly with code 0, as Unix tools stop, and output that cannot be
/// written (a full disk) is one error line and code 3; never a panic.
#[test]
fn closed_or_full_stdout_is_handled_without_a_panic() {
    let sb = Sandbox::new();
    let bundle = fixture("lint-error");
    let cases: &[&[&str]] = &[
        &["validate", "--format", "json"],
        &["validate", "--format", "sarif"],
        &["validate"],
        &["graph"],
    ];
    for args in cases {
        let mut c = sb.command(&bundle, args);
        c.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().expect("spawn okfit");
        // The reader goes away before okfit writes a byte.
        drop(child.stdout.take());
        let mut stderr = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut stderr)
            .unwrap();
        let status = child.wait().unwrap();
        assert_eq!(status.code(), Some(0), "okfit {args:?}: {stderr}");
        assert!(
            !stderr.contains("panicked") && !stderr.contains("error"),
            "okfit {args:?} with its reader gone: {stderr}"
        );

        let full = std::fs::OpenOptions::new().write(true).open("/dev/full");
        let Ok(full) = full else {
            continue;
        };
        let mut c = sb.command(&bundle, args);
        c.stdout(full);
        let out = finish_keeping_stdout(c);
        assert_eq!(out.code, 3, "okfit {args:?} into /dev/full: {}", out.stderr);
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "okfit {args:?} into /dev/full: {lines:?}");
        assert!(lines[0].starts_with("error: "), "{lines:?}");
    }
}

#[test]
fn missing_required_argument_is_named_in_the_error() {
    // `okfit query get` without an id: the one error line must say what is
    // missing (SPEC §9: bad input always gets a clear error).
    let sb = Sandbox::new();
    let out = sb.run(&sb.root, &["query", "get"]);
    out.expect_code(64);
    assert_eq!(out.stdout, "");
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("error: "), "{lines:?}");
    let names_id = lines[0]
        .split(|c: char| !c.is_alphanumeric())
        .any(|w| w.eq_ignore_ascii_case("id"));
    assert!(
        names_id,
        "the error names the missing <ID> argument: {:?}",
        lines[0]
    );
}

#[test]
fn missing_subcommand_is_explained() {
    // `okfit query` alone: either help (exit 0, like bare `okfit`) or a
    // one-line usage error that says a subcommand is needed.
    let sb = Sandbox::new();
    let out = sb.run(&sb.root, &["query"]);
    match out.code {
        0 => {
            for s in ["list", "get", "neighbors"] {
                assert!(out.stdout.contains(s), "{}", out.stdout);
            }
        }
        64 => {
            assert_eq!(out.stdout, "");
            let lines = out.stderr_lines();
            assert_eq!(lines.len(), 1, "{lines:?}");
            let msg = lines[0].strip_prefix("error: ").expect("error: prefix");
            assert!(
                msg.starts_with(|c: char| !c.is_uppercase()),
                "okfit's messages are lowercase (§7.7): {msg:?}"
            );
            assert!(
                msg.contains("subcommand") || msg.contains("list"),
                "the error says a subcommand is needed: {msg:?}"
            );
        }
        c => panic!("okfit query exits {c}: {}", out.stderr),
    }
}

// ------------------------------------------------------------------------
// Exit codes
// ------------------------------------------------------------------------

#[test]
fn clean_bundle_exits_0() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let out = sb.run(&dir, &["validate"]);
    out.expect_code(0);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr_lines(),
        vec!["0 errors, 0 warnings, 0 info in 3 concepts (okf)"]
    );
    let j = sb.run(&dir, &["validate", "--format", "json"]);
    j.expect_code(0);
    let v = j.json();
    assert_eq!(v["exit_code"], 0);
    assert_eq!(diags(&v).len(), 0, "{v}");
    assert_eq!(v["summary"]["concepts"], 3);
}

#[test]
fn lint_error_exits_1() {
    let sb = Sandbox::new();
    let dir = fixture("lint-error");
    let out = sb.run(&dir, &["validate"]);
    out.expect_code(1);
    assert_eq!(
        out.stdout_lines(),
        vec!["widget.md:2:7 error unknown-type Type \"Widget\" is not declared in [types]"]
    );
    let v = sb.run(&dir, &["validate", "--format", "json"]).json();
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["summary"]["lint_errors"], 1);
    assert_eq!(v["summary"]["conformance_errors"], 0);
}

#[test]
fn conformance_error_exits_2() {
    let sb = Sandbox::new();
    let dir = fixture("conformance-error");
    let out = sb.run(&dir, &["validate"]);
    out.expect_code(2);
    assert_eq!(
        out.stdout_lines(),
        vec!["plain.md error frontmatter-missing concept files must start with a --- frontmatter block"]
    );
    let v = sb.run(&dir, &["validate", "--format", "json"]).json();
    assert_eq!(v["exit_code"], 2);
    assert_eq!(v["summary"]["conformance_errors"], 1);
    assert_eq!(diags(&v)[0]["source"], "core.conformance");
    assert_eq!(diags(&v)[0]["severity"], "error");
}

#[test]
fn profile_error_exits_1() {
    // The default profile (software-project) expects a Project concept.
    let sb = Sandbox::new();
    sb.write("p/okfit.toml", "[bundle]\npath = \"okf\"\n");
    sb.write(
        "p/okf/c.md",
        "---\ntype: Convention\ntitle: C\ndescription: A rule.\nstatus: stable\n---\n\n# C\n",
    );
    sb.write("p/okf/index.md", "# Convention\n\n* [C](c.md) - A rule.\n");
    let out = sb.run(&sb.path("p"), &["validate", "--format", "json"]);
    out.expect_code(1);
    let v = out.json();
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["summary"]["profile_errors"], 1);
    let d = with_code(&v, "project-missing");
    assert_eq!(d.len(), 1, "{v}");
    assert_eq!(d[0]["source"], "profile");
    assert_eq!(d[0]["file"], "");
    assert_eq!(
        d[0]["message"],
        "No Project concept in the bundle; software-project expects exactly one at the bundle root (project.md)"
    );
    let human = sb.run(&sb.path("p"), &["validate"]);
    human.expect_code(1);
    assert_eq!(
        human.stdout_lines(),
        vec!["(bundle) error project-missing No Project concept in the bundle; software-project expects exactly one at the bundle root (project.md)"]
    );
    assert_eq!(
        human.stderr_lines(),
        vec!["1 errors, 0 warnings, 0 info in 1 concepts (okf)"]
    );
}

#[test]
fn missing_bundle_root_exits_3() {
    let sb = Sandbox::new();
    let proj = sb.path("nowhere");
    let out = sb.run(&sb.root, &["validate", proj.to_str().unwrap()]);
    out.expect_code(3);
    assert_eq!(out.stdout, "");
    let expected = format!(
        "error: bundle root \"{}\" is not a directory",
        proj.join("okf").display()
    );
    assert_eq!(out.stderr_lines(), vec![expected.as_str()]);

    // A file where the bundle root should be is not a directory either.
    sb.write("filer/okfit.toml", NONE_PROFILE);
    sb.write("filer/okf", "not a directory\n");
    let out = sb.run(&sb.path("filer"), &["validate"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "");
    let expected = format!(
        "error: bundle root \"{}\" is not a directory",
        sb.path("filer/okf").display()
    );
    assert_eq!(out.stderr_lines(), vec![expected.as_str()]);
}

#[test]
fn missing_config_file_exits_3() {
    let sb = Sandbox::new();
    // Relative --config: the message carries the absolute path.
    let out = sb.run(&sb.root, &["validate", "--config", "nope.toml"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "");
    let expected = format!(
        "error: config path not found: {}",
        sb.path("nope.toml").display()
    );
    assert_eq!(out.stderr_lines(), vec![expected.as_str()]);
}

#[test]
fn malformed_config_exits_3() {
    let sb = Sandbox::new();
    let cfg = sb.write("proj/okfit.toml", "[bundle\npath = \"okf\"\n");
    sb.mkdir("proj/okf");
    let out = sb.run(&sb.path("proj"), &["validate"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "");
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "one line: {lines:?}");
    let rel = "error: malformed config okfit.toml: ";
    let abs = format!("error: malformed config {}: ", cfg.display());
    assert!(
        lines[0].starts_with(&abs) || lines[0].starts_with(rel),
        "{lines:?}"
    );
    assert!(lines[0].len() > abs.len(), "a detail follows: {lines:?}");
}

#[test]
fn bad_now_exits_64() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    for bad in ["yesterday", "2026-13-45T00:00:00Z", ""] {
        let out = sb.run(&dir, &["validate", "--now", bad]);
        out.expect_code(64);
        assert_eq!(out.stdout, "");
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].starts_with("error: --now "), "{lines:?}");
    }
    let out = sb.run(&dir, &["stale", "--now", "soon"]);
    out.expect_code(64);
    // A bad OKFIT_NOW is a usage error too, and names the variable.
    let out = sb.run_env(&dir, &["validate"], &[("OKFIT_NOW", "garbage")]);
    out.expect_code(64);
    assert_eq!(out.stdout, "");
    let lines = out.stderr_lines();
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert!(lines[0].starts_with("error: OKFIT_NOW "), "{lines:?}");
}

#[test]
fn bad_now_under_json_keeps_stdout_consistent_with_the_exit_code() {
    // A usage error exits 64. Under --format json, stdout is either empty
    // or an envelope whose exit_code is the process's exit code.
    let sb = Sandbox::new();
    let out = sb.run(
        &fixture("clean"),
        &["validate", "--format", "json", "--now", "yesterday"],
    );
    out.expect_code(64);
    if !out.stdout.trim().is_empty() {
        let v = out.json();
        assert_eq!(
            v["exit_code"], 64,
            "the envelope's exit_code must equal the process exit code: {v}"
        );
    }
}

#[test]
fn okfit_now_is_honoured() {
    // metrics/revenue has stale_after 2026-06-01; metrics/margin 2026-08-01.
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let before = sb
        .run_env(
            &dir,
            &["validate", "--format", "json"],
            &[("OKFIT_NOW", "2026-05-31T23:59:59Z")],
        )
        .json();
    assert!(with_code(&before, "stale").is_empty(), "{before}");
    let after = sb
        .run_env(
            &dir,
            &["validate", "--format", "json"],
            &[("OKFIT_NOW", "2026-07-01T00:00:00Z")],
        )
        .json();
    let stale = with_code(&after, "stale");
    assert_eq!(stale.len(), 1, "{after}");
    assert_eq!(stale[0]["file"], "metrics/revenue.md");
    assert_eq!(stale[0]["severity"], "info");
    assert_eq!(
        stale[0]["message"],
        "Concept is stale since 2026-06-01T00:00:00.000Z"
    );
    // The instant itself is stale (now >= stale_after).
    let at = sb
        .run_env(
            &dir,
            &["validate", "--format", "json"],
            &[("OKFIT_NOW", "2026-06-01T00:00:00Z")],
        )
        .json();
    assert_eq!(with_code(&at, "stale").len(), 1, "{at}");
    // --now wins over OKFIT_NOW.
    let flag = sb
        .run_env(
            &dir,
            &[
                "validate",
                "--format",
                "json",
                "--now",
                "2026-01-01T00:00:00Z",
            ],
            &[("OKFIT_NOW", "2026-09-01T00:00:00Z")],
        )
        .json();
    assert!(with_code(&flag, "stale").is_empty(), "{flag}");
    // stale honours OKFIT_NOW too.
    let s = sb
        .run_env(
            &dir,
            &["stale", "--format", "json"],
            &[("OKFIT_NOW", "2026-07-01T00:00:00Z")],
        )
        .json();
    assert_eq!(s["as_of"], "2026-07-01T00:00:00.000Z");
    assert_eq!(s["summary"]["stale"], 1);
}

// ------------------------------------------------------------------------
// --format json
// ------------------------------------------------------------------------

#[test]
fn json_envelope_has_the_contract_keys_in_order() {
    let sb = Sandbox::new();
    let dir = fixture("mixed");
    let out = sb.run(
        &dir,
        &[
            "validate",
            "--format",
            "json",
            "--now",
            "2026-09-01T00:00:00Z",
        ],
    );
    let v = out.json();
    assert_eq!(
        keys(&v),
        vec![
            "schema",
            "okfit_version",
            "engine_version",
            "producer",
            "distribution",
            "okf_version",
            "root",
            "profile",
            "exit_code",
            "summary",
            "diagnostics"
        ]
    );
    assert_eq!(v["schema"], 1);
    assert_eq!(v["okfit_version"], VERSION);
    assert!(v["engine_version"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(v["producer"], "okfit");
    assert_eq!(v["distribution"], Value::Null);
    assert_eq!(v["okf_version"], "0.2");
    assert_eq!(root_of(&v), dir.join("okf"));
    assert!(root_of(&v).is_absolute());
    assert_eq!(v["profile"], Value::Null, "profile = \"none\" ⇒ null");
    assert_eq!(v["exit_code"], out.code);
    assert_eq!(out.code, 2);
    assert_eq!(
        keys(&v["summary"]),
        vec![
            "conformance_errors",
            "lint_errors",
            "lint_warnings",
            "lint_info",
            "profile_errors",
            "concepts"
        ]
    );
    let s = &v["summary"];
    assert_eq!(s["conformance_errors"], 1);
    assert_eq!(s["lint_errors"], 1);
    assert_eq!(s["lint_warnings"], 3);
    assert_eq!(s["lint_info"], 1);
    assert_eq!(s["profile_errors"], 0);
    assert_eq!(s["concepts"], 3);
    // `range` is omitted, never null.
    assert!(!out.stdout.contains("\"range\":null"), "{}", out.stdout);
    let mut ranged = 0;
    for d in diags(&v) {
        let k = keys(d);
        match d.get("range") {
            Some(r) => {
                ranged += 1;
                assert_eq!(
                    k,
                    vec!["source", "file", "code", "severity", "message", "range"]
                );
                assert_eq!(keys(r), vec!["offset", "length", "line", "character"]);
            }
            None => assert_eq!(k, vec!["source", "file", "code", "severity", "message"]),
        }
        assert!(
            ["core.conformance", "core.lint", "profile"].contains(&d["source"].as_str().unwrap()),
            "{d}"
        );
        assert!(
            ["error", "warning", "info"].contains(&d["severity"].as_str().unwrap()),
            "{d}"
        );
    }
    assert!(ranged > 0 && ranged < diags(&v).len());
    // One document on stdout, nothing else.
    assert_eq!(out.stdout.trim_end().lines().count(), 1);
}

#[test]
fn json_diagnostics_are_complete_and_sorted() {
    let sb = Sandbox::new();
    let v = sb
        .run(
            &fixture("mixed"),
            &[
                "validate",
                "--format",
                "json",
                "--now",
                "2026-09-01T00:00:00Z",
            ],
        )
        .json();
    let got: Vec<(&str, &str, &str, &str)> = diags(&v)
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap(),
                d["code"].as_str().unwrap(),
                d["severity"].as_str().unwrap(),
                d["source"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            ("", "config-unknown-key", "warning", "core.lint"),
            ("good.md", "stale", "info", "core.lint"),
            ("good.md", "broken-links", "warning", "core.lint"),
            ("notes/index.md", "missing-index", "warning", "core.lint"),
            (
                "notes/plain.md",
                "frontmatter-missing",
                "error",
                "core.conformance"
            ),
            ("widget.md", "unknown-type", "error", "core.lint"),
        ]
    );
    // §7.5: file, range-less before ranged, offset, code.
    let key = |d: &Value| {
        (
            d["file"].as_str().unwrap().to_string(),
            d.get("range").map(|r| r["offset"].as_u64().unwrap()),
            d["code"].as_str().unwrap().to_string(),
        )
    };
    for w in diags(&v).windows(2) {
        assert!(key(&w[0]) <= key(&w[1]), "{} before {}", w[0], w[1]);
    }
    let unknown = with_code(&v, "config-unknown-key");
    assert_eq!(
        unknown[0]["message"],
        "Unknown config key \"extra_setting\""
    );
    assert!(unknown[0].get("range").is_none());
}

#[test]
fn json_ranges_are_utf16_code_units() {
    let sb = Sandbox::new();
    sb.write("p/okfit.toml", NONE_PROFILE);
    sb.write("p/okf/index.md", "# Note\n\n* [a](a.md) - A.\n");
    sb.write(
        "p/okf/a.md",
        "---\ntype: Note\ntitle: Ünï\n---\n\n😀 é [x](gone.md)\n",
    );
    let v = sb
        .run(&sb.path("p"), &["validate", "--format", "json"])
        .json();
    let b = with_code(&v, "broken-links");
    assert_eq!(b.len(), 1, "{v}");
    // Before the link: 31 UTF-16 units of frontmatter and blank line, then
    // "😀 é " = 2 + 1 + 1 + 1 units.
    assert_eq!(
        b[0]["range"],
        serde_json::json!({"offset": 36, "length": 12, "line": 5, "character": 5})
    );
    let human = sb.run(&sb.path("p"), &["validate"]);
    assert!(
        human.stdout_lines().contains(
            &"a.md:6:6 warning broken-links Link target \"gone.md\" does not exist in the bundle"
        ),
        "{}",
        human.stdout
    );
}

#[test]
fn json_error_envelope_on_infrastructure_failure() {
    let sb = Sandbox::new();
    sb.write(
        "bad/okfit.toml",
        "[bundle]\nprofile = \"none\"\npth = \"x\"\n",
    );
    let missing = sb.path("nowhere");
    let cases: Vec<(Vec<String>, PathBuf, String)> = vec![
        (
            vec!["validate".into(), missing.display().to_string()],
            sb.root.clone(),
            format!(
                "bundle root \"{}\" is not a directory",
                missing.join("okf").display()
            ),
        ),
        (
            vec!["lint".into(), missing.display().to_string()],
            sb.root.clone(),
            format!(
                "bundle root \"{}\" is not a directory",
                missing.join("okf").display()
            ),
        ),
        (
            vec!["validate".into(), "--config".into(), "nope.toml".into()],
            sb.root.clone(),
            format!("config path not found: {}", sb.path("nope.toml").display()),
        ),
        (
            vec!["validate".into()],
            sb.path("bad"),
            String::new(), // malformed config: checked by prefix below
        ),
    ];
    for (args, cwd, message) in cases {
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        a.extend(["--format", "json"]);
        let out = sb.run(&cwd, &a);
        out.expect_code(3);
        let v = out.json();
        assert_eq!(
            keys(&v),
            vec![
                "schema",
                "okfit_version",
                "engine_version",
                "distribution",
                "exit_code",
                "error"
            ],
            "okfit {a:?}"
        );
        assert_eq!(v["schema"], 1);
        assert_eq!(v["okfit_version"], VERSION);
        assert_eq!(v["distribution"], Value::Null);
        assert_eq!(v["exit_code"], 3);
        assert_eq!(keys(&v["error"]), vec!["tag", "message"]);
        assert!(v["error"]["tag"].as_str().is_some_and(|t| !t.is_empty()));
        let msg = v["error"]["message"].as_str().unwrap();
        if message.is_empty() {
            assert!(
                msg.starts_with("malformed config ")
                    && msg.contains("unknown key \"pth\" in [bundle]"),
                "{msg}"
            );
        } else {
            assert_eq!(msg, message);
        }
    }
}

// ------------------------------------------------------------------------
// Human format
// ------------------------------------------------------------------------

#[test]
fn human_lines_follow_the_json_diagnostics() {
    let sb = Sandbox::new();
    let dir = fixture("mixed");
    let now = ["--now", "2026-09-01T00:00:00Z"];
    let v = sb
        .run(&dir, &["validate", "--format", "json", now[0], now[1]])
        .json();
    let out = sb.run(&dir, &["validate", now[0], now[1]]);
    out.expect_code(2);
    let expected: Vec<String> = diags(&v).iter().map(human_line).collect();
    assert_eq!(out.stdout_lines(), expected);
    assert!(!out.stdout.contains('\x1b'), "no colour when piped");
    // Spot checks of both shapes and the bundle-level file.
    assert_eq!(
        out.stdout_lines(),
        vec![
            "(bundle) warning config-unknown-key Unknown config key \"extra_setting\"",
            "good.md:5:14 info stale Concept is stale since 2026-06-01T00:00:00.000Z",
            "good.md:10:5 warning broken-links Link target \"gone.md\" does not exist in the bundle",
            "notes/index.md warning missing-index Directory \"notes\" has no index.md",
            "notes/plain.md error frontmatter-missing concept files must start with a --- frontmatter block",
            "widget.md:2:7 error unknown-type Type \"Widget\" is not declared in [types]",
        ]
    );
    // Summary on stderr, root relative to the working directory.
    assert_eq!(
        out.stderr_lines(),
        vec!["2 errors, 3 warnings, 1 info in 3 concepts (okf)"]
    );
}

#[test]
fn human_summary_shows_an_absolute_root_outside_the_working_directory() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let out = sb.run(&sb.root, &["validate", dir.to_str().unwrap()]);
    out.expect_code(0);
    let expected = format!(
        "0 errors, 0 warnings, 0 info in 3 concepts ({})",
        dir.join("okf").display()
    );
    assert_eq!(out.stderr_lines(), vec![expected.as_str()]);
}

// ------------------------------------------------------------------------
// --format sarif
// ------------------------------------------------------------------------

#[test]
fn sarif_has_one_result_per_diagnostic() {
    let sb = Sandbox::new();
    let dir = fixture("mixed");
    let now = ["--now", "2026-09-01T00:00:00Z"];
    let v = sb
        .run(&dir, &["validate", "--format", "json", now[0], now[1]])
        .json();
    let out = sb.run(&dir, &["validate", "--format", "sarif", now[0], now[1]]);
    out.expect_code(2);
    let s = out.json();
    assert_eq!(s["version"], "2.1.0");
    let run = &s["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "okfit");
    assert_eq!(run["tool"]["driver"]["version"], VERSION);
    let results = run["results"].as_array().expect("results");
    let ds = diags(&v);
    assert_eq!(results.len(), ds.len());
    let rules: Vec<&str> = run["tool"]["driver"]["rules"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    for (r, d) in results.iter().zip(ds) {
        assert_eq!(r["ruleId"], d["code"]);
        assert!(rules.contains(&r["ruleId"].as_str().unwrap()), "{r}");
        let level = match d["severity"].as_str().unwrap() {
            "error" => "error",
            "warning" => "warning",
            _ => "note",
        };
        assert_eq!(r["level"], level, "{r}");
        assert_eq!(r["message"]["text"], d["message"]);
        let region = &r["locations"][0]["physicalLocation"]["region"];
        match d.get("range") {
            Some(rg) => {
                assert_eq!(region["startLine"], rg["line"].as_u64().unwrap() + 1, "{r}");
                assert_eq!(
                    region["startColumn"],
                    rg["character"].as_u64().unwrap() + 1,
                    "{r}"
                );
            }
            None => assert!(region.is_null(), "{r}"),
        }
    }
    // The unknown-type finding at widget.md line 2, column 7.
    let ut = results
        .iter()
        .find(|r| r["ruleId"] == "unknown-type")
        .unwrap();
    assert_eq!(ut["level"], "error");
    assert_eq!(
        ut["locations"][0]["physicalLocation"]["region"]["startLine"],
        2
    );
    assert_eq!(
        ut["locations"][0]["physicalLocation"]["region"]["startColumn"],
        7
    );
    assert!(results.iter().any(|r| r["level"] == "note"));
    assert!(results.iter().any(|r| r["level"] == "warning"));
}

// ------------------------------------------------------------------------
// lint
// ------------------------------------------------------------------------

#[test]
fn lint_drops_conformance_and_never_exits_2() {
    let sb = Sandbox::new();
    let c = fixture("conformance-error");
    let out = sb.run(&c, &["lint"]);
    out.expect_code(0);
    assert_eq!(out.stdout, "");
    let v = sb.run(&c, &["lint", "--format", "json"]).json();
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["summary"]["conformance_errors"], 0);
    assert!(diags(&v).is_empty(), "{v}");

    let m = fixture("mixed");
    let now = ["--now", "2026-09-01T00:00:00Z"];
    let out = sb.run(&m, &["lint", "--format", "json", now[0], now[1]]);
    out.expect_code(1);
    let v = out.json();
    assert_eq!(v["exit_code"], 1);
    assert_eq!(v["summary"]["conformance_errors"], 0);
    assert_eq!(v["summary"]["lint_errors"], 1);
    assert!(diags(&v).iter().all(|d| d["source"] != "core.conformance"));
    assert!(!codes(&v).contains(&"frontmatter-missing"));
    let human = sb.run(&m, &["lint", now[0], now[1]]);
    human.expect_code(1);
    assert!(!human.stdout.contains("frontmatter-missing"));
    assert_eq!(
        human.stderr_lines(),
        vec!["1 errors, 3 warnings, 1 info in 3 concepts (okf)"]
    );
    let sarif = sb.run(&m, &["lint", "--format", "sarif", now[0], now[1]]);
    sarif.expect_code(1);
    assert!(!sarif.stdout.contains("frontmatter-missing"));
}

// ------------------------------------------------------------------------
// Config discovery and anchoring (§10.1–10.3)
// ------------------------------------------------------------------------

fn bundle_cfg(path: &str) -> String {
    format!("[bundle]\npath = \"{path}\"\nprofile = \"none\"\n")
}

fn root_for(sb: &Sandbox, cwd: &Path, args: &[&str]) -> PathBuf {
    let mut a = vec!["validate", "--format", "json"];
    a.extend_from_slice(args);
    let out = sb.run(cwd, &a);
    out.expect_code(0);
    root_of(&out.json())
}

#[test]
fn config_file_precedence_in_one_directory() {
    let sb = Sandbox::new();
    let p = sb.mkdir("proj");
    for d in ["a", "b", "c", "deeper"] {
        sb.mkdir(&format!("proj/{d}"));
    }
    sb.write("proj/.okfit.toml", bundle_cfg("a"));
    sb.write("proj/okfit.toml", bundle_cfg("b"));
    sb.write("proj/.config/okfit.toml", bundle_cfg("c"));
    assert_eq!(root_for(&sb, &p, &[]), p.join("a"), ".okfit.toml wins");
    std::fs::remove_file(p.join(".okfit.toml")).unwrap();
    assert_eq!(root_for(&sb, &p, &[]), p.join("b"), "okfit.toml next");
    std::fs::remove_file(p.join("okfit.toml")).unwrap();
    assert_eq!(
        root_for(&sb, &p, &[]),
        p.join("c"),
        ".config/okfit.toml last, anchored at the parent of .config"
    );
    // Found from below, it still anchors at the parent of .config.
    assert_eq!(root_for(&sb, &p.join("deeper"), &[]), p.join("c"));
}

#[test]
fn child_okfit_toml_beats_parent_dot_okfit_toml() {
    let sb = Sandbox::new();
    let parent = sb.mkdir("parent");
    sb.mkdir("parent/p");
    sb.mkdir("parent/child/c");
    sb.mkdir("parent/child/sub");
    sb.write("parent/.okfit.toml", bundle_cfg("p"));
    sb.write("parent/child/okfit.toml", bundle_cfg("c"));
    let child = parent.join("child");
    assert_eq!(root_for(&sb, &child, &[]), child.join("c"));
    assert_eq!(root_for(&sb, &parent, &[]), parent.join("p"));
    // Without [path], the project root is the directory of the config found.
    assert_eq!(root_for(&sb, &child.join("sub"), &[]), child.join("c"));
}

#[test]
fn path_argument_is_project_root_and_discovery_start() {
    let sb = Sandbox::new();
    let proj = sb.mkdir("proj");
    sb.mkdir("proj/kb");
    sb.mkdir("proj/sub/kb");
    sb.write("proj/okfit.toml", bundle_cfg("kb"));
    let elsewhere = sb.mkdir("elsewhere");
    // Discovery starts at [path] (not the working directory).
    assert_eq!(
        root_for(&sb, &elsewhere, &[proj.to_str().unwrap()]),
        proj.join("kb")
    );
    // [path] is the project root even when the config sits above it.
    assert_eq!(
        root_for(&sb, &elsewhere, &[proj.join("sub").to_str().unwrap()]),
        proj.join("sub/kb")
    );
    // A relative [path] resolves against the working directory.
    assert_eq!(root_for(&sb, &proj, &["sub"]), proj.join("sub/kb"));
    // The bundle root is never [path] itself.
    let out = sb.run(&elsewhere, &["validate", elsewhere.to_str().unwrap()]);
    out.expect_code(3);
    let expected = format!(
        "error: bundle root \"{}\" is not a directory",
        elsewhere.join("okf").display()
    );
    assert_eq!(out.stderr_lines(), vec![expected.as_str()]);
}

#[test]
fn explicit_config_anchors_at_its_directory() {
    let sb = Sandbox::new();
    let cfgdir = sb.mkdir("cfgdir");
    sb.mkdir("cfgdir/b");
    let cfg = sb.write("cfgdir/okfit.toml", bundle_cfg("b"));
    let other = sb.mkdir("other");
    sb.mkdir("other/d");
    let dotcfg = sb.write("other/.config/okfit.toml", bundle_cfg("d"));
    let proj = sb.mkdir("proj");
    sb.mkdir("proj/kb");
    sb.mkdir("proj/b");
    sb.write("proj/okfit.toml", bundle_cfg("kb"));

    let c = cfg.to_str().unwrap();
    assert_eq!(root_for(&sb, &sb.root, &["--config", c]), cfgdir.join("b"));
    assert_eq!(
        root_for(&sb, &sb.root, &["--config", dotcfg.to_str().unwrap()]),
        other.join("d"),
        "--config <dir>/.config/okfit.toml anchors at <dir>"
    );
    // --config replaces discovery: proj's own okfit.toml is not read.
    assert_eq!(root_for(&sb, &proj, &["--config", c]), cfgdir.join("b"));
    // A relative --config resolves against the working directory.
    assert_eq!(
        root_for(&sb, &sb.root, &["--config", "cfgdir/okfit.toml"]),
        cfgdir.join("b")
    );
    // [path] still wins as the project root.
    assert_eq!(
        root_for(&sb, &sb.root, &[proj.to_str().unwrap(), "--config", c]),
        proj.join("b")
    );
}

#[test]
fn xdg_config_is_used_when_no_project_config_exists() {
    let sb = Sandbox::new();
    sb.write(
        "xdg/okfit/config.toml",
        "[bundle]\npath = \"kb\"\nprofile = \"none\"\n",
    );
    let proj = sb.mkdir("proj");
    sb.mkdir("proj/kb");
    let elsewhere = sb.mkdir("elsewhere");
    // Project root = the path given.
    assert_eq!(
        root_for(&sb, &elsewhere, &[proj.to_str().unwrap()]),
        proj.join("kb")
    );
    // Without [path]: the working directory.
    assert_eq!(root_for(&sb, &proj, &[]), proj.join("kb"));
    // The file is config.toml, not okfit.toml.
    sb.write("xdg/okfit/okfit.toml", bundle_cfg("wrong"));
    assert_eq!(root_for(&sb, &proj, &[]), proj.join("kb"));
    // A project config shadows the XDG file.
    let own = sb.mkdir("own");
    sb.mkdir("own/mine");
    sb.write("own/okfit.toml", bundle_cfg("mine"));
    assert_eq!(root_for(&sb, &own, &[]), own.join("mine"));
}

#[test]
fn unknown_top_level_key_is_a_bundle_level_warning() {
    let sb = Sandbox::new();
    sb.write(
        "p/okfit.toml",
        "colour = \"blue\"\n[bundle]\nprofile = \"none\"\n",
    );
    sb.mkdir("p/okf");
    let out = sb.run(&sb.path("p"), &["validate", "--format", "json"]);
    out.expect_code(0);
    let v = out.json();
    let w = with_code(&v, "config-unknown-key");
    assert_eq!(w.len(), 1, "{v}");
    assert_eq!(w[0]["file"], "");
    assert_eq!(w[0]["severity"], "warning");
    assert_eq!(w[0]["source"], "core.lint");
    assert_eq!(w[0]["message"], "Unknown config key \"colour\"");
    assert!(w[0].get("range").is_none());
    let human = sb.run(&sb.path("p"), &["validate"]);
    assert_eq!(
        human.stdout_lines(),
        vec!["(bundle) warning config-unknown-key Unknown config key \"colour\""]
    );
}

#[test]
fn unknown_key_in_a_declared_table_exits_3() {
    let sb = Sandbox::new();
    for (cfg, detail) in [
        (
            "[bundle]\nprofile = \"none\"\npth = \"x\"\n",
            "unknown key \"pth\" in [bundle]",
        ),
        (
            "[bundle]\nprofile = \"none\"\n[lint]\nbroken_link = \"off\"\n",
            "unknown key \"broken_link\" in [lint]",
        ),
        (
            "[bundle]\nprofile = \"none\"\n[types.Note]\ndescrption = \"typo\"\n",
            "unknown key \"descrption\" in [types.Note]",
        ),
    ] {
        let f = sb.write("p/okfit.toml", cfg);
        sb.mkdir("p/okf");
        let out = sb.run(&sb.path("p"), &["validate"]);
        out.expect_code(3);
        assert_eq!(out.stdout, "");
        let lines = out.stderr_lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("error: malformed config "),
            "{lines:?}"
        );
        assert!(
            lines[0].contains(f.file_name().unwrap().to_str().unwrap()),
            "{lines:?}"
        );
        assert!(lines[0].ends_with(detail), "{lines:?}");
    }
}

#[test]
fn unknown_profile_warns_and_continues_with_defaults() {
    let sb = Sandbox::new();
    sb.write("p/okfit.toml", "[bundle]\nprofile = \"nope\"\n");
    sb.mkdir("p/okf");
    let out = sb.run(&sb.path("p"), &["validate", "--format", "json"]);
    out.expect_code(0);
    assert!(
        out.stderr_lines()
            .contains(&"warning: unknown profile \"nope\"; continuing with defaults"),
        "{}",
        out.stderr
    );
    assert_eq!(out.json()["profile"], Value::Null);
}

#[test]
fn okf_version_mismatch_warns() {
    let sb = Sandbox::new();
    sb.write(
        "p/okfit.toml",
        "okf_version = \"0.1\"\n[bundle]\nprofile = \"none\"\n",
    );
    sb.mkdir("p/okf");
    let out = sb.run(&sb.path("p"), &["validate", "--format", "json"]);
    out.expect_code(0);
    assert!(
        out.stderr_lines().contains(
            &"warning: okf_version \"0.1\" does not match this okfit's spec version \"0.2\"; continuing"
        ),
        "{}",
        out.stderr
    );
    assert_eq!(out.json()["okf_version"], "0.1");
}

#[test]
fn software_project_profile_is_named_in_the_envelope() {
    let sb = Sandbox::new();
    sb.write("p/okfit.toml", "[bundle]\npath = \"okf\"\n");
    sb.write(
        "p/okf/project.md",
        "---\ntype: Project\ntitle: P\ndescription: A project.\nstatus: stable\n---\n\n# P\n",
    );
    sb.write(
        "p/okf/index.md",
        "# Project\n\n* [P](project.md) - A project.\n",
    );
    let out = sb.run(&sb.path("p"), &["validate", "--format", "json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["profile"], "software-project");
    assert!(diags(&v).is_empty(), "{v}");
}

// ------------------------------------------------------------------------
// The walk
// ------------------------------------------------------------------------

#[cfg(unix)]
fn symlink(target: &str, link: &Path) {
    std::os::unix::fs::symlink(target, link).unwrap();
}

fn ids(v: &Value) -> Vec<String> {
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn walk_skips_dot_entries_and_node_modules() {
    let sb = Sandbox::new();
    sb.write("p/okfit.toml", NONE_PROFILE);
    sb.write("p/okf/index.md", "# Note\n\n* [Real](real.md) - Real.\n");
    sb.write("p/okf/real.md", note("Real", "Real."));
    // Each of these would be a conformance error if it were walked.
    let broken = "no frontmatter here\n";
    sb.write("p/okf/.hidden.md", broken);
    sb.write("p/okf/.drafts/draft.md", broken);
    sb.write("p/okf/node_modules/pkg/readme.md", broken);
    sb.write("p/okf/sub/node_modules/x.md", broken);
    sb.write("p/okf/.git/HEAD.md", broken);
    let out = sb.run(&sb.path("p"), &["validate", "--format", "json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(v["summary"]["concepts"], 1);
    assert!(diags(&v).is_empty(), "{v}");
    let list = sb
        .run(&sb.path("p"), &["query", "list", "--format", "json"])
        .json();
    assert_eq!(ids(&list), vec!["real"]);
}

#[cfg(unix)]
#[test]
fn walk_follows_symlinks_inside_the_root_only() {
    let sb = Sandbox::new();
    sb.write("p/okfit.toml", NONE_PROFILE);
    sb.write("p/okf/real.md", note("Real", "Real."));
    sb.write("p/okf/dir/inner.md", note("Inner", "Inner."));
    sb.write(
        "p/outside/secret.md",
        note("SECRET_OUTSIDE", "TOP_SECRET_BODY [x](nowhere.md)"),
    );
    sb.write(
        "p/outside/sub/deeper.md",
        note("SECRET_DEEP", "TOP_SECRET_BODY"),
    );
    symlink("real.md", &sb.path("p/okf/alias.md"));
    symlink("dir", &sb.path("p/okf/dirlink"));
    symlink("../outside/secret.md", &sb.path("p/okf/leak.md"));
    symlink("../outside", &sb.path("p/okf/leakdir"));
    let abs = sb.path("p/outside/secret.md");
    symlink(abs.to_str().unwrap(), &sb.path("p/okf/absleak.md"));
    symlink("missing-target.md", &sb.path("p/okf/dangling.md"));

    let dir = sb.path("p");
    let list = sb.run(&dir, &["query", "list", "--format", "json"]);
    list.expect_code(0);
    assert_eq!(ids(&list.json()), vec!["alias", "dir/inner", "real"]);
    for args in [
        vec!["validate", "--format", "json"],
        vec!["graph", "--format", "json"],
        vec!["query", "list", "--format", "json"],
        vec!["validate"],
    ] {
        let out = sb.run(&dir, &args);
        for needle in ["SECRET", "leak", "nowhere"] {
            assert!(
                !out.stdout.contains(needle) && !out.stderr.contains(needle),
                "okfit {args:?} shows {needle}:\n{}\n{}",
                out.stdout,
                out.stderr
            );
        }
    }
    let v = sb.run(&dir, &["validate", "--format", "json"]).json();
    assert_eq!(v["summary"]["concepts"], 3);
}

#[cfg(unix)]
#[test]
fn walk_survives_directory_symlink_loops() {
    let sb = Sandbox::new();
    sb.write("p/okfit.toml", NONE_PROFILE);
    sb.write("p/okf/a/x.md", note("X", "X."));
    symlink("..", &sb.path("p/okf/a/up"));
    symlink(".", &sb.path("p/okf/a/self"));
    symlink("a", &sb.path("p/okf/b"));
    symlink("../b", &sb.path("p/okf/a/back"));
    symlink("c2", &sb.path("p/okf/c1"));
    symlink("c1", &sb.path("p/okf/c2"));
    let out = sb.run(&sb.path("p"), &["validate", "--format", "json"]);
    out.expect_code(0);
    let v = out.json();
    assert!(v["summary"]["concepts"].as_u64().unwrap() >= 1, "{v}");
    let list = sb
        .run(&sb.path("p"), &["query", "list", "--format", "json"])
        .json();
    assert!(ids(&list).contains(&"a/x".to_string()), "{list}");
}

#[test]
fn walk_fails_past_256_levels() {
    let sb = Sandbox::new();
    sb.write("ok/okfit.toml", NONE_PROFILE);
    let mut rel = String::from("ok/okf");
    for _ in 0..256 {
        rel.push_str("/d");
    }
    sb.write(&format!("{rel}/leaf.txt"), "deep\n");
    // Exactly 256 levels below the root load.
    sb.run(&sb.path("ok"), &["validate"]).expect_code(0);

    sb.write("deep/okfit.toml", NONE_PROFILE);
    let mut rel = String::from("deep/okf/top");
    let mut at = String::from("top");
    for _ in 0..256 {
        rel.push_str("/d");
        at.push_str("/d");
    }
    sb.write(&format!("{rel}/leaf.txt"), "too deep\n");
    let out = sb.run(&sb.path("deep"), &["validate"]);
    out.expect_code(3);
    assert_eq!(out.stdout, "");
    let expected = format!(
        "error: bundle \"{}\" descends past 256 levels at \"{at}\"",
        sb.path("deep/okf").display()
    );
    assert_eq!(out.stderr_lines(), vec![expected.as_str()]);
    let j = sb.run(&sb.path("deep"), &["validate", "--format", "json"]);
    j.expect_code(3);
    let v = j.json();
    assert_eq!(v["exit_code"], 3);
    assert!(v["error"]["message"]
        .as_str()
        .unwrap()
        .contains("descends past 256 levels"));
}

#[cfg(unix)]
#[test]
fn walk_reports_unreadable_directories() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    sb.write("p/okfit.toml", NONE_PROFILE);
    sb.write("p/okf/index.md", "# Note\n\n* [Real](real.md) - Real.\n");
    sb.write("p/okf/real.md", note("Real", "Real."));
    sb.write("p/okf/locked/hidden.md", note("Hidden", "Hidden."));
    let locked = sb.path("p/okf/locked");
    std::fs::set_permissions(&locked, std::fs::Permissions::from_mode(0o000)).unwrap();
    struct Restore(PathBuf);
    impl Drop for Restore {
        fn drop(&mut self) {
            let _ = std::fs::set_permissions(&self.0, std::fs::Permissions::from_mode(0o755));
        }
    }
    let _restore = Restore(locked.clone());
    if std::fs::read_dir(&locked).is_ok() {
        eprintln!(
            "walk_reports_unreadable_directories: running as root (or with CAP_DAC_READ_SEARCH), \
             so a chmod 000 directory is still readable; skipping the walk-unreadable check"
        );
        return;
    }
    let out = sb.run(&sb.path("p"), &["validate", "--format", "json"]);
    out.expect_code(0);
    let v = out.json();
    let w = with_code(&v, "walk-unreadable");
    assert_eq!(w.len(), 1, "{v}");
    assert_eq!(w[0]["file"], "locked");
    assert_eq!(w[0]["severity"], "warning");
    assert_eq!(
        w[0]["message"],
        "directory \"locked\" could not be read; its files are not part of the bundle"
    );
    assert!(w[0].get("range").is_none());
    assert_eq!(v["summary"]["concepts"], 1);
}

// ------------------------------------------------------------------------
// The git tier of generated-at-drift (§8.3)
// ------------------------------------------------------------------------

fn have_git() -> bool {
    Command::new("git")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// Runs git in `dir` with a clean, deterministic environment.
fn git(sb: &Sandbox, dir: &Path, author_date: &str, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", sb.home())
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.invalid")
        .env("GIT_AUTHOR_DATE", author_date)
        // The committer date is later than the author date: the lint must
        // use the author date.
        .env("GIT_COMMITTER_DATE", "2026-08-30T12:00:00Z")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
            "-c",
            "core.autocrlf=false",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn commit_all(sb: &Sandbox, dir: &Path, date: &str, msg: &str) -> String {
    git(sb, dir, date, &["add", "-A"]);
    git(sb, dir, date, &["commit", "-q", "-m", msg]);
    git(sb, dir, date, &["rev-parse", "HEAD"])
        .trim()
        .to_string()
}

fn generated_concept(at: &str, title: &str, body: &str) -> String {
    format!(
        "---\ntype: Note\ntitle: {title}\ndescription: A generated note.\ngenerated: {{by: okfit/test, at: {at}}}\n---\n\n# {title}\n\n{body}\n"
    )
}

fn drift(sb: &Sandbox, dir: &Path, extra: &[&str]) -> Vec<Value> {
    let mut args = vec!["validate", "--format", "json"];
    args.extend_from_slice(extra);
    let out = sb.run(dir, &args);
    out.expect_code(0);
    let v = out.json();
    with_code(&v, "generated-at-drift")
        .into_iter()
        .cloned()
        .collect()
}

/// A git repository at `<sandbox>/repo` with the project at its top and
/// the bundle in `okf/`.
fn git_project(sb: &Sandbox) -> PathBuf {
    let dir = sb.mkdir("repo");
    sb.write("repo/okfit.toml", NONE_PROFILE);
    sb.write(
        "repo/okf/index.md",
        "# Note\n\n* [Gen](gen.md) - A generated note.\n",
    );
    git(sb, &dir, "2026-01-01T00:00:00Z", &["init", "-q"]);
    dir
}

#[test]
fn git_drift_reports_a_recorded_at_that_differs_from_the_last_body_change() {
    if !have_git() {
        eprintln!("git not found; skipping");
        return;
    }
    let sb = Sandbox::new();
    let dir = git_project(&sb);
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2020-01-01T00:00:00Z", "Gen", "Body one."),
    );
    let sha = commit_all(&sb, &dir, "2026-03-04T05:06:07Z", "one");
    let d = drift(&sb, &dir, &[]);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0]["file"], "gen.md");
    assert_eq!(d[0]["severity"], "warning");
    assert_eq!(d[0]["source"], "core.lint");
    assert_eq!(
        d[0]["message"],
        format!(
            "generated.at is recorded; the last body change was 2026-03-04T05:06:07Z ({})",
            &sha[..7]
        )
    );
    assert!(d[0].get("range").is_none());
    // A missing `at` says so.
    sb.write(
        "repo/okf/noat.md",
        "---\ntype: Note\ntitle: N\ndescription: N.\ngenerated: {by: okfit/test}\n---\n\n# N\n",
    );
    let sha2 = commit_all(&sb, &dir, "2026-04-05T06:07:08Z", "two");
    let d = drift(&sb, &dir, &[]);
    let noat: Vec<_> = d.iter().filter(|x| x["file"] == "noat.md").collect();
    assert_eq!(noat.len(), 1, "{d:?}");
    assert_eq!(
        noat[0]["message"],
        format!(
            "generated.at is missing; the last body change was 2026-04-05T06:07:08Z ({})",
            &sha2[..7]
        )
    );
}

#[test]
fn git_drift_is_silent_when_at_equals_the_author_date() {
    if !have_git() {
        eprintln!("git not found; skipping");
        return;
    }
    let sb = Sandbox::new();
    let dir = git_project(&sb);
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2026-03-04T05:06:07Z", "Gen", "Body one."),
    );
    // The same instant written with another offset is still equal.
    sb.write(
        "repo/okf/offset.md",
        generated_concept("2026-03-04T07:06:07+02:00", "Offset", "Body."),
    );
    commit_all(&sb, &dir, "2026-03-04T05:06:07Z", "one");
    let d = drift(&sb, &dir, &[]);
    assert!(d.is_empty(), "{d:?}");
}

#[test]
fn git_drift_ignores_commits_that_only_edit_frontmatter() {
    if !have_git() {
        eprintln!("git not found; skipping");
        return;
    }
    let sb = Sandbox::new();
    let dir = git_project(&sb);
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2026-03-04T05:06:07Z", "Gen", "Body one."),
    );
    let first = commit_all(&sb, &dir, "2026-03-04T05:06:07Z", "one");
    // A frontmatter-only edit (title), committed later.
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2026-03-04T05:06:07Z", "Gen renamed", "Body one.")
            .replace("# Gen renamed", "# Gen"),
    );
    commit_all(&sb, &dir, "2026-05-06T07:08:09Z", "frontmatter only");
    assert!(
        drift(&sb, &dir, &[]).is_empty(),
        "derived date did not move"
    );
    // Recording the frontmatter commit's date is drift against the first.
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2026-05-06T07:08:09Z", "Gen renamed", "Body one.")
            .replace("# Gen renamed", "# Gen"),
    );
    commit_all(&sb, &dir, "2026-05-07T07:08:09Z", "restamp");
    let d = drift(&sb, &dir, &[]);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        d[0]["message"],
        format!(
            "generated.at is recorded; the last body change was 2026-03-04T05:06:07Z ({})",
            &first[..7]
        )
    );
    // A body edit moves the derived date.
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2026-05-06T07:08:09Z", "Gen renamed", "Body two.")
            .replace("# Gen renamed", "# Gen"),
    );
    let third = commit_all(&sb, &dir, "2026-06-07T08:09:10Z", "body");
    let d = drift(&sb, &dir, &[]);
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(
        d[0]["message"],
        format!(
            "generated.at is recorded; the last body change was 2026-06-07T08:09:10Z ({})",
            &third[..7]
        )
    );
}

#[test]
fn git_drift_walks_back_through_many_files_and_versions() {
    if !have_git() {
        eprintln!("git not found; skipping");
        return;
    }
    let sb = Sandbox::new();
    let dir = git_project(&sb);
    let stamped = |title: &str, body: &str| {
        generated_concept("2020-01-01T00:00:00Z", title, body).replace(&format!("# {title}"), "# G")
    };
    // Ten files whose body last changed in the first commit, then had
    // their frontmatter edited twice; a file deleted and added again; a
    // file whose body changed in the last commit.
    for i in 0..10 {
        sb.write(&format!("repo/okf/g{i}.md"), stamped("G", "Body one."));
    }
    sb.write("repo/okf/back.md", stamped("G", "Back."));
    sb.write("repo/okf/late.md", stamped("G", "Late one."));
    let first = commit_all(&sb, &dir, "2026-01-02T00:00:00Z", "one");
    for i in 0..10 {
        sb.write(&format!("repo/okf/g{i}.md"), stamped("G two", "Body one."));
    }
    std::fs::remove_file(sb.path("repo/okf/back.md")).unwrap();
    commit_all(&sb, &dir, "2026-02-03T00:00:00Z", "two");
    for i in 0..10 {
        sb.write(
            &format!("repo/okf/g{i}.md"),
            stamped("G three", "Body one."),
        );
    }
    sb.write("repo/okf/back.md", stamped("G", "Back."));
    let third = commit_all(&sb, &dir, "2026-03-04T00:00:00Z", "three");
    sb.write("repo/okf/late.md", stamped("G", "Late two."));
    let fourth = commit_all(&sb, &dir, "2026-04-05T00:00:00Z", "four");
    let d = drift(&sb, &dir, &[]);
    let message = |file: &str| {
        let m: Vec<_> = d.iter().filter(|x| x["file"] == file).collect();
        assert_eq!(m.len(), 1, "{file}: {d:?}");
        m[0]["message"].as_str().unwrap().to_string()
    };
    let said = |date: &str, sha: &str| {
        format!(
            "generated.at is recorded; the last body change was {date} ({})",
            &sha[..7]
        )
    };
    for i in 0..10 {
        assert_eq!(
            message(&format!("g{i}.md")),
            said("2026-01-02T00:00:00Z", &first)
        );
    }
    assert_eq!(message("back.md"), said("2026-03-04T00:00:00Z", &third));
    assert_eq!(message("late.md"), said("2026-04-05T00:00:00Z", &fourth));
    assert_eq!(d.len(), 12, "{d:?}");
}

#[test]
fn git_drift_is_skipped_with_skip_provenance() {
    if !have_git() {
        eprintln!("git not found; skipping");
        return;
    }
    let sb = Sandbox::new();
    let dir = git_project(&sb);
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2020-01-01T00:00:00Z", "Gen", "Body one."),
    );
    commit_all(&sb, &dir, "2026-03-04T05:06:07Z", "one");
    assert_eq!(drift(&sb, &dir, &[]).len(), 1);
    assert!(drift(&sb, &dir, &["--skip-provenance"]).is_empty());
    let lint = sb.run(&dir, &["lint", "--skip-provenance", "--format", "json"]);
    lint.expect_code(0);
    assert!(with_code(&lint.json(), "generated-at-drift").is_empty());
}

#[test]
fn git_drift_is_silent_outside_a_git_repository() {
    let sb = Sandbox::new();
    sb.write("p/okfit.toml", NONE_PROFILE);
    sb.write(
        "p/okf/gen.md",
        generated_concept("2020-01-01T00:00:00Z", "Gen", "Body one."),
    );
    assert!(drift(&sb, &sb.path("p"), &[]).is_empty());
}

#[test]
fn git_drift_is_silent_for_uncommitted_bodies() {
    if !have_git() {
        eprintln!("git not found; skipping");
        return;
    }
    let sb = Sandbox::new();
    let dir = git_project(&sb);
    // Unborn HEAD: nothing is committed yet.
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2020-01-01T00:00:00Z", "Gen", "Body one."),
    );
    assert!(drift(&sb, &dir, &[]).is_empty(), "unborn");
    commit_all(&sb, &dir, "2026-03-04T05:06:07Z", "one");
    assert_eq!(drift(&sb, &dir, &[]).len(), 1);
    // Dirty body: the worktree body differs from HEAD.
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2020-01-01T00:00:00Z", "Gen", "Body edited, not committed."),
    );
    assert!(drift(&sb, &dir, &[]).is_empty(), "dirty body");
    // A dirty frontmatter with a committed body still counts.
    sb.write(
        "repo/okf/gen.md",
        generated_concept("2020-01-01T00:00:00Z", "Gen retitled", "Body one.")
            .replace("# Gen retitled", "# Gen"),
    );
    assert_eq!(drift(&sb, &dir, &[]).len(), 1, "frontmatter-only change");
    // Untracked: a new file that was never committed.
    sb.write(
        "repo/okf/new.md",
        generated_concept("2020-01-01T00:00:00Z", "New", "New body."),
    );
    let d = drift(&sb, &dir, &[]);
    assert!(d.iter().all(|x| x["file"] != "new.md"), "{d:?}");
}

// ------------------------------------------------------------------------
// stale, graph, query
// ------------------------------------------------------------------------

const LATE: [&str; 2] = ["--now", "2026-09-01T00:00:00Z"];

#[test]
fn stale_lists_concepts_past_stale_after() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let out = sb.run(&dir, &["stale", LATE[0], LATE[1]]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_lines(),
        vec![
            "metrics/margin  2026-08-01T00:00:00.000Z  (31 days past)",
            "metrics/revenue  2026-06-01T00:00:00.000Z  (92 days past)",
        ]
    );
    assert_eq!(out.stderr_lines(), vec!["2 stale concepts of 3 in okf"]);
    let j = sb.run(&dir, &["stale", "--format", "json", LATE[0], LATE[1]]);
    j.expect_code(0);
    let v = j.json();
    assert_eq!(
        keys(&v),
        vec![
            "schema",
            "okfit_version",
            "engine_version",
            "producer",
            "distribution",
            "okf_version",
            "root",
            "profile",
            "as_of",
            "summary",
            "items"
        ]
    );
    assert_eq!(v["as_of"], "2026-09-01T00:00:00.000Z");
    assert_eq!(v["summary"], serde_json::json!({"concepts": 3, "stale": 2}));
    assert_eq!(
        v["items"],
        serde_json::json!([
            {"id": "metrics/margin", "stale_after": "2026-08-01T00:00:00.000Z", "days_past": 31},
            {"id": "metrics/revenue", "stale_after": "2026-06-01T00:00:00.000Z", "days_past": 92},
        ])
    );
    assert_eq!(root_of(&v), dir.join("okf"));
    // Nothing stale yet: empty report, exit 0.
    let early = sb.run(&dir, &["stale"]);
    early.expect_code(0);
    assert_eq!(early.stdout, "");
    assert_eq!(early.stderr_lines(), vec!["0 stale concepts of 3 in okf"]);
}

#[test]
fn graph_json_has_nodes_edges_and_fields_only_for_frontmatter_edges() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let out = sb.run(&dir, &["graph", "--format", "json"]);
    out.expect_code(0);
    let v = out.json();
    assert_eq!(
        keys(&v),
        vec![
            "schema",
            "okfit_version",
            "engine_version",
            "producer",
            "distribution",
            "okf_version",
            "root",
            "profile",
            "summary",
            "nodes",
            "edges"
        ]
    );
    assert_eq!(v["summary"], serde_json::json!({"nodes": 4, "edges": 5}));
    assert_eq!(
        v["nodes"],
        serde_json::json!([
            {"id": "metrics/margin", "kind": "concept"},
            {"id": "metrics/revenue", "kind": "concept"},
            {"id": "orders", "kind": "concept"},
            {"id": "schema.sql", "kind": "file"},
        ])
    );
    let edges = v["edges"].as_array().unwrap();
    assert_eq!(edges.len(), 5);
    for e in edges {
        match e["source"].as_str().unwrap() {
            "frontmatter" => {
                assert_eq!(keys(e), vec!["from", "to", "source", "field", "raw"]);
            }
            "body" => {
                assert_eq!(keys(e), vec!["from", "to", "source", "raw"]);
            }
            other => panic!("edge source {other}"),
        }
    }
    assert!(edges.contains(&serde_json::json!({
        "from": "metrics/revenue", "to": "orders", "source": "frontmatter",
        "field": "resource", "raw": "../orders.md"
    })));
    assert!(edges.contains(&serde_json::json!({
        "from": "orders", "to": "schema.sql", "source": "body", "raw": "schema.sql"
    })));
}

#[test]
fn graph_json_shows_missing_targets() {
    let sb = Sandbox::new();
    let v = sb
        .run(&fixture("mixed"), &["graph", "--format", "json"])
        .json();
    let nodes = v["nodes"].as_array().unwrap();
    assert!(
        nodes.contains(&serde_json::json!({"id": "gone.md", "kind": "missing"})),
        "{v}"
    );
}

#[test]
fn graph_mermaid_and_dot() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let m = sb.run(&dir, &["graph"]);
    m.expect_code(0);
    assert_eq!(
        m.stdout,
        "flowchart LR\n\
         \x20 n0[\"metrics/margin\"]\n\
         \x20 n1[\"metrics/revenue\"]\n\
         \x20 n2[\"orders\"]\n\
         \x20 n3([\"schema.sql\"])\n\
         \x20 n0 --> n1\n\
         \x20 n1 -->|resource| n2\n\
         \x20 n1 --> n2\n\
         \x20 n2 --> n1\n\
         \x20 n2 --> n3\n"
    );
    let explicit = sb.run(&dir, &["graph", "--format", "mermaid"]);
    assert_eq!(explicit.stdout, m.stdout);
    let d = sb.run(&dir, &["graph", "--format", "dot"]);
    d.expect_code(0);
    assert_eq!(
        d.stdout,
        "digraph okf {\n\
         \x20 rankdir=LR;\n\
         \x20 \"metrics/margin\" [shape=box];\n\
         \x20 \"metrics/revenue\" [shape=box];\n\
         \x20 \"orders\" [shape=box];\n\
         \x20 \"schema.sql\" [shape=note];\n\
         \x20 \"metrics/margin\" -> \"metrics/revenue\";\n\
         \x20 \"metrics/revenue\" -> \"orders\" [label=\"resource\"];\n\
         \x20 \"metrics/revenue\" -> \"orders\";\n\
         \x20 \"orders\" -> \"metrics/revenue\";\n\
         \x20 \"orders\" -> \"schema.sql\";\n\
         }\n"
    );
}

#[test]
fn graph_never_checks() {
    let sb = Sandbox::new();
    for f in ["conformance-error", "lint-error", "mixed"] {
        for fmt in ["mermaid", "dot", "json"] {
            sb.run(&fixture(f), &["graph", "--format", fmt])
                .expect_code(0);
        }
    }
}

#[test]
fn query_list_human_json_and_filters() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let out = sb.run(&dir, &["query", "list"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_lines(),
        vec![
            "metrics/margin  Metric  stable  Gross margin",
            "metrics/revenue  Metric  draft  Revenue",
            "orders  Table  stable  Orders",
        ]
    );
    assert_eq!(out.stderr_lines(), vec!["3 of 3 concepts"]);
    let j = sb.run(&dir, &["query", "list", "--format", "json"]);
    j.expect_code(0);
    let v = j.json();
    assert_eq!(
        keys(&v),
        vec![
            "schema",
            "okfit_version",
            "engine_version",
            "distribution",
            "total",
            "items"
        ]
    );
    assert_eq!(v["total"], 3);
    assert_eq!(
        v["items"][1],
        serde_json::json!({
            "id": "metrics/revenue", "type": "Metric", "title": "Revenue",
            "description": "Money recognised from orders.", "status": "draft",
            "tags": ["finance"], "path": "metrics/revenue.md"
        })
    );
    let q = |args: &[&str]| {
        let mut a = vec!["query", "list", "--format", "json"];
        a.extend_from_slice(args);
        let out = sb.run(&dir, &a);
        out.expect_code(0);
        let v = out.json();
        (ids(&v), v["total"].as_u64().unwrap())
    };
    assert_eq!(
        q(&["--type", "Metric"]).0,
        vec!["metrics/margin", "metrics/revenue"]
    );
    assert_eq!(q(&["--type", "Table"]).0, vec!["orders"]);
    assert_eq!(
        q(&["--type", "Metric", "--type", "Table"]).0.len(),
        3,
        "types OR"
    );
    assert_eq!(q(&["--tag", "sales"]).0, vec!["metrics/margin", "orders"]);
    assert_eq!(
        q(&["--tag", "sales", "--tag", "finance"]).0,
        vec!["metrics/margin", "orders"],
        "tags AND"
    );
    assert_eq!(
        q(&["--type", "Metric", "--tag", "sales"]).0,
        vec!["metrics/margin"]
    );
    assert_eq!(q(&["--status", "draft"]).0, vec!["metrics/revenue"]);
    assert_eq!(q(&["--status", "draft", "--status", "stable"]).0.len(), 3);
    assert_eq!(q(&["--verified"]).0, vec!["orders"]);
    assert_eq!(
        q(&["--unverified"]).0,
        vec!["metrics/margin", "metrics/revenue"]
    );
    assert_eq!(
        q(&["--limit", "1", "--offset", "1"]),
        (vec!["metrics/revenue".to_string()], 3)
    );
    let human = sb.run(&dir, &["query", "list", "--type", "Metric"]);
    assert_eq!(human.stderr_lines(), vec!["2 of 2 concepts"]);
}

#[test]
fn query_list_rejects_undeclared_vocabulary() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let out = sb.run(&dir, &["query", "list", "--type", "Nope"]);
    out.expect_code(64);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr_lines(),
        vec!["error: type \"Nope\" is not declared in the config; declared: Metric, Table"]
    );
    let out = sb.run(
        &dir,
        &["query", "list", "--tag", "nope", "--format", "json"],
    );
    out.expect_code(64);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr_lines(),
        vec!["error: tag \"nope\" is not declared in the config; declared: finance, sales"]
    );
}

#[test]
fn query_list_verified_and_unverified_conflict() {
    let sb = Sandbox::new();
    let out = sb.run(
        &fixture("clean"),
        &["query", "list", "--verified", "--unverified"],
    );
    out.expect_code(64);
    assert_eq!(out.stdout, "");
    assert_eq!(
        out.stderr_lines(),
        vec!["error: query list takes --verified or --unverified, not both"]
    );
}

#[test]
fn query_get_tolerates_id_forms() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let expected = vec![
        "metrics/revenue  Metric  draft",
        "title: Revenue",
        "description: Money recognised from orders.",
        "tags: finance",
        "path: metrics/revenue.md",
        "-> orders (concept, resource)",
        "-> orders (concept)",
    ];
    for id in [
        "metrics/revenue",
        "/metrics/revenue.md",
        "metrics/revenue.md",
        "/metrics/revenue",
    ] {
        let out = sb.run(&dir, &["query", "get", id]);
        out.expect_code(0);
        assert_eq!(out.stdout_lines(), expected, "id form {id}");
    }
    let j = sb.run(
        &dir,
        &["query", "get", "/metrics/revenue.md", "--format", "json"],
    );
    j.expect_code(0);
    let v = j.json();
    assert_eq!(
        keys(&v),
        vec![
            "schema",
            "okfit_version",
            "engine_version",
            "distribution",
            "concept"
        ]
    );
    let c = &v["concept"];
    assert_eq!(c["id"], "metrics/revenue");
    assert_eq!(c["type"], "Metric");
    assert_eq!(c["path"], "metrics/revenue.md");
    assert_eq!(c["frontmatter"]["resource"], "../orders.md");
    assert_eq!(c["frontmatter"]["stale_after"], "2026-06-01T00:00:00Z");
    assert_eq!(
        c["links"],
        serde_json::json!([
            {"to": "orders", "kind": "concept", "source": "frontmatter", "field": "resource"},
            {"to": "orders", "kind": "concept", "source": "body"},
        ])
    );
    let orders = sb.run(&dir, &["query", "get", "orders"]);
    assert!(
        orders.stdout_lines().contains(&"-> schema.sql (file)"),
        "{}",
        orders.stdout
    );
}

#[test]
fn query_get_unknown_id_exits_3() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    for cmd in ["get", "neighbors"] {
        let out = sb.run(&dir, &["query", cmd, "nope"]);
        out.expect_code(3);
        assert_eq!(out.stdout, "");
        assert_eq!(
            out.stderr_lines(),
            vec!["error: no concept \"nope\" in this bundle"]
        );
    }
    // A file that is not a concept is not a concept id either.
    sb.run(&dir, &["query", "get", "schema.sql"]).expect_code(3);
    sb.run(&dir, &["query", "get", "index"]).expect_code(3);
}

#[test]
fn query_neighbors_human_and_json() {
    let sb = Sandbox::new();
    let dir = fixture("clean");
    let out = sb.run(&dir, &["query", "neighbors", "/metrics/revenue.md"]);
    out.expect_code(0);
    assert_eq!(
        out.stdout_lines(),
        vec!["-> orders", "<- metrics/margin", "<- orders"]
    );
    let j = sb.run(
        &dir,
        &["query", "neighbors", "metrics/revenue", "--format", "json"],
    );
    j.expect_code(0);
    let v = j.json();
    assert_eq!(
        keys(&v),
        vec![
            "schema",
            "okfit_version",
            "engine_version",
            "distribution",
            "id",
            "outgoing",
            "incoming"
        ]
    );
    assert_eq!(v["id"], "metrics/revenue");
    let ids_of = |k: &str| -> Vec<String> {
        v[k].as_array()
            .unwrap()
            .iter()
            .map(|n| n["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids_of("outgoing"), vec!["orders"]);
    assert_eq!(ids_of("incoming"), vec!["metrics/margin", "orders"]);
    assert_eq!(v["outgoing"][0]["kind"], "concept");
    assert_eq!(v["outgoing"][0]["summary"]["title"], "Orders");
    let orders = sb.run(&dir, &["query", "neighbors", "orders"]);
    assert_eq!(
        orders.stdout_lines(),
        vec!["-> metrics/revenue", "-> schema.sql", "<- metrics/revenue"]
    );
}

// ------------------------------------------------------------------------
// The repository's own bundle
// ------------------------------------------------------------------------

#[test]
fn repository_bundle_validates_clean() {
    let sb = Sandbox::new();
    let repo = repo_root();
    let out = sb.run(
        &sb.root,
        &["validate", repo.to_str().unwrap(), "--format", "json"],
    );
    let v = out.json();
    let listing: Vec<String> = diags(&v).iter().map(human_line).collect();
    assert_eq!(out.code, 0, "{listing:#?}");
    assert_eq!(v["exit_code"], 0);
    assert_eq!(root_of(&v), repo.join("okf"));
    assert_eq!(v["profile"], "software-project");
    let s = &v["summary"];
    assert_eq!(s["conformance_errors"], 0, "{listing:#?}");
    assert_eq!(s["lint_errors"], 0, "{listing:#?}");
    assert_eq!(s["lint_warnings"], 0, "{listing:#?}");
    assert_eq!(s["profile_errors"], 0, "{listing:#?}");
    assert!(s["concepts"].as_u64().unwrap() > 0);
}
