//! `okfit-bench`: generates synthetic OKF bundles and measures `okfit validate`
//! on them (wall time and peak RSS). Run from anywhere in the workspace with
//! `cargo run --release -p okfit-bench -- [options]`; see `--help`.

use std::fmt::Write as _;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use okfit_bench::committed;
use okfit_bench::generator::{self, GenParams, Shape};
use okfit_bench::measure::{self, shell_quote, Exit, RunResult};

const USAGE: &str = "\
okfit-bench: benchmark `okfit validate` on synthetic OKF bundles

Usage: cargo run --release -p okfit-bench -- [options]

Unless --bin or --no-build is given, it first runs
`cargo build --release -p okfit --bin okfit` in the workspace root.
Each size N of each shape is generated (once; cached by a stamp file) into
bench/out/b<N>/ (the standard shape) or bench/out/fm<N>/ (frontmatter-heavy):
okfit.toml + okf/ with N concepts in round(N/100) folders. Then
`<bin> validate <dir> --format json --now <now>` runs once as a
warm-up and --runs times measured (stdout to /dev/null), from the workspace
root. Results: a table on stdout and bench/out/results.json.

Options:
  --sizes LIST      comma-separated concept counts (default 2000,10000,20000)
  --shapes LIST     frontmatter shapes: standard (about 500 bytes of YAML per
                    concept), frontmatter-heavy (about 1.3 KB, every
                    frontmatter family); default standard
  --runs N          measured runs per size, after one warm-up (default 5)
  --bin PATH        okfit binary to measure (default target/release/okfit;
                    giving it skips the cargo build)
  --no-build        do not run cargo build first
  --now DATETIME    value passed to --now (default 2026-09-01T00:00:00Z)
  --peer-runs N     measured runs of each peer (default: --runs)
  --json PATH       also write the results JSON to PATH
  --peer CMD        also time this shell command (run with sh -c from the
                    workspace root) per size and shape; {dir} is replaced by
                    the project dir (bench/out/b<N>), {bundle} by its okf/.
                    May be repeated. Its exit code is reported, never fatal.
  --committed N     also measure okfit on the standard bundle of N concepts
                    committed to its own git repository (bench/out/git<N>:
                    one commit of every file, then one changing every tenth
                    concept's body), where the git tier of
                    generated-at-drift reads the history; tool okfit-committed
  --check-targets   exit 1 if a 10,000-concept target is missed
  -h, --help        show this help

Targets, each shape: 10,000 concepts validated in <= 0.15 s wall (median)
and <= 60 MB peak RSS (MB = 10^6 bytes) on a 2-core machine, and at every
size at least 5 times faster than the first --peer (the okf crate's CLI).

Exit codes: 0 done; 1 a validate run failed (exit code >= 3 or killed; its
stderr is printed) or --check-targets missed; 2 bad arguments, build or I/O
error.";

const DEFAULT_SIZES: [usize; 3] = [2_000, 10_000, 20_000];
const DEFAULT_NOW: &str = "2026-09-01T00:00:00Z";
const STAMP_FILE: &str = ".okfit-gen-stamp";
const TARGET_CONCEPTS: usize = 10_000;
const TARGET_WALL_S: f64 = 0.15;
const TARGET_PEER_RATIO: f64 = 5.0;
const TARGET_RSS_MB: f64 = 60.0;

struct Args {
    sizes: Vec<usize>,
    shapes: Vec<Shape>,
    runs: usize,
    bin: Option<PathBuf>,
    build: bool,
    now: String,
    peers: Vec<String>,
    peer_runs: Option<usize>,
    json: Option<PathBuf>,
    check_targets: bool,
    committed: Option<usize>,
}

/// A failure: message plus the process exit code to use.
struct Fail(String, u8);

impl From<io::Error> for Fail {
    fn from(e: io::Error) -> Self {
        Fail(e.to_string(), 2)
    }
}

fn usage_err(msg: impl Into<String>) -> Fail {
    Fail(msg.into(), 2)
}

fn parse_count(flag: &str, v: &str) -> Result<usize, Fail> {
    v.trim()
        .replace('_', "")
        .parse::<usize>()
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| usage_err(format!("{flag} expects positive integers, got {v:?}")))
}

fn parse_args() -> Result<Option<Args>, Fail> {
    let mut args = Args {
        sizes: DEFAULT_SIZES.to_vec(),
        shapes: vec![Shape::Standard],
        runs: 5,
        bin: None,
        build: true,
        now: DEFAULT_NOW.to_string(),
        peers: Vec::new(),
        peer_runs: None,
        json: None,
        check_targets: false,
        committed: None,
    };
    let mut it = std::env::args_os().skip(1);
    while let Some(arg) = it.next() {
        let arg = arg
            .into_string()
            .map_err(|a| usage_err(format!("argument {a:?} is not valid UTF-8")))?;
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        match flag.as_str() {
            "-h" | "--help" => return Ok(None),
            "--no-build" => {
                args.build = false;
                continue;
            }
            "--check-targets" => {
                args.check_targets = true;
                continue;
            }
            "--sizes" | "--shapes" | "--runs" | "--bin" | "--now" | "--peer" | "--peer-runs"
            | "--json" | "--committed" => {}
            _ => return Err(usage_err(format!("unknown argument {arg:?} (see --help)"))),
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| usage_err(format!("{flag} needs a value")))?
                .into_string()
                .map_err(|a| usage_err(format!("value {a:?} of {flag} is not valid UTF-8")))?,
        };
        match flag.as_str() {
            "--sizes" => {
                args.sizes = value
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| parse_count(&flag, s))
                    .collect::<Result<_, _>>()?;
                if args.sizes.is_empty() {
                    return Err(usage_err("--sizes needs at least one size"));
                }
                if let Some(&n) = args.sizes.iter().find(|&&n| n > generator::MAX_CONCEPTS) {
                    return Err(usage_err(format!(
                        "--sizes: {n} exceeds the generator limit of {}",
                        generator::MAX_CONCEPTS
                    )));
                }
            }
            "--shapes" => {
                args.shapes = value
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| {
                        Shape::parse(s.trim()).ok_or_else(|| {
                            usage_err(format!(
                                "--shapes: unknown shape {s:?} (standard, frontmatter-heavy)"
                            ))
                        })
                    })
                    .collect::<Result<_, _>>()?;
                if args.shapes.is_empty() {
                    return Err(usage_err("--shapes needs at least one shape"));
                }
            }
            "--runs" => args.runs = parse_count(&flag, &value)?,
            "--peer-runs" => args.peer_runs = Some(parse_count(&flag, &value)?),
            "--committed" => args.committed = Some(parse_count(&flag, &value)?),
            "--json" => args.json = Some(PathBuf::from(value)),
            "--bin" => args.bin = Some(PathBuf::from(value)),
            "--now" => args.now = value,
            _ => {
                if !value.contains("{dir}") && !value.contains("{bundle}") {
                    eprintln!(
                        "warning: --peer command {value:?} mentions neither {{dir}} nor {{bundle}}"
                    );
                }
                args.peers.push(value);
            }
        }
    }
    Ok(Some(args))
}

