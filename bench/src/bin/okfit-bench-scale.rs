//! `okfit-bench-scale`: one large tenant on each backend, served by
//! `okfit serve` replicas.
//!
//! From the workspace root:
//! `cargo run --release -p okfit-bench --bin okfit-bench-scale`.
//!
//! It builds `okfit`, writes per size of `--sizes` (default
//! 20000,100000) a folder of concepts of Zipf-distributed prose (about
//! 4.2 KB each, in bundles of 500; kept in `bench/out/scale/src<N>` and
//! reused while its stamp matches), starts a throwaway PostgreSQL cluster
//! with `scripts/pg.sh` (or uses `OKFIT_BENCH_POSTGRES`), and per backend
//! of `--backends` (default sqlite,postgres) measures:
//! - **import**: `okfit import` of the folder into a new tenant (wall time
//!   and the importer's peak RSS);
//! - on PostgreSQL, the database is then settled as after any bulk load
//!   (`VACUUM (ANALYZE)` and a `CHECKPOINT`, timed apart), so that the
//!   figures below are not those of the minute the server spends writing
//!   the import out and vacuuming it;
//! - **open + first search**: a fresh `okfit serve` replica asked to search
//!   as soon as its socket accepts, from spawn to the answer;
//! - **warm search**: p50/p95 of 400 searches of two or three content
//!   words over the replica's socket;
//! - **write**: p50/p95 of 200 transacts each replacing one document (with
//!   its hash as precondition), and of 20 transacts of 25 documents;
//! - **mixed**: a second replica on the same store, and 8 clients (4 per
//!   replica) for 10 s, each searching (70 %), getting (20 %) or replacing
//!   one of its own documents (10 %): operations per second;
//! - the first replica's peak RSS (`VmHWM`).
//!
//! `--json PATH` also writes the figures as JSON.

use mimalloc::MiMalloc;
use okfit_bench::daemon::{build_okfit, latency, okfit_bin, serve, Http, Kill};
use okfit_bench::kbdata::{parse_sizes, peak_rss_mb, BUNDLE};
use okfit_bench::pg::{database, server, settle, with_tenant};
use okfit_bench::prose::Prose;
use okfit_bench::rng::SplitMix64;
use okfit_store::change::sha256_hex;
use serde_json::{json, Value};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const USAGE: &str = "usage: okfit-bench-scale [--sizes LIST] [--backends LIST] [--json PATH]
  --sizes LIST      comma-separated concept counts, multiples of 500 (default 20000,100000)
  --backends LIST   sqlite, postgres or both (default sqlite,postgres)
  --json PATH       also write the results as JSON to PATH";

/// Seed of the vocabulary and of every document.
const SEED: u64 = 11;
/// Words of prose per concept (about 4.2 KB of Markdown).
const WORDS: usize = 640;
/// Warm searches per replica.
const SEARCHES: usize = 400;
/// Single-document transacts.
const WRITES: usize = 200;
/// Transacts of [`BATCH`] documents.
const BATCHES: usize = 20;
/// Documents per batch transact.
const BATCH: usize = 25;
/// Clients of the mixed load, half on each replica.
const CLIENTS: usize = 8;
/// Seconds of the mixed load.
const MIXED_SECONDS: u64 = 10;
/// The tenant measured.
const TENANT: &str = "scale";

struct Opts {
    sizes: Vec<usize>,
    backends: Vec<String>,
    json: Option<PathBuf>,
}

fn out_dir() -> PathBuf {
    okfit_bench::kbdata::bench_out("scale")
}

/// Bundle and path of concept `i`.
fn place(i: usize) -> (String, String) {
    (format!("b{:03}", i / BUNDLE), format!("c{i:06}.md"))
}

/// The text of concept `i` in version `v` (0 is the imported one).
fn text(prose: &Prose, i: usize, v: u64) -> String {
    let mut rng = SplitMix64::stream(SEED, i as u64, v);
    let title = prose.title(&mut rng, 3);
    prose.concept(&mut rng, &title, &format!("mark{i}v{v}"), WORDS)
}

