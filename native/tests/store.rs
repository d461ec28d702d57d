//! End-to-end tests of the embedded store's write side and its database
//! semantics: the MCP `write` and `delete` tools on a store, the opt-in
//! database tools (`transact`, `history`, `restore`), the store commands of
//! the CLI (`write`, `delete`, `transact`, `history`, `restore`, `gc`,
//! `verify`, `export`), durability under SIGKILL, and racing writers.
//!
//! Everything runs through the real binaries in a temporary sandbox with a
//! cleared environment; stores are real SQLite files under
//! `<sandbox>/data/tenants/<tenant>/okfit.sqlite`, and the tests marked
//! `on_both_backends!` run again on a fresh database of the PostgreSQL
//! test server (`OKFIT_TEST_POSTGRES`, which `./scripts/test.sh` starts;
//! without it they fail, never skip). The MCP server is driven
//! by rmcp's client over the child's stdio, and corruption is injected with
//! the `sqlite3` CLI (or Python's sqlite3 module). The crash test runs a
//! shell loop of `okfit transact` processes in its own process group and
//! kills the group at pseudo-random moments. Waits are bounded so that a
//! hang fails a test; nothing asserts how fast anything is.
//!
//! Contract: SPEC §4, §5; reference `langonrock.md` §3.1, §4.5–§4.7, §5,
//! §9 (mcp, mcp-commit, history).

mod common;
#[path = "common/pg.rs"]
#[macro_use]
mod pg;

use base64::Engine as _;
use common::{
    assert_hex64, blocking, bounded, close, error_text, invalid_params, row_ids, sha256_hex, text,
    Client, Out,
};
use pg::Backend;
use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The CLI under test.
const OKFIT: &str = env!("CARGO_BIN_EXE_okfit");
/// The MCP server under test.
const MCP: &str = env!("CARGO_BIN_EXE_okfit-mcp");
/// How long any run or answer may take before the test calls it a hang
/// (a bound, not a timing assertion).
const HANG: Duration = Duration::from_secs(120);
/// The suffix of every precondition refusal.
const RETRY: &str = ": re-read the concept and retry with its new hash";
/// The tools of a store server with `--database-tools`, in order.
const DATABASE_SERVER_TOOLS: [&str; 9] = [
    "manifest", "search", "get", "snapshot", "write", "delete", "transact", "history", "restore",
];
/// The exact -32602 message of a malformed `replaces` in `transact`.
const PATTERN_ERROR: &str = "Input validation error: Invalid arguments for tool transact: Invalid string: must match pattern /^[a-f0-9]{64}$/ at changes[0].replaces";
/// The conflict of a stale `expectedRevision`.
const DATABASE_CHANGED: &str = "database changed: re-read the revision and document hashes";

// ------------------------------------------------------------------------
// Processes
// ------------------------------------------------------------------------

/// Runs a command to completion with `stdin` (none: closed), failing on a
/// hang.
fn finish(cmd: Command, stdin: Option<Vec<u8>>) -> Out {
    common::run(cmd, stdin.as_deref(), HANG)
}

/// Every file under `root` as `(relative path, bytes)`, sorted (none when
/// `root` does not exist).
fn tree_bytes(root: &Path) -> Vec<(String, Vec<u8>)> {
    if root.exists() {
        common::tree_bytes(root)
    } else {
        Vec::new()
    }
}

/// A temporary directory with `home/`, `xdg/` and the data root `data/`
/// (created by the first commit). Its path is canonical.
type Sandbox = pg::Stores;

/// Exports made so far: each goes to a folder of its own.
static EXPORTS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

impl Sandbox {
    fn is_sqlite(&self) -> bool {
        self.tenants.is_sqlite()
    }

    /// Whether `tenant` exists (its first write created it).
    fn has_tenant(&self, tenant: &str) -> bool {
        self.tenants.exists(tenant, |a| self.okfit(a))
    }

    fn db(&self, tenant: &str) -> PathBuf {
        self.tenant_dir(tenant).join("okfit.sqlite")
    }

    /// `okfit ARGS…`.
    fn okfit(&self, args: &[&str]) -> Out {
        finish(self.sandboxed(OKFIT, args), None)
    }

    /// `okfit ARGS…` with `input` on stdin.
    fn okfit_in(&self, args: &[&str], input: &[u8]) -> Out {
        finish(self.sandboxed(OKFIT, args), Some(input.to_vec()))
    }

    /// `args` naming the tenant: `--data <sandbox>/data --tenant
    /// <tenant>` on SQLite, `-c <connection>` on PostgreSQL.
    fn store_args(&self, tenant: &str, args: &[&str]) -> Vec<String> {
        self.tenants.args(tenant, args)
    }

    /// `okfit ARGS…` on `tenant` (see [`Sandbox::store_args`]).
    fn store(&self, tenant: &str, args: &[&str]) -> Out {
        let all = self.store_args(tenant, args);
        self.okfit(&all.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// The same with `input` on stdin.
    fn store_in(&self, tenant: &str, args: &[&str], input: &[u8]) -> Out {
        let all = self.store_args(tenant, args);
        self.okfit_in(&all.iter().map(String::as_str).collect::<Vec<_>>(), input)
    }

    /// The store command as a `Command` (for concurrent runs).
    fn store_command(&self, tenant: &str, args: &[&str]) -> Command {
        let all = self.store_args(tenant, args);
        self.sandboxed(OKFIT, &all.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// The server command (tokio) with the same clean environment.
    fn mcp_command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::from(self.sandboxed(MCP, args));
        c.kill_on_drop(true);
        c
    }

    // -- store observations through the CLI ------------------------------

    /// Every retained revision, newest first, paging with `--limit 100`.
    fn history_all(&self, tenant: &str) -> Vec<Value> {
        let mut all = vec![];
        let mut cursor: Option<String> = None;
        loop {
            let mut args = vec!["history", "--limit", "100"];
            if let Some(c) = &cursor {
                args.extend(["--before", c.as_str()]);
            }
            let page = self.store(tenant, &args).json();
            all.extend(page["revisions"].as_array().unwrap().iter().cloned());
            match page.get("next").and_then(Value::as_str) {
                Some(n) => cursor = Some(n.to_string()),
                None => break,
            }
        }
        all
    }

    /// The revision digests, newest first.
    fn revisions(&self, tenant: &str) -> Vec<String> {
        self.history_all(tenant)
            .iter()
            .map(|r| r["revision"].as_str().unwrap().to_string())
            .collect()
    }

    /// The head revision.
    fn head(&self, tenant: &str) -> String {
        let page = self.store(tenant, &["history", "--limit", "1"]).json();
        page["revisions"][0]["revision"]
            .as_str()
            .expect("a head revision")
            .to_string()
    }

    /// `okfit verify`: (exit code, report).
    fn verify(&self, tenant: &str) -> (i32, Value) {
        let out = self.store(tenant, &["verify"]);
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "verify printed no JSON ({e})\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                out.stderr
            )
        });
        (out.code, v)
    }

    #[track_caller]
    fn assert_verified(&self, tenant: &str) -> Value {
        let (code, v) = self.verify(tenant);
        assert_eq!(v["ok"], json!(true), "verify found problems: {v}");
        assert_eq!(v["problems"], json!([]), "{v}");
        assert_eq!(code, 0, "a healthy store verifies with exit 0: {v}");
        v
    }

    fn manifest(&self, tenant: &str) -> String {
        self.store(tenant, &["manifest"]).ok()
    }

    /// `okfit snapshot`: (digest, concepts).
    fn snapshot(&self, tenant: &str) -> (String, usize) {
        let t = self.store(tenant, &["snapshot"]).ok();
        let (s, n) = t
            .trim_end()
            .split_once('\t')
            .unwrap_or_else(|| panic!("snapshot line: {t:?}"));
        assert_hex64(s);
        let n = n
            .strip_suffix(" concepts")
            .unwrap_or_else(|| panic!("snapshot line: {t:?}"))
            .parse()
            .unwrap();
        (s.to_string(), n)
    }

    /// `okfit export` into a fresh directory: every document's bytes.
    fn export(&self, tenant: &str) -> Vec<(String, Vec<u8>)> {
        let n = EXPORTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let dir = self.path(&format!("exports/{tenant}-{n}"));
        let d = dir.display().to_string();
        self.store(tenant, &["export", &d]).expect_code(0);
        tree_bytes(&dir)
    }

    /// `okfit transact` with the batch on stdin; returns the result line.
    fn transact(&self, tenant: &str, batch: &Value) -> Value {
        self.store_in(tenant, &["transact"], batch.to_string().as_bytes())
            .json()
    }
}