/// Workspace root: the parent of this crate's manifest directory.
fn workspace_root() -> Result<PathBuf, Fail> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .ok_or_else(|| Fail("cannot locate the workspace root".into(), 2))?;
    if !root.join("Cargo.toml").is_file() {
        return Err(Fail(
            format!("workspace root {} has no Cargo.toml", root.display()),
            2,
        ));
    }
    Ok(root)
}

fn default_bin(root: &Path) -> PathBuf {
    let target = match std::env::var_os("CARGO_TARGET_DIR") {
        Some(t) if !t.is_empty() => {
            let t = PathBuf::from(t);
            if t.is_absolute() {
                t
            } else {
                std::env::current_dir().map(|c| c.join(&t)).unwrap_or(t)
            }
        }
        _ => root.join("target"),
    };
    target.join("release").join("okfit")
}

fn build_okfit(root: &Path) -> Result<(), Fail> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    eprintln!("okfit-bench: cargo build --release -p okfit --bin okfit");
    let status = Command::new(&cargo)
        .args(["build", "--release", "-p", "okfit", "--bin", "okfit"])
        .current_dir(root)
        .status()
        .map_err(|e| Fail(format!("cannot run cargo: {e}"), 2))?;
    if !status.success() {
        return Err(Fail(
            format!("cargo build --release -p okfit --bin okfit failed ({status})"),
            2,
        ));
    }
    Ok(())
}