/// Writes the source folder of `n` concepts unless its stamp says it is
/// there; returns it with its size in MB.
fn source(prose: &Prose, n: usize) -> Result<(PathBuf, f64), String> {
    let dir = out_dir().join(format!("src{n}"));
    let stamp_file = dir.join(".stamp");
    let stamp = format!("{n} concepts of {WORDS} words, seed {SEED}, v2");
    if std::fs::read_to_string(&stamp_file).ok().as_deref() != Some(stamp.as_str()) {
        let _ = std::fs::remove_dir_all(&dir);
        let started = Instant::now();
        for i in 0..n {
            let (bundle, path) = place(i);
            let b = dir.join(&bundle);
            if i % BUNDLE == 0 {
                std::fs::create_dir_all(&b).map_err(|e| format!("{}: {e}", b.display()))?;
            }
            std::fs::write(b.join(&path), text(prose, i, 0))
                .map_err(|e| format!("{}: {e}", b.display()))?;
        }
        std::fs::write(&stamp_file, &stamp).map_err(|e| e.to_string())?;
        eprintln!(
            "wrote {n} concepts in {:.1} s",
            started.elapsed().as_secs_f64()
        );
    }
    let mut bytes = 0u64;
    for b in std::fs::read_dir(&dir).map_err(|e| e.to_string())? {
        let b = b.map_err(|e| e.to_string())?.path();
        if b.is_dir() {
            for f in std::fs::read_dir(&b).map_err(|e| e.to_string())? {
                bytes += f
                    .map_err(|e| e.to_string())?
                    .metadata()
                    .map_or(0, |m| m.len());
            }
        }
    }
    Ok((dir, bytes as f64 / 1e6))
}

/// Where one backend keeps the tenant: a data folder, and for PostgreSQL
/// a database.
struct Store {
    backend: &'static str,
    data: PathBuf,
    url: Option<String>,
}

impl Store {
    /// The connection string of the tenant.
    fn dsn(&self) -> String {
        match &self.url {
            Some(u) => with_tenant(u, TENANT),
            None => format!("okf://{}?tenant={TENANT}", self.data.display()),
        }
    }

    /// A replica on socket `name`.sock, ready (warm) when this returns.
    fn replica(&self, name: &str) -> Result<(Kill, PathBuf), String> {
        let socket = self.data.join(format!("{name}.sock"));
        Ok((serve(&self.data, self.url.as_deref(), &socket)?, socket))
    }
}

/// `okfit import` of `src` into the store: seconds and peak RSS (MB).
fn import(store: &Store, src: &Path) -> Result<(f64, f64), String> {
    let mut cmd = Command::new(okfit_bin());
    cmd.arg("import").arg(src).args(["-c", &store.dsn()]);
    let r = okfit_bench::measure::run(&mut cmd, false).map_err(|e| e.to_string())?;
    if r.exit.code() != Some(0) {
        return Err(format!(
            "okfit import failed: {}",
            String::from_utf8_lossy(&r.stderr)
        ));
    }
    Ok((r.wall.as_secs_f64(), r.max_rss_kib as f64 / 1024.0))
}

