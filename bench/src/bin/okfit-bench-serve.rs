//! `okfit-bench-serve`: measures `okfit serve` (release build) on the
//! 5,000-concept store tenant of `okfit-bench-kb`.
//!
//! From the workspace root: `cargo run --release -p okfit-bench --bin okfit-bench-serve`.
//! It builds `okfit` and `okfit-mcp`, builds tenant `t5000` when missing,
//! starts `okfit serve` on a unix socket, then measures:
//! - search over the socket: p50 of 480 searches through an
//!   `okf+unix://` connection (client and server included), after a pass;
//! - search through MCP over the daemon: `okfit-mcp okf+unix://…`, p50 of
//!   480 `tools/call search` round trips over stdio;
//! - requests per second for a mixed read load (search 40 %, get 30 %,
//!   snapshot 20 %, bundle manifest 10 %) from 4 client threads for 5 s.
//!
//! Targets: search over the socket < 0.3 ms, through MCP < 0.5 ms.

use mimalloc::MiMalloc;
use okfit::kb::{GetOptions, Knowledge};
use okfit_bench::kbdata::{out_dir, p50, setup};
use okfit_core::kb::slice::SliceOptions;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const QUERIES: [&str; 12] = [
    "revenue window",
    "schema refresh",
    "weekly cohort pipeline",
    "latency incident",
    "customer region",
    "approval budget",
    "dashboard metric",
    "owner review",
    "upstream column",
    "partition table",
    "daily aggregate",
    "join query",
];

struct Kill(Child);
impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn bin(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("release")
        .join(name)
}

fn run() -> Result<(), String> {
    let st = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "okfit", "--bins"])
        .status()
        .map_err(|e| e.to_string())?;
    if !st.success() {
        return Err("cargo build failed".into());
    }
    setup(5_000)?;
    let data = out_dir().join("data");
    let sock = out_dir().join("serve.sock");
    let _ = std::fs::remove_file(&sock);
    let server = Kill(
        Command::new(bin("okfit"))
            .args(["serve", "--data"])
            .arg(&data)
            .arg("--socket")
            .arg(&sock)
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    let t = Instant::now();
    while !sock.exists() {
        if t.elapsed() > Duration::from_secs(10) {
            return Err("okfit serve did not start".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let dsn = format!("okf+unix://{}?tenant=t5000", sock.display());

    // Search over the socket.
    let kb = Knowledge::open(&dsn).map_err(|e| e.to_string())?;
    for q in QUERIES {
        kb.search(q, 8, None).map_err(|e| e.to_string())?;
    }
    let mut direct = vec![];
    for i in 0..480 {
        let t = Instant::now();
        let r = kb
            .search(QUERIES[i % QUERIES.len()], 8, None)
            .map_err(|e| e.to_string())?;
        direct.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(r);
    }

    // Through MCP over the daemon.
    let mut mcp = Kill(
        Command::new(bin("okfit-mcp"))
            .arg(&dsn)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    let mut stdin = mcp.0.stdin.take().ok_or("no stdin")?;
    let mut stdout = BufReader::new(mcp.0.stdout.take().ok_or("no stdout")?);
    let mut id = 0u64;
    let mut rpc = |method: &str, params: &str| -> Result<String, String> {
        id += 1;
        writeln!(
            stdin,
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        )
        .map_err(|e| e.to_string())?;
        stdin.flush().map_err(|e| e.to_string())?;
        let mut line = String::new();
        loop {
            line.clear();
            if stdout.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err("okfit-mcp closed".into());
            }
            if line.contains(&format!("\"id\":{id}")) {
                return Ok(line.clone());
            }
        }
    };
    rpc(
        "initialize",
        r#"{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"bench","version":"0"}}"#,
    )?;
    let mut via_mcp = vec![];
    for i in 0..(480 + QUERIES.len()) {
        let q = QUERIES[i % QUERIES.len()];
        let t = Instant::now();
        let r = rpc(
            "tools/call",
            &format!(r#"{{"name":"search","arguments":{{"query":"{q}"}}}}"#),
        )?;
        if i >= QUERIES.len() {
            via_mcp.push(t.elapsed().as_secs_f64() * 1e3);
        }
        if r.contains("\"isError\":true") {
            return Err(format!("search failed: {r}"));
        }
    }

    // Mixed read load.
    let ids: Vec<String> = kb
        .manifest(Some("b00"))
        .map_err(|e| e.to_string())?
        .lines()
        .skip(4)
        .step_by(50)
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect();
    let stop = Instant::now() + Duration::from_secs(5);
    let mut handles = vec![];
    for c in 0..4usize {
        let dsn = dsn.clone();
        let ids = ids.clone();
        handles.push(std::thread::spawn(
            move || -> Result<(usize, usize), String> {
                let kb = Knowledge::open(&dsn).map_err(|e| e.to_string())?;
                let (mut n, mut errors) = (0usize, 0usize);
                let opts = GetOptions {
                    section: None,
                    slice: SliceOptions {
                        offset: None,
                        limit: Some(2000),
                        find: None,
                    },
                };
                while Instant::now() < stop {
                    let ok = match (n + c) % 10 {
                        0..=3 => kb.search(QUERIES[n % QUERIES.len()], 8, None).is_ok(),
                        4..=6 => kb.get(&ids[n % ids.len()..=(n % ids.len())], &opts).is_ok(),
                        7 | 8 => kb.snapshot().is_ok(),
                        _ => kb.manifest(Some("b01")).is_ok(),
                    };
                    n += 1;
                    if !ok {
                        errors += 1;
                    }
                }
                Ok((n, errors))
            },
        ));
    }
    let (mut total, mut errors) = (0, 0);
    for h in handles {
        let (n, e) = h.join().map_err(|_| "a client thread panicked")??;
        total += n;
        errors += e;
    }
    drop(mcp);
    drop(server);
    println!(
        "  5000 concepts: search over the unix socket p50 {:.3} ms | through MCP over the daemon p50 {:.3} ms | mixed reads {:.0} requests/s (4 clients, 5 s, {errors} errors)",
        p50(direct),
        p50(via_mcp),
        total as f64 / 5.0
    );
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
