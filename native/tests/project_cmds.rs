//! End-to-end tests of the commands that set up and maintain a project's
//! bundle, through the real `okfit` binary in a clean environment: `init`,
//! `--bundle`, `context`, `sync`, `verify` (attestation beside the store
//! check) and the Claude Code hooks (`okfit hook`). Contract: reference
//! `okfit.md` §6, §8, §11 and §14.

mod common;

use common::{run, sandboxed, Out};
use serde_json::{json, Value};
use std::path::Path;
use std::process::Command;
use std::time::Duration;

const HANG: Duration = Duration::from_secs(120);
const NOW: &str = "2026-12-01T10:00:00Z";

type Sb = common::Dir;

impl Sb {
    fn new() -> Sb {
        Sb::with_prefix("okfit-project-")
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap()
    }

    fn cmd(&self, cwd: &str, args: &[&str]) -> Command {
        let mut c = sandboxed(env!("CARGO_BIN_EXE_okfit"), &self.root, args);
        c.current_dir(self.path(cwd)).env("OKFIT_NOW", NOW);
        c
    }

    fn okfit(&self, cwd: &str, args: &[&str]) -> Out {
        run(self.cmd(cwd, args), None, HANG)
    }

    fn okfit_in(&self, cwd: &str, args: &[&str], input: &str, env: &[(&str, &str)]) -> Out {
        let mut c = self.cmd(cwd, args);
        for (k, v) in env {
            c.env(k, v);
        }
        run(c, Some(input.as_bytes()), HANG)
    }

    /// Runs git in `dir` with a fixed identity and `date` as author date.
    fn git(&self, dir: &str, date: &str, args: &[&str]) -> String {
        let out = Command::new("git")
            .current_dir(self.path(dir))
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.path("home"))
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_AUTHOR_NAME", "Test Author")
            .env("GIT_AUTHOR_EMAIL", "author@example.invalid")
            .env("GIT_COMMITTER_NAME", "Test Author")
            .env("GIT_COMMITTER_EMAIL", "author@example.invalid")
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(["-c", "core.autocrlf=false"])
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

    fn commit(&self, dir: &str, date: &str) {
        self.git(dir, date, &["add", "-A"]);
        self.git(dir, date, &["commit", "-q", "-m", "change"]);
    }
}

fn validate_json(sb: &Sb, cwd: &str, args: &[&str]) -> Value {
    let mut a = vec!["validate", "--format", "json"];
    a.extend_from_slice(args);
    let out = sb.okfit(cwd, &a);
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {}", out.stderr))
}

fn codes(v: &Value) -> Vec<String> {
    v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_string())
        .collect()
}

// ------------------------------------------------------------------------
// init and --bundle
// ------------------------------------------------------------------------

#[test]
fn init_scaffolds_a_software_project_that_validates_clean() {
    let sb = Sb::new();
    std::fs::create_dir(sb.path("app")).unwrap();
    let out = sb.okfit("app", &["init"]);
    out.expect_code(0);
    let text = out.text();
    assert!(
        text.ends_with("Initialized okf with the software-project profile\n"),
        "{text}"
    );
    for rel in [
        ".config/okfit.toml",
        "okf/index.md",
        "okf/log.md",
        "okf/project.md",
        "okf/modules/index.md",
        "okf/decisions/index.md",
    ] {
        assert!(sb.path("app").join(rel).is_file(), "{rel} written");
    }
    assert!(sb.read("app/okf/log.md").contains("## 2026-12-01\n"));
    let v = validate_json(&sb, "app", &[]);
    assert_eq!(v["exit_code"], 0, "{v}");
    assert_eq!(codes(&v), Vec::<String>::new());
    // okfit sync agrees with what init wrote.
    let s = sb.okfit(
        "app",
        &["sync", "--only", "index", "--dry-run", "--format", "json"],
    );
    assert_eq!(s.json()["index"]["written"], json!([]));
}

#[test]
fn init_never_overwrites_and_lists_what_exists() {
    let sb = Sb::new();
    sb.write("app/okf/index.md", "# Mine\n");
    sb.write("app/okfit.toml", "okf_version = \"0.2\"\n");
    let out = sb.okfit("app", &["init"]);
    out.expect_code(3);
    assert_eq!(
        out.stderr,
        "error: refusing to overwrite existing files:\n  okf/index.md\n  okfit.toml\nNothing was written.\n"
    );
    assert_eq!(sb.read("app/okf/index.md"), "# Mine\n");
    assert!(!sb.path("app/.config/okfit.toml").exists());
    assert!(!sb.path("app/okf/log.md").exists());
}