/// The names on the `# bundles:` line.
fn bundles_line(manifest: &str) -> Vec<String> {
    let l = manifest
        .lines()
        .find(|l| l.starts_with("# bundles:"))
        .unwrap_or_else(|| panic!("no # bundles: line in\n{manifest}"));
    l["# bundles:".len()..]
        .split_whitespace()
        .map(str::to_string)
        .collect()
}

/// The hash named by a refusal's `retry with replaces: "<hash>"` line.
fn retry_hash(text: &str) -> Option<String> {
    let l = text.lines().last()?;
    let h = l
        .strip_prefix("retry with replaces: \"")?
        .strip_suffix('"')?;
    Some(h.to_string())
}

/// Runs `stmt` on a SQLite file with the `sqlite3` CLI, else Python's
/// sqlite3 module; false when neither is available.
fn sql(db: &Path, stmt: &str) -> bool {
    let db_s = db.display().to_string();
    if let Ok(o) = Command::new("sqlite3").arg(&db_s).arg(stmt).output() {
        assert!(
            o.status.success(),
            "sqlite3 {stmt}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        return true;
    }
    let py = "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nc.execute(sys.argv[2])\nc.commit()\nc.close()\n";
    if let Ok(o) = Command::new("python3")
        .args(["-c", py, &db_s, stmt])
        .output()
    {
        assert!(
            o.status.success(),
            "python3 sqlite3 {stmt}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        return true;
    }
    false
}

// ------------------------------------------------------------------------
// rmcp client harness
// ------------------------------------------------------------------------

/// Connects rmcp's client to `okfit-mcp ARGS…`.
async fn connect(sb: &Sandbox, args: &[&str]) -> Client {
    common::connect_command(sb.mcp_command(args)).await
}

/// A successful database tool call's compact JSON.
async fn json_call(c: &Client, name: &str, a: Value) -> Value {
    let t = text(c, name, a).await;
    assert!(
        !t.contains('\n') && !t.starts_with("{ ") && !t.starts_with("{\n"),
        "{name}: the answer is compact JSON on one line: {t}"
    );
    serde_json::from_str(&t).unwrap_or_else(|e| panic!("{name}: not JSON ({e}): {t}"))
}

async fn tool_names(c: &Client) -> Vec<String> {
    bounded("tools/list", c.list_all_tools())
        .await
        .unwrap()
        .iter()
        .map(|t| t.name.to_string())
        .collect()
}

/// The `snapshot` tool: (digest, concepts).
async fn snapshot_tool(c: &Client) -> (String, usize) {
    let t = text(c, "snapshot", json!({})).await;
    let rest = t
        .strip_prefix("snapshot ")
        .unwrap_or_else(|| panic!("snapshot answer: {t:?}"));
    let (s, n) = rest.split_once(", ").unwrap();
    assert_hex64(s);
    let n = n.strip_suffix(" concepts").unwrap().parse().unwrap();
    (s.to_string(), n)
}

/// The first line of a write answer:
/// `wrote B/P (hash H), snapshot S, N concepts` → (H, S, N).
#[track_caller]
fn parse_wrote(t: &str, bundle: &str, path: &str) -> (String, String, usize) {
    let first = t.lines().next().unwrap();
    let rest = first
        .strip_prefix(&format!("wrote {bundle}/{path} (hash "))
        .unwrap_or_else(|| panic!("not a write answer for {bundle}/{path}: {t}"));
    let (h, rest) = rest.split_once("), snapshot ").unwrap();
    let (s, n) = rest.split_once(", ").unwrap();
    assert_hex64(h);
    assert_hex64(s);
    let n = n
        .strip_suffix(" concepts")
        .unwrap_or_else(|| panic!("{first}"))
        .parse()
        .unwrap();
    (h.to_string(), s.to_string(), n)
}

/// `deleted B/P, snapshot S, N concepts` → (S, N).
#[track_caller]
fn parse_deleted(t: &str, bundle: &str, path: &str) -> (String, usize) {
    assert_eq!(t.lines().count(), 1, "{t}");
    let rest = t
        .strip_prefix(&format!("deleted {bundle}/{path}, snapshot "))
        .unwrap_or_else(|| panic!("not a delete answer for {bundle}/{path}: {t}"));
    let (s, n) = rest.split_once(", ").unwrap();
    assert_hex64(s);
    (
        s.to_string(),
        n.strip_suffix(" concepts").unwrap().parse().unwrap(),
    )
}

/// A concept with OKF frontmatter.
fn concept(title: &str, body: &str) -> String {
    format!("---\ntype: Note\ntitle: {title}\n---\n# {title}\n\n{body}\n")
}

/// A `transact` write change.
fn w(bundle: &str, path: &str, content: &str) -> Value {
    json!({"operation": "write", "bundle": bundle, "path": path, "content": content})
}

/// A `transact` write change replacing `hash`.
fn wr(bundle: &str, path: &str, content: &str, hash: &str) -> Value {
    json!({"operation": "write", "bundle": bundle, "path": path, "content": content, "replaces": hash})
}

/// A `transact` delete change.
fn del(bundle: &str, path: &str, hash: &str) -> Value {
    json!({"operation": "delete", "bundle": bundle, "path": path, "replaces": hash})
}

// ------------------------------------------------------------------------
// 1. MCP write and delete on a store
// ------------------------------------------------------------------------

on_both_backends!(async mcp_write_creates_the_tenant_and_refusals_name_the_hash_to_retry_with);
async fn mcp_write_creates_the_tenant_and_refusals_name_the_hash_to_retry_with(backend: Backend) {
    let sb = Sandbox::on(backend);
    assert!(!sb.path("data").exists());
    let c = connect(&sb, &[&sb.store_dsn("acme")]).await;

    let idea = concept("Idea", "First thought about churn.");
    let t = text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": "idea.md", "content": idea}),
    )
    .await;
    assert!(t.contains("wrote inbox/idea.md"), "{t}");
    assert!(t.contains("1 concepts"), "{t}");
    let (h1, s1, n1) = parse_wrote(&t, "inbox", "idea.md");
    assert_eq!(
        h1,
        sha256_hex(idea.as_bytes()),
        "the hash of the exact bytes"
    );
    assert_eq!(n1, 1);
    assert_eq!(t.lines().count(), 1, "a clean concept has no findings: {t}");
    assert_eq!(snapshot_tool(&c).await, (s1.clone(), 1));

    // The tenant exists, alone, with one revision and no sources.json.
    if sb.is_sqlite() {
        assert!(sb.db("acme").is_file(), "the tenant's database exists");
        let tenants: Vec<String> = std::fs::read_dir(sb.path("data/tenants"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(tenants, ["acme"], "no other tenant is created");
        let everywhere: Vec<String> = tree_bytes(&sb.root)
            .into_iter()
            .map(|(p, _)| p)
            .filter(|p| p.ends_with("sources.json"))
            .collect();
        assert!(everywhere.is_empty(), "no sources.json: {everywhere:?}");
    }
    let hist = blocking(|| sb.history_all("acme"));
    assert_eq!(hist.len(), 1, "one write, one revision: {hist:?}");
    assert_eq!(hist[0]["snapshot"], json!(s1));
    assert_eq!(hist[0]["parent"], Value::Null);
    assert_eq!(hist[0]["concepts"], json!(1));
    assert_eq!(hist[0]["bundles"], json!(["inbox"]));

    // Immediately readable through the same server and another process.
    let g = text(&c, "get", json!({"ids": ["idea"]})).await;
    assert!(g.contains("First thought about churn."), "{g}");
    let m = text(&c, "manifest", json!({})).await;
    assert_eq!(row_ids(&m), ["idea"], "{m}");
    assert_eq!(bundles_line(&m), ["inbox"]);
    assert_eq!(blocking(|| sb.snapshot("acme")), (s1.clone(), 1));

    // A second create is refused with the hash to retry with.
    let idea2 = concept("Idea", "Second thought about churn.");
    let e = error_text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": "idea.md", "content": idea2}),
    )
    .await;
    assert!(e.contains("already exists"), "{e}");
    assert_eq!(
        e,
        format!("concept already exists{RETRY}\nretry with replaces: \"{h1}\"")
    );
    assert_eq!(retry_hash(&e).as_deref(), Some(h1.as_str()));
    assert_eq!(snapshot_tool(&c).await.0, s1, "a refusal writes nothing");

    // The retry with that hash succeeds.
    let t = text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": "idea.md", "content": idea2, "replaces": h1}),
    )
    .await;
    let (h2, s2, n2) = parse_wrote(&t, "inbox", "idea.md");
    assert_eq!(h2, sha256_hex(idea2.as_bytes()));
    assert_eq!(n2, 1);
    assert_ne!(s2, s1);
    assert_eq!(snapshot_tool(&c).await, (s2.clone(), 1));
    let g = text(&c, "get", json!({"ids": ["idea"]})).await;
    assert!(
        g.contains("Second thought") && !g.contains("First thought"),
        "{g}"
    );

    // A stale hash: changed since it was read, with the current hash.
    let e = error_text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": "idea.md", "content": idea, "replaces": "a".repeat(64)}),
    )
    .await;
    assert!(e.contains("changed since it was read"), "{e}");
    assert_eq!(
        e,
        format!("concept changed since it was read{RETRY}\nretry with replaces: \"{h2}\"")
    );
    // A hash for a document that does not exist: no retry line.
    let e = error_text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": "nope.md", "content": idea, "replaces": h2}),
    )
    .await;
    assert_eq!(e, format!("concept does not exist{RETRY}"));
    assert_eq!(snapshot_tool(&c).await, (s2, 1), "refusals write nothing");
    assert_eq!(blocking(|| sb.history_all("acme")).len(), 2);
    close(c).await;
}

