//! Runs searches in process, for a profiler to watch where the time goes:
//! `cargo build --release -p okfit-bench --example profile-search`, then
//! `perf record -g target/release/examples/profile-search CONNECTION QUERIES ROUNDS`
//! (QUERIES: a file of one query per line, e.g. the one
//! `OKFIT_BENCH_DUMP_QUERIES=PATH okfit-bench-search-speed` writes). Prints
//! the mean time of a warm search.

use okfit_knowledge::kb::Knowledge;
use std::process::ExitCode;
use std::time::Instant;

fn run(args: &[String]) -> Result<f64, String> {
    let [_, conn, file, rounds] = args else {
        return Err("usage: profile-search CONNECTION QUERIES ROUNDS".into());
    };
    let rounds: usize = rounds
        .parse()
        .map_err(|_| format!("ROUNDS: {rounds:?} is not a number"))?;
    let kb = Knowledge::open(conn).map_err(|e| e.to_string())?;
    let text = std::fs::read_to_string(file).map_err(|e| format!("{file}: {e}"))?;
    let queries: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if queries.is_empty() {
        return Err(format!("{file}: no queries"));
    }
    for q in &queries {
        kb.search(q, 8, None).map_err(|e| e.to_string())?;
    }
    let t = Instant::now();
    for _ in 0..rounds {
        for q in &queries {
            kb.search(q, 8, None).map_err(|e| e.to_string())?;
        }
    }
    Ok(t.elapsed().as_secs_f64() * 1e3 / (rounds.max(1) * queries.len()) as f64)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    match run(&args) {
        Ok(ms) => {
            println!("warm search: {ms:.3} ms");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("profile-search: {e}");
            ExitCode::FAILURE
        }
    }
}