/// A fresh replica asked to search as soon as its socket accepts: the
/// seconds from spawn to the answer.
fn open_and_first_search(store: &Store) -> Result<f64, String> {
    let socket = store.data.join("cold.sock");
    let _ = std::fs::remove_file(&socket);
    let started = Instant::now();
    let mut cmd = Command::new(okfit_bin());
    cmd.args(["serve", "--data"]).arg(&store.data);
    if let Some(u) = &store.url {
        cmd.args(["--store", u]);
    }
    let _child = Kill(
        cmd.arg("--socket")
            .arg(&socket)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| e.to_string())?,
    );
    while UnixStream::connect(&socket).is_err() {
        if started.elapsed() > Duration::from_secs(120) {
            return Err("okfit serve did not open its socket".into());
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let mut http = Http::new(&socket);
    let (status, got) = http.call(
        "POST",
        &format!("/v1/{TENANT}/search"),
        r#"{"q": "data table"}"#,
    )?;
    if status != 200 {
        return Err(format!("first search: {status} {got}"));
    }
    Ok(started.elapsed().as_secs_f64())
}

/// A search of two or three content words.
fn query(prose: &Prose, rng: &mut SplitMix64) -> String {
    let n = 2 + rng.below(2) as usize;
    let words: Vec<&str> = (0..n).map(|_| prose.content_word(rng)).collect();
    json!({ "q": words.join(" ") }).to_string()
}

/// Replaces the documents `docs` with their next versions in one
/// transact; `versions` holds each document's current version.
fn replace(
    http: &mut Http,
    prose: &Prose,
    versions: &mut [u64],
    docs: &[usize],
) -> Result<(), String> {
    let changes: Vec<Value> = docs
        .iter()
        .map(|&i| {
            let (bundle, path) = place(i);
            let old = text(prose, i, versions[i]);
            json!({
                "operation": "write",
                "bundle": bundle,
                "path": path,
                "content": text(prose, i, versions[i] + 1),
                "replaces": sha256_hex(old.as_bytes()),
            })
        })
        .collect();
    let body = json!({ "changes": changes }).to_string();
    let (status, got) = http.call("POST", &format!("/v1/{TENANT}/transact"), &body)?;
    if status != 200 {
        return Err(format!("transact: {status} {got}"));
    }
    for &i in docs {
        versions[i] += 1;
    }
    Ok(())
}

fn timed(mut f: impl FnMut() -> Result<(), String>) -> Result<f64, String> {
    let t = Instant::now();
    f()?;
    Ok(t.elapsed().as_secs_f64() * 1e3)
}

/// The mixed load: 8 clients over the two replicas' sockets, each
/// replacing only its own documents. Operations per second, by kind.
fn mixed(prose: &Prose, sockets: [&Path; 2], n: usize, versions: &[u64]) -> Result<Value, String> {
    let stop = AtomicBool::new(false);
    let (searches, gets, writes) = (
        AtomicUsize::new(0),
        AtomicUsize::new(0),
        AtomicUsize::new(0),
    );
    let client = |c: usize| -> Result<(), String> {
        let mut http = Http::new(sockets[c % 2]);
        let mut rng = SplitMix64::stream(SEED, 1_000_000 + c as u64, 9);
        let mut versions = versions.to_vec();
        // Client c replaces documents c, c + CLIENTS, … of the last bundle.
        let mine: Vec<usize> = (n - BUNDLE..n).filter(|i| i % CLIENTS == c).collect();
        let mut next = 0;
        while !stop.load(Ordering::Relaxed) {
            let roll = rng.below(100);
            if roll < 70 {
                let (s, _) = http.call(
                    "POST",
                    &format!("/v1/{TENANT}/search"),
                    &query(prose, &mut rng),
                )?;
                if s != 200 {
                    return Err(format!("search: {s}"));
                }
                searches.fetch_add(1, Ordering::Relaxed);
            } else if roll < 90 {
                let i = rng.below(n as u64) as usize;
                let body = json!({ "ids": [format!("c{i:06}")] }).to_string();
                let (s, _) = http.call("POST", &format!("/v1/{TENANT}/get"), &body)?;
                if s != 200 {
                    return Err(format!("get: {s}"));
                }
                gets.fetch_add(1, Ordering::Relaxed);
            } else {
                replace(&mut http, prose, &mut versions, &[mine[next % mine.len()]])?;
                next += 1;
                writes.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(())
    };
    let started = Instant::now();
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..CLIENTS).map(|c| s.spawn(move || client(c))).collect();
        std::thread::sleep(Duration::from_secs(MIXED_SECONDS));
        stop.store(true, Ordering::Relaxed);
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a client panicked".into())))
            .collect::<Result<Vec<()>, String>>()
    })?;
    let secs = started.elapsed().as_secs_f64();
    let rate = |a: &AtomicUsize| a.load(Ordering::Relaxed) as f64 / secs;
    Ok(json!({
        "clients": CLIENTS,
        "replicas": 2,
        "seconds": secs,
        "ops_per_s": rate(&searches) + rate(&gets) + rate(&writes),
        "searches_per_s": rate(&searches),
        "gets_per_s": rate(&gets),
        "writes_per_s": rate(&writes),
    }))
}

/// Every figure of one size on one backend.
fn measure(prose: &Prose, n: usize, src: &Path, store: &Store) -> Result<Value, String> {
    eprintln!("{}: importing {n} concepts", store.backend);
    let (import_s, import_rss) = import(store, src)?;
    eprintln!("{}: imported in {import_s:.1} s", store.backend);
    let settle_s = store.url.as_deref().map(settle).transpose()?;
    if let Some(s) = settle_s {
        eprintln!(
            "{}: settled (VACUUM (ANALYZE), CHECKPOINT) in {s:.1} s",
            store.backend
        );
    }
    let first_search_s = open_and_first_search(store)?;
    let started = Instant::now();
    let (a, sa) = store.replica("a")?;
    let ready_s = started.elapsed().as_secs_f64();
    let mut http = Http::new(&sa);
    let mut rng = SplitMix64::stream(SEED, 7, 7);
    let mut search_ms = vec![];
    for i in 0..SEARCHES + 40 {
        let q = query(prose, &mut rng);
        let ms = timed(|| {
            let (s, got) = http.call("POST", &format!("/v1/{TENANT}/search"), &q)?;
            (s == 200).then_some(()).ok_or(format!("search: {s} {got}"))
        })?;
        // The first 40 warm the connection and the postings read.
        if i >= 40 {
            search_ms.push(ms);
        }
    }
    let mut versions = vec![0u64; n];
    let mut write_ms = vec![];
    for w in 0..WRITES {
        let doc = (w * 7919) % (n - BUNDLE);
        write_ms.push(timed(|| replace(&mut http, prose, &mut versions, &[doc]))?);
    }
    let mut batch_ms = vec![];
    for b in 0..BATCHES {
        let docs: Vec<usize> = (0..BATCH)
            .map(|k| (b * BATCH + k) * 13 % (n - BUNDLE))
            .collect();
        batch_ms.push(timed(|| replace(&mut http, prose, &mut versions, &docs))?);
    }
    let (b, sb) = store.replica("b")?;
    let mixed = mixed(prose, [sa.as_path(), sb.as_path()], n, &versions)?;
    let v = json!({
        "backend": store.backend,
        "concepts": n,
        "import_s": import_s,
        "import_rss_mb": import_rss,
        "settle_s": settle_s,
        "open_first_search_s": first_search_s,
        "ready_s": ready_s,
        "search_ms": latency(search_ms),
        "write_ms": latency(write_ms),
        "transact25_ms": latency(batch_ms),
        "mixed": mixed,
        "daemon_rss_mb": peak_rss_mb(Some(a.0.id())),
        "replica_b_rss_mb": peak_rss_mb(Some(b.0.id())),
    });
    drop((a, b));
    Ok(v)
}