on_both_backends!(async mcp_write_reports_findings_for_the_written_file_only_and_refuses_bad_names);
async fn mcp_write_reports_findings_for_the_written_file_only_and_refuses_bad_names(
    backend: Backend,
) {
    let sb = Sandbox::on(backend);
    let c = connect(&sb, &[&sb.store_dsn("acme")]).await;
    let t = text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": "good.md", "content": concept("Good", "fine")}),
    )
    .await;
    assert_eq!(t.lines().count(), 1, "{t}");

    // A file without frontmatter: findings for that path, about frontmatter.
    let t = text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": "bare.md", "content": "# Bare\n\nno frontmatter here\n"}),
    )
    .await;
    let (_, s, _) = parse_wrote(&t, "inbox", "bare.md");
    assert_eq!(snapshot_tool(&c).await.0, s);
    let findings: Vec<&str> = t.lines().skip(1).collect();
    assert!(!findings.is_empty(), "a bare file has findings: {t}");
    for f in &findings {
        let (level, rest) = f.split_once(' ').unwrap();
        assert!(
            ["error", "warning", "info"].contains(&level),
            "finding {f:?} starts with its level"
        );
        assert!(rest.starts_with("bare.md: "), "finding {f:?} names bare.md");
    }
    assert!(
        findings.iter().any(|f| f.contains("frontmatter")),
        "a finding about frontmatter: {t}"
    );

    // Other files' findings never appear in a write answer.
    let t = text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": "other.md", "content": concept("Other", "fine")}),
    )
    .await;
    assert_eq!(t.lines().count(), 1, "bare.md's findings leak: {t}");
    let t = text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": "bare2.md", "content": "no frontmatter either\n"}),
    )
    .await;
    assert!(t.lines().count() > 1, "{t}");
    for f in t.lines().skip(1) {
        assert!(f.contains(" bare2.md: "), "only bare2.md's findings: {t}");
        assert!(!f.contains("bare.md:"), "{t}");
    }

    // Refused names, with the reference's messages; nothing is written.
    let before = snapshot_tool(&c).await;
    let revisions = blocking(|| sb.revisions("acme"));
    let long = format!("{}.md", "a".repeat(198));
    assert_eq!(long.chars().count(), 201);
    let cases: Vec<(&str, &str, String)> = vec![
        (
            "inbox",
            "notes.txt",
            "invalid path \"notes.txt\": a concept must be a .md file".into(),
        ),
        (
            "inbox",
            "../x.md",
            "invalid path \"../x.md\": resolves outside the bundle".into(),
        ),
        (
            "inbox",
            "/x.md",
            "invalid path \"/x.md\": must be relative to the bundle".into(),
        ),
        (
            "inbox",
            "a\\b.md",
            "invalid path \"a\\b.md\": use forward slashes only".into(),
        ),
        (
            "inbox",
            &long,
            format!("invalid path \"{long}\": longer than 200 characters"),
        ),
        (
            "Bad Name",
            "x.md",
            "invalid bundle name \"Bad Name\": expected 1-64 chars of [a-z0-9_-]".into(),
        ),
    ];
    for (bundle, path, expected) in &cases {
        let e = error_text(
            &c,
            "write",
            json!({"bundle": bundle, "path": path, "content": concept("X", "x")}),
        )
        .await;
        assert_eq!(&e, expected, "write {bundle}/{path}");
        assert_eq!(snapshot_tool(&c).await, before, "{bundle}/{path} wrote");
    }
    assert_eq!(blocking(|| sb.revisions("acme")), revisions);
    let m = text(&c, "manifest", json!({})).await;
    assert_eq!(bundles_line(&m), ["inbox"], "{m}");

    // 200 characters is the limit, not past it.
    let longest = format!("{}.md", "a".repeat(197));
    let t = text(
        &c,
        "write",
        json!({"bundle": "inbox", "path": longest, "content": concept("Long", "x")}),
    )
    .await;
    parse_wrote(&t, "inbox", &longest);
    close(c).await;
}

on_both_backends!(async mcp_delete_needs_the_hash_and_the_last_concept_takes_its_bundle_along);
async fn mcp_delete_needs_the_hash_and_the_last_concept_takes_its_bundle_along(backend: Backend) {
    let sb = Sandbox::on(backend);
    let c = connect(&sb, &[&sb.store_dsn("acme")]).await;
    let first = concept("First", "one");
    let second = concept("Second", "two");
    let only = concept("Only", "alone");
    for (b, p, content) in [
        ("inbox", "first.md", &first),
        ("inbox", "second.md", &second),
        ("solo", "only.md", &only),
    ] {
        let t = text(
            &c,
            "write",
            json!({"bundle": b, "path": p, "content": content}),
        )
        .await;
        let (_, s, _) = parse_wrote(&t, b, p);
        assert_eq!(snapshot_tool(&c).await.0, s, "write answer = snapshot tool");
    }
    let h2 = sha256_hex(second.as_bytes());
    let before = snapshot_tool(&c).await;
    assert_eq!(before.1, 3);
    let m = text(&c, "manifest", json!({})).await;
    assert_eq!(bundles_line(&m), ["inbox", "solo"], "{m}");

    // Without a hash: refused, naming it.
    let e = error_text(
        &c,
        "delete",
        json!({"bundle": "inbox", "path": "second.md"}),
    )
    .await;
    assert!(e.contains("deleting needs the hash"), "{e}");
    assert_eq!(
        e,
        format!(
            "deleting needs the hash of the version being removed\nretry with replaces: \"{h2}\""
        )
    );
    // A stale hash: refused, the concept untouched.
    let e = error_text(
        &c,
        "delete",
        json!({"bundle": "inbox", "path": "second.md", "replaces": "a".repeat(64)}),
    )
    .await;
    assert!(e.contains("changed since it was read"), "{e}");
    assert_eq!(retry_hash(&e).as_deref(), Some(h2.as_str()), "{e}");
    assert_eq!(snapshot_tool(&c).await, before);
    let g = text(&c, "get", json!({"ids": ["second"]})).await;
    assert!(g.contains("two"), "{g}");

    // With the hash: deleted, gone from the manifest.
    let t = text(
        &c,
        "delete",
        json!({"bundle": "inbox", "path": "second.md", "replaces": h2}),
    )
    .await;
    assert!(t.contains("deleted inbox/second.md"), "{t}");
    let (s, n) = parse_deleted(&t, "inbox", "second.md");
    assert_eq!(n, 2);
    assert_eq!(snapshot_tool(&c).await, (s, 2));
    let m = text(&c, "manifest", json!({})).await;
    assert_eq!(row_ids(&m), ["first", "only"], "{m}");
    let g = text(&c, "get", json!({"ids": ["second"]})).await;
    assert!(!g.contains("two"), "a deleted concept is not served: {g}");

    // Deleting again: does not exist, no retry line (with or without a hash).
    let e = error_text(
        &c,
        "delete",
        json!({"bundle": "inbox", "path": "second.md"}),
    )
    .await;
    assert!(e.contains("does not exist"), "{e}");
    assert_eq!(e, "concept does not exist");
    let e = error_text(
        &c,
        "delete",
        json!({"bundle": "inbox", "path": "second.md", "replaces": h2}),
    )
    .await;
    assert_eq!(e, format!("concept does not exist{RETRY}"), "no retry line");

    // The last concept of a bundle takes the bundle along.
    let t = text(
        &c,
        "delete",
        json!({"bundle": "solo", "path": "only.md", "replaces": sha256_hex(only.as_bytes())}),
    )
    .await;
    let (s, n) = parse_deleted(&t, "solo", "only.md");
    assert_eq!(n, 1);
    assert_eq!(snapshot_tool(&c).await, (s.clone(), 1));
    let m = text(&c, "manifest", json!({})).await;
    assert_eq!(bundles_line(&m), ["inbox"], "{m}");
    let hist = blocking(|| sb.history_all("acme"));
    assert_eq!(hist.len(), 5, "3 writes and 2 deletes");
    assert_eq!(hist[0]["bundles"], json!(["inbox"]));
    assert_eq!(hist[0]["snapshot"], json!(s));
    blocking(|| sb.assert_verified("acme"));
    close(c).await;
}

