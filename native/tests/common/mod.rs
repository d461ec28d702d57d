//! Process harness shared by the knowledge, store and daemon tests: run a
//! binary to completion (failing on a hang) and look at what it printed.

#![allow(dead_code)]

use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::{Read, Write};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// What one run of a binary produced.
#[derive(Debug)]
pub struct Out {
    /// Exit code (-1 when killed by a signal).
    pub code: i32,
    /// stdout, raw.
    pub stdout: Vec<u8>,
    /// stderr as text.
    pub stderr: String,
}

impl Out {
    /// stdout as text (it must be UTF-8).
    pub fn text(&self) -> String {
        String::from_utf8(self.stdout.clone()).expect("stdout is UTF-8")
    }

    /// Asserts the exit code, showing both streams when it differs.
    #[track_caller]
    pub fn expect_code(&self, code: i32) -> &Self {
        assert_eq!(
            self.code,
            code,
            "unexpected exit code\nstdout:\n{}\nstderr:\n{}",
            String::from_utf8_lossy(&self.stdout),
            self.stderr
        );
        self
    }

    /// stdout of a successful run.
    #[track_caller]
    pub fn ok(&self) -> String {
        self.expect_code(0);
        self.text()
    }

    /// stdout of a successful run, parsed as one JSON value.
    #[track_caller]
    pub fn json(&self) -> Value {
        let t = self.ok();
        serde_json::from_str(t.trim_end()).unwrap_or_else(|e| panic!("not JSON ({e}): {t}"))
    }
}

/// A spawned binary's stdin feeder (none when stdin is closed).
pub type Feeder = Option<std::thread::JoinHandle<()>>;

/// Starts `cmd` with piped output and, when given, `input` fed on stdin
/// (none: stdin closed). Finish it with [`collect`].
pub fn spawn(mut cmd: Command, input: Option<Vec<u8>>) -> (Child, Feeder) {
    cmd.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("spawn the binary");
    let feeder = input.map(|input| {
        let mut si = child.stdin.take().expect("piped stdin");
        std::thread::spawn(move || {
            let _ = si.write_all(&input);
        })
    });
    (child, feeder)
}

/// Waits for a [`spawn`]ed binary, reading both streams concurrently;
/// panics when it outlives `hang`.
pub fn collect(mut child: Child, feeder: Feeder, hang: Duration) -> Out {
    let mut so = child.stdout.take().expect("piped stdout");
    let mut se = child.stderr.take().expect("piped stderr");
    let t_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        so.read_to_end(&mut b).expect("read stdout");
        b
    });
    let t_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        se.read_to_end(&mut b).expect("read stderr");
        b
    });
    let deadline = Instant::now() + hang;
    let status = loop {
        if let Some(s) = child.try_wait().expect("wait for the binary") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("the binary did not finish within {hang:?}: it hangs");
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    if let Some(t) = feeder {
        let _ = t.join();
    }
    let stdout = t_out.join().expect("stdout reader");
    let stderr = String::from_utf8(t_err.join().expect("stderr reader")).expect("stderr is UTF-8");
    Out {
        code: status.code().unwrap_or(-1),
        stdout,
        stderr,
    }
}

/// Runs `cmd` to completion with `input` on stdin (none: stdin closed),
/// reading both streams concurrently; panics when it outlives `hang`.
pub fn run(cmd: Command, input: Option<&[u8]>, hang: Duration) -> Out {
    let (child, feeder) = spawn(cmd, input.map(<[u8]>::to_vec));
    collect(child, feeder, hang)
}

// ------------------------------------------------------------------------
// Files, digests and manifests
// ------------------------------------------------------------------------

/// A new temporary sandbox folder named `prefix…` with `home/` and `xdg/`
/// for the environment, and its canonical path (so expected paths compare
/// with what the binaries print).
pub fn sandbox_dir(prefix: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir()
        .expect("temporary directory");
    let root = std::fs::canonicalize(dir.path()).expect("canonical sandbox path");
    for d in ["home", "xdg"] {
        std::fs::create_dir_all(root.join(d)).expect("sandbox folder");
    }
    (dir, root)
}

/// A sandbox folder (see [`sandbox_dir`]) with the paths, files and
/// clean commands every harness takes from it.
pub struct Dir {
    _dir: tempfile::TempDir,
    /// The folder's canonical path.
    pub root: std::path::PathBuf,
}

impl Dir {
    /// A new sandbox folder named `prefix…`.
    pub fn with_prefix(prefix: &str) -> Dir {
        let (dir, root) = sandbox_dir(prefix);
        Dir { _dir: dir, root }
    }

    /// `<sandbox>/<rel>`.
    pub fn path(&self, rel: &str) -> std::path::PathBuf {
        self.root.join(rel)
    }