#[test]
fn init_bundle_only_writes_a_bare_bundle_checked_with_bundle() {
    let sb = Sb::new();
    let out = sb.okfit("", &["init", "kb", "--bundle-only"]);
    out.expect_code(0);
    assert!(sb.path("kb/index.md").is_file());
    assert!(sb.path("kb/log.md").is_file());
    assert!(!sb.path("kb/.config").exists());
    let v = validate_json(&sb, "", &["--bundle", "kb"]);
    assert_eq!(v["exit_code"], 0, "{v}");
    assert_eq!(v["profile"], Value::Null);
}

#[test]
fn init_with_an_unknown_profile_warns_and_uses_none() {
    let sb = Sb::new();
    std::fs::create_dir(sb.path("app")).unwrap();
    let out = sb.okfit("app", &["init", "--profile", "nope"]);
    out.expect_code(0);
    assert!(out
        .stderr
        .contains("warning: unknown profile \"nope\"; continuing with defaults"));
    assert!(sb
        .read("app/.config/okfit.toml")
        .contains("profile = \"none\""));
    assert!(!sb.path("app/okf/project.md").exists());
}

#[test]
fn a_bare_bundle_given_as_the_project_says_to_use_bundle() {
    let sb = Sb::new();
    sb.write(
        "notes/revenue.md",
        "---\ntype: Metric\ntitle: Revenue\n---\n# Revenue\n",
    );
    let out = sb.okfit("", &["validate", "notes"]);
    out.expect_code(3);
    let notes = sb.path("notes");
    assert_eq!(
        out.stderr,
        format!(
            "error: bundle root \"{}/okf\" is not a directory, but \"{}\" holds concept files itself: to check it as a bundle, pass --bundle {}\n",
            notes.display(),
            notes.display(),
            notes.display()
        )
    );
    for cmd in [
        vec!["validate", "--bundle", "notes"],
        vec!["lint", "--bundle", "notes"],
        vec!["stale", "--bundle", "notes"],
        vec!["graph", "--bundle", "notes"],
        vec!["query", "list", "--bundle", "notes"],
        vec!["sync", "--bundle", "notes", "--dry-run"],
    ] {
        let out = sb.okfit("", &cmd);
        assert!(out.code == 0 || out.code == 1, "{cmd:?}: {}", out.stderr);
    }
    let out = sb.okfit(
        "",
        &[
            "query", "get", "revenue", "--bundle", "notes", "--format", "json",
        ],
    );
    assert_eq!(out.json()["concept"]["title"], "Revenue");
    // Without concepts in it, the plain error stays.
    std::fs::create_dir(sb.path("empty")).unwrap();
    let out = sb.okfit("", &["validate", "empty"]);
    out.expect_code(3);
    assert!(
        out.stderr.contains("is not a directory\n"),
        "{}",
        out.stderr
    );
}

// ------------------------------------------------------------------------
// context
// ------------------------------------------------------------------------

#[test]
fn context_prints_the_envelope_without_loading_the_bundle() {
    let sb = Sb::new();
    sb.write(
        "app/.config/okfit.toml",
        "[actors]\nagent = \"okfit/claude-code\"\n[tags.billing]\ndescription = \"Money.\"\n",
    );
    // A concept that cannot even be parsed: context never reads it.
    sb.write("app/okf/broken.md", "---\ntype: [\n---\n");
    let v = sb.okfit("app", &["context", "--format", "json"]).json();
    let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        keys,
        [
            "schema",
            "okfit_version",
            "engine_version",
            "distribution",
            "config_schema_version",
            "project_root",
            "bundle_root",
            "config_path",
            "profile",
            "profile_requested",
            "index_path",
            "index_exists",
            "actors",
            "types",
            "tags"
        ]
    );
    let app = sb.path("app");
    assert_eq!(v["project_root"], app.display().to_string());
    assert_eq!(v["bundle_root"], app.join("okf").display().to_string());
    assert_eq!(
        v["config_path"],
        app.join(".config/okfit.toml").display().to_string()
    );
    assert_eq!(v["profile"], "software-project");
    assert_eq!(v["index_exists"], false);
    assert_eq!(v["actors"], json!({"agent": "okfit/claude-code"}));
    assert!(v["types"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "Decision"));
    assert!(v["tags"]
        .as_array()
        .unwrap()
        .iter()
        .any(|t| t["name"] == "billing"));
    // No config anywhere: nulls are kept, defaults apply.
    std::fs::create_dir(sb.path("bare")).unwrap();
    let v = sb.okfit("bare", &["context", "--format", "json"]).json();
    assert_eq!(v["config_path"], Value::Null);
    assert_eq!(v["profile_requested"], Value::Null);
    assert_eq!(v["actors"]["agent"], Value::Null);
    assert_eq!(v["profile"], "software-project");
    let human = sb.okfit("app", &["context"]).ok();
    assert!(
        human.contains("agent actor:  okfit/claude-code\n"),
        "{human}"
    );
}

