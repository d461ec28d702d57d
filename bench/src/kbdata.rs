//! Store tenants for the knowledge benchmarks: generated once under
//! `bench/out/kb/`, in bundles of 500 concepts.

use crate::generator::{self, GenParams};
use okfit_knowledge::kb::Knowledge;
use okfit_store::change::{Change, Pre};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The search queries the store and daemon benchmarks rotate through:
/// words the generator writes, one to three per query.
pub const QUERIES: [&str; 24] = [
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
];

/// Concepts per generated bundle.
pub const BUNDLE: usize = 500;

/// `bench/out/kb`.
pub fn out_dir() -> PathBuf {
    bench_out("kb")
}

/// `bench/out/<name>`: where one benchmark keeps its data (git-ignored).
pub fn bench_out(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("out")
        .join(name)
}

/// The embedded connection of tenant `t<n>`.
pub fn dsn(n: usize) -> String {
    format!("okf://{}?tenant=t{n}", data_root(n).display())
}

/// The data root that holds tenant `t<n>`: one per size, so a daemon
/// started for one size warms and serves that size alone.
pub fn data_root(n: usize) -> PathBuf {
    out_dir().join(format!("data{n}"))
}

/// Peak RSS (`VmHWM`) of process `pid`, or of this process when `None`, in
/// MB of 10^6 bytes; NaN where `/proc` does not say.
pub fn peak_rss_mb(pid: Option<u32>) -> f64 {
    let status = match pid {
        Some(p) => format!("/proc/{p}/status"),
        None => "/proc/self/status".to_string(),
    };
    std::fs::read_to_string(status)
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))?
                .split_whitespace()
                .nth(1)?
                .parse::<f64>()
                .ok()
        })
        .map_or(f64::NAN, |kib| kib * 1024.0 / 1e6)
}

/// Parses a `--sizes` value: comma-separated concept counts, each a positive
/// multiple of [`BUNDLE`] (tenants are built from bundles of that size).
pub fn parse_sizes(value: &str) -> Result<Vec<usize>, String> {
    parse_sizes_of("--sizes", value)
}

/// [`parse_sizes`] for the option `flag`, which its errors name.
pub fn parse_sizes_of(flag: &str, value: &str) -> Result<Vec<usize>, String> {
    let sizes = value
        .split(',')
        .filter(|s| !s.trim().is_empty())
        .map(|s| {
            s.trim()
                .replace('_', "")
                .parse::<usize>()
                .ok()
                .filter(|&n| n > 0 && n.is_multiple_of(BUNDLE))
                .ok_or(format!(
                    "{flag} expects positive multiples of {BUNDLE}, got {s:?}"
                ))
        })
        .collect::<Result<Vec<_>, _>>()?;
    if sizes.is_empty() {
        return Err(format!("{flag} needs at least one size"));
    }
    Ok(sizes)
}

/// `{"p50", "p95", "runs"}` of latencies `v` (ms); nulls when `v` is empty.
pub fn pct(v: &[f64]) -> serde_json::Value {
    if v.is_empty() {
        return serde_json::json!({"p50": null, "p95": null, "runs": 0});
    }
    serde_json::json!({"p50": p50(v.to_vec()), "p95": p95(v.to_vec()), "runs": v.len()})
}

fn collect(dir: &Path, rel: &str, out: &mut Vec<(String, Vec<u8>)>) -> std::io::Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)?.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let name = e.file_name().to_string_lossy().into_owned();
        let r = if rel.is_empty() {
            name.clone()
        } else {
            format!("{rel}/{name}")
        };
        if e.file_type()?.is_dir() {
            collect(&e.path(), &r, out)?;
        } else if name.ends_with(".md") {
            out.push((r, std::fs::read(e.path())?));
        }
    }
    Ok(())
}

/// Builds tenant `t<n>` once (a marker records what it holds).
pub fn setup(n: usize) -> Result<(), String> {
    let marker = out_dir().join(format!("t{n}.ready"));
    let stamp = format!(
        "data{n}: {} bundles of {BUNDLE}, {}",
        n / BUNDLE,
        GenParams::new(BUNDLE, 5).stamp()
    );
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(stamp.as_str()) {
        return Ok(());
    }
    let t = Instant::now();
    let tenant_dir = data_root(n).join("tenants").join(format!("t{n}"));
    let _ = std::fs::remove_dir_all(&tenant_dir);
    let src = out_dir().join(format!("src{n}"));
    let mut changes = vec![];
    for b in 0..n / BUNDLE {
        let mut p = GenParams::new(BUNDLE, 5);
        p.seed = 42 + b as u64;
        let dir = src.join(format!("b{b:02}"));
        generator::generate(&dir, &p).map_err(|e| e.to_string())?;
        let mut docs = vec![];
        collect(&dir.join(generator::BUNDLE_DIR), "", &mut docs).map_err(|e| e.to_string())?;
        for (path, bytes) in docs {
            changes.push(Change {
                bundle: format!("b{b:02}"),
                path,
                content: Some(bytes),
                pre: Pre::Any,
            });
        }
    }
    let kb = Knowledge::open(&dsn(n)).map_err(|e| e.to_string())?;
    kb.commit(changes, None).map_err(|e| format!("{e:?}"))?;
    std::fs::write(&marker, stamp).map_err(|e| e.to_string())?;
    eprintln!("built tenant t{n} in {:.1} s", t.elapsed().as_secs_f64());
    Ok(())
}

/// The median.
pub fn p50(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// The 95th percentile.
pub fn p95(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[(v.len() * 95 / 100).min(v.len() - 1)]
}

/// A benchmark's parsed arguments; `Err` is the exit code once `--help`
/// has printed `usage` (0) or the error has been reported (2).
pub fn parsed<T>(r: Result<Option<T>, String>, usage: &str) -> Result<T, std::process::ExitCode> {
    match r {
        Ok(Some(a)) => Ok(a),
        Ok(None) => {
            println!("{usage}");
            Err(std::process::ExitCode::SUCCESS)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Err(std::process::ExitCode::from(2))
        }
    }
}

/// A benchmark's `main`: its arguments parsed (see [`parsed`]), then `run`;
/// an error is reported on stderr and exits 1.
pub fn main_of<T>(
    args: Result<Option<T>, String>,
    usage: &str,
    run: impl FnOnce(T) -> Result<(), String>,
) -> std::process::ExitCode {
    let args = match parsed(args, usage) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// The `--flag value` and `--flag=value` pairs of the command line, in
/// order; `None` when `-h` or `--help` asks for the usage.
pub fn flag_values() -> Result<Option<Vec<(String, String)>>, String> {
    let mut out = vec![];
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        let value = match inline {
            Some(v) => v,
            None => it.next().ok_or(format!("{flag} needs a value"))?,
        };
        out.push((flag, value));
    }
    Ok(Some(out))
}

/// `s` as a positive integer (`_` may separate digits).
pub fn positive(flag: &str, s: &str) -> Result<usize, String> {
    s.trim()
        .replace('_', "")
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or(format!("{flag} expects a positive integer, got {s:?}"))
}
