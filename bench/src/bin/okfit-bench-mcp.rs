//! `okfit-bench-mcp`: measures the MCP server (`okfit-mcp`, release build).
//!
//! From the workspace root: `cargo run --release -p okfit-bench --bin okfit-bench-mcp`.
//! It builds `okfit-mcp`, generates `bench/out/b10000` when missing, then:
//! - start-up: spawn → `initialize` → `tools/list` answered, on the repository's
//!   own `okf/` bundle (median of `--runs`, default 21);
//! - first call: spawn on 10,000 concepts, time the first `list_concepts`
//!   (median of five servers);
//! - warm calls: then `list_concepts` and `get_concept` round trips (median of 200);
//! - peak RSS of the server (`VmHWM`) after those calls.
//!
//! Targets: start-up < 10 ms; warm list/get < 1 ms; first call < 300 ms;
//! RSS < 100 MB at 10,000 concepts.

use okfit_bench::generator::{self, GenParams};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    fn start(bin: &Path, project: &Path) -> Result<Session, String> {
        let mut child = Command::new(bin)
            .env("OKFIT_PROJECT_DIR", project)
            .env_remove("CLAUDE_PROJECT_DIR")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Session {
            child,
            stdin,
            stdout,
            next_id: 1,
        })
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|_| self.stdin.write_all(b"\n"))
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("write: {e}"))
    }

    /// Sends a request and waits for the response with its id.
    fn request(&mut self, method: &str, params: &str) -> Result<String, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ))?;
        let want = format!("\"id\":{id},");
        loop {
            let mut line = String::new();
            let n = self
                .stdout
                .read_line(&mut line)
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err(format!("server closed before answering {method}"));
            }
            if line.contains(&want) {
                if line.contains("\"error\"") || line.contains("\"isError\":true") {
                    return Err(format!("{method} failed: {}", line.trim()));
                }
                return Ok(line);
            }
        }
    }

    fn initialize(&mut self) -> Result<(), String> {
        self.request(
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"okfit-bench","version":"0"}}"#,
        )?;
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
    }

    fn peak_rss_mb(&self) -> Option<f64> {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).ok()?;
        let kb: f64 = s
            .lines()
            .find(|l| l.starts_with("VmHWM:"))?
            .split_whitespace()
            .nth(1)?
            .parse()
            .ok()?;
        Some(kb * 1024.0 / 1e6)
    }

    fn close(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn median(v: Vec<f64>) -> f64 {
    okfit_bench::measure::stats(&v).map_or(f64::NAN, |s| s.median)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn run(root: &Path, runs: usize) -> Result<bool, String> {
    let status = Command::new("cargo")
        .current_dir(root)
        .args(["build", "--release", "-p", "okfit", "--bin", "okfit-mcp"])
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !status.success() {
        return Err("cargo build failed".into());
    }
    let bin = root.join("target/release/okfit-mcp");

    // Start-up on the repository's own bundle.
    let mut startup = vec![];
    for _ in 0..runs {
        let t = Instant::now();
        let mut s = Session::start(&bin, root)?;
        s.initialize()?;
        s.request("tools/list", "{}")?;
        startup.push(ms(t.elapsed()));
        s.close();
    }

    // 10,000 concepts.
    let dir = root.join("bench/out/b10000");
    let params = GenParams::with_default_folders(10_000);
    if !dir.join(generator::BUNDLE_DIR).join("index.md").is_file() {
        eprintln!("okfit-bench-mcp: generating bench/out/b10000");
        generator::generate(&dir, &params).map_err(|e| format!("generate: {e}"))?;
    }
    let mut s = Session::start(&bin, &dir)?;
    s.initialize()?;
    let t = Instant::now();
    s.request(
        "tools/call",
        r#"{"name":"list_concepts","arguments":{"limit":50}}"#,
    )?;
    let first = ms(t.elapsed());
    let first_id = {
        let line = s.request(
            "tools/call",
            r#"{"name":"list_concepts","arguments":{"limit":1,"offset":5000}}"#,
        )?;
        let v: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("bad JSON: {e}"))?;
        v["result"]["structuredContent"]["items"][0]["id"]
            .as_str()
            .ok_or("no id in list_concepts")?
            .to_string()
    };
    let mut list = vec![];
    let mut get = vec![];
    for i in 0..200 {
        let t = Instant::now();
        s.request(
            "tools/call",
            &format!(
                r#"{{"name":"list_concepts","arguments":{{"limit":20,"offset":{}}}}}"#,
                i * 20
            ),
        )?;
        list.push(ms(t.elapsed()));
        let t = Instant::now();
        s.request(
            "tools/call",
            &format!(r#"{{"name":"get_concept","arguments":{{"id":"{first_id}"}}}}"#),
        )?;
        get.push(ms(t.elapsed()));
    }
    let rss = s.peak_rss_mb().unwrap_or(f64::NAN);
    s.close();

    let (su, li, ge) = (median(startup), median(list), median(get));
    println!("measure                                      median      target");
    println!("spawn → initialize → tools/list (okf/)      {su:8.2} ms   < 10 ms");
    println!("first list_concepts, 10,000 concepts        {first:8.1} ms   < 300 ms");
    println!("warm list_concepts (limit 20), 10,000       {li:8.3} ms   < 1 ms");
    println!("warm get_concept, 10,000                    {ge:8.3} ms   < 1 ms");
    println!("server peak RSS, 10,000                     {rss:8.1} MB   < 100 MB");
    let met = su < 10.0 && first < 300.0 && li < 1.0 && ge < 1.0 && rss < 100.0;
    println!("targets: {}", if met { "MET" } else { "MISSED" });
    Ok(met)
}

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let runs = std::env::args()
        .skip_while(|a| a != "--runs")
        .nth(1)
        .and_then(|v| v.parse().ok())
        .unwrap_or(21usize)
        .max(1);
    match run(&root, runs) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
