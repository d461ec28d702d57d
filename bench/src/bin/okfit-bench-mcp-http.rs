//! `okfit-bench-mcp-http`: MCP over Streamable HTTP, `okfit serve`'s
//! `/mcp`, at protocol revision 2026-07-28 (no session) with a bearer
//! token, through ureq (keep-alive connections).
//!
//! From the workspace root: `cargo run --release -p okfit-bench --bin
//! okfit-bench-mcp-http`. It builds `okfit`, builds tenant `t<N>` of
//! `okfit-bench-kb` when missing (`--sizes`, default 5000), copies it to a
//! data root of its own (so no token reaches the other benchmarks' data),
//! and for plain HTTP on loopback, then TLS (a self-signed certificate the
//! client trusts), starts a fresh daemon (`--rate-limit 0`) and measures:
//! - `tools/call search`: p50/p95 of 1,000 calls over one connection,
//!   after 100 unmeasured;
//! - requests per second from 8 clients (each its own connection) for
//!   5 s, the same calls, and the errors among them;
//! - the daemon's peak RSS (`VmHWM`).
//!
//! `--json PATH` also writes the figures as JSON. Target: search p50 <
//! 1 ms at 5,000 concepts on loopback.

use mimalloc::MiMalloc;
use okfit_bench::daemon::{build_okfit, latency, okfit_bin, Kill};
use okfit_bench::kbdata::{data_root, out_dir, parse_sizes, peak_rss_mb, setup, QUERIES};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const USAGE: &str = "usage: okfit-bench-mcp-http [--sizes LIST] [--json PATH]
  --sizes LIST   comma-separated concept counts, multiples of 500 (default 5000)
  --json PATH    also write the results as JSON to PATH";

/// Client threads of the throughput run.
const CLIENTS: usize = 8;
/// Seconds of the throughput run.
const SECONDS: u64 = 5;
/// Measured calls of the latency run.
const CALLS: usize = 1000;
/// The protocol revision served without sessions.
const REVISION: &str = "2026-07-28";

/// Where a daemon listens and how a client reaches it.
struct Target {
    url: String,
    token: String,
    /// The certificate (DER) a TLS client trusts.
    ca: Option<Vec<u8>>,
}

impl Target {
    fn agent(&self) -> ureq::Agent {
        let mut config = ureq::config::Config::builder()
            .http_status_as_error(false)
            .proxy(None)
            .no_delay(true)
            .timeout_global(Some(Duration::from_secs(30)));
        if let Some(ca) = &self.ca {
            let root = ureq::tls::Certificate::from_der(ca).to_owned();
            config = config.tls_config(
                ureq::tls::TlsConfig::builder()
                    .provider(ureq::tls::TlsProvider::Rustls)
                    .root_certs(ureq::tls::RootCerts::Specific(Arc::new(vec![root])))
                    .unversioned_rustls_crypto_provider(Arc::new(
                        rustls::crypto::ring::default_provider(),
                    ))
                    .build(),
            );
        }
        config.build().into()
    }

    /// One `tools/call search`; the answer's text.
    fn search(&self, agent: &ureq::Agent, query: &str) -> Result<String, String> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
            "name": "search", "arguments": {"query": query, "k": 8},
            "_meta": {"io.modelcontextprotocol/protocolVersion": REVISION,
                      "io.modelcontextprotocol/clientCapabilities": {}}}});
        let mut r = agent
            .post(&self.url)
            .header("Authorization", &format!("Bearer {}", self.token))
            .header("Accept", "application/json, text/event-stream")
            .header("MCP-Protocol-Version", REVISION)
            .header("Mcp-Method", "tools/call")
            .header("Mcp-Name", "search")
            .content_type("application/json")
            .send(body.to_string())
            .map_err(|e| e.to_string())?;
        let status = r.status().as_u16();
        let text = r.body_mut().read_to_string().map_err(|e| e.to_string())?;
        if status != 200 {
            return Err(format!("HTTP {status}: {text}"));
        }
        let v: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text}"))?;
        match v["result"]["content"][0]["text"].as_str() {
            Some(t) if v["result"]["isError"] != json!(true) => Ok(t.to_string()),
            _ => Err(format!("not a search result: {text}")),
        }
    }
}

/// A free loopback port.
fn free_port() -> Result<u16, String> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| e.to_string())
}

