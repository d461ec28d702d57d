//! `okfit-bench-kb`: measures the knowledge read model over the embedded
//! store (release build, in process).
//!
//! From the workspace root: `cargo run --release -p okfit-bench --bin okfit-bench-kb`.
//! For each size of `--sizes` (default 500 / 5,000 / 20,000 concepts, in
//! bundles of 500 made by the generator with one seed per bundle) it builds a
//! store tenant under `bench/out/kb/` once, then measures in five fresh child
//! processes (the median of each figure):
//! - open + first search (a new connection, one search);
//! - warm search p50/p95 over a rotating set of 24 queries (after one pass);
//! - batched get of 3 sections p50/p95;
//! - whole manifest read p50/p95;
//! - peak RSS (`VmHWM`) of that process.
//!
//! Targets at 20,000: open + first search < 100 ms, warm search p50 < 0.3 ms,
//! get of 3 sections < 0.05 ms, manifest < 1 ms, peak RSS < 150 MB.
//!
//! With `--writes` (or `--writes-only`, without the reads) it also measures,
//! per size, on a copy of the tenant: single write (commit + the findings for
//! the file, as the MCP tool answers), stale-hash refusal, transact of 25
//! documents, restore (undoing and redoing the last 25-document batch; also
//! one restore across all 80 commits of the run) and a history page, each
//! p50/p95. Targets: < 10 ms, < 1 ms, < 30 ms, < 100 ms, < 1 ms.
//!
//! Results go to `bench/out/kb/results.json` and, with `--json PATH`, to PATH.

use mimalloc::MiMalloc;
use okfit_bench::report::write_json;
use okfit_core::kb::slice::SliceOptions;
use okfit_knowledge::{GetOptions, Knowledge};
use okfit_store::change::{Change, Pre};

use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const SIZES: [usize; 3] = [500, 5_000, 20_000];

const USAGE: &str =
    "usage: okfit-bench-kb [--sizes LIST] [--writes | --writes-only] [--json PATH] [--setup-only]
  --sizes LIST   comma-separated concept counts, multiples of 500 (default 500,5000,20000)
  --writes       also measure the write side at every size
  --writes-only  measure only the write side
  --json PATH    also write the results JSON to PATH
  --setup-only   build the tenants of --sizes and measure nothing";

use okfit_bench::kbdata::{
    data_root, dsn, out_dir, p50, parse_sizes, pct, peak_rss_mb, setup, QUERIES,
};

/// The measuring child: prints one JSON line.
fn child(n: usize) -> Result<(), String> {
    let queries: Vec<String> = QUERIES.iter().map(|s| s.to_string()).collect();
    let t = Instant::now();
    let kb = Knowledge::open(&dsn(n)).map_err(|e| e.to_string())?;
    if std::env::var_os("OKFIT_BENCH_SPLIT").is_some() {
        kb.snapshot().map_err(|e| e.to_string())?;
        eprintln!("load {:.2} ms", t.elapsed().as_secs_f64() * 1e3);
    }
    let first = kb.search(&queries[0], 8, None).map_err(|e| e.to_string())?;
    let open_first = t.elapsed().as_secs_f64() * 1e3;
    if !first.contains("# hits: 8 direct") {
        return Err(format!("unexpected first search:\n{first}"));
    }
    for q in &queries {
        kb.search(q, 8, None).map_err(|e| e.to_string())?;
    }
    let mut warm = vec![];
    for i in 0..480 {
        let q = &queries[i % queries.len()];
        let t = Instant::now();
        let r = kb.search(q, 8, None).map_err(|e| e.to_string())?;
        warm.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(r);
    }
    let m = kb.manifest(None).map_err(|e| e.to_string())?;
    let opts = GetOptions {
        section: Some("usage".into()),
        slice: SliceOptions {
            offset: None,
            limit: Some(15_000),
            find: None,
        },
    };
    // Three concepts (spread over the tenant) that have a `usage` section.
    let ids: Vec<String> = m
        .lines()
        .skip(3)
        .step_by(97)
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .filter(|id| {
            kb.get(std::slice::from_ref(id), &opts)
                .is_ok_and(|t| !t.contains("@@ missing"))
        })
        .take(3)
        .collect();
    let g = kb.get(&ids, &opts).map_err(|e| e.to_string())?;
    if g.contains("@@ missing") {
        return Err(format!("get missed a section:\n{g}"));
    }
    let mut gets = vec![];
    for _ in 0..1000 {
        let t = Instant::now();
        let r = kb.get(&ids, &opts).map_err(|e| e.to_string())?;
        gets.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(r);
    }
    let mut manifests = vec![];
    for _ in 0..200 {
        let t = Instant::now();
        let r = kb.manifest(None).map_err(|e| e.to_string())?.to_string();
        manifests.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(r);
    }
    println!(
        "{}",
        json!({
            "concepts": n,
            "open_first_search_ms": open_first,
            "warm_search_ms": pct(&warm),
            "get_3_sections_ms": pct(&gets),
            "manifest_ms": pct(&manifests),
            "manifest_chars": m.len(),
            "peak_rss_mb": peak_rss_mb(None),
        })
    );
    Ok(())
}

