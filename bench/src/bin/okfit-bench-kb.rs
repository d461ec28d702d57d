//! `okfit-bench-kb`: measures the knowledge read model over the embedded
//! store (release build, in process).
//!
//! From the workspace root: `cargo run --release -p okfit-bench --bin okfit-bench-kb`.
//! For each size (500 / 5,000 / 20,000 concepts, in bundles of 500 made by
//! the generator with one seed per bundle) it builds a store tenant under
//! `bench/out/kb/` once, then measures in a fresh child process:
//! - open + first search (a new connection, one search);
//! - warm search p50 over a rotating set of 24 queries (after one pass);
//! - batched get of 3 sections p50;
//! - whole manifest read p50;
//! - peak RSS (`VmHWM`) of that process.
//!
//! Targets at 20,000: open + first search < 100 ms, warm search p50 < 0.3 ms,
//! get of 3 sections < 0.05 ms, manifest < 1 ms, peak RSS < 150 MB.
//!
//! With `--writes` it also measures, on a copy of the 20,000-concept tenant:
//! single write p50 (commit + the findings for the file, as the MCP tool
//! answers), stale-hash refusal p50, transact of 25 documents p50, restore
//! p50 (undoing and redoing the last 25-document batch; also one restore
//! across all 80 commits of the run) and history page p50. Targets: < 10 ms,
//! < 1 ms, < 30 ms, < 100 ms, < 1 ms.

use mimalloc::MiMalloc;
use okfit::kb::{Change, GetOptions, Knowledge, Pre};
use okfit_core::kb::slice::SliceOptions;

use std::process::{Command, ExitCode};
use std::time::Instant;

#[global_allocator]
static GLOBAL: MiMalloc = MiMalloc;

const SIZES: [usize; 3] = [500, 5_000, 20_000];

use okfit_bench::kbdata::{dsn, out_dir, p50, p95, rss_mb, setup};

/// The measuring child: prints one JSON line.
fn child(n: usize) -> Result<(), String> {
    let queries: Vec<String> = [
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
        "session payment choice",
        "event account facts",
        "support reference",
        "usage history",
        "threshold cohort",
        "downstream table",
        "security infra",
        "finance support",
        "refresh nostrud",
        "incident latency window",
        "metric definition",
        "region revenue daily",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
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
        serde_json::json!({
            "concepts": n,
            "open_first_search_ms": open_first,
            "warm_search_p50_ms": p50(warm),
            "get_3_sections_p50_ms": p50(gets),
            "manifest_p50_ms": p50(manifests),
            "manifest_chars": m.len(),
            "peak_rss_mb": rss_mb(),
        })
    );
    Ok(())
}

