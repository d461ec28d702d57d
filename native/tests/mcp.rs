//! End-to-end tests of the `okfit-mcp` binary over stdio, in project mode
//! (no arguments): the six bundle tools, the `okf://index` and
//! `okf://concept/<id>` resources, live reads, and protocol hygiene.
//!
//! Every test copies a fixture from `tests/fixtures/mcp/` into a temporary
//! directory (so edits never touch the repository), clears the
//! environment, points `OKFIT_PROJECT_DIR` at the copy, `HOME` and
//! `XDG_CONFIG_HOME` into the sandbox, and talks to the real binary: through
//! rmcp's client for the tools and resources, and through a raw JSON-lines
//! driver (responses matched by `id`) for framing, lifecycle and the
//! protocol revisions. Contract: SPEC §2, §3, §5; reference `okfit.md`
//! §1 and §16.1. Waits are bounded so that a hang fails a test; nothing
//! asserts how fast anything is, except that stdin EOF ends the server
//! within a few seconds.

mod common;

use common::copy_tree;
use rmcp::model::{
    CallToolRequestParams, CallToolResult, ProtocolVersion, ReadResourceRequestParams,
};
use rmcp::service::{ClientLifecycleMode, ClientServiceExt, NotificationContext, RunningService};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceError, ServiceExt};
use serde_json::{json, Map, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The server under test.
const MCP: &str = env!("CARGO_BIN_EXE_okfit-mcp");
/// The CLI, for the `validate_bundle` ≡ `okfit validate --format json` check.
const CLI: &str = env!("CARGO_BIN_EXE_okfit");
/// The package version both binaries report.
const VERSION: &str = env!("CARGO_PKG_VERSION");
/// An instant after churn's `stale_after` and before revenue's.
const NOW: &str = "2026-09-01T00:00:00Z";
/// How long any single answer may take before the test calls it a hang.
const HANG: Duration = Duration::from_secs(60);
/// How long stdin EOF may take to end the process.
const EOF_EXIT: Duration = Duration::from_secs(5);
/// How long a notification may take to arrive after the request that
/// should trigger it has been answered.
const NOTIFY: Duration = Duration::from_secs(5);

/// Every concept id in the project fixture, sorted.
const IDS: [&str; 10] = [
    "computations/revenue-equality",
    "metrics/churn",
    "metrics/gross-margin",
    "metrics/orders",
    "metrics/revenue",
    "policies/data-retention",
    "policies/revenue-recognition",
    "skills/run-bigquery",
    "tables/orders",
    "tables/revenue-daily",
];

/// The declared types, sorted.
const TYPES: [&str; 6] = [
    "Attested Computation",
    "BigQuery Table",
    "Dashboard",
    "Metric",
    "Policy",
    "Skill",
];

/// The declared tags, sorted.
const TAGS: [&str; 13] = [
    "attested",
    "bigquery",
    "cogs",
    "deprecated",
    "executor",
    "finance",
    "headline-metric",
    "margin",
    "orders",
    "policy",
    "revenue",
    "sales",
    "skill",
];

/// The tools, in `tools/list` order, with their titles.
const TOOLS: [(&str, &str); 6] = [
    ("describe_vocabulary", "Describe okfit vocabulary"),
    ("list_concepts", "List OKF concepts"),
    ("get_concept", "Get one OKF concept"),
    ("concept_neighbors", "Concept graph neighbors"),
    ("stale_report", "Stale concepts"),
    ("validate_bundle", "Validate the bundle"),
];

// ------------------------------------------------------------------------
// Sandbox
// ------------------------------------------------------------------------

fn fixture(name: &str) -> PathBuf {
    common::fixture("mcp", name)
}

/// A temporary directory holding `home/`, `xdg/` and a copy of one fixture
/// at `project/`. Its path is canonical, so it compares with what the
/// server prints.
struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new(fixture_name: &str) -> Sandbox {
        let (dir, root) = common::sandbox_dir("okfit-mcp-");
        copy_tree(&fixture(fixture_name), &root.join("project"));
        Sandbox { _dir: dir, root }
    }

    fn project(&self) -> PathBuf {
        self.root.join("project")
    }

    fn bundle(&self) -> PathBuf {
        self.project().join("bundle")
    }

    /// A clean environment: only `PATH` (for git), `HOME` and
    /// `XDG_CONFIG_HOME`; cwd is the sandbox root (not a project).
    fn base_env(&self, cmd: &mut tokio::process::Command) {
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("xdg"))
            .current_dir(&self.root)
            .kill_on_drop(true);
    }

    /// The server command in project mode at the fixture copy.
    fn command(&self) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(MCP);
        self.base_env(&mut cmd);
        cmd.env("OKFIT_PROJECT_DIR", self.project());
        cmd
    }

    /// The server command with a custom environment on top of the base.
    fn command_with(&self, env: &[(&str, &str)], cwd: Option<&Path>) -> tokio::process::Command {
        let mut cmd = tokio::process::Command::new(MCP);
        self.base_env(&mut cmd);
        for (k, v) in env {
            cmd.env(k, v);
        }
        if let Some(d) = cwd {
            cmd.current_dir(d);
        }
        cmd
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.bundle().join(rel)).unwrap()
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.bundle().join(rel), text).unwrap();
    }

    /// `okfit validate --format json --now <now>` on the copy.
    fn cli_validate(&self, now: &str) -> Value {
        let out = std::process::Command::new(CLI)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", self.root.join("home"))
            .env("XDG_CONFIG_HOME", self.root.join("xdg"))
            .current_dir(&self.root)
            .args(["validate", "--format", "json", "--now", now])
            .arg(self.project())
            .output()
            .unwrap();
        serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "okfit validate printed no JSON ({e})\nstdout:\n{}\nstderr:\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            )
        })
    }
}

// ------------------------------------------------------------------------
// rmcp client harness
// ------------------------------------------------------------------------

/// A client that counts `notifications/resources/list_changed`.
#[derive(Clone, Default)]
struct Counting {
    list_changed: Arc<AtomicUsize>,
}

impl ClientHandler for Counting {
    async fn on_resource_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.list_changed.fetch_add(1, Ordering::SeqCst);
    }
}

type Client = RunningService<RoleClient, Counting>;

async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(HANG, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {HANG:?}"))
}

/// Connects rmcp's client (`initialize`, 2025-11-25) to a server command.
async fn connect_cmd(cmd: tokio::process::Command) -> Client {
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    bounded("initialize", Counting::default().serve(transport))
        .await
        .expect("the MCP handshake failed")
}

async fn connect(sb: &Sandbox) -> Client {
    connect_cmd(sb.command()).await
}

fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// One `tools/call`.
async fn call_raw(c: &Client, name: &str, a: Value) -> Result<CallToolResult, ServiceError> {
    let params = CallToolRequestParams::new(name.to_string()).with_arguments(args(a));
    bounded(name, c.call_tool(params)).await
}

/// The wire shape of a tool result.
fn wire(r: &CallToolResult) -> Value {
    serde_json::to_value(r).unwrap()
}

/// A successful call: `structuredContent` plus the same JSON as the text of
/// `content[0]`. Returns the structured content.
#[track_caller]
fn success(r: &CallToolResult) -> Value {
    let w = wire(r);
    assert_ne!(w["isError"], json!(true), "expected success, got {w:#}");
    let structured = w
        .get("structuredContent")
        .cloned()
        .unwrap_or_else(|| panic!("no structuredContent in {w:#}"));
    let content = w["content"].as_array().expect("content is an array");
    assert!(!content.is_empty(), "content is empty: {w:#}");
    assert_eq!(content[0]["type"], "text", "{w:#}");
    let text: Value = serde_json::from_str(content[0]["text"].as_str().unwrap())
        .expect("content[0].text is JSON");
    assert_eq!(
        text, structured,
        "content[0].text must render structuredContent"
    );
    structured
}

/// A refusal: `isError: true`, exactly one non-empty text content, no
/// `structuredContent`. Returns the text.
#[track_caller]
fn refusal(r: &CallToolResult) -> String {
    let w = wire(r);
    assert_eq!(w["isError"], json!(true), "expected a refusal, got {w:#}");
    assert!(
        w.get("structuredContent").is_none(),
        "a refusal carries no structuredContent: {w:#}"
    );
    let content = w["content"].as_array().expect("content is an array");
    assert_eq!(content.len(), 1, "one text content: {w:#}");
    assert_eq!(content[0]["type"], "text", "{w:#}");
    let text = content[0]["text"].as_str().unwrap().to_string();
    assert!(!text.trim().is_empty(), "the refusal text is empty");
    text
}

async fn ok(c: &Client, name: &str, a: Value) -> Value {
    let r = call_raw(c, name, a.clone())
        .await
        .unwrap_or_else(|e| panic!("{name} {a}: {e}"));
    success(&r)
}

async fn refused(c: &Client, name: &str, a: Value) -> String {
    let r = call_raw(c, name, a.clone())
        .await
        .unwrap_or_else(|e| panic!("{name} {a}: {e}"));
    refusal(&r)
}

/// A call that must fail as JSON-RPC -32602; returns the error message.
async fn invalid_params(c: &Client, name: &str, a: Value) -> String {
    match call_raw(c, name, a.clone()).await {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602, "{name} {a}: {e:?}");
            e.message.to_string()
        }
        Err(other) => panic!("{name} {a}: expected -32602, got {other}"),
        Ok(r) => panic!("{name} {a}: expected -32602, got a result {:#}", wire(&r)),
    }
}

fn ids_of(items: &Value) -> Vec<String> {
    items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["id"].as_str().unwrap().to_string())
        .collect()
}

async fn list_ids(c: &Client, a: Value) -> (Vec<String>, u64) {
    let v = ok(c, "list_concepts", a).await;
    (ids_of(&v["items"]), v["total"].as_u64().unwrap())
}

async fn resources(c: &Client) -> Vec<Value> {
    bounded("resources/list", c.list_all_resources())
        .await
        .unwrap()
        .iter()
        .map(|r| serde_json::to_value(r).unwrap())
        .collect()
}

fn uris(rs: &[Value]) -> Vec<String> {
    rs.iter()
        .map(|r| r["uri"].as_str().unwrap().to_string())
        .collect()
}

async fn read_resource(c: &Client, uri: &str) -> Result<Value, ServiceError> {
    bounded(uri, c.read_resource(ReadResourceRequestParams::new(uri)))
        .await
        .map(|r| serde_json::to_value(r).unwrap())
}

