//! End-to-end tests of the knowledge side of okfit: connection strings,
//! the embedded SQLite store (`put`, `import`, `export`), the read
//! commands (`manifest`, `search`, `get`, `snapshot`) over a store and over
//! a folder connection, and the `okfit-mcp` server on a connection (the
//! knowledge tools and the `okf://manifest` resource).
//!
//! Everything runs through the real binaries in a temporary sandbox with a
//! cleared environment (`HOME`, `XDG_CONFIG_HOME` and `OKFIT_DATA` point
//! into the sandbox, so nothing outside it is read or written); stores are
//! real SQLite files under `<sandbox>/data/tenants/<tenant>/`, and the MCP
//! server is driven by rmcp's client over the child's stdio (plus a raw
//! JSON-lines driver where stdout itself is inspected). Fixtures come from
//! `tests/fixtures/kb-native/` (copied into the sandbox) or are written by
//! the tests. Waits are bounded so that a hang fails a test; nothing
//! asserts how fast anything is. Contract: SPEC §3, §5, §6; reference
//! `langonrock.md` §1.1, §3.6, §4.1–§4.4, §9.

mod common;
#[path = "common/pg.rs"]
#[macro_use]
mod pg;

use common::{
    assert_hex64, blocking, bounded, call_tool as call_raw, close, copy_tree, error_text,
    invalid_params, result_text, row_ids, row_of, rows, text, tree_bytes, Client, Out,
};
use pg::Backend;
use rmcp::model::ReadResourceRequestParams;
use rmcp::transport::TokioChildProcess;
use rmcp::{ServiceError, ServiceExt};
use serde_json::{json, Value};
use std::io::{BufRead, Read};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt};

/// The CLI under test.
const OKFIT: &str = env!("CARGO_BIN_EXE_okfit");
/// The MCP server under test.
const MCP: &str = env!("CARGO_BIN_EXE_okfit-mcp");
/// How long any run or answer may take before the test calls it a hang
/// (a bound, not a timing assertion).
const HANG: Duration = Duration::from_secs(120);
/// The error every missing tenant read reports, up to the tenant name.
const NO_TENANT: &str = "no tenant \"";
/// The knowledge read tools, in `tools/list` order.
const KNOWLEDGE_TOOLS: [&str; 4] = ["manifest", "search", "get", "snapshot"];
/// The knowledge write tools (SPEC §5), served after the read tools once
/// the store's write side is exposed.
const WRITE_TOOLS: [&str; 2] = ["write", "delete"];
/// The database tools (SPEC §5), offered only on request.
const DATABASE_TOOLS: [&str; 3] = ["transact", "history", "restore"];
/// Every read-only tool of the catalogue (the write and database tools
/// may be offered too).
const CATALOGUE: [&str; 10] = [
    "manifest",
    "search",
    "get",
    "snapshot",
    "describe_vocabulary",
    "list_concepts",
    "get_concept",
    "concept_neighbors",
    "stale_report",
    "validate_bundle",
];

// ------------------------------------------------------------------------
// Sandbox and CLI harness
// ------------------------------------------------------------------------

fn finish(cmd: Command) -> Out {
    common::run(cmd, None, HANG)
}

/// The fixture folder `tests/fixtures/kb-native/<name>`.
fn fixture(name: &str) -> PathBuf {
    let p = common::fixture("kb-native", name);
    std::fs::canonicalize(&p).unwrap_or_else(|e| panic!("fixture {}: {e}", p.display()))
}

/// The MCP project fixture `tests/fixtures/mcp/<name>`.
fn mcp_fixture(name: &str) -> PathBuf {
    common::fixture("mcp", name)
}

/// A temporary directory with `home/`, `xdg/`, the store's data root
/// `data/` (created by the first commit) and room for bundle folders. Its
/// path is canonical, so it compares with what the binaries print.
type Sandbox = pg::Stores;

impl Sandbox {
    /// Whether `tenant` exists (its first write created it).
    fn has_tenant(&self, tenant: &str) -> bool {
        self.tenants.exists(tenant, |a| self.okfit(a))
    }

    /// `okf:///<sandbox>/<rel>`.
    fn folder_dsn(&self, rel: &str) -> String {
        format!("okf://{}", self.path(rel).display())
    }

    /// Copies `tests/fixtures/kb-native/<name>` to `<sandbox>/<to>`.
    fn copy_fixture(&self, name: &str, to: &str) -> PathBuf {
        let dest = self.path(to);
        copy_tree(&fixture(name), &dest);
        dest
    }

    fn remove(&self, rel: &str) {
        std::fs::remove_file(self.path(rel)).unwrap();
    }

    /// `okfit ARGS…`.
    fn okfit(&self, args: &[&str]) -> Out {
        finish(self.sandboxed(OKFIT, args))
    }

    /// `okfit-mcp ARGS…` with stdin closed (for runs that exit at once).
    fn okfit_mcp(&self, args: &[&str]) -> Out {
        finish(self.sandboxed(MCP, args))
    }

    /// `okfit ARGS… --data <sandbox>/data --tenant <tenant>`, or `-c` the
    /// tenant's PostgreSQL connection.
    fn store(&self, tenant: &str, args: &[&str]) -> Out {
        let all = self.tenants.args(tenant, args);
        self.okfit(&all.iter().map(String::as_str).collect::<Vec<_>>())
    }

    /// `okfit ARGS… -c <dsn>`.
    fn conn(&self, dsn: &str, args: &[&str]) -> Out {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["-c", dsn]);
        self.okfit(&all)
    }

    /// The server command (tokio) with the same clean environment.
    fn mcp_command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::from(self.sandboxed(MCP, args));
        c.kill_on_drop(true);
        c
    }

    /// `okfit put <sandbox>/<rel>` into `tenant`; must succeed. Returns stderr.
    fn put(&self, rel: &str, tenant: &str) -> String {
        let dir = self.path(rel).display().to_string();
        let out = self.store(tenant, &["put", &dir]);
        out.expect_code(0);
        out.stderr
    }

    /// The tenant `acme`: the whole `kb-native` fixture imported (bundles
    /// `ops` and `sales`).
    fn acme(&self) {
        let dir = self.copy_fixture("", "kb").display().to_string();
        let out = self.store("acme", &["import", &dir]);
        out.expect_code(0);
        assert!(out.stderr.contains("import ops sales"), "{}", out.stderr);
    }
}

/// `(digest, concepts)` from `okfit snapshot` output `<64hex>\t<N> concepts\n`.
#[track_caller]
fn parse_cli_snapshot(stdout: &str) -> (String, usize) {
    let line = stdout
        .strip_suffix('\n')
        .unwrap_or_else(|| panic!("snapshot output ends with a newline: {stdout:?}"));
    let (digest, rest) = line
        .split_once('\t')
        .unwrap_or_else(|| panic!("snapshot output is <digest>\\t<N> concepts: {stdout:?}"));
    assert_hex64(digest);
    let n = rest
        .strip_suffix(" concepts")
        .unwrap_or_else(|| panic!("snapshot output ends with ' concepts': {stdout:?}"))
        .parse()
        .unwrap();
    (digest.to_string(), n)
}

/// The advice sentence of reference langonrock §4.1 for a manifest.
fn expected_advice(manifest: &str) -> String {
    let len = manifest.encode_utf16().count();
    let mut tokens = len.div_ceil(4) as u64;
    if tokens >= 100 {
        let p = 10u64.pow(tokens.to_string().len() as u32 - 2);
        tokens = (tokens + p / 2) / p * p;
    }
    let digits = tokens.to_string();
    let mut commas = String::new();
    for (i, ch) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            commas.push(',');
        }
        commas.push(ch);
    }
    let mut columns = 0usize;
    let mut n = 0usize;
    let mut chars = 0usize;
    for line in manifest.split('\n') {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("id\t") {
            columns = line.encode_utf16().count();
            continue;
        }
        n += 1;
        chars += line.encode_utf16().count() + 1;
    }
    let head = format!("This tenant's manifest measures ~{commas} tokens; ");
    let prefer_search = n > 0 && {
        let mean = chars as f64 / n as f64;
        len as f64 > 20.0 * (120.0 + columns as f64 + mean * n.min(16) as f64)
    };
    if prefer_search {
        head + "prefer \"search\" over reading it whole."
    } else {
        head + "reading it whole is cheaper than searching."
    }
}

// ------------------------------------------------------------------------
// rmcp client harness
// ------------------------------------------------------------------------

/// Connects rmcp's client to `okfit-mcp ARGS…`.
async fn connect(sb: &Sandbox, args: &[&str]) -> Client {
    common::connect_command(sb.mcp_command(args)).await
}

/// The default tools of a server on a connection: exactly manifest,
/// search, get and snapshot in that order, followed only by write and
/// delete where the write side is served (SPEC §5: the six knowledge tools).
#[track_caller]
fn assert_default_knowledge_tools(names: &[String]) {
    assert!(
        names.len() >= 4 && names[..4] == KNOWLEDGE_TOOLS,
        "the default tools must start with {KNOWLEDGE_TOOLS:?}: {names:?}"
    );
    let rest = &names[4..];
    assert!(
        rest.is_empty() || rest == WRITE_TOOLS,
        "after the read tools only {WRITE_TOOLS:?} may follow: {names:?}"
    );
}

/// A call that must fail, either as -32602 or as an `isError` result.
async fn rejected(c: &Client, name: &str, a: Value) -> String {
    match call_raw(c, name, a.clone()).await {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602, "{name} {a}: {e:?}");
            e.message.to_string()
        }
        Err(other) => panic!("{name} {a}: expected -32602 or isError, got {other}"),
        Ok(r) => {
            let (is_error, t) = result_text(&r);
            assert!(is_error, "{name} {a}: expected a rejection, got: {t}");
            t
        }
    }
}

async fn tools(c: &Client) -> Vec<Value> {
    bounded("tools/list", c.list_all_tools())
        .await
        .unwrap()
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect()
}

fn names(tools: &[Value]) -> Vec<String> {
    tools
        .iter()
        .map(|t| t["name"].as_str().unwrap().to_string())
        .collect()
}

async fn resources(c: &Client) -> Vec<Value> {
    bounded("resources/list", c.list_all_resources())
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect()
}