// ------------------------------------------------------------------------
// 2. The database tools over MCP
// ------------------------------------------------------------------------

on_both_backends!(async mcp_database_tools_are_listed_in_order_and_checked_against_their_schemas);
async fn mcp_database_tools_are_listed_in_order_and_checked_against_their_schemas(
    backend: Backend,
) {
    let sb = Sandbox::on(backend);
    let dsn = sb.store_dsn("acme");
    let plain = connect(&sb, &[&dsn]).await;
    assert_eq!(tool_names(&plain).await, DATABASE_SERVER_TOOLS[..6]);
    close(plain).await;

    let c = connect(&sb, &[&dsn, "--database-tools"]).await;
    assert_eq!(tool_names(&c).await, DATABASE_SERVER_TOOLS);

    let m = invalid_params(
        &c,
        "transact",
        json!({"changes": [{"operation": "write", "bundle": "inbox", "path": "a.md", "content": "x", "replaces": "nope"}]}),
    )
    .await;
    assert_eq!(m, PATTERN_ERROR);
    // An uppercase digest breaks the pattern too.
    let m = invalid_params(
        &c,
        "transact",
        json!({"changes": [{"operation": "delete", "bundle": "inbox", "path": "a.md", "replaces": "A".repeat(64)}]}),
    )
    .await;
    assert_eq!(m, PATTERN_ERROR);

    let many: Vec<Value> = (0..1001)
        .map(|i| w("inbox", &format!("n{i}.md"), "x"))
        .collect();
    let m = invalid_params(&c, "transact", json!({"changes": many})).await;
    assert!(
        m.starts_with("Input validation error: Invalid arguments for tool transact: "),
        "{m}"
    );
    let m = invalid_params(&c, "transact", json!({"changes": []})).await;
    assert!(m.contains("tool transact"), "{m}");
    for limit in [0, 101] {
        let m = invalid_params(&c, "history", json!({"limit": limit})).await;
        assert!(
            m.starts_with("Input validation error: Invalid arguments for tool history: "),
            "{m}"
        );
    }
    let m = invalid_params(
        &c,
        "restore",
        json!({"revision": "x", "expectedRevision": "a".repeat(64)}),
    )
    .await;
    assert!(m.contains("tool restore"), "{m}");
    assert!(!sb.path("data").exists(), "schema refusals write nothing");
    assert!(
        !blocking(|| sb.has_tenant("acme")),
        "schema refusals create no tenant"
    );
    close(c).await;
}

on_both_backends!(async mcp_transact_is_all_or_nothing_and_checks_targets_and_the_expected_revision);
async fn mcp_transact_is_all_or_nothing_and_checks_targets_and_the_expected_revision(
    backend: Backend,
) {
    let sb = Sandbox::on(backend);
    let c = connect(&sb, &[&sb.store_dsn("acme"), "--database-tools"]).await;
    let a = concept("Alpha", "a body");
    let b = concept("Beta", "b body");
    let r1 = json_call(
        &c,
        "transact",
        json!({"changes": [w("inbox", "a.md", &a), w("inbox", "b.md", &b)]}),
    )
    .await;
    let rev1 = r1["revision"].as_str().unwrap().to_string();
    assert_hex64(&rev1);
    assert_eq!(r1["concepts"], json!(2));
    assert_eq!(r1["bundles"], json!(["inbox"]));
    assert_eq!(r1["diagnostics"], json!([]));
    let snap1 = r1["snapshot"].as_str().unwrap().to_string();
    assert_eq!(snapshot_tool(&c).await, (snap1.clone(), 2));
    let (ha, hb) = (sha256_hex(a.as_bytes()), sha256_hex(b.as_bytes()));

    // A batch whose third precondition fails publishes nothing.
    let manifest_before = text(&c, "manifest", json!({})).await;
    let history_before = json_call(&c, "history", json!({})).await;
    let e = error_text(
        &c,
        "transact",
        json!({"changes": [
            w("inbox", "c.md", &concept("Gamma", "c")),
            wr("inbox", "a.md", &concept("Alpha", "changed"), &ha),
            w("inbox", "b.md", &concept("Beta", "recreated")),
        ]}),
    )
    .await;
    assert_eq!(
        e,
        format!("inbox/b.md: concept already exists{RETRY}\nretry with replaces: \"{hb}\"")
    );
    assert_eq!(text(&c, "manifest", json!({})).await, manifest_before);
    assert_eq!(json_call(&c, "history", json!({})).await, history_before);
    let g = text(&c, "get", json!({"ids": ["a"]})).await;
    assert!(g.contains("a body") && !g.contains("changed"), "{g}");
    // A stale delete in the middle of a batch: nothing either.
    let e = error_text(
        &c,
        "transact",
        json!({"changes": [
            w("inbox", "c.md", &concept("Gamma", "c")),
            del("inbox", "a.md", &"0".repeat(64)),
            del("inbox", "b.md", &hb),
        ]}),
    )
    .await;
    assert!(
        e.starts_with(&format!(
            "inbox/a.md: concept changed since it was read{RETRY}"
        )),
        "{e}"
    );
    assert_eq!(text(&c, "manifest", json!({})).await, manifest_before);
    assert_eq!(json_call(&c, "history", json!({})).await, history_before);

    // Duplicate targets, compared case-insensitively.
    for changes in [
        json!([w("inbox", "D.md", "x"), w("inbox", "d.md", "y")]),
        json!([wr("inbox", "a.md", "x", &ha), del("INBOX", "A.md", &ha)]),
    ] {
        let e = error_text(&c, "transact", json!({"changes": changes})).await;
        assert_eq!(e, "transaction contains duplicate document targets");
    }
    assert_eq!(json_call(&c, "history", json!({})).await, history_before);

    // expectedRevision: the head commits, anything else is a conflict.
    let r2 = json_call(
        &c,
        "transact",
        json!({"changes": [w("inbox", "c.md", &concept("Gamma", "c"))], "expectedRevision": rev1}),
    )
    .await;
    let rev2 = r2["revision"].as_str().unwrap().to_string();
    let manifest_before = text(&c, "manifest", json!({})).await;
    for stale in [rev1.clone(), "b".repeat(64)] {
        let e = error_text(
            &c,
            "transact",
            json!({"changes": [w("inbox", "e.md", "x")], "expectedRevision": stale}),
        )
        .await;
        assert_eq!(e, DATABASE_CHANGED);
    }
    assert_eq!(text(&c, "manifest", json!({})).await, manifest_before);
    let h = json_call(&c, "history", json!({})).await;
    let revs = h["revisions"].as_array().unwrap();
    assert_eq!(revs.len(), 2);
    assert_eq!(revs[0]["revision"], json!(rev2));
    assert_eq!(revs[0]["parent"], json!(rev1));
    assert_eq!(revs[1]["revision"], json!(rev1));
    assert_eq!(revs[1]["parent"], Value::Null);
    assert_eq!(revs[1]["snapshot"], json!(snap1));
    close(c).await;
}