/// Waits (bounded) until the list_changed counter exceeds `before`.
async fn expect_list_changed(c: &Client, before: usize, after_what: &str) -> usize {
    let counter = c.service().list_changed.clone();
    let deadline = tokio::time::Instant::now() + NOTIFY;
    loop {
        let n = counter.load(Ordering::SeqCst);
        if n > before {
            return n;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no notifications/resources/list_changed within {NOTIFY:?} of {after_what}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn close(c: Client) {
    let _ = tokio::time::timeout(HANG, c.cancel()).await;
}

fn diags(report: &Value) -> &Vec<Value> {
    report["diagnostics"].as_array().unwrap()
}

fn codes(report: &Value) -> Vec<(String, String)> {
    diags(report)
        .iter()
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn without(mut v: Value, keys: &[&str]) -> Value {
    for k in keys {
        v.as_object_mut().unwrap().remove(*k);
    }
    v
}

// ------------------------------------------------------------------------
// Raw JSON-lines driver
// ------------------------------------------------------------------------

/// The server driven by hand: lines in, JSON-RPC messages out, matched by
/// `id`; every stdout line and all of stderr are kept for inspection.
struct Raw {
    child: tokio::process::Child,
    stdin: Option<tokio::process::ChildStdin>,
    rx: mpsc::UnboundedReceiver<Value>,
    seen: Vec<Value>,
    stdout: Arc<Mutex<Vec<String>>>,
    stderr: Arc<Mutex<String>>,
    stderr_task: Option<tokio::task::JoinHandle<()>>,
    stdout_task: Option<tokio::task::JoinHandle<()>>,
}

impl Raw {
    fn spawn(mut cmd: tokio::process::Command) -> Raw {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stdin = child.stdin.take();
        let out = child.stdout.take().unwrap();
        let mut err = child.stderr.take().unwrap();
        let (tx, rx) = mpsc::unbounded_channel();
        let stdout = Arc::new(Mutex::new(vec![]));
        let lines = stdout.clone();
        let stdout_task = tokio::spawn(async move {
            let mut reader = BufReader::new(out).lines();
            while let Ok(Some(line)) = reader.next_line().await {
                lines.lock().unwrap().push(line.clone());
                let v = serde_json::from_str::<Value>(&line)
                    .unwrap_or_else(|_| json!({"__not_json__": line}));
                let _ = tx.send(v);
            }
        });
        let stderr = Arc::new(Mutex::new(String::new()));
        let sink = stderr.clone();
        let stderr_task = tokio::spawn(async move {
            let mut buf = [0u8; 4096];
            while let Ok(n) = err.read(&mut buf).await {
                if n == 0 {
                    break;
                }
                sink.lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(&buf[..n]));
            }
        });
        Raw {
            child,
            stdin,
            rx,
            seen: vec![],
            stdout,
            stderr,
            stderr_task: Some(stderr_task),
            stdout_task: Some(stdout_task),
        }
    }

    async fn line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    async fn send(&mut self, v: Value) {
        self.line(&v.to_string()).await;
    }

    async fn request(&mut self, id: i64, method: &str, params: Value) -> Value {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        self.response(id).await
    }

    /// The first message (already seen or still to come) matching `pred`;
    /// it is consumed, the others are kept.
    async fn next_where(&mut self, what: &str, pred: impl Fn(&Value) -> bool) -> Value {
        if let Some(i) = self.seen.iter().position(&pred) {
            return self.seen.remove(i);
        }
        let deadline = tokio::time::Instant::now() + HANG;
        loop {
            let m = tokio::time::timeout_at(deadline, self.rx.recv())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "{what}: nothing within {HANG:?}\nstdout so far: {:#?}\nstderr: {}",
                        self.stdout.lock().unwrap(),
                        self.stderr.lock().unwrap()
                    )
                })
                .unwrap_or_else(|| {
                    panic!(
                        "{what}: stdout closed\nstderr: {}",
                        self.stderr.lock().unwrap()
                    )
                });
            if pred(&m) {
                return m;
            }
            self.seen.push(m);
        }
    }

    /// The response to request `id`.
    async fn response(&mut self, id: i64) -> Value {
        self.next_where(&format!("response {id}"), |m| {
            m["id"] == json!(id) && (m.get("result").is_some() || m.get("error").is_some())
        })
        .await
    }

    /// Closes stdin and waits for the exit; panics after `EOF_EXIT`.
    async fn close(mut self) -> (std::process::ExitStatus, Vec<String>, String) {
        drop(self.stdin.take());
        let status = tokio::time::timeout(EOF_EXIT, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("the server did not exit within {EOF_EXIT:?} of stdin EOF"))
            .unwrap();
        if let Some(t) = self.stdout_task.take() {
            let _ = tokio::time::timeout(HANG, t).await;
        }
        if let Some(t) = self.stderr_task.take() {
            let _ = tokio::time::timeout(HANG, t).await;
        }
        let out = self.stdout.lock().unwrap().clone();
        let err = self.stderr.lock().unwrap().clone();
        (status, out, err)
    }
}

fn initialize(version: &str) -> Value {
    json!({
        "protocolVersion": version,
        "capabilities": {},
        "clientInfo": {"name": "okfit-tests", "version": "1.0.0"}
    })
}

/// `initialize` + `notifications/initialized` at `version`; returns the
/// initialize result.
async fn handshake(raw: &mut Raw, version: &str) -> Value {
    let r = raw.request(0, "initialize", initialize(version)).await;
    raw.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        .await;
    r
}

/// `_meta` for a 2026-07-28 (stateless) request.
fn meta_2026() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "okfit-tests", "version": "1.0.0"},
        "io.modelcontextprotocol/clientCapabilities": {}
    })
}

#[track_caller]
fn assert_jsonrpc_only(lines: &[String]) {
    for l in lines {
        let v: Value = serde_json::from_str(l)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {l:?}"));
        assert!(v.is_object(), "stdout line is not a JSON-RPC object: {l}");
        assert_eq!(v["jsonrpc"], "2.0", "stdout line is not JSON-RPC 2.0: {l}");
    }
}

// ------------------------------------------------------------------------
// tools/list: names, order, titles, annotations, closed schemas
// ------------------------------------------------------------------------