async fn read_resource(c: &Client, uri: &str) -> Value {
    bounded(uri, c.read_resource(ReadResourceRequestParams::new(uri)))
        .await
        .map(|r| serde_json::to_value(r).unwrap())
        .unwrap_or_else(|e| panic!("resources/read {uri}: {e}"))
}

// ------------------------------------------------------------------------
// 1. Connection strings through the CLI
// ------------------------------------------------------------------------

#[test]
fn dsn_errors_are_usage_errors_with_the_reference_messages() {
    let sb = Sandbox::new();
    let cases: [(&str, &str); 4] = [
        (
            "ftp://x",
            "unsupported dsn scheme \"ftp:\", expected one of okf:, okf+unix:, okf+npipe:, okf+http:, okf+https:",
        ),
        ("okf://", "embedded dsn needs ?tenant="),
        (
            "okf:///d?tenant=a%20b",
            "invalid tenant id \"a b\": expected 1-64 chars of [a-z0-9_-]",
        ),
        ("okf://data?tenant=a", "reads as a host name"),
    ];
    for (dsn, message) in cases {
        let out = sb.okfit(&["manifest", "-c", dsn]);
        out.expect_code(64);
        assert!(
            out.stderr.contains(message),
            "{dsn}: stderr lacks {message:?}:\n{}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{dsn}: stdout must be empty");
    }
    // Nothing was created anywhere by a refused connection string.
    assert!(!sb.path("data").exists());
    assert!(!sb.path("default-data").exists());
}