/// The write-side child: prints one JSON line.
fn writes_child(n: usize) -> Result<(), String> {
    let data = out_dir().join("data");
    let src = data.join("tenants").join(format!("t{n}"));
    let dst = data.join("tenants").join(format!("w{n}"));
    let _ = std::fs::remove_dir_all(&dst);
    std::fs::create_dir_all(&dst).map_err(|e| e.to_string())?;
    std::fs::copy(src.join("okfit.sqlite"), dst.join("okfit.sqlite")).map_err(|e| e.to_string())?;
    let dsn = format!("okf://{}?tenant=w{n}", data.display());
    let kb = Knowledge::open(&dsn).map_err(|e| e.to_string())?;
    let start_rev = kb.head().map_err(|e| e.to_string())?.unwrap_or_default();
    let docs = kb.list_sources().map_err(|e| e.to_string())?;
    let concepts: Vec<(String, String, String)> = docs
        .into_iter()
        .filter(|(_, p, _)| p.contains("concept-"))
        .step_by(37)
        .collect();
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
    let latest = page.revisions[0].revision.clone();
    let before_batch = page.revisions[1].revision.clone();
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
        serde_json::json!({
            "concepts": n,
            "write_p50_ms": p50(single.clone()),
            "write_p95_ms": p95(single),
            "stale_refusal_p50_ms": p50(refused),
            "transact25_p50_ms": p50(batches.clone()),
            "transact25_p95_ms": p95(batches),
            "restore_p50_ms": p50(restores),
            "restore_all_ms": restore_all,
            "history_page_p50_ms": p50(histories),
        })
    );
    drop(kb);
    let _ = std::fs::remove_dir_all(&dst);
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("--writes-child") {
        let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(20_000);
        return match writes_child(n) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    if args.get(1).map(String::as_str) == Some("--child") {
        let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(500);
        return match child(n) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("error: {e}");
                ExitCode::FAILURE
            }
        };
    }
    let sizes: Vec<usize> = match args.iter().position(|a| a == "--sizes") {
        _ if args.iter().any(|a| a == "--writes-only") => vec![],
        Some(i) => args
            .get(i + 1)
            .map(|s| s.split(',').filter_map(|x| x.parse().ok()).collect())
            .unwrap_or_default(),
        None => SIZES.to_vec(),
    };
    let me = match std::env::current_exe() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut results = vec![];
    for n in sizes {
        if let Err(e) = setup(n) {
            eprintln!("error: setup of {n}: {e}");
            return ExitCode::FAILURE;
        }
        // Three fresh processes; the median of each figure.
        let mut runs: Vec<serde_json::Value> = vec![];
        for _ in 0..3 {
            let o = match Command::new(&me).args(["--child", &n.to_string()]).output() {
                Ok(o) => o,
                Err(e) => {
                    eprintln!("error: {e}");
                    return ExitCode::FAILURE;
                }
            };
            if !o.status.success() {
                eprintln!(
                    "error: child failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                );
                return ExitCode::FAILURE;
            }
            match serde_json::from_slice(&o.stdout) {
                Ok(v) => runs.push(v),
                Err(e) => {
                    eprintln!("error: bad child output: {e}");
                    return ExitCode::FAILURE;
                }
            }
        }
        let med = |k: &str| p50(runs.iter().filter_map(|r| r[k].as_f64()).collect());
        let row = serde_json::json!({
            "concepts": n,
            "open_first_search_ms": med("open_first_search_ms"),
            "warm_search_p50_ms": med("warm_search_p50_ms"),
            "get_3_sections_p50_ms": med("get_3_sections_p50_ms"),
            "manifest_p50_ms": med("manifest_p50_ms"),
            "peak_rss_mb": med("peak_rss_mb"),
            "manifest_chars": med("manifest_chars"),
        });
        println!(
            "{:>6} concepts: open+first search {:7.2} ms | warm search p50 {:.3} ms | get 3 sections p50 {:.4} ms | manifest p50 {:.3} ms ({} chars) | peak RSS {:.1} MB",
            n,
            med("open_first_search_ms"),
            med("warm_search_p50_ms"),
            med("get_3_sections_p50_ms"),
            med("manifest_p50_ms"),
            med("manifest_chars"),
            med("peak_rss_mb"),
        );
        results.push(row);
    }
    if args.iter().any(|a| a == "--writes" || a == "--writes-only") {
        let n = 20_000;
        if let Err(e) = setup(n) {
            eprintln!("error: setup of {n}: {e}");
            return ExitCode::FAILURE;
        }
        let o = match Command::new(&me)
            .args(["--writes-child", &n.to_string()])
            .output()
        {
            Ok(o) => o,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::FAILURE;
            }
        };
        if !o.status.success() {
            eprintln!(
                "error: writes child failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
            return ExitCode::FAILURE;
        }
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap_or_default();
        println!(
            "{:>6} concepts: write p50 {:.2} ms (p95 {:.2}) | stale-hash refusal p50 {:.3} ms | transact of 25 p50 {:.2} ms (p95 {:.2}) | restore (25 docs differ) p50 {:.1} ms, (all 80 commits) {:.0} ms | history page p50 {:.3} ms",
            n,
            v["write_p50_ms"].as_f64().unwrap_or(f64::NAN),
            v["write_p95_ms"].as_f64().unwrap_or(f64::NAN),
            v["stale_refusal_p50_ms"].as_f64().unwrap_or(f64::NAN),
            v["transact25_p50_ms"].as_f64().unwrap_or(f64::NAN),
            v["transact25_p95_ms"].as_f64().unwrap_or(f64::NAN),
            v["restore_p50_ms"].as_f64().unwrap_or(f64::NAN),
            v["restore_all_ms"].as_f64().unwrap_or(f64::NAN),
            v["history_page_p50_ms"].as_f64().unwrap_or(f64::NAN),
        );
        results.push(v);
    }
    let _ = std::fs::write(
        out_dir().join("results.json"),
        serde_json::to_string_pretty(&results).unwrap_or_default(),
    );
    ExitCode::SUCCESS
}