/// The write-side child: prints one JSON line.
fn writes_child(n: usize) -> Result<(), String> {
    let data = data_root(n);
    let src = data.join("tenants").join(format!("t{n}"));
    let dst = data.join("tenants").join(format!("w{n}"));
    let _ = std::fs::remove_dir_all(&dst);
    std::fs::create_dir_all(&dst).map_err(|e| e.to_string())?;
    std::fs::copy(src.join("okfit.sqlite"), dst.join("okfit.sqlite")).map_err(|e| e.to_string())?;
    let dsn = format!("okf://{}?tenant=w{n}", data.display());
    let kb = Knowledge::open(&dsn).map_err(|e| e.to_string())?;
    let start_rev = kb.head().map_err(|e| e.to_string())?.unwrap_or_default();
    let docs: Vec<(String, String, String)> = kb
        .list_sources()
        .map_err(|e| e.to_string())?
        .into_iter()
        .filter(|(_, p, _)| p.contains("concept-"))
        .collect();
    // About 500 concepts spread over the tenant (every 37th at 20,000).
    let step = (docs.len() / 500).clamp(1, 37);
    let concepts: Vec<_> = docs.into_iter().step_by(step).collect();
    if concepts.len() < 25 {
        return Err(format!("only {} concepts to write to", concepts.len()));
    }
    let body = |i: usize, extra: &str| -> Vec<u8> {
        format!("---\ntype: Decision\ntitle: \"Bench {i}\"\ndescription: \"Written by the benchmark {extra}.\"\nstatus: draft\n---\n\n# Bench {i}\n\nRevenue window schema refresh {extra}.\n\n## Usage\n\nSee [x](/area-000/concept-00001.md).\n").into_bytes()
    };
    // Single writes: replace with the current hash, then the findings.
    let mut single = vec![];
    for i in 0..60 {
        let (b, p, _) = &concepts[i % concepts.len()];
        let (_, h) = kb
            .read_source(b, p)
            .map_err(|e| e.to_string())?
            .ok_or("missing")?;
        let content = body(i, "single");
        let t = Instant::now();
        kb.commit(
            vec![Change {
                bundle: b.clone(),
                path: p.clone(),
                content: Some(content.clone()),
                pre: Pre::Hash(h),
            }],
            None,
        )
        .map_err(|e| format!("{e:?}"))?;
        let d = kb
            .diagnostics_for(b, p, &String::from_utf8_lossy(&content))
            .map_err(|e| e.to_string())?;
        single.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(d);
    }
    let mut refused = vec![];
    for i in 0..300 {
        let (b, p, _) = &concepts[i % concepts.len()];
        let t = Instant::now();
        let r = kb.commit(
            vec![Change {
                bundle: b.clone(),
                path: p.clone(),
                content: Some(body(i, "stale")),
                pre: Pre::Hash("a".repeat(64)),
            }],
            None,
        );
        refused.push(t.elapsed().as_secs_f64() * 1e3);
        if r.is_ok() {
            return Err("a stale hash was accepted".into());
        }
    }
    let mut batches = vec![];
    for round in 0..20 {
        let mut changes = vec![];
        for j in 0..25 {
            let (b, p, _) = &concepts[(round * 25 + j) % concepts.len()];
            let (_, h) = kb
                .read_source(b, p)
                .map_err(|e| e.to_string())?
                .ok_or("missing")?;
            changes.push(Change {
                bundle: b.clone(),
                path: p.clone(),
                content: Some(body(j, &format!("batch {round}"))),
                pre: Pre::Hash(h),
            });
        }
        let t = Instant::now();
        kb.transact(changes, None).map_err(|e| format!("{e:?}"))?;
        batches.push(t.elapsed().as_secs_f64() * 1e3);
    }
    let mut histories = vec![];
    for _ in 0..300 {
        let t = Instant::now();
        let h = kb.history(None, 20).map_err(|e| e.to_string())?;
        histories.push(t.elapsed().as_secs_f64() * 1e3);
        std::hint::black_box(h);
    }
    // Restore undoing the last 25-document batch, then redoing it.
    let page = kb.history(None, 2).map_err(|e| e.to_string())?;
    let (latest, before_batch) = match page.revisions.as_slice() {
        [a, b, ..] => (a.revision.clone(), b.revision.clone()),
        _ => return Err("history has fewer than two revisions".into()),
    };
    let mut restores = vec![];
    for i in 0..10 {
        let target = if i % 2 == 0 { &before_batch } else { &latest };
        let head = kb.head().map_err(|e| e.to_string())?.unwrap_or_default();
        let t = Instant::now();
        kb.restore(target, &head).map_err(|e| format!("{e:?}"))?;
        restores.push(t.elapsed().as_secs_f64() * 1e3);
    }
    // And once across every commit of this run (about 560 documents differ).
    let head = kb.head().map_err(|e| e.to_string())?.unwrap_or_default();
    let t = Instant::now();
    kb.restore(&start_rev, &head)
        .map_err(|e| format!("{e:?}"))?;
    let restore_all = t.elapsed().as_secs_f64() * 1e3;
    println!(
        "{}",
        json!({
            "concepts": n,
            "write_ms": pct(&single),
            "stale_refusal_ms": pct(&refused),
            "transact25_ms": pct(&batches),
            "restore_ms": pct(&restores),
            "restore_all_ms": restore_all,
            "history_page_ms": pct(&histories),
        })
    );
    drop(kb);
    let _ = std::fs::remove_dir_all(&dst);
    Ok(())
}