on_both_backends!(async mcp_history_pages_stably_and_gc_expires_cursors_and_pruned_revisions);
async fn mcp_history_pages_stably_and_gc_expires_cursors_and_pruned_revisions(backend: Backend) {
    let sb = Sandbox::on(backend);
    let c = connect(&sb, &[&sb.store_dsn("acme"), "--database-tools"]).await;
    let mut revs = vec![];
    for i in 1..=5 {
        let r = json_call(
            &c,
            "transact",
            json!({"changes": [w("log", &format!("n{i}.md"), &concept(&format!("N{i}"), "x"))]}),
        )
        .await;
        revs.push(r["revision"].as_str().unwrap().to_string());
    }
    let newest_first: Vec<String> = revs.iter().rev().cloned().collect();
    let page_revs = |p: &Value| -> Vec<String> {
        p["revisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["revision"].as_str().unwrap().to_string())
            .collect()
    };

    let all = json_call(&c, "history", json!({})).await;
    assert_eq!(page_revs(&all), newest_first);
    assert!(all.get("next").is_none(), "no next page: {all}");
    let list = all["revisions"].as_array().unwrap();
    for (i, r) in list.iter().enumerate() {
        assert_eq!(r["concepts"], json!(5 - i), "{r}");
        let expected_parent = list
            .get(i + 1)
            .map_or(Value::Null, |p| p["revision"].clone());
        assert_eq!(r["parent"], expected_parent, "{r}");
    }

    // A commit between pages does not shift the next page.
    let p1 = json_call(&c, "history", json!({"limit": 2})).await;
    assert_eq!(page_revs(&p1), newest_first[..2]);
    let cursor = p1["next"].as_str().unwrap().to_string();
    assert!(cursor.len() <= 512);
    let r6 = json_call(
        &c,
        "transact",
        json!({"changes": [w("log", "n6.md", &concept("N6", "x"))]}),
    )
    .await;
    let rev6 = r6["revision"].as_str().unwrap().to_string();
    let p2 = json_call(&c, "history", json!({"before": cursor, "limit": 2})).await;
    assert_eq!(page_revs(&p2), newest_first[2..4]);
    let cursor2 = p2["next"].as_str().unwrap().to_string();
    let p3 = json_call(&c, "history", json!({"before": cursor2, "limit": 2})).await;
    assert_eq!(page_revs(&p3), newest_first[4..]);
    assert!(p3.get("next").is_none(), "the last page has no next: {p3}");
    let top = json_call(&c, "history", json!({"limit": 1})).await;
    assert_eq!(page_revs(&top), std::slice::from_ref(&rev6));

    // Malformed cursors and cursors of another tenant.
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let other = b64.encode(json!({"version": 1, "tenant": "other", "before": revs[3]}).to_string());
    let v2 = b64.encode(json!({"version": 2, "tenant": "acme", "before": revs[3]}).to_string());
    for bad in ["not a cursor!", "e30", other.as_str(), v2.as_str()] {
        let e = error_text(&c, "history", json!({"before": bad})).await;
        assert_eq!(e, "invalid history cursor", "cursor {bad}");
    }
    // The CLI applies the same limits.
    let out = blocking(|| sb.store("acme", &["history", "--limit", "101"]));
    out.expect_code(1);
    assert!(
        out.stderr
            .contains("history limit must be an integer from 1 to 100"),
        "{}",
        out.stderr
    );

    // gc --keep 1: old cursors expire, pruned revisions cannot be restored.
    let gc = blocking(|| sb.store("acme", &["gc", "--keep", "1"]).json());
    assert_eq!(gc["removedRevisions"], json!(5), "{gc}");
    let e = error_text(&c, "history", json!({"before": cursor})).await;
    assert_eq!(
        e,
        "history cursor expired or is not committed; restart history pagination"
    );
    let left = json_call(&c, "history", json!({})).await;
    assert_eq!(page_revs(&left), std::slice::from_ref(&rev6));
    let e = error_text(
        &c,
        "restore",
        json!({"revision": revs[0], "expectedRevision": rev6}),
    )
    .await;
    assert_eq!(e, "revision is not in retained committed history");
    // A digest that was never committed is refused the same way.
    let e = error_text(
        &c,
        "restore",
        json!({"revision": "c".repeat(64), "expectedRevision": rev6}),
    )
    .await;
    assert_eq!(e, "revision is not in retained committed history");
    assert_eq!(
        page_revs(&json_call(&c, "history", json!({})).await),
        [rev6]
    );
    let v = blocking(|| sb.assert_verified("acme"));
    assert_eq!(v["revisions"], json!(1), "{v}");
    assert_eq!(v["documents"], json!(6), "{v}");
    close(c).await;
}

on_both_backends!(async mcp_restore_reproduces_exact_sources_as_a_new_revision);
async fn mcp_restore_reproduces_exact_sources_as_a_new_revision(backend: Backend) {
    let sb = Sandbox::on(backend);
    let c = connect(&sb, &[&sb.store_dsn("acme"), "--database-tools"]).await;
    let crlf = "---\r\ntype: Note\r\ntitle: Line endings\r\n---\r\n# Line endings\r\n\r\nfirst line\r\nsecond line\r\n";
    let kanji = "---\ntype: Note\ntitle: 漢字\n---\n# 漢字\n\n漢字のテキストと絵文字 🦀。\n";
    let bom = "\u{feff}---\ntype: Note\ntitle: Marked\n---\n# Marked\n\nbyte order mark first\n";
    let index = "# Docs\n\n- [Line endings](crlf.md)\n";
    let keep = concept("Keep", "unchanged throughout");
    let r0 = json_call(
        &c,
        "transact",
        json!({"changes": [
            w("docs", "crlf.md", crlf),
            w("docs", "kanji.md", kanji),
            w("docs", "bom.md", bom),
            w("docs", "index.md", index),
            w("keep", "keep.md", &keep),
        ]}),
    )
    .await;
    let rev0 = r0["revision"].as_str().unwrap().to_string();
    let snap0 = r0["snapshot"].as_str().unwrap().to_string();
    assert_eq!(r0["concepts"], json!(4), "index.md is not a concept: {r0}");
    let exported0 = blocking(|| sb.export("acme"));
    let expected0: Vec<(String, Vec<u8>)> = {
        let mut v = vec![
            ("docs/bom.md".to_string(), bom.as_bytes().to_vec()),
            ("docs/crlf.md".to_string(), crlf.as_bytes().to_vec()),
            ("docs/index.md".to_string(), index.as_bytes().to_vec()),
            ("docs/kanji.md".to_string(), kanji.as_bytes().to_vec()),
            ("keep/keep.md".to_string(), keep.as_bytes().to_vec()),
        ];
        v.sort();
        v
    };
    assert_eq!(exported0, expected0, "export gives the exact bytes");

    // Delete, rename, create (a new bundle too).
    let r1 = json_call(
        &c,
        "transact",
        json!({"changes": [del("docs", "crlf.md", &sha256_hex(crlf.as_bytes()))]}),
    )
    .await;
    let r2 = json_call(
        &c,
        "transact",
        json!({"changes": [
            del("docs", "kanji.md", &sha256_hex(kanji.as_bytes())),
            w("docs", "moved/kanji.md", kanji),
        ]}),
    )
    .await;
    let r3 = json_call(
        &c,
        "transact",
        json!({"changes": [
            w("docs", "new.md", &concept("New", "created later")),
            w("extra", "x.md", &concept("Extra", "a later bundle")),
        ]}),
    )
    .await;
    assert_eq!(r3["bundles"], json!(["docs", "extra", "keep"]));
    // A source-only change (navigation) still gets its own revision.
    let index2 = "# Docs\n\n- [Moved](moved/kanji.md)\n";
    let manifest3 = text(&c, "manifest", json!({})).await;
    let r4 = json_call(
        &c,
        "transact",
        json!({"changes": [wr("docs", "index.md", index2, &sha256_hex(index.as_bytes()))]}),
    )
    .await;
    let rev4 = r4["revision"].as_str().unwrap().to_string();
    assert_ne!(rev4, r3["revision"].as_str().unwrap());
    assert_eq!(r4["concepts"], r3["concepts"]);
    assert_eq!(
        text(&c, "manifest", json!({})).await,
        manifest3,
        "a navigation edit leaves the manifest alone"
    );
    let heads: Vec<Value> = [&r0, &r1, &r2, &r3, &r4]
        .iter()
        .rev()
        .map(|r| r["revision"].clone())
        .collect();
    let h = json_call(&c, "history", json!({})).await;
    let listed: Vec<Value> = h["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revision"].clone())
        .collect();
    assert_eq!(listed, heads);
    let exported4 = blocking(|| sb.export("acme"));
    let snap4 = r4["snapshot"].as_str().unwrap().to_string();

    // Restore rev0 on top of rev4.
    let rr = json_call(
        &c,
        "restore",
        json!({"revision": rev0, "expectedRevision": rev4}),
    )
    .await;
    let rev5 = rr["revision"].as_str().unwrap().to_string();
    assert_hex64(&rev5);
    assert!(rev5 != rev0 && rev5 != rev4, "a restore is a new revision");
    assert_eq!(rr["snapshot"], json!(snap0), "the restored snapshot");
    assert_eq!(rr["concepts"], json!(4));
    assert_eq!(rr["bundles"], json!(["docs", "keep"]));
    assert_eq!(snapshot_tool(&c).await, (snap0.clone(), 4));
    let h = json_call(&c, "history", json!({"limit": 1})).await;
    assert_eq!(h["revisions"][0]["revision"], json!(rev5));
    assert_eq!(h["revisions"][0]["parent"], json!(rev4));
    assert_eq!(h["revisions"][0]["snapshot"], json!(snap0));
    assert_eq!(
        blocking(|| sb.export("acme")),
        expected0,
        "the restore reproduces the exact bytes and drops later documents"
    );
    let g = text(&c, "get", json!({"ids": ["docs/kanji"]})).await;
    assert!(g.contains("漢字のテキスト"), "{g}");
    let m = text(&c, "manifest", json!({})).await;
    assert!(!row_ids(&m).contains(&"new"), "{m}");

    // A stale expected revision: changed, nothing published.
    let e = error_text(
        &c,
        "restore",
        json!({"revision": rev0, "expectedRevision": rev4}),
    )
    .await;
    assert!(e.contains("changed"), "{e}");
    assert_eq!(e, DATABASE_CHANGED);
    let h = json_call(&c, "history", json!({"limit": 1})).await;
    assert_eq!(h["revisions"][0]["revision"], json!(rev5));

    // A restore is undone by another restore.
    let rr = json_call(
        &c,
        "restore",
        json!({"revision": rev4, "expectedRevision": rev5}),
    )
    .await;
    assert_eq!(rr["snapshot"], json!(snap4));
    assert_eq!(blocking(|| sb.export("acme")), exported4);
    // The long-lived server ranks exactly like a fresh process.
    for q in [
        "line endings",
        "漢字",
        "byte order mark",
        "created later",
        "unchanged",
    ] {
        let served = text(&c, "search", json!({"query": q})).await;
        let fresh = blocking(|| sb.store("acme", &["search", q]).ok());
        assert_eq!(served.trim_end(), fresh.trim_end(), "search {q}");
    }
    let v = blocking(|| sb.assert_verified("acme"));
    assert_eq!(v["revisions"], json!(7), "{v}");
    close(c).await;
}