/// Counts files and their total size under `dir`, recursively.
fn dir_usage(dir: &Path) -> io::Result<(u64, u64)> {
    let (mut files, mut bytes) = (0, 0);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in fs::read_dir(&d)? {
            let entry = entry?;
            let ty = entry.file_type()?;
            if ty.is_dir() {
                stack.push(entry.path());
            } else if ty.is_file() {
                files += 1;
                bytes += entry.metadata()?.len();
            }
        }
    }
    Ok((files, bytes))
}

/// One generated size.
struct Bundle {
    params: GenParams,
    /// Project dir relative to the workspace root, e.g. `bench/out/b2000`.
    rel_dir: String,
    files: u64,
    bytes: u64,
}

fn prepare_bundle(root: &Path, concepts: usize, shape: Shape) -> Result<Bundle, Fail> {
    let params = GenParams {
        shape,
        ..GenParams::with_default_folders(concepts)
    };
    let rel_dir = match shape {
        Shape::Standard => format!("bench/out/b{concepts}"),
        Shape::FrontmatterHeavy => format!("bench/out/fm{concepts}"),
    };
    let dir = root.join(&rel_dir);
    let stamp_path = dir.join(STAMP_FILE);
    let stamp = params.stamp();
    let cached = fs::read_to_string(&stamp_path).is_ok_and(|s| s == stamp)
        && dir.join(generator::BUNDLE_DIR).join("index.md").is_file();
    if cached {
        eprintln!("okfit-bench: {rel_dir} is up to date");
    } else {
        let _ = fs::remove_file(&stamp_path);
        let start = Instant::now();
        let s = generator::generate(&dir, &params)
            .map_err(|e| Fail(format!("generating {rel_dir}: {e}"), 2))?;
        fs::write(&stamp_path, &stamp)
            .map_err(|e| Fail(format!("cannot write {}: {e}", stamp_path.display()), 2))?;
        eprintln!(
            "okfit-bench: generated {rel_dir}: {} files, {} bytes, {} links ({} broken) in {:.2}s",
            s.files,
            s.bytes,
            s.links,
            s.broken_links,
            start.elapsed().as_secs_f64()
        );
    }
    let bundle_dir = dir.join(generator::BUNDLE_DIR);
    let (files, bytes) = dir_usage(&bundle_dir)
        .map_err(|e| Fail(format!("cannot scan {}: {e}", bundle_dir.display()), 2))?;
    Ok(Bundle {
        params,
        rel_dir,
        files,
        bytes,
    })
}

/// The standard bundle of `concepts` in its own git repository at
/// bench/out/git<N> ([`okfit_bench::committed`]). Made once; a stamp keeps it.
fn committed_bundle(root: &Path, concepts: usize) -> Result<Bundle, Fail> {
    let source = prepare_bundle(root, concepts, Shape::Standard)?;
    let rel_dir = format!("bench/out/git{concepts}");
    let made = committed::make(
        &root.join(&source.rel_dir),
        &root.join(&rel_dir),
        &source.params.stamp(),
    )
    .map_err(|e| Fail(e, 2))?;
    if made == 0 {
        eprintln!("okfit-bench: {rel_dir} is up to date");
    } else {
        eprintln!("okfit-bench: committed {rel_dir} ({made} concepts, a tenth edited)");
    }
    Ok(Bundle { rel_dir, ..source })
}

/// `okfit validate` as this run measures it.
struct Okfit<'a> {
    bin: &'a Path,
    shown: &'a str,
    root: &'a Path,
    out_dir: &'a Path,
    now: &'a str,
    runs: usize,
}

impl Okfit<'_> {
    /// Times `okfit validate` on `b` (one warm-up, whose report is kept in
    /// bench/out), as the row of `tool`.
    fn validate(&self, tool: &str, b: &Bundle) -> Result<Row, Fail> {
        let cmd_args = [
            "validate",
            b.rel_dir.as_str(),
            "--format",
            "json",
            "--now",
            self.now,
        ];
        let cmdline = std::iter::once(shell_quote(self.shown))
            .chain(cmd_args.iter().map(|a| shell_quote(a)))
            .collect::<Vec<_>>()
            .join(" ");
        eprintln!("okfit-bench: {cmdline}  (1 warm-up + {} runs)", self.runs);
        let report = self.out_dir.join(format!(
            "{}.validate.json",
            b.rel_dir.rsplit('/').next().unwrap_or("b")
        ));
        let (walls, max_rss_kib, exit) = measure_command(
            "okfit",
            self.shown,
            self.runs,
            || {
                let mut c = Command::new(self.bin);
                c.args(cmd_args).current_dir(self.root);
                c
            },
            Some(&report),
            |r| okfit_failure(&cmdline, r),
        )?;
        Ok(make_row(tool, cmdline, b, walls, max_rss_kib, exit))
    }
}