#[test]
fn reading_a_missing_tenant_fails_naming_it_and_creates_nothing() {
    let sb = Sandbox::new();
    // No data root at all.
    for args in [
        vec!["manifest"],
        vec!["snapshot"],
        vec!["search", "orders"],
        vec!["get", "customers"],
    ] {
        let out = sb.store("ghost", &args);
        out.expect_code(1);
        assert!(
            out.stderr.contains(&format!("{NO_TENANT}ghost\"")),
            "{args:?}: {}",
            out.stderr
        );
        assert!(out.stdout.is_empty(), "{args:?}: stdout must be empty");
        let out = sb.conn(&sb.store_dsn("ghost"), &args);
        out.expect_code(1);
        assert!(out.stderr.contains("ghost"), "{args:?}: {}", out.stderr);
    }
    assert!(
        !sb.path("data").exists(),
        "a read of a missing tenant created the data root"
    );
    // A data root holding another tenant.
    sb.copy_fixture("ops", "ops");
    sb.put("ops", "acme");
    let out = sb.store("ghost", &["manifest"]);
    out.expect_code(1);
    assert!(
        out.stderr.contains(&format!("{NO_TENANT}ghost\"")),
        "{}",
        out.stderr
    );
    let out = sb.store("ghost", &["export", &sb.path("out").display().to_string()]);
    out.expect_code(1);
    assert!(out.stderr.contains("ghost"), "{}", out.stderr);
    assert!(!sb.path("out").exists(), "export of a missing tenant wrote");
    assert!(
        !sb.tenant_dir("ghost").exists(),
        "a read of a missing tenant created its directory"
    );
    let tenants: Vec<String> = std::fs::read_dir(sb.path("data/tenants"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(tenants, ["acme"]);
}

// ------------------------------------------------------------------------
// 2. put / import / export
// ------------------------------------------------------------------------

fn put_keeps_the_store_equal_to_the_folder_and_reports_what_changed(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.copy_fixture("sales", "sales");
    let folder = sb.folder_dsn("sales");
    let store = sb.store_dsn("sales");

    let err = sb.put("sales", "sales");
    assert!(
        err.contains("5 written, 0 deleted, 0 unchanged"),
        "first put: {err}"
    );
    assert!(
        err.contains("skipped 1 file(s) that are not .md"),
        "the non-.md file is skipped with a note: {err}"
    );
    assert!(sb.has_tenant("sales"));

    let same = |what: &str| -> String {
        let s = sb.conn(&store, &["manifest"]);
        let f = sb.conn(&folder, &["manifest"]);
        s.expect_code(0);
        f.expect_code(0);
        assert_eq!(
            s.text(),
            f.text(),
            "{what}: store and folder manifests differ"
        );
        assert_eq!(s.stdout, f.stdout, "{what}: bytes differ");
        s.text()
    };
    let m = same("after the first put");
    assert!(
        m.starts_with(
            "# tenant: sales\n# bundles: sales\nid\tbundle\tkind\tstatus\tgrain\tsummary\tlinks\n"
        ),
        "{m}"
    );
    assert_eq!(
        row_ids(&m),
        ["customers", "metrics/orders", "orders_db", "tables/orders"]
    );
    assert_eq!(
        row_of(&m, "customers").unwrap(),
        "customers\tsales\tbigquery_table\tdeprecated\tcustomer_id\tRegistered customers, including churned.\ttables/orders"
    );
    // The --data/--tenant form reads the same store.
    assert_eq!(sb.store("sales", &["manifest"]).ok(), m);

    // Nothing changed: nothing is committed.
    let (snap, _) = parse_cli_snapshot(&sb.store("sales", &["snapshot"]).ok());
    let err = sb.put("sales", "sales");
    assert!(err.contains("nothing changed"), "{err}");
    assert_eq!(
        parse_cli_snapshot(&sb.store("sales", &["snapshot"]).ok()).0,
        snap
    );

    // One edit: one write.
    let path = sb.path("sales/datasets/orders_db.md");
    let edited = std::fs::read_to_string(&path).unwrap().replace(
        "The production sales database.",
        "The production sales database, replicated nightly.",
    );
    std::fs::write(&path, edited).unwrap();
    let err = sb.put("sales", "sales");
    assert!(err.contains("1 written, 0 deleted"), "{err}");
    let m = same("after an edit");
    assert!(
        row_of(&m, "orders_db")
            .unwrap()
            .contains("The production sales database, replicated nightly."),
        "{m}"
    );

    // One deletion: one delete, the row disappears, and the short ids that
    // were ambiguous become short again in both.
    sb.remove("sales/metrics/orders.md");
    let err = sb.put("sales", "sales");
    assert!(err.contains("0 written, 1 deleted"), "{err}");
    let m = same("after a deletion");
    assert_eq!(row_ids(&m), ["customers", "orders", "orders_db"]);
    assert!(!m.contains("metrics/orders"), "{m}");
    let (_, n) = parse_cli_snapshot(&sb.store("sales", &["snapshot"]).ok());
    assert_eq!(n, 3);
}

on_both_backends!(put_keeps_the_store_equal_to_the_folder_and_reports_what_changed);

fn put_refuses_a_bad_path_and_stores_nothing(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.copy_fixture("sales", "sales");
    sb.put("sales", "sales");
    let before = sb.store("sales", &["manifest"]).ok();
    let snap = sb.store("sales", &["snapshot"]).ok();

    // Alongside the bad name: a new concept and an edit, neither stored.
    sb.write(
        "sales/fresh.md",
        "---\ntype: Note\ndescription: Should never be stored.\n---\n# Fresh\n",
    );
    let customers = sb.path("sales/customers.md");
    let text = std::fs::read_to_string(&customers).unwrap();
    std::fs::write(
        &customers,
        text.replace("including churned.", "including churned, edited."),
    )
    .unwrap();
    sb.write("sales/My Note.md", "# My note\n");
    let out = sb.store("sales", &["put", &sb.path("sales").display().to_string()]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("invalid path \"My Note.md\": segment "),
        "{}",
        out.stderr
    );
    assert_eq!(sb.store("sales", &["manifest"]).ok(), before);
    assert_eq!(sb.store("sales", &["snapshot"]).ok(), snap);

    // A new tenant refused the same way is never created.
    let out = sb.store("fresh", &["put", &sb.path("sales").display().to_string()]);
    out.expect_code(1);
    assert!(!sb.has_tenant("fresh"), "a refused put created a tenant");
}

on_both_backends!(put_refuses_a_bad_path_and_stores_nothing);

fn put_refuses_invalid_utf8_and_stores_nothing(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.copy_fixture("sales", "sales");
    sb.put("sales", "sales");
    let before = sb.store("sales", &["manifest"]).ok();
    let snap = sb.store("sales", &["snapshot"]).ok();

    sb.write(
        "sales/fresh.md",
        "---\ntype: Note\ndescription: Should never be stored.\n---\n# Fresh\n",
    );
    sb.write("sales/latin1.md", b"---\ntype: Note\n---\n# Caf\xe9\n");
    let out = sb.store("sales", &["put", &sb.path("sales").display().to_string()]);
    out.expect_code(1);
    assert!(
        out.stderr.contains("latin1.md") && out.stderr.contains("not valid UTF-8"),
        "{}",
        out.stderr
    );
    assert_eq!(sb.store("sales", &["manifest"]).ok(), before);
    assert_eq!(sb.store("sales", &["snapshot"]).ok(), snap);
    assert!(row_of(&before, "fresh").is_none());

    let out = sb.store("other", &["put", &sb.path("sales").display().to_string()]);
    out.expect_code(1);
    assert!(!sb.has_tenant("other"), "a refused put created a tenant");
}

on_both_backends!(put_refuses_invalid_utf8_and_stores_nothing);

fn import_stores_each_visible_subfolder_as_a_bundle(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.write(
        "imp/a/x.md",
        "---\ntype: Note\ndescription: Alpha note.\n---\n# X\n",
    );
    sb.write(
        "imp/a/deep/w.md",
        "---\ntype: Note\ndescription: Deep alpha note.\n---\n# W\n",
    );
    sb.write(
        "imp/b/y.md",
        "---\ntype: Note\ndescription: Beta note.\n---\n# Y\n",
    );
    sb.write(
        "imp/.hidden/z.md",
        "---\ntype: Note\ndescription: Hidden note.\n---\n# Z\n",
    );
    sb.write(
        "imp/README.md",
        "# Not a bundle\n\nRoot files are ignored.\n",
    );
    let out = sb.store("multi", &["import", &sb.path("imp").display().to_string()]);
    out.expect_code(0);
    assert!(out.stderr.contains("import a b"), "{}", out.stderr);
    assert!(out.stderr.contains("3 written"), "{}", out.stderr);

    let m = sb.store("multi", &["manifest"]).ok();
    assert!(
        m.starts_with(
            "# tenant: multi\n# bundles: a b\nid\tbundle\tkind\tstatus\tgrain\tsummary\tlinks\n"
        ),
        "{m}"
    );
    let bundles: Vec<&str> = rows(&m)
        .iter()
        .map(|r| r.split('\t').nth(1).unwrap())
        .collect();
    assert_eq!(bundles, ["a", "a", "b"], "{m}");
    assert!(!m.contains("Hidden") && !m.contains("Not a bundle"), "{m}");

    // What was stored is exactly a/ and b/.
    let out_dir = sb.path("exported");
    sb.store("multi", &["export", &out_dir.display().to_string()])
        .expect_code(0);
    let got: Vec<String> = tree_bytes(&out_dir).into_iter().map(|(p, _)| p).collect();
    assert_eq!(got, ["a/deep/w.md", "a/x.md", "b/y.md"]);

    // Importing again with no change commits nothing.
    let out = sb.store("multi", &["import", &sb.path("imp").display().to_string()]);
    out.expect_code(0);
    assert!(out.stderr.contains("nothing changed"), "{}", out.stderr);
}

on_both_backends!(import_stores_each_visible_subfolder_as_a_bundle);

#[test]
fn import_shows_progress_on_a_terminal_and_nothing_otherwise() {
    let sb = Sandbox::new();
    for i in 0..120 {
        sb.write(
            &format!("imp/a/n{i:03}.md"),
            format!("---\ntype: Note\ndescription: Note {i}.\n---\n# N{i}\n"),
        );
    }
    let imp = sb.path("imp").display().to_string();
    // stderr is a pipe: the summary line only.
    let out = sb.store("piped", &["import", &imp]);
    out.expect_code(0);
    assert!(!out.stderr.contains("writing documents"), "{}", out.stderr);
    assert_eq!(out.stderr.lines().count(), 1, "{}", out.stderr);

    // On a terminal (script(1) gives the command one), a bar with counts
    // and rate, drawn at once as OKFIT_PROGRESS_AFTER_MS asks.
    let line = format!("{OKFIT} import {imp} --data {} --tenant tty", sb.data());
    let mut cmd = Command::new("script");
    cmd.args(["-qec", &line, "/dev/null"])
        .env("OKFIT_PROGRESS_AFTER_MS", "0");
    let out = finish(cmd);
    out.expect_code(0);
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(
        shown.contains("writing documents") && shown.contains("120/120"),
        "{shown}"
    );
    assert!(shown.contains("/s"), "{shown}");
    assert!(shown.contains("120 written"), "{shown}");
}

fn export_writes_exact_bytes_and_refuses_an_existing_directory(backend: Backend) {
    let sb = Sandbox::on(backend);
    let files: Vec<(&str, Vec<u8>)> = vec![
        (
            "crlf.md",
            b"---\r\ntype: Note\r\ndescription: Windows line endings.\r\n---\r\n# CRLF\r\n\r\nLine one.\r\nLine two.\r\n".to_vec(),
        ),
        (
            "bom.md",
            "\u{feff}---\ntype: Note\ndescription: Starts with a byte order mark.\n---\n# BOM\n"
                .as_bytes()
                .to_vec(),
        ),
        (
            "kanji.md",
            "\u{feff}---\r\ntype: Note\r\ndescription: 漢字 and café, naïve — 🚀.\r\n---\r\n# 漢字\r\n\r\nÜber straße ½ 𝄞\r\n"
                .as_bytes()
                .to_vec(),
        ),
        ("no-newline.md", b"# No trailing newline".to_vec()),
        ("index.md", b"# Docs\n\n[crlf](crlf.md)\n".to_vec()),
        (
            "sub/deep.md",
            b"---\ntype: Note\ndescription: Nested.\n---\n# Deep\n\n  trailing spaces  \n\n\n"
                .to_vec(),
        ),
    ];
    for (rel, bytes) in &files {
        sb.write(&format!("docs/{rel}"), bytes);
    }
    sb.put("docs", "bytes");

    let out_dir = sb.path("out");
    let out = sb.store("bytes", &["export", &out_dir.display().to_string()]);
    out.expect_code(0);
    assert!(
        out.stderr.contains("exported 6 documents"),
        "{}",
        out.stderr
    );
    let mut expected: Vec<(String, Vec<u8>)> = files
        .iter()
        .map(|(p, b)| (format!("docs/{p}"), b.clone()))
        .collect();
    expected.sort();
    let got = tree_bytes(&out_dir);
    assert_eq!(
        got.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>(),
        expected.iter().map(|(p, _)| p.clone()).collect::<Vec<_>>()
    );
    for ((p, g), (_, e)) in got.iter().zip(&expected) {
        assert!(g == e, "{p}: exported bytes differ from the stored ones");
    }

    // The export imports back to the same snapshot.
    sb.store("bytes2", &["import", &out_dir.display().to_string()])
        .expect_code(0);
    assert_eq!(
        sb.store("bytes2", &["snapshot"]).ok(),
        sb.store("bytes", &["snapshot"]).ok()
    );

    // An existing directory is refused and left alone.
    sb.write("taken/keep.txt", "untouched\n");
    let out = sb.store(
        "bytes",
        &["export", &sb.path("taken").display().to_string()],
    );
    out.expect_code(1);
    assert!(out.stderr.contains("already exists"), "{}", out.stderr);
    let left = tree_bytes(&sb.path("taken"));
    assert_eq!(left, [("keep.txt".to_string(), b"untouched\n".to_vec())]);
    // So is the previous export.
    let out = sb.store("bytes", &["export", &out_dir.display().to_string()]);
    out.expect_code(1);
    assert_eq!(tree_bytes(&out_dir), got);
}

on_both_backends!(export_writes_exact_bytes_and_refuses_an_existing_directory);

// ------------------------------------------------------------------------
// 3. manifest
// ------------------------------------------------------------------------

fn manifest_is_byte_identical_across_runs_and_filters_by_bundle(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.acme();
    let first = sb.store("acme", &["manifest"]);
    first.expect_code(0);
    let m = first.text();
    for _ in 0..3 {
        let again = sb.store("acme", &["manifest"]);
        again.expect_code(0);
        assert_eq!(again.stdout, first.stdout, "manifest differs between runs");
    }
    assert_eq!(
        sb.conn(&sb.store_dsn("acme"), &["manifest"]).stdout,
        first.stdout
    );
    assert!(
        first.stderr.contains("5 concepts, ") && first.stderr.contains(" tokens"),
        "{}",
        first.stderr
    );
    let preamble =
        "# tenant: acme\n# bundles: ops sales\nid\tbundle\tkind\tstatus\tgrain\tsummary\tlinks\n";
    assert!(m.starts_with(preamble), "{m}");
    assert!(m.ends_with('\n') && !m.contains('\r'), "{m:?}");
    assert_eq!(
        row_ids(&m),
        [
            "deploy",
            "customers",
            "metrics/orders",
            "orders_db",
            "tables/orders"
        ],
        "rows grouped by bundle, then by id"
    );
    assert_eq!(
        row_of(&m, "deploy").unwrap(),
        "deploy\tops\trunbook\t-\t-\tHow to ship the orders service.\t-"
    );

    // A bundle filter keeps the whole preamble and that bundle's rows.
    for bundle in ["ops", "sales"] {
        let f = sb.store("acme", &["manifest", "--bundle", bundle]).ok();
        let mut expected = preamble.to_string();
        for r in rows(&m) {
            if r.split('\t').nth(1) == Some(bundle) {
                expected.push_str(r);
                expected.push('\n');
            }
        }
        assert_eq!(f, expected, "--bundle {bundle}");
    }

    let out = sb.store("acme", &["manifest", "--bundle", "nope"]);
    out.expect_code(1);
    assert!(
        out.stderr
            .contains("no bundle \"nope\" in this tenant: found ops, sales"),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
}

on_both_backends!(manifest_is_byte_identical_across_runs_and_filters_by_bundle);

/// `okfit search --explain` lists the same direct hits as the search, in
/// the same order, and each hit's term parts add up to its score, split
/// over names, fields and body without remainder.
fn search_explain_accounts_for_every_score(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.copy_fixture("sales", "sales");
    sb.put("sales", "sales");
    for conn in [sb.store_dsn("sales"), sb.folder_dsn("sales")] {
        let search = sb
            .conn(&conn, &["search", "churned", "customers", "orders"])
            .ok();
        let direct: usize = search
            .lines()
            .find_map(|l| l.strip_prefix("# hits: "))
            .and_then(|l| l.split(' ').next())
            .and_then(|n| n.parse().ok())
            .expect("a hits line");
        let want: Vec<String> = row_ids(&search)
            .into_iter()
            .take(direct)
            .map(str::to_string)
            .collect();
        let out = sb
            .conn(
                &conn,
                &["search", "--explain", "churned", "customers", "orders"],
            )
            .ok();
        assert!(out.contains("# terms: churn custom order\n"), "{out}");
        let rows: Vec<Vec<&str>> = out
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("rank\t"))
            .map(|l| l.split('\t').collect())
            .collect();
        let totals: Vec<&Vec<&str>> = rows.iter().filter(|r| r[2] == "*").collect();
        let ids: Vec<String> = totals.iter().map(|r| r[1].to_string()).collect();
        assert_eq!(ids, want, "{out}");
        let num = |c: &str| c.parse::<f64>().expect("a number");
        for t in &totals {
            let parts: Vec<&Vec<&str>> = rows
                .iter()
                .filter(|r| r[1] == t[1] && r[2] != "*")
                .collect();
            assert!(!parts.is_empty(), "{out}");
            let sum: f64 = parts.iter().map(|r| num(r[5])).sum();
            assert!((sum - num(t[5])).abs() < 1e-3, "{} {sum}: {out}", t[1]);
            for r in parts.iter().copied().chain([*t]) {
                let split = num(r[6]) + num(r[7]) + num(r[8]);
                assert!((split - num(r[5])).abs() < 1e-3, "{r:?}");
            }
        }
    }
}

on_both_backends!(search_explain_accounts_for_every_score);

/// A store derived by an older okfit (another analyzer, other compiled
/// rows) is derived again from its stored bytes on first use: searches
/// answer as over the folder, no revision is added, and the new version is
/// recorded so that it happens once.
fn a_store_from_an_older_okfit_is_derived_again_once(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.copy_fixture("sales", "sales");
    sb.put("sales", "sales");
    let store = sb.store_dsn("sales");
    let folder = sb.folder_dsn("sales");
    let history = sb.conn(&store, &["history"]).ok();
    let current = sb.tenants.age_compiler("sales");
    for query in [
        ["search", "churned", "customers"],
        ["search", "retaining", "orders"],
    ] {
        let s = sb.conn(&store, &query).ok();
        assert_eq!(s, sb.conn(&folder, &query).ok(), "{query:?}");
        assert!(
            s.contains("# hits: ") && !s.contains("# hits: 0 direct"),
            "{s}"
        );
    }
    assert_eq!(sb.conn(&store, &["history"]).ok(), history);
    // Recorded: aging it again reports the version this okfit wrote.
    assert_eq!(sb.tenants.age_compiler("sales"), current);
    assert_ne!(current, "1");
}

on_both_backends!(a_store_from_an_older_okfit_is_derived_again_once);

// ------------------------------------------------------------------------
// 4. search / get / snapshot: store ≡ folder
// ------------------------------------------------------------------------

fn search_get_and_snapshot_agree_between_store_and_folder(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.copy_fixture("sales", "sales");
    sb.put("sales", "sales");
    let store = sb.store_dsn("sales");
    let folder = sb.folder_dsn("sales");
    let cases: Vec<Vec<&str>> = vec![
        vec!["search", "churned", "customers"],
        vec!["search", "orders"],
        vec!["search", "orders", "-k", "1"],
        vec!["search", "retention", "--bundle", "sales"],
        vec!["search", "zebra"],
        vec!["get", "customers", "tables/orders"],
        vec!["get", "tables/orders", "customers", "orders_db"],
        vec!["get", "orders_db", "--section", "access"],
        vec![
            "get",
            "tables/orders",
            "--find",
            "customer_id",
            "--limit",
            "40",
        ],
        vec!["get", "tables/orders", "--offset", "10", "--limit", "30"],
        vec!["get", "customers", "nope"],
        vec!["snapshot"],
        vec!["manifest"],
    ];
    for args in &cases {
        let s = sb.conn(&store, args);
        let f = sb.conn(&folder, args);
        assert_eq!(
            (s.code, &s.stderr),
            (f.code, &f.stderr),
            "{args:?}: exit code or stderr differ"
        );
        assert!(
            s.stdout == f.stdout,
            "{args:?}: stdout differs\nstore:\n{}\nfolder:\n{}",
            String::from_utf8_lossy(&s.stdout),
            String::from_utf8_lossy(&f.stdout)
        );
    }

    let s = sb.conn(&store, &["search", "churned", "customers"]).ok();
    assert!(
        s.starts_with("# tenant: sales\n# bundles: sales\n# query: churned customers\n# hits: "),
        "{s}"
    );
    assert!(
        s.contains("\nid\tbundle\tkind\tstatus\tgrain\tsummary\tlinks\tpos\n"),
        "{s}"
    );
    assert!(s.contains("\ncustomers\tsales\t"), "{s}");
    assert!(!s.contains("@@"), "{s}");
    let one = sb.conn(&store, &["search", "orders", "-k", "1"]).ok();
    assert!(one.contains("# hits: 1 direct, "), "{one}");
    let none = sb.conn(&store, &["search", "zebra"]).ok();
    assert!(none.contains("# hits: 0 direct, 0 linked\n"), "{none}");

    let g = sb.conn(&store, &["get", "tables/orders", "customers"]).ok();
    let a = g
        .find("@@ tables/orders\n")
        .expect("frame of tables/orders");
    let b = g.find("@@ customers\n").expect("frame of customers");
    assert!(a < b, "frames follow the request order: {g}");
    assert!(g.contains("## Schema"), "{g}");

    let sec = sb
        .conn(&store, &["get", "orders_db", "--section", "access"])
        .ok();
    assert!(sec.starts_with("@@ orders_db\n"), "{sec}");
    assert!(sec.contains("Read replicas only"), "{sec}");
    assert!(!sec.contains("seven years"), "{sec}");

    for conn in [&store, &folder] {
        let out = sb.conn(conn, &["get", "customers", "nope"]);
        out.expect_code(1);
        assert!(
            out.stderr
                .contains("warn: no such concept or section: nope"),
            "{}",
            out.stderr
        );
        let t = out.text();
        assert!(t.starts_with("@@ customers\n"), "{t}");
        assert!(t.ends_with("@@ missing\nnope\n"), "{t:?}");
    }

    let (digest, n) = parse_cli_snapshot(&sb.conn(&store, &["snapshot"]).ok());
    assert_eq!(n, 4);
    assert_eq!(
        parse_cli_snapshot(&sb.conn(&folder, &["snapshot"]).ok()),
        (digest.clone(), 4)
    );
    // The snapshot depends on the documents only: a second store of the
    // same files under the same tenant and bundle name has the same digest.
    let second = tempfile::Builder::new()
        .prefix("okfit-kb-data-")
        .tempdir()
        .unwrap();
    let data2 = std::fs::canonicalize(second.path()).unwrap();
    let out = sb.okfit(&[
        "put",
        &sb.path("sales").display().to_string(),
        "--data",
        &data2.display().to_string(),
        "--tenant",
        "sales",
    ]);
    out.expect_code(0);
    let out = sb.okfit(&[
        "snapshot",
        "--data",
        &data2.display().to_string(),
        "--tenant",
        "sales",
    ]);
    assert_eq!(parse_cli_snapshot(&out.ok()), (digest, 4));
}

on_both_backends!(search_get_and_snapshot_agree_between_store_and_folder);

// ------------------------------------------------------------------------
// 5. An MCP server on a store sees commits made by other processes
// ------------------------------------------------------------------------

async fn mcp_on_a_store_sees_commits_made_by_another_process(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.copy_fixture("ops", "ops");
    sb.copy_fixture("sales", "sales");
    sb.put("ops", "acme");
    sb.put("sales", "acme");
    let dsn = sb.store_dsn("acme");
    let c = connect(&sb, &[&dsn]).await;

    let m1 = text(&c, "manifest", json!({})).await;
    assert_eq!(row_ids(&m1).len(), 5, "{m1}");
    assert!(row_of(&m1, "canary").is_none());
    let s1 = text(&c, "snapshot", json!({})).await;
    let none = text(&c, "search", json!({"query": "canary"})).await;
    assert!(none.contains("# hits: 0 direct, 0 linked"), "{none}");

    // Another process commits a new document.
    sb.write(
        "ops/canary.md",
        "---\ntype: Runbook\ndescription: Canary releases of the orders service.\n---\n# Canary\n\nShip the canary build to one zone, watch the canary dashboards, then promote.\n",
    );
    let err = blocking(|| sb.put("ops", "acme"));
    assert!(err.contains("1 written"), "{err}");

    let m2 = text(&c, "manifest", json!({})).await;
    assert_eq!(
        row_of(&m2, "canary"),
        Some("canary\tops\trunbook\t-\t-\tCanary releases of the orders service.\t-"),
        "the server did not catch up with the commit:\n{m2}"
    );
    assert_eq!(
        m2,
        blocking(|| sb.store("acme", &["manifest"]).ok()),
        "the server's manifest differs from a fresh process's"
    );
    let hits = text(&c, "search", json!({"query": "canary"})).await;
    assert!(hits.contains("# hits: 1 direct, "), "{hits}");
    assert!(hits.contains("\ncanary\tops\t"), "{hits}");
    let s2 = text(&c, "snapshot", json!({})).await;
    assert_ne!(s1, s2, "the snapshot did not move");
    let (digest, n) = parse_cli_snapshot(&blocking(|| sb.store("acme", &["snapshot"]).ok()));
    assert_eq!(s2, format!("snapshot {digest}, {n} concepts"));
    assert_eq!(n, 6);
    let body = text(&c, "get", json!({"ids": ["canary"]})).await;
    assert!(body.starts_with("@@ canary\n"), "{body}");
    assert!(body.contains("watch the canary dashboards"), "{body}");

    // An edit elsewhere changes what search finds.
    let deploy = sb.path("ops/deploy.md");
    let t = std::fs::read_to_string(&deploy).unwrap();
    std::fs::write(&deploy, format!("{t}\nPrefer a canary first.\n")).unwrap();
    let err = blocking(|| sb.put("ops", "acme"));
    assert!(err.contains("1 written"), "{err}");
    let hits = text(&c, "search", json!({"query": "canary"})).await;
    assert!(hits.contains("# hits: 2 direct, "), "{hits}");
    assert!(hits.contains("\ndeploy\tops\t"), "{hits}");
    let d = text(&c, "get", json!({"ids": ["deploy"], "find": "canary"})).await;
    assert!(d.contains("1 match at "), "{d}");

    // A deletion elsewhere removes the document everywhere.
    sb.remove("ops/canary.md");
    let err = blocking(|| sb.put("ops", "acme"));
    assert!(err.contains("1 deleted"), "{err}");
    let m3 = text(&c, "manifest", json!({})).await;
    assert!(row_of(&m3, "canary").is_none(), "{m3}");
    let hits = text(&c, "search", json!({"query": "canary"})).await;
    assert!(hits.contains("# hits: 1 direct, "), "{hits}");
    assert!(!hits.contains("\ncanary\t"), "{hits}");
    let gone = text(&c, "get", json!({"ids": ["canary"]})).await;
    assert_eq!(gone, "@@ missing\ncanary");
    let (digest, n) = parse_cli_snapshot(&blocking(|| sb.store("acme", &["snapshot"]).ok()));
    assert_eq!(
        text(&c, "snapshot", json!({})).await,
        format!("snapshot {digest}, {n} concepts")
    );
    close(c).await;
}

on_both_backends!(async mcp_on_a_store_sees_commits_made_by_another_process);

// ------------------------------------------------------------------------
// 6. An MCP server on a folder reads it live
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_on_a_folder_sees_edits_additions_and_deletions() {
    let sb = Sandbox::new();
    sb.copy_fixture("sales", "sales");
    let dsn = sb.folder_dsn("sales");
    let c = connect(&sb, &[&dsn]).await;
    let fresh = |what: &str, served: &str| {
        let cli = blocking(|| sb.conn(&dsn, &["manifest"]).ok());
        assert_eq!(served, cli, "{what}: the server's manifest is not current");
    };

    let m = text(&c, "manifest", json!({})).await;
    assert!(m.starts_with("# tenant: sales\n# bundles: sales\n"), "{m}");
    fresh("at start", &m);
    let s0 = text(&c, "snapshot", json!({})).await;

    // Edit a description.
    let customers = sb.path("sales/customers.md");
    let t = std::fs::read_to_string(&customers).unwrap();
    std::fs::write(
        &customers,
        t.replace(
            "description: Registered customers, including churned.",
            "description: Every registered customer account, churned ones included.",
        ),
    )
    .unwrap();
    let m = text(&c, "manifest", json!({})).await;
    assert!(
        row_of(&m, "customers")
            .unwrap()
            .contains("\tEvery registered customer account, churned ones included.\t"),
        "the edit is not visible:\n{m}"
    );
    fresh("after an edit", &m);
    let s1 = text(&c, "snapshot", json!({})).await;
    assert_ne!(s0, s1);

    // Add a file in a new directory.
    sb.write(
        "sales/metrics/revenue/net.md",
        "---\ntype: Metric\ndescription: Net revenue after refunds.\n---\n# Net revenue\n\nSum of amount minus refunds over [orders](../../tables/orders.md).\n",
    );
    let m = text(&c, "manifest", json!({})).await;
    assert_eq!(
        row_of(&m, "net"),
        Some("net\tsales\tmetric\t-\t-\tNet revenue after refunds.\ttables/orders"),
        "the new file is not visible:\n{m}"
    );
    fresh("after an addition", &m);
    let hits = text(&c, "search", json!({"query": "refunds net"})).await;
    assert!(hits.contains("\nnet\tsales\t"), "{hits}");

    // Delete a file.
    sb.remove("sales/datasets/orders_db.md");
    let m = text(&c, "manifest", json!({})).await;
    assert!(
        row_of(&m, "orders_db").is_none(),
        "the deleted file is still listed:\n{m}"
    );
    fresh("after a deletion", &m);
    let gone = text(&c, "get", json!({"ids": ["orders_db"]})).await;
    assert_eq!(gone, "@@ missing\norders_db");
    let s3 = text(&c, "snapshot", json!({})).await;
    assert!(s3.ends_with(", 4 concepts"), "{s3}");

    // An edit inside the directory created during the session.
    let net = sb.path("sales/metrics/revenue/net.md");
    let t = std::fs::read_to_string(&net).unwrap();
    std::fs::write(
        &net,
        t.replace(
            "Net revenue after refunds.",
            "Net revenue after refunds and chargebacks.",
        ),
    )
    .unwrap();
    let m = text(&c, "manifest", json!({})).await;
    assert!(
        row_of(&m, "net")
            .unwrap()
            .contains("\tNet revenue after refunds and chargebacks.\t"),
        "the edit in a new directory is not visible:\n{m}"
    );
    fresh("after an edit in a new directory", &m);

    // A move, then the removal of a whole directory.
    std::fs::rename(&net, sb.path("sales/net-revenue.md")).unwrap();
    let m = text(&c, "manifest", json!({})).await;
    assert!(row_of(&m, "net").is_none(), "{m}");
    assert!(row_of(&m, "net-revenue").is_some(), "{m}");
    fresh("after a move", &m);
    std::fs::remove_dir_all(sb.path("sales/tables")).unwrap();
    let m = text(&c, "manifest", json!({})).await;
    assert_eq!(row_ids(&m), ["customers", "net-revenue", "orders"], "{m}");
    fresh("after removing a directory", &m);
    close(c).await;
}

// ------------------------------------------------------------------------
// 7. The knowledge tools on a store connection
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_store_lists_the_knowledge_tools_and_the_manifest_resource() {
    let sb = Sandbox::new();
    sb.acme();
    let dsn = sb.store_dsn("acme");
    let c = connect(&sb, &[&dsn]).await;

    let ts = tools(&c).await;
    assert_default_knowledge_tools(&names(&ts));
    let manifest = text(&c, "manifest", json!({})).await;
    assert!(manifest.starts_with("# tenant: acme\n"), "{manifest}");
    let cli = blocking(|| sb.store("acme", &["manifest"]).ok());
    assert_eq!(manifest, cli, "MCP and CLI manifests differ");

    let description = ts[0]["description"].as_str().unwrap();
    assert!(
        description.contains("before anything else"),
        "{description}"
    );
    let advice = expected_advice(&manifest);
    assert!(
        description.ends_with(&format!("\n\n{advice}")),
        "the manifest description must end with the advice sentence {advice:?}:\n{description}"
    );
    assert!(
        ts[1]["description"]
            .as_str()
            .unwrap()
            .contains("returns their manifest rows"),
        "{}",
        ts[1]["description"]
    );
    assert!(ts[2]["description"].as_str().unwrap().contains("one call"));
    assert!(ts[3]["description"].as_str().unwrap().contains("changed"));
    assert_eq!(ts[2]["inputSchema"]["required"], json!(["ids"]));
    assert_eq!(ts[1]["inputSchema"]["required"], json!(["query"]));
    for t in &ts[..4] {
        assert_eq!(t["annotations"]["readOnlyHint"], true, "{t}");
    }

    let rs = resources(&c).await;
    assert_eq!(rs.len(), 1, "{rs:#?}");
    let r = &rs[0];
    assert_eq!(r["uri"], "okf://manifest");
    assert_eq!(r["mimeType"], "text/tab-separated-values");
    assert_eq!(
        r["description"].as_str().unwrap(),
        description,
        "the resource shares the tool's description"
    );
    let read = read_resource(&c, "okf://manifest").await;
    let contents = read["contents"].as_array().unwrap();
    assert_eq!(contents.len(), 1, "{read:#}");
    assert_eq!(contents[0]["uri"], "okf://manifest");
    assert_eq!(contents[0]["mimeType"], "text/tab-separated-values");
    assert_eq!(contents[0]["text"].as_str().unwrap(), manifest);

    let info = serde_json::to_value(c.peer_info().expect("server info")).unwrap();
    assert_eq!(info["serverInfo"]["name"], "okfit", "{info:#}");
    close(c).await;
}

async fn mcp_store_manifest_and_search(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.acme();
    let c = connect(&sb, &[&sb.store_dsn("acme")]).await;

    let full = text(&c, "manifest", json!({})).await;
    let ops = text(&c, "manifest", json!({"bundle": "ops"})).await;
    assert_eq!(
        ops,
        blocking(|| sb.store("acme", &["manifest", "--bundle", "ops"]).ok())
    );
    assert_eq!(row_ids(&ops), ["deploy"]);
    assert!(
        ops.starts_with("# tenant: acme\n# bundles: ops sales\n"),
        "{ops}"
    );
    let e = error_text(&c, "manifest", json!({"bundle": "nope"})).await;
    assert!(
        e.contains("no bundle \"nope\" in this tenant: found ops, sales"),
        "{e}"
    );
    // The session survives a failing tool.
    assert_eq!(text(&c, "manifest", json!({})).await, full);

    let s = text(&c, "search", json!({"query": "churned"})).await;
    assert!(s.contains("# query: churned\n"), "{s}");
    assert!(s.contains("# hits: "), "{s}");
    assert!(s.contains("\ncustomers\tsales\t"), "{s}");
    assert!(!s.contains("@@"), "{s}");
    assert!(s.ends_with('\n'), "{s:?}");
    let cli = blocking(|| sb.store("acme", &["search", "churned"]).ok());
    assert_eq!(s, cli, "MCP and CLI search differ");

    let one = text(&c, "search", json!({"query": "orders", "k": 1})).await;
    assert!(one.contains("# hits: 1 direct"), "{one}");
    let within = text(
        &c,
        "search",
        json!({"query": "orders service", "bundle": "ops"}),
    )
    .await;
    assert!(within.contains("# bundle: ops\n"), "{within}");
    assert!(within.contains("\ndeploy\tops\t"), "{within}");
    assert!(!within.contains("\tsales\t"), "{within}");

    let e = rejected(&c, "search", json!({"query": ""})).await;
    assert!(!e.is_empty());
    let e = invalid_params(&c, "search", json!({})).await;
    assert!(e.contains("query"), "{e}");
    let e = invalid_params(&c, "search", json!({"query": "x", "k": 0})).await;
    assert!(!e.is_empty());
    close(c).await;
}

on_both_backends!(async mcp_store_manifest_and_search);

async fn mcp_store_get_and_snapshot(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.acme();
    let c = connect(&sb, &[&sb.store_dsn("acme")]).await;

    let g = text(&c, "get", json!({"ids": ["tables/orders", "customers"]})).await;
    assert!(g.starts_with("@@ tables/orders\n"), "{g}");
    let second = g.find("\n@@ customers\n").expect("the customers frame");
    assert!(g[second..].contains("Every registered customer"), "{g}");
    assert!(!g.contains("@@ missing"), "{g}");
    let cli = blocking(|| {
        sb.store("acme", &["get", "tables/orders", "customers"])
            .ok()
    });
    assert_eq!(format!("{g}\n"), cli, "MCP and CLI get differ");

    let reversed = text(&c, "get", json!({"ids": ["customers", "tables/orders"]})).await;
    assert!(reversed.starts_with("@@ customers\n"), "{reversed}");
    assert!(reversed.contains("\n@@ tables/orders\n"), "{reversed}");

    let missing = text(&c, "get", json!({"ids": ["customers", "nope"]})).await;
    assert!(missing.starts_with("@@ customers\n"), "{missing}");
    assert!(missing.ends_with("@@ missing\nnope"), "{missing:?}");

    let e = rejected(&c, "get", json!({"ids": []})).await;
    assert!(!e.is_empty());
    let e = invalid_params(&c, "get", json!({})).await;
    assert!(e.contains("ids"), "{e}");

    let whole = text(&c, "get", json!({"ids": ["orders_db"]})).await;
    let sec = text(
        &c,
        "get",
        json!({"ids": ["orders_db"], "section": "access"}),
    )
    .await;
    assert!(sec.starts_with("@@ orders_db\n"), "{sec}");
    assert!(sec.contains("## Access"), "{sec}");
    assert!(sec.contains("Read replicas only"), "{sec}");
    assert!(!sec.contains("seven years"), "{sec}");
    assert!(sec.len() < whole.len(), "{sec}\n---\n{whole}");
    let nosec = text(&c, "get", json!({"ids": ["orders_db"], "section": "nope"})).await;
    assert!(nosec.ends_with("@@ missing\norders_db"), "{nosec}");

    let sliced = text(
        &c,
        "get",
        json!({"ids": ["tables/orders"], "offset": 10, "limit": 30}),
    )
    .await;
    assert!(
        sliced.starts_with("@@ tables/orders [10..40 of "),
        "{sliced}"
    );
    let found = text(
        &c,
        "get",
        json!({"ids": ["tables/orders"], "find": "customer_id", "limit": 40}),
    )
    .await;
    assert!(found.contains(" 2 matches at "), "{found}");
    let nomatch = text(
        &c,
        "get",
        json!({"ids": ["tables/orders"], "find": "zebra"}),
    )
    .await;
    assert!(
        nomatch.starts_with("@@ tables/orders no match in "),
        "{nomatch}"
    );

    let snap = text(&c, "snapshot", json!({})).await;
    let rest = snap.strip_prefix("snapshot ").expect("snapshot <digest>");
    let (digest, count) = rest
        .split_once(", ")
        .expect("snapshot <digest>, <N> concepts");
    assert_hex64(digest);
    assert_eq!(count, "5 concepts");
    let (cli_digest, _) = parse_cli_snapshot(&blocking(|| sb.store("acme", &["snapshot"]).ok()));
    assert_eq!(digest, cli_digest);

    // Unknown parameters are protocol errors.
    for (tool, a) in [
        ("manifest", json!({"bogus": 1})),
        ("search", json!({"query": "x", "limit": 3})),
        ("get", json!({"ids": ["customers"], "id": "customers"})),
        ("snapshot", json!({"verbose": true})),
    ] {
        let e = invalid_params(&c, tool, a).await;
        assert!(e.contains("Unrecognized parameter(s)"), "{tool}: {e}");
    }
    close(c).await;
}

on_both_backends!(async mcp_store_get_and_snapshot);

/// The response to `id`: from the lines already read (responses to
/// concurrent requests may come in any order), else read on (bounded).
async fn response_to(
    lines: &mut tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    seen: &mut Vec<String>,
    id: i64,
) -> Value {
    for line in seen.iter() {
        if let Ok(v) = serde_json::from_str::<Value>(line) {
            if v["id"] == json!(id) {
                return v;
            }
        }
    }
    loop {
        let line = bounded(&format!("response {id}"), lines.next_line())
            .await
            .unwrap()
            .unwrap_or_else(|| panic!("stdout closed before response {id}; seen {seen:#?}"));
        seen.push(line.clone());
        let v: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        if v["id"] == json!(id) {
            return v;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_store_missing_tenant_is_an_error_result_and_stdout_stays_jsonrpc() {
    let sb = Sandbox::new();
    sb.acme();
    let dsn = sb.store_dsn("ghost");

    // Through rmcp: isError, and the connection stays usable.
    let c = connect(&sb, &[&dsn]).await;
    let e = error_text(&c, "manifest", json!({})).await;
    assert!(e.contains("ghost"), "{e}");
    let e = error_text(&c, "snapshot", json!({})).await;
    assert!(e.contains("ghost"), "{e}");
    let e = error_text(&c, "search", json!({"query": "orders"})).await;
    assert!(e.contains("ghost"), "{e}");
    let e = error_text(&c, "get", json!({"ids": ["customers"]})).await;
    assert!(e.contains("ghost"), "{e}");
    assert_default_knowledge_tools(&names(&tools(&c).await));
    let rs = resources(&c).await;
    assert_eq!(rs.len(), 1, "{rs:#?}");
    assert_eq!(rs[0]["uri"], "okf://manifest");
    let description = rs[0]["description"].as_str().unwrap();
    assert!(
        description.contains("before anything else"),
        "{description}"
    );
    assert!(
        !sb.tenant_dir("ghost").exists(),
        "serving a missing tenant created it"
    );

    // The tenant appears (another process): the same session serves it.
    sb.copy_fixture("ops", "ops");
    blocking(|| sb.put("ops", "ghost"));
    let m = text(&c, "manifest", json!({})).await;
    assert!(m.starts_with("# tenant: ghost\n# bundles: ops\n"), "{m}");
    assert_eq!(row_ids(&m), ["deploy"]);
    let s = text(&c, "snapshot", json!({})).await;
    assert!(s.ends_with(", 1 concepts"), "{s}");
    close(c).await;
    std::fs::remove_dir_all(sb.tenant_dir("ghost")).unwrap();

    // By hand: every stdout line is a JSON-RPC message.
    let mut cmd = sb.mcp_command(&[&dsn]);
    cmd.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stderr = child.stderr.take().unwrap();
    let err_task = tokio::spawn(async move {
        let mut s = String::new();
        let _ = tokio::io::AsyncReadExt::read_to_string(&mut stderr, &mut s).await;
        s
    });
    let mut seen = vec![];
    let send = |v: Value| format!("{v}\n");
    stdin
        .write_all(
            send(
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25",
                    "capabilities": {},
                    "clientInfo": {"name": "okfit-tests", "version": "1.0.0"}
                }}),
            )
            .as_bytes(),
        )
        .await
        .unwrap();
    stdin.flush().await.unwrap();
    let init = response_to(&mut lines, &mut seen, 0).await;
    assert_eq!(init["result"]["serverInfo"]["name"], "okfit", "{init}");
    for v in [
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "manifest", "arguments": {}}}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": "okf://manifest"}}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "snapshot", "arguments": {}}}),
    ] {
        stdin.write_all(send(v).as_bytes()).await.unwrap();
    }
    stdin.flush().await.unwrap();
    let r1 = response_to(&mut lines, &mut seen, 1).await;
    assert_eq!(r1["result"]["isError"], true, "{r1}");
    assert!(
        r1["result"]["content"][0]["text"]
            .as_str()
            .unwrap()
            .contains("ghost"),
        "{r1}"
    );
    let r2 = response_to(&mut lines, &mut seen, 2).await;
    assert!(r2.get("error").is_some(), "{r2}");
    let r3 = response_to(&mut lines, &mut seen, 3).await;
    assert_eq!(r3["result"]["isError"], true, "{r3}");
    drop(stdin);
    while let Some(line) = bounded("stdout EOF", lines.next_line()).await.unwrap() {
        seen.push(line);
    }
    let status = bounded("exit after stdin EOF", child.wait()).await.unwrap();
    assert!(status.success(), "{status:?}");
    let err = bounded("stderr", err_task).await.unwrap();
    for l in &seen {
        let v: Value = serde_json::from_str(l)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l:?}"));
        assert_eq!(v["jsonrpc"], "2.0", "stdout line is not JSON-RPC 2.0: {l}");
    }
    assert!(
        err.starts_with(&format!("okfit-mcp serving {dsn} over stdio")),
        "{err}"
    );
    assert!(
        !sb.tenant_dir("ghost").exists(),
        "serving a missing tenant created it"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_tools_flag_selects_any_set_and_refuses_what_cannot_serve() {
    let sb = Sandbox::new();
    sb.acme();
    sb.copy_fixture("sales", "sales");
    let dsn = sb.store_dsn("acme");

    let c = connect(&sb, &[&dsn, "--tools", "manifest,get"]).await;
    assert_eq!(names(&tools(&c).await), ["manifest", "get"]);
    assert!(text(&c, "manifest", json!({}))
        .await
        .starts_with("# tenant: acme\n"));
    let e = invalid_params(&c, "search", json!({"query": "orders"})).await;
    assert!(e.contains("search"), "{e}");
    close(c).await;

    // Bundle tools need a folder (or project mode).
    let out = blocking(|| sb.okfit_mcp(&[&dsn, "--tools", "list_concepts"]));
    out.expect_code(64);
    assert!(out.stderr.contains("list_concepts"), "{}", out.stderr);
    assert!(out.stdout.is_empty());

    let out = blocking(|| sb.okfit_mcp(&[&dsn, "--tools", "manifest,x"]));
    out.expect_code(64);
    let prefix = "unknown tool \"x\": expected one of ";
    let at = out
        .stderr
        .find(prefix)
        .unwrap_or_else(|| panic!("no {prefix:?} in {}", out.stderr));
    let offered: Vec<&str> = out.stderr[at + prefix.len()..]
        .lines()
        .next()
        .unwrap()
        .split(", ")
        .collect();
    assert_eq!(offered[..4], KNOWLEDGE_TOOLS, "{}", out.stderr);
    for name in CATALOGUE {
        assert!(
            offered.contains(&name),
            "{name} is not offered: {}",
            out.stderr
        );
    }
    assert!(
        offered.iter().all(|n| CATALOGUE.contains(n)
            || WRITE_TOOLS.contains(n)
            || DATABASE_TOOLS.contains(n)),
        "only SPEC §5 catalogue names are offered: {}",
        out.stderr
    );
    assert!(out.stdout.is_empty());

    // With a folder connection a bundle tool is fine beside a knowledge tool.
    let folder = sb.folder_dsn("sales");
    let c = connect(&sb, &[&folder, "--tools", "list_concepts,manifest"]).await;
    assert_eq!(names(&tools(&c).await), ["list_concepts", "manifest"]);
    assert!(text(&c, "manifest", json!({}))
        .await
        .starts_with("# tenant: sales\n"));
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_project_mode_lists_the_manifest_resource_last() {
    let sb = Sandbox::new();
    let project = sb.path("project");
    copy_tree(&mcp_fixture("project"), &project);
    let mut cmd = sb.mcp_command(&[]);
    cmd.env("OKFIT_PROJECT_DIR", &project);
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let c: Client = bounded("initialize", ().serve(transport))
        .await
        .expect("the MCP handshake failed");

    let rs = resources(&c).await;
    let last = rs.last().expect("resources");
    assert_eq!(last["uri"], "okf://manifest", "{rs:#?}");
    assert_eq!(last["mimeType"], "text/tab-separated-values");
    assert_eq!(rs[0]["uri"], "okf://index");
    assert_eq!(
        rs.iter().filter(|r| r["uri"] == "okf://manifest").count(),
        1
    );
    let read = read_resource(&c, "okf://manifest").await;
    let contents = &read["contents"][0];
    assert_eq!(contents["mimeType"], "text/tab-separated-values");
    let m = contents["text"].as_str().unwrap();
    assert!(m.starts_with("# tenant: "), "{m}");
    let bundle = project.join("bundle").display().to_string();
    let cli = blocking(|| {
        sb.okfit(&["manifest", "-c", &format!("okf://{bundle}")])
            .ok()
    });
    assert_eq!(
        m, cli,
        "project-mode okf://manifest differs from the folder's"
    );
    assert!(m.contains("\nrevenue\tbundle\tmetric\t"), "{m}");
    close(c).await;
}

async fn mcp_on_a_store_ranks_like_a_fresh_process_after_a_rename_made_elsewhere(backend: Backend) {
    // Two concepts match "widget" once; alpha's body is one word shorter,
    // so it ranks first. Another process then adds other/alpha.md: the
    // untouched main/alpha.md is renamed `main/alpha` (its id is a searched
    // field, so its search length grows past beta's). A long-running
    // server must rank exactly as a fresh process reading the same
    // revision does.
    let sb = Sandbox::on(backend);
    sb.write(
        "main/alpha.md",
        "---\ntype: Note\ndescription: First note.\n---\n# Alpha\n\nThe widget sits on the shelf.\n",
    );
    sb.write(
        "main/beta.md",
        "---\ntype: Note\ndescription: Second note.\n---\n# Beta\n\nThe widget sits on the old shelf.\n",
    );
    sb.put("main", "t");
    let c = connect(&sb, &[&sb.store_dsn("t")]).await;
    let before = text(&c, "search", json!({"query": "widget"})).await;
    assert_eq!(
        before,
        blocking(|| sb.store("t", &["search", "widget"]).ok())
    );
    assert_eq!(row_ids(&before), ["alpha", "beta"], "{before}");

    sb.write(
        "other/alpha.md",
        "---\ntype: Note\ndescription: Unrelated.\n---\n# Other alpha\n\nNothing here.\n",
    );
    blocking(|| sb.put("other", "t"));
    let m = text(&c, "manifest", json!({})).await;
    assert_eq!(m, blocking(|| sb.store("t", &["manifest"]).ok()));
    assert_eq!(row_ids(&m), ["beta", "main/alpha", "other/alpha"], "{m}");
    let served = text(&c, "search", json!({"query": "widget"})).await;
    let fresh = blocking(|| sb.store("t", &["search", "widget"]).ok());
    assert_eq!(
        served, fresh,
        "after a commit elsewhere renamed main/alpha, the server ranks differently from a fresh process"
    );

    // The server keeps the postings it loaded and patches in what other
    // processes change: a rewritten, a new and a removed document.
    sb.write(
        "main/beta.md",
        "---\ntype: Note\ndescription: Second note.\n---\n# Beta\n\nA widget, a widget and a widget.\n",
    );
    sb.write(
        "main/gamma.md",
        "---\ntype: Note\ndescription: Third note.\n---\n# Gamma\n\nOne widget too.\n",
    );
    sb.remove("main/alpha.md");
    blocking(|| sb.put("main", "t"));
    for q in ["widget", "shelf", "widget shelf note"] {
        let served = text(&c, "search", json!({"query": q})).await;
        let fresh = blocking(|| sb.store("t", &["search", q]).ok());
        assert_eq!(
            served, fresh,
            "after edits elsewhere, {q:?} ranks differently from a fresh process"
        );
    }
    let served = text(&c, "search", json!({"query": "widget"})).await;
    assert_eq!(row_ids(&served), ["beta", "gamma"], "{served}");
    close(c).await;
}

on_both_backends!(async mcp_on_a_store_ranks_like_a_fresh_process_after_a_rename_made_elsewhere);

fn get_of_an_id_shared_by_two_bundles_names_the_candidates(backend: Backend) {
    let sb = Sandbox::on(backend);
    sb.write(
        "two/crm/customers.md",
        "---\ntype: Note\ndescription: CRM customers.\n---\n# Customers\n\nFrom the CRM.\n",
    );
    sb.copy_fixture("sales", "two/sales");
    sb.store("t", &["import", &sb.path("two").display().to_string()])
        .expect_code(0);
    let m = sb.store("t", &["manifest"]).ok();
    assert!(row_of(&m, "crm/customers").is_some(), "{m}");
    assert!(row_of(&m, "sales/customers").is_some(), "{m}");
    let out = sb.store("t", &["get", "customers"]);
    out.expect_code(1);
    assert!(
        out.stderr
            .contains("ambiguous id \"customers\": it could be crm/customers, sales/customers"),
        "{}",
        out.stderr
    );
    let g = sb
        .store("t", &["get", "sales/customers", "crm/customers"])
        .ok();
    assert!(g.starts_with("@@ sales/customers\n"), "{g}");
    assert!(g.contains("\n@@ crm/customers\n"), "{g}");
}

on_both_backends!(get_of_an_id_shared_by_two_bundles_names_the_candidates);

// ------------------------------------------------------------------------
// 8. stderr names the connection
// ------------------------------------------------------------------------

#[test]
fn mcp_stderr_starts_with_the_serving_line() {
    let sb = Sandbox::new();
    sb.acme();
    let dsn = sb.store_dsn("acme");
    assert!(dsn.starts_with("okf:///") && dsn.ends_with("?tenant=acme"));
    let mut child = sb
        .sandboxed(MCP, &[&dsn])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut first = String::new();
        let mut r = std::io::BufReader::new(stderr);
        let _ = r.read_line(&mut first);
        let _ = tx.send(first);
        let mut rest = String::new();
        let _ = r.read_to_string(&mut rest);
    });
    let first = rx.recv_timeout(HANG);
    // Stdin EOF ends the server; kill it if it does not.
    drop(child.stdin.take());
    let deadline = Instant::now() + HANG;
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = reader.join();
    let first = first.expect("no stderr line from okfit-mcp");
    assert_eq!(first, format!("okfit-mcp serving {dsn} over stdio\n"));
    assert!(
        status.is_some_and(|s| s.success()),
        "okfit-mcp did not exit cleanly on stdin EOF: {status:?}"
    );
}