// ------------------------------------------------------------------------
// 3. verify and corruption
// ------------------------------------------------------------------------

#[test]
fn verify_passes_on_a_healthy_store_and_names_corrupted_or_missing_content() {
    let sb = Sandbox::new();
    let t = "acme";
    let a1 = concept("Alpha", "first version");
    let a2 = concept("Alpha", "second version");
    let b = concept("Beta", "beta");
    let c1 = concept("Gamma", "first gamma");
    let c2 = concept("Gamma", "second gamma");
    sb.store_in(t, &["write", "notes", "a.md", "--create"], a1.as_bytes())
        .expect_code(0);
    let rev_a1 = sb.head(t);
    let ha1 = sha256_hex(a1.as_bytes());
    sb.store_in(
        t,
        &["write", "notes", "a.md", "--replaces", &ha1],
        a2.as_bytes(),
    )
    .expect_code(0);
    sb.store_in(t, &["write", "notes", "b.md", "--create"], b.as_bytes())
        .expect_code(0);
    sb.store_in(t, &["write", "notes", "c.md", "--create"], c1.as_bytes())
        .expect_code(0);
    let rev_c1 = sb.head(t);
    let hc1 = sha256_hex(c1.as_bytes());
    sb.store_in(
        t,
        &["write", "notes", "c.md", "--replaces", &hc1],
        c2.as_bytes(),
    )
    .expect_code(0);

    let v = sb.assert_verified(t);
    assert_eq!(v["revisions"], json!(5), "{v}");
    assert_eq!(v["documents"], json!(3), "{v}");
    assert_eq!(v["contents"], json!(5), "{v}");
    let head = sb.head(t);
    let history = sb.history_all(t);

    let db = sb.db(t);
    if !sql(
        &db,
        &format!("UPDATE blobs SET bytes = X'00' WHERE hash = '{ha1}'"),
    ) {
        eprintln!(
            "note: neither sqlite3 nor python3 is available; the corruption cases are skipped"
        );
        return;
    }
    assert!(sql(&db, &format!("DELETE FROM blobs WHERE hash = '{hc1}'")));

    let (code, v) = sb.verify(t);
    assert_eq!(v["ok"], json!(false), "{v}");
    assert_eq!(code, 1, "verify exits 1 when anything is wrong: {v}");
    let problems: Vec<&str> = v["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p.as_str().unwrap())
        .collect();
    assert!(
        problems
            .iter()
            .any(|p| p.contains(&ha1) && p.contains("does not match its digest")),
        "{problems:?}"
    );
    assert!(
        problems
            .iter()
            .any(|p| p.contains(&hc1) && p.contains("missing")),
        "{problems:?}"
    );

    // Restoring a revision that needs the bad content fails; HEAD stays.
    for (rev, doc) in [(&rev_a1, "notes/a.md"), (&rev_c1, "notes/c.md")] {
        let out = sb.store(t, &["restore", rev, "--expected-revision", &head]);
        assert_ne!(out.code, 0, "restore of damaged content succeeded");
        assert!(
            out.stderr.contains("database corruption") && out.stderr.contains(doc),
            "{}",
            out.stderr
        );
        assert_eq!(sb.head(t), head, "HEAD is unchanged");
    }
    assert_eq!(sb.history_all(t), history);
    // The current documents still read.
    let got = sb.store(t, &["get", "a", "b", "c"]).ok();
    assert!(
        got.contains("second version") && got.contains("second gamma"),
        "{got}"
    );
}

// ------------------------------------------------------------------------
// 4. Crash safety: SIGKILL at random moments
// ------------------------------------------------------------------------

/// Documents per crash-test transaction.
#[cfg(unix)]
const PER_BATCH: usize = 5;

/// A deterministic pseudo-random sequence (xorshift64).
#[cfg(unix)]
struct Rng(u64);

#[cfg(unix)]
impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }

    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// The batch number of a crash-test id `b<batch>-<k>`.
#[cfg(unix)]
fn batch_of(id: &str) -> u64 {
    id.strip_prefix('b')
        .and_then(|r| r.split_once('-'))
        .and_then(|(n, _)| n.parse().ok())
        .unwrap_or_else(|| panic!("unexpected id {id}"))
}