/// Measurements of one command on one bundle.
struct Row {
    tool: String,
    shape: Shape,
    command: String,
    concepts: usize,
    folders: usize,
    files: u64,
    bytes: u64,
    walls: Vec<f64>,
    max_rss_kib: u64,
    exit: Exit,
    stats: measure::Stats,
}

fn mb(bytes: f64) -> f64 {
    bytes / 1e6
}

fn rss_mb(kib: u64) -> f64 {
    mb(kib as f64 * 1024.0)
}

/// Runs `make()` once as warm-up and `runs` times measured.
/// `check` may reject a run (returns the failure to report).
fn measure_command(
    label: &str,
    program: &str,
    runs: usize,
    mut make: impl FnMut() -> Command,
    keep_stdout: Option<&Path>,
    check: impl Fn(&RunResult) -> Option<Fail>,
) -> Result<(Vec<f64>, u64, Exit), Fail> {
    let warm = measure::run(&mut make(), keep_stdout.is_some())
        .map_err(|e| Fail(format!("{label}: cannot run {program}: {e}"), 2))?;
    if let Some(f) = check(&warm) {
        return Err(f);
    }
    if let (Some(path), Some(out)) = (keep_stdout, &warm.stdout) {
        fs::write(path, out)
            .map_err(|e| Fail(format!("cannot write {}: {e}", path.display()), 2))?;
    }
    let mut walls = Vec::with_capacity(runs);
    let mut max_rss = 0;
    let mut exit = warm.exit;
    for _ in 0..runs {
        let r = measure::run(&mut make(), false)
            .map_err(|e| Fail(format!("{label}: cannot run {program}: {e}"), 2))?;
        if let Some(f) = check(&r) {
            return Err(f);
        }
        walls.push(r.wall.as_secs_f64());
        max_rss = max_rss.max(r.max_rss_kib);
        exit = r.exit;
    }
    Ok((walls, max_rss, exit))
}

fn okfit_failure(cmdline: &str, r: &RunResult) -> Option<Fail> {
    let failed = match r.exit {
        Exit::Code(c) => !(0..=2).contains(&c),
        Exit::Signal(_) => true,
    };
    if !failed {
        return None;
    }
    let how = match r.exit {
        Exit::Code(c) => format!("exited with code {c}"),
        Exit::Signal(s) => format!("was killed by signal {s}"),
    };
    let stderr = String::from_utf8_lossy(&r.stderr);
    let stderr = stderr.trim_end();
    Some(Fail(
        if stderr.is_empty() {
            format!("`{cmdline}` {how}; its stderr was empty")
        } else {
            format!("`{cmdline}` {how}; its stderr:\n{stderr}")
        },
        1,
    ))
}

fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_f64(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.6}")
    } else {
        "null".into()
    }
}

/// Each target's verdict, as lines for the report, and whether all were
/// met (`None` when nothing a target names was measured).
fn targets(rows: &[Row]) -> (Vec<String>, Option<bool>) {
    let mut lines = vec![];
    let mut all = None::<bool>;
    let mut judge = |line: String, ok: bool| {
        lines.push(format!("{line}: {}", if ok { "MET" } else { "MISSED" }));
        all = Some(all.unwrap_or(true) && ok);
    };
    for r in rows.iter().filter(|r| r.tool == "okfit") {
        if r.concepts == TARGET_CONCEPTS {
            judge(
                format!(
                    "target ({}): {TARGET_CONCEPTS} concepts in <= {TARGET_WALL_S} s median and <= {TARGET_RSS_MB} MB (measured {:.3} s, {:.1} MB)",
                    r.shape.name(),
                    r.stats.median,
                    rss_mb(r.max_rss_kib)
                ),
                r.stats.median <= TARGET_WALL_S && rss_mb(r.max_rss_kib) <= TARGET_RSS_MB,
            );
        }
        let peer = rows
            .iter()
            .find(|p| p.tool == "peer1" && p.shape == r.shape && p.concepts == r.concepts);
        if let Some(p) = peer {
            let ratio = p.stats.median / r.stats.median;
            judge(
                format!(
                    "target ({}): {} concepts at least {TARGET_PEER_RATIO}x faster than peer1 (measured {ratio:.1}x)",
                    r.shape.name(),
                    r.concepts
                ),
                ratio >= TARGET_PEER_RATIO,
            );
        }
    }
    (lines, all)
}