/// Every object node of a schema has `additionalProperties: false`.
fn assert_closed(tool: &str, at: &str, schema: &Value) {
    if schema["type"] == "object" {
        assert_eq!(
            schema["additionalProperties"],
            json!(false),
            "{tool}: the object at {at} is not closed: {schema:#}"
        );
    }
    if let Some(props) = schema["properties"].as_object() {
        for (k, v) in props {
            assert_closed(tool, &format!("{at}.{k}"), v);
        }
    }
    if schema.get("items").is_some() {
        assert_closed(tool, &format!("{at}[]"), &schema["items"]);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tools_list_has_the_six_tools_in_order_annotated_with_closed_schemas() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let tools: Vec<Value> = bounded("tools/list", c.list_all_tools())
        .await
        .unwrap()
        .iter()
        .map(|t| serde_json::to_value(t).unwrap())
        .collect();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    let expected: Vec<&str> = TOOLS.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, expected);
    for (t, (name, title)) in tools.iter().zip(TOOLS) {
        assert_eq!(t["title"], title, "{name}");
        assert!(
            !t["description"].as_str().unwrap_or("").is_empty(),
            "{name} has no description"
        );
        let a = &t["annotations"];
        assert_eq!(a["readOnlyHint"], true, "{name}: {a}");
        assert_eq!(a["idempotentHint"], true, "{name}: {a}");
        assert_eq!(a["openWorldHint"], false, "{name}: {a}");
        let schema = &t["inputSchema"];
        assert_eq!(schema["type"], "object", "{name}");
        assert_closed(name, "$", schema);
    }
    let by_name = |n: &str| tools.iter().find(|t| t["name"] == n).unwrap()["inputSchema"].clone();
    let keys = |s: &Value| -> Vec<String> {
        let mut k: Vec<String> = s["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        k.sort();
        k
    };
    assert!(keys(&by_name("describe_vocabulary")).is_empty());
    assert_eq!(
        keys(&by_name("list_concepts")),
        ["limit", "offset", "status", "tags", "type"]
    );
    assert_eq!(keys(&by_name("get_concept")), ["id"]);
    assert_eq!(by_name("get_concept")["required"], json!(["id"]));
    assert_eq!(keys(&by_name("concept_neighbors")), ["id"]);
    assert_eq!(keys(&by_name("stale_report")), ["limit", "now", "offset"]);
    assert_eq!(
        keys(&by_name("validate_bundle")),
        ["documents", "file", "limit", "now", "offset", "severity"]
    );
    let docs = &by_name("validate_bundle")["properties"]["documents"]["items"];
    assert_eq!(keys(docs), ["path", "text"]);
    let list = by_name("list_concepts");
    assert_eq!(list["properties"]["limit"]["minimum"], 1);
    assert_eq!(list["properties"]["limit"]["maximum"], 1000);
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn initialize_names_the_server_okfit_with_instructions() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let info = serde_json::to_value(c.peer_info().expect("server info")).unwrap();
    assert_eq!(info["serverInfo"]["name"], "okfit", "{info:#}");
    assert_eq!(info["serverInfo"]["version"], VERSION, "{info:#}");
    assert_eq!(info["protocolVersion"], "2025-11-25", "{info:#}");
    let instructions = info["instructions"].as_str().unwrap_or("");
    assert!(
        instructions.contains("describe_vocabulary"),
        "{instructions}"
    );
    assert!(info["capabilities"]["tools"].is_object(), "{info:#}");
    assert_eq!(
        info["capabilities"]["resources"]["listChanged"], true,
        "{info:#}"
    );
    close(c).await;
}

// ------------------------------------------------------------------------
// describe_vocabulary
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn describe_vocabulary_reports_roots_config_agent_types_and_tags() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(&c, "describe_vocabulary", json!({})).await;
    let project = sb.project();
    assert_eq!(v["project_root"], project.display().to_string());
    assert_eq!(v["bundle_root"], sb.bundle().display().to_string());
    assert_eq!(
        v["config_path"],
        project.join(".config/okfit.toml").display().to_string()
    );
    assert_eq!(v["agent"], "okfit/claude-code");
    assert_eq!(v["profile"], Value::Null);
    assert_eq!(v["profile_requested"], "none");
    let types: Vec<&str> = v["types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(types, TYPES);
    for t in v["types"].as_array().unwrap() {
        assert!(
            t["description"].as_str().is_some_and(|d| !d.is_empty()),
            "type {} has no description",
            t["name"]
        );
        assert!(t["fields"].is_array(), "{t}");
    }
    let tags: Vec<&str> = v["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(tags, TAGS);
    assert_eq!(
        v["tags"][5],
        json!({"name": "finance", "description": "Money."})
    );
    // The declared details come through.
    let metric = v["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Metric")
        .unwrap();
    assert_eq!(
        metric["guidance"],
        "Say how the number is computed and which table it comes from."
    );
    let unit = &metric["fields"][0];
    assert_eq!(unit["name"], "unit");
    let values: Vec<&str> = unit["values"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        values,
        ["usd", "percent", "count"],
        "values keep declaration order"
    );
    let policy = v["types"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "Policy")
        .unwrap();
    assert_eq!(policy["required"], json!(["description"]));
    assert_eq!(v["docs_presets"], json!([]));
    close(c).await;
}

// ------------------------------------------------------------------------
// list_concepts
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_concepts_lists_all_ten_sorted_with_the_seven_field_summary() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(&c, "list_concepts", json!({})).await;
    assert_eq!(v["total"], 10);
    assert_eq!(ids_of(&v["items"]), IDS);
    let churn = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "metrics/churn")
        .unwrap();
    assert_eq!(
        churn,
        &json!({
            "id": "metrics/churn",
            "type": "Metric",
            "title": "Churn",
            "description": "Share of customers lost per month.",
            "status": "draft",
            "tags": ["finance"],
            "path": "metrics/churn.md"
        })
    );
    // Absent status is stable.
    let revenue = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["id"] == "metrics/revenue")
        .unwrap();
    assert_eq!(revenue["status"], "stable");
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_concepts_filters_by_type_tags_and_status() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let (ids, total) = list_ids(&c, json!({"type": "Policy"})).await;
    assert_eq!(total, 2);
    assert_eq!(
        ids,
        ["policies/data-retention", "policies/revenue-recognition"]
    );

    let (ids, total) = list_ids(&c, json!({"type": "Attested Computation"})).await;
    assert_eq!(
        (ids, total),
        (vec!["computations/revenue-equality".to_string()], 1)
    );

    // Tags are ANDed.
    let (ids, _) = list_ids(&c, json!({"tags": ["finance"]})).await;
    assert_eq!(
        ids,
        [
            "metrics/churn",
            "metrics/gross-margin",
            "metrics/revenue",
            "policies/revenue-recognition"
        ]
    );
    let (ids, _) = list_ids(&c, json!({"tags": ["revenue"]})).await;
    assert_eq!(
        ids,
        [
            "computations/revenue-equality",
            "metrics/revenue",
            "policies/revenue-recognition",
            "tables/revenue-daily"
        ]
    );
    let (ids, total) = list_ids(&c, json!({"tags": ["finance", "revenue"]})).await;
    assert_eq!(total, 2);
    assert_eq!(ids, ["metrics/revenue", "policies/revenue-recognition"]);
    let (ids, _) = list_ids(
        &c,
        json!({"tags": ["finance", "revenue", "headline-metric"]}),
    )
    .await;
    assert_eq!(ids, ["metrics/revenue"]);
    let (ids, total) = list_ids(&c, json!({"tags": ["cogs", "skill"]})).await;
    assert_eq!((ids.len(), total), (0, 0));
    let (_, total) = list_ids(&c, json!({"tags": []})).await;
    assert_eq!(total, 10, "no tags is no tag filter");

    // Status.
    let (ids, _) = list_ids(&c, json!({"status": "draft"})).await;
    assert_eq!(ids, ["metrics/churn"]);
    let (ids, _) = list_ids(&c, json!({"status": "deprecated"})).await;
    assert_eq!(ids, ["policies/data-retention"]);
    let (_, total) = list_ids(&c, json!({"status": "stable"})).await;
    assert_eq!(total, 8, "absent status counts as stable");

    // Combined.
    let (ids, _) = list_ids(
        &c,
        json!({"type": "Metric", "tags": ["finance"], "status": "stable"}),
    )
    .await;
    assert_eq!(ids, ["metrics/gross-margin", "metrics/revenue"]);
    let (ids, _) = list_ids(
        &c,
        json!({"type": "Policy", "tags": ["policy"], "status": "deprecated"}),
    )
    .await;
    assert_eq!(ids, ["policies/data-retention"]);
    let (ids, total) = list_ids(&c, json!({"type": "Skill", "status": "draft"})).await;
    assert_eq!((ids.len(), total), (0, 0));
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_concepts_pages_disjointly_with_a_constant_total() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let mut seen: Vec<String> = vec![];
    for offset in [0, 3, 6, 9] {
        let (ids, total) = list_ids(&c, json!({"limit": 3, "offset": offset})).await;
        assert_eq!(total, 10, "total is the match count before paging");
        assert_eq!(ids.len(), if offset == 9 { 1 } else { 3 });
        for id in &ids {
            assert!(!seen.contains(id), "{id} appears on two pages");
        }
        seen.extend(ids);
    }
    assert_eq!(seen, IDS);
    let (ids, total) = list_ids(&c, json!({"offset": 10})).await;
    assert_eq!((ids.len(), total), (0, 10));
    let (ids, total) = list_ids(&c, json!({"offset": 500, "limit": 1000})).await;
    assert_eq!((ids.len(), total), (0, 10));
    let (ids, total) = list_ids(&c, json!({"tags": ["finance"], "limit": 2, "offset": 2})).await;
    assert_eq!(total, 4);
    assert_eq!(ids, ["metrics/revenue", "policies/revenue-recognition"]);
    // The default limit is 200: the same as saying so.
    let default = ok(&c, "list_concepts", json!({})).await;
    let explicit = ok(&c, "list_concepts", json!({"limit": 200, "offset": 0})).await;
    assert_eq!(default, explicit);
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_concepts_default_limit_is_200() {
    let sb = Sandbox::new("project");
    // 205 more concepts, so that the default page is full.
    std::fs::create_dir_all(sb.bundle().join("bulk")).unwrap();
    let mut index = String::from("# Skill\n\n");
    for i in 0..205 {
        sb.write(
            &format!("bulk/n{i:03}.md"),
            &format!("---\ntype: Skill\ntitle: Bulk {i}\n---\n\n# Bulk {i}\n"),
        );
        index.push_str(&format!("* [Bulk {i}](n{i:03}.md)\n"));
    }
    sb.write("bulk/index.md", &index);
    let c = connect(&sb).await;
    let v = ok(&c, "list_concepts", json!({})).await;
    assert_eq!(v["total"], 215);
    assert_eq!(v["items"].as_array().unwrap().len(), 200);
    let explicit = ok(&c, "list_concepts", json!({"limit": 200})).await;
    assert_eq!(v, explicit);
    let all = ok(&c, "list_concepts", json!({"limit": 1000})).await;
    assert_eq!(all["items"].as_array().unwrap().len(), 215);
    let rest = ok(&c, "list_concepts", json!({"offset": 200})).await;
    assert_eq!(rest["items"].as_array().unwrap().len(), 15);
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_concepts_unknown_type_lists_every_declared_type() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let text = refused(&c, "list_concepts", json!({"type": "Nope"})).await;
    assert!(text.contains("\"Nope\""), "{text}");
    for t in TYPES {
        assert!(text.contains(t), "{text} does not name {t}");
    }
    assert!(text.ends_with("Try describe_vocabulary."), "{text}");
    // Exact names: a near miss in case is still unknown.
    let text = refused(&c, "list_concepts", json!({"type": "metric"})).await;
    assert!(text.contains("\"metric\""), "{text}");
    // Types are checked before tags.
    let text = refused(
        &c,
        "list_concepts",
        json!({"type": "Nope", "tags": ["alsonope"]}),
    )
    .await;
    assert!(
        text.contains("\"Nope\"") && !text.contains("alsonope"),
        "{text}"
    );
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_concepts_reports_only_the_first_unknown_tag() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let text = refused(
        &c,
        "list_concepts",
        json!({"tags": ["finance", "nope", "alsonope"]}),
    )
    .await;
    assert!(text.contains("\"nope\""), "{text}");
    assert!(!text.contains("alsonope"), "{text}");
    for t in TAGS {
        assert!(text.contains(t), "{text} does not name {t}");
    }
    assert!(text.ends_with("Try describe_vocabulary."), "{text}");
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_concepts_declared_but_unused_type_is_empty() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(&c, "list_concepts", json!({"type": "Dashboard"})).await;
    assert_eq!(v, json!({"items": [], "total": 0}));
    close(c).await;
}

// ------------------------------------------------------------------------
// Broken and missing projects
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_bundle_is_refused_naming_the_directory() {
    let sb = Sandbox::new("missing-bundle");
    let c = connect(&sb).await;
    for (tool, a) in [
        ("list_concepts", json!({})),
        ("get_concept", json!({"id": "metrics/revenue"})),
        ("concept_neighbors", json!({"id": "metrics/revenue"})),
        ("stale_report", json!({})),
        ("validate_bundle", json!({"now": NOW})),
    ] {
        let text = refused(&c, tool, a).await;
        assert!(text.contains("no-such-bundle"), "{tool}: {text}");
    }
    // describe_vocabulary does not load the bundle.
    let v = ok(&c, "describe_vocabulary", json!({})).await;
    assert_eq!(
        v["bundle_root"],
        sb.project().join("no-such-bundle").display().to_string()
    );
    assert_eq!(
        v["config_path"],
        sb.project().join("okfit.toml").display().to_string()
    );
    // Resources: the index alone is listed, and reading it fails cleanly.
    let rs = resources(&c).await;
    assert_eq!(uris(&rs), ["okf://index", "okf://manifest"]);
    assert!(read_resource(&c, "okf://index").await.is_err());
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn broken_config_is_a_refusal_from_every_tool() {
    let sb = Sandbox::new("broken-config");
    let c = connect(&sb).await;
    for (tool, a) in [
        ("describe_vocabulary", json!({})),
        ("list_concepts", json!({})),
        ("get_concept", json!({"id": "hello"})),
        ("concept_neighbors", json!({"id": "hello"})),
        ("stale_report", json!({})),
        ("validate_bundle", json!({})),
    ] {
        let text = refused(&c, tool, a).await;
        assert!(text.contains("malformed config"), "{tool}: {text}");
        assert!(text.contains(".okfit.toml"), "{tool}: {text}");
        assert!(text.ends_with("Try describe_vocabulary."), "{tool}: {text}");
    }
    // The connection survives.
    let tools = bounded("tools/list", c.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), 6);
    close(c).await;
}

