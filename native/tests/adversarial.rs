//! The adversarial suite: what a hostile or broken client tries, through
//! the real binaries. Writes through symbolic links (every writer, a race
//! included), malformed and oversized JSON-RPC on stdio, slow and greedy
//! daemon clients, path and tenant-name tricks, connection-string
//! injection, and writers racing through two daemons. Each test asserts
//! that every request is answered, nothing is written outside its root and
//! nothing acknowledged is lost, and prints how many cases it tried.

mod common;

use common::{run, sha256_hex, MCP_HANG};
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::symlink;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

const OKFIT: &str = env!("CARGO_BIN_EXE_okfit");
const OKFIT_MCP: &str = env!("CARGO_BIN_EXE_okfit-mcp");
const HANG: Duration = Duration::from_secs(120);
const DOC: &str = "---\ntype: note\ndescription: A note.\n---\n# Note\n\nText.\n";
const REFUSAL: &str = "okfit does not write through symlinks";

fn tmp() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("okfit-adversarial-")
        .tempdir()
        .unwrap()
}

/// Every entry under `root` without following links: `(path, what)` where
/// `what` is the file's bytes, `dir`, or `-> target` for a link.
fn listing(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().to_string();
            let m = std::fs::symlink_metadata(&p).unwrap();
            if m.file_type().is_symlink() {
                let t = std::fs::read_link(&p).unwrap();
                out.insert(rel, format!("-> {}", t.display()));
            } else if m.is_dir() {
                out.insert(rel.clone(), "dir".into());
                walk(root, &p, out);
            } else {
                let b = std::fs::read(&p).unwrap();
                out.insert(rel, String::from_utf8_lossy(&b).into_owned());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn okfit(args: &[&str], input: Option<&[u8]>) -> common::Out {
    let mut c = Command::new(OKFIT);
    c.args(args).env_remove("OKFIT_DATA");
    run(c, input, HANG)
}

// ------------------------------------------------------------------------
// A raw JSON-RPC line client over a child okfit-mcp
// ------------------------------------------------------------------------

/// A child MCP server spoken to in raw lines, so that any bytes at all can
/// be sent.
struct Raw {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
}

impl Drop for Raw {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Raw {
    fn start(mut cmd: Command) -> Raw {
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        let mut child = cmd.spawn().expect("spawn the MCP server");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        let mut raw = Raw {
            child,
            stdin,
            lines: rx,
        };
        raw.send(
            json!({"jsonrpc": "2.0", "id": "init", "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {},
                "clientInfo": {"name": "adversary", "version": "1"}}})
            .to_string()
            .as_bytes(),
        );
        assert_eq!(raw.recv()["id"], "init");
        raw.send(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
        raw
    }

    fn mcp(args: &[&str]) -> Raw {
        let mut c = Command::new(OKFIT_MCP);
        c.args(args).env_remove("OKFIT_DATA");
        Raw::start(c)
    }

    fn send(&mut self, line: &[u8]) {
        let w = self.stdin.as_mut().unwrap();
        w.write_all(line).unwrap();
        w.write_all(b"\n").unwrap();
        w.flush().unwrap();
    }

    /// The next message from the server (failing when none comes).
    fn recv(&mut self) -> Value {
        let line = self
            .lines
            .recv_timeout(MCP_HANG)
            .expect("the server sent no answer: a request went unanswered");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
    }

    /// The next response (skipping notifications).
    fn response(&mut self) -> Value {
        loop {
            let v = self.recv();
            if v.get("id").is_some() {
                return v;
            }
        }
    }

    /// Sends one request and returns its one answer.
    fn ask(&mut self, line: &[u8]) -> Value {
        self.send(line);
        self.response()
    }

    fn call(&mut self, id: i64, tool: &str, args: Value) -> Value {
        self.ask(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                   "params": {"name": tool, "arguments": args}})
            .to_string()
            .as_bytes(),
        )
    }

    fn vm(&self, key: &str) -> u64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        s.lines()
            .find(|l| l.starts_with(key))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|n| n.parse().ok())
            .unwrap()
    }
}

/// `(isError, text)` of a tools/call result.
#[track_caller]
fn tool_text(v: &Value) -> (bool, String) {
    let r = &v["result"];
    assert!(r.is_object(), "a tool result, got {v}");
    (
        r["isError"] == json!(true),
        r["content"][0]["text"].as_str().unwrap_or("").to_string(),
    )
}

// ------------------------------------------------------------------------
// 1. No write leaves its root
// ------------------------------------------------------------------------

/// A bundle folder `notes` with links out of it, beside `outside`.
struct Trap {
    _dir: tempfile::TempDir,
    root: PathBuf,
    notes: PathBuf,
    outside: PathBuf,
}