fn results_json(args: &Args, bin: &str, rows: &[Row]) -> String {
    let mut j = String::new();
    let cpus = std::thread::available_parallelism().map_or(0, |n| n.get());
    let unix = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    j.push_str("{\n");
    let _ = writeln!(
        j,
        "  \"harness\": \"okfit-bench/{}\",",
        env!("CARGO_PKG_VERSION")
    );
    let _ = writeln!(j, "  \"generator\": {},", json_str(generator::GENERATOR_ID));
    let _ = writeln!(j, "  \"measured_at_unix\": {unix},");
    let _ = writeln!(
        j,
        "  \"machine\": {{ \"os\": {}, \"arch\": {}, \"cpus\": {cpus} }},",
        json_str(std::env::consts::OS),
        json_str(std::env::consts::ARCH)
    );
    let _ = writeln!(j, "  \"bin\": {},", json_str(bin));
    let _ = writeln!(j, "  \"now\": {},", json_str(&args.now));
    let _ = writeln!(j, "  \"runs\": {},", args.runs);
    let met = targets(rows)
        .1
        .map_or("null".to_string(), |b| b.to_string());
    let _ = writeln!(
        j,
        "  \"target\": {{ \"concepts\": {TARGET_CONCEPTS}, \"max_median_wall_s\": {TARGET_WALL_S}, \"max_peak_rss_mb\": {TARGET_RSS_MB}, \"min_peer1_ratio\": {TARGET_PEER_RATIO}, \"met\": {met} }},"
    );
    j.push_str("  \"results\": [");
    for (i, r) in rows.iter().enumerate() {
        j.push_str(if i == 0 { "\n" } else { ",\n" });
        let walls: Vec<String> = r.walls.iter().map(|&w| json_f64(w)).collect();
        let exit_code = r.exit.code().map_or("null".to_string(), |c| c.to_string());
        let _ = write!(
            j,
"    {{ \"tool\": {}, \"shape\": {}, \"command\": {}, \"concepts\": {}, \"folders\": {}, \"files\": {}, \"bytes\": {}, \
\"wall_s\": [{}], \"min_s\": {}, \"median_s\": {}, \"max_s\": {}, \"peak_rss_kib\": {}, \"peak_rss_mb\": {}, \
\"exit_code\": {}, \"exit\": {} }}",
            json_str(&r.tool),
            json_str(r.shape.name()),
            json_str(&r.command),
            r.concepts,
            r.folders,
            r.files,
            r.bytes,
            walls.join(", "),
            json_f64(r.stats.min),
            json_f64(r.stats.median),
            json_f64(r.stats.max),
            r.max_rss_kib,
            json_f64(rss_mb(r.max_rss_kib)),
            exit_code,
            json_str(&r.exit.to_string())
        );
    }
    j.push_str("\n  ]\n}\n");
    j
}

fn render_table(rows: &[Row]) -> String {
    let mut t = String::new();
    let _ = writeln!(
        t,
        "{:<10} {:<17} {:>8} {:>7} {:>7} {:>8} {:>4} {:>8} {:>8} {:>8} {:>8} {:>5}",
        "tool",
        "shape",
        "concepts",
        "folders",
        "files",
        "disk MB",
        "runs",
        "min s",
        "median s",
        "max s",
        "RSS MB",
        "exit"
    );
    for r in rows {
        let _ = writeln!(
            t,
            "{:<10} {:<17} {:>8} {:>7} {:>7} {:>8.1} {:>4} {:>8.3} {:>8.3} {:>8.3} {:>8.1} {:>5}",
            r.tool,
            r.shape.name(),
            r.concepts,
            r.folders,
            r.files,
            mb(r.bytes as f64),
            r.walls.len(),
            r.stats.min,
            r.stats.median,
            r.stats.max,
            rss_mb(r.max_rss_kib),
            r.exit.to_string()
        );
    }
    t
}

/// Writes to stdout, ignoring a closed pipe (e.g. `| head`).
fn emit(text: &str) {
    use std::io::Write as _;
    let mut out = io::stdout().lock();
    let _ = out.write_all(text.as_bytes()).and_then(|()| out.flush());
}