struct Args {
    sizes: Vec<usize>,
    reads: bool,
    writes: bool,
    setup_only: bool,
    json: Option<PathBuf>,
}

fn parse_args(args: &[String]) -> Result<Option<Args>, String> {
    let mut out = Args {
        sizes: SIZES.to_vec(),
        reads: true,
        writes: false,
        setup_only: false,
        json: None,
    };
    let mut it = args.iter().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f, Some(v.to_string())),
            _ => (arg.as_str(), None),
        };
        match flag {
            "-h" | "--help" => return Ok(None),
            "--writes" => out.writes = true,
            "--writes-only" => {
                out.writes = true;
                out.reads = false;
            }
            "--setup-only" => out.setup_only = true,
            "--sizes" | "--json" => {
                let value = match inline {
                    Some(v) => v,
                    None => it.next().cloned().ok_or(format!("{flag} needs a value"))?,
                };
                if flag == "--json" {
                    out.json = Some(PathBuf::from(value));
                    continue;
                }
                out.sizes = parse_sizes(&value)?;
            }
            _ => return Err(format!("unknown argument {arg:?}\n{USAGE}")),
        }
    }
    Ok(Some(out))
}

/// Runs `me ARGS` and parses its one JSON line.
fn run_child(me: &Path, args: &[&str]) -> Result<Value, String> {
    let o = Command::new(me)
        .args(args)
        .output()
        .map_err(|e| format!("{}: {e}", me.display()))?;
    if !o.status.success() {
        return Err(format!(
            "child {} failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&o.stderr)
        ));
    }
    serde_json::from_slice(&o.stdout).map_err(|e| format!("bad child output: {e}"))
}