// ------------------------------------------------------------------------
// sync
// ------------------------------------------------------------------------

const CFG: &str = "[bundle]\nprofile = \"none\"\n";

fn concept(title: &str, extra: &str, body: &str) -> String {
    format!("---\ntype: Note\ntitle: {title}\ndescription: About {title}.\n{extra}---\n\n# {title}\n\n{body}\n")
}

#[test]
fn sync_stamps_from_git_keeping_the_yaml_as_written() {
    let sb = Sb::new();
    sb.write("p/okfit.toml", CFG);
    sb.write(
        "p/okf/a.md",
        concept(
            "A",
            "generated:\n  by: okfit/test  # who\n  at: \"2026-01-01T00:00:00Z\"\n",
            "First body.",
        ),
    );
    // CRLF and a BOM, and a flow mapping okfit cannot edit.
    sb.write(
        "p/okf/b.md",
        "\u{feff}---\r\ntype: Note\r\ntitle: B\r\ngenerated:\r\n  by: okfit/test\r\n  at: 2026-01-01T00:00:00Z\r\n---\r\n\r\n# B\r\n",
    );
    sb.write(
        "p/okf/c.md",
        concept(
            "C",
            "generated: {by: okfit/test, at: 2026-01-01T00:00:00Z}\n",
            "C.",
        ),
    );
    sb.write("p/okf/d.md", concept("D", "", "No generated block."));
    sb.git("p", "2026-01-01T00:00:00Z", &["init", "-q"]);
    sb.commit("p", "2026-03-04T05:06:07Z");
    // Uncommitted bodies are skipped, never stamped with a guess.
    sb.write(
        "p/okf/new.md",
        concept(
            "New",
            "generated:\n  by: okfit/test\n  at: 2026-01-01T00:00:00Z\n",
            "N.",
        ),
    );

    let dry = sb.okfit(
        "p",
        &[
            "sync",
            "--only",
            "generated",
            "--dry-run",
            "--format",
            "json",
        ],
    );
    let v = dry.json();
    assert_eq!(v["dry_run"], true);
    assert_eq!(v["generated"]["written"], json!(["a", "b"]));
    assert_eq!(v["index"]["selected"], false);
    assert_eq!(
        sb.read("p/okf/a.md"),
        concept(
            "A",
            "generated:\n  by: okfit/test  # who\n  at: \"2026-01-01T00:00:00Z\"\n",
            "First body."
        )
    );
    let skipped: Vec<(String, String)> = v["generated"]["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["id"].as_str().unwrap().into(),
                s["reason"].as_str().unwrap().into(),
            )
        })
        .collect();
    assert!(
        skipped.contains(&("c".into(), "generated-unsupported".into())),
        "{skipped:?}"
    );
    assert!(
        skipped.contains(&("d".into(), "generated-missing".into())),
        "{skipped:?}"
    );
    assert!(
        skipped.contains(&("new".into(), "untracked".into())),
        "{skipped:?}"
    );

    sb.okfit("p", &["sync", "--only", "generated"])
        .expect_code(0);
    let a = sb.read("p/okf/a.md");
    assert!(
        a.contains("  by: okfit/test  # who\n  at: \"2026-03-04T05:06:07Z\"\n  body_sha256: "),
        "{a}"
    );
    let b = sb.read("p/okf/b.md");
    assert!(b.starts_with("\u{feff}---\r\n"), "{b:?}");
    assert!(
        b.contains("  at: 2026-03-04T05:06:07Z\r\n  body_sha256: "),
        "{b:?}"
    );
    assert!(
        !b.replace("\r\n", "").contains('\n'),
        "only CRLF line ends: {b:?}"
    );
    // Now recorded digests match: nothing more to write, and no drift.
    let again = sb
        .okfit(
            "p",
            &[
                "sync",
                "--only",
                "generated",
                "--dry-run",
                "--format",
                "json",
            ],
        )
        .json();
    assert_eq!(again["generated"]["written"], json!([]));
    assert_eq!(again["generated"]["unchanged"], json!(["a", "b"]));
    // Only c (a shape sync cannot edit) still drifts.
    let v = validate_json(&sb, "p", &[]);
    let drifting: Vec<&str> = v["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "generated-at-drift")
        .map(|d| d["file"].as_str().unwrap())
        .collect();
    assert_eq!(drifting, ["c.md"], "{v}");
    // The one file's check finds its drift too.
    let v = validate_json(&sb, "p", &["--file", "okf/c.md"]);
    assert!(codes(&v).contains(&"generated-at-drift".into()), "{v}");
    // A dirty body is skipped.
    sb.commit("p", "2026-03-05T00:00:00Z");
    sb.write("p/okf/a.md", a.replace("First body.", "Edited body."));
    let v = sb
        .okfit("p", &["sync", "--only", "generated", "--format", "json"])
        .json();
    assert!(
        v["generated"]["skipped"]
            .as_array()
            .unwrap()
            .contains(&json!({"id": "a", "reason": "dirty"})),
        "{v}"
    );
}

