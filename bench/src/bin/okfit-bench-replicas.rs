//! `okfit-bench-replicas`: `okfit serve` replicas over one PostgreSQL
//! database, and one daemon hosting many small tenants on each backend.
//!
//! From the workspace root:
//! `cargo run --release -p okfit-bench --bin okfit-bench-replicas`.
//!
//! It builds `okfit`, starts a throwaway PostgreSQL cluster with
//! `scripts/pg.sh` under `bench/out/replicas/pg` (or uses the server in
//! `OKFIT_BENCH_POSTGRES`, a `postgres://` URL on which it may create
//! databases), then:
//!
//! 1. **Visibility across replicas.** Two `okfit serve --store` replicas on
//!    unix sockets over one database, a tenant of 500 concepts of
//!    Zipf-distributed prose. `--rounds` times, one document is rewritten
//!    through replica A (a `transact` of one change), and from A's answer
//!    replica B is asked for it (`get`) back to back until B's answer
//!    holds the new text. Reported: the time from A's answer to B's first
//!    answer holding it (p50 / p95 / p99 / max), and how often B's first
//!    read already held it.
//! 2. **Many tenants on one daemon**, on SQLite and then on PostgreSQL:
//!    `--tenants` tenants of 50 short concepts each, written in-process;
//!    then a daemon with the default warm budget, and every tenant searched
//!    once in turn (`--passes` times). As the tenants outnumber the budget
//!    each search opens a cold tenant. Reported: the search latency (p50 /
//!    p95 / p99), the daemon's peak RSS and its most open file descriptors.
//!
//! `--json PATH` also writes the figures as JSON.

use mimalloc::MiMalloc;
use okfit_bench::daemon::{build_okfit, latency, serve, Http};
use okfit_bench::pg::{database, server, with_tenant};
use okfit_bench::prose::Prose;
use okfit_bench::rng::SplitMix64;
use okfit_knowledge::Knowledge;
use okfit_store::change::{sha256_hex, Change, Pre};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const USAGE: &str =
    "usage: okfit-bench-replicas [--rounds N] [--tenants N] [--passes N] [--json PATH]
  --rounds N    commits through one replica read through the other (default 300)
  --tenants N   tenants of 50 concepts on the many-tenants daemon (default 10000)
  --passes N    round-robin passes over those tenants (default 1)
  --json PATH   also write the results as JSON to PATH";

/// Seed of the vocabulary and of every document.
const SEED: u64 = 7;
/// Concepts of the visibility tenant.
const VISIBLE_CONCEPTS: usize = 500;
/// Concepts of each of the many tenants.
const SMALL: usize = 50;

struct Opts {
    /// Commits through one replica read through the other.
    rounds: usize,
    /// Tenants on the many-tenants daemon.
    tenants: usize,
    /// Round-robin passes over them.
    passes: usize,
    /// Where to write the figures as JSON too.
    json: Option<PathBuf>,
}

fn out_dir() -> PathBuf {
    okfit_bench::kbdata::bench_out("replicas")
}

/// `count` new concepts of about `words` words in `bundle`, the `i`th
/// titled and marked by `name(i)`.
fn concepts(
    prose: &Prose,
    rng: &mut SplitMix64,
    bundle: &str,
    count: usize,
    words: usize,
    name: impl Fn(usize) -> (String, String),
) -> Vec<Change> {
    (0..count)
        .map(|i| {
            let (title, mark) = name(i);
            Change {
                bundle: bundle.into(),
                path: format!("c{i:04}.md"),
                content: Some(prose.concept(rng, &title, &mark, words).into_bytes()),
                pre: Pre::Any,
            }
        })
        .collect()
}

fn peak_rss_mb(pid: u32) -> f64 {
    okfit_bench::kbdata::peak_rss_mb(Some(pid))
}

fn open_files(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, |d| d.count())
}