impl Trap {
    fn new(bundle: &str) -> Trap {
        let dir = tmp();
        let root = std::fs::canonicalize(dir.path()).unwrap();
        let notes = root.join(bundle);
        let outside = root.join("outside");
        std::fs::create_dir_all(notes.join("deep/a")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("victim.md"), DOC).unwrap();
        std::fs::write(notes.join("real.md"), DOC).unwrap();
        std::fs::write(notes.join("deep/a/inside.md"), DOC).unwrap();
        symlink(&outside, notes.join("link")).unwrap();
        symlink(&outside, notes.join("deep/a/link")).unwrap();
        symlink(outside.join("victim.md"), notes.join("file.md")).unwrap();
        symlink(notes.join("real.md"), notes.join("inner.md")).unwrap();
        symlink(outside.join("new.md"), notes.join("dangling.md")).unwrap();
        symlink("real.md", notes.join("relative.md")).unwrap();
        Trap {
            _dir: dir,
            root,
            notes,
            outside,
        }
    }

    fn snapshot(&self) -> BTreeMap<String, String> {
        listing(&self.root)
    }
}

/// `(tool, arguments, the link on the way)` that each pass through a link
/// in a [`Trap`].
fn link_writes(bundle: &str) -> Vec<(&'static str, Value, &'static str)> {
    let victim = sha256_hex(DOC.as_bytes());
    // (tool, path, replaces the victim's hash, link)
    let cases = [
        ("write", "link/evil.md", false, "link"),
        ("write", "link/victim.md", true, "link"),
        ("write", "link/sub/evil.md", false, "link"),
        ("write", "deep/a/link/evil.md", false, "deep/a/link"),
        ("write", "file.md", true, "file.md"),
        ("write", "inner.md", true, "inner.md"),
        ("write", "relative.md", true, "relative.md"),
        ("write", "dangling.md", false, "dangling.md"),
        ("delete", "link/victim.md", true, "link"),
        ("delete", "file.md", true, "file.md"),
        ("delete", "deep/a/link/victim.md", true, "deep/a/link"),
        ("delete", "dangling.md", true, "dangling.md"),
    ];
    cases
        .into_iter()
        .map(|(tool, path, replaces, link)| {
            let mut args = json!({"bundle": bundle, "path": path});
            if tool == "write" {
                args["content"] = json!(DOC);
            }
            if replaces {
                args["replaces"] = json!(victim);
            }
            (tool, args, link)
        })
        .collect()
}

/// Sends every [`link_writes`] call and asserts each is refused, naming the
/// path and the link; returns how many were sent.
fn refuse_link_writes(s: &mut Raw, bundle: &str) -> usize {
    let writes = link_writes(bundle);
    for (i, (tool, args, link)) in writes.iter().enumerate() {
        let path = args["path"].as_str().unwrap().to_string();
        let a = s.call(i as i64 + 1, tool, args.clone());
        assert_eq!(a["id"], i as i64 + 1);
        assert_refused(&format!("{tool} {path}"), &a, bundle, &path, link);
    }
    writes.len()
}

fn assert_refused(what: &str, answer: &Value, bundle: &str, path: &str, link: &str) {
    let (is_error, text) = tool_text(answer);
    assert!(is_error, "{what}: must be refused, got {answer}");
    assert!(
        text.contains(REFUSAL) && text.contains(&format!("\"{bundle}/{path}\"")) && text.contains(&format!("\"{link}\"")),
        "{what}: the refusal names the path and the link and says okfit does not write through symlinks: {text}"
    );
}

#[test]
fn folder_connection_writes_never_pass_through_a_symlink() {
    let t = Trap::new("notes");
    let before = t.snapshot();
    let mut s = Raw::mcp(&[&format!("okf://{}", t.notes.display())]);
    let cases = refuse_link_writes(&mut s, "notes");
    assert_eq!(
        t.snapshot(),
        before,
        "nothing was created, changed or removed anywhere"
    );
    // An ordinary write beside the links still works.
    let ok = s.call(
        99,
        "write",
        json!({"bundle": "notes", "path": "deep/a/fine.md", "content": DOC}),
    );
    assert!(!tool_text(&ok).0, "{ok}");
    assert!(t.notes.join("deep/a/fine.md").is_file());
    eprintln!("folder connection: {cases} link writes refused");
}

#[test]
fn project_mode_writes_never_pass_through_a_symlink() {
    let t = Trap::new("okf");
    std::fs::write(t.root.join("okfit.toml"), "[bundle]\nprofile = \"none\"\n").unwrap();
    let before = t.snapshot();
    let mut c = Command::new(OKFIT_MCP);
    c.args(["--tools", "write,delete,manifest"])
        .env("OKFIT_PROJECT_DIR", &t.root)
        .env_remove("CLAUDE_PROJECT_DIR");
    let mut s = Raw::start(c);
    let cases = refuse_link_writes(&mut s, "okf");
    assert_eq!(t.snapshot(), before);
    eprintln!("project mode: {cases} link writes refused");
}