// ------------------------------------------------------------------------
// get_concept
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_concept_returns_summary_frontmatter_raw_and_links() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(&c, "get_concept", json!({"id": "metrics/revenue"})).await;
    assert_eq!(v["id"], "metrics/revenue");
    assert_eq!(v["type"], "Metric");
    assert_eq!(v["title"], "Revenue");
    assert_eq!(
        v["description"],
        "Recognised revenue from completed orders, in USD."
    );
    assert_eq!(v["status"], "stable");
    assert_eq!(
        v["tags"],
        json!(["finance", "headline-metric", "revenue", "sales"])
    );
    assert_eq!(v["path"], "metrics/revenue.md");
    let raw = v["raw"].as_str().unwrap();
    assert!(raw.starts_with("---\n"), "{raw}");
    assert!(raw.contains("type: Metric"), "{raw}");
    assert_eq!(raw, sb.read("metrics/revenue.md"), "raw is the whole file");
    // The whole decoded frontmatter, unknown keys included; timestamps stay strings.
    let fm = &v["frontmatter"];
    assert_eq!(fm["type"], "Metric");
    assert_eq!(fm["owner"], "finance-team");
    assert_eq!(fm["unit"], "usd");
    assert_eq!(fm["stale_after"], "2099-01-01T00:00:00Z");
    assert_eq!(
        fm["sources"],
        json!([{"resource": "../tables/orders.md", "title": "Orders table"}])
    );
    // Frontmatter edges first, then body links in document order; not deduplicated.
    assert_eq!(
        v["links"],
        json!([
            {"to": "tables/orders", "kind": "concept", "source": "frontmatter", "field": "sources.resource"},
            {"to": "tables/orders", "kind": "concept", "source": "body"},
            {"to": "policies/revenue-recognition", "kind": "concept", "source": "body"},
            {"to": "metrics/gross-margin", "kind": "concept", "source": "body"},
            {"to": "tables/revenue-daily", "kind": "concept", "source": "body"}
        ])
    );
    for l in v["links"].as_array().unwrap() {
        if l["source"] == "body" {
            assert!(l.get("field").is_none(), "a body link has no field: {l}");
        }
    }
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_concept_reports_missing_file_and_path_field_links() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let churn = ok(&c, "get_concept", json!({"id": "metrics/churn"})).await;
    assert_eq!(
        churn["links"],
        json!([{"to": "metrics/does-not-exist.md", "kind": "missing", "source": "body"}])
    );
    assert_eq!(churn["status"], "draft");
    assert_eq!(churn["frontmatter"]["stale_after"], "2020-01-01T00:00:00Z");

    let comp = ok(
        &c,
        "get_concept",
        json!({"id": "computations/revenue-equality"}),
    )
    .await;
    assert_eq!(comp["type"], "Attested Computation");
    assert_eq!(comp["frontmatter"]["runtime"], "bigquery");
    assert_eq!(
        comp["frontmatter"]["attester"],
        json!({"resource": "attesters/sql_equality.py"})
    );
    assert_eq!(
        comp["links"],
        json!([
            {"to": "skills/run-bigquery", "kind": "concept", "source": "frontmatter", "field": "executor.resource"},
            {"to": "attesters/sql_equality.py", "kind": "file", "source": "frontmatter", "field": "attester.resource"},
            {"to": "tables/revenue-daily", "kind": "concept", "source": "body"}
        ])
    );
    // A URL resource is not a link.
    let table = ok(&c, "get_concept", json!({"id": "tables/orders"})).await;
    assert_eq!(
        table["links"],
        json!([{"to": "metrics/orders", "kind": "concept", "source": "body"}])
    );
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_concept_accepts_tolerant_and_short_ids() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let canonical = ok(&c, "get_concept", json!({"id": "metrics/revenue"})).await;
    for id in [
        "/metrics/revenue",
        "metrics/revenue.md",
        "/metrics/revenue.md",
        "metrics//revenue",
        "metrics/revenue/",
        "revenue",
        "/revenue",
        "revenue.md",
        "/revenue.md",
    ] {
        let v = ok(&c, "get_concept", json!({"id": id})).await;
        assert_eq!(v, canonical, "id {id:?}");
        assert_eq!(
            v["id"], "metrics/revenue",
            "the id is normalised, not echoed: {id:?}"
        );
    }
    // Other unique short ids.
    for (short, full) in [
        ("churn", "metrics/churn"),
        ("run-bigquery", "skills/run-bigquery"),
        ("revenue-equality.md", "computations/revenue-equality"),
        ("metrics/orders", "metrics/orders"),
        ("tables/orders", "tables/orders"),
    ] {
        let v = ok(&c, "get_concept", json!({"id": short})).await;
        assert_eq!(v["id"], full, "{short}");
    }
    // concept_neighbors takes the same ids.
    let a = ok(&c, "concept_neighbors", json!({"id": "metrics/revenue"})).await;
    for id in ["revenue", "/metrics/revenue.md", "revenue.md"] {
        let b = ok(&c, "concept_neighbors", json!({"id": id})).await;
        assert_eq!(a, b, "{id}");
    }
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_short_id_is_refused_listing_the_candidates() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    for tool in ["get_concept", "concept_neighbors"] {
        for id in ["orders", "/orders.md"] {
            let text = refused(&c, tool, json!({"id": id})).await;
            assert!(text.contains("metrics/orders"), "{tool}: {text}");
            assert!(text.contains("tables/orders"), "{tool}: {text}");
            assert!(text.contains("ambiguous"), "{tool}: {text}");
        }
    }
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_and_empty_ids_are_refused() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    for tool in ["get_concept", "concept_neighbors"] {
        let text = refused(&c, tool, json!({"id": "metrics/nope"})).await;
        assert!(text.contains("\"metrics/nope\""), "{tool}: {text}");
        assert!(text.ends_with("Try list_concepts."), "{tool}: {text}");
        for empty in ["", "/", ".md", "/.md", "  "] {
            let text = refused(&c, tool, json!({"id": empty})).await;
            assert!(
                text.contains("id must not be empty"),
                "{tool} {empty:?}: {text}"
            );
            assert!(
                text.ends_with("Try list_concepts."),
                "{tool} {empty:?}: {text}"
            );
        }
        // Files that are not concepts are not concepts.
        for not_concept in ["index", "log", "metrics/index", "attesters/sql_equality.py"] {
            let text = refused(&c, tool, json!({"id": not_concept})).await;
            assert!(
                text.contains("Try list_concepts."),
                "{tool} {not_concept}: {text}"
            );
        }
    }
    // Echoed ids are truncated.
    let long = "x".repeat(500);
    let text = refused(&c, "get_concept", json!({"id": long})).await;
    assert!(
        text.len() < 500,
        "a 500-character id is echoed whole: {text}"
    );
    assert!(text.contains('…'), "{text}");
    close(c).await;
}

// ------------------------------------------------------------------------
// concept_neighbors
// ------------------------------------------------------------------------

fn neighbor_ids(v: &Value, dir: &str) -> Vec<String> {
    v[dir]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concept_neighbors_lists_unique_outgoing_and_incoming() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(&c, "concept_neighbors", json!({"id": "metrics/revenue"})).await;
    // Unique, in edge order (tables/orders is linked twice).
    assert_eq!(
        neighbor_ids(&v, "outgoing"),
        [
            "tables/orders",
            "policies/revenue-recognition",
            "metrics/gross-margin",
            "tables/revenue-daily"
        ]
    );
    let mut incoming = neighbor_ids(&v, "incoming");
    incoming.sort();
    assert_eq!(
        incoming,
        ["metrics/gross-margin", "policies/revenue-recognition"]
    );
    let orders = &v["outgoing"][0];
    assert_eq!(orders["kind"], "concept");
    assert_eq!(
        orders["summary"],
        json!({
            "id": "tables/orders",
            "type": "BigQuery Table",
            "title": "Orders table",
            "description": "One row per customer order.",
            "status": "stable",
            "tags": ["bigquery", "orders", "sales"],
            "path": "tables/orders.md"
        })
    );

    let churn = ok(&c, "concept_neighbors", json!({"id": "metrics/churn"})).await;
    assert_eq!(
        churn,
        json!({
            "outgoing": [{"id": "metrics/does-not-exist.md", "kind": "missing", "summary": null}],
            "incoming": []
        })
    );

    let comp = ok(
        &c,
        "concept_neighbors",
        json!({"id": "computations/revenue-equality"}),
    )
    .await;
    assert_eq!(
        neighbor_ids(&comp, "outgoing"),
        [
            "skills/run-bigquery",
            "attesters/sql_equality.py",
            "tables/revenue-daily"
        ]
    );
    let file = &comp["outgoing"][1];
    assert_eq!(file["kind"], "file");
    assert_eq!(file["summary"], Value::Null);
    assert_eq!(neighbor_ids(&comp, "incoming"), ["tables/revenue-daily"]);

    let skill = ok(
        &c,
        "concept_neighbors",
        json!({"id": "skills/run-bigquery"}),
    )
    .await;
    assert_eq!(neighbor_ids(&skill, "outgoing"), Vec::<String>::new());
    assert_eq!(
        neighbor_ids(&skill, "incoming"),
        ["computations/revenue-equality"]
    );
    // Incoming neighbours are concepts, with summaries.
    assert_eq!(skill["incoming"][0]["kind"], "concept");
    assert_eq!(
        skill["incoming"][0]["summary"]["type"],
        "Attested Computation"
    );
    close(c).await;
}

// ------------------------------------------------------------------------
// Resources
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_the_index_and_one_per_concept() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let rs = resources(&c).await;
    let mut expected = vec!["okf://index".to_string(), "okf://manifest".to_string()];
    expected.extend(IDS.iter().map(|id| format!("okf://concept/{id}")));
    let mut got = uris(&rs);
    got.sort();
    expected.sort();
    assert_eq!(got, expected);
    for r in rs.iter().filter(|r| r["uri"] != "okf://manifest") {
        assert_eq!(r["mimeType"], "text/markdown", "{r}");
    }
    let index = rs.iter().find(|r| r["uri"] == "okf://index").unwrap();
    assert_eq!(index["name"], "OKF bundle index");
    let revenue = rs
        .iter()
        .find(|r| r["uri"] == "okf://concept/metrics/revenue")
        .unwrap();
    assert_eq!(revenue["name"], "metrics/revenue");
    assert_eq!(revenue["description"], "Revenue");

    let read = read_resource(&c, "okf://index").await.unwrap();
    assert_eq!(
        read["contents"],
        json!([{"uri": "okf://index", "mimeType": "text/markdown", "text": sb.read("index.md")}])
    );
    for id in IDS {
        let uri = format!("okf://concept/{id}");
        let read = read_resource(&c, &uri).await.unwrap();
        let contents = read["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 1);
        assert_eq!(contents[0]["uri"], uri);
        assert_eq!(contents[0]["mimeType"], "text/markdown");
        assert_eq!(contents[0]["text"], sb.read(&format!("{id}.md")), "{uri}");
        let got = ok(&c, "get_concept", json!({"id": id})).await;
        assert_eq!(
            contents[0]["text"], got["raw"],
            "{uri} equals get_concept.raw"
        );
    }
    // Unknown resources are errors, and the session goes on.
    assert!(read_resource(&c, "okf://concept/metrics/nope")
        .await
        .is_err());
    assert!(read_resource(&c, "okf://nothing").await.is_err());
    let v = ok(&c, "list_concepts", json!({"limit": 1})).await;
    assert_eq!(v["total"], 10);
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_are_read_live() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let _ = read_resource(&c, "okf://index").await.unwrap();
    let edited = format!(
        "{}\n# Notes\n\n* [Churn](metrics/churn.md) - Edited.\n",
        sb.read("index.md")
    );
    sb.write("index.md", &edited);
    let read = read_resource(&c, "okf://index").await.unwrap();
    assert_eq!(read["contents"][0]["text"], edited);
    let churn = sb
        .read("metrics/churn.md")
        .replace("# Churn", "# Churn, edited");
    sb.write("metrics/churn.md", &churn);
    let read = read_resource(&c, "okf://concept/metrics/churn")
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], churn);
    close(c).await;
}

