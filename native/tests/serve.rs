//! End-to-end tests of `okfit serve` (the daemon) and of the client
//! connections `okf+unix://` and `okf+http(s)://` behind the same
//! Knowledge: read parity with the embedded store, the manifest ETag, the
//! HTTP surface's auth and error answers, writes and the database verbs
//! through the CLI and `okfit-mcp`, TLS, a bounded concurrent load, the
//! `sources.json` folder watcher and graceful shutdown.
//!
//! Every test starts real `okfit serve` children on a temporary data root
//! (sockets in the temporary directory, TCP ports picked by binding
//! 127.0.0.1:0 and retried on a clash); a guard kills every child at the
//! end. Status codes and headers are checked with a tiny raw HTTP/1.1
//! client over std `UnixStream`/`TcpStream` (`Connection: close`); parity
//! goes through the real `okfit` CLI and `okfit-mcp` (rmcp's client).
//! Waits are bounded so that a hang fails a test; nothing asserts how fast
//! anything is. Contract: SPEC §3; reference `langonrock.md` §1.1–§1.4,
//! §2.8.
#![cfg(unix)]

mod common;
#[path = "serve_mcp/http.rs"]
mod mcp_http;

use common::{
    assert_hex64, blocking, close, copy_tree, result_text, row_of, rows, sha256_hex, Client, Out,
};
use rmcp::model::CallToolResult;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The CLI (and the daemon) under test.
const OKFIT: &str = env!("CARGO_BIN_EXE_okfit");
/// The MCP server under test.
const MCP: &str = env!("CARGO_BIN_EXE_okfit-mcp");
/// How long any run, answer or start may take before the test calls it a
/// hang (a bound, not a timing assertion).
const HANG: Duration = Duration::from_secs(60);
/// How long the folder watcher may take to import an edit.
const WATCH: Duration = Duration::from_secs(15);
/// The suffix of every precondition refusal.
const RETRY: &str = ": re-read the concept and retry with its new hash";
/// The conflict of a stale `expectedRevision`.
const DATABASE_CHANGED: &str = "database changed: re-read the revision and document hashes";
/// The shutdown line.
const SHUTTING_DOWN: &str = "okfit: shutting down; finishing requests in flight";

// ------------------------------------------------------------------------
// Processes
// ------------------------------------------------------------------------

/// Runs a command to completion with `input` on stdin, failing on a hang.
fn finish(cmd: Command, input: &[u8]) -> Out {
    common::run(cmd, Some(input), HANG)
}

fn fixture(name: &str) -> PathBuf {
    common::fixture("kb-native", name)
}