#[test]
fn cli_writes_deletes_and_exports_never_pass_through_a_symlink() {
    let t = Trap::new("notes");
    let before = t.snapshot();
    let dsn = format!("okf://{}", t.notes.display());
    let victim = sha256_hex(DOC.as_bytes());
    let mut cases = 0;
    for (path, how) in [
        ("link/evil.md", vec!["--create"]),
        ("deep/a/link/evil.md", vec!["--create"]),
        ("file.md", vec!["--force"]),
        ("inner.md", vec!["--replaces", victim.as_str()]),
        ("dangling.md", vec!["--force"]),
    ] {
        let mut a = vec!["write", "notes", path];
        a.extend(how.iter().copied());
        a.extend(["-c", dsn.as_str()]);
        let o = okfit(&a, Some(DOC.as_bytes()));
        o.expect_code(1);
        assert!(o.stderr.contains(REFUSAL), "write {path}: {}", o.stderr);
        cases += 1;
    }
    for path in ["link/victim.md", "file.md", "deep/a/link/victim.md"] {
        let o = okfit(&["delete", "notes", path, "--force", "-c", &dsn], None);
        o.expect_code(1);
        assert!(o.stderr.contains(REFUSAL), "delete {path}: {}", o.stderr);
        cases += 1;
    }
    assert_eq!(t.snapshot(), before);

    // export: into a path that is a link, or exists, is refused.
    let data = t.root.join("data");
    okfit(
        &[
            "write",
            "b",
            "a.md",
            "--create",
            "-c",
            &format!("okf://{}?tenant=acme", data.display()),
        ],
        Some(DOC.as_bytes()),
    )
    .expect_code(0);
    let store = format!("okf://{}?tenant=acme", data.display());
    symlink(&t.outside, t.root.join("exported-link")).unwrap();
    let o = okfit(
        &[
            "export",
            t.root.join("exported-link").to_str().unwrap(),
            "-c",
            &store,
        ],
        None,
    );
    assert_ne!(o.code, 0, "export into a link is refused");
    cases += 1;
    let o = okfit(
        &[
            "export",
            t.root.join("fresh").to_str().unwrap(),
            "-c",
            &store,
        ],
        None,
    );
    o.expect_code(0);
    assert_eq!(
        std::fs::read_to_string(t.root.join("fresh/b/a.md")).unwrap(),
        DOC
    );
    assert_eq!(listing(&t.outside).len(), 1, "outside holds only victim.md");
    eprintln!("cli: {cases} link writes refused");
}

#[test]
fn store_tenant_folders_are_never_reached_through_a_symlink() {
    let dir = tmp();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let outside = root.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let mut cases = 0;
    // tenants/<t> is a link.
    let d1 = root.join("d1");
    std::fs::create_dir_all(d1.join("tenants")).unwrap();
    symlink(&outside, d1.join("tenants/acme")).unwrap();
    // tenants itself is a link.
    let d2 = root.join("d2");
    std::fs::create_dir_all(&d2).unwrap();
    symlink(&outside, d2.join("tenants")).unwrap();
    // The database file is a link.
    let d3 = root.join("d3");
    std::fs::create_dir_all(d3.join("tenants/acme")).unwrap();
    symlink(
        outside.join("okfit.sqlite"),
        d3.join("tenants/acme/okfit.sqlite"),
    )
    .unwrap();
    for d in [&d1, &d2, &d3] {
        let dsn = format!("okf://{}?tenant=acme", d.display());
        let o = okfit(
            &["write", "b", "a.md", "--create", "-c", &dsn],
            Some(DOC.as_bytes()),
        );
        assert_ne!(o.code, 0, "{}: {}", d.display(), o.stderr);
        let o = okfit(
            &[
                "put",
                outside.to_str().unwrap(),
                "--bundle",
                "b",
                "-c",
                &dsn,
            ],
            None,
        );
        assert_ne!(o.code, 0, "{}: {}", d.display(), o.stderr);
        cases += 2;
    }
    assert!(
        listing(&outside).is_empty(),
        "nothing was created outside: {:?}",
        listing(&outside)
    );
    eprintln!("store: {cases} link writes refused");
}

#[test]
fn a_directory_swapped_for_a_symlink_mid_write_never_lets_a_write_out() {
    let t = Trap::new("notes");
    let sub = t.notes.join("sub");
    let parked = t.root.join("parked");
    std::fs::create_dir_all(&sub).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let (sub, parked, outside, stop) =
            (sub.clone(), parked.clone(), t.outside.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut swaps = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                // The real folder goes away and a link to outside takes its
                // place, then back again.
                if std::fs::rename(&sub, &parked).is_ok() {
                    let _ = symlink(&outside, &sub);
                    std::thread::yield_now();
                    let _ = std::fs::remove_file(&sub);
                    let _ = std::fs::rename(&parked, &sub);
                    swaps += 1;
                }
            }
            swaps
        })
    };
    let kb = okfit_knowledge::kb::Knowledge::open(&format!("okf://{}", t.notes.display())).unwrap();
    let (mut wrote, mut refused) = (0, 0);
    for i in 0..400 {
        let c = okfit_store::change::Change {
            bundle: "notes".into(),
            path: format!("sub/n{i}.md"),
            content: Some(DOC.as_bytes().to_vec()),
            pre: okfit_store::change::Pre::Any,
        };
        match kb.commit(vec![c], None) {
            Ok(_) => wrote += 1,
            Err(_) => refused += 1,
        }
        assert!(
            listing(&t.outside).keys().all(|k| k == "victim.md"),
            "write {i} escaped: {:?}",
            listing(&t.outside)
        );
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert_eq!(listing(&t.outside).len(), 1, "only victim.md is outside");
    eprintln!(
        "race: 400 writes ({wrote} written, {refused} refused) against {swaps} swaps; none escaped"
    );
}

