//! `okfit-bench-search-speed`: how fast `search` answers on realistic
//! prose, where common words occur in nearly every concept.
//!
//! From the workspace root:
//! `cargo run --release -p okfit-bench --bin okfit-bench-search-speed`.
//! It writes (once, under `bench/out/prose/`) folders of concepts of
//! Zipf-distributed prose over a 50,000-word vocabulary (`okfit_bench::prose`:
//! sentences of 5–29 words, `##` sections, 200–900 words a concept) and
//! stores each in a SQLite tenant, then measures through `okfit-mcp` over
//! stdio, for the store (`okf:///data?tenant=…`) and for the folder
//! (`okf:///abs/folder`) at each of `--sizes` (default 20,000):
//! - spawn → `initialize` → first `search` answered (median of 5 servers;
//!   the folder's servers find its cache, which a first server without
//!   one filled in the background: that server's first search, peak RSS
//!   and time to the saved cache are reported too);
//! - warm `tools/call search` p50/p95 over 120 queries of 2–8 consecutive
//!   words of generated sentences (common words included), after one
//!   warm-up pass, minus the p50 of a `ping` round trip;
//! - the server's peak RSS.
//!
//! Over the daemon's unix socket (`okfit serve`, `/v1/{tenant}/search`
//! through okfit's client) at `--daemon-size` (default 5,000): warm search
//! p50/p95 and the daemon's peak RSS. Targets: warm search p50 < 0.3 ms,
//! p95 < 0.6 ms, first search < 100 ms, RSS < 150 MB; the socket p50 < 0.3
//! ms. `--json PATH` also writes the figures as JSON.

use okfit_bench::daemon::{self, latency};
use okfit_bench::kbdata::{self, p50};
use okfit_bench::prose::Prose;
use okfit_bench::rng::SplitMix64;
use okfit_bench::stdio::Session;
use okfit_knowledge::kb::Knowledge;
use okfit_store::change::{Change, Pre};
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

const USAGE: &str = "\
usage: okfit-bench-search-speed [--sizes LIST] [--daemon-size N] [--only LIST] [--json PATH]
  --sizes LIST      concept counts measured through okfit-mcp (default 20000)
  --only LIST       measure only these of store,folder,socket (default all)
  --daemon-size N   concepts of the tenant searched over the socket (default 5000)
  --json PATH       also write the figures as JSON";

/// Words in the prose vocabulary.
const VOCABULARY: usize = 50_000;
/// Concepts per folder of the generated bundle.
const PER_DIR: usize = 500;
/// Servers started for the first-search figure.
const FIRST_SERVERS: usize = 5;
/// Queries measured, each asked once per measured pass.
const QUERIES: usize = 120;
/// Measured passes over the queries.
const PASSES: usize = 3;

/// The generated corpus of `n` concepts: `bench/out/prose/f<n>`.
fn folder(n: usize) -> PathBuf {
    kbdata::out_dir()
        .join("..")
        .join("prose")
        .join(format!("f{n}"))
}

/// The SQLite data root holding tenant `p<n>`.
fn data(n: usize) -> PathBuf {
    kbdata::out_dir()
        .join("..")
        .join("prose")
        .join(format!("data{n}"))
}

/// The text of concept `i`.
fn concept(prose: &Prose, i: usize) -> String {
    let mut rng = SplitMix64::stream(7, i as u64, 0x73_7065_6564);
    let words = 200 + rng.below(700) as usize;
    let n = 2 + rng.below(3) as usize;
    let title = prose.title(&mut rng, n);
    prose.sectioned(&mut rng, &title, words)
}