#[test]
fn sync_staged_stamps_now_and_refuses_log_mode() {
    let sb = Sb::new();
    sb.write(
        "p/okfit.toml",
        "[bundle]\nprofile = \"none\"\n[actors]\nagent = \"okfit/test\"\n",
    );
    sb.write("p/okf/a.md", concept("A", "", "Body."));
    sb.git("p", "2026-01-01T00:00:00Z", &["init", "-q"]);
    sb.git("p", "2026-01-01T00:00:00Z", &["add", "-A"]);
    let out = sb.okfit("p", &["sync", "--staged"]);
    out.expect_code(64);
    assert!(
        out.stderr
            .starts_with("error: --staged cannot run log mode"),
        "{}",
        out.stderr
    );
    let v = sb
        .okfit(
            "p",
            &[
                "sync",
                "--staged",
                "--only",
                "generated",
                "--format",
                "json",
            ],
        )
        .json();
    assert_eq!(v["generated"]["written"], json!(["a"]));
    // With actors.agent set, a whole block is added; `at` is now.
    let a = sb.read("p/okf/a.md");
    assert!(
        a.contains("generated:\n  by: okfit/test\n  at: 2026-12-01T10:00:00Z\n  body_sha256: "),
        "{a}"
    );
    // ...and the stamped file is staged again.
    let diff = sb.git("p", "2026-01-01T00:00:00Z", &["diff", "--name-only"]);
    assert_eq!(diff, "", "the stamp is staged");
}

#[test]
fn sync_regenerates_indexes_and_appends_the_log_by_date() {
    let sb = Sb::new();
    sb.write("p/okfit.toml", CFG);
    sb.write(
        "p/okf/index.md",
        "---\nokf_version: \"0.2\"\n---\n\n# Stale\n\n* [Gone](gone.md)\n",
    );
    sb.write("p/okf/log.md", "# Log\n\n## 2026-01-01\n\n* Started.\n");
    sb.write("p/okf/zeta.md", concept("Zeta *z*", "", "Z."));
    sb.write("p/okf/notes/alpha.md", concept("Alpha", "", "A."));
    sb.write("p/okf/notes/deep/beta.md", concept("Beta", "", "B."));
    sb.git("p", "2026-01-01T00:00:00Z", &["init", "-q"]);
    sb.commit("p", "2026-01-01T12:00:00Z");
    sb.write("p/okf/notes/gamma.md", concept("Gamma", "", "G."));
    sb.commit("p", "2026-02-03T09:00:00Z");
    sb.write("p/okf/notes/alpha.md", concept("Alpha", "", "A, revised."));
    std::fs::remove_file(sb.path("p/okf/zeta.md")).unwrap();
    sb.commit("p", "2026-02-05T09:00:00Z");

    let v = sb
        .okfit(
            "p",
            &[
                "sync", "--only", "index", "--only", "log", "--format", "json",
            ],
        )
        .json();
    assert_eq!(v["generated"]["selected"], false);
    assert_eq!(
        v["index"]["written"],
        json!(["index.md", "notes/index.md", "notes/deep/index.md"])
    );
    assert_eq!(v["log"]["written"], json!(["log.md"]));
    assert_eq!(
        sb.read("p/okf/index.md"),
        "---\nokf_version: \"0.2\"\n---\n\n# Subdirectories\n\n* [notes](notes/index.md)\n"
    );
    assert_eq!(
        sb.read("p/okf/notes/index.md"),
        "# Note\n\n* [Alpha](alpha.md) - About Alpha.\n* [Gamma](gamma.md) - About Gamma.\n\n# Subdirectories\n\n* [deep](deep/index.md)\n"
    );
    assert_eq!(
        sb.read("p/okf/log.md"),
        "# Log\n\n## 2026-02-05\n\n* Updated [Alpha](notes/alpha.md)\n* Removed `zeta.md`\n\n## 2026-02-03\n\n* Added [Gamma](notes/gamma.md)\n\n## 2026-01-01\n\n* Started.\n"
    );
    let v = validate_json(&sb, "p", &[]);
    assert_eq!(codes(&v), Vec::<String>::new(), "{v}");
    // A second run finds nothing to do.
    let v = sb
        .okfit(
            "p",
            &[
                "sync", "--only", "index", "--only", "log", "--format", "json",
            ],
        )
        .json();
    assert_eq!(v["index"]["written"], json!([]));
    assert_eq!(v["log"]["written"], json!([]));
}