fn real_main() -> Result<u8, Fail> {
    let Some(args) = parse_args()? else {
        emit(&format!("{USAGE}\n"));
        return Ok(0);
    };
    let root = workspace_root()?;
    let explicit_bin = args.bin.is_some();
    let bin = match &args.bin {
        Some(b) if b.is_relative() && b.components().count() > 1 => {
            std::env::current_dir()?.join(b)
        }
        Some(b) => b.clone(),
        None => default_bin(&root),
    };
    if args.build && !explicit_bin {
        build_okfit(&root)?;
    }
    if bin.components().count() > 1 && !bin.is_file() {
        return Err(Fail(
            format!(
                "{} does not exist; run `cargo build --release -p okfit --bin okfit` or pass --bin",
                bin.display()
            ),
            2,
        ));
    }
    let bin_str = bin.display().to_string();
    let out_dir = root.join("bench").join("out");
    fs::create_dir_all(&out_dir)
        .map_err(|e| Fail(format!("cannot create {}: {e}", out_dir.display()), 2))?;

    let mut bundles = Vec::with_capacity(args.sizes.len());
    for &shape in &args.shapes {
        for &n in &args.sizes {
            bundles.push(prepare_bundle(&root, n, shape)?);
        }
    }

    let okfit = Okfit {
        bin: &bin,
        shown: &bin_str,
        root: &root,
        out_dir: &out_dir,
        now: &args.now,
        runs: args.runs,
    };
    let mut rows = Vec::new();
    for b in &bundles {
        rows.push(okfit.validate("okfit", b)?);

        for (i, template) in args.peers.iter().enumerate() {
            let bundle_rel = format!("{}/{}", b.rel_dir, generator::BUNDLE_DIR);
            let shell = template
                .replace("{dir}", &b.rel_dir)
                .replace("{bundle}", &bundle_rel);
            let tool = format!("peer{}", i + 1);
            eprintln!("okfit-bench: [{tool}] sh -c {}", shell_quote(&shell));
            let (walls, max_rss_kib, exit) = measure_command(
                &tool,
                "sh",
                args.peer_runs.unwrap_or(args.runs),
                || {
                    let mut c = Command::new("sh");
                    c.arg("-c").arg(&shell).current_dir(&root);
                    c
                },
                None,
                |_| None,
            )?;
            if exit != Exit::Code(0) {
                eprintln!(
                    "okfit-bench: warning: [{tool}] exited {exit} on {}",
                    b.rel_dir
                );
            }
            rows.push(make_row(&tool, shell, b, walls, max_rss_kib, exit));
        }
    }

    if let Some(n) = args.committed {
        rows.push(okfit.validate("okfit-committed", &committed_bundle(&root, n)?)?);
    }

    let mut report = render_table(&rows);
    for (i, p) in args.peers.iter().enumerate() {
        let _ = writeln!(report, "peer{} = {p}", i + 1);
    }
    let (lines, met) = targets(&rows);
    for l in &lines {
        let _ = writeln!(report, "{l}");
    }
    if met.is_none() {
        let _ = writeln!(
            report,
            "target: {TARGET_CONCEPTS}-concept size not measured"
        );
    }
    emit(&report);
    let results = out_dir.join("results.json");
    fs::write(&results, results_json(&args, &bin_str, &rows))
        .map_err(|e| Fail(format!("cannot write {}: {e}", results.display()), 2))?;
    eprintln!("okfit-bench: wrote {}", results.display());
    if let Some(path) = &args.json {
        fs::copy(&results, path)
            .map_err(|e| Fail(format!("cannot write {}: {e}", path.display()), 2))?;
    }
    if args.check_targets && met != Some(true) {
        return Ok(1);
    }
    Ok(0)
}

fn make_row(
    tool: &str,
    command: String,
    b: &Bundle,
    walls: Vec<f64>,
    max_rss_kib: u64,
    exit: Exit,
) -> Row {
    let stats = measure::stats(&walls).unwrap_or(measure::Stats {
        min: f64::NAN,
        median: f64::NAN,
        max: f64::NAN,
    });
    Row {
        tool: tool.to_string(),
        shape: b.params.shape,
        command,
        concepts: b.params.concepts,
        folders: b.params.folders,
        files: b.files,
        bytes: b.bytes,
        walls,
        max_rss_kib,
        exit,
        stats,
    }
}

fn main() -> ExitCode {
    match real_main() {
        Ok(code) => ExitCode::from(code),
        Err(Fail(msg, code)) => {
            eprintln!("error: {msg}");
            ExitCode::from(code)
        }
    }
}