/// Writes the folder and the store tenant of `n` concepts unless a marker
/// says they are there.
fn setup(prose: &Prose, n: usize) -> Result<(), String> {
    let dir = folder(n);
    let marker = dir.with_extension("ready");
    let stamp = format!("prose {n} concepts, vocabulary {VOCABULARY}, v1");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(());
    }
    let t = Instant::now();
    let _ = std::fs::remove_dir_all(&dir);
    let _ = std::fs::remove_dir_all(data(n));
    let mut changes = Vec::with_capacity(n);
    for i in 0..n {
        let rel = format!("d{:02}/n{i:05}.md", i / PER_DIR);
        let text = concept(prose, i);
        let path = dir.join(&rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, &text).map_err(|e| format!("{}: {e}", path.display()))?;
        changes.push(Change {
            bundle: "notes".into(),
            path: rel,
            content: Some(text.into_bytes()),
            pre: Pre::Any,
        });
    }
    let kb = Knowledge::open(&store_dsn(n)).map_err(|e| e.to_string())?;
    kb.commit(changes, None).map_err(|e| format!("{e:?}"))?;
    std::fs::write(&marker, stamp).map_err(|e| e.to_string())?;
    eprintln!(
        "wrote {n} prose concepts in {:.1} s",
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

fn store_dsn(n: usize) -> String {
    format!("okf://{}?tenant=p{n}", abs(&data(n)).display())
}

fn abs(p: &Path) -> PathBuf {
    std::fs::create_dir_all(p).ok();
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// Queries of 2–8 consecutive words of generated sentences, lowercased,
/// without punctuation: what a user types, common words included.
fn queries(prose: &Prose) -> Vec<String> {
    let mut rng = SplitMix64::stream(11, 0, 0x71_7565_7279);
    let mut out = Vec::with_capacity(QUERIES);
    while out.len() < QUERIES {
        let mut s = String::new();
        prose.sentence(&mut rng, &mut s);
        let words: Vec<String> = s
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect();
        let len = (2 + rng.below(7) as usize).min(words.len());
        if len < 2 {
            continue;
        }
        let start = rng.below((words.len() - len + 1) as u64) as usize;
        out.push(words[start..start + len].join(" "));
    }
    out
}

fn search_params(q: &str) -> String {
    json!({"name": "search", "arguments": {"query": q}}).to_string()
}

fn ms(t: Instant) -> f64 {
    t.elapsed().as_secs_f64() * 1e3
}

/// The okfit cache root the folder servers use (emptied before a run).
fn cache_root() -> PathBuf {
    kbdata::out_dir().join("prose").join("cache")
}

/// A folder without a cache: spawn → `initialize` → first `search`, that
/// server's peak RSS, and when it had saved the folder's cache (filled in
/// the background), from spawn.
fn uncached_folder(dsn: &str, query: &str) -> Result<Value, String> {
    let root = cache_root();
    let _ = std::fs::remove_dir_all(&root);
    let mut cmd = Command::new(daemon::target_dir().join("release").join("okfit-mcp"));
    cmd.arg(dsn).env("OKFIT_CACHE", &root);
    let t = Instant::now();
    let mut s = Session::start(cmd)?;
    s.initialize()?;
    s.request("tools/call", &search_params(query))?;
    let first = ms(t);
    let saved = || {
        std::fs::read_dir(root.join("folders"))
            .into_iter()
            .flatten()
            .flatten()
            .any(|e| e.path().join("stamps").is_file())
    };
    while !saved() {
        if t.elapsed() > std::time::Duration::from_secs(600) {
            return Err("the folder's cache was not saved within 10 minutes".into());
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let filled = ms(t);
    let rss = s.peak_rss_mb();
    s.close();
    Ok(json!({"first_search_ms": first, "cache_saved_ms": filled, "peak_rss_mb": rss}))
}

/// The figures of `okfit-mcp -c dsn`.
fn through_mcp(dsn: &str, queries: &[String]) -> Result<Value, String> {
    let bin = daemon::target_dir().join("release").join("okfit-mcp");
    let server = || {
        let mut cmd = Command::new(&bin);
        cmd.arg(dsn).env("OKFIT_CACHE", cache_root());
        cmd
    };
    let mut firsts = Vec::new();
    for i in 0..FIRST_SERVERS {
        let t = Instant::now();
        let mut s = Session::start(server())?;
        s.initialize()?;
        s.request("tools/call", &search_params(&queries[i % queries.len()]))?;
        firsts.push(ms(t));
        s.close();
    }
    let mut s = Session::start(server())?;
    s.initialize()?;
    for q in queries {
        s.request("tools/call", &search_params(q))?;
    }
    let mut pings = Vec::new();
    for _ in 0..200 {
        let t = Instant::now();
        s.request("ping", "{}")?;
        pings.push(ms(t));
    }
    let ping = p50(pings);
    let mut searches = Vec::new();
    for _ in 0..PASSES {
        for q in queries {
            let t = Instant::now();
            s.request("tools/call", &search_params(q))?;
            searches.push((ms(t) - ping).max(0.0));
        }
    }
    let rss = s.peak_rss_mb();
    s.close();
    Ok(json!({
        "first_search_ms": p50(firsts),
        "ping_ms": ping,
        "search_ms": latency(searches),
        "peak_rss_mb": rss,
    }))
}

/// The figures of a search through `okfit serve` on a unix socket.
fn through_socket(n: usize, queries: &[String]) -> Result<Value, String> {
    let socket =
        std::env::temp_dir().join(format!("okfit-bench-search-{}.sock", std::process::id()));
    let serve = daemon::serve(&abs(&data(n)), None, &socket)?;
    let kb = Knowledge::open(&format!("okf+unix://{}?tenant=p{n}", socket.display()))
        .map_err(|e| e.to_string())?;
    for q in queries {
        kb.search(q, 8, None).map_err(|e| e.to_string())?;
    }
    let mut v = Vec::new();
    for _ in 0..PASSES {
        for q in queries {
            let t = Instant::now();
            kb.search(q, 8, None).map_err(|e| e.to_string())?;
            v.push(ms(t));
        }
    }
    let rss = kbdata::peak_rss_mb(Some(serve.0.id()));
    drop(serve);
    let _ = std::fs::remove_file(&socket);
    Ok(json!({"concepts": n, "search_ms": latency(v), "peak_rss_mb": rss}))
}

fn run(
    sizes: &[usize],
    daemon_size: usize,
    only: &[String],
    json_out: Option<PathBuf>,
) -> Result<(), String> {
    let wanted = |k: &str| only.is_empty() || only.iter().any(|o| o == k);
    daemon::build_okfit()?;
    let prose = Prose::with_vocabulary(42, VOCABULARY);
    let qs = queries(&prose);
    if let Some(p) = std::env::var_os("OKFIT_BENCH_DUMP_QUERIES") {
        let _ = std::fs::write(p, qs.join("\n"));
    }
    let mut rows = Vec::new();
    println!("| connection | concepts | first search ms | warm search ms p50 / p95 | ping ms | peak RSS MB |");
    println!("|---|---:|---:|---:|---:|---:|");
    for &n in sizes {
        setup(&prose, n)?;
        let folder_dsn = format!("okf://{}", abs(&folder(n)).display());
        for (kind, dsn) in [("store", store_dsn(n)), ("folder", folder_dsn)] {
            if !wanted(kind) {
                continue;
            }
            let cold = if kind == "folder" {
                Some(uncached_folder(&dsn, &qs[0])?)
            } else {
                None
            };
            let v = through_mcp(&dsn, &qs)?;
            println!(
                "| {kind} | {n} | {:.1} | {:.3} / {:.3} | {:.3} | {:.1} |",
                v["first_search_ms"].as_f64().unwrap_or(f64::NAN),
                v["search_ms"]["p50"].as_f64().unwrap_or(f64::NAN),
                v["search_ms"]["p95"].as_f64().unwrap_or(f64::NAN),
                v["ping_ms"].as_f64().unwrap_or(f64::NAN),
                v["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
            );
            rows.push(json!({"connection": kind, "concepts": n, "mcp": v, "uncached": cold}));
        }
    }
    for r in &rows {
        if let Some(c) = r.get("uncached").filter(|c| !c.is_null()) {
            println!(
                "\nfolder, {} concepts, without a cache: first search {:.1} ms, peak RSS {:.1} MB; its cache saved (in the background) {:.1} s after spawn",
                r["concepts"],
                c["first_search_ms"].as_f64().unwrap_or(f64::NAN),
                c["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
                c["cache_saved_ms"].as_f64().unwrap_or(f64::NAN) / 1e3,
            );
        }
    }
    let sock = if wanted("socket") {
        setup(&prose, daemon_size)?;
        through_socket(daemon_size, &qs)?
    } else {
        Value::Null
    };
    if !sock.is_null() {
        println!(
        "\nunix socket, {daemon_size} concepts: search p50 {:.3} ms, p95 {:.3} ms; daemon peak RSS {:.1} MB",
        sock["search_ms"]["p50"].as_f64().unwrap_or(f64::NAN),
        sock["search_ms"]["p95"].as_f64().unwrap_or(f64::NAN),
        sock["peak_rss_mb"].as_f64().unwrap_or(f64::NAN),
        );
    }
    if let Some(p) = json_out {
        let v = json!({"vocabulary": VOCABULARY, "queries": qs.len(), "passes": PASSES,
                       "mcp": rows, "socket": sock});
        okfit_bench::report::write_json(&p, &v)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut sizes = vec![20_000];
    let mut daemon_size = 5_000;
    let mut json_out = None;
    let mut only: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut value = || it.next().ok_or(format!("{a} needs a value"));
        let r: Result<(), String> = match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--sizes" => value()
                .and_then(|v| kbdata::parse_sizes(&v))
                .map(|v| sizes = v),
            "--daemon-size" => value()
                .and_then(|v| kbdata::positive("--daemon-size", &v))
                .map(|v| daemon_size = v),
            "--json" => value().map(|v| json_out = Some(PathBuf::from(v))),
            "--only" => value().map(|v| only = v.split(',').map(str::to_string).collect()),
            other => Err(format!("unknown argument {other:?}\n{USAGE}")),
        };
        if let Err(e) = r {
            eprintln!("okfit-bench-search-speed: {e}");
            return ExitCode::from(2);
        }
    }
    match run(&sizes, daemon_size, &only, json_out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("okfit-bench-search-speed: {e}");
            ExitCode::FAILURE
        }
    }
}