#[cfg(unix)]
#[test]
fn sync_never_writes_through_a_symlink() {
    let sb = Sb::new();
    sb.write("p/okfit.toml", CFG);
    sb.write("outside/index.md", "# Outside\n");
    std::fs::create_dir_all(sb.path("p/okf")).unwrap();
    std::os::unix::fs::symlink(sb.path("outside"), sb.path("p/okf/linked")).unwrap();
    sb.write("p/okf/sub/a.md", concept("A", "", "A."));
    std::os::unix::fs::symlink(sb.path("outside/index.md"), sb.path("p/okf/sub/index.md")).unwrap();
    let out = sb.okfit("p", &["sync", "--only", "index"]);
    assert_eq!(out.code, 1, "{}", out.stderr);
    assert!(out.stderr.contains("symbolic link"), "{}", out.stderr);
    assert_eq!(sb.read("outside/index.md"), "# Outside\n");
}

// ------------------------------------------------------------------------
// verify
// ------------------------------------------------------------------------

#[test]
fn verify_attests_as_the_git_identity_and_keeps_the_store_check() {
    let sb = Sb::new();
    sb.write("p/okfit.toml", "[bundle]\nprofile = \"none\"\n[actors]\nhumans = [\"human:Ann\"]\n[types.Note]\ndescription = \"A note.\"\n");
    sb.write(
        "p/okf/a.md",
        concept(
            "A",
            "verified:\n- by: human:bob\n  at: 2026-01-01T00:00:00Z\n",
            "A.",
        ),
    );
    sb.write("p/okf/b.md", concept("B", "", "B."));
    sb.write("p/okf/c.md", concept("C", "verified: human:x\n", "C."));
    sb.write("p/okf/index.md", "# Note\n");
    sb.git("p", "2026-01-01T00:00:00Z", &["init", "-q"]);
    sb.git(
        "p",
        "2026-01-01T00:00:00Z",
        &["config", "user.email", "ann@example.invalid"],
    );

    let out = sb.okfit("p", &["verify", "a", "--dry-run"]);
    out.expect_code(0);
    assert_eq!(
        out.text(),
        "would verify a as human:Ann at 2026-12-01T10:00:00Z\n"
    );
    let v = sb
        .okfit(
            "p",
            &[
                "verify",
                "a",
                "--at",
                "2026-11-30T08:00:00+01:00",
                "--format",
                "json",
            ],
        )
        .json();
    assert_eq!(v["id"], "a");
    assert_eq!(v["path"], "a.md");
    assert_eq!(
        v["verified"],
        json!({"by": "human:Ann", "at": "2026-11-30T07:00:00Z"})
    );
    assert_eq!(
        sb.read("p/okf/a.md"),
        concept("A", "verified:\n- by: human:bob\n  at: 2026-01-01T00:00:00Z\n- by: human:Ann\n  at: 2026-11-30T07:00:00Z\n", "A.")
    );
    // --type: every Note; c's scalar `verified` is skipped, named.
    let out = sb.okfit("p", &["verify", "--type", "Note"]);
    out.expect_code(0);
    assert!(
        out.stderr.contains(
            "\"c\"'s verified value is a shape okfit verify cannot edit (scalar); edit it by hand"
        ),
        "{}",
        out.stderr
    );
    assert!(sb
        .read("p/okf/b.md")
        .contains("verified:\n  - by: human:Ann\n    at: 2026-12-01T10:00:00Z\n"));
    // The single-concept failures of §11.
    let out = sb.okfit("p", &["verify", "c"]);
    out.expect_code(3);
    let out = sb.okfit("p", &["verify", "nope"]);
    out.expect_code(3);
    assert_eq!(
        out.stderr,
        "error: no concept \"nope\" in this bundle (not-a-concept)\n"
    );
    let out = sb.okfit("p", &["verify", "index"]);
    assert_eq!(
        out.stderr,
        "error: no concept \"index\" in this bundle (reserved)\n"
    );
    let out = sb.okfit("p", &["verify", "a", "--all"]);
    out.expect_code(64);
    assert_eq!(
        out.stderr,
        "error: verify takes either a concept id or --all/--type, not both\n"
    );
    let out = sb.okfit("p", &["verify", "--type", "Nope"]);
    out.expect_code(64);
    assert_eq!(
        out.stderr,
        "error: type \"Nope\" is not declared in the config\n"
    );
    let out = sb.okfit("p", &["verify", "a", "-c", "okf:///x"]);
    out.expect_code(64);
    // The store check is unchanged when no concept is named.
    let data = sb.path("data");
    let dsn = format!("okf://{}?tenant=acme", data.display());
    sb.okfit("p", &["put", "okf", "-c", &dsn]).expect_code(0);
    let v = sb.okfit("p", &["verify", "-c", &dsn]).json();
    assert_eq!(v["ok"], true, "{v}");
    let help = sb.okfit("p", &["verify", "--help"]).ok();
    assert!(
        help.contains("Attest concepts") && help.contains("Check a store"),
        "{help}"
    );
}

