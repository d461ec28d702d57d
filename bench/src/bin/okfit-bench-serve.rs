//! `okfit-bench-serve`: measures `okfit serve` (release build) on the store
//! tenants of `okfit-bench-kb`.
//!
//! From the workspace root: `cargo run --release -p okfit-bench --bin okfit-bench-serve`.
//! It builds `okfit` and `okfit-mcp`, then per size of `--sizes` (default
//! 5000; multiples of 500) builds tenant `t<N>` when missing, starts a fresh
//! `okfit serve` on a unix socket and measures:
//! - search over the socket: p50/p95 of 480 searches through an
//!   `okf+unix://` connection (client and server included), after a pass;
//! - search through MCP over the daemon: `okfit-mcp okf+unix://…`, p50/p95
//!   of 480 `tools/call search` round trips over stdio;
//! - requests per second for a mixed read load (search 40 %, get 30 %,
//!   snapshot 20 %, bundle manifest 10 %) from 4 client threads for 5 s;
//! - the daemon's peak RSS (`VmHWM`) before it is stopped.
//!
//! `--json PATH` also writes the figures as JSON. Targets: search over the
//! socket < 0.3 ms, through MCP < 0.5 ms.

use mimalloc::MiMalloc;
use okfit_bench::daemon::Kill;
use okfit_bench::kbdata::{data_root, out_dir, p50, parse_sizes, pct, peak_rss_mb, setup, BUNDLE};
use okfit_bench::report::write_json;
use okfit_core::kb::slice::SliceOptions;
use okfit_knowledge::{GetOptions, Knowledge};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const USAGE: &str = "usage: okfit-bench-serve [--sizes LIST] [--json PATH]
  --sizes LIST   comma-separated concept counts, multiples of 500 (default 5000)
  --json PATH    also write the results as JSON to PATH";

/// Client threads of the mixed read load.
const CLIENTS: usize = 4;
/// Seconds of the mixed read load.
const SECONDS: u64 = 5;

/// The first twelve of the store benchmark's queries.
const QUERIES: &[&str] = okfit_bench::kbdata::QUERIES.split_at(12).0;

fn bin(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("target")
        .join("release")
        .join(name)
}

/// Measures a fresh daemon on tenant `t<n>`; returns the size's JSON row.
fn measure(n: usize) -> Result<Value, String> {
    setup(n)?;
    let data = data_root(n);
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
    let dsn = format!("okf+unix://{}?tenant=t{n}", sock.display());

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

    // Mixed read load; the manifest is of a second bundle when there is one.
    let other = format!("b{:02}", usize::from(n / BUNDLE > 1));
    let ids: Vec<String> = kb
        .manifest(Some("b00"))
        .map_err(|e| e.to_string())?
        .lines()
        .skip(4)
        .step_by(50)
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect();
    if ids.is_empty() {
        return Err("no concept ids in the manifest of b00".into());
    }
    let stop = Instant::now() + Duration::from_secs(SECONDS);
    let mut handles = vec![];
    for c in 0..CLIENTS {
        let dsn = dsn.clone();
        let ids = ids.clone();
        let other = other.clone();
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
                        _ => kb.manifest(Some(&other)).is_ok(),
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
    let rss = peak_rss_mb(Some(server.0.id()));
    drop(server);
    let rps = total as f64 / SECONDS as f64;
    let row = json!({
        "concepts": n,
        "socket_search_ms": pct(&direct),
        "mcp_search_ms": pct(&via_mcp),
        "rps": rps,
        "clients": CLIENTS,
        "seconds": SECONDS,
        "errors": errors,
        "daemon_rss_mb": rss,
    });
    println!(
        "{n:>6} concepts: search over the unix socket p50 {:.3} ms | through MCP over the daemon p50 {:.3} ms | mixed reads {rps:.0} requests/s ({CLIENTS} clients, {SECONDS} s, {errors} errors) | daemon peak RSS {rss:.1} MB",
        p50(direct),
        p50(via_mcp),
    );
    Ok(row)
}

/// Sizes and the `--json` path, or `None` for `--help`.
type Args = (Vec<usize>, Option<PathBuf>);

fn parse_args() -> Result<Option<Args>, String> {
    let (mut sizes, mut json_path) = (vec![5_000], None);
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--sizes" | "--json" => {}
            _ => return Err(format!("unknown argument {arg:?}\n{USAGE}")),
        }
        let value = match inline {
            Some(v) => v,
            None => it.next().ok_or(format!("{flag} needs a value"))?,
        };
        if flag == "--json" {
            json_path = Some(PathBuf::from(value));
            continue;
        }
        sizes = parse_sizes(&value)?;
    }
    Ok(Some((sizes, json_path)))
}

fn run(sizes: &[usize], json_path: Option<&Path>) -> Result<(), String> {
    let st = Command::new(env!("CARGO"))
        .args(["build", "--release", "-p", "okfit", "--bins"])
        .status()
        .map_err(|e| e.to_string())?;
    if !st.success() {
        return Err("cargo build failed".into());
    }
    let mut rows = vec![];
    for &n in sizes {
        rows.push(measure(n)?);
    }
    if let Some(path) = json_path {
        write_json(path, &json!({ "sizes": rows }))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    okfit_bench::kbdata::main_of(parse_args(), USAGE, |(sizes, json)| {
        run(&sizes, json.as_deref())
    })
}
