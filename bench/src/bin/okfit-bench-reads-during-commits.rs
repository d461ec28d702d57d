//! `okfit-bench-reads-during-commits`: how much a stream of commits slows
//! the reads of `okfit serve` (release build) over its HTTP API.
//!
//! From the workspace root:
//! `cargo run --release -p okfit-bench --bin okfit-bench-reads-during-commits`.
//!
//! It builds `okfit`, writes a fresh store under
//! `bench/out/reads-during-commits/data` holding one tenant of `--concepts`
//! documents of English-like prose (`okfit_bench::prose`, 2.0–6.8 KB each,
//! in bundles of 500), mints a read token and a write token with
//! `okfit token`, starts `okfit serve --listen 127.0.0.1:0` and reads the
//! port it took from its first line. Then:
//!
//! 1. warm-up: the readers for 2 s, not counted;
//! 2. no writes: `--readers` client threads, each on its own kept-alive
//!    connection with the read token, send reads back to back for
//!    `--seconds`: `search` (50 %), `get` of two concepts (40 %) and one
//!    bundle's `manifest` (10 %);
//! 3. during commits: the same readers for the same time while one writer
//!    (the write token) sends `transact` requests of `--batch` documents
//!    back to back, each rewriting the next `--batch` concepts in turn
//!    with new prose (2.0–6.8 KB, `replaces` the hash each had);
//! 4. commits alone: the writer for the same time, no readers.
//!
//! It prints, per phase, the reads' p50/p95/p99/max latency (from sending
//! the request to the last byte of the answer) and reads per second, also
//! per kind of read, and the commits' latency and commits per second.
//! `--json PATH` also writes the figures as JSON.

use mimalloc::MiMalloc;
use okfit_bench::daemon::{build_okfit, latency, okfit_bin, Kill};
use okfit_bench::prose::Prose;
use okfit_bench::rng::SplitMix64;
use okfit_knowledge::remote::{Remote, Target};
use okfit_knowledge::Knowledge;
use okfit_store::change::{sha256_hex, Change, Pre};
use serde_json::{json, Value};
use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const USAGE: &str = "usage: okfit-bench-reads-during-commits [--concepts N] [--readers N] [--seconds S] [--batch N] [--json PATH]
  --concepts N   documents in the tenant (default 2000)
  --readers N    reader client threads (default 4)
  --seconds S    length of each measured phase (default 10)
  --batch N      documents per transaction of the writer (default 25)
  --json PATH    also write the results as JSON to PATH";

/// The tenant's name.
const TENANT: &str = "reads";
/// Concepts per bundle (`b00`, `b01`, ...).
const BUNDLE: usize = 500;
/// Concepts per folder inside a bundle.
const FOLDER: usize = 50;
/// Seed of the vocabulary and of every document.
const SEED: u64 = 42;
/// Seconds of warm-up reads before the baseline.
const WARMUP: u64 = 2;

struct Opts {
    concepts: usize,
    readers: usize,
    seconds: u64,
    batch: usize,
    json: Option<PathBuf>,
}

fn out_dir() -> PathBuf {
    okfit_bench::kbdata::bench_out("reads-during-commits")
}

/// Where concept `id` lives: its bundle and path.
fn place(id: usize) -> (String, String) {
    let b = id / BUNDLE;
    let f = id % BUNDLE / FOLDER;
    (format!("b{b:02}"), format!("topic-{f:02}/note-{id:05}.md"))
}

/// Title, description and type of concept `id` (the same in every version,
/// so the folder indexes stay right).
fn meta(prose: &Prose, id: usize) -> (String, String, &'static str) {
    const TYPES: [&str; 5] = ["Reference", "Playbook", "Metric", "Decision", "Table"];
    let mut rng = SplitMix64::stream(SEED, id as u64, 1);
    let words = 2 + rng.below(3) as usize;
    let title = format!("{} {id}", prose.title(&mut rng, words));
    let mut description = String::new();
    prose.sentence(&mut rng, &mut description);
    let kind = TYPES[rng.below(TYPES.len() as u64) as usize];
    (title, description.replace('"', ""), kind)
}