#[test]
fn verify_without_a_git_identity_says_so() {
    let sb = Sb::new();
    sb.write("p/okfit.toml", CFG);
    sb.write("p/okf/a.md", concept("A", "", "A."));
    let out = sb.okfit("p", &["verify", "a"]);
    out.expect_code(3);
    assert_eq!(
        out.stderr,
        "error: git has no user.name or user.email to derive a human actor from; set one or add actors.humans\n"
    );
}

// ------------------------------------------------------------------------
// Claude Code hooks
// ------------------------------------------------------------------------

fn hook_event(tool: &str, file: &Path, cwd: &Path) -> String {
    json!({
        "session_id": "s",
        "hook_event_name": "PostToolUse",
        "tool_name": tool,
        "tool_input": {"file_path": file.display().to_string(), "content": ""},
        "cwd": cwd.display().to_string(),
    })
    .to_string()
}

#[test]
fn post_tool_use_blocks_on_conformance_errors_and_is_silent_when_clean() {
    let sb = Sb::new();
    sb.write("p/okfit.toml", CFG);
    let bad = sb.write("p/okf/bad.md", "---\ntitle: x\n---\n# x\n");
    let good = sb.write("p/okf/good.md", concept("Good", "", "Fine."));
    let other = sb.write("p/README.md", "no frontmatter\n");
    let p = sb.path("p");
    let out = sb.okfit_in(
        "p",
        &["hook", "post-tool-use"],
        &hook_event("Write", &bad, &p),
        &[],
    );
    out.expect_code(0);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v,
        json!({"decision": "block", "reason": "bad.md: 1 conformance error(s) — fix before continuing:\n  type-missing: `type` must be a non-empty string"})
    );
    for (tool, file) in [("Edit", &good), ("Write", &other), ("Read", &bad)] {
        let out = sb.okfit_in(
            "p",
            &["hook", "post-tool-use"],
            &hook_event(tool, file, &p),
            &[],
        );
        out.expect_code(0);
        assert_eq!(out.text(), "", "{tool} {}", file.display());
    }
    // Garbage on stdin is never a failure.
    let out = sb.okfit_in("p", &["hook", "post-tool-use"], "not json", &[]);
    out.expect_code(0);
    // With an agent actor, a new concept without generated.by blocks on Write.
    sb.write(
        "p/okfit.toml",
        "[bundle]\nprofile = \"none\"\n[actors]\nagent = \"okfit/claude-code\"\n",
    );
    let out = sb.okfit_in(
        "p",
        &["hook", "post-tool-use"],
        &hook_event("Write", &good, &p),
        &[],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["decision"], "block");
    assert!(v["reason"]
        .as_str()
        .unwrap()
        .contains("by: okfit/claude-code"));
    let out = sb.okfit_in(
        "p",
        &["hook", "post-tool-use"],
        &hook_event("Edit", &good, &p),
        &[],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "PostToolUse");
}