/// A concept of generated words for the warm-postings test: version `v`
/// of concept `i` draws its words from a small vocabulary, so words are
/// shared by many concepts and change between versions.
fn warm_text(i: usize, v: usize) -> Vec<u8> {
    const WORDS: &[&str] = &[
        "ledger", "orbit", "cache", "harbor", "signal", "meadow", "quartz", "lantern", "vector",
        "canyon", "thread", "pixel", "summit", "fabric", "beacon", "tunnel", "glacier", "copper",
        "rhythm", "marble", "falcon", "engine", "voyage", "prism",
    ];
    let words: Vec<&str> = (0..30)
        .map(|k| WORDS[(i * 7 + k * (v + 3) + k * k) % WORDS.len()])
        .collect();
    format!(
        "---\ntitle: Concept {i} {}\n---\n# Concept {i}\n\n{}\n",
        WORDS[(i + v) % WORDS.len()],
        words.join(" ")
    )
    .into_bytes()
}

/// A reader holding every term's postings in memory (the daemon's
/// warm-up) ranks exactly as a fresh reader that reads them on demand,
/// before and after commits made through another connection (one
/// document, many, a deletion); over its limit it holds none.
fn warm_postings_rank_as_postings_read_on_demand(backend: Backend) {
    use okfit_knowledge::kb::Knowledge;
    use okfit_store::change::{sha256_hex, Change, Pre};
    let sb = Sandbox::on(backend);
    let dsn = sb.tenants.dsn("warm");
    let writer = Knowledge::open(&dsn).expect("open the writer");
    let put = |i: usize, v: usize, pre: Pre| Change {
        bundle: "b".into(),
        path: format!("c{i:02}.md"),
        content: Some(warm_text(i, v)),
        pre,
    };
    writer
        .commit((0..60).map(|i| put(i, 0, Pre::Create)).collect(), None)
        .expect("first commit");
    let warm = Knowledge::open(&dsn).expect("open the reader");
    assert_eq!(warm.warm_postings(10).expect("a limit too low"), None);
    let held = warm
        .warm_postings(usize::MAX)
        .expect("load the postings")
        .expect("every posting held");
    assert!(held > 60 * 10, "{held} postings held");
    let queries = [
        "ledger orbit",
        "concept harbor signal",
        "quartz",
        "prism voyage engine",
        "copper",
        "meadow lantern vector canyon",
    ];
    let same = |when: &str| {
        let fresh = Knowledge::open(&dsn).expect("open a fresh reader");
        for q in queries {
            assert_eq!(
                warm.search(q, 10, None).expect("warm search"),
                fresh.search(q, 10, None).expect("fresh search"),
                "{when}: {q}"
            );
        }
        // Patched, not dropped: the reader still holds every posting,
        // exactly those a full load reads now.
        let all = Knowledge::open(&dsn).expect("open a loading reader");
        assert_eq!(
            warm.held_postings(),
            all.warm_postings(usize::MAX).expect("load every posting"),
            "{when}: postings held"
        );
    };
    same("as loaded");
    let mut version = vec![0usize; 60];
    let mut rewrite = |docs: &[usize]| {
        let changes = docs
            .iter()
            .map(|&i| {
                let old = sha256_hex(&warm_text(i, version[i]));
                version[i] += 1;
                put(i, version[i], Pre::Hash(old))
            })
            .collect();
        writer.commit(changes, None).expect("rewrite");
    };
    rewrite(&[7]);
    same("one document rewritten");
    rewrite(&(0..40).step_by(2).collect::<Vec<_>>());
    same("twenty documents rewritten");
    // More documents than a reader used to patch in between two reads.
    for i in 0..50 {
        rewrite(&[(i * 7) % 60]);
    }
    for i in 100..130 {
        writer
            .commit(vec![put(i, 0, Pre::Create)], None)
            .expect("add one");
    }
    same("eighty commits of one document");
    let gone = sha256_hex(&warm_text(3, version[3]));
    writer
        .commit(
            vec![Change {
                bundle: "b".into(),
                path: "c03.md".into(),
                content: None,
                pre: Pre::Hash(gone),
            }],
            None,
        )
        .expect("delete");
    writer
        .commit(vec![put(60, 0, Pre::Create)], None)
        .expect("add");
    same("one deleted, one added");
}
on_both_backends!(warm_postings_rank_as_postings_read_on_demand);