// ------------------------------------------------------------------------
// stale_report
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_report_at_the_current_time_includes_churn_only() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(&c, "stale_report", json!({})).await;
    let ids: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["summary"]["id"].as_str().unwrap())
        .collect();
    // churn passed in 2020; revenue's 2099 is in the future; the rest are undated.
    assert_eq!(ids, ["metrics/churn"]);
    let as_of = v["as_of"].as_str().unwrap();
    assert!(as_of.ends_with('Z') && as_of.contains('.'), "{as_of}");
    assert!(v["items"][0]["days_past"].as_u64().unwrap() > 2000);
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_report_explicit_now_counts_whole_days() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(&c, "stale_report", json!({"now": "2020-01-11T00:00:00Z"})).await;
    assert_eq!(
        v,
        json!({
            "as_of": "2020-01-11T00:00:00.000Z",
            "items": [{
                "summary": {
                    "id": "metrics/churn",
                    "type": "Metric",
                    "title": "Churn",
                    "description": "Share of customers lost per month.",
                    "status": "draft",
                    "tags": ["finance"],
                    "path": "metrics/churn.md"
                },
                "stale_after": "2020-01-01T00:00:00.000Z",
                "days_past": 10
            }],
            "total": 1
        })
    );
    // Exactly at stale_after: included, 0 days.
    let v = ok(&c, "stale_report", json!({"now": "2020-01-01T00:00:00Z"})).await;
    assert_eq!(v["items"][0]["days_past"], 0);
    // 10.5 days: whole days only.
    let v = ok(&c, "stale_report", json!({"now": "2020-01-11T12:00:00Z"})).await;
    assert_eq!(v["items"][0]["days_past"], 10);
    // An offset is honoured: 2020-01-11T02:00+02:00 is 2020-01-11T00:00Z.
    let v = ok(
        &c,
        "stale_report",
        json!({"now": "2020-01-11T02:00:00+02:00"}),
    )
    .await;
    assert_eq!(v["as_of"], "2020-01-11T00:00:00.000Z");
    assert_eq!(v["items"][0]["days_past"], 10);
    // Before: nothing.
    let v = ok(&c, "stale_report", json!({"now": "2019-12-31T23:59:59Z"})).await;
    assert_eq!(
        v,
        json!({"as_of": "2019-12-31T23:59:59.000Z", "items": [], "total": 0})
    );
    // After 2099 both dated concepts are stale, sorted by id.
    let v = ok(&c, "stale_report", json!({"now": "2100-01-01T00:00:00Z"})).await;
    let ids: Vec<&str> = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["summary"]["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["metrics/churn", "metrics/revenue"]);
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_report_and_validate_bundle_refuse_an_offsetless_now() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    for tool in ["stale_report", "validate_bundle"] {
        for bad in ["2020-01-11T00:00:00", "yesterday", ""] {
            let text = refused(&c, tool, json!({"now": bad})).await;
            assert!(text.contains("explicit offset"), "{tool} {bad:?}: {text}");
        }
    }
    close(c).await;
}