/// A temporary directory with `home/`, `xdg/` and the data root `data/`.
/// Its path is canonical, so it compares with what the binaries print.
type Sandbox = common::Dir;

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox::with_prefix("okfit-serve-")
    }

    fn data(&self) -> String {
        self.path("data").display().to_string()
    }

    /// `okf:///<sandbox>/data?tenant=<tenant>`.
    fn store_dsn(&self, tenant: &str) -> String {
        format!("okf://{}?tenant={tenant}", self.data())
    }

    fn okfit(&self, args: &[&str]) -> Out {
        finish(self.sandboxed(OKFIT, args), b"")
    }

    fn okfit_in(&self, args: &[&str], input: &[u8]) -> Out {
        finish(self.sandboxed(OKFIT, args), input)
    }

    /// `okfit ARGS… -c <dsn>` with `input` on stdin.
    fn conn(&self, dsn: &str, args: &[&str], input: &[u8]) -> Out {
        let mut all: Vec<&str> = args.to_vec();
        all.extend(["-c", dsn]);
        self.okfit_in(&all, input)
    }

    /// The tenant `acme`: the whole `kb-native` fixture imported.
    fn acme(&self) {
        copy_tree(&fixture(""), &self.path("kb"));
        let kb = self.path("kb").display().to_string();
        let data = self.data();
        let out = self.okfit(&["import", &kb, "--data", &data, "--tenant", "acme"]);
        out.expect_code(0);
        assert!(out.stderr.contains("import ops sales"), "{}", out.stderr);
    }

    /// Mints a token with `okfit token` and returns it.
    fn mint(&self, tenant: &str, write: bool) -> String {
        self.mint_with(tenant, if write { &["--write"] } else { &[] })
    }

    /// Mints a token with `okfit token … FLAGS` and returns it.
    fn mint_with(&self, tenant: &str, flags: &[&str]) -> String {
        let data = self.data();
        let mut args = vec!["token", "--data", &data, "--tenant", tenant];
        args.extend(flags);
        let out = self.okfit(&args);
        let stdout = out.ok();
        let token = stdout
            .strip_suffix('\n')
            .unwrap_or_else(|| panic!("the token ends with a newline: {stdout:?}"));
        assert_hex64(token);
        token.to_string()
    }

    /// The server command (tokio) with the same clean environment.
    fn mcp_command(&self, args: &[&str]) -> tokio::process::Command {
        let mut c = tokio::process::Command::from(self.sandboxed(MCP, args));
        c.kill_on_drop(true);
        c
    }

    /// `okfit serve --data <data> ARGS…`: the running daemon once its
    /// serving line is out, or what the run produced when it exited first.
    fn serve(&self, args: &[&str], addr: Addr) -> Result<Daemon, Out> {
        let data = self.data();
        let mut all = vec!["serve", "--data", &data];
        all.extend(args);
        let mut cmd = self.sandboxed(OKFIT, &all);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().expect("spawn okfit serve");
        let err = Arc::new(Mutex::new(String::new()));
        let out = Arc::new(Mutex::new(Vec::new()));
        let se = child.stderr.take().unwrap();
        let so = child.stdout.take().unwrap();
        let e2 = err.clone();
        let t_err = std::thread::spawn(move || {
            let mut r = BufReader::new(se);
            let mut line = String::new();
            while r.read_line(&mut line).unwrap_or(0) > 0 {
                e2.lock().unwrap().push_str(&line);
                line.clear();
            }
        });
        let o2 = out.clone();
        let t_out = std::thread::spawn(move || {
            let mut so = so;
            let mut b = [0u8; 4096];
            while let Ok(n) = so.read(&mut b) {
                if n == 0 {
                    break;
                }
                o2.lock().unwrap().extend_from_slice(&b[..n]);
            }
        });
        let mut d = Daemon {
            pid: child.id(),
            child,
            err,
            out,
            addr,
            readers: vec![t_err, t_out],
        };
        let deadline = Instant::now() + HANG;
        loop {
            if d.stderr().contains("okfit serving ") {
                return Ok(d);
            }
            if let Some(status) = d.child.try_wait().unwrap() {
                for t in d.readers.drain(..) {
                    let _ = t.join();
                }
                return Err(Out {
                    code: status.code().unwrap_or(-1),
                    stdout: d.out.lock().unwrap().clone(),
                    stderr: d.stderr(),
                });
            }
            if Instant::now() > deadline {
                panic!(
                    "okfit serve did not start within {HANG:?}; stderr:\n{}",
                    d.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// A daemon on `<sandbox>/<name>.sock`.
    fn serve_socket(&self, name: &str, extra: &[&str]) -> Daemon {
        let sock = self.path(&format!("{name}.sock"));
        let s = sock.display().to_string();
        let mut args = vec!["--socket", s.as_str()];
        args.extend(extra);
        self.serve(&args, Addr::Unix(sock.clone()))
            .unwrap_or_else(|o| panic!("okfit serve on {s} did not start: {o:?}"))
    }

    /// A daemon on `<host>:<free port>` (a port taken meanwhile is retried).
    fn serve_tcp(&self, host: &str, extra: &[&str]) -> Daemon {
        for _ in 0..10 {
            let port = free_port();
            let listen = format!("{host}:{port}");
            let mut args = vec!["--listen", listen.as_str()];
            args.extend(extra);
            match self.serve(&args, Addr::Tcp(port)) {
                Ok(d) => return d,
                Err(o) if o.stderr.contains("cannot listen") => continue,
                Err(o) => panic!("okfit serve on {listen} did not start: {o:?}"),
            }
        }
        panic!("no free TCP port after 10 tries");
    }

    /// A `serve` run that must be refused at start.
    fn serve_refused(&self, args: &[&str]) -> Out {
        match self.serve(args, Addr::Tcp(0)) {
            Ok(d) => panic!(
                "okfit serve {args:?} started instead of refusing: {}",
                d.stderr()
            ),
            Err(o) => o,
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// Where a daemon listens.
#[derive(Clone, Debug)]
enum Addr {
    Unix(PathBuf),
    Tcp(u16),
}

/// A running `okfit serve`, killed when dropped.
struct Daemon {
    child: Child,
    pid: u32,
    err: Arc<Mutex<String>>,
    out: Arc<Mutex<Vec<u8>>>,
    addr: Addr,
    readers: Vec<std::thread::JoinHandle<()>>,
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
        }
        let _ = self.child.wait();
    }
}

impl Daemon {
    fn stderr(&self) -> String {
        self.err.lock().unwrap().clone()
    }

    fn stdout(&self) -> Vec<u8> {
        self.out.lock().unwrap().clone()
    }

    /// Waits until stderr contains `needle`; false on timeout.
    fn wait_stderr(&self, needle: &str, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            if self.stderr().contains(needle) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        self.stderr().contains(needle)
    }

    fn socket(&self) -> PathBuf {
        match &self.addr {
            Addr::Unix(p) => p.clone(),
            Addr::Tcp(_) => panic!("not a socket daemon"),
        }
    }

    fn port(&self) -> u16 {
        match &self.addr {
            Addr::Tcp(p) => *p,
            Addr::Unix(_) => panic!("not a TCP daemon"),
        }
    }

    /// `okf+unix:///<socket>?tenant=<tenant>`.
    fn unix_dsn(&self, tenant: &str) -> String {
        format!("okf+unix://{}?tenant={tenant}", self.socket().display())
    }

    /// `okf+http://127.0.0.1:<port>?token=<token>`.
    fn http_dsn(&self, token: &str) -> String {
        format!("okf+http://127.0.0.1:{}?token={token}", self.port())
    }

    /// Sends `signal` with `kill` and waits for the exit.
    fn signal(&mut self, signal: &str) -> Out {
        let st = Command::new("kill")
            .args([format!("-{signal}"), self.pid.to_string()])
            .status()
            .expect("run kill");
        assert!(st.success(), "kill -{signal} {} failed", self.pid);
        let deadline = Instant::now() + HANG;
        let status = loop {
            if let Some(s) = self.child.try_wait().unwrap() {
                break s;
            }
            if Instant::now() > deadline {
                panic!(
                    "okfit serve did not exit within {HANG:?} of SIG{signal}; stderr:\n{}",
                    self.stderr()
                );
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        for t in self.readers.drain(..) {
            let _ = t.join();
        }
        Out {
            code: status.code().unwrap_or(-1),
            stdout: self.stdout(),
            stderr: self.stderr(),
        }
    }

    /// One raw HTTP request (see [`http`]).
    fn req(&self, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        http(&self.addr, method, path, headers, body)
    }
}

// ------------------------------------------------------------------------
// A tiny raw HTTP/1.1 client
// ------------------------------------------------------------------------

trait Rw: Read + Write {}
impl<T: Read + Write> Rw for T {}

fn connect(addr: &Addr) -> Box<dyn Rw> {
    match addr {
        Addr::Unix(p) => {
            let s = std::os::unix::net::UnixStream::connect(p)
                .unwrap_or_else(|e| panic!("connect {}: {e}", p.display()));
            s.set_read_timeout(Some(HANG)).unwrap();
            Box::new(s)
        }
        Addr::Tcp(port) => {
            let s = std::net::TcpStream::connect(("127.0.0.1", *port))
                .unwrap_or_else(|e| panic!("connect 127.0.0.1:{port}: {e}"));
            s.set_read_timeout(Some(HANG)).unwrap();
            Box::new(s)
        }
    }
}

/// A response.
#[derive(Debug)]
struct Resp {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Resp {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    fn text(&self) -> String {
        String::from_utf8(self.body.clone()).expect("the body is UTF-8")
    }

    #[track_caller]
    fn json(&self) -> Value {
        serde_json::from_slice(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", String::from_utf8_lossy(&self.body)))
    }

    /// Asserts the status and the exact plain-text body.
    #[track_caller]
    fn expect(&self, status: u16, body: &str) {
        assert_eq!(
            (self.status, self.text().as_str()),
            (status, body),
            "unexpected answer: {self:?}"
        );
    }

    #[track_caller]
    fn expect_status(&self, status: u16) -> &Self {
        assert_eq!(
            self.status,
            status,
            "unexpected status; body: {}",
            String::from_utf8_lossy(&self.body)
        );
        self
    }
}

/// Writes one request to `stream` (`Connection: close` unless `keep`).
fn send(
    stream: &mut dyn Rw,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
    keep: bool,
) {
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nContent-Length: {}\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        head.push_str("Host: okfit\r\n");
    }
    if !keep {
        head.push_str("Connection: close\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    // One write: a server may answer from the head alone (a 405, say) and
    // close before it reads the body, as HTTP allows; a body written
    // separately would then meet a closed socket.
    let mut request = head.into_bytes();
    request.extend_from_slice(body);
    match stream.write_all(&request).and_then(|()| stream.flush()) {
        Ok(()) => {}
        // The answer is still there to read.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        Err(e) => panic!("cannot send {method} {path}: {e}"),
    }
}

/// Parses a whole response read to the end of the connection.
fn parse_response(raw: &[u8]) -> Resp {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no header end in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {status_line:?}"));
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &raw[split + 4..];
    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let body = if get("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        let mut out = vec![];
        let mut r = rest;
        loop {
            let p = r.windows(2).position(|w| w == b"\r\n").expect("chunk size");
            let size = usize::from_str_radix(
                String::from_utf8_lossy(&r[..p])
                    .split(';')
                    .next()
                    .unwrap()
                    .trim(),
                16,
            )
            .expect("chunk size is hex");
            r = &r[p + 2..];
            if size == 0 {
                break;
            }
            out.extend_from_slice(&r[..size]);
            r = &r[size + 2..];
        }
        out
    } else if let Some(len) = get("content-length").and_then(|l| l.parse::<usize>().ok()) {
        assert!(rest.len() >= len, "short body: {} < {len}", rest.len());
        rest[..len].to_vec()
    } else {
        rest.to_vec()
    };
    Resp {
        status,
        headers,
        body,
    }
}

/// One request on a fresh connection with `Connection: close`; the
/// response is read to the end.
fn http(addr: &Addr, method: &str, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
    let mut s = connect(addr);
    send(&mut *s, method, path, headers, body, false);
    let mut raw = vec![];
    s.read_to_end(&mut raw).unwrap();
    parse_response(&raw)
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

// ------------------------------------------------------------------------
// rmcp client harness (from tests/mcp.rs and tests/kb.rs)
// ------------------------------------------------------------------------

/// Connects rmcp's client to `okfit-mcp ARGS…`.
async fn mcp_connect(sb: &Sandbox, args: &[&str]) -> Client {
    common::connect_command(sb.mcp_command(args)).await
}

async fn call_raw(c: &Client, name: &str, a: Value) -> CallToolResult {
    common::call_tool(c, name, a.clone())
        .await
        .unwrap_or_else(|e| panic!("{name} {a}: {e}"))
}

async fn text(c: &Client, name: &str, a: Value) -> String {
    let (is_error, t) = result_text(&call_raw(c, name, a.clone()).await);
    assert!(!is_error, "{name} {a}: expected success, got an error: {t}");
    t
}

async fn error_text(c: &Client, name: &str, a: Value) -> String {
    let (is_error, t) = result_text(&call_raw(c, name, a.clone()).await);
    assert!(is_error, "{name} {a}: expected isError, got: {t}");
    t
}

// ------------------------------------------------------------------------
// Shared helpers
// ------------------------------------------------------------------------

fn concept(title: &str, body: &str) -> String {
    format!("---\ntype: Note\ndescription: {title} note.\n---\n# {title}\n\n{body}\n")
}

/// `(bundle, path) → hash` of `GET source`.
fn source_list(
    d: &Daemon,
    prefix: &str,
    auth: &[(&str, &str)],
) -> BTreeMap<(String, String), String> {
    let r = d.req("GET", &format!("{prefix}/source"), auth, b"");
    r.expect_status(200);
    r.json()
        .as_array()
        .expect("source answers an array")
        .iter()
        .map(|o| {
            (
                (
                    o["bundle"].as_str().unwrap().to_string(),
                    o["path"].as_str().unwrap().to_string(),
                ),
                o["hash"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Replaces every JSON string value of `key` with `<key>`.
fn mask_key(s: &str, key: &str) -> String {
    let pat = format!("\"{key}\":\"");
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find(&pat) {
        out.push_str(&rest[..i + pat.len()]);
        rest = &rest[i + pat.len()..];
        let end = rest.find('"').unwrap_or(rest.len());
        out.push_str(&format!("<{key}>"));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

/// Every revision of `tenant`, oldest first (read embedded).
fn all_revisions(sb: &Sandbox, tenant: &str) -> Vec<String> {
    let out = sb.conn(&sb.store_dsn(tenant), &["history", "--limit", "100"], b"");
    if out.code != 0 {
        // No such tenant: nothing was ever committed.
        return vec![];
    }
    let v: Value = serde_json::from_str(&out.ok()).unwrap();
    let mut revs: Vec<String> = v["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revision"].as_str().unwrap().to_string())
        .collect();
    revs.reverse();
    revs
}

/// A transcript entry with the tenant, revision ids, timestamps and
/// cursors made comparable across tenants.
fn normalize(s: &str, tenant: &str, revs: &[String]) -> String {
    let mut s = s.replace(tenant, "<tenant>");
    for (i, r) in revs.iter().enumerate() {
        s = s.replace(r.as_str(), &format!("<rev{i}>"));
    }
    mask_key(&mask_key(&s, "created"), "next")
}

/// Polls `f` until it is true or `timeout` passes.
fn poll(timeout: Duration, mut f: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if f() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    f()
}

// ------------------------------------------------------------------------
// 1. Read parity: embedded, unix socket, http
// ------------------------------------------------------------------------

#[test]
fn reads_are_byte_identical_embedded_over_a_socket_and_over_http() {
    let sb = Sandbox::new();
    sb.acme();
    // The socket daemon starts before any token exists: tenant in the path.
    let unix = sb.serve_socket("s", &[]);
    assert_eq!(
        unix.stderr(),
        format!(
            "okfit serving {} on {} (0 tokens, 0 watched tenants)\n",
            sb.data(),
            unix.socket().display()
        )
    );
    let token = sb.mint("acme", false);
    let tcp = sb.serve_tcp("127.0.0.1", &[]);
    assert_eq!(
        tcp.stderr(),
        format!(
            "okfit serving {} on http://127.0.0.1:{port} (1 token, 0 watched tenants)\n\
             okfit: MCP over HTTP at http://127.0.0.1:{port}/mcp\n",
            sb.data(),
            port = tcp.port()
        )
    );
    let dsns = [
        sb.store_dsn("acme"),
        unix.unix_dsn("acme"),
        tcp.http_dsn(&token),
    ];
    let cases: Vec<Vec<&str>> = vec![
        vec!["manifest"],
        vec!["manifest", "--bundle", "sales"],
        vec!["manifest", "--bundle", "ops"],
        vec!["manifest", "--bundle", "nope"],
        vec!["search", "orders"],
        vec!["search", "orders", "-k", "1"],
        vec!["search", "orders", "--bundle", "ops"],
        vec![
            "search", "customer", "joins", "-k", "2", "--bundle", "sales",
        ],
        vec!["search", "zzzz"],
        vec!["search", "orders", "-k", "0"],
        vec!["get", "tables/orders", "customers", "nope"],
        vec!["get", "deploy", "deploy"],
        vec!["get", "tables/orders", "--section", "schema"],
        vec!["get", "tables/orders", "--section", "nope"],
        vec![
            "get",
            "tables/orders",
            "deploy",
            "--find",
            "order",
            "--limit",
            "40",
        ],
        vec!["get", "orders_db", "--offset", "20", "--limit", "30"],
        vec!["get", "customers", "--find", "zzz"],
        vec!["get", "orders"],
        vec!["snapshot"],
    ];
    for case in &cases {
        let outs: Vec<Out> = dsns.iter().map(|d| sb.conn(d, case, b"")).collect();
        for (dsn, o) in dsns.iter().zip(&outs).skip(1) {
            assert_eq!(
                (
                    o.code,
                    String::from_utf8_lossy(&o.stdout),
                    o.stderr.as_str()
                ),
                (
                    outs[0].code,
                    String::from_utf8_lossy(&outs[0].stdout),
                    outs[0].stderr.as_str()
                ),
                "okfit {case:?} over {dsn} differs from the embedded store"
            );
        }
    }
    // The embedded answers themselves are what the fixture says.
    let manifest = sb.conn(&dsns[0], &["manifest"], b"").ok();
    assert_eq!(rows(&manifest).len(), 5, "{manifest}");
    let one = sb
        .conn(&dsns[0], &["search", "orders", "-k", "1"], b"")
        .ok();
    assert!(one.contains("# hits: 1 direct, 1 linked\n"), "{one}");
    let snap = sb.conn(&dsns[0], &["snapshot"], b"").ok();
    let (digest, _) = snap.trim_end().split_once('\t').unwrap();
    assert_hex64(digest);
    assert_eq!(snap, format!("{digest}\t5 concepts\n"));

    // The raw routes answer the same bytes.
    let auth = bearer(&token);
    let tok = [("Authorization", auth.as_str())];
    for (d, prefix, h) in [(&unix, "/v1/acme", &[][..]), (&tcp, "/v1", &tok[..])] {
        let m = d.req("GET", &format!("{prefix}/manifest"), h, b"");
        m.expect_status(200);
        assert_eq!(m.text(), manifest);
        assert_eq!(
            m.header("content-type"),
            Some("text/tab-separated-values; charset=utf-8")
        );
        let s = d.req(
            "POST",
            &format!("{prefix}/search"),
            h,
            br#"{"q":"orders","k":1}"#,
        );
        s.expect_status(200);
        assert_eq!(s.text(), one);
        // Without expansion: the direct hit only.
        let s = d.req(
            "POST",
            &format!("{prefix}/search"),
            h,
            br#"{"q":"orders","k":1,"expand":false}"#,
        );
        s.expect_status(200);
        let t = s.text();
        assert!(t.contains("# hits: 1 direct, 0 linked\n"), "{t}");
        assert_eq!(rows(&t).len(), 1, "{t}");
        let b = d.req(
            "POST",
            &format!("{prefix}/search"),
            h,
            br#"{"q":"orders","bundle":"ops"}"#,
        );
        assert_eq!(
            b.text(),
            sb.conn(&dsns[0], &["search", "orders", "--bundle", "ops"], b"")
                .ok()
        );
        let g = d.req(
            "POST",
            &format!("{prefix}/get"),
            h,
            br#"{"ids":["tables/orders","nope"],"find":"order","limit":40}"#,
        );
        g.expect_status(200);
        let v = g.json();
        assert_eq!(
            v,
            json!({"tables/orders": {
                "text": "# Orders\n\nOne row per completed order. E",
                "start": 0, "end": 40, "total": 313,
                "matches": [2, 32, 44, 118, 144, 202], "matchCount": 6
            }}),
            "missing ids are absent, found ones carry their window"
        );
        let g = d.req(
            "POST",
            &format!("{prefix}/get"),
            h,
            br#"{"ids":["tables/orders"],"section":"joins"}"#,
        );
        let v = g.json();
        let o = &v["tables/orders"];
        assert!(
            o["text"]
                .as_str()
                .unwrap()
                .starts_with("## Joins\n\nJoin to customers on customer_id."),
            "{v}"
        );
        assert!(
            o.get("matches").is_none() && o.get("matchCount").is_none(),
            "{v}"
        );
        let sn = d.req("GET", &format!("{prefix}/snapshot"), h, b"");
        sn.expect_status(200);
        assert_eq!(sn.json(), json!({"snapshot": digest, "concepts": 5}));
    }
}

// ------------------------------------------------------------------------
// 2. ETag and 304
// ------------------------------------------------------------------------

#[test]
fn the_manifest_carries_an_etag_and_answers_304_when_it_matches() {
    let sb = Sandbox::new();
    sb.acme();
    let d = sb.serve_socket("s", &[]);
    let snap = d.req("GET", "/v1/acme/snapshot", &[], b"").json()["snapshot"]
        .as_str()
        .unwrap()
        .to_string();
    let whole = format!("\"{snap}\"");
    let sales = format!("\"{snap}:sales\"");

    let m = d.req("GET", "/v1/acme/manifest", &[], b"");
    m.expect_status(200);
    assert_eq!(m.header("etag"), Some(whole.as_str()));
    let body = m.text();
    let nm = d.req(
        "GET",
        "/v1/acme/manifest",
        &[("If-None-Match", whole.as_str())],
        b"",
    );
    nm.expect_status(304);
    assert!(nm.body.is_empty(), "a 304 has an empty body: {nm:?}");
    assert_eq!(nm.header("etag"), Some(whole.as_str()));
    // Another tag gets the whole body again.
    let other = d.req(
        "GET",
        "/v1/acme/manifest",
        &[("If-None-Match", "\"abc\"")],
        b"",
    );
    other.expect_status(200);
    assert_eq!(other.text(), body);

    // The bundle view has its own tag.
    let b = d.req("GET", "/v1/acme/manifest?bundle=sales", &[], b"");
    b.expect_status(200);
    assert_eq!(b.header("etag"), Some(sales.as_str()));
    assert_eq!(
        b.text(),
        sb.conn(
            &sb.store_dsn("acme"),
            &["manifest", "--bundle", "sales"],
            b""
        )
        .ok()
    );
    let b304 = d.req(
        "GET",
        "/v1/acme/manifest?bundle=sales",
        &[("If-None-Match", sales.as_str())],
        b"",
    );
    b304.expect_status(304);
    assert!(b304.body.is_empty());
    assert_eq!(b304.header("etag"), Some(sales.as_str()));
    // The whole manifest's tag does not validate a bundle view, nor the
    // reverse, nor another bundle's.
    d.req(
        "GET",
        "/v1/acme/manifest?bundle=sales",
        &[("If-None-Match", whole.as_str())],
        b"",
    )
    .expect_status(200);
    d.req(
        "GET",
        "/v1/acme/manifest",
        &[("If-None-Match", sales.as_str())],
        b"",
    )
    .expect_status(200);
    let ops = d.req(
        "GET",
        "/v1/acme/manifest?bundle=ops",
        &[("If-None-Match", sales.as_str())],
        b"",
    );
    ops.expect_status(200);
    assert_eq!(ops.header("etag"), Some(format!("\"{snap}:ops\"").as_str()));

    // A commit moves the tag: the old one no longer matches.
    let doc = concept("Fresh", "a new note");
    let put = d.req(
        "PUT",
        "/v1/acme/source/ops/fresh.md",
        &[("If-None-Match", "*")],
        doc.as_bytes(),
    );
    put.expect_status(200);
    let after = d.req(
        "GET",
        "/v1/acme/manifest",
        &[("If-None-Match", whole.as_str())],
        b"",
    );
    after.expect_status(200);
    let snap2 = d.req("GET", "/v1/acme/snapshot", &[], b"").json()["snapshot"]
        .as_str()
        .unwrap()
        .to_string();
    assert_ne!(snap, snap2);
    assert_eq!(after.header("etag"), Some(format!("\"{snap2}\"").as_str()));
    assert!(row_of(&after.text(), "fresh").is_some(), "{}", after.text());
    d.req(
        "GET",
        "/v1/acme/manifest?bundle=sales",
        &[("If-None-Match", sales.as_str())],
        b"",
    )
    .expect_status(200);
}

// ------------------------------------------------------------------------
// 3. Auth and HTTP errors
// ------------------------------------------------------------------------

#[test]
fn tokens_are_64_hex_recorded_with_mode_600() {
    use std::os::unix::fs::PermissionsExt;
    let sb = Sandbox::new();
    let data = sb.data();
    let out = sb.okfit(&["token", "--data", &data, "--tenant", "acme"]);
    let t1 = out.ok();
    assert_hex64(t1.trim_end());
    assert_eq!(t1.len(), 65);
    assert!(
        out.stderr.contains(&format!(
            "recorded a read-only grant for acme in {}/tokens.json",
            data
        )),
        "{}",
        out.stderr
    );
    let out = sb.okfit(&["token", "--data", &data, "--tenant", "acme", "--write"]);
    let t2 = out.ok();
    assert!(
        out.stderr.contains("recorded a read-write grant for acme"),
        "{}",
        out.stderr
    );
    let path = sb.path("data/tokens.json");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "tokens.json mode");
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(
        v,
        json!({t1.trim_end(): "acme", t2.trim_end(): {"tenant": "acme", "write": true}})
    );
    let bad = sb.okfit(&["token", "--data", &data, "--tenant", "no such"]);
    assert_ne!(bad.code, 0);
    assert!(bad.stdout.is_empty());
}

#[test]
fn a_socket_without_tokens_needs_the_tenant_in_the_path_and_answers_the_reference_errors() {
    let sb = Sandbox::new();
    sb.acme();
    let d = sb.serve_socket("s", &[]);
    d.req("GET", "/v1/manifest", &[], b"")
        .expect(401, "tenant required in path when no tokens exist");
    d.req("GET", "/v1/snapshot", &[], b"")
        .expect(401, "tenant required in path when no tokens exist");
    // Routes.
    for p in [
        "/v2/acme/manifest",
        "/",
        "/v1",
        "/v1/acme/nosuch",
        "/manifest",
        "/v1/acme/x/y",
    ] {
        d.req("GET", p, &[], b"").expect(404, "no such route");
    }
    // Methods.
    for verb in ["get", "search", "transact", "restore", "sync"] {
        d.req("GET", &format!("/v1/acme/{verb}"), &[], b"")
            .expect(405, &format!("{verb} requires POST"));
    }
    for verb in ["manifest", "snapshot", "history"] {
        d.req("POST", &format!("/v1/acme/{verb}"), &[], b"{}")
            .expect(405, &format!("{verb} requires GET"));
    }
    // Bodies.
    let get_shape = r#"body must be {"ids": [...], "section"?, "offset"?, "limit"?, "find"?}"#;
    for body in [&b""[..], b"{}", b"not json", br#"{"ids":"x"}"#, b"[1]"] {
        d.req("POST", "/v1/acme/get", &[], body)
            .expect(400, get_shape);
    }
    let search_shape = r#"body must be {"q": "...", "k"?: n}"#;
    for body in [
        &b""[..],
        b"{}",
        br#"{"q":""}"#,
        br#"{"q":"   "}"#,
        b"nope",
        br#"{"q":3}"#,
    ] {
        d.req("POST", "/v1/acme/search", &[], body)
            .expect(400, search_shape);
    }
    for verb in ["transact", "restore"] {
        d.req("POST", &format!("/v1/acme/{verb}"), &[], b"{nope")
            .expect(400, "body must be valid JSON");
    }
    for q in ["0", "101", "abc", "-1", "1.5"] {
        d.req("GET", &format!("/v1/acme/history?limit={q}"), &[], b"")
            .expect(400, "history limit must be an integer from 1 to 100");
    }
    let h = d.req("GET", "/v1/acme/history?limit=100", &[], b"");
    h.expect_status(200);
    assert_eq!(
        h.json()["revisions"].as_array().unwrap().len(),
        1,
        "{}",
        h.text()
    );
    // A missing tenant is named.
    let r = d.req("GET", "/v1/ghost/manifest", &[], b"");
    assert_eq!(r.status, 404, "{r:?}");
    assert!(r.text().starts_with("no tenant \"ghost\""), "{r:?}");

    // Sources: list, read, preconditions.
    let list = source_list(&d, "/v1/acme", &[]);
    assert_eq!(list.len(), 6, "{list:?}");
    let key = ("ops".to_string(), "deploy.md".to_string());
    let deploy_hash = list[&key].clone();
    let g = d.req("GET", "/v1/acme/source/ops/deploy.md", &[], b"");
    g.expect_status(200);
    assert_eq!(sha256_hex(&g.body), deploy_hash);
    assert_eq!(
        g.header("etag"),
        Some(format!("\"{deploy_hash}\"").as_str())
    );
    assert_eq!(
        g.body,
        std::fs::read(sb.path("kb/ops/deploy.md")).unwrap(),
        "the exact bytes"
    );
    d.req("GET", "/v1/acme/source/ops/nope.md", &[], b"")
        .expect(404, "concept does not exist");
    let doc = concept("Deploy", "rewritten");
    let r = d.req("PUT", "/v1/acme/source/ops/deploy.md", &[], doc.as_bytes());
    assert_eq!(r.status, 428, "{r:?}");
    let r = d.req("DELETE", "/v1/acme/source/ops/deploy.md", &[], b"");
    assert_eq!(r.status, 428, "{r:?}");
    let stale = format!("\"{}\"", "a".repeat(64));
    let r = d.req(
        "PUT",
        "/v1/acme/source/ops/deploy.md",
        &[("If-Match", stale.as_str())],
        doc.as_bytes(),
    );
    r.expect_status(412);
    let v = r.json();
    assert_eq!(v["code"], "PRECONDITION", "{v}");
    assert_eq!(
        v["message"],
        format!("concept changed since it was read{RETRY}"),
        "{v}"
    );
    assert_eq!(v["current"], deploy_hash, "{v}");
    let r = d.req(
        "PUT",
        "/v1/acme/source/ops/deploy.md",
        &[("If-None-Match", "*")],
        doc.as_bytes(),
    );
    r.expect_status(412);
    assert_eq!(r.json()["code"], "PRECONDITION");
    assert_eq!(
        r.json()["message"],
        format!("concept already exists{RETRY}")
    );
    let r = d.req(
        "DELETE",
        "/v1/acme/source/ops/deploy.md",
        &[("If-Match", stale.as_str())],
        b"",
    );
    r.expect_status(412);
    // The right hash replaces; the answer's ETag is the new hash.
    let cur = format!("\"{deploy_hash}\"");
    let r = d.req(
        "PUT",
        "/v1/acme/source/ops/deploy.md",
        &[("If-Match", cur.as_str())],
        doc.as_bytes(),
    );
    r.expect_status(200);
    let new_hash = sha256_hex(doc.as_bytes());
    assert_eq!(r.header("etag"), Some(format!("\"{new_hash}\"").as_str()));
    assert_eq!(r.json()["hash"], new_hash);
    assert_hex64(r.json()["revision"].as_str().unwrap());
    // Transactions: 409 for preconditions and stale revisions.
    let body = json!({"changes": [{"operation": "write", "bundle": "ops", "path": "deploy.md",
        "content": "x", "replaces": deploy_hash}]});
    let r = d.req(
        "POST",
        "/v1/acme/transact",
        &[],
        body.to_string().as_bytes(),
    );
    r.expect_status(409);
    let v = r.json();
    assert_eq!(v["code"], "PRECONDITION", "{v}");
    assert_eq!(
        v["message"],
        format!("concept changed since it was read{RETRY}")
    );
    assert_eq!(v["current"], new_hash);
    let body = json!({"changes": [{"operation": "write", "bundle": "ops", "path": "deploy.md",
        "content": "x", "replaces": new_hash}], "expectedRevision": "b".repeat(64)});
    let r = d.req(
        "POST",
        "/v1/acme/transact",
        &[],
        body.to_string().as_bytes(),
    );
    r.expect_status(409);
    assert_eq!(
        r.json(),
        json!({"code": "CONFLICT", "message": DATABASE_CHANGED})
    );
    let r = d.req(
        "POST",
        "/v1/acme/transact",
        &[],
        br#"{"tenant":"acme","changes":[]}"#,
    );
    r.expect(
        400,
        "transaction must be an object scoped to the connected tenant",
    );
    let r = d.req("POST", "/v1/acme/restore", &[], br#"{"revision":"x"}"#);
    assert_eq!(r.status, 400, "{r:?}");
    // sync answers the current commit.
    let s = d.req("POST", "/v1/acme/sync", &[], b"{}");
    s.expect_status(200);
    let v = s.json();
    assert_hex64(v["revision"].as_str().unwrap());
    assert_eq!(v["concepts"], json!(5), "{v}");
    // A whole bundle goes at once.
    let r = d.req("DELETE", "/v1/acme/bundles/ops", &[], b"");
    r.expect_status(200);
    assert!(
        source_list(&d, "/v1/acme", &[])
            .keys()
            .all(|(b, _)| b != "ops"),
        "the ops bundle is gone"
    );
    let r = d.req("DELETE", "/v1/acme/bundles/ops", &[], b"");
    assert_eq!(r.status, 404, "{r:?}");
}

#[test]
fn tcp_tokens_pick_the_tenant_and_gate_writes() {
    let sb = Sandbox::new();
    sb.acme();
    let reader = sb.mint("acme", false);
    let writer = sb.mint("acme", true);
    let stranger = sb.mint("other", true);
    let d = sb.serve_tcp("127.0.0.1", &[]);
    assert!(
        d.stderr().contains("(3 tokens, 0 watched tenants)"),
        "{}",
        d.stderr()
    );
    let (r_auth, w_auth, s_auth) = (bearer(&reader), bearer(&writer), bearer(&stranger));
    let r = [("Authorization", r_auth.as_str())];
    let w = [("Authorization", w_auth.as_str())];
    let s = [("Authorization", s_auth.as_str())];
    let bogus = [("Authorization", "Bearer 0123")];
    let basic = [("Authorization", "Basic abc")];

    // Missing or unknown token: 401, on any route, even with a tenant.
    for h in [&[][..], &bogus[..], &basic[..]] {
        for p in ["/v1/manifest", "/v1/acme/manifest", "/v1/acme/snapshot"] {
            d.req("GET", p, h, b"")
                .expect(401, "invalid or missing bearer token");
        }
    }
    // The token picks the tenant; the same tenant in the path is fine.
    let m1 = d.req("GET", "/v1/manifest", &r, b"");
    m1.expect_status(200);
    let m2 = d.req("GET", "/v1/acme/manifest", &r, b"");
    assert_eq!(m1.text(), m2.text());
    assert!(m1.text().starts_with("# tenant: acme\n"), "{}", m1.text());
    // Another tenant in the path: 403.
    for h in [&r[..], &w[..]] {
        d.req("GET", "/v1/other/manifest", h, b"")
            .expect(403, "token does not grant access to that tenant");
    }
    d.req("GET", "/v1/acme/snapshot", &s, b"")
        .expect(403, "token does not grant access to that tenant");
    // Reads and history with a read-only token.
    d.req("GET", "/v1/history?limit=5", &r, b"")
        .expect_status(200);
    d.req("GET", "/v1/source", &r, b"").expect_status(200);
    d.req("POST", "/v1/search", &r, br#"{"q":"orders"}"#)
        .expect_status(200);
    d.req("POST", "/v1/sync", &r, b"{}").expect_status(200);
    // Writes with a read-only token: 403, nothing written.
    let doc = concept("Note", "text");
    let ro = "this token may read but not write";
    d.req(
        "PUT",
        "/v1/source/ops/new.md",
        &[r[0], ("If-None-Match", "*")],
        doc.as_bytes(),
    )
    .expect(403, ro);
    d.req(
        "DELETE",
        "/v1/source/ops/deploy.md",
        &[r[0], ("If-Match", "\"x\"")],
        b"",
    )
    .expect(403, ro);
    d.req("DELETE", "/v1/bundles/ops", &r, b"").expect(403, ro);
    let tx = json!({"changes": [{"operation": "write", "bundle": "ops", "path": "new.md", "content": doc}]});
    d.req("POST", "/v1/transact", &r, tx.to_string().as_bytes())
        .expect(403, ro);
    let head = d.req("POST", "/v1/sync", &r, b"{}").json()["revision"]
        .as_str()
        .unwrap()
        .to_string();
    let rs = json!({"revision": head, "expectedRevision": head});
    d.req("POST", "/v1/restore", &r, rs.to_string().as_bytes())
        .expect(403, ro);
    d.req("GET", "/v1/source/ops/new.md", &r, b"")
        .expect(404, "concept does not exist");
    // The writer writes.
    let put = d.req(
        "PUT",
        "/v1/source/ops/new.md",
        &[w[0], ("If-None-Match", "*")],
        doc.as_bytes(),
    );
    put.expect_status(200);
    assert_eq!(
        put.header("etag"),
        Some(format!("\"{}\"", sha256_hex(doc.as_bytes())).as_str())
    );
    // Traversal in a source path is refused; nothing is written.
    let r = d.req(
        "PUT",
        "/v1/source/ops/..%2F..%2Fevil.md",
        &[w[0], ("If-None-Match", "*")],
        doc.as_bytes(),
    );
    assert_eq!(r.status, 400, "{r:?}");
    assert!(r.text().contains("resolves outside the bundle"), "{r:?}");
    // tokens.json is read at start only: a token minted now is unknown.
    let late = sb.mint("acme", true);
    let late_auth = bearer(&late);
    d.req(
        "GET",
        "/v1/manifest",
        &[("Authorization", late_auth.as_str())],
        b"",
    )
    .expect(401, "invalid or missing bearer token");
    // The stranger's own tenant is separate (and empty until it writes).
    let r = d.req("GET", "/v1/manifest", &s, b"");
    assert_eq!(r.status, 404, "{r:?}");
    assert!(r.text().starts_with("no tenant \"other\""), "{r:?}");

    // The CLI shows the server's answers.
    let port = d.port();
    let out = sb.conn(
        &format!("okf+http://127.0.0.1:{port}?token=0123"),
        &["snapshot"],
        b"",
    );
    out.expect_code(1);
    assert_eq!(
        out.stderr,
        "error: okfit server returned 401: invalid or missing bearer token\n"
    );
    let out = sb.conn(
        &format!("okf+http://127.0.0.1:{port}?token={reader}&tenant=other"),
        &["snapshot"],
        b"",
    );
    out.expect_code(1);
    assert_eq!(
        out.stderr,
        "error: okfit server returned 403: token does not grant access to that tenant\n"
    );
    let out = sb.conn(
        &d.http_dsn(&reader),
        &["write", "ops", "other.md", "--create"],
        doc.as_bytes(),
    );
    out.expect_code(1);
    assert_eq!(
        out.stderr,
        "error: okfit server returned 403: this token may read but not write\n"
    );
    // The same write with the writer's token goes through.
    let out = sb.conn(
        &d.http_dsn(&writer),
        &["write", "ops", "other.md", "--create"],
        doc.as_bytes(),
    );
    out.expect_code(0);
    assert!(
        out.stderr.starts_with("wrote ops/other.md "),
        "{}",
        out.stderr
    );
}

// ------------------------------------------------------------------------
// 4. Writes over the daemon
// ------------------------------------------------------------------------

/// One step of a write scenario: what the CLI printed, normalized later.
struct Step {
    args: String,
    out: Out,
}

/// The same writes, refusals, history and restores on one connection;
/// returns the raw transcript.
fn write_scenario(sb: &Sandbox, dsn: &str) -> Vec<Step> {
    let mut steps = vec![];
    let mut run = |args: &[&str], input: &str| -> String {
        let out = sb.conn(dsn, args, input.as_bytes());
        let stdout = out.text();
        steps.push(Step {
            args: args.join(" "),
            out,
        });
        stdout
    };
    let a1 = concept("Alpha", "first version");
    let a2 = concept("Alpha", "second version");
    let a3 = concept("Alpha", "third version");
    let b = concept("Beta", "beta [alpha](../a.md) lives here");
    let (h1, h3) = (sha256_hex(a1.as_bytes()), sha256_hex(a3.as_bytes()));
    let bogus = "a".repeat(64);
    run(&["write", "inbox", "a.md", "--create"], &a1);
    run(&["write", "inbox", "a.md", "--create"], &a1);
    run(&["write", "inbox", "a.md", "--replaces", &bogus], &a2);
    run(&["write", "inbox", "a.md", "--replaces", &h1], &a2);
    run(&["write", "inbox", "a.md", "--force"], &a3);
    run(&["write", "inbox", "deep/b.md", "--create"], &b);
    run(&["write", "inbox", "c.md"], &b);
    run(&["write", "inbox", "bad name.txt", "--create"], &b);
    run(&["delete", "inbox", "a.md", "--replaces", &h1], "");
    run(&["delete", "inbox", "a.md", "--replaces", &h3], "");
    run(&["delete", "inbox", "a.md", "--force"], "");
    run(&["delete", "inbox", "deep/b.md"], "");
    run(&["delete", "inbox", "deep/b.md", "--force"], "");
    run(&["get", "a", "deep/b"], "");
    let hist = run(&["history", "--limit", "100"], "");
    let v: Value = serde_json::from_str(&hist).expect("history is JSON");
    let revs: Vec<String> = v["revisions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["revision"].as_str().unwrap().to_string())
        .collect();
    let page = run(&["history", "--limit", "2"], "");
    let p: Value = serde_json::from_str(&page).expect("history is JSON");
    if let Some(next) = p["next"].as_str() {
        run(&["history", "--limit", "2", "--before", next], "");
    }
    run(&["history", "--limit", "0"], "");
    run(&["history", "--before", "nonsense"], "");
    let (head, first) = (revs[0].clone(), revs.last().unwrap().clone());
    run(&["restore", &first, "--expected-revision", &first], "");
    run(
        &["restore", &"b".repeat(64), "--expected-revision", &head],
        "",
    );
    run(&["restore", &first], "");
    run(&["restore", &first, "--expected-revision", &head], "");
    run(&["get", "a", "deep/b"], "");
    run(&["snapshot"], "");
    run(&["manifest"], "");
    let hist = run(&["history", "--limit", "1"], "");
    let v: Value = serde_json::from_str(&hist).expect("history is JSON");
    let head = v["revisions"][0]["revision"].as_str().unwrap().to_string();
    run(&["restore", &head, "--expected-revision", &head], "");
    steps
}

fn transcript(sb: &Sandbox, steps: &[Step], tenant: &str) -> Vec<String> {
    let revs = all_revisions(sb, tenant);
    steps
        .iter()
        .map(|s| {
            let mut args = s.args.clone();
            if let Some(i) = args.find("--before ") {
                args = format!("{}--before <cursor>", &args[..i]);
            }
            normalize(
                &format!(
                    "$ {}\n[exit {}]\n{}{}",
                    args,
                    s.out.code,
                    String::from_utf8_lossy(&s.out.stdout),
                    s.out.stderr
                ),
                tenant,
                &revs,
            )
        })
        .collect()
}

#[track_caller]
fn assert_same_transcript(what: &str, got: &[String], want: &[String]) {
    for (g, w) in got.iter().zip(want) {
        assert_eq!(g, w, "{what} differs from the embedded store");
    }
    assert_eq!(got.len(), want.len(), "{what}: a different number of steps");
}

#[test]
fn cli_writes_history_and_restore_over_the_daemon_behave_like_embedded() {
    let sb = Sandbox::new();
    let unix = sb.serve_socket("s", &[]);
    let token = sb.mint("t-web", true);
    let tcp = sb.serve_tcp("127.0.0.1", &[]);
    let emb = write_scenario(&sb, &sb.store_dsn("t-emb"));
    let uni = write_scenario(&sb, &unix.unix_dsn("t-uni"));
    let web = write_scenario(&sb, &tcp.http_dsn(&token));
    let want = transcript(&sb, &emb, "t-emb");
    // The embedded transcript says what the reference says.
    let h1 = sha256_hex(concept("Alpha", "first version").as_bytes());
    let h3 = sha256_hex(concept("Alpha", "third version").as_bytes());
    let joined = want.join("\n");
    for needle in [
        format!("error: inbox/a.md: concept already exists{RETRY}\nretry with replaces: \"{h1}\"\n"),
        format!("error: inbox/a.md: concept changed since it was read{RETRY}\nretry with replaces: \"{h1}\"\n"),
        format!("error: inbox/a.md: concept changed since it was read{RETRY}\nretry with replaces: \"{h3}\"\n"),
        format!("wrote inbox/a.md {h3}\n"),
        "error: inbox/a.md: concept does not exist\n".to_string(),
        "deleted inbox/deep/b.md\n".to_string(),
        format!("error: {DATABASE_CHANGED}\n"),
        "error: revision is not in retained committed history\n".to_string(),
        "error: history limit must be an integer from 1 to 100\n".to_string(),
    ] {
        assert!(joined.contains(&needle), "missing {needle:?} in:\n{joined}");
    }
    assert_eq!(
        all_revisions(&sb, "t-emb").len(),
        all_revisions(&sb, "t-uni").len()
    );
    assert_same_transcript(
        "the socket transcript",
        &transcript(&sb, &uni, "t-uni"),
        &want,
    );
    assert_same_transcript(
        "the http transcript",
        &transcript(&sb, &web, "t-web"),
        &want,
    );
    // What the daemon committed is in the store, byte for byte.
    for t in ["t-uni", "t-web"] {
        assert_eq!(
            sb.conn(&sb.store_dsn(t), &["get", "a"], b"").ok(),
            sb.conn(&sb.store_dsn("t-emb"), &["get", "a"], b"").ok()
        );
    }
}

/// Batches through `okfit transact` on one connection.
fn transact_scenario(sb: &Sandbox, dsn: &str, tenant: &str) -> Vec<String> {
    let mut steps = vec![];
    let mut run = |args: &[&str], input: &str| -> String {
        let out = sb.conn(dsn, args, input.as_bytes());
        let stdout = out.text();
        steps.push(Step {
            args: args.join(" "),
            out,
        });
        stdout
    };
    let a = concept("Alpha", "alpha");
    let b = concept("Beta", "beta");
    let a2 = concept("Alpha", "alpha two");
    let (ha, hb) = (sha256_hex(a.as_bytes()), sha256_hex(b.as_bytes()));
    let w = |path: &str, content: &str| json!({"operation": "write", "bundle": "inbox", "path": path, "content": content});
    let first = run(
        &["transact"],
        &json!({"changes": [w("a.md", &a), w("b.md", &b)]}).to_string(),
    );
    let rev1 = serde_json::from_str::<Value>(&first)
        .ok()
        .and_then(|v| v["revision"].as_str().map(str::to_string))
        .unwrap_or_default();
    // A stale hash: nothing commits.
    let mut stale = w("a.md", &a2);
    stale["replaces"] = json!(hb);
    run(
        &["transact"],
        &json!({"changes": [w("c.md", &b), stale]}).to_string(),
    );
    // A create of an existing document.
    run(
        &["transact"],
        &json!({"changes": [w("a.md", &a2)]}).to_string(),
    );
    // A stale expectedRevision.
    let mut ok = w("a.md", &a2);
    ok["replaces"] = json!(ha);
    run(
        &["transact"],
        &json!({"changes": [ok.clone()], "expectedRevision": "c".repeat(64)}).to_string(),
    );
    // The right revision: write and delete together.
    run(
        &["transact"],
        &json!({"changes": [ok, {"operation": "delete", "bundle": "inbox", "path": "b.md", "replaces": hb}],
            "expectedRevision": rev1})
        .to_string(),
    );
    run(&["transact"], "{nope");
    run(&["transact"], r#"{"tenant":"x","changes":[]}"#);
    run(&["transact"], r#"{"changes":[]}"#);
    run(
        &["transact"],
        r#"{"changes":[{"operation":"delete","bundle":"inbox","path":"a.md"}]}"#,
    );
    run(&["get", "a", "b", "c"], "");
    transcript(sb, &steps, tenant)
}

#[test]
fn cli_transact_over_the_daemon_behaves_like_embedded() {
    let sb = Sandbox::new();
    let unix = sb.serve_socket("s", &[]);
    let token = sb.mint("t-web", true);
    let tcp = sb.serve_tcp("127.0.0.1", &[]);
    let want = transact_scenario(&sb, &sb.store_dsn("t-emb"), "t-emb");
    let joined = want.join("\n");
    let ha = sha256_hex(concept("Alpha", "alpha").as_bytes());
    for needle in [
        format!("error: inbox/a.md: concept changed since it was read{RETRY}\nretry with replaces: \"{ha}\"\n"),
        format!("error: inbox/a.md: concept already exists{RETRY}\nretry with replaces: \"{ha}\"\n"),
        format!("error: {DATABASE_CHANGED}\n"),
        "error: transaction must be an object scoped to the connected tenant\n".to_string(),
    ] {
        assert!(joined.contains(&needle), "missing {needle:?} in:\n{joined}");
    }
    assert_same_transcript(
        "the socket transact transcript",
        &transact_scenario(&sb, &unix.unix_dsn("t-uni"), "t-uni"),
        &want,
    );
    assert_same_transcript(
        "the http transact transcript",
        &transact_scenario(&sb, &tcp.http_dsn(&token), "t-web"),
        &want,
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_commit_by_one_mcp_client_is_visible_to_another_on_its_next_call() {
    let sb = Sandbox::new();
    blocking(|| sb.acme());
    let d = blocking(|| sb.serve_socket("s", &[]));
    let dsn = d.unix_dsn("acme");
    let a = mcp_connect(&sb, &[&dsn]).await;
    let b = mcp_connect(&sb, &[&dsn]).await;
    // A third session over http, served by a second daemon on the same
    // data root.
    let token = blocking(|| sb.mint("acme", false));
    let web = blocking(|| sb.serve_tcp("127.0.0.1", &[]));
    let web_dsn = web.http_dsn(&token);
    let c = mcp_connect(&sb, &[&web_dsn]).await;
    let embedded = |args: &[&str]| blocking(|| sb.conn(&sb.store_dsn("acme"), args, b"").ok());

    let m1 = text(&a, "manifest", json!({})).await;
    assert_eq!(m1, embedded(&["manifest"]));
    assert_eq!(text(&c, "manifest", json!({})).await, m1);
    assert!(row_of(&m1, "canary").is_none());
    // Read twice: the second answer comes from the ETag revalidation.
    assert_eq!(text(&a, "manifest", json!({})).await, m1);
    let s1 = text(&a, "snapshot", json!({})).await;

    let canary = "---\ntype: Runbook\ndescription: Canary releases of the orders service.\n---\n# Canary\n\nShip the canary build to one zone, then promote.\n";
    let h = sha256_hex(canary.as_bytes());
    let w = text(
        &b,
        "write",
        json!({"bundle": "ops", "path": "canary.md", "content": canary}),
    )
    .await;
    assert!(
        w.starts_with(&format!("wrote ops/canary.md (hash {h}), snapshot ")),
        "{w}"
    );
    // The other session sees it on its very next call.
    let m2 = text(&a, "manifest", json!({})).await;
    assert_eq!(
        row_of(&m2, "canary"),
        Some("canary\tops\trunbook\t-\t-\tCanary releases of the orders service.\t-"),
        "{m2}"
    );
    assert_eq!(m2, embedded(&["manifest"]));
    assert_eq!(
        text(&c, "manifest", json!({})).await,
        m2,
        "the other daemon's client sees the commit too"
    );
    let hits = text(&a, "search", json!({"query": "canary"})).await;
    assert!(hits.contains("\ncanary\tops\t"), "{hits}");
    let s2 = text(&a, "snapshot", json!({})).await;
    assert_ne!(s1, s2);
    assert_eq!(s2, text(&b, "snapshot", json!({})).await);
    let (digest, rest) = embedded(&["snapshot"])
        .trim_end()
        .split_once('\t')
        .map(|(x, y)| (x.to_string(), y.to_string()))
        .unwrap();
    assert_eq!(s2, format!("snapshot {digest}, {rest}"));
    assert_eq!(
        text(&a, "get", json!({"ids": ["canary"]})).await,
        embedded(&["get", "canary"]).strip_suffix('\n').unwrap()
    );

    // Refusals over the daemon read like embedded ones.
    let again = error_text(
        &a,
        "write",
        json!({"bundle": "ops", "path": "canary.md", "content": canary}),
    )
    .await;
    assert_eq!(
        again,
        format!("concept already exists{RETRY}\nretry with replaces: \"{h}\"")
    );
    let stale = error_text(
        &a,
        "delete",
        json!({"bundle": "ops", "path": "canary.md", "replaces": "a".repeat(64)}),
    )
    .await;
    assert_eq!(
        stale,
        format!("concept changed since it was read{RETRY}\nretry with replaces: \"{h}\"")
    );
    // A delete in one session leaves the other's next manifest.
    let del = text(
        &a,
        "delete",
        json!({"bundle": "ops", "path": "canary.md", "replaces": h}),
    )
    .await;
    assert!(del.starts_with("deleted ops/canary.md, snapshot "), "{del}");
    let m3 = text(&b, "manifest", json!({})).await;
    assert_eq!(m3, m1, "back to the first manifest");
    assert_eq!(text(&c, "manifest", json!({})).await, m1);
    // The read-only token's session is refused a write.
    let ro = error_text(
        &c,
        "write",
        json!({"bundle": "ops", "path": "canary.md", "content": canary}),
    )
    .await;
    assert_eq!(
        ro,
        "okfit server returned 403: this token may read but not write"
    );
    close(a).await;
    close(b).await;
    close(c).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_database_tools_work_over_the_daemon() {
    let sb = Sandbox::new();
    blocking(|| sb.acme());
    let d = blocking(|| sb.serve_socket("s", &[]));
    let dsn = d.unix_dsn("acme");
    // The server must start (stdin closed: it exits 0 at EOF).
    let probe = blocking(|| finish(sb.sandboxed(MCP, &[&dsn, "--database-tools"]), b""));
    assert_eq!(
        (
            probe.code,
            probe.stderr.contains("needs a store connection")
        ),
        (0, false),
        "okfit-mcp {dsn} --database-tools refused to start: {}",
        probe.stderr
    );
    let c = mcp_connect(&sb, &[&dsn, "--database-tools"]).await;
    let hist: Value =
        serde_json::from_str(&text(&c, "history", json!({"limit": 10})).await).unwrap();
    let head = hist["revisions"][0]["revision"]
        .as_str()
        .unwrap()
        .to_string();
    let note = concept("Gamma", "gamma");
    let r: Value = serde_json::from_str(
        &text(
            &c,
            "transact",
            json!({"changes": [{"operation": "write", "bundle": "ops", "path": "g.md", "content": note}],
                "expectedRevision": head}),
        )
        .await,
    )
    .unwrap();
    assert_hex64(r["revision"].as_str().unwrap());
    let e = error_text(
        &c,
        "restore",
        json!({"revision": head, "expectedRevision": head}),
    )
    .await;
    assert_eq!(e, DATABASE_CHANGED);
    let back: Value = serde_json::from_str(
        &text(
            &c,
            "restore",
            json!({"revision": head, "expectedRevision": r["revision"]}),
        )
        .await,
    )
    .unwrap();
    assert_eq!(back["snapshot"], hist["revisions"][0]["snapshot"]);
    close(c).await;
}

// ------------------------------------------------------------------------
// 5. TLS and start refusals
// ------------------------------------------------------------------------

#[test]
fn tls_serves_a_client_that_trusts_the_certificate_and_fails_one_that_does_not() {
    let sb = Sandbox::new();
    sb.acme();
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = sb.write("tls/cert.pem", ck.cert.pem());
    let key = sb.write("tls/key.pem", ck.signing_key.serialize_pem());
    let (cert_s, key_s) = (cert.display().to_string(), key.display().to_string());
    let token = sb.mint("acme", false);
    let d = sb.serve_tcp("localhost", &["--tls-cert", &cert_s, "--tls-key", &key_s]);
    let port = d.port();
    assert!(
        d.stderr().contains(" on https://")
            && d.stderr()
                .contains(&format!(":{port} (1 token, 0 watched tenants)")),
        "{}",
        d.stderr()
    );
    let dsn = format!("okf+https://localhost:{port}?token={token}");
    let embedded = sb.conn(&sb.store_dsn("acme"), &["snapshot"], b"").ok();
    let mut cmd = sb.sandboxed(OKFIT, &["snapshot", "-c", &dsn]);
    cmd.env("OKFIT_TLS_CA", &cert);
    let out = finish(cmd, b"");
    assert_eq!(out.ok(), embedded);
    let mut cmd = sb.sandboxed(OKFIT, &["manifest", "-c", &dsn]);
    cmd.env("OKFIT_TLS_CA", &cert);
    assert_eq!(
        finish(cmd, b"").ok(),
        sb.conn(&sb.store_dsn("acme"), &["manifest"], b"").ok()
    );
    // Without the certificate among the roots: a certificate error.
    let out = sb.conn(&dsn, &["snapshot"], b"");
    assert_ne!(out.code, 0, "an untrusted certificate was accepted");
    assert!(out.stdout.is_empty());
    let lower = out.stderr.to_lowercase();
    assert!(
        lower.contains("certificate")
            && (lower.contains("unknownissuer") || lower.contains("unknown issuer")),
        "the error must name the certificate problem: {}",
        out.stderr
    );
    // The certificate names localhost, not 127.0.0.1.
    let mut cmd = sb.sandboxed(
        OKFIT,
        &[
            "snapshot",
            "-c",
            &format!("okf+https://127.0.0.1:{port}?token={token}"),
        ],
    );
    cmd.env("OKFIT_TLS_CA", &cert);
    let out = finish(cmd, b"");
    assert_ne!(out.code, 0);
    assert!(
        out.stderr.to_lowercase().contains("certificate"),
        "{}",
        out.stderr
    );
    // A plain-http client on the TLS port fails rather than hangs.
    let out = sb.conn(
        &format!("okf+http://localhost:{port}?token={token}"),
        &["snapshot"],
        b"",
    );
    assert_ne!(out.code, 0);
    // An unreadable OKFIT_TLS_CA is named.
    let mut cmd = sb.sandboxed(OKFIT, &["snapshot", "-c", &dsn]);
    cmd.env("OKFIT_TLS_CA", sb.path("tls/nope.pem"));
    let out = finish(cmd, b"");
    assert_ne!(out.code, 0);
    assert!(out.stderr.contains("OKFIT_TLS_CA"), "{}", out.stderr);
}

#[test]
fn serve_refuses_unsafe_or_inconsistent_listeners_at_start() {
    let sb = Sandbox::new();
    let port = free_port().to_string();
    let lo = format!("127.0.0.1:{port}");
    // TCP without tokens.
    let out = sb.serve_refused(&["--listen", &lo]);
    out.expect_code(64);
    assert!(
        out.stderr
            .starts_with("error: refusing to listen on TCP without tokens: "),
        "{}",
        out.stderr
    );
    assert!(out.stdout.is_empty());
    let ck = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    let cert = sb
        .write("tls/cert.pem", ck.cert.pem())
        .display()
        .to_string();
    let key = sb
        .write("tls/key.pem", ck.signing_key.serialize_pem())
        .display()
        .to_string();
    sb.mint("acme", false);
    // Off loopback without TLS.
    let any = format!("0.0.0.0:{port}");
    let out = sb.serve_refused(&["--listen", &any]);
    out.expect_code(64);
    assert!(
        out.stderr
            .starts_with("error: refusing to serve 0.0.0.0 without tls: "),
        "{}",
        out.stderr
    );
    // Half a TLS configuration.
    for args in [
        vec!["--listen", lo.as_str(), "--tls-cert", cert.as_str()],
        vec!["--listen", lo.as_str(), "--tls-key", key.as_str()],
    ] {
        let out = sb.serve_refused(&args);
        out.expect_code(64);
        assert!(
            out.stderr
                .contains("--tls-cert and --tls-key must be given together"),
            "{}",
            out.stderr
        );
    }
    // TLS on a socket.
    let sock = sb.path("s.sock").display().to_string();
    let out = sb.serve_refused(&["--socket", &sock, "--tls-cert", &cert, "--tls-key", &key]);
    out.expect_code(64);
    assert!(out.stderr.contains("--tls-cert"), "{}", out.stderr);
    assert!(!sb.path("s.sock").exists(), "a refused start left a socket");
    // A tokens.json that is not an object of grants.
    for (bad, why) in [
        ("[]", "must be a JSON object"),
        ("{nope", "must be a JSON object"),
        (r#"{"t": 3}"#, "invalid grant"),
        (r#"{"": "acme"}"#, "has an empty token"),
    ] {
        sb.write("data/tokens.json", bad);
        let out = sb.serve_refused(&["--socket", &sock]);
        assert_ne!(out.code, 0, "{bad}");
        assert!(
            out.stderr.contains("tokens.json") && out.stderr.contains(why),
            "{bad}: {}",
            out.stderr
        );
        assert!(!sb.path("s.sock").exists(), "a refused start left a socket");
    }
}

#[test]
fn only_a_literal_true_grants_write() {
    let sb = Sandbox::new();
    sb.acme();
    let (yes, tru) = ("a".repeat(64), "b".repeat(64));
    sb.write(
        "data/tokens.json",
        json!({&yes: {"tenant": "acme", "write": "yes"}, &tru: {"tenant": "acme", "write": true}})
            .to_string(),
    );
    let d = sb.serve_tcp("127.0.0.1", &[]);
    let doc = concept("Note", "text");
    for (token, status) in [(&yes, 403), (&tru, 200)] {
        let auth = bearer(token);
        let r = d.req(
            "PUT",
            "/v1/source/ops/new.md",
            &[("Authorization", auth.as_str()), ("If-None-Match", "*")],
            doc.as_bytes(),
        );
        assert_eq!(r.status, status, "{r:?}");
    }
}

// ------------------------------------------------------------------------
// 6. Bounded load on the socket
// ------------------------------------------------------------------------

#[test]
fn eight_readers_and_four_writers_on_the_socket_see_no_errors_and_lose_no_write() {
    const READERS: usize = 8;
    const READS: usize = 1000;
    const WRITERS: usize = 4;
    const WRITES: usize = 25;
    const DOCS: usize = 5;
    let sb = Sandbox::new();
    sb.acme();
    let d = sb.serve_socket("s", &[]);
    let before = source_list(&d, "/v1/acme", &[]);
    let head0 = d.req("GET", "/v1/acme/history?limit=100", &[], b"").json()["revisions"]
        .as_array()
        .unwrap()
        .len();
    let started = Instant::now();
    let (errors, finals) = std::thread::scope(|s| {
        let mut readers = vec![];
        for t in 0..READERS {
            let d = &d;
            readers.push(s.spawn(move || {
                let mut errors: Vec<String> = vec![];
                let mut etag: Option<String> = None;
                for i in 0..READS {
                    let r = match (i + t) % 5 {
                        0 => {
                            let r = match etag.as_deref() {
                                Some(e) => {
                                    d.req("GET", "/v1/acme/manifest", &[("If-None-Match", e)], b"")
                                }
                                None => d.req("GET", "/v1/acme/manifest", &[], b""),
                            };
                            if r.status == 200 {
                                etag = r.header("etag").map(str::to_string);
                                if !r.text().starts_with("# tenant: acme\n") {
                                    errors.push(format!("bad manifest {}", r.text()));
                                }
                            }
                            r
                        }
                        1 => d.req("GET", "/v1/acme/manifest?bundle=sales", &[], b""),
                        2 => {
                            let r = d.req(
                                "POST",
                                "/v1/acme/search",
                                &[],
                                br#"{"q":"orders customer","k":3}"#,
                            );
                            if r.status == 200 && !r.text().contains("# query: orders customer\n") {
                                errors.push(format!("bad search {}", r.text()));
                            }
                            r
                        }
                        3 => {
                            let r = d.req(
                                "POST",
                                "/v1/acme/get",
                                &[],
                                br#"{"ids":["tables/orders","deploy"],"find":"order","limit":50}"#,
                            );
                            if r.status == 200 && r.json()["tables/orders"]["total"] != json!(313) {
                                errors.push(format!("bad get {}", r.text()));
                            }
                            r
                        }
                        _ => d.req("GET", "/v1/acme/snapshot", &[], b""),
                    };
                    if r.status != 200 && r.status != 304 {
                        errors.push(format!("read {i}: {} {}", r.status, r.text()));
                    }
                }
                errors
            }));
        }
        let mut writers = vec![];
        for t in 0..WRITERS {
            let d = &d;
            writers.push(s.spawn(move || {
                let mut errors: Vec<String> = vec![];
                let mut hashes: Vec<Option<String>> = vec![None; DOCS];
                for i in 0..WRITES {
                    let k = i % DOCS;
                    let content = concept(&format!("Writer {t} doc {k}"), &format!("version {i}"));
                    let tag = hashes[k].as_ref().map(|h| format!("\"{h}\""));
                    let pre: (&str, &str) = match &tag {
                        Some(t) => ("If-Match", t.as_str()),
                        None => ("If-None-Match", "*"),
                    };
                    let r = d.req(
                        "PUT",
                        &format!("/v1/acme/source/load/w{t}-{k}.md"),
                        &[pre],
                        content.as_bytes(),
                    );
                    let want = sha256_hex(content.as_bytes());
                    if r.status != 200 {
                        errors.push(format!("write {t}/{i}: {} {}", r.status, r.text()));
                        continue;
                    }
                    let got = r.header("etag").map(|e| e.trim_matches('"').to_string());
                    if got.as_deref() != Some(want.as_str()) {
                        errors.push(format!("write {t}/{i}: etag {got:?} != {want}"));
                    }
                    hashes[k] = got;
                }
                (errors, hashes)
            }));
        }
        let mut errors = vec![];
        for r in readers {
            errors.extend(r.join().unwrap());
        }
        let mut finals = BTreeMap::new();
        for (t, w) in writers.into_iter().enumerate() {
            let (e, hashes) = w.join().unwrap();
            errors.extend(e);
            for (k, h) in hashes.into_iter().enumerate() {
                finals.insert(
                    ("load".to_string(), format!("w{t}-{k}.md")),
                    h.unwrap_or_default(),
                );
            }
        }
        (errors, finals)
    });
    let elapsed = started.elapsed();
    eprintln!(
        "load: {} reads and {} writes in {elapsed:?}",
        READERS * READS,
        WRITERS * WRITES
    );
    assert!(
        errors.is_empty(),
        "{} errors, first: {:?}",
        errors.len(),
        &errors[..errors.len().min(5)]
    );
    let mut want = before;
    want.extend(finals);
    assert_eq!(
        source_list(&d, "/v1/acme", &[]),
        want,
        "the final documents"
    );
    // Every write is its own revision.
    let mut count = 0;
    let mut path = "/v1/acme/history?limit=100".to_string();
    loop {
        let v = d.req("GET", &path, &[], b"").json();
        count += v["revisions"].as_array().unwrap().len();
        match v["next"].as_str() {
            Some(n) => path = format!("/v1/acme/history?limit=100&before={n}"),
            None => break,
        }
    }
    assert_eq!(count, head0 + WRITERS * WRITES, "one revision per write");
    assert!(
        elapsed < Duration::from_secs(120),
        "the load took {elapsed:?}"
    );
}

// ------------------------------------------------------------------------
// 7. sources.json and the folder watcher
// ------------------------------------------------------------------------

#[test]
fn the_watcher_imports_folder_edits_keeps_store_only_documents_and_reports_conflicts() {
    let sb = Sandbox::new();
    let src = sb.path("src");
    copy_tree(&fixture(""), &src);
    sb.write("src/.hidden/secret.md", concept("Secret", "hidden"));
    sb.write("src/top.md", concept("Top", "not in a bundle"));
    let src_s = src.display().to_string();
    sb.write("data/sources.json", json!({"acme": src_s}).to_string());
    let d = sb.serve_socket("s", &["--debounce", "100"]);
    assert_eq!(
        d.stderr(),
        format!(
            "acme: imported 6 written, 0 deleted from {src_s}\nwatching {src_s} for tenant acme\nokfit serving {} on {} (0 tokens, 1 watched tenant)\n",
            sb.data(),
            d.socket().display()
        )
    );
    let list = source_list(&d, "/v1/acme", &[]);
    assert_eq!(list.len(), 6, "{list:?}");
    assert!(
        list.keys().all(|(b, _)| b == "ops" || b == "sales"),
        "{list:?}"
    );
    let manifest = |d: &Daemon| d.req("GET", "/v1/acme/manifest", &[], b"").text();
    let deploy_row = |m: &str| row_of(m, "deploy").map(str::to_string);

    // An edit in the folder shows up.
    let deploy =
        "---\ntype: Runbook\ndescription: How to ship it, edited.\n---\n# Deploy\n\nShip.\n";
    sb.write("src/ops/deploy.md", deploy);
    assert!(
        poll(WATCH, || deploy_row(&manifest(&d))
            .is_some_and(|r| r.contains("How to ship it, edited."))),
        "the edit was not imported; stderr:\n{}",
        d.stderr()
    );
    assert!(d.wait_stderr(
        &format!("acme: imported 1 written, 0 deleted from {src_s}\n"),
        WATCH
    ));

    // A document written through the store only stays.
    let extra = concept("Extra", "store only");
    d.req(
        "PUT",
        "/v1/acme/source/sales/extra.md",
        &[("If-None-Match", "*")],
        extra.as_bytes(),
    )
    .expect_status(200);
    sb.write("src/ops/rollback.md", concept("Rollback", "roll back"));
    assert!(
        poll(WATCH, || row_of(&manifest(&d), "rollback").is_some()),
        "the new file was not imported; stderr:\n{}",
        d.stderr()
    );
    // A new bundle folder becomes a bundle.
    sb.write("src/newb/first.md", concept("First", "in a new bundle"));
    assert!(
        poll(WATCH, || source_list(&d, "/v1/acme", &[])
            .contains_key(&("newb".to_string(), "first.md".to_string()))),
        "the new bundle was not imported; stderr:\n{}",
        d.stderr()
    );
    std::fs::remove_file(sb.path("src/sales/index.md")).unwrap();
    assert!(
        poll(WATCH, || !source_list(&d, "/v1/acme", &[])
            .contains_key(&("sales".to_string(), "index.md".to_string()))),
        "the deleted file was not removed; stderr:\n{}",
        d.stderr()
    );
    assert!(d.wait_stderr(
        &format!("acme: imported 0 written, 1 deleted from {src_s}\n"),
        WATCH
    ));
    let g = d.req("GET", "/v1/acme/source/sales/extra.md", &[], b"");
    g.expect_status(200);
    assert_eq!(g.body, extra.as_bytes(), "the store-only document stayed");

    // Both sides change one file: the store keeps its version, nothing
    // of that sync is imported, stderr names the conflict.
    let list = source_list(&d, "/v1/acme", &[]);
    let cur = format!(
        "\"{}\"",
        list[&("sales".to_string(), "customers.md".to_string())]
    );
    let store_side = concept("Customers", "edited in the store");
    d.req(
        "PUT",
        "/v1/acme/source/sales/customers.md",
        &[("If-Match", cur.as_str())],
        store_side.as_bytes(),
    )
    .expect_status(200);
    sb.write(
        "src/sales/customers.md",
        concept("Customers", "edited in the folder"),
    );
    let deploy2 = "---\ntype: Runbook\ndescription: Edited twice.\n---\n# Deploy\n\nShip.\n";
    sb.write("src/ops/deploy.md", deploy2);
    let conflict = "acme: conflict: sales/customers.md";
    assert!(
        d.wait_stderr(conflict, WATCH),
        "no conflict reported; stderr:\n{}",
        d.stderr()
    );
    let line = d
        .stderr()
        .lines()
        .find(|l| l.starts_with(conflict))
        .unwrap()
        .to_string();
    assert!(line.contains("nothing was imported"), "{line}");
    // Give a wrong import time to happen, then check nothing moved.
    std::thread::sleep(Duration::from_millis(500));
    let g = d.req("GET", "/v1/acme/source/sales/customers.md", &[], b"");
    assert_eq!(g.text(), store_side, "the store keeps its version");
    assert!(
        deploy_row(&manifest(&d)).is_some_and(|r| r.contains("How to ship it, edited.")),
        "nothing of a conflicting sync is imported: {}",
        manifest(&d)
    );

    // The conflict survives a restart (the import baseline is kept).
    let out = restart(&sb, d, &["--debounce", "100"]);
    let (d, start_err) = out;
    assert!(start_err.contains(conflict), "{start_err}");
    let g = d.req("GET", "/v1/acme/source/sales/customers.md", &[], b"");
    assert_eq!(g.text(), store_side);

    // Resolving one side (the folder takes the store's bytes) lets the
    // rest import.
    sb.write("src/sales/customers.md", &store_side);
    assert!(
        poll(WATCH, || deploy_row(&manifest(&d))
            .is_some_and(|r| r.contains("Edited twice."))),
        "the resolved sync did not import; stderr:\n{}",
        d.stderr()
    );
    let g = d.req("GET", "/v1/acme/source/sales/extra.md", &[], b"");
    assert_eq!(g.body, extra.as_bytes(), "the store-only document stayed");
}

/// Stops a daemon with SIGTERM and starts it again with `args`; returns
/// the new daemon and its start-up stderr.
fn restart(sb: &Sandbox, mut d: Daemon, args: &[&str]) -> (Daemon, String) {
    let out = d.signal("TERM");
    out.expect_code(0);
    drop(d);
    let n = sb.serve_socket("s", args);
    let e = n.stderr();
    (n, e)
}

// ------------------------------------------------------------------------
// 8. Graceful shutdown
// ------------------------------------------------------------------------

#[test]
fn sigterm_and_sigint_end_the_daemon_cleanly_and_remove_its_socket() {
    let sb = Sandbox::new();
    sb.acme();
    for sig in ["TERM", "INT"] {
        let mut d = sb.serve_socket("s", &[]);
        let sock = d.socket();
        {
            use std::os::unix::fs::{FileTypeExt, PermissionsExt};
            let meta = std::fs::metadata(&sock).unwrap();
            assert!(meta.file_type().is_socket());
            assert_eq!(meta.permissions().mode() & 0o777, 0o600, "socket mode");
        }
        // A second daemon on the same socket is refused.
        let s = sock.display().to_string();
        let out = sb.serve_refused(&["--socket", &s]);
        assert_ne!(out.code, 0);
        assert!(out.stderr.contains("in use"), "{}", out.stderr);
        // An idle kept-alive connection does not hold the exit up.
        let mut keep = connect(&d.addr);
        send(&mut *keep, "GET", "/v1/acme/snapshot", &[], b"", true);
        let mut buf = [0u8; 4096];
        let n = keep.read(&mut buf).unwrap();
        assert!(
            buf[..n].starts_with(b"HTTP/1.1 200"),
            "{}",
            String::from_utf8_lossy(&buf[..n])
        );
        let out = d.signal(sig);
        assert_eq!(out.code, 0, "SIG{sig}: exit code; stderr:\n{}", out.stderr);
        assert!(out.stdout.is_empty(), "stdout stays clean");
        assert!(
            out.stderr.ends_with(&format!("{SHUTTING_DOWN}\n")),
            "SIG{sig}: {}",
            out.stderr
        );
        assert!(!sock.exists(), "SIG{sig}: the socket file is still there");
        // A client now says the daemon is not running.
        let out = sb.conn(&d.unix_dsn("acme"), &["snapshot"], b"");
        assert_ne!(out.code, 0);
        assert!(
            out.stderr.contains("cannot reach okfit serve at")
                && out.stderr.contains("is it running?"),
            "{}",
            out.stderr
        );
    }
    // A socket left behind by a killed daemon does not block the next one.
    let mut d = sb.serve_socket("s", &[]);
    d.child.kill().unwrap();
    d.child.wait().unwrap();
    assert!(d.socket().exists(), "SIGKILL leaves the socket file");
    let d2 = sb.serve_socket("s", &[]);
    d2.req("GET", "/v1/acme/snapshot", &[], b"")
        .expect_status(200);
}

/// Open files of a process (Linux).
#[cfg(target_os = "linux")]
fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

#[cfg(target_os = "linux")]
#[test]
fn many_tenants_stay_within_the_warm_budget() {
    let sb = Sandbox::new();
    let d = sb.serve_socket("many", &["--warm-tenants", "8"]);
    let dsn = |t: usize| d.unix_dsn(&format!("t{t}"));
    let note = |t: usize| {
        format!("---\ntype: Metric\ntitle: Tenant {t}\ndescription: Only in t{t}.\n---\n\n# Tenant {t}\n\nword{t}x appears here.\n")
    };
    let baseline = open_files(d.pid);
    for t in 0..60 {
        sb.okfit_in(
            &["write", "b", "n.md", "--create", "-c", &dsn(t)],
            note(t).as_bytes(),
        )
        .expect_code(0);
    }
    let mut most = 0;
    for round in 0..2 {
        for t in 0..60 {
            let s = sb
                .okfit(&["search", &format!("word{t}x"), "-c", &dsn(t)])
                .ok();
            assert!(
                s.contains(&format!("Only in t{t}.")),
                "round {round}, t{t}: {s}"
            );
            most = most.max(open_files(d.pid));
        }
    }
    // Eight idle tenants of one SQLite connection or two each, not sixty.
    assert!(
        most <= baseline + 8 * 8,
        "{most} open files with 8 warm tenants (started with {baseline})"
    );
}

// ------------------------------------------------------------------------
// Operations: health, readiness, metrics, request ids
// ------------------------------------------------------------------------

#[test]
fn health_readiness_and_metrics_answer_a_load_balancer() {
    let sb = Sandbox::new();
    sb.acme();
    let reader = sb.mint("acme", false);
    let d = sb.serve_tcp("127.0.0.1", &[]);
    let auth = bearer(&reader);
    let r = [("Authorization", auth.as_str())];
    // Whether the process is up, and ready, needs no token.
    d.req("GET", "/healthz", &[], b"").expect(200, "ok");
    await_ready(&d);
    d.req("GET", "/readyz", &[], b"").expect(200, "ready");
    // Metrics need a token when the daemon has tokens.
    d.req("GET", "/metrics", &[], b"")
        .expect(401, "invalid or missing bearer token");
    // Every answer carries a request id: the client's when it sent one.
    let a = d.req("POST", "/v1/search", &r, br#"{"q": "revenue"}"#);
    a.expect_status(200);
    let id = a.header("x-request-id").expect("a request id");
    assert_eq!((id.len(), id.matches('-').count()), (36, 4), "{id}");
    let b = d.req(
        "GET",
        "/v1/manifest",
        &[r[0], ("x-request-id", "balancer-42")],
        b"",
    );
    assert_eq!(b.header("x-request-id"), Some("balancer-42"));
    d.req("GET", "/no/such/route", &r, b"").expect_status(404);
    // A write by a read-only token is a refused change.
    d.req("PUT", "/v1/source/b/x.md", &r, b"# X\n")
        .expect_status(403);
    let m = d.req("GET", "/metrics", &r, b"");
    m.expect_status(200);
    assert!(
        m.header("content-type")
            .is_some_and(|c| c.starts_with("application/openmetrics-text")),
        "{m:?}"
    );
    let text = m.text();
    for want in [
        r#"okfit_http_requests_total{route="/v1/search",method="POST",status="200"} 1"#,
        r#"okfit_http_requests_total{route="/v1/manifest",method="GET",status="200"} 1"#,
        r#"okfit_http_requests_total{route="other",method="GET",status="404"} 1"#,
        r#"okfit_http_request_duration_seconds_count{route="/v1/search"} 1"#,
        r#"okfit_commits_total{outcome="refused"} 1"#,
        "okfit_warm_tenants 1",
        "# EOF",
    ] {
        assert!(text.contains(want), "missing {want} in\n{text}");
    }
    let documents = text
        .lines()
        .find_map(|l| l.strip_prefix("okfit_read_model_documents "))
        .and_then(|n| n.parse::<u64>().ok());
    assert!(documents.is_some_and(|n| n > 0), "{text}");
    // The warm-up held the tenant's search postings.
    assert!(postings_held(&text).is_some_and(|n| n > 0), "{text}");
    // No tenant is named in a scrape.
    assert!(!text.contains("acme"), "{text}");
}

/// Waits until `/readyz` answers 200 (the warm-up is done).
fn await_ready(d: &Daemon) {
    assert!(
        poll(Duration::from_secs(30), || d
            .req("GET", "/readyz", &[], b"")
            .status
            == 200),
        "never ready: {:?}; {}",
        d.req("GET", "/readyz", &[], b""),
        d.stderr()
    );
}

/// `okfit_search_postings_held` of a scrape.
fn postings_held(scrape: &str) -> Option<u64> {
    scrape
        .lines()
        .find_map(|l| l.strip_prefix("okfit_search_postings_held "))
        .and_then(|n| n.parse().ok())
}

#[test]
fn with_warm_postings_zero_a_search_reads_only_its_own_words() {
    let sb = Sandbox::new();
    sb.acme();
    let reader = sb.mint("acme", false);
    let d = sb.serve_tcp("127.0.0.1", &["--warm-postings", "0"]);
    let auth = bearer(&reader);
    let r = [("Authorization", auth.as_str())];
    await_ready(&d);
    let scrape = || {
        let m = d.req("GET", "/metrics", &r, b"");
        m.expect_status(200);
        m.text()
    };
    assert_eq!(postings_held(&scrape()), Some(0));
    let found = d.req("POST", "/v1/search", &r, br#"{"q": "churned customers"}"#);
    found.expect_status(200);
    assert!(found.text().contains("customers"), "{}", found.text());
    let text = scrape();
    assert!(postings_held(&text).is_some_and(|n| n > 0), "{text}");
}
