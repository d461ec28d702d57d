//! `okfit-bench-hostile`: what oversized JSON-RPC lines cost `okfit-mcp`
//! (release build) over stdio. For a 17 MiB line (just over the limit) and
//! a 1 GiB line it measures the time from the line's last byte to its
//! answer, and the server's peak RSS (VmHWM) over its idle RSS; then checks
//! the next request is still answered.
//!
//! `cargo run --release -p okfit-bench --bin okfit-bench-hostile [-- --runs N] [--json]`

use okfit_bench::kbdata::{p50, p95, peak_rss_mb};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Server {
    fn start(bin: &Path, data: &Path) -> Result<Server, String> {
        let mut child = Command::new(bin)
            .arg(format!("okf://{}?tenant=bench", data.display()))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start {}: {e}", bin.display()))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut s = Server {
            child,
            stdin,
            stdout,
        };
        s.line(br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#)?;
        s.answer()?;
        s.line(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)?;
        s.line(br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"snapshot","arguments":{}}}"#)?;
        s.answer()?;
        Ok(s)
    }

    fn line(&mut self, b: &[u8]) -> Result<(), String> {
        self.stdin
            .write_all(b)
            .and_then(|_| self.stdin.write_all(b"\n"))
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("write: {e}"))
    }

    fn answer(&mut self) -> Result<serde_json::Value, String> {
        let mut l = String::new();
        self.stdout
            .read_line(&mut l)
            .map_err(|e| format!("read: {e}"))?;
        serde_json::from_str(&l).map_err(|e| format!("not JSON ({e}): {l}"))
    }

    fn rss_mb(&self) -> f64 {
        let s = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .unwrap_or_default();
        s.lines()
            .find(|l| l.starts_with("VmRSS:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<f64>().ok())
            .map_or(f64::NAN, |kib| kib * 1024.0 / 1e6)
    }

    /// Sends one `get` whose single id is `bytes` long; the seconds from
    /// its last byte to the answer, and the peak RSS over idle in MB.
    fn oversize(&mut self, bytes: usize) -> Result<(f64, f64), String> {
        std::thread::sleep(std::time::Duration::from_millis(200));
        let idle = self.rss_mb();
        self.stdin
            .write_all(br#"{"jsonrpc":"2.0","id":"big","method":"tools/call","params":{"name":"get","arguments":{"ids":[""#)
            .map_err(|e| format!("write: {e}"))?;
        let chunk = vec![b'z'; 1 << 20];
        let mut left = bytes;
        while left > 0 {
            let n = left.min(chunk.len());
            self.stdin
                .write_all(&chunk[..n])
                .map_err(|e| format!("write: {e}"))?;
            left -= n;
        }
        self.stdin
            .write_all(b"\"]}}}\n")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("write: {e}"))?;
        let t = Instant::now();
        let a = self.answer()?;
        let took = t.elapsed().as_secs_f64();
        if a["id"] != "big" || a["error"]["code"] != -32600 {
            return Err(format!("unexpected answer: {a}"));
        }
        let over = peak_rss_mb(Some(self.child.id())) - idle;
        self.line(br#"{"jsonrpc":"2.0","id":"next","method":"ping"}"#)?;
        if self.answer()?["id"] != "next" {
            return Err("the next request was not answered".into());
        }
        Ok((took, over))
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json = args.iter().any(|a| a == "--json");
    let runs = args
        .iter()
        .position(|a| a == "--runs")
        .and_then(|i| args.get(i + 1)?.parse::<usize>().ok())
        .unwrap_or(5);
    let root = repo_root();
    let built = Command::new("cargo")
        .current_dir(&root)
        .args(["build", "--release", "-p", "okfit", "--bin", "okfit-mcp"])
        .status();
    if !built.is_ok_and(|s| s.success()) {
        eprintln!("okfit-bench-hostile: cargo build failed");
        std::process::exit(1);
    }
    let bin = root.join("target/release/okfit-mcp");
    // No tenant there: the lines never reach a store.
    let data = okfit_bench::kbdata::out_dir().join("hostile");
    let mut out = serde_json::Map::new();
    for (label, bytes) in [("17MiB", 17 << 20), ("1GiB", 1usize << 30)] {
        let mut times = vec![];
        let mut over = vec![];
        for _ in 0..runs {
            // A fresh server each time, so each peak is this line's own.
            let r = Server::start(&bin, &data).and_then(|mut s| s.oversize(bytes));
            match r {
                Ok((t, o)) => {
                    times.push(t * 1e3);
                    over.push(o);
                }
                Err(e) => {
                    eprintln!("okfit-bench-hostile: {label}: {e}");
                    std::process::exit(1);
                }
            }
        }
        let (t50, t95) = (p50(times.clone()), p95(times));
        let (o50, omax) = (
            p50(over.clone()),
            over.iter().cloned().fold(f64::NAN, f64::max),
        );
        if !json {
            println!(
                "{label:>6} line: answer {t50:.2} ms after its last byte (p95 {t95:.2}); peak RSS over idle {o50:.1} MB (max {omax:.1}); {runs} runs"
            );
        }
        out.insert(
            label.into(),
            serde_json::json!({"answer_ms_p50": t50, "answer_ms_p95": t95, "rss_over_idle_mb_p50": o50, "rss_over_idle_mb_max": omax, "runs": runs}),
        );
    }
    if json {
        println!("{}", serde_json::Value::Object(out));
    }
}