// ------------------------------------------------------------------------
// 2. Every JSON-RPC request gets exactly one answer with its id
// ------------------------------------------------------------------------

fn store_dir() -> (tempfile::TempDir, String) {
    let d = tmp();
    let dsn = format!(
        "okf://{}?tenant=acme",
        std::fs::canonicalize(d.path()).unwrap().display()
    );
    (d, dsn)
}

/// `(line, expected id, expected error code or None for a result)`.
fn hostile_requests() -> Vec<(Vec<u8>, Value, Option<i64>)> {
    let call = |id: Value, tool: &str, args: Value| -> Vec<u8> {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": tool, "arguments": args}})
            .to_string()
            .into_bytes()
    };
    // Lone surrogates, as JSON text can carry them.
    let mut v: Vec<(Vec<u8>, Value, Option<i64>)> = vec![
        (br#"{"jsonrpc":"2.0","id":900001,"method":"tools/call","params":{"name":"write","arguments":{"bundle":"b","path":"a.md","content":"bad \ud800 surrogate"}}}"#.to_vec(), json!(900001), Some(-32602)),
        (br#"{"jsonrpc":"2.0","id":"lo","method":"tools/call","params":{"name":"write","arguments":{"bundle":"b","path":"a.md","content":"x \udc00"}}}"#.to_vec(), json!("lo"), Some(-32602)),
        (br#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"transact","arguments":{"changes":[{"bundle":"b","path":"a.md","content":"\ud83d"}]}}}"#.to_vec(), json!(3), Some(-32602)),
        (br#"{"params":{"name":"search","arguments":{"query":"\ud800\ud800"}},"method":"tools/call","jsonrpc":"2.0","id":4}"#.to_vec(), json!(4), Some(-32602)),
    ];
    // Over the size limit.
    let mut big = br#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"transact","arguments":{"changes":[{"bundle":"b","path":"a.md","content":""#.to_vec();
    big.extend(std::iter::repeat_n(b'a', 17 * 1024 * 1024));
    big.extend_from_slice(br#""}]}}}"#);
    v.push((big, json!(5), Some(-32600)));
    // The id after the oversized part.
    let mut tail = br#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"write","arguments":{"bundle":"b","path":"a.md","content":""#.to_vec();
    tail.extend(std::iter::repeat_n(b'z', 18 * 1024 * 1024));
    tail.extend_from_slice(br#""}},"id":"after"}"#);
    v.push((tail, json!("after"), Some(-32600)));
    // Nested 100,000 levels deep.
    let mut deep = br#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"get","arguments":{"ids":"#.to_vec();
    deep.extend(std::iter::repeat_n(b'[', 100_000));
    deep.extend(std::iter::repeat_n(b']', 100_000));
    deep.extend_from_slice(b"}}}");
    v.push((deep, json!(6), Some(-32600)));
    // A 10 MB array of ids for get.
    let ids: Vec<String> = (0..900_000).map(|i| format!("id{i}")).collect();
    v.push((
        call(json!(7), "get", json!({"ids": ids})),
        json!(7),
        Some(-32602),
    ));
    // Numbers where strings belong, and out-of-range numbers.
    v.push((
        call(
            json!(8),
            "search",
            json!({"query": "x", "k": 1_000_000_000_000u64}),
        ),
        json!(8),
        Some(-32602),
    ));
    v.push((
        call(json!(9), "search", json!({"query": 5})),
        json!(9),
        Some(-32602),
    ));
    v.push((
        call(json!(10), "get", json!({"ids": [1, 2]})),
        json!(10),
        Some(-32602),
    ));
    v.push((
        call(
            json!(11),
            "write",
            json!({"bundle": 5, "path": "a.md", "content": "x"}),
        ),
        json!(11),
        Some(-32602),
    ));
    v.push((
        call(
            json!(12),
            "write",
            json!({"bundle": "b", "path": "a.md", "content": 5}),
        ),
        json!(12),
        Some(-32602),
    ));
    v.push((
        call(
            json!(13),
            "write",
            json!({"bundle": "b", "path": "a.md", "content": "x", "replaces": 5}),
        ),
        json!(13),
        Some(-32602),
    ));
    v.push((
        call(json!(14), "get", json!({"ids": ["a"], "offset": -1})),
        json!(14),
        Some(-32602),
    ));
    v.push((
        call(json!(15), "get", json!({"ids": ["a"], "limit": 1e300})),
        json!(15),
        Some(-32602),
    ));
    v.push((
        call(json!(16), "transact", json!({"changes": "all"})),
        json!(16),
        Some(-32602),
    ));
    v.push((call(json!(17), "nope", json!({})), json!(17), Some(-32602)));
    v.push((
        br#"{"jsonrpc":"2.0","id":18,"method":"tools/call","params":{"name":5}}"#.to_vec(),
        json!(18),
        Some(-32602),
    ));
    v.push((
        br#"{"jsonrpc":"2.0","id":19,"method":"tools/call","params":"write"}"#.to_vec(),
        json!(19),
        Some(-32602),
    ));
    v.push((
        br#"{"jsonrpc":"2.0","id":20,"method":5}"#.to_vec(),
        json!(20),
        Some(-32600),
    ));
    v.push((
        br#"{"jsonrpc":"2.0","id":21}"#.to_vec(),
        json!(21),
        Some(-32600),
    ));
    v.push((
        br#"{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"get""#.to_vec(),
        json!(22),
        Some(-32700),
    ));
    v.push((
        b"{\"jsonrpc\":\"2.0\",\"id\":23,\"method\":\"ping\",\"x\":\"\xff\xfe\"}".to_vec(),
        json!(23),
        Some(-32700),
    ));
    v.push((
        br#"{"jsonrpc":"2.0","id":"24","method":"resources/read","params":{"uri":7}}"#.to_vec(),
        json!("24"),
        Some(-32602),
    ));
    v.push((
        br#"{"jsonrpc":"2.0","id":25,"method":"no/such/method"}"#.to_vec(),
        json!(25),
        Some(-32601),
    ));
    // Nothing to recover an id from: id null.
    v.push((b"this is not json".to_vec(), Value::Null, Some(-32700)));
    v.push((b"[1,2,3]".to_vec(), Value::Null, Some(-32600)));
    v.push((
        br#"{"jsonrpc":"2.0","id":{"obj":1},"method":"ping""#.to_vec(),
        Value::Null,
        Some(-32700),
    ));
    v
}

#[test]
fn every_hostile_request_on_stdio_gets_one_answer_with_its_id() {
    let (_d, dsn) = store_dir();
    let mut s = Raw::mcp(&[&dsn, "--database-tools"]);
    let mut cases = 0;
    for (line, id, code) in hostile_requests() {
        let shown = String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned();
        let a = s.ask(&line);
        assert_eq!(a["id"], id, "{shown}: answered with its id: {a}");
        match code {
            Some(c) => {
                let got = a["error"]["code"].as_i64().or_else(|| {
                    // A tool error for a request that reached the tool.
                    (a["result"]["isError"] == json!(true)).then_some(-32602)
                });
                assert_eq!(got, Some(c), "{shown}: {a}");
                let msg = a["error"]["message"].as_str().unwrap_or_default();
                assert!(
                    !msg.is_empty() || a["result"].is_object(),
                    "{shown}: a message: {a}"
                );
            }
            None => assert!(a.get("result").is_some() || a.get("error").is_some(), "{a}"),
        }
        cases += 1;
    }
    // The limit and the argument are named.
    let a = s.ask(hostile_requests()[0].0.as_slice());
    let msg = a["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("argument content is not valid Unicode"),
        "{msg}"
    );
    let a = s.ask(&hostile_requests()[7].0);
    let msg = a["error"]["message"].as_str().unwrap();
    assert!(
        msg.contains("900000") || msg.contains("maximum") || msg.contains("more than 1000"),
        "{msg}"
    );
    let a = s.ask(hostile_requests()[4].0.as_slice());
    let msg = a["error"]["message"].as_str().unwrap();
    assert!(msg.contains("at most 17,825,792 bytes"), "{msg}");
    // Nothing was written, and the server still serves.
    let snap = s.call(100, "snapshot", json!({}));
    let (_, text) = tool_text(&snap);
    assert!(
        text.contains("no tenant") || text.contains(" 0 concepts"),
        "{text}"
    );
    let ok = s.call(
        101,
        "write",
        json!({"bundle": "b", "path": "a.md", "content": DOC}),
    );
    assert!(!tool_text(&ok).0, "{ok}");
    // Exactly one answer each: nothing else is waiting.
    s.send(br#"{"jsonrpc":"2.0","id":"last","method":"ping"}"#);
    assert_eq!(
        s.response()["id"],
        "last",
        "no stray answer came before the last one"
    );
    eprintln!("stdio: {cases} hostile requests, each answered once with its id");
}

#[test]
fn a_gigabyte_line_is_answered_without_being_held() {
    let (_d, dsn) = store_dir();
    let mut s = Raw::mcp(&[&dsn]);
    let _ = s.call(1, "snapshot", json!({}));
    std::thread::sleep(Duration::from_millis(200));
    let idle = s.vm("VmRSS:");
    let w = s.stdin.as_mut().unwrap();
    w.write_all(br#"{"jsonrpc":"2.0","id":"huge","method":"tools/call","params":{"name":"get","arguments":{"ids":[""#).unwrap();
    let chunk = vec![b'z'; 1 << 20];
    for _ in 0..1024 {
        w.write_all(&chunk).unwrap();
    }
    w.write_all(b"\"]}}}\n").unwrap();
    w.flush().unwrap();
    let a = s.response();
    assert_eq!(a["id"], "huge");
    assert_eq!(a["error"]["code"], -32600, "{a}");
    let peak = s.vm("VmHWM:");
    assert!(
        peak < idle + 100 * 1024,
        "a 1 GiB line grew the server from {idle} kB to a peak of {peak} kB"
    );
    assert_eq!(
        s.ask(br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#)["id"],
        2
    );
    eprintln!("1 GiB line: idle {idle} kB, peak {peak} kB");
}

// ------------------------------------------------------------------------
// 3. Path, tenant and connection-string tricks
// ------------------------------------------------------------------------

#[test]
fn path_tricks_are_refused_and_write_nothing() {
    let (d, dsn) = store_dir();
    let t = Trap::new("notes");
    let before = t.snapshot();
    let mut cases = 0;
    let tricks = [
        "../escape.md",
        "a/../../escape.md",
        "/etc/escape.md",
        "a\\..\\escape.md",
        "a\u{0}.md",
        "\u{ff41}.md",     // fullwidth a
        "a\u{2215}b.md",   // division slash
        "a\u{2024}md",     // one dot leader
        "a/\u{2025}/b.md", // two dot leader
        ".hidden.md",
        "a/./b.md",
        "a//b.md",
        "",
        "a.md\n",
        "a.MD/",
        "con.md/x.md",
    ];
    for (store, target) in [
        (true, dsn.clone()),
        (false, format!("okf://{}", t.notes.display())),
    ] {
        let mut s = Raw::mcp(&[&target]);
        for (i, p) in tricks.iter().enumerate() {
            let bundle = if store { "b" } else { "notes" };
            let a = s.call(
                i as i64,
                "write",
                json!({"bundle": bundle, "path": p, "content": DOC}),
            );
            assert_eq!(a["id"], i as i64);
            let refused = a.get("error").is_some() || tool_text(&a).0;
            // con.md/x.md is an ordinary name on this system.
            if *p != "con.md/x.md" {
                assert!(refused, "path {p:?} must be refused: {a}");
            }
            cases += 1;
        }
        // Case-folding clashes in one transaction are refused.
        if store {
            let mut s = Raw::mcp(&[&dsn, "--database-tools"]);
            let a = s.call(
                50,
                "transact",
                json!({"changes": [
                {"operation": "write", "bundle": "b", "path": "Readme.md", "content": DOC},
                {"operation": "write", "bundle": "b", "path": "readme.md", "content": DOC}]}),
            );
            assert!(tool_text(&a).0, "{a}");
            cases += 1;
            let a = s.call(
                51,
                "transact",
                json!({"changes": [
                {"operation": "write", "bundle": "B", "path": "x.md", "content": DOC},
                {"operation": "write", "bundle": "b", "path": "X.md", "content": DOC}]}),
            );
            assert!(tool_text(&a).0, "{a}");
            cases += 1;
        }
    }
    let after = t.snapshot();
    let new: Vec<_> = after.keys().filter(|k| !before.contains_key(*k)).collect();
    assert!(
        new.iter().all(|k| k.starts_with("notes/con.md")),
        "only con.md/x.md was written: {new:?}"
    );
    assert!(!d.path().join("escape.md").exists());
    assert!(!t.root.join("escape.md").exists());
    eprintln!("paths: {cases} tricks tried");
}

#[test]
fn tenant_names_and_connection_strings_cannot_be_injected() {
    let dir = tmp();
    let root = std::fs::canonicalize(dir.path()).unwrap();
    let data = root.join("data");
    std::fs::create_dir_all(&data).unwrap();
    let r = root.display();
    let refused = [
        format!("okf://{r}/data?tenant=a&tenant=b"),
        format!("okf://{r}/data?tenant=a%26tenant%3Db"),
        format!("okf://{r}/data?tenant=..%2Fx"),
        format!("okf://{r}/data?tenant=..\\x"),
        format!("okf://{r}/data?tenant=a%2Fb"),
        format!("okf://{r}/data?tenant=."),
        format!("okf://{r}/data?tenant=%00"),
        format!("okf://{r}/data?tenant=-a"),
        format!("okf://{r}/data?tenant=_a"),
        format!("okf://{r}/data?tenant=\u{ff41}"),
        format!("okf://{r}/data?tenant={}", "a".repeat(65)),
        format!("okf://{r}/data?tenant=a&x=1"),
        format!("okf://{r}/data?tenant=a&tenant="),
        format!("okf://{r}/data%2F..%2F..%2Fetc?tenant=a"),
        format!("okf://{r}/data/%2e%2e/escape?tenant=a"),
        format!("okf://{r}/data%00x?tenant=a"),
        "okf://data?tenant=a".to_string(),
        "okf+unix:///tmp/none.sock?tenant=a&tenant=b".to_string(),
        "okf+http://127.0.0.1:1?token=a&token=b".to_string(),
        "okf:relative?tenant=a".to_string(),
        "ftp://host/x?tenant=a".to_string(),
    ];
    let mut cases = 0;
    for dsn in &refused {
        let o = okfit(
            &["write", "b", "a.md", "--create", "-c", dsn],
            Some(DOC.as_bytes()),
        );
        assert_ne!(o.code, 0, "{dsn} must be refused: {}", o.stderr);
        assert_eq!(
            o.stderr.lines().count(),
            1,
            "one line on stderr: {}",
            o.stderr
        );
        cases += 1;
    }
    // A refusal never echoes a token.
    let o = okfit(
        &[
            "snapshot",
            "-c",
            "okf+http://127.0.0.1:1/?token=s3cret-token&x=1",
        ],
        None,
    );
    assert_ne!(o.code, 0);
    assert!(!o.stderr.contains("s3cret"), "{}", o.stderr);
    cases += 1;
    assert!(
        listing(&root).keys().all(|k| k == "data"),
        "nothing was created: {:?}",
        listing(&root)
    );
    eprintln!("connection strings: {cases} tricks refused");
}

// ------------------------------------------------------------------------
// 4. The daemon against slow, greedy and racing clients
// ------------------------------------------------------------------------

struct Served {
    child: Child,
    socket: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(data: &Path, socket: &Path, extra: &[&str]) -> Served {
    let mut c = Command::new(OKFIT);
    c.args([
        "serve",
        "--data",
        data.to_str().unwrap(),
        "--socket",
        socket.to_str().unwrap(),
    ])
    .args(extra)
    .stdin(Stdio::null())
    .stdout(Stdio::null())
    .stderr(Stdio::null());
    let child = c.spawn().unwrap();
    let deadline = Instant::now() + HANG;
    while UnixStream::connect(socket).is_err() {
        assert!(Instant::now() < deadline, "okfit serve did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    Served {
        child,
        socket: socket.to_path_buf(),
    }
}

/// One HTTP/1.1 request on a new connection; the status code.
fn status(socket: &Path, path: &str, auth: Option<&str>) -> u16 {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(HANG)).unwrap();
    let auth = auth
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: okfit\r\n{auth}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    let _ = s.read_to_string(&mut out);
    out.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0)
}

#[test]
fn the_daemon_closes_slow_clients_caps_connections_and_serves_the_rest() {
    let dir = tmp();
    let data = dir.path().join("data");
    let d = serve(
        &data,
        &dir.path().join("s.sock"),
        &["--max-connections", "3"],
    );
    okfit(
        &[
            "write",
            "b",
            "a.md",
            "--create",
            "-c",
            &format!("okf+unix://{}?tenant=acme", d.socket.display()),
        ],
        Some(DOC.as_bytes()),
    )
    .expect_code(0);
    // A client sending its headers a byte a second is cut off.
    let slow = {
        let socket = d.socket.clone();
        std::thread::spawn(move || {
            let mut s = UnixStream::connect(&socket).unwrap();
            let t = Instant::now();
            for b in b"GET /v1/acme/snapshot HTTP/1.1\r\nHost: okfit\r\n\r\n" {
                if s.write_all(&[*b]).is_err() {
                    break;
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            let mut buf = [0u8; 64];
            let _ = s.set_read_timeout(Some(HANG));
            let n = s.read(&mut buf).unwrap_or(0);
            (t.elapsed(), n)
        })
    };
    // Meanwhile others are served.
    for _ in 0..5 {
        assert_eq!(status(&d.socket, "/v1/acme/snapshot", None), 200);
        std::thread::sleep(Duration::from_millis(300));
    }
    let (took, n) = slow.join().unwrap();
    assert_eq!(n, 0, "the slow client got no response, only a close");
    assert!(
        took < Duration::from_secs(40),
        "closed after the header timeout ({took:?}), before the request was complete"
    );

    // Over the cap a new connection waits; the ones open are unaffected.
    let mut held: Vec<UnixStream> = (0..3)
        .map(|_| {
            let mut s = UnixStream::connect(&d.socket).unwrap();
            s.write_all(b"GET /v1/acme/snapshot HTTP/1.1\r\nHost: okfit\r\n")
                .unwrap();
            s
        })
        .collect();
    std::thread::sleep(Duration::from_millis(300));
    let waiting = {
        let socket = d.socket.clone();
        std::thread::spawn(move || status(&socket, "/v1/acme/snapshot", None))
    };
    std::thread::sleep(Duration::from_millis(500));
    assert!(
        !waiting.is_finished(),
        "the fourth connection waits while three are open"
    );
    // An open connection finishes its request normally.
    let mut first = held.remove(0);
    first.write_all(b"Connection: close\r\n\r\n").unwrap();
    first.set_read_timeout(Some(HANG)).unwrap();
    let mut out = String::new();
    let _ = first.read_to_string(&mut out);
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    drop(first);
    assert_eq!(waiting.join().unwrap(), 200, "served once a slot was free");
    drop(held);
    eprintln!("daemon: slow client closed after {took:?}; cap of 3 held");
}

#[test]
fn tokens_are_matched_whole_and_tenants_cannot_be_reached_sideways() {
    let dir = tmp();
    let data = dir.path().join("data");
    let a = okfit(
        &[
            "token",
            "--data",
            data.to_str().unwrap(),
            "--tenant",
            "a",
            "--write",
        ],
        None,
    )
    .ok();
    let a = a.trim().to_string();
    okfit(
        &["token", "--data", data.to_str().unwrap(), "--tenant", "b"],
        None,
    )
    .expect_code(0);
    for t in ["a", "b"] {
        let dsn = format!("okf://{}?tenant={t}", data.display());
        okfit(
            &["write", "x", "x.md", "--create", "-c", &dsn],
            Some(DOC.as_bytes()),
        )
        .expect_code(0);
    }
    let d = serve(&data, &dir.path().join("s.sock"), &[]);
    let mut cases = 0;
    let mut near = a.clone();
    near.replace_range(63..64, if a.ends_with('0') { "1" } else { "0" });
    for (path, token, want) in [
        ("/v1/a/snapshot", Some(a.as_str()), 200),
        ("/v1/a/snapshot", Some(near.as_str()), 401),
        ("/v1/a/snapshot", Some(&a[..63]), 401),
        ("/v1/a/snapshot", Some(&*format!("{a}0")), 401),
        ("/v1/a/snapshot", Some(&*a.to_uppercase()), 401),
        ("/v1/a/snapshot", Some(""), 401),
        ("/v1/a/snapshot", None, 401),
        ("/v1/b/snapshot", Some(a.as_str()), 403),
        ("/v1/..%2Fb/snapshot", Some(a.as_str()), 403),
        ("/v1/a%2F..%2Fb/snapshot", Some(a.as_str()), 403),
        ("/v1/%2e%2e/snapshot", Some(a.as_str()), 403),
        ("/v1/A/snapshot", Some(a.as_str()), 403),
    ] {
        let got = status(&d.socket, path, token);
        assert_eq!(got, want, "{path} with {token:?}");
        cases += 1;
    }
    eprintln!("tokens and tenants: {cases} requests");
}

#[test]
fn writers_racing_through_two_daemons_get_one_success_each_round() {
    let dir = tmp();
    let data = dir.path().join("data");
    std::fs::create_dir_all(&data).unwrap();
    let d1 = serve(&data, &dir.path().join("one.sock"), &[]);
    let d2 = serve(&data, &dir.path().join("two.sock"), &[]);
    let dsn = |d: &Served| format!("okf+unix://{}?tenant=acme", d.socket.display());
    okfit(
        &["write", "b", "a.md", "--create", "-c", &dsn(&d1)],
        Some(DOC.as_bytes()),
    )
    .expect_code(0);
    let mut hash = sha256_hex(DOC.as_bytes());
    let rounds = 40;
    for round in 0..rounds {
        let racers: Vec<_> = [dsn(&d1), dsn(&d2)]
            .into_iter()
            .enumerate()
            .map(|(i, dsn)| {
                let h = hash.clone();
                let body = format!("{DOC}\nround {round} by {i}\n");
                std::thread::spawn(move || {
                    let o = okfit(
                        &["write", "b", "a.md", "--replaces", &h, "-c", &dsn],
                        Some(body.as_bytes()),
                    );
                    (o.code, body)
                })
            })
            .collect();
        let results: Vec<(i32, String)> = racers.into_iter().map(|t| t.join().unwrap()).collect();
        let winners: Vec<&String> = results
            .iter()
            .filter(|(c, _)| *c == 0)
            .map(|(_, b)| b)
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one writer wins: {results:?}"
        );
        hash = sha256_hex(winners[0].as_bytes());
        // Both daemons now serve the winner's bytes.
        for d in [&d1, &d2] {
            let got = okfit(&["get", "a", "-c", &dsn(d)], None).ok();
            let line = winners[0].trim_end().lines().last().unwrap();
            assert!(got.contains(line), "round {round}: {got}");
        }
    }
    let h = okfit(
        &[
            "history",
            "--limit",
            "100",
            "-c",
            &format!("okf://{}?tenant=acme", data.display()),
        ],
        None,
    )
    .json();
    assert_eq!(
        h["revisions"].as_array().map(Vec::len),
        Some(rounds + 1),
        "every acknowledged write is a revision: {h}"
    );
    okfit(
        &[
            "verify",
            "-c",
            &format!("okf://{}?tenant=acme", data.display()),
        ],
        None,
    )
    .expect_code(0);
    eprintln!("two daemons: {rounds} rounds, one winner each, nothing lost");
}