/// The text of concept `id` at `version`: frontmatter, a title, an intro,
/// 2–5 sections of paragraphs (now and then a list), up to 4 links to
/// other concepts of its bundle; 2.0–6.8 KB.
fn concept(prose: &Prose, n: usize, id: usize, version: u64) -> String {
    let (title, description, kind) = meta(prose, id);
    let mut rng = SplitMix64::stream(SEED ^ version.wrapping_mul(0x9E37_79B9), id as u64, 2);
    let target = 2000 + (rng.below(1601) + rng.below(1601) + rng.below(1601)) as usize;
    let mut out = String::with_capacity(target + 1024);
    let tag = prose.content_word(&mut rng).to_string();
    let mut other = tag.clone();
    while other == tag {
        other = prose.content_word(&mut rng).to_string();
    }
    let _ = write!(
        out,
        "---\ntype: {kind}\ntitle: \"{title}\"\ndescription: \"{description}\"\ntags:\n  - {tag}\n  - {other}\nstatus: stable\n---\n\n# {title}\n\n",
    );
    prose.paragraph(&mut rng, &mut out);
    out.push_str("\n\n");
    let sections = 2 + rng.below(4) as usize;
    let mut links = 2 + rng.below(3) as usize;
    let per = target.saturating_sub(out.len()) / sections;
    for _ in 0..sections {
        let words = 1 + rng.below(3) as usize;
        let _ = write!(out, "## {}\n\n", prose.title(&mut rng, words));
        let end = out.len() + per;
        while out.len() < end {
            if rng.below(6) == 0 {
                for _ in 0..3 + rng.below(4) {
                    out.push_str("- ");
                    prose.sentence(&mut rng, &mut out);
                    out.push('\n');
                }
            } else {
                prose.paragraph(&mut rng, &mut out);
                let start = id / BUNDLE * BUNDLE;
                let size = (n - start).min(BUNDLE);
                if links > 0 && size > 1 && rng.below(3) == 0 {
                    let other =
                        start + (id - start + 1 + rng.below(size as u64 - 1) as usize) % size;
                    let (_, p) = place(other);
                    let (t, _, _) = meta(prose, other);
                    let _ = write!(out, " See [{t}](/{p}).");
                    links -= 1;
                }
                out.push('\n');
            }
            out.push('\n');
        }
    }
    out
}

/// The seed documents: every concept at version 0 (first, in id order),
/// then an `index.md` per folder and per bundle.
fn seed_docs(prose: &Prose, n: usize) -> Vec<(String, String, String)> {
    let mut docs = vec![];
    let mut folders: std::collections::BTreeMap<(String, String), String> = Default::default();
    for id in 0..n {
        let (b, p) = place(id);
        let (title, description, _) = meta(prose, id);
        let (folder, file) = p.split_once('/').unwrap_or(("", &p));
        let idx = folders.entry((b.clone(), folder.to_string())).or_default();
        let _ = writeln!(idx, "* [{title}]({file}) - {description}");
        docs.push((b, p.clone(), concept(prose, n, id, 0)));
    }
    let mut roots: std::collections::BTreeMap<String, String> = Default::default();
    for ((b, folder), lines) in folders {
        let root = roots.entry(b.clone()).or_insert_with(|| {
            "---\nokf_version: \"0.2\"\n---\n\n# Subdirectories\n\n".to_string()
        });
        let _ = writeln!(root, "* [{folder}]({folder}/index.md) - notes of {folder}");
        docs.push((
            b,
            format!("{folder}/index.md"),
            format!("# Notes of {folder}\n\n{lines}"),
        ));
    }
    for (b, text) in roots {
        docs.push((b, "index.md".into(), text));
    }
    docs
}