#[cfg(unix)]
on_both_backends!(
    sigkill_at_random_moments_never_loses_an_acknowledged_commit_nor_shows_half_of_one
);
fn sigkill_at_random_moments_never_loses_an_acknowledged_commit_nor_shows_half_of_one(
    backend: Backend,
) {
    use std::collections::{BTreeMap, BTreeSet};
    use std::os::unix::process::CommandExt;
    const KILLS: usize = 24;
    let started = Instant::now();
    let sb = Sandbox::on(backend);
    let tenant = "crash";
    // Every batch creates PER_BATCH documents carrying its number: the
    // child fills the number into this template.
    let changes: Vec<Value> = (0..PER_BATCH)
        .map(|k| {
            w(
                "crash",
                &format!("b@N@-{k}.md"),
                &format!(
                    "---\ntype: Note\ntitle: Batch @N@ part {k}\nbatch: @N@\n---\n# Batch @N@\n\nbatch @N@, part {k} of {PER_BATCH}.\n{}\n",
                    "filler text ".repeat(200)
                ),
            )
        })
        .collect();
    let template = sb.write("batch.json", json!({ "changes": changes }).to_string());
    let script = sb.write(
        "child.sh",
        "i=$1\nwhile :; do\n  n=$(printf %07d \"$i\")\n  out=$(sed \"s/@N@/$n/g\" \"$TEMPLATE\" | \"$OKFIT\" transact -c \"$CONN\") || { echo \"failed $n\"; exit 1; }\n  rev=${out#*\\\"revision\\\":\\\"}\n  rev=${rev%%\\\"*}\n  echo \"acked $n $rev\"\n  i=$((i+1))\ndone\n",
    );

    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut acked: Vec<(u64, String)> = vec![];
    let mut delays = vec![];
    for run in 0..KILLS {
        let from = run as u64 * 100_000;
        let child_err = std::fs::File::create(sb.path(&format!("child-{run}.err"))).unwrap();
        let mut cmd = Command::new("/bin/sh");
        cmd.arg(&script)
            .arg(from.to_string())
            .current_dir(&sb.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", sb.path("home"))
            .env("OKFIT", OKFIT)
            .env("CONN", sb.store_dsn(tenant))
            .env("TEMPLATE", &template)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::from(child_err))
            .process_group(0);
        let mut child = cmd.spawn().expect("start the committing child");
        let pid = child.id();
        let stdout = child.stdout.take().unwrap();
        // Only complete lines count: the kill may cut the last one short.
        let reader = std::thread::spawn(move || {
            let mut bytes = vec![];
            let _ = std::io::BufReader::new(stdout).read_to_end(&mut bytes);
            let text = String::from_utf8_lossy(&bytes).into_owned();
            let mut lines: Vec<String> = text.split_inclusive('\n').map(str::to_string).collect();
            if lines.last().is_some_and(|l| !l.ends_with('\n')) {
                lines.pop();
            }
            lines
                .into_iter()
                .map(|l| l.trim_end().to_string())
                .collect::<Vec<String>>()
        });
        let delay = rng.range(50, 400);
        delays.push(delay);
        std::thread::sleep(Duration::from_millis(delay));
        let k = Command::new("kill")
            .args(["-s", "KILL", "--", &format!("-{pid}")])
            .status()
            .expect("run kill");
        assert!(k.success(), "kill the child's process group");
        let _ = child.wait();
        let lines = reader.join().unwrap();
        let errors = std::fs::read_to_string(sb.path(&format!("child-{run}.err"))).unwrap();
        for l in &lines {
            assert!(
                !l.starts_with("failed"),
                "a transaction failed without being killed: {l}\n{errors}"
            );
            let mut parts = l.split(' ');
            assert_eq!(parts.next(), Some("acked"), "{l}");
            let n: u64 = parts.next().unwrap().parse().unwrap();
            let rev = parts.next().unwrap().to_string();
            assert_hex64(&rev);
            acked.push((n, rev));
        }

        if !sb.has_tenant(tenant) {
            continue;
        }
        // The store verifies, and every acknowledged revision is there.
        let v = sb.assert_verified(tenant);
        let history = sb.history_all(tenant);
        let listed: BTreeSet<&str> = history
            .iter()
            .map(|r| r["revision"].as_str().unwrap())
            .collect();
        assert_eq!(v["revisions"], json!(history.len()), "{v}");
        for (n, rev) in &acked {
            assert!(
                listed.contains(rev.as_str()),
                "run {run}: batch {n} was acknowledged as {rev} but is not in history"
            );
        }
        for (i, r) in history.iter().enumerate() {
            let parent = history
                .get(i + 1)
                .map_or(Value::Null, |p| p["revision"].clone());
            assert_eq!(r["parent"], parent, "the history is one chain");
        }
        // No half commits: every batch present has all its documents.
        let m = sb.manifest(tenant);
        let mut per_batch: BTreeMap<u64, usize> = BTreeMap::new();
        for id in row_ids(&m) {
            *per_batch.entry(batch_of(id)).or_default() += 1;
        }
        for (b, n) in &per_batch {
            assert_eq!(
                *n, PER_BATCH,
                "run {run}: batch {b} is visible with {n} of {PER_BATCH} documents"
            );
        }
        assert_eq!(
            per_batch.len(),
            history.len(),
            "one revision per batch present"
        );
        for (n, _) in &acked {
            assert!(per_batch.contains_key(n), "acknowledged batch {n} is gone");
        }
        if let Some(head) = history.first() {
            let (_, concepts) = sb.snapshot(tenant);
            assert_eq!(concepts, per_batch.len() * PER_BATCH);
            assert_eq!(head["concepts"], json!(concepts));
        }
    }
    assert!(
        !acked.is_empty(),
        "no commit was acknowledged before any kill: the test checked nothing"
    );
    eprintln!(
        "crash test: {KILLS} kills after {delays:?} ms, {} acknowledged commits, {} revisions, {:?}",
        acked.len(),
        sb.history_all(tenant).len(),
        started.elapsed()
    );
}

// ------------------------------------------------------------------------
// 5. Racing writers
// ------------------------------------------------------------------------

on_both_backends!(of_two_writers_replacing_the_same_hash_exactly_one_wins);
fn of_two_writers_replacing_the_same_hash_exactly_one_wins(backend: Backend) {
    const ROUNDS: usize = 50;
    let sb = Sandbox::on(backend);
    let t = "race";
    let base = concept("Contested", "round 0");
    sb.store_in(t, &["write", "r", "doc.md", "--create"], base.as_bytes())
        .expect_code(0);
    let mut current = sha256_hex(base.as_bytes());
    let mut wins = [0usize; 2];
    let mut last = base;
    for round in 1..=ROUNDS {
        let contents: Vec<String> = ["A", "B"]
            .iter()
            .map(|who| concept("Contested", &format!("round {round} won by writer {who}")))
            .collect();
        let files: Vec<String> = contents
            .iter()
            .enumerate()
            .map(|(i, c)| {
                sb.write(&format!("race/{round}-{i}.md"), c)
                    .display()
                    .to_string()
            })
            .collect();
        let started: Vec<_> = files
            .iter()
            .map(|f| {
                common::spawn(
                    sb.store_command(
                        t,
                        &["write", "r", "doc.md", "--replaces", &current, "--from", f],
                    ),
                    None,
                )
            })
            .collect();
        let outs: Vec<Out> = started
            .into_iter()
            .map(|(c, f)| common::collect(c, f, HANG))
            .collect();
        let winners: Vec<usize> = (0..2).filter(|i| outs[*i].code == 0).collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one writer wins\nA: {} {}\nB: {} {}",
            outs[0].code,
            outs[0].stderr,
            outs[1].code,
            outs[1].stderr
        );
        let win = winners[0];
        let lose = 1 - win;
        wins[win] += 1;
        let h = sha256_hex(contents[win].as_bytes());
        assert!(
            outs[win]
                .stderr
                .starts_with(&format!("wrote r/doc.md {h}\n")),
            "{}",
            outs[win].stderr
        );
        assert_eq!(outs[lose].code, 1, "{}", outs[lose].stderr);
        assert_eq!(
            outs[lose].stderr,
            format!(
                "error: r/doc.md: concept changed since it was read{RETRY}\nretry with replaces: \"{h}\"\n"
            ),
            "round {round}: the loser names the winner's hash"
        );
        current = h;
        last = contents[win].clone();
    }
    assert_eq!(
        sb.export(t),
        [("r/doc.md".to_string(), last.into_bytes())],
        "the final content is the last winner's"
    );
    assert_eq!(sb.history_all(t).len(), ROUNDS + 1);
    sb.assert_verified(t);
    eprintln!(
        "race: writer A won {} rounds, writer B {}",
        wins[0], wins[1]
    );
}

on_both_backends!(a_commit_waits_while_another_process_holds_the_tenants_commit_lock);
fn a_commit_waits_while_another_process_holds_the_tenants_commit_lock(backend: Backend) {
    let sb = Sandbox::on(backend);
    let t = "turns";
    sb.store_in(
        t,
        &["write", "r", "first.md", "--create"],
        concept("First", "one").as_bytes(),
    )
    .expect_code(0);
    let held = sb.tenants.hold_commit_lock(t);
    let second = sb.write("second.md", concept("Second", "two"));
    let second = second.display().to_string();
    let (mut child, feeder) = common::spawn(
        sb.store_command(
            t,
            &["write", "r", "second.md", "--create", "--from", &second],
        ),
        None,
    );
    // Long enough for an unhindered write to land several times over.
    std::thread::sleep(Duration::from_millis(800));
    assert!(
        child.try_wait().expect("poll the writer").is_none(),
        "the write landed while another process held the tenant's commit lock"
    );
    assert_eq!(sb.history_all(t).len(), 1, "nothing committed meanwhile");
    drop(held);
    common::collect(child, feeder, HANG).expect_code(0);
    assert_eq!(sb.history_all(t).len(), 2);
}

on_both_backends!(writers_in_many_processes_take_turns_and_every_commit_lands);
fn writers_in_many_processes_take_turns_and_every_commit_lands(backend: Backend) {
    const WRITERS: usize = 6;
    const EACH: usize = 5;
    let sb = Sandbox::on(backend);
    let t = "crowd";
    sb.store_in(
        t,
        &["write", "r", "base.md", "--create"],
        concept("Base", "start").as_bytes(),
    )
    .expect_code(0);
    let files: Vec<Vec<String>> = (0..WRITERS)
        .map(|w| {
            (0..EACH)
                .map(|i| {
                    let c = concept(&format!("Note {w} {i}"), &format!("writer {w}, note {i}"));
                    sb.write(&format!("crowd/{w}-{i}.md"), &c)
                        .display()
                        .to_string()
                })
                .collect()
        })
        .collect();
    std::thread::scope(|scope| {
        for (w, notes) in files.iter().enumerate() {
            let sb = &sb;
            scope.spawn(move || {
                for (i, f) in notes.iter().enumerate() {
                    let name = format!("w{w}-{i}.md");
                    sb.store(t, &["write", "r", &name, "--create", "--from", f])
                        .expect_code(0);
                }
            });
        }
    });
    assert_eq!(sb.history_all(t).len(), 1 + WRITERS * EACH);
    assert_eq!(sb.export(t).len(), 1 + WRITERS * EACH);
    sb.assert_verified(t);
}