/// A data root holding a copy of tenant `t<n>` and a token for it.
fn own_data(n: usize) -> Result<(PathBuf, String), String> {
    let data = out_dir().join(format!("mcp-http{n}"));
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(data.join("tenants")).map_err(|e| e.to_string())?;
    let from = data_root(n).join("tenants").join(format!("t{n}"));
    let st = Command::new("cp")
        .arg("-a")
        .arg(&from)
        .arg(data.join("tenants"))
        .status()
        .map_err(|e| e.to_string())?;
    if !st.success() {
        return Err(format!("cannot copy {}", from.display()));
    }
    let out = Command::new(okfit_bin())
        .args(["token", "--tenant", &format!("t{n}"), "--data"])
        .arg(&data)
        .stderr(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    let token = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if token.len() != 64 {
        return Err("okfit token did not mint a token".into());
    }
    Ok((data, token))
}

/// A self-signed certificate for 127.0.0.1: (cert file, key file, DER).
fn certificate(dir: &Path) -> Result<(PathBuf, PathBuf, Vec<u8>), String> {
    let c = rcgen::generate_simple_self_signed(vec!["127.0.0.1".to_string()])
        .map_err(|e| e.to_string())?;
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    std::fs::write(&cert, c.cert.pem()).map_err(|e| e.to_string())?;
    std::fs::write(&key, c.signing_key.serialize_pem()).map_err(|e| e.to_string())?;
    Ok((cert, key, c.cert.der().to_vec()))
}

/// Starts a daemon on `data` (TLS when `tls`); ready once `/readyz` is.
fn start(data: &Path, token: &str, tls: bool) -> Result<(Kill, Target), String> {
    let port = free_port()?;
    let mut cmd = Command::new(okfit_bin());
    cmd.args(["serve", "--rate-limit", "0", "--data"])
        .arg(data)
        .args(["--listen", &format!("127.0.0.1:{port}")]);
    let mut ca = None;
    if tls {
        let (cert, key, der) = certificate(data)?;
        cmd.arg("--tls-cert").arg(cert).arg("--tls-key").arg(key);
        ca = Some(der);
    }
    let child = Kill(
        cmd.stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    let scheme = if tls { "https" } else { "http" };
    let target = Target {
        url: format!("{scheme}://127.0.0.1:{port}/mcp"),
        token: token.to_string(),
        ca,
    };
    let agent = target.agent();
    let ready = format!("{scheme}://127.0.0.1:{port}/readyz");
    let deadline = Instant::now() + Duration::from_secs(120);
    while !agent
        .get(&ready)
        .call()
        .is_ok_and(|r| r.status().as_u16() == 200)
    {
        if Instant::now() > deadline {
            return Err("okfit serve did not get ready".into());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok((child, target))
}

/// The figures of one daemon (plain or TLS) on tenant `t<n>`.
fn measure(data: &Path, token: &str, n: usize, tls: bool) -> Result<Value, String> {
    let (server, target) = start(data, token, tls)?;
    let agent = target.agent();
    for i in 0..100 {
        let hits = target.search(&agent, QUERIES[i % QUERIES.len()])?;
        if !hits.contains("# hits: ") {
            return Err(format!("not a search answer: {hits}"));
        }
    }
    let mut ms = Vec::with_capacity(CALLS);
    for i in 0..CALLS {
        let t = Instant::now();
        target.search(&agent, QUERIES[i % QUERIES.len()])?;
        ms.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let search = latency(ms);
    let target = Arc::new(target);
    let stop = Instant::now() + Duration::from_secs(SECONDS);
    let handles: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let target = target.clone();
            std::thread::spawn(move || {
                let agent = target.agent();
                let (mut ok, mut errors) = (0usize, 0usize);
                let mut i = c;
                while Instant::now() < stop {
                    match target.search(&agent, QUERIES[i % QUERIES.len()]) {
                        Ok(_) => ok += 1,
                        Err(_) => errors += 1,
                    }
                    i += 1;
                }
                (ok, errors)
            })
        })
        .collect();
    let (mut ok, mut errors) = (0, 0);
    for h in handles {
        let (o, e) = h.join().map_err(|_| "a client thread panicked")?;
        ok += o;
        errors += e;
    }
    let rss = peak_rss_mb(Some(server.0.id()));
    drop(server);
    let rps = ok as f64 / SECONDS as f64;
    eprintln!(
        "{n:>6} concepts, {}: tools/call search p50 {:.3} / p95 {:.3} ms | {rps:.0} requests/s ({CLIENTS} clients, {errors} errors) | daemon peak RSS {rss:.1} MB",
        if tls { "TLS" } else { "HTTP" },
        search["p50"].as_f64().unwrap_or(f64::NAN),
        search["p95"].as_f64().unwrap_or(f64::NAN),
    );
    Ok(json!({
        "concepts": n,
        "tls": tls,
        "search_ms": search,
        "clients": CLIENTS,
        "seconds": SECONDS,
        "requests_per_s": rps,
        "errors": errors,
        "daemon_rss_mb": rss,
    }))
}

fn run(sizes: &[usize], json_path: Option<&Path>) -> Result<(), String> {
    build_okfit()?;
    let mut rows = vec![];
    for &n in sizes {
        setup(n)?;
        let (data, token) = own_data(n)?;
        for tls in [false, true] {
            rows.push(measure(&data, &token, n, tls)?);
        }
        let _ = std::fs::remove_dir_all(&data);
    }
    if let Some(path) = json_path {
        okfit_bench::report::write_json(path, &json!({ "rows": rows }))?;
    }
    Ok(())
}

/// The sizes to measure and where to write the JSON.
type Args = (Vec<usize>, Option<PathBuf>);

/// `--sizes` and `--json`.
fn parse_args() -> Result<Option<Args>, String> {
    let mut sizes = vec![5000];
    let mut json_path = None;
    let Some(pairs) = okfit_bench::kbdata::flag_values()? else {
        return Ok(None);
    };
    for (flag, value) in pairs {
        match flag.as_str() {
            "--sizes" => sizes = parse_sizes(&value)?,
            "--json" => json_path = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    Ok(Some((sizes, json_path)))
}

fn main() -> ExitCode {
    okfit_bench::kbdata::main_of(parse_args(), USAGE, |(sizes, json)| {
        run(&sizes, json.as_deref())
    })
}