/// Runs `okfit` with `args`; its stdout, trimmed.
fn okfit(args: &[&str]) -> Result<String, String> {
    let out = Command::new(okfit_bin())
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", okfit_bin().display()))?;
    if !out.status.success() {
        return Err(format!(
            "okfit {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Starts `okfit serve` on a free loopback port; the child and the port.
fn start_daemon(data: &Path) -> Result<(Kill, u16), String> {
    let mut child = Kill(
        Command::new(okfit_bin())
            .args(["serve", "--data"])
            .arg(data)
            .args(["--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("{}: {e}", okfit_bin().display()))?,
    );
    let stderr = child.0.stderr.take().ok_or("no stderr")?;
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut lines = BufReader::new(stderr).lines();
        if let Some(Ok(first)) = lines.next() {
            let _ = tx.send(first);
        }
        // Keep the pipe drained.
        for _ in lines {}
    });
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .map_err(|_| "okfit serve did not start".to_string())?;
    let port = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|a| a.rsplit_once(':'))
        .and_then(|(_, p)| p.parse::<u16>().ok())
        .ok_or(format!("cannot read the port from {line:?}"))?;
    Ok((child, port))
}

fn client(port: u16, token: &str) -> Result<Remote, String> {
    Remote::new(
        Target::Tcp {
            host: "127.0.0.1".into(),
            port,
            tls: false,
        },
        None,
        Some(token.to_string()),
    )
    .map_err(|e| e.to_string())
}

/// The kinds of read, in the order of the report.
const KINDS: [&str; 3] = ["search", "get", "manifest"];

/// What the readers read.
struct Workload {
    queries: Vec<String>,
    ids: Vec<String>,
    bundles: Vec<String>,
}

/// One reader's samples: (kind, milliseconds), and its failures.
type Samples = (Vec<(u8, f64)>, usize);

/// Sends reads back to back until `stop`; reader `r` starts at its own
/// place in the rotation.
fn reader(
    port: u16,
    token: &str,
    w: &Workload,
    r: usize,
    stop: Instant,
) -> Result<Samples, String> {
    let c = client(port, token)?;
    let mut samples = Vec::with_capacity(1 << 16);
    let mut errors = 0;
    let mut i = r * 7919;
    while Instant::now() < stop {
        i += 1;
        let (kind, method, path, body) = match i % 10 {
            0..=4 => (
                0u8,
                "POST",
                "search".to_string(),
                json!({"q": w.queries[i % w.queries.len()], "k": 8}).to_string(),
            ),
            5..=8 => {
                let a = &w.ids[(i * 31) % w.ids.len()];
                let b = &w.ids[(i * 131 + 17) % w.ids.len()];
                (
                    1,
                    "POST",
                    "get".to_string(),
                    json!({"ids": [a, b]}).to_string(),
                )
            }
            _ => (
                2,
                "GET",
                format!("manifest?bundle={}", w.bundles[i / 10 % w.bundles.len()]),
                String::new(),
            ),
        };
        let t = Instant::now();
        let ok = c
            .request(method, &path, &[], body.as_bytes())
            .is_ok_and(|reply| reply.status == 200 && !reply.body.is_empty());
        let ms = t.elapsed().as_secs_f64() * 1e3;
        if ok {
            samples.push((kind, ms));
        } else {
            errors += 1;
        }
    }
    Ok((samples, errors))
}

/// The writer's figures.
struct Writes {
    ms: Vec<f64>,
    docs: usize,
    bytes: usize,
}

/// Sends transactions of `batch` rewrites back to back while `go` holds.
fn writer(
    port: u16,
    token: &str,
    prose: &Prose,
    n: usize,
    batch: usize,
    hashes: &mut [String],
    go: &AtomicBool,
) -> Result<Writes, String> {
    let c = client(port, token)?;
    let mut w = Writes {
        ms: vec![],
        docs: 0,
        bytes: 0,
    };
    let mut next = 0usize;
    let mut version = 1u64;
    while go.load(Ordering::Relaxed) {
        let ids: Vec<usize> = (0..batch).map(|k| (next + k) % n).collect();
        next = (next + batch) % n;
        let mut changes = vec![];
        let mut new_hashes = vec![];
        let mut bytes = 0;
        for &id in &ids {
            let (b, p) = place(id);
            let text = concept(prose, n, id, version);
            bytes += text.len();
            new_hashes.push(sha256_hex(text.as_bytes()));
            changes.push(json!({"operation": "write", "bundle": b, "path": p, "content": text, "replaces": hashes[id]}));
        }
        version += 1;
        let body = json!({ "changes": changes }).to_string();
        let t = Instant::now();
        let r = c.request("POST", "transact", &[], body.as_bytes());
        let ms = t.elapsed().as_secs_f64() * 1e3;
        match r {
            Ok(reply) if reply.status == 200 => {
                w.ms.push(ms);
                w.docs += batch;
                w.bytes += bytes;
                for (&id, h) in ids.iter().zip(new_hashes) {
                    hashes[id] = h;
                }
            }
            Ok(reply) => {
                return Err(format!(
                    "transact answered {}: {}",
                    reply.status,
                    reply.text()
                ))
            }
            Err(e) => return Err(format!("transact failed: {e}")),
        }
    }
    Ok(w)
}

/// The running daemon and what the clients need.
struct Bench {
    port: u16,
    read_token: String,
    write_token: String,
    work: Workload,
    prose: Prose,
    concepts: usize,
    batch: usize,
    /// The current hash of every concept (the writer's `replaces`).
    hashes: Vec<String>,
}

impl Bench {
    /// Runs `readers` readers for `seconds`, and the writer alongside
    /// with `write`; the phase's JSON.
    fn phase(&mut self, readers: usize, seconds: u64, write: bool) -> Result<Value, String> {
        let Bench {
            port,
            read_token,
            write_token,
            work,
            prose,
            concepts,
            batch,
            hashes,
        } = self;
        let (port, n, batch) = (*port, *concepts, *batch);
        let go = AtomicBool::new(true);
        let started = Instant::now();
        let stop = started + Duration::from_secs(seconds);
        let (read_results, write_result) = std::thread::scope(|s| {
            let handles: Vec<_> = (0..readers)
                .map(|r| {
                    let (token, work) = (&*read_token, &*work);
                    s.spawn(move || reader(port, token, work, r, stop))
                })
                .collect();
            let w = write.then(|| {
                let (token, prose, go) = (&*write_token, &*prose, &go);
                s.spawn(move || writer(port, token, prose, n, batch, hashes, go))
            });
            let reads: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
            std::thread::sleep(stop.saturating_duration_since(Instant::now()));
            go.store(false, Ordering::Relaxed);
            (reads, w.map(|h| h.join()))
        });
        let elapsed = started.elapsed().as_secs_f64();
        let mut all = vec![];
        let mut per: Vec<Vec<f64>> = vec![vec![]; KINDS.len()];
        let mut errors = 0;
        for r in read_results {
            let (samples, e) = r.map_err(|_| "a reader panicked")??;
            errors += e;
            for (k, ms) in samples {
                all.push(ms);
                per[k as usize].push(ms);
            }
        }
        let count = all.len();
        let mut v = json!({
            "seconds": seconds,
            "readers": readers,
            "reads": count,
            "reads_per_s": count as f64 / seconds as f64,
            "read_errors": errors,
            "read_ms": latency(all),
        });
        for (k, name) in KINDS.iter().enumerate() {
            v[format!("{name}_ms")] = latency(std::mem::take(&mut per[k]));
        }
        if let Some(w) = write_result {
            let w = w.map_err(|_| "the writer panicked")??;
            // Over the time until the last commit answered (the writer
            // finishes the one in flight when the phase ends).
            let commits = w.ms.len();
            v["batch"] = json!(batch);
            v["commits"] = json!(commits);
            v["commits_per_s"] = json!(commits as f64 / elapsed);
            v["docs_per_s"] = json!(w.docs as f64 / elapsed);
            v["commit_mb"] = json!(w.bytes as f64 / 1e6);
            v["commit_ms"] = latency(w.ms);
        }
        Ok(v)
    }
}

fn print_phase(label: &str, v: &Value) {
    let f = |x: &Value| x.as_f64().unwrap_or(f64::NAN);
    if v["readers"] != 0 {
        let r = &v["read_ms"];
        println!(
            "{label:<16} reads    p50 {:>7.3} ms  p95 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.1} ms  {:>6.0} reads/s ({} failed)",
            f(&r["p50"]),
            f(&r["p95"]),
            f(&r["p99"]),
            f(&r["max"]),
            f(&v["reads_per_s"]),
            v["read_errors"]
        );
        for k in KINDS {
            let r = &v[format!("{k}_ms")];
            println!(
                "{:<16}   {k:<8} p50 {:>7.3} ms  p95 {:>7.3} ms  p99 {:>7.3} ms  max {:>7.1} ms  {:>6} reads",
                "",
                f(&r["p50"]),
                f(&r["p95"]),
                f(&r["p99"]),
                f(&r["max"]),
                r["runs"]
            );
        }
    }
    if v.get("commits").is_some() {
        let c = &v["commit_ms"];
        println!(
            "{:<16} commits  p50 {:>7.1} ms  p95 {:>7.1} ms  p99 {:>7.1} ms  max {:>7.1} ms  {:>6.1} commits/s ({} of {} documents, {:.0} documents/s)",
            if v["readers"] == 0 { label } else { "" },
            f(&c["p50"]),
            f(&c["p95"]),
            f(&c["p99"]),
            f(&c["max"]),
            f(&v["commits_per_s"]),
            v["commits"],
            v["batch"],
            f(&v["docs_per_s"]),
        );
    }
}

fn run(o: &Opts) -> Result<(), String> {
    build_okfit()?;
    let data = out_dir().join("data");
    let _ = std::fs::remove_dir_all(&data);
    std::fs::create_dir_all(&data).map_err(|e| format!("{}: {e}", data.display()))?;

    // The tenant, written in one commit per bundle.
    let t = Instant::now();
    let prose = Prose::new(SEED);
    let docs = seed_docs(&prose, o.concepts);
    // The concepts come first, in id order.
    let hashes: Vec<String> = docs[..o.concepts]
        .iter()
        .map(|(_, _, text)| sha256_hex(text.as_bytes()))
        .collect();
    let bytes: usize = docs.iter().map(|(_, _, t)| t.len()).sum();
    let kb = Knowledge::open(&format!("okf://{}?tenant={TENANT}", data.display()))
        .map_err(|e| e.to_string())?;
    let mut by_bundle: std::collections::BTreeMap<String, Vec<Change>> = Default::default();
    for (b, p, text) in docs {
        by_bundle.entry(b.clone()).or_default().push(Change {
            bundle: b,
            path: p,
            content: Some(text.into_bytes()),
            pre: Pre::Any,
        });
    }
    let bundles: Vec<String> = by_bundle.keys().cloned().collect();
    for (_, changes) in by_bundle {
        kb.commit(changes, None).map_err(|e| format!("{e:?}"))?;
    }
    drop(kb);
    eprintln!(
        "seeded tenant {TENANT}: {} concepts, {:.1} MB, in {:.1} s",
        o.concepts,
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );

    let data_s = data.display().to_string();
    let read_token = okfit(&["token", "--data", &data_s, "--tenant", TENANT])?;
    let write_token = okfit(&["token", "--data", &data_s, "--tenant", TENANT, "--write"])?;
    let (server, port) = start_daemon(&data)?;

    // What to read: ids from the manifest, queries of content words.
    let c = client(port, &read_token)?;
    let m = c
        .request("GET", "manifest", &[], b"")
        .and_then(|r| r.ok())
        .map_err(|e| e.to_string())?
        .text();
    let ids: Vec<String> = m
        .lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("id\t"))
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect();
    if ids.len() < o.concepts {
        return Err(format!(
            "the manifest lists {} concepts, expected {}",
            ids.len(),
            o.concepts
        ));
    }
    let mut rng = SplitMix64::new(SEED);
    let queries = (0..64)
        .map(|_| {
            let words = 1 + rng.below(3) as usize;
            (0..words)
                .map(|_| prose.content_word(&mut rng).to_string())
                .collect::<Vec<_>>()
                .join(" ")
        })
        .collect();
    let work = Workload {
        queries,
        ids,
        bundles,
    };

    let mut bench = Bench {
        port,
        read_token,
        write_token,
        work,
        prose,
        concepts: o.concepts,
        batch: o.batch,
        hashes,
    };
    bench.phase(o.readers, WARMUP, false)?;
    let baseline = bench.phase(o.readers, o.seconds, false)?;
    let during = bench.phase(o.readers, o.seconds, true)?;
    let alone = bench.phase(0, o.seconds, true)?;
    let rss = okfit_bench::kbdata::peak_rss_mb(Some(server.0.id()));
    drop(server);

    println!(
        "okfit serve over HTTP: {} concepts ({:.1} MB), {} readers, {} s per phase",
        o.concepts,
        bytes as f64 / 1e6,
        o.readers,
        o.seconds
    );
    print_phase("no writes", &baseline);
    print_phase("during commits", &during);
    print_phase("commits alone", &alone);
    let f = |v: &Value, k: &str| v["read_ms"][k].as_f64().unwrap_or(f64::NAN);
    println!(
        "{:<16} reads    p50 ×{:.2}  p95 ×{:.2}  p99 ×{:.2}  reads/s ×{:.3}; daemon peak RSS {rss:.1} MB",
        "during / none",
        f(&during, "p50") / f(&baseline, "p50"),
        f(&during, "p95") / f(&baseline, "p95"),
        f(&during, "p99") / f(&baseline, "p99"),
        during["reads_per_s"].as_f64().unwrap_or(f64::NAN)
            / baseline["reads_per_s"].as_f64().unwrap_or(f64::NAN),
    );
    if let Some(path) = &o.json {
        let doc = json!({
            "concepts": o.concepts,
            "tenant_mb": bytes as f64 / 1e6,
            "readers": o.readers,
            "seconds": o.seconds,
            "batch": o.batch,
            "baseline": baseline,
            "during_commits": during,
            "commits_alone": alone,
            "daemon_rss_mb": rss,
        });
        okfit_bench::report::write_json(path, &doc)?;
    }
    Ok(())
}

fn parse_args() -> Result<Option<Opts>, String> {
    let mut o = Opts {
        concepts: 2000,
        readers: 4,
        seconds: 10,
        batch: 25,
        json: None,
    };
    let Some(flags) = okfit_bench::kbdata::flag_values()? else {
        return Ok(None);
    };
    for (flag, value) in flags {
        let num = || okfit_bench::kbdata::positive(&flag, &value);
        match flag.as_str() {
            "--concepts" => o.concepts = num()?.max(2),
            "--readers" => o.readers = num()?,
            "--seconds" => o.seconds = num()? as u64,
            "--batch" => o.batch = num()?.min(1000),
            "--json" => o.json = Some(PathBuf::from(&value)),
            _ => return Err(format!("unknown argument {flag:?}\n{USAGE}")),
        }
    }
    if o.batch > o.concepts {
        return Err("--batch must not exceed --concepts".into());
    }
    Ok(Some(o))
}

fn main() -> ExitCode {
    okfit_bench::kbdata::main_of(parse_args(), USAGE, |o| run(&o))
}