/// The read figures of `n` concepts: the median of five fresh processes.
fn reads(me: &Path, n: usize) -> Result<Value, String> {
    let arg = n.to_string();
    let runs = (0..5)
        .map(|_| run_child(me, &["--child", &arg]))
        .collect::<Result<Vec<_>, _>>()?;
    let med = |f: &dyn Fn(&Value) -> &Value| {
        let v: Vec<f64> = runs.iter().filter_map(|r| f(r).as_f64()).collect();
        if v.is_empty() {
            f64::NAN
        } else {
            p50(v)
        }
    };
    let pct_med = |k: &str| {
        json!({
            "p50": med(&|r| &r[k]["p50"]),
            "p95": med(&|r| &r[k]["p95"]),
            "runs": runs[0][k]["runs"],
        })
    };
    let opens: Vec<f64> = runs
        .iter()
        .filter_map(|r| r["open_first_search_ms"].as_f64())
        .collect();
    let row = json!({
        "concepts": n,
        "open_first_search_ms": pct(&opens),
        "warm_search_ms": pct_med("warm_search_ms"),
        "get_3_sections_ms": pct_med("get_3_sections_ms"),
        "manifest_ms": pct_med("manifest_ms"),
        "manifest_chars": runs[0]["manifest_chars"],
        "peak_rss_mb": med(&|r| &r["peak_rss_mb"]),
    });
    println!(
        "{:>6} concepts: open+first search {:7.2} ms | warm search p50 {:.3} ms | get 3 sections p50 {:.4} ms | manifest p50 {:.3} ms ({} chars) | peak RSS {:.1} MB",
        n,
        num(&row["open_first_search_ms"]["p50"]),
        num(&row["warm_search_ms"]["p50"]),
        num(&row["get_3_sections_ms"]["p50"]),
        num(&row["manifest_ms"]["p50"]),
        row["manifest_chars"],
        num(&row["peak_rss_mb"]),
    );
    Ok(row)
}

/// The write figures of `n` concepts, from one process on a copy of the tenant.
fn writes(me: &Path, n: usize) -> Result<Value, String> {
    let v = run_child(me, &["--writes-child", &n.to_string()])?;
    println!(
        "{:>6} concepts: write p50 {:.2} ms (p95 {:.2}) | stale-hash refusal p50 {:.3} ms | transact of 25 p50 {:.2} ms (p95 {:.2}) | restore (25 docs differ) p50 {:.1} ms, (all 80 commits) {:.0} ms | history page p50 {:.3} ms",
        n,
        num(&v["write_ms"]["p50"]),
        num(&v["write_ms"]["p95"]),
        num(&v["stale_refusal_ms"]["p50"]),
        num(&v["transact25_ms"]["p50"]),
        num(&v["transact25_ms"]["p95"]),
        num(&v["restore_ms"]["p50"]),
        num(&v["restore_all_ms"]),
        num(&v["history_page_ms"]["p50"]),
    );
    Ok(v)
}

fn num(v: &Value) -> f64 {
    v.as_f64().unwrap_or(f64::NAN)
}

fn run(args: &Args) -> Result<(), String> {
    let me = std::env::current_exe().map_err(|e| e.to_string())?;
    for &n in &args.sizes {
        setup(n).map_err(|e| format!("setup of {n}: {e}"))?;
    }
    if args.setup_only {
        return Ok(());
    }
    let mut read_rows = vec![];
    if args.reads {
        for &n in &args.sizes {
            read_rows.push(reads(&me, n)?);
        }
    }
    let mut write_rows = vec![];
    if args.writes {
        for &n in &args.sizes {
            write_rows.push(writes(&me, n)?);
        }
    }
    let doc = json!({"reads": read_rows, "writes": write_rows});
    write_json(&out_dir().join("results.json"), &doc)?;
    if let Some(path) = &args.json {
        write_json(path, &doc)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().collect();
    let child_mode = argv.get(1).map(String::as_str);
    if matches!(child_mode, Some("--child" | "--writes-child")) {
        let n: usize = argv.get(2).and_then(|s| s.parse().ok()).unwrap_or(500);
        let r = if child_mode == Some("--child") {
            child(n)
        } else {
            writes_child(n)
        };
        return match r {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    okfit_bench::kbdata::main_of(parse_args(&argv), USAGE, |a| run(&a))
}