/// A folder connection that has searched keeps its index through an edit,
/// a new concept that moves another's id, and a deletion: it then ranks
/// exactly as a fresh connection to the folder does.
#[test]
fn a_folder_kept_through_changes_ranks_like_a_fresh_one() {
    use okfit_knowledge::kb::Knowledge;
    let sb = Sandbox::new();
    sb.copy_fixture("sales", "sales");
    let dsn = sb.folder_dsn("sales");
    let kept = Knowledge::open(&dsn).expect("open the folder");
    let queries = [
        "orders",
        "orders db",
        "datasets orders",
        "customers churned",
        "zebra replicas",
        "metrics",
        "production database",
        "archive",
    ];
    for q in queries {
        kept.search(q, 8, None).expect("search before the changes");
    }
    let customers = sb.path("sales/customers.md");
    let t = std::fs::read_to_string(&customers).unwrap();
    std::fs::write(&customers, format!("{t}\nA zebra of churned accounts.\n")).unwrap();
    sb.write(
        "sales/archive/orders_db.md",
        "---\ntype: Metric\ndescription: Orders counted per database replica.\n---\n# Orders per DB\n\nCounted on the read replicas every night.\n",
    );
    sb.remove("sales/tables/orders.md");
    let fresh = || Knowledge::open(&dsn).expect("open the folder again");
    let same_as_fresh = |what: &str| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let now = fresh().manifest(None).expect("a fresh manifest");
            if kept.manifest(None).expect("the kept manifest") == now {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: the kept connection never saw it"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        for q in queries {
            assert_eq!(
                kept.search(q, 8, None).expect("search after the changes"),
                fresh().search(q, 8, None).expect("a fresh search"),
                "{what}: {q}"
            );
        }
    };
    same_as_fresh("an edit, a new concept and a deletion");
    let m = kept.manifest(None).unwrap();
    assert!(
        m.contains("datasets/orders_db") && m.contains("archive/orders_db"),
        "{m}"
    );
    // The old concept goes: the new one takes the short id, and loses the
    // words of its long one.
    sb.remove("sales/datasets/orders_db.md");
    same_as_fresh("the old concept deleted");
    let m = kept.manifest(None).unwrap();
    assert!(
        !m.contains("archive/orders_db") && m.contains("\norders_db\t"),
        "{m}"
    );
}