#[test]
fn session_start_orients_the_agent_within_its_budget() {
    let sb = Sb::new();
    sb.write(
        "p/.config/okfit.toml",
        "[actors]\nagent = \"okfit/claude-code\"\n",
    );
    let mut index = String::from("---\nokf_version: \"0.2\"\n---\n\n# Note\n\n");
    while index.len() < 20_000 {
        index.push_str("* [A concept with a longish title](a.md) - and a description of it.\n");
    }
    sb.write("p/okf/index.md", &index);
    let p = sb.path("p");
    let event = json!({"hook_event_name": "SessionStart", "cwd": p.display().to_string(), "source": "startup"}).to_string();
    let out = sb.okfit_in("", &["hook", "session-start"], &event, &[]);
    out.expect_code(0);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "SessionStart");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(
        ctx.contains("in okf/, profile software-project, config .config/okfit.toml."),
        "{ctx}"
    );
    assert!(ctx.contains("- Decision: "), "{ctx}");
    assert!(
        ctx.contains("  - kind: one of workspace, package, website"),
        "{ctx}"
    );
    assert!(ctx.contains("by: okfit/claude-code"), "{ctx}");
    assert!(
        ctx.contains(&index[..12_000]),
        "the index up to 12,000 bytes"
    );
    assert!(!ctx.contains(&index[..12_100]));
    assert!(ctx.contains("truncated at 12000 bytes"), "{ctx}");
    // No bundle yet: it says how to set one up.
    std::fs::create_dir(sb.path("q")).unwrap();
    let out = sb.okfit_in(
        "q",
        &["hook", "session-start"],
        "{}",
        &[("CLAUDE_PROJECT_DIR", sb.path("q").to_str().unwrap())],
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap()
        .contains("okfit init"));
}

// ------------------------------------------------------------------------
// validate --file
// ------------------------------------------------------------------------

#[test]
fn validate_file_reports_the_full_runs_findings_for_that_file() {
    let sb = Sb::new();
    sb.write("p/okfit.toml", CFG);
    sb.write("p/okf/index.md", "# Note\n\n* [A](a.md)\n* [B](b.md)\n");
    sb.write(
        "p/okf/a.md",
        concept(
            "A",
            "status: odd\n",
            "See [B](b.md#usage), [B](b.md#nope) and [gone](gone.md).",
        ),
    );
    sb.write("p/okf/b.md", concept("B", "", "## Usage\n\nText."));
    sb.write("p/okf/c.md", "---\ntitle: no type\n---\n");
    let full = validate_json(&sb, "p", &[]);
    for (arg, rel) in [
        ("okf/a.md", "a.md"),
        ("a.md", "a.md"),
        ("okf/c.md", "c.md"),
        ("okf/index.md", "index.md"),
    ] {
        let one = validate_json(&sb, "p", &["--file", arg]);
        let expected: Vec<&Value> = full["diagnostics"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|d| d["file"] == rel)
            .collect();
        let got: Vec<&Value> = one["diagnostics"].as_array().unwrap().iter().collect();
        assert_eq!(got, expected, "{arg}");
    }
    let a = validate_json(&sb, "p", &["--file", "okf/a.md"]);
    let codes_a = codes(&a);
    assert!(codes_a.contains(&"broken-links".to_string()), "{a}");
    assert_eq!(a["summary"]["concepts"], 1);
    // c.md's conformance error decides the exit code of its own run only.
    assert_eq!(sb.okfit("p", &["validate", "--file", "okf/a.md"]).code, 0);
    assert_eq!(sb.okfit("p", &["validate", "--file", "okf/c.md"]).code, 2);
    let out = sb.okfit("p", &["validate", "--file", "README.md"]);
    out.expect_code(64);
    assert!(
        out.stderr.contains("is not a file of the bundle"),
        "{}",
        out.stderr
    );
}