fn print(v: &Value) {
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    let l = |k: &str, q: &str| v[k][q].as_f64().unwrap_or(f64::NAN);
    println!(
        "{} at {} concepts: import {:.1} s ({:.0} MB), open + first search {:.2} s, warm search p50 {:.2} / p95 {:.2} ms, write p50 {:.1} / p95 {:.1} ms, transact of 25 p50 {:.1} ms, mixed {:.0} ops/s, daemon RSS {:.0} MB",
        v["backend"].as_str().unwrap_or(""),
        v["concepts"],
        f("import_s"),
        f("import_rss_mb"),
        f("open_first_search_s"),
        l("search_ms", "p50"),
        l("search_ms", "p95"),
        l("write_ms", "p50"),
        l("write_ms", "p95"),
        l("transact25_ms", "p50"),
        v["mixed"]["ops_per_s"].as_f64().unwrap_or(f64::NAN),
        f("daemon_rss_mb"),
    );
}

fn run(o: &Opts) -> Result<(), String> {
    build_okfit()?;
    std::fs::create_dir_all(out_dir()).map_err(|e| e.to_string())?;
    let prose = Prose::new(SEED);
    let pg = if o.backends.iter().any(|b| b == "postgres") {
        Some(server(&out_dir().join("pg"))?)
    } else {
        None
    };
    let mut rows = vec![];
    for &n in &o.sizes {
        let (src, mb) = source(&prose, n)?;
        eprintln!("{n} concepts: {mb:.0} MB of Markdown");
        for backend in &o.backends {
            let data = out_dir().join(format!("{backend}-{n}"));
            let _ = std::fs::remove_dir_all(&data);
            std::fs::create_dir_all(&data).map_err(|e| e.to_string())?;
            let store = match (backend.as_str(), &pg) {
                ("postgres", Some(pg)) => Store {
                    backend: "postgres",
                    data,
                    url: Some(database(&pg.url, &format!("okfit_bench_scale_{n}"))?),
                },
                _ => Store {
                    backend: "sqlite",
                    data,
                    url: None,
                },
            };
            let mut v = measure(&prose, n, &src, &store)?;
            v["markdown_mb"] = json!(mb);
            print(&v);
            rows.push(v);
            let _ = std::fs::remove_dir_all(&store.data);
        }
    }
    if let Some(p) = &o.json {
        okfit_bench::report::write_json(p, &json!({ "scale": rows }))?;
    }
    Ok(())
}

fn parse() -> Result<Option<Opts>, String> {
    let mut o = Opts {
        sizes: vec![20_000, 100_000],
        backends: vec!["sqlite".into(), "postgres".into()],
        json: None,
    };
    let Some(flags) = okfit_bench::kbdata::flag_values()? else {
        return Ok(None);
    };
    for (flag, value) in flags {
        match flag.as_str() {
            "--sizes" => o.sizes = parse_sizes(&value)?,
            "--backends" => {
                o.backends = value.split(',').map(|b| b.trim().to_string()).collect();
                if o.backends.is_empty()
                    || o.backends.iter().any(|b| b != "sqlite" && b != "postgres")
                {
                    return Err(format!(
                        "--backends takes sqlite and postgres, not {value:?}"
                    ));
                }
            }
            "--json" => o.json = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(Some(o))
}

fn main() -> ExitCode {
    okfit_bench::kbdata::main_of(parse(), USAGE, |o| run(&o))
}