/// Part 1: a commit through replica A, read through replica B.
fn visibility(url: &str, rounds: usize) -> Result<Value, String> {
    let store = database(url, "okfit_bench_replicas")?;
    let tenant = "vis";
    let prose = Prose::new(SEED);
    let mut rng = SplitMix64::new(SEED);
    let kb = Knowledge::open(&with_tenant(&store, tenant)).map_err(|e| e.to_string())?;
    let changes = concepts(&prose, &mut rng, "notes", VISIBLE_CONCEPTS, 400, |i| {
        (format!("Note {i}"), format!("seed{i}"))
    });
    kb.commit(changes, None).map_err(|e| format!("{e:?}"))?;
    drop(kb);
    let dir = out_dir().join("visibility");
    let _ = std::fs::remove_dir_all(&dir);
    let (sa, sb) = (dir.join("a.sock"), dir.join("b.sock"));
    let a = serve(&dir.join("a"), Some(&store), &sa)?;
    let b = serve(&dir.join("b"), Some(&store), &sb)?;
    let (mut via_a, mut via_b) = (Http::new(&sa), Http::new(&sb));
    let get = json!({"ids": ["v"]}).to_string();
    // Warm both read models.
    for h in [&mut via_a, &mut via_b] {
        h.call("POST", &format!("/v1/{tenant}/search"), r#"{"q": "note"}"#)?;
    }
    let mut hash: Option<String> = None;
    let mut waits = vec![];
    let mut first_read = 0usize;
    let mut reads = 0usize;
    for i in 0..rounds {
        let mark = format!("visible{i}x");
        let text = prose.concept(&mut rng, "Visible", &mark, 120);
        let mut change =
            json!({"operation": "write", "bundle": "notes", "path": "v.md", "content": text});
        if let Some(h) = &hash {
            change["replaces"] = json!(h);
        }
        let body = json!({ "changes": [change] }).to_string();
        let (status, answer) = via_a.call("POST", &format!("/v1/{tenant}/transact"), &body)?;
        if status != 200 {
            return Err(format!("transact through A: {status} {answer}"));
        }
        let acked = Instant::now();
        hash = Some(sha256_hex(text.as_bytes()));
        let mut tries = 0;
        loop {
            tries += 1;
            let (status, got) = via_b.call("POST", &format!("/v1/{tenant}/get"), &get)?;
            if status == 200 && got.contains(&mark) {
                break;
            }
            if acked.elapsed() > Duration::from_secs(10) {
                return Err(format!("round {i}: replica B never showed the commit"));
            }
        }
        waits.push(acked.elapsed().as_secs_f64() * 1e3);
        reads += tries;
        if tries == 1 {
            first_read += 1;
        }
    }
    let v = json!({
        "concepts": VISIBLE_CONCEPTS,
        "rounds": rounds,
        "visible_ms": latency(waits),
        "first_read_share": first_read as f64 / rounds as f64,
        "reads_per_round": reads as f64 / rounds as f64,
        "replica_rss_mb": [peak_rss_mb(a.0.id()), peak_rss_mb(b.0.id())],
    });
    drop((a, b));
    Ok(v)
}

/// Writes `tenants` tenants of [`SMALL`] concepts through `dsn(t)`, on two
/// threads.
fn seed_tenants(tenants: usize, dsn: &(dyn Fn(usize) -> String + Sync)) -> Result<f64, String> {
    let started = Instant::now();
    let prose = Prose::new(SEED);
    let next = std::sync::atomic::AtomicUsize::new(0);
    let work = || -> Result<(), String> {
        loop {
            let t = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if t >= tenants {
                return Ok(());
            }
            let mut rng = SplitMix64::stream(SEED, t as u64, 3);
            let changes = concepts(&prose, &mut rng, "kb", SMALL, 60, |i| {
                (format!("Concept {i}"), format!("t{t}c{i}"))
            });
            let kb = Knowledge::open(&dsn(t)).map_err(|e| e.to_string())?;
            kb.commit(changes, None).map_err(|e| format!("{e:?}"))?;
            if (t + 1).is_multiple_of(1000) {
                eprintln!("  {} tenants written", t + 1);
            }
        }
    };
    std::thread::scope(|s| {
        let hs: Vec<_> = (0..2).map(|_| s.spawn(work)).collect();
        hs.into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a writer panicked".into())))
            .collect::<Result<Vec<()>, String>>()
    })?;
    Ok(started.elapsed().as_secs_f64())
}

/// Part 2 on one backend: `store` `None` is SQLite under the data folder.
fn many_tenants(o: &Opts, url: Option<&str>) -> Result<Value, String> {
    let backend = if url.is_some() { "postgres" } else { "sqlite" };
    let dir = out_dir().join(format!("tenants-{backend}"));
    let _ = std::fs::remove_dir_all(&dir);
    let data = dir.join("data");
    let store = match url {
        Some(u) => Some(database(u, "okfit_bench_tenants")?),
        None => None,
    };
    let dsn = |t: usize| match &store {
        Some(s) => with_tenant(s, &format!("t{t}")),
        None => format!("okf://{}?tenant=t{t}", data.display()),
    };
    eprintln!(
        "{backend}: writing {} tenants of {SMALL} concepts",
        o.tenants
    );
    let seeded = seed_tenants(o.tenants, &dsn)?;
    let socket = dir.join("okfit.sock");
    let started = Instant::now();
    let d = serve(&data, store.as_deref(), &socket)?;
    let ready_s = started.elapsed().as_secs_f64();
    let pid = d.0.id();
    let mut http = Http::new(&socket);
    let mut ms = vec![];
    let mut most_files = open_files(pid);
    let mut errors = 0;
    for pass in 0..o.passes {
        for t in 0..o.tenants {
            let i = (t + pass) % SMALL;
            let body = json!({"q": format!("t{t}c{i} concept")}).to_string();
            let began = Instant::now();
            let (status, got) = http.call("POST", &format!("/v1/t{t}/search"), &body)?;
            ms.push(began.elapsed().as_secs_f64() * 1e3);
            // The concept marked with the searched word ranks first.
            let first = got.lines().skip_while(|l| !l.starts_with("id\t")).nth(1);
            if status != 200 || !first.is_some_and(|l| l.starts_with(&format!("c{i:04}\t"))) {
                errors += 1;
            }
            if t.is_multiple_of(100) {
                most_files = most_files.max(open_files(pid));
            }
        }
    }
    most_files = most_files.max(open_files(pid));
    let v = json!({
        "backend": backend,
        "tenants": o.tenants,
        "concepts_each": SMALL,
        "passes": o.passes,
        "seed_s": seeded,
        "ready_s": ready_s,
        "search_ms": latency(ms),
        "errors": errors,
        "daemon_rss_mb": peak_rss_mb(pid),
        "daemon_open_files": most_files,
    });
    drop(d);
    Ok(v)
}

fn print_latency(label: &str, v: &Value) {
    let f = |k: &str| v[k].as_f64().unwrap_or(f64::NAN);
    println!(
        "{label}: p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms, max {:.2} ms ({} samples)",
        f("p50"),
        f("p95"),
        f("p99"),
        f("max"),
        v["runs"]
    );
}

fn run(o: &Opts) -> Result<(), String> {
    build_okfit()?;
    std::fs::create_dir_all(out_dir()).map_err(|e| e.to_string())?;
    let pg = server(&out_dir().join("pg"))?;
    let vis = visibility(&pg.url, o.rounds)?;
    print_latency(
        "a commit through replica A, shown by replica B",
        &vis["visible_ms"],
    );
    println!(
        "  B's first read already showed it in {:.0}% of rounds",
        vis["first_read_share"].as_f64().unwrap_or(0.0) * 100.0
    );
    let mut tenants = vec![];
    for url in [None, Some(pg.url.as_str())] {
        let v = many_tenants(o, url)?;
        let mut line = String::new();
        let _ = write!(
            line,
            "{} tenants on {}: daemon peak RSS {:.1} MB, at most {} open files, ready in {:.1} s, {} searches without the searched concept first",
            v["tenants"],
            v["backend"].as_str().unwrap_or(""),
            v["daemon_rss_mb"].as_f64().unwrap_or(f64::NAN),
            v["daemon_open_files"],
            v["ready_s"].as_f64().unwrap_or(f64::NAN),
            v["errors"],
        );
        println!("{line}");
        print_latency("  each search of a cold tenant", &v["search_ms"]);
        tenants.push(v);
    }
    if let Some(p) = &o.json {
        let v = json!({"visibility": vis, "tenants": tenants});
        okfit_bench::report::write_json(p, &v)?;
    }
    Ok(())
}

fn parse() -> Result<Option<Opts>, String> {
    let mut o = Opts {
        rounds: 300,
        tenants: 10_000,
        passes: 1,
        json: None,
    };
    let Some(flags) = okfit_bench::kbdata::flag_values()? else {
        return Ok(None);
    };
    for (flag, value) in flags {
        match flag.as_str() {
            "--rounds" => o.rounds = okfit_bench::kbdata::positive(&flag, &value)?,
            "--tenants" => o.tenants = okfit_bench::kbdata::positive(&flag, &value)?,
            "--passes" => o.passes = okfit_bench::kbdata::positive(&flag, &value)?,
            "--json" => o.json = Some(PathBuf::from(value)),
            _ => return Err(format!("unknown option {flag}")),
        }
    }
    Ok(Some(o))
}

fn main() -> ExitCode {
    okfit_bench::kbdata::main_of(parse(), USAGE, |o| run(&o))
}