// ------------------------------------------------------------------------
// validate_bundle
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_bundle_on_the_clean_fixture() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(&c, "validate_bundle", json!({"now": NOW})).await;
    assert_eq!(v["schema"], 1);
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["profile"], Value::Null);
    assert_eq!(v["producer"], "@okfit/mcp");
    assert_eq!(v["okfit_version"], VERSION);
    assert_eq!(v["okf_version"], "0.2");
    assert_eq!(v["root"], sb.bundle().display().to_string());
    assert_eq!(
        v["summary"],
        json!({
            "conformance_errors": 0,
            "lint_errors": 0,
            "lint_warnings": 2,
            "lint_info": 1,
            "profile_errors": 0,
            "concepts": 10
        })
    );
    let warnings: Vec<(String, String)> = diags(&v)
        .iter()
        .filter(|d| d["severity"] == "warning")
        .map(|d| {
            (
                d["file"].as_str().unwrap().to_string(),
                d["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    assert_eq!(
        warnings,
        [
            ("log.md".to_string(), "log-frontmatter".to_string()),
            ("metrics/churn.md".to_string(), "broken-links".to_string())
        ]
    );
    assert!(!diags(&v).iter().any(|d| d["severity"] == "error"));
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_bundle_equals_the_cli_report() {
    let sb = Sandbox::new("project");
    // A lint error too, so that the comparison covers a non-zero exit.
    sb.write(
        "metrics/gross-margin.md",
        &sb.read("metrics/gross-margin.md")
            .replace("unit: percent", "unit: ratio"),
    );
    let c = connect(&sb).await;
    for now in [
        NOW,
        "2027-01-01T00:00:00Z",
        "2019-06-01T12:00:00+02:00",
        "2100-01-01T00:00:00Z",
    ] {
        let mcp = ok(&c, "validate_bundle", json!({"now": now})).await;
        let cli = sb.cli_validate(now);
        assert_eq!(cli["producer"], "okfit");
        assert_eq!(
            without(mcp.clone(), &["producer", "okfit_version"]),
            without(cli, &["producer", "okfit_version"]),
            "now = {now}"
        );
        assert_eq!(mcp["exit_code"], 1, "now = {now}");
    }
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_bundle_without_now_uses_the_wall_clock() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(&c, "validate_bundle", json!({})).await;
    assert!(
        codes(&v).contains(&("metrics/churn.md".to_string(), "stale".to_string())),
        "{v:#}"
    );
    assert_eq!(v["exit_code"], 0);
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_bundle_later_now_reports_stale() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let v = ok(
        &c,
        "validate_bundle",
        json!({"now": "2027-01-01T00:00:00Z"}),
    )
    .await;
    let stale: Vec<&Value> = diags(&v).iter().filter(|d| d["code"] == "stale").collect();
    assert_eq!(stale.len(), 1, "{v:#}");
    assert_eq!(stale[0]["file"], "metrics/churn.md");
    assert_eq!(stale[0]["severity"], "info");
    assert_eq!(
        stale[0]["message"],
        "Concept is stale since 2020-01-01T00:00:00.000Z"
    );
    // Before churn's date: no stale diagnostic.
    let v = ok(
        &c,
        "validate_bundle",
        json!({"now": "2019-01-01T00:00:00Z"}),
    )
    .await;
    assert!(!diags(&v).iter().any(|d| d["code"] == "stale"), "{v:#}");
    assert_eq!(v["summary"]["lint_info"], 0);
    close(c).await;
}

const NO_FRONTMATTER: &str = "# Revenue\n\nNo frontmatter any more.\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_bundle_overlays_unsaved_documents_without_writing_them() {
    let sb = Sandbox::new("project");
    let before = sb.read("metrics/revenue.md");
    let c = connect(&sb).await;
    let v = ok(
        &c,
        "validate_bundle",
        json!({"now": NOW, "documents": [{"path": "metrics/revenue.md", "text": NO_FRONTMATTER}]}),
    )
    .await;
    assert_eq!(v["exit_code"], 2, "{v:#}");
    assert_eq!(v["summary"]["conformance_errors"], 1);
    assert_eq!(v["summary"]["concepts"], 9);
    assert!(
        codes(&v).contains(&(
            "metrics/revenue.md".to_string(),
            "frontmatter-missing".to_string()
        )),
        "{v:#}"
    );
    assert_eq!(
        sb.read("metrics/revenue.md"),
        before,
        "the file on disk is unchanged"
    );
    // The overlay was for that call only.
    let v = ok(&c, "validate_bundle", json!({"now": NOW})).await;
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["summary"]["concepts"], 10);
    let got = ok(&c, "get_concept", json!({"id": "metrics/revenue"})).await;
    assert_eq!(got["raw"], before);

    // A new file under an existing directory joins the bundle for the call.
    let fresh = "---\ntype: Metric\ntitle: ARPU\ntags: [finance]\n---\n\n# ARPU\n\nFrom [revenue](revenue.md).\n";
    let v = ok(
        &c,
        "validate_bundle",
        json!({"now": NOW, "documents": [{"path": "metrics/arpu.md", "text": fresh}]}),
    )
    .await;
    assert_eq!(v["summary"]["concepts"], 11);
    assert_eq!(v["exit_code"], 0);
    assert!(
        !sb.bundle().join("metrics/arpu.md").exists(),
        "never written"
    );
    // Dot segments are normalised; an unknown type in the overlay is a lint error.
    let v = ok(
        &c,
        "validate_bundle",
        json!({"now": NOW, "documents": [{"path": "metrics/./x/../churn.md", "text": "---\ntype: Nope\n---\n"}]}),
    )
    .await;
    assert!(
        codes(&v).contains(&("metrics/churn.md".to_string(), "unknown-type".to_string())),
        "{v:#}"
    );
    assert_eq!(v["exit_code"], 1);
    // An empty list is a no-op.
    let v = ok(&c, "validate_bundle", json!({"now": NOW, "documents": []})).await;
    assert_eq!(v["exit_code"], 0);
    assert_eq!(v["summary"]["concepts"], 10);
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_bundle_overlay_equals_validating_the_written_file() {
    let overlaid = Sandbox::new("project");
    let written = Sandbox::new("project");
    written.write("metrics/revenue.md", NO_FRONTMATTER);
    let c = connect(&overlaid).await;
    let mcp = ok(
        &c,
        "validate_bundle",
        json!({"now": NOW, "documents": [{"path": "metrics/revenue.md", "text": NO_FRONTMATTER}]}),
    )
    .await;
    let cli = written.cli_validate(NOW);
    assert_eq!(
        without(mcp, &["producer", "okfit_version", "root"]),
        without(cli, &["producer", "okfit_version", "root"])
    );
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_bundle_refuses_bad_document_paths() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let doc = |path: &str| json!({"now": NOW, "documents": [{"path": path, "text": "---\ntype: Metric\n---\n"}]});
    for (path, expected) in [
        ("../x.md", "document path \"../x.md\" resolves outside the bundle root"),
        ("newdir/x.md", "document path \"newdir/x.md\" names a directory that does not exist in the bundle"),
        ("bundle/metrics/x.md", "document path \"bundle/metrics/x.md\" names a directory that does not exist in the bundle"),
        ("notes.txt", "document path \"notes.txt\" must name a .md file"),
        ("", "document path \"\" must be a bundle-relative posix path"),
        ("/abs/x.md", "document path \"/abs/x.md\" must be a bundle-relative posix path"),
        ("metrics\\x.md", "document path \"metrics\\x.md\" must be a bundle-relative posix path"),
    ] {
        let text = refused(&c, "validate_bundle", doc(path)).await;
        assert!(text.starts_with(expected), "{path:?}: {text}");
    }
    let text = refused(
        &c,
        "validate_bundle",
        json!({"documents": [
            {"path": "metrics/churn.md", "text": "a"},
            {"path": "metrics/./churn.md", "text": "b"}
        ]}),
    )
    .await;
    assert!(
        text.starts_with("document path \"metrics/./churn.md\" was given more than once"),
        "{text}"
    );
    // Refused calls never write either.
    assert!(!sb.root.join("x.md").exists());
    assert!(!sb.bundle().join("newdir").exists());
    close(c).await;
}

// ------------------------------------------------------------------------
// Argument validation (-32602) and failure isolation
// ------------------------------------------------------------------------

const PREFIX: &str = "Input validation error: Invalid arguments for tool";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_argument_keys_are_invalid_params_naming_them() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    for (tool, mut a) in [
        ("describe_vocabulary", json!({})),
        ("list_concepts", json!({"limit": 1})),
        ("get_concept", json!({"id": "metrics/revenue"})),
        ("concept_neighbors", json!({"id": "metrics/revenue"})),
        ("stale_report", json!({})),
        ("validate_bundle", json!({})),
    ] {
        a["bogus"] = json!(1);
        let msg = invalid_params(&c, tool, a.clone()).await;
        assert!(msg.starts_with(&format!("{PREFIX} {tool}:")), "{msg}");
        assert!(
            msg.contains("Unrecognized parameter(s): bogus"),
            "{tool}: {msg}"
        );
        a["zzz"] = json!("x");
        let msg = invalid_params(&c, tool, a).await;
        assert!(msg.contains("Unrecognized parameter(s): "), "{tool}: {msg}");
        assert!(
            msg.contains("bogus") && msg.contains("zzz"),
            "{tool}: {msg}"
        );
    }
    // A plausible misspelling is not silently dropped.
    let msg = invalid_params(&c, "list_concepts", json!({"tag": ["finance"]})).await;
    assert!(msg.contains("Unrecognized parameter(s): tag"), "{msg}");
    // An unknown key inside a document is named too.
    let msg = invalid_params(
        &c,
        "validate_bundle",
        json!({"documents": [{"path": "metrics/churn.md", "text": "x", "extra": true}]}),
    )
    .await;
    assert!(
        msg.starts_with(&format!("{PREFIX} validate_bundle:")),
        "{msg}"
    );
    assert!(msg.contains("extra"), "{msg}");
    // The session goes on.
    let v = ok(&c, "list_concepts", json!({"limit": 1})).await;
    assert_eq!(v["total"], 10);
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn schema_violations_are_invalid_params() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    for (tool, a) in [
        ("list_concepts", json!({"limit": 0})),
        ("list_concepts", json!({"limit": 1001})),
        ("list_concepts", json!({"limit": "10"})),
        ("list_concepts", json!({"limit": 1.5})),
        ("list_concepts", json!({"offset": -1})),
        ("list_concepts", json!({"type": 3})),
        ("list_concepts", json!({"tags": "finance"})),
        ("list_concepts", json!({"tags": [1]})),
        ("list_concepts", json!({"status": "stale"})),
        ("get_concept", json!({})),
        ("get_concept", json!({"id": 5})),
        ("get_concept", json!({"id": null})),
        ("concept_neighbors", json!({"id": ["metrics/revenue"]})),
        ("stale_report", json!({"now": 5})),
        ("validate_bundle", json!({"now": false})),
        (
            "validate_bundle",
            json!({"documents": {"path": "a.md", "text": ""}}),
        ),
        (
            "validate_bundle",
            json!({"documents": [{"path": "metrics/churn.md"}]}),
        ),
        (
            "validate_bundle",
            json!({"documents": [{"path": 1, "text": ""}]}),
        ),
    ] {
        let msg = invalid_params(&c, tool, a.clone()).await;
        assert!(msg.starts_with(&format!("{PREFIX} {tool}:")), "{a}: {msg}");
    }
    let v = ok(&c, "describe_vocabulary", json!({})).await;
    assert_eq!(v["agent"], "okfit/claude-code");
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_never_end_the_session() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    for _ in 0..3 {
        refused(&c, "get_concept", json!({"id": "metrics/nope"})).await;
        refused(&c, "list_concepts", json!({"type": "Nope"})).await;
        refused(&c, "stale_report", json!({"now": "nope"})).await;
        invalid_params(&c, "list_concepts", json!({"limit": 0})).await;
        assert!(read_resource(&c, "okf://concept/nope").await.is_err());
        let r = call_raw(&c, "no_such_tool", json!({})).await;
        assert!(
            r.is_err() || wire(r.as_ref().unwrap())["isError"] == json!(true),
            "an unknown tool is an error"
        );
        let v = ok(&c, "get_concept", json!({"id": "metrics/revenue"})).await;
        assert_eq!(v["id"], "metrics/revenue");
    }
    close(c).await;
}

// ------------------------------------------------------------------------
// Live bundle: edits, additions and deletions during one session
// ------------------------------------------------------------------------

const ARPU: &str = "---\ntype: Metric\ntitle: ARPU\ndescription: Average revenue per user.\ntags: [finance]\nunit: usd\n---\n\n# ARPU\n\nFrom [revenue](revenue.md).\n";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn edits_additions_and_deletions_on_disk_are_seen_by_the_next_call() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let counter = c.service().list_changed.clone();
    // Warm everything up.
    let v = ok(&c, "get_concept", json!({"id": "metrics/revenue"})).await;
    assert_eq!(v["title"], "Revenue");
    assert_eq!(
        resources(&c).await.len(),
        12,
        "index, 10 concepts, manifest"
    );

    // Edit a title: the next call shows it, and it is not a list change.
    let edited = sb
        .read("metrics/revenue.md")
        .replace("title: Revenue\n", "title: Revenue (net of refunds)\n");
    sb.write("metrics/revenue.md", &edited);
    let v = ok(&c, "get_concept", json!({"id": "metrics/revenue"})).await;
    assert_eq!(v["title"], "Revenue (net of refunds)");
    assert_eq!(v["raw"], edited);
    let (_, total) = list_ids(&c, json!({})).await;
    assert_eq!(total, 10);
    let rs = resources(&c).await;
    let revenue = rs
        .iter()
        .find(|r| r["uri"] == "okf://concept/metrics/revenue")
        .unwrap();
    assert_eq!(revenue["description"], "Revenue (net of refunds)");

    // Add a concept: list_concepts and resources/list show it, and a
    // list_changed notification arrives by the time the next call answers.
    let before = counter.load(Ordering::SeqCst);
    sb.write("metrics/arpu.md", ARPU);
    let (ids, total) = list_ids(&c, json!({"type": "Metric"})).await;
    assert_eq!(total, 5);
    assert!(ids.contains(&"metrics/arpu".to_string()), "{ids:?}");
    let after_add = expect_list_changed(&c, before, "adding metrics/arpu.md").await;
    let rs = resources(&c).await;
    assert!(uris(&rs).contains(&"okf://concept/metrics/arpu".to_string()));
    let read = read_resource(&c, "okf://concept/metrics/arpu")
        .await
        .unwrap();
    assert_eq!(read["contents"][0]["text"], ARPU);
    let v = ok(&c, "get_concept", json!({"id": "arpu"})).await;
    assert_eq!(v["id"], "metrics/arpu");
    let n = ok(&c, "concept_neighbors", json!({"id": "metrics/revenue"})).await;
    assert!(
        neighbor_ids(&n, "incoming").contains(&"metrics/arpu".to_string()),
        "{n:#}"
    );

    // Delete it: gone everywhere, with another notification.
    std::fs::remove_file(sb.bundle().join("metrics/arpu.md")).unwrap();
    let text = refused(&c, "get_concept", json!({"id": "metrics/arpu"})).await;
    assert!(text.contains("\"metrics/arpu\""), "{text}");
    expect_list_changed(&c, after_add, "deleting metrics/arpu.md").await;
    let (ids, total) = list_ids(&c, json!({})).await;
    assert_eq!(
        (ids.clone(), total),
        (IDS.iter().map(|s| s.to_string()).collect::<Vec<_>>(), 10)
    );
    let rs = resources(&c).await;
    assert!(!uris(&rs).contains(&"okf://concept/metrics/arpu".to_string()));
    assert!(read_resource(&c, "okf://concept/metrics/arpu")
        .await
        .is_err());
    close(c).await;
}

/// The contract is "an edit on disk is visible to the next call", not "a
/// moment later": every round edits, adds or deletes and asks at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_change_on_disk_is_visible_to_the_very_next_call() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let original = sb.read("metrics/churn.md");
    for round in 0..25 {
        let title = format!("Churn, take {round}");
        sb.write(
            "metrics/churn.md",
            &original.replace("title: Churn\n", &format!("title: {title}\n")),
        );
        let v = ok(&c, "get_concept", json!({"id": "metrics/churn"})).await;
        assert_eq!(v["title"], title.as_str(), "round {round}: edit not seen");
        sb.write("metrics/arpu.md", ARPU);
        let (_, total) = list_ids(&c, json!({})).await;
        assert_eq!(total, 11, "round {round}: addition not seen");
        std::fs::remove_file(sb.bundle().join("metrics/arpu.md")).unwrap();
        let rs = resources(&c).await;
        assert_eq!(rs.len(), 12, "round {round}: deletion not seen");
    }
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_is_sent_when_the_next_request_is_resources_list() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let counter = c.service().list_changed.clone();
    assert_eq!(
        resources(&c).await.len(),
        12,
        "index, 10 concepts, manifest"
    );
    let before = counter.load(Ordering::SeqCst);
    sb.write("metrics/arpu.md", ARPU);
    let rs = resources(&c).await;
    assert!(uris(&rs).contains(&"okf://concept/metrics/arpu".to_string()));
    expect_list_changed(&c, before, "adding metrics/arpu.md, then resources/list").await;
    let before = counter.load(Ordering::SeqCst);
    std::fs::remove_file(sb.bundle().join("metrics/arpu.md")).unwrap();
    let rs = resources(&c).await;
    assert!(!uris(&rs).contains(&"okf://concept/metrics/arpu".to_string()));
    expect_list_changed(&c, before, "deleting metrics/arpu.md, then resources/list").await;
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_edit_is_seen_by_the_next_call() {
    let sb = Sandbox::new("project");
    let c = connect(&sb).await;
    let text = refused(&c, "list_concepts", json!({"type": "Runbook"})).await;
    assert!(text.contains("\"Runbook\""), "{text}");
    let cfg = sb.project().join(".config/okfit.toml");
    let mut toml = std::fs::read_to_string(&cfg).unwrap();
    toml.push_str("\n[types.Runbook]\ndescription = \"What to do when it breaks.\"\n");
    std::fs::write(&cfg, toml).unwrap();
    let v = ok(&c, "list_concepts", json!({"type": "Runbook"})).await;
    assert_eq!(v, json!({"items": [], "total": 0}));
    let v = ok(&c, "describe_vocabulary", json!({})).await;
    assert_eq!(v["types"].as_array().unwrap().len(), 7);
    close(c).await;
}