/// Writes `n` generated concepts into `<sandbox>/<rel>/concepts/`: words
/// drawn with a skew from a small vocabulary, so that searches rank many
/// documents with different scores.
fn many_concepts(sb: &Sandbox, rel: &str, n: usize) {
    const WORDS: &[&str] = &[
        "orders",
        "revenue",
        "replica",
        "customer",
        "churn",
        "pipeline",
        "latency",
        "budget",
        "invoice",
        "warehouse",
        "forecast",
        "ledger",
        "signup",
        "refund",
        "cohort",
        "quota",
        "region",
        "shipment",
        "audit",
        "billing",
        "session",
        "funnel",
        "partner",
        "tariff",
        "backlog",
        "incident",
        "schema",
        "export",
        "retention",
        "catalog",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move |m: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        let r = (seed >> 33) as usize;
        // Skewed: low indexes far more often.
        (r % m) * (r % m) / m.max(1)
    };
    for i in 0..n {
        let words: Vec<&str> = (0..40).map(|_| WORDS[next(WORDS.len())]).collect();
        let title: Vec<&str> = (0..3).map(|_| WORDS[next(WORDS.len())]).collect();
        sb.write(
            &format!("{rel}/concepts/c{i:04}.md"),
            format!(
                "---\ntype: Metric\ndescription: The {} of concept {i}.\n---\n# {}\n\n{}\n\n## Notes\n\n{}\n",
                title.join(" "),
                title.join(" "),
                words[..20].join(" "),
                words[20..].join(" ")
            ),
        );
    }
}