    /// Writes `bytes` to `<sandbox>/<rel>`, creating its folders.
    pub fn write(&self, rel: &str, bytes: impl AsRef<[u8]>) -> std::path::PathBuf {
        let p = self.path(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// `program ARGS…` in the sandbox's clean environment ([`sandboxed`]).
    pub fn sandboxed(&self, program: &str, args: &[&str]) -> Command {
        sandboxed(program, &self.root, args)
    }
}

/// The fixture folder `tests/fixtures/<group>/<name>`.
pub fn fixture(group: &str, name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/fixtures")
        .join(group)
        .join(name)
}

/// `program ARGS…` in a clean environment rooted at `root` (a sandbox
/// folder): only `PATH`, `HOME` (`root/home`), `XDG_CONFIG_HOME`
/// (`root/xdg`), `OKFIT_DATA` (an unused default data root,
/// `root/default-data`) and `LC_ALL`; the working directory is `root`.
pub fn sandboxed(program: &str, root: &Path, args: &[&str]) -> Command {
    let mut c = Command::new(program);
    c.current_dir(root)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", root.join("home"))
        .env("XDG_CONFIG_HOME", root.join("xdg"))
        .env("OKFIT_DATA", root.join("default-data"))
        .env("LC_ALL", "C")
        .args(args);
    c
}

/// Copies the directory `from` to `to`, recursively.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// Every file under `root` (which must exist) as `(relative path, bytes)`,
/// sorted.
pub fn tree_bytes(root: &Path) -> Vec<(String, Vec<u8>)> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            let p = entry.path();
            if entry.file_type().unwrap().is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p
                    .strip_prefix(root)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = vec![];
    walk(root, root, &mut out);
    out.sort();
    out
}

/// sha256 of bytes, lowercase hex.
pub fn sha256_hex(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|x| format!("{x:02x}"))
        .collect()
}

/// Asserts that `s` is 64 lowercase hex characters (a sha256 digest).
#[track_caller]
pub fn assert_hex64(s: &str) {
    assert!(
        s.len() == 64
            && s.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
        "not a 64-hex digest (64 lowercase hex characters): {s:?}"
    );
}

/// The data rows of a manifest (neither `# ` comments nor the header).
pub fn rows(manifest: &str) -> Vec<&str> {
    manifest
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("id\t"))
        .collect()
}

/// The id column of a manifest's rows.
pub fn row_ids(manifest: &str) -> Vec<&str> {
    rows(manifest)
        .iter()
        .map(|r| r.split('\t').next().unwrap())
        .collect()
}

/// The row of `id`, if any.
pub fn row_of<'a>(manifest: &'a str, id: &str) -> Option<&'a str> {
    rows(manifest)
        .into_iter()
        .find(|r| r.split('\t').next() == Some(id))
}

// ------------------------------------------------------------------------
// rmcp client harness
// ------------------------------------------------------------------------

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceError, ServiceExt};
use serde_json::Map;

/// How long an MCP request may take before the test calls it a hang.
pub const MCP_HANG: Duration = Duration::from_secs(120);

/// rmcp's client, connected to a child `okfit-mcp`.
pub type Client = RunningService<RoleClient, ()>;

/// Awaits `f`, panicking with `what` when it outlives [`MCP_HANG`].
pub async fn bounded<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(MCP_HANG, f)
        .await
        .unwrap_or_else(|_| panic!("{what}: no answer within {MCP_HANG:?}"))
}

/// Connects rmcp's client to a server command (killed when the client goes).
pub async fn connect_command(cmd: tokio::process::Command) -> Client {
    let (transport, _) = TokioChildProcess::builder(cmd)
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn okfit-mcp");
    bounded("initialize", ().serve(transport))
        .await
        .expect("the MCP handshake failed")
}

/// Ends a session.
pub async fn close(c: Client) {
    let _ = tokio::time::timeout(MCP_HANG, c.cancel()).await;
}

/// Tool arguments from a JSON object.
pub fn args(v: Value) -> Map<String, Value> {
    match v {
        Value::Object(m) => m,
        other => panic!("arguments must be an object, got {other}"),
    }
}

/// One `tools/call`.
pub async fn call_tool(c: &Client, name: &str, a: Value) -> Result<CallToolResult, ServiceError> {
    let params = CallToolRequestParams::new(name.to_string()).with_arguments(args(a));
    bounded(name, c.call_tool(params)).await
}

/// A successful call's text.
pub async fn text(c: &Client, name: &str, a: Value) -> String {
    let r = call_tool(c, name, a.clone())
        .await
        .unwrap_or_else(|e| panic!("{name} {a}: {e}"));
    let (is_error, t) = result_text(&r);
    assert!(!is_error, "{name} {a}: expected success, got an error: {t}");
    t
}

/// An `isError` result's text.
pub async fn error_text(c: &Client, name: &str, a: Value) -> String {
    let r = call_tool(c, name, a.clone())
        .await
        .unwrap_or_else(|e| panic!("{name} {a}: expected an isError result, got {e}"));
    let (is_error, t) = result_text(&r);
    assert!(is_error, "{name} {a}: expected isError, got: {t}");
    assert!(!t.trim().is_empty(), "{name} {a}: empty error text");
    t
}

/// A call that must fail as JSON-RPC -32602; returns the message.
pub async fn invalid_params(c: &Client, name: &str, a: Value) -> String {
    match call_tool(c, name, a.clone()).await {
        Err(ServiceError::McpError(e)) => {
            assert_eq!(e.code.0, -32602, "{name} {a}: {e:?}");
            e.message.to_string()
        }
        Err(other) => panic!("{name} {a}: expected -32602, got {other}"),
        Ok(r) => panic!(
            "{name} {a}: expected -32602, got a result {:#}",
            serde_json::to_value(&r).unwrap()
        ),
    }
}

/// `(isError, content[0].text)` of a tool result with one text content.
#[track_caller]
pub fn result_text(r: &CallToolResult) -> (bool, String) {
    let w = serde_json::to_value(r).unwrap();
    let content = w["content"].as_array().expect("content is an array");
    assert_eq!(content.len(), 1, "one text content: {w:#}");
    assert_eq!(content[0]["type"], "text", "{w:#}");
    (
        w["isError"] == serde_json::json!(true),
        content[0]["text"].as_str().unwrap().to_string(),
    )
}

/// Runs blocking work (a CLI process, a daemon start) from inside a
/// multi-thread runtime.
pub fn blocking<T>(f: impl FnOnce() -> T) -> T {
    tokio::task::block_in_place(f)
}