// ------------------------------------------------------------------------
// Project root resolution (reference §1.2)
// ------------------------------------------------------------------------

async fn bundle_root_with(sb: &Sandbox, env: &[(&str, &str)], cwd: Option<&Path>) -> Value {
    let c = connect_cmd(sb.command_with(env, cwd)).await;
    let v = ok(&c, "describe_vocabulary", json!({})).await;
    close(c).await;
    v
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_project_root_comes_from_the_environment_then_the_cwd() {
    let sb = Sandbox::new("project");
    let other = sb.root.join("other");
    copy_tree(&fixture("missing-bundle"), &other);
    let project = sb.project().display().to_string();
    let other_s = other.display().to_string();
    let bundle = sb.bundle().display().to_string();

    // OKFIT_PROJECT_DIR wins over CLAUDE_PROJECT_DIR.
    let v = bundle_root_with(
        &sb,
        &[
            ("OKFIT_PROJECT_DIR", &project),
            ("CLAUDE_PROJECT_DIR", &other_s),
        ],
        None,
    )
    .await;
    assert_eq!(v["bundle_root"], bundle);
    // CLAUDE_PROJECT_DIR when OKFIT_PROJECT_DIR is unset, empty, blank or the literal placeholder.
    for okfit in [None, Some(""), Some("   "), Some("${CLAUDE_PROJECT_DIR}")] {
        let mut env: Vec<(&str, &str)> = vec![("CLAUDE_PROJECT_DIR", &project)];
        if let Some(o) = okfit {
            env.push(("OKFIT_PROJECT_DIR", o));
        }
        let v = bundle_root_with(&sb, &env, None).await;
        assert_eq!(v["bundle_root"], bundle, "OKFIT_PROJECT_DIR = {okfit:?}");
    }
    // The cwd when neither is usable.
    for claude in [None, Some(""), Some("${CLAUDE_PROJECT_DIR}")] {
        let mut env: Vec<(&str, &str)> = vec![];
        if let Some(v) = claude {
            env.push(("CLAUDE_PROJECT_DIR", v));
        }
        let v = bundle_root_with(&sb, &env, Some(&sb.project())).await;
        assert_eq!(v["bundle_root"], bundle, "CLAUDE_PROJECT_DIR = {claude:?}");
        assert_eq!(v["project_root"], project);
    }
    // The start is only where config discovery begins: from inside the
    // bundle it walks up to the project's .config/okfit.toml.
    let deep = sb.bundle().join("metrics").display().to_string();
    let v = bundle_root_with(&sb, &[("OKFIT_PROJECT_DIR", &deep)], None).await;
    assert_eq!(v["project_root"], project);
    assert_eq!(v["bundle_root"], bundle);
    assert_eq!(
        v["config_path"],
        sb.project()
            .join(".config/okfit.toml")
            .display()
            .to_string()
    );
}

// ------------------------------------------------------------------------
// Raw protocol: framing, stdout/stderr hygiene, lifecycle, revisions
// ------------------------------------------------------------------------

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdout_is_only_jsonrpc_and_stderr_starts_with_the_banner() {
    let sb = Sandbox::new("project");
    let mut raw = Raw::spawn(sb.command());
    let init = handshake(&mut raw, "2025-11-25").await;
    assert_eq!(init["result"]["serverInfo"]["name"], "okfit");
    let r = raw.request(1, "tools/list", json!({})).await;
    assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 6);
    let r = raw
        .request(
            2,
            "tools/call",
            json!({"name": "get_concept", "arguments": {"id": "metrics/nope"}}),
        )
        .await;
    assert_eq!(r["result"]["isError"], true);
    let r = raw
        .request(
            3,
            "tools/call",
            json!({"name": "validate_bundle", "arguments": {"now": NOW}}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"]["exit_code"], 0);
    let r = raw
        .request(4, "resources/read", json!({"uri": "okf://index"}))
        .await;
    assert!(r["result"]["contents"][0]["text"]
        .as_str()
        .unwrap()
        .contains("# Metrics"));
    let (status, out, err) = raw.close().await;
    assert_eq!(status.code(), Some(0));
    assert_jsonrpc_only(&out);
    let first = err.lines().next().unwrap_or("");
    assert_eq!(
        first,
        format!("okfit-mcp serving {} over stdio", sb.bundle().display())
    );
    assert!(
        !err.contains("\"jsonrpc\""),
        "protocol bytes on stderr: {err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_line_that_is_not_json_gets_parse_error_and_serving_goes_on() {
    let sb = Sandbox::new("project");
    let mut raw = Raw::spawn(sb.command());
    handshake(&mut raw, "2025-11-25").await;
    for (i, junk) in ["this is not json", "{\"jsonrpc\": \"2.0\", ", "}"]
        .iter()
        .enumerate()
    {
        raw.line(junk).await;
        let e = raw
            .next_where("-32700", |m| m["error"]["code"] == json!(-32700))
            .await;
        assert_eq!(e["jsonrpc"], "2.0");
        assert_eq!(e["id"], Value::Null);
        let id = 10 + i as i64;
        let r = raw
            .request(
                id,
                "tools/call",
                json!({"name": "list_concepts", "arguments": {"limit": 1}}),
            )
            .await;
        assert_eq!(r["result"]["structuredContent"]["total"], 10, "{r}");
    }
    let (status, out, _) = raw.close().await;
    assert_eq!(status.code(), Some(0));
    assert_jsonrpc_only(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_that_is_not_an_object_gets_invalid_request_and_serving_goes_on() {
    let sb = Sandbox::new("project");
    let mut raw = Raw::spawn(sb.command());
    handshake(&mut raw, "2025-11-25").await;
    for (i, value) in ["null", "42", "\"tools/list\"", "true"].iter().enumerate() {
        raw.line(value).await;
        let e = raw
            .next_where("-32600", |m| m["error"]["code"] == json!(-32600))
            .await;
        assert_eq!(e["id"], Value::Null, "{e}");
        let id = 20 + i as i64;
        let r = raw.request(id, "tools/list", json!({})).await;
        assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 6, "{r}");
    }
    let (status, out, _) = raw.close().await;
    assert_eq!(status.code(), Some(0));
    assert_jsonrpc_only(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_written_before_stdin_closes_are_all_answered() {
    // A client may write its requests and close its end at once (a shell
    // pipe, a batch job): the server answers every one before it exits.
    let sb = Sandbox::new("project");
    let mut raw = Raw::spawn(sb.command());
    handshake(&mut raw, "2025-11-25").await;
    let mut batch = String::new();
    let asked = 3000;
    for id in 1..=asked {
        let m = match id % 3 {
            0 => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
            1 => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "list_concepts", "arguments": {}}}),
            _ => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": {"name": "validate_bundle", "arguments": {"now": NOW}}}),
        };
        batch.push_str(&m.to_string());
        batch.push('\n');
    }
    raw.line(batch.trim_end()).await;
    let (status, out, err) = raw.close().await;
    assert_eq!(status.code(), Some(0), "{err}");
    assert_jsonrpc_only(&out);
    let mut answered: Vec<i64> = out
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("result").is_some() || v.get("error").is_some())
        .filter_map(|v| v["id"].as_i64())
        .filter(|&id| id > 0)
        .collect();
    answered.sort_unstable();
    answered.dedup();
    let missing: Vec<i64> = (1..=asked)
        .filter(|i| answered.binary_search(i).is_err())
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {asked} unanswered, first {:?}\n{err}",
        missing.len(),
        &missing[..missing.len().min(10)]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stdin_eof_ends_the_process_with_exit_0() {
    let sb = Sandbox::new("project");
    // Before any message.
    let raw = Raw::spawn(sb.command());
    let (status, out, _) = raw.close().await;
    assert_eq!(status.code(), Some(0));
    assert!(out.is_empty(), "{out:?}");
    // After a session, including one with a request still in flight.
    let mut raw = Raw::spawn(sb.command());
    handshake(&mut raw, "2025-11-25").await;
    raw.request(
        1,
        "tools/call",
        json!({"name": "list_concepts", "arguments": {}}),
    )
    .await;
    raw.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "validate_bundle", "arguments": {"now": NOW}}}))
        .await;
    let (status, out, _) = raw.close().await;
    assert_eq!(status.code(), Some(0));
    assert_jsonrpc_only(&out);
    // Also with a broken config.
    let sb = Sandbox::new("broken-config");
    let mut raw = Raw::spawn(sb.command());
    handshake(&mut raw, "2025-11-25").await;
    let (status, out, _) = raw.close().await;
    assert_eq!(status.code(), Some(0));
    assert_jsonrpc_only(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_2025_06_18_handshake_and_calls() {
    let sb = Sandbox::new("project");
    let mut raw = Raw::spawn(sb.command());
    let init = handshake(&mut raw, "2025-06-18").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-06-18", "{init}");
    assert_eq!(init["result"]["serverInfo"]["name"], "okfit");
    assert!(init["result"]["instructions"]
        .as_str()
        .is_some_and(|s| !s.is_empty()));
    let r = raw.request(1, "tools/list", json!({})).await;
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, TOOLS.map(|(n, _)| n));
    let r = raw
        .request(
            2,
            "tools/call",
            json!({"name": "list_concepts", "arguments": {"status": "draft"}}),
        )
        .await;
    assert_eq!(
        ids_of(&r["result"]["structuredContent"]["items"]),
        ["metrics/churn"]
    );
    // Unknown keys: -32602 on this revision.
    let r = raw
        .request(
            3,
            "tools/call",
            json!({"name": "list_concepts", "arguments": {"bogus": 1}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(r["error"]["message"]
        .as_str()
        .unwrap()
        .contains("Unrecognized parameter(s): bogus"));
    let r = raw.request(4, "resources/list", json!({})).await;
    assert_eq!(r["result"]["resources"].as_array().unwrap().len(), 12);
    let (status, out, _) = raw.close().await;
    assert_eq!(status.code(), Some(0));
    assert_jsonrpc_only(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_2025_11_25_handshake_and_unknown_keys() {
    let sb = Sandbox::new("project");
    let mut raw = Raw::spawn(sb.command());
    let init = handshake(&mut raw, "2025-11-25").await;
    assert_eq!(init["result"]["protocolVersion"], "2025-11-25", "{init}");
    assert_eq!(init["result"]["serverInfo"]["version"], VERSION);
    let r = raw
        .request(
            1,
            "tools/call",
            json!({"name": "get_concept", "arguments": {"id": "revenue", "extra": 1}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let msg = r["error"]["message"].as_str().unwrap();
    assert!(
        msg.starts_with("Input validation error: Invalid arguments for tool get_concept:"),
        "{msg}"
    );
    assert!(msg.contains("Unrecognized parameter(s): extra"), "{msg}");
    let (status, _, _) = raw.close().await;
    assert_eq!(status.code(), Some(0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protocol_2026_07_28_discover_and_stateless_requests() {
    let sb = Sandbox::new("project");
    let mut raw = Raw::spawn(sb.command());
    let d = raw
        .request(1, "server/discover", json!({"_meta": meta_2026()}))
        .await;
    let result = &d["result"];
    assert!(result.is_object(), "{d}");
    let versions: Vec<&str> = result["supportedVersions"]
        .as_array()
        .unwrap_or_else(|| panic!("no supportedVersions: {d}"))
        .iter()
        .map(|v| v.as_str().unwrap())
        .collect();
    let mut sorted = versions.clone();
    sorted.sort();
    assert_eq!(
        sorted,
        ["2025-06-18", "2025-11-25", "2026-07-28"],
        "exactly the three supported revisions"
    );
    assert!(
        result["instructions"]
            .as_str()
            .is_some_and(|s| !s.is_empty()),
        "{d}"
    );
    let r = raw
        .request(2, "tools/list", json!({"_meta": meta_2026()}))
        .await;
    let names: Vec<&str> = r["result"]["tools"]
        .as_array()
        .unwrap_or_else(|| panic!("tools/list did not answer: {r}"))
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, TOOLS.map(|(n, _)| n));
    let r = raw
        .request(
            3,
            "tools/call",
            json!({"_meta": meta_2026(), "name": "list_concepts", "arguments": {"type": "Policy"}}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"]["total"], 2, "{r}");
    let r = raw
        .request(
            4,
            "tools/call",
            json!({"_meta": meta_2026(), "name": "list_concepts", "arguments": {"bogus": true}}),
        )
        .await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    let r = raw
        .request(
            5,
            "resources/read",
            json!({"_meta": meta_2026(), "uri": "okf://concept/metrics/churn"}),
        )
        .await;
    assert_eq!(
        r["result"]["contents"][0]["mimeType"], "text/markdown",
        "{r}"
    );
    let (status, out, _) = raw.close().await;
    assert_eq!(status.code(), Some(0));
    assert_jsonrpc_only(&out);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_client_revision_is_answered_with_a_supported_one() {
    let sb = Sandbox::new("project");
    for asked in ["2024-11-05", "1999-01-01"] {
        let mut raw = Raw::spawn(sb.command());
        let init = handshake(&mut raw, asked).await;
        let got = init["result"]["protocolVersion"].as_str().unwrap_or("");
        assert!(
            ["2025-06-18", "2025-11-25"].contains(&got),
            "asked {asked}, answered {init}"
        );
        let r = raw.request(1, "tools/list", json!({})).await;
        assert_eq!(r["result"]["tools"].as_array().unwrap().len(), 6, "{r}");
        let (status, out, _) = raw.close().await;
        assert_eq!(status.code(), Some(0));
        assert_jsonrpc_only(&out);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rmcp_discover_lifecycle_client_works() {
    let sb = Sandbox::new("project");
    let (transport, _) = TokioChildProcess::builder(sb.command())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let c = bounded(
        "server/discover",
        Counting::default().serve_with_lifecycle(
            transport,
            ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
        ),
    )
    .await
    .expect("the 2026-07-28 handshake failed");
    let tools = bounded("tools/list", c.list_all_tools()).await.unwrap();
    assert_eq!(tools.len(), 6);
    let v = ok(&c, "get_concept", json!({"id": "revenue"})).await;
    assert_eq!(v["id"], "metrics/revenue");
    let text = refused(&c, "get_concept", json!({"id": "metrics/nope"})).await;
    assert!(text.contains("Try list_concepts."), "{text}");
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_changed_notification_reaches_a_raw_client() {
    let sb = Sandbox::new("project");
    let mut raw = Raw::spawn(sb.command());
    handshake(&mut raw, "2025-11-25").await;
    let r = raw
        .request(
            1,
            "tools/call",
            json!({"name": "list_concepts", "arguments": {}}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"]["total"], 10);
    sb.write("metrics/arpu.md", ARPU);
    let r = raw
        .request(
            2,
            "tools/call",
            json!({"name": "list_concepts", "arguments": {}}),
        )
        .await;
    assert_eq!(r["result"]["structuredContent"]["total"], 11);
    let n = raw
        .next_where("notifications/resources/list_changed", |m| {
            m["method"] == "notifications/resources/list_changed"
        })
        .await;
    assert!(n.get("id").is_none(), "a notification has no id: {n}");
    let (status, out, _) = raw.close().await;
    assert_eq!(status.code(), Some(0));
    assert_jsonrpc_only(&out);
}

// ------------------------------------------------------------------------
// Answers sized for agents: paging validate_bundle, stale_report and
// resources/list
// ------------------------------------------------------------------------

/// Adds `n` stale concepts, each with a broken link (a warning), to the
/// fixture copy, under `bulk/`.
fn add_bulk(sb: &Sandbox, n: usize) {
    std::fs::create_dir_all(sb.bundle().join("bulk")).unwrap();
    let mut index = String::from("# Skill\n\n");
    for i in 0..n {
        sb.write(
            &format!("bulk/n{i:03}.md"),
            &format!("---\ntype: Skill\ntitle: Bulk {i}\nstale_after: 2020-01-01T00:00:00Z\n---\n\n# Bulk {i}\n\nSee [gone](gone-{i}.md).\n"),
        );
        index.push_str(&format!("* [Bulk {i}](n{i:03}.md)\n"));
    }
    sb.write("bulk/index.md", &index);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn validate_bundle_pages_and_narrows_in_the_clis_order() {
    let sb = Sandbox::new("project");
    add_bulk(&sb, 450);
    let cli = sb.cli_validate(NOW);
    let all = diags(&cli).clone();
    assert!(all.len() > 450, "{}", all.len());
    let c = connect(&sb).await;
    let first = ok(&c, "validate_bundle", json!({"now": NOW})).await;
    // The summary and exit code count the whole run; 200 diagnostics come back.
    assert_eq!(first["summary"], cli["summary"]);
    assert_eq!(first["exit_code"], cli["exit_code"]);
    assert_eq!(diags(&first)[..], all[..200]);
    assert_eq!(first["page"]["returned"], 200);
    assert_eq!(first["page"]["matching"], all.len());
    assert_eq!(first["page"]["next_offset"], 200);
    assert!(first["page"]["note"]
        .as_str()
        .unwrap()
        .contains("offset: 200"));
    // Paging through gives the CLI's list, in its order.
    let mut paged = vec![];
    let mut offset = 0;
    loop {
        let v = ok(
            &c,
            "validate_bundle",
            json!({"now": NOW, "offset": offset, "limit": 150}),
        )
        .await;
        let d = diags(&v).clone();
        paged.extend(d);
        match v["page"]["next_offset"].as_u64() {
            Some(n) => offset = n,
            None => break,
        }
    }
    assert_eq!(paged, all);
    // One file, and a minimum severity.
    let one = ok(
        &c,
        "validate_bundle",
        json!({"now": NOW, "file": "bulk/n007.md"}),
    )
    .await;
    let expected: Vec<Value> = all
        .iter()
        .filter(|d| d["file"] == "bulk/n007.md")
        .cloned()
        .collect();
    assert!(!expected.is_empty());
    assert_eq!(diags(&one), &expected);
    assert_eq!(one["page"]["next_offset"], Value::Null);
    let errors = ok(
        &c,
        "validate_bundle",
        json!({"now": NOW, "severity": "error"}),
    )
    .await;
    assert!(diags(&errors).iter().all(|d| d["severity"] == "error"));
    let warn = ok(
        &c,
        "validate_bundle",
        json!({"now": NOW, "severity": "warning", "limit": 5000}),
    )
    .await;
    let expected: Vec<Value> = all
        .iter()
        .filter(|d| d["severity"] != "info")
        .cloned()
        .collect();
    assert_eq!(diags(&warn), &expected);
    // Everything asked for and returned: the CLI's envelope exactly.
    let whole = ok(&c, "validate_bundle", json!({"now": NOW, "limit": 5000})).await;
    assert_eq!(without(whole, &["producer"]), without(cli, &["producer"]));
    let bad = invalid_params(&c, "validate_bundle", json!({"severity": "loud"})).await;
    assert!(bad.contains("severity"), "{bad}");
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stale_report_pages_with_a_total() {
    let sb = Sandbox::new("project");
    add_bulk(&sb, 450);
    let c = connect(&sb).await;
    let v = ok(&c, "stale_report", json!({"now": NOW})).await;
    assert_eq!(v["total"], 451);
    assert_eq!(v["items"].as_array().unwrap().len(), 200);
    let rest = ok(&c, "stale_report", json!({"now": NOW, "offset": 400})).await;
    assert_eq!(rest["items"].as_array().unwrap().len(), 51);
    let all = ok(&c, "stale_report", json!({"now": NOW, "limit": 1000})).await;
    assert_eq!(
        all["items"].as_array().unwrap()[..200],
        v["items"].as_array().unwrap()[..]
    );
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn resources_list_pages_with_cursors() {
    let sb = Sandbox::new("project");
    add_bulk(&sb, 600);
    let c = connect(&sb).await;
    let first = bounded(
        "resources/list",
        c.list_resources(Some(rmcp::model::PaginatedRequestParams::default())),
    )
    .await
    .unwrap();
    assert_eq!(first.resources.len(), 500);
    assert_eq!(first.next_cursor.as_deref(), Some("500"));
    // rmcp's client follows the cursors: every resource once, in order.
    let all = resources(&c).await;
    assert_eq!(all.len(), 1 + 610 + 1, "index, concepts, manifest");
    let mut seen = uris(&all);
    seen.dedup();
    assert_eq!(seen.len(), all.len());
    let bad = bounded(
        "resources/list",
        c.list_resources(Some(
            rmcp::model::PaginatedRequestParams::default().with_cursor(Some("nope".into())),
        )),
    )
    .await;
    let e = format!("{:?}", bad.unwrap_err());
    assert!(e.contains("unknown cursor"), "{e}");
    close(c).await;
}