// ------------------------------------------------------------------------
// 6. CLI store commands and folder connections
// ------------------------------------------------------------------------

on_both_backends!(cli_write_and_delete_need_an_explicit_mode_and_refuse_with_the_hash);
fn cli_write_and_delete_need_an_explicit_mode_and_refuse_with_the_hash(backend: Backend) {
    let sb = Sandbox::on(backend);
    let t = "acme";
    let mode = "error: a write needs --replaces <hash> to update, --create for a new concept, or --force to overwrite whatever is there\n";
    for extra in [&[][..], &["--create", "--force"][..]] {
        let mut a = vec!["write", "notes", "a.md"];
        a.extend(extra);
        let out = sb.store_in(t, &a, b"x");
        out.expect_code(64);
        assert_eq!(out.stderr, mode);
    }
    assert!(!sb.path("data").exists(), "a usage error writes nothing");

    let a1 = concept("Alpha", "one");
    let out = sb.store_in(t, &["write", "notes", "a.md", "--create"], a1.as_bytes());
    out.expect_code(0);
    let h1 = sha256_hex(a1.as_bytes());
    assert_eq!(out.stderr, format!("wrote notes/a.md {h1}\n"));

    let out = sb.store_in(t, &["write", "notes", "a.md", "--create"], b"x");
    out.expect_code(1);
    assert_eq!(
        out.stderr,
        format!(
            "error: notes/a.md: concept already exists{RETRY}\nretry with replaces: \"{h1}\"\n"
        )
    );
    let stale = "f".repeat(64);
    let out = sb.store_in(t, &["write", "notes", "a.md", "--replaces", &stale], b"x");
    out.expect_code(1);
    assert_eq!(
        out.stderr,
        format!(
            "error: notes/a.md: concept changed since it was read{RETRY}\nretry with replaces: \"{h1}\"\n"
        )
    );
    let out = sb.store_in(t, &["write", "notes", "zz.md", "--replaces", &h1], b"x");
    out.expect_code(1);
    assert_eq!(
        out.stderr,
        format!("error: notes/zz.md: concept does not exist{RETRY}\n")
    );

    // --force overwrites whatever is there, or creates.
    let a2 = concept("Alpha", "forced");
    let f = sb.write("in/a2.md", &a2);
    let fs = f.display().to_string();
    let out = sb.store(t, &["write", "notes", "a.md", "--force", "--from", &fs]);
    out.expect_code(0);
    assert_eq!(
        out.stderr,
        format!("wrote notes/a.md {}\n", sha256_hex(a2.as_bytes()))
    );
    let bare = "no frontmatter at all\n";
    let out = sb.store_in(
        t,
        &["write", "notes", "bare.md", "--force"],
        bare.as_bytes(),
    );
    out.expect_code(0);
    let lines: Vec<&str> = out.stderr.lines().collect();
    assert_eq!(
        lines[0],
        format!("wrote notes/bare.md {}", sha256_hex(bare.as_bytes()))
    );
    assert!(lines.len() > 1, "{}", out.stderr);
    for l in &lines[1..] {
        assert!(l.contains(" bare.md: "), "{}", out.stderr);
    }
    assert!(out.stderr.contains("frontmatter"), "{}", out.stderr);
    assert_eq!(
        sb.export(t),
        [
            ("notes/a.md".to_string(), a2.as_bytes().to_vec()),
            ("notes/bare.md".to_string(), bare.as_bytes().to_vec()),
        ]
    );

    // delete needs --replaces or --force (not both).
    for extra in [&[][..], &["--force", "--replaces", h1.as_str()][..]] {
        let mut a = vec!["delete", "notes", "a.md"];
        a.extend(extra);
        let out = sb.store(t, &a);
        out.expect_code(64);
        assert_eq!(
            out.stderr,
            "error: delete needs --replaces <hash> or --force\n"
        );
    }
    let out = sb.store(t, &["delete", "notes", "a.md", "--replaces", &h1]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("changed since it was read"),
        "{}",
        out.stderr
    );
    let out = sb.store(t, &["delete", "notes", "a.md", "--force"]);
    out.expect_code(0);
    assert_eq!(out.stderr, "deleted notes/a.md\n");
    let out = sb.store(t, &["delete", "notes", "a.md", "--force"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("concept does not exist"),
        "{}",
        out.stderr
    );

    // restore and gc usage.
    let head = sb.head(t);
    for a in [
        vec!["restore", head.as_str()],
        vec!["restore", "--expected-revision", head.as_str()],
    ] {
        let out = sb.store(t, &a);
        out.expect_code(64);
        assert_eq!(
            out.stderr,
            "error: restore requires a revision and --expected-revision <current revision>\n"
        );
    }
    let out = sb.store(t, &["gc", "--keep", "0"]);
    out.expect_code(64);
    assert!(out.stderr.contains("--keep"), "{}", out.stderr);
    assert_eq!(sb.head(t), head, "usage errors publish nothing");

    // transact on the CLI: one JSON line; a refusal names the change.
    let r = sb.transact(
        t,
        &json!({"changes": [w("notes", "c.md", &concept("C", "c"))], "expectedRevision": head}),
    );
    assert_eq!(r["concepts"], json!(2), "{r}");
    let out = sb.store_in(
        t,
        &["transact"],
        json!({"changes": [w("notes", "d.md", "x")], "expectedRevision": head})
            .to_string()
            .as_bytes(),
    );
    out.expect_code(1);
    assert_eq!(out.stderr, format!("error: {DATABASE_CHANGED}\n"));
    sb.assert_verified(t);
}

#[test]
fn cli_folder_connections_write_files_atomically_and_have_no_revisions() {
    let sb = Sandbox::new();
    let folder = sb.path("kb");
    std::fs::create_dir_all(&folder).unwrap();
    let dsn = format!("okf://{}", folder.display());
    let x1 = concept("X", "first");
    let src = sb.write("in/x1.md", &x1).display().to_string();
    let out = sb.okfit(&[
        "write",
        "-c",
        &dsn,
        "kb",
        "notes/x.md",
        "--create",
        "--from",
        &src,
    ]);
    out.expect_code(0);
    let h1 = sha256_hex(x1.as_bytes());
    assert_eq!(out.stderr, format!("wrote kb/notes/x.md {h1}\n"));
    assert_eq!(
        tree_bytes(&folder),
        [("notes/x.md".to_string(), x1.as_bytes().to_vec())],
        "exactly the file, no temporary files left behind"
    );

    // The bundle must be the folder's name.
    let out = sb.okfit_in(
        &["write", "-c", &dsn, "other", "y.md", "--create"],
        concept("Y", "y").as_bytes(),
    );
    out.expect_code(1);
    assert!(
        out.stderr.contains("\"kb\"") && out.stderr.contains("\"other\""),
        "the refusal names the served bundle: {}",
        out.stderr
    );
    // A stale hash leaves the file alone.
    let out = sb.okfit_in(
        &[
            "write",
            "-c",
            &dsn,
            "kb",
            "notes/x.md",
            "--replaces",
            &"e".repeat(64),
        ],
        b"changed",
    );
    out.expect_code(1);
    assert_eq!(
        out.stderr,
        format!(
            "error: kb/notes/x.md: concept changed since it was read{RETRY}\nretry with replaces: \"{h1}\"\n"
        )
    );
    // The right hash replaces it, atomically.
    let x2 = concept("X", "second");
    let out = sb.okfit_in(
        &["write", "-c", &dsn, "kb", "notes/x.md", "--replaces", &h1],
        x2.as_bytes(),
    );
    out.expect_code(0);
    assert_eq!(
        tree_bytes(&folder),
        [("notes/x.md".to_string(), x2.as_bytes().to_vec())]
    );

    // Database commands need a store connection.
    let batch = json!({"changes": [w("kb", "z.md", "x")]}).to_string();
    let out = sb.okfit_in(&["transact", "-c", &dsn], batch.as_bytes());
    out.expect_code(1);
    assert!(
        out.stderr.contains("needs a store connection"),
        "{}",
        out.stderr
    );
    let out = sb.okfit(&["history", "-c", &dsn]);
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.contains("needs a store connection"),
        "{}",
        out.stderr
    );
    assert_eq!(
        tree_bytes(&folder),
        [("notes/x.md".to_string(), x2.as_bytes().to_vec())],
        "the refused commands touched nothing"
    );
}