/// Writes `text` to `path` and sets its modification time back to `mtime`.
fn write_with_mtime(path: &Path, text: &str, mtime: std::time::SystemTime) {
    std::fs::write(path, text).unwrap();
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(mtime).unwrap();
}

/// A folder of 1,200 concepts is kept in okfit's cache between processes:
/// every answer equals the one read into memory (`OKFIT_CACHE=off`), on
/// the run that fills the cache, on the runs that read it, after edits,
/// deletions and new files, after an edit that keeps a file's length and
/// mtime once the saved stamps no longer match the store, and after an
/// edit within the same second as the save. A folder with a path the store
/// refuses is answered from memory.
#[test]
fn a_large_folder_answers_from_its_cache_as_from_memory() {
    let sb = Sandbox::new();
    many_concepts(&sb, "big", 1_200);
    let dsn = sb.folder_dsn("big");
    let asks: Vec<Vec<&str>> = vec![
        vec!["search", "orders revenue"],
        vec!["search", "churn", "cohort", "retention", "-k", "8"],
        vec!["search", "zebra quokka"],
        vec!["search", "catalog export schema"],
        vec!["manifest"],
        vec!["snapshot"],
        vec!["get", "concepts/c0003", "concepts/c0004", "concepts/c0007"],
    ];
    let answers = |cache: bool| -> Vec<String> {
        asks.iter()
            .map(|a| {
                let mut args = a.clone();
                args.extend(["-c", dsn.as_str()]);
                let mut c = sb.sandboxed(OKFIT, &args);
                if !cache {
                    c.env("OKFIT_CACHE", "off");
                }
                let out = finish(c);
                format!("{:?} exit {}\n{}{}", a, out.code, out.text(), out.stderr)
            })
            .collect()
    };
    // The first answer that differs, shortened.
    let same = |got: Vec<String>, want: &[String], what: &str| {
        for (g, w) in got.iter().zip(want) {
            let cut = |t: &str| t.chars().take(1_500).collect::<String>();
            assert!(g == w, "{what}:\n{}\n---\n{}", cut(g), cut(w));
        }
    };
    let caches = sb.path("home/.cache/okfit/folders");
    let memory = answers(false);
    assert!(!caches.exists(), "OKFIT_CACHE=off wrote a cache");
    assert!(memory[0].contains("exit 0"), "{}", memory[0]);
    same(answers(true), &memory, "a run without a cache");
    // A server fills the cache in the background after its first search.
    let stamps_of = || {
        std::fs::read_dir(&caches)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path().join("stamps"))
            .find(|p| p.is_file())
    };
    let mut server = sb
        .sandboxed(MCP, &[dsn.as_str()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start okfit-mcp");
    let mut stdin = server.stdin.take().unwrap();
    let mut stdout = std::io::BufReader::new(server.stdout.take().unwrap());
    let mut line = String::new();
    for msg in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "search", "arguments": {"query": "orders"}}}),
    ] {
        use std::io::Write;
        writeln!(stdin, "{msg}").unwrap();
        stdin.flush().unwrap();
        if msg.get("id").is_some() {
            line.clear();
            stdout.read_line(&mut line).unwrap();
            assert!(line.contains("\"result\""), "{line}");
        }
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    while stamps_of().is_none() {
        assert!(
            Instant::now() < deadline,
            "the server never saved the cache"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin);
    let _ = server.kill();
    let _ = server.wait();
    let saved: Vec<_> = std::fs::read_dir(&caches).unwrap().collect();
    assert_eq!(saved.len(), 1, "one cache for one folder");
    let dir = saved[0].as_ref().unwrap().path();
    assert!(dir.join("stamps").is_file(), "{}", dir.display());
    same(answers(true), &memory, "a run that reads the cache");

    // Edits, a deletion and a new file.
    let c3 = sb.path("big/concepts/c0003.md");
    let t = std::fs::read_to_string(&c3).unwrap();
    std::fs::write(&c3, format!("{t}\nA zebra and a quokka.\n")).unwrap();
    sb.remove("big/concepts/c0004.md");
    sb.write(
        "big/concepts/zz-new.md",
        "---\ntype: Metric\ndescription: A quokka count.\n---\n# Quokka\n\nOrders of quokka.\n",
    );
    let memory = answers(false);
    assert!(memory[2].contains("c0003"), "{}", memory[2]);
    same(answers(true), &memory, "after edits");

    // An edit that keeps the length and the mtime is found once the
    // saved stamps do not show the store's head.
    let c5 = sb.path("big/concepts/c0005.md");
    let before = std::fs::metadata(&c5).unwrap().modified().unwrap();
    let t = std::fs::read_to_string(&c5).unwrap();
    write_with_mtime(&c5, &t.replacen("concept 5.", "concept Z.", 1), before);
    let stamps = dir.join("stamps");
    let s = std::fs::read_to_string(&stamps).unwrap();
    let mut lines: Vec<&str> = s.lines().collect();
    assert!(lines[1].starts_with("head\t"), "{s}");
    lines[1] = "head\tsomething-else";
    std::fs::write(&stamps, lines.join("\n") + "\n").unwrap();
    let memory = answers(false);
    assert!(memory[4].contains("concept Z."), "{}", memory[4]);
    same(
        answers(true),
        &memory,
        "after an edit the stamps cannot see",
    );

    // An edit saved within the same second, then another of the same
    // length with the first one's mtime: the first one's stamp was not
    // trusted, so the second is read.
    let c7 = sb.path("big/concepts/c0007.md");
    let t = std::fs::read_to_string(&c7).unwrap();
    std::fs::write(&c7, format!("{t}\nfirst\n")).unwrap();
    let first = std::fs::metadata(&c7).unwrap().modified().unwrap();
    same(answers(true), &answers(false), "after a recent edit");
    write_with_mtime(&c7, &format!("{t}\nfinal\n"), first);
    let memory = answers(false);
    assert!(memory[6].contains("final"), "{}", memory[6]);
    same(
        answers(true),
        &memory,
        "after a second edit in the same tick",
    );

    // A path the store refuses: the folder is answered from memory.
    many_concepts(&sb, "odd", 1_000);
    sb.write(
        "odd/concepts/Has Space.md",
        "---\ntype: Metric\ndescription: A spaced name.\n---\n# Spaced\n",
    );
    let odd = sb.folder_dsn("odd");
    let search = |cache: bool| {
        let mut c = sb.sandboxed(OKFIT, &["search", "spaced", "-c", odd.as_str()]);
        if !cache {
            c.env("OKFIT_CACHE", "off");
        }
        let out = finish(c);
        assert_eq!(out.code, 0, "{}", out.stderr);
        out.text()
    };
    assert_eq!(search(true), search(false));
    assert!(search(true).contains("Has Space"), "{}", search(true));
}
