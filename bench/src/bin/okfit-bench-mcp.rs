//! `okfit-bench-mcp`: measures the MCP server (`okfit-mcp`, release build).
//!
//! From the workspace root: `cargo run --release -p okfit-bench --bin okfit-bench-mcp`.
//! It builds `okfit-mcp`, then:
//! - start-up: spawn → `initialize` → `tools/list` answered, on the repository's
//!   own `okf/` bundle (p50/p95 of `--runs`, default 21);
//! - per size of `--sizes` (default 10000; bundles `bench/out/b<N>` from the
//!   generator, made when missing or stale): the first `list_concepts` after
//!   spawn (five servers), then 200 warm `list_concepts` and `get_concept`
//!   round trips and the server's peak RSS (`VmHWM`) after them; and what
//!   the Claude Code plugin's hooks cost there: `okfit context --format
//!   json` (the session-start orientation reads only the config) and
//!   `okfit hook post-tool-use` after a `Write` of one concept, and
//!   `okfit validate --file` on that concept, each spawn → exit, 21 runs
//!   after one warm-up;
//! - `validate_bundle` through the server: the first call after spawn
//!   (eleven servers, each paired with one `okfit validate` run made just
//!   before or just after it, whose times the first call is compared
//!   with), the first call of a server left to settle after the handshake
//!   (as an agent's first call comes seconds later; five servers, each
//!   called once it used no CPU for 300 ms, with `now` unset, and its
//!   peak RSS after that call), then warm calls with nothing changed and after one concept was
//!   rewritten (21 each, alternating two versions of the file, which is
//!   restored), the default answer's size, and `okfit validate`'s own time
//!   (21 runs);
//! - with `--committed N`: the standard bundle of N concepts committed to
//!   its own git repository (`bench/out/git<N>`, as `okfit-bench
//!   --committed` makes it; its concepts record `generated` without a
//!   digest, so the git tier of `generated-at-drift` reads their history):
//!   `validate_bundle`'s settled first call, then warm calls with nothing
//!   changed and after one concept was rewritten, and `okfit validate`.
//!
//! `--json PATH` also writes the figures as JSON. Targets (at 10,000
//! concepts): start-up < 10 ms; warm list/get < 1 ms; first call < 300 ms;
//! RSS < 100 MB; `validate_bundle` after one change < 50 ms, its first
//! call no slower than the `okfit validate` runs paired with it, and after
//! one change < 50 ms in the committed bundle too; at 20,000: `okfit
//! context` < 10 ms, `okfit validate --file` < 30 ms.

use okfit_bench::generator::{self, GenParams};
use okfit_bench::kbdata::p95;
use okfit_bench::report::write_json;
use okfit_bench::stdio::Session;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: okfit-bench-mcp [--runs N] [--sizes LIST] [--committed N] [--json PATH]
  --runs N        start-up runs on okf/ (default 21)
  --sizes LIST    comma-separated concept counts (default 10000)
  --committed N   also measure validate_bundle on N concepts committed to git
  --json PATH     also write the results as JSON to PATH";

/// The stamp file `okfit-bench` keeps in `bench/out/b<N>` (same name, same content).
const STAMP_FILE: &str = ".okfit-gen-stamp";
/// Servers started per size for the first call.
const FIRST_CALL_SERVERS: usize = 5;
/// Servers started per size for `validate_bundle`'s first call, each
/// paired with one CLI run (odd, so the last pair starts with the CLI).
const VALIDATE_PAIRS: usize = 11;
/// Warm round trips per tool.
const WARM_CALLS: usize = 200;
/// The size the targets are stated for.
const TARGET_CONCEPTS: usize = 10_000;
/// Runs of each `okfit` command (after one warm-up).
const CLI_RUNS: usize = 21;

/// A server on `project` in project mode.
fn start(bin: &Path, project: &Path) -> Result<Session, String> {
    let mut cmd = Command::new(bin);
    cmd.env("OKFIT_PROJECT_DIR", project)
        .env_remove("CLAUDE_PROJECT_DIR");
    Session::start(cmd)
}

/// Median and 95th percentile of `v` in ms.
#[derive(Clone, Copy)]
struct Pct {
    p50: f64,
    p95: f64,
}

impl Pct {
    fn of(v: &[f64]) -> Pct {
        match okfit_bench::measure::stats(v) {
            Some(s) => Pct {
                p50: s.median,
                p95: p95(v.to_vec()),
            },
            None => Pct {
                p50: f64::NAN,
                p95: f64::NAN,
            },
        }
    }

    fn json(self, runs: usize) -> serde_json::Value {
        json!({"p50": self.p50, "p95": self.p95, "runs": runs})
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// `n` with thousands separators.
fn count(n: usize) -> String {
    okfit_core::kb::model::with_commas(n as u64)
}

struct Args {
    runs: usize,
    sizes: Vec<usize>,
    committed: Option<usize>,
    json: Option<PathBuf>,
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut args = Args {
        runs: 21,
        sizes: vec![TARGET_CONCEPTS],
        committed: None,
        json: None,
    };
    let Some(flags) = okfit_bench::kbdata::flag_values()? else {
        return Ok(None);
    };
    for (flag, value) in flags {
        if !matches!(
            flag.as_str(),
            "--runs" | "--sizes" | "--committed" | "--json"
        ) {
            return Err(format!("unknown argument {flag:?}\n{USAGE}"));
        }
        let positive = |s: &str| okfit_bench::kbdata::positive(&flag, s);
        match flag.as_str() {
            "--runs" => args.runs = positive(&value)?,
            "--committed" => {
                let n = positive(&value)?;
                if n > generator::MAX_CONCEPTS {
                    return Err(format!(
                        "--committed: {n} exceeds the generator limit of {}",
                        generator::MAX_CONCEPTS
                    ));
                }
                args.committed = Some(n);
            }
            "--sizes" => {
                args.sizes = value
                    .split(',')
                    .filter(|s| !s.trim().is_empty())
                    .map(positive)
                    .collect::<Result<_, _>>()?;
                if args.sizes.is_empty() {
                    return Err("--sizes needs at least one size".into());
                }
                if let Some(n) = args.sizes.iter().find(|&&n| n > generator::MAX_CONCEPTS) {
                    return Err(format!(
                        "--sizes: {n} exceeds the generator limit of {}",
                        generator::MAX_CONCEPTS
                    ));
                }
            }
            _ => args.json = Some(PathBuf::from(value)),
        }
    }
    Ok(Some(args))
}

/// Generates `bench/out/b<n>` unless its stamp says it is up to date (as `okfit-bench` does).
fn prepare_bundle(root: &Path, n: usize) -> Result<PathBuf, String> {
    let params = GenParams::with_default_folders(n);
    let dir = root.join(format!("bench/out/b{n}"));
    let stamp_path = dir.join(STAMP_FILE);
    let stamp = params.stamp();
    let cached = std::fs::read_to_string(&stamp_path).is_ok_and(|s| s == stamp)
        && dir.join(generator::BUNDLE_DIR).join("index.md").is_file();
    if !cached {
        eprintln!("okfit-bench-mcp: generating bench/out/b{n}");
        let _ = std::fs::remove_file(&stamp_path);
        generator::generate(&dir, &params).map_err(|e| format!("generate b{n}: {e}"))?;
        std::fs::write(&stamp_path, &stamp)
            .map_err(|e| format!("cannot write {}: {e}", stamp_path.display()))?;
    }
    Ok(dir)
}

/// Figures of one bundle size.
struct SizeResult {
    concepts: usize,
    first: Pct,
    list: Pct,
    get: Pct,
    rss: f64,
    context: Pct,
    hook: Pct,
    file: Pct,
    validate: ValidateResult,
}

/// Servers left to settle before their first `validate_bundle`.
const SETTLED_SERVERS: usize = 5;

/// `validate_bundle` through the server, and the CLI beside it.
struct ValidateResult {
    first: Pct,
    /// The first call of a server left to settle after the handshake.
    settled: Pct,
    /// The largest peak RSS of those servers after that call, MB.
    settled_rss: f64,
    unchanged: Pct,
    changed: Pct,
    answer_bytes: usize,
    cli: Pct,
    /// The CLI runs paired with the first calls.
    cli_paired: Pct,
}

/// Validation runs at this instant, as `okfit-bench` does.
const NOW: &str = "2026-09-01T00:00:00Z";

fn measure_validate(bin: &Path, dir: &Path, concept: &Path) -> Result<ValidateResult, String> {
    let call = format!(r#"{{"name":"validate_bundle","arguments":{{"now":"{NOW}"}}}}"#);
    let okfit = bin.with_file_name("okfit");
    let cli_args = ["validate", "--format", "json", "--now", NOW];
    // Each first call is paired with one CLI run, so both see the same
    // state of a shared machine (whose speed drifts by a third within
    // minutes): the first call is compared with these runs. The CLI runs
    // first in even pairs and second in odd ones, so neither side always
    // follows the other's exit; the last pair (even) keeps its server.
    run_cli(&okfit, dir, &cli_args, "")?;
    let (mut firsts, mut paired) = (vec![], vec![]);
    let mut last = None;
    for i in 0..VALIDATE_PAIRS {
        if i % 2 == 0 {
            paired.push(run_cli(&okfit, dir, &cli_args, "")?);
        }
        let mut s = start(bin, dir)?;
        s.initialize()?;
        let t = Instant::now();
        let answer = s.request("tools/call", &call)?;
        firsts.push(ms(t.elapsed()));
        if i + 1 == VALIDATE_PAIRS {
            last = Some((s, answer));
        } else {
            s.close();
        }
        if i % 2 == 1 {
            paired.push(run_cli(&okfit, dir, &cli_args, "")?);
        }
    }
    let (settled, settled_rss) = measure_settled(bin, dir)?;
    let (s, answer) = last.ok_or("no server was started")?;
    let (unchanged, changed) = warm_calls(s, &call, concept)?;
    let cli = time_cli(&okfit, dir, &cli_args, "")?;
    Ok(ValidateResult {
        first: Pct::of(&firsts),
        settled,
        settled_rss,
        unchanged,
        changed,
        answer_bytes: answer.len(),
        cli,
        cli_paired: Pct::of(&paired),
    })
}

/// `call` through the running server `s` ([`CLI_RUNS`] times with nothing
/// changed, then as many after `concept` was rewritten, alternating two
/// versions of it; the file is restored), and the server closed.
fn warm_calls(mut s: Session, call: &str, concept: &Path) -> Result<(Pct, Pct), String> {
    let mut unchanged = vec![];
    for _ in 0..CLI_RUNS {
        let t = Instant::now();
        s.request("tools/call", call)?;
        unchanged.push(ms(t.elapsed()));
    }
    let original = std::fs::read(concept).map_err(|e| format!("{}: {e}", concept.display()))?;
    let mut edited = original.clone();
    edited.extend_from_slice(b"\nOne more line, written by the benchmark.\n");
    let mut changed = vec![];
    let mut result = Ok(());
    for i in 0..CLI_RUNS {
        let bytes = if i % 2 == 0 { &edited } else { &original };
        if let Err(e) = std::fs::write(concept, bytes) {
            result = Err(format!("{}: {e}", concept.display()));
            break;
        }
        let t = Instant::now();
        if let Err(e) = s.request("tools/call", call) {
            result = Err(e);
            break;
        }
        changed.push(ms(t.elapsed()));
    }
    let restored = std::fs::write(concept, &original);
    s.close();
    result?;
    restored.map_err(|e| format!("restoring {}: {e}", concept.display()))?;
    Ok((Pct::of(&unchanged), Pct::of(&changed)))
}

/// `validate_bundle` on a bundle committed to git.
struct CommittedResult {
    concepts: usize,
    /// The first call of a server left to settle after the handshake.
    settled: Pct,
    unchanged: Pct,
    changed: Pct,
    cli: Pct,
}

/// The standard bundle of `n` concepts committed to its own repository
/// (made when missing or stale), and `validate_bundle` over it.
fn measure_committed(root: &Path, bin: &Path, n: usize) -> Result<CommittedResult, String> {
    let source = prepare_bundle(root, n)?;
    let dir = root.join(format!("bench/out/git{n}"));
    let stamp = GenParams::with_default_folders(n).stamp();
    if okfit_bench::committed::make(&source, &dir, &stamp)? > 0 {
        eprintln!("okfit-bench-mcp: committed bench/out/git{n}");
    }
    let concept = some_concept(&dir.join(generator::BUNDLE_DIR))?;
    let (settled, _) = measure_settled(bin, &dir)?;
    let call = format!(r#"{{"name":"validate_bundle","arguments":{{"now":"{NOW}"}}}}"#);
    let mut s = start(bin, &dir)?;
    s.initialize()?;
    s.request("tools/call", &call)?;
    let (unchanged, changed) = warm_calls(s, &call, &concept)?;
    let okfit = bin.with_file_name("okfit");
    let cli = time_cli(
        &okfit,
        &dir,
        &["validate", "--format", "json", "--now", NOW],
        "",
    )?;
    Ok(CommittedResult {
        concepts: n,
        settled,
        unchanged,
        changed,
        cli,
    })
}

/// The first concept file (by name) of the first folder of `bundle`.
fn some_concept(bundle: &Path) -> Result<PathBuf, String> {
    let sorted = |dir: &Path| {
        okfit_bench::committed::sorted_entries(dir).map_err(|e| format!("{}: {e}", dir.display()))
    };
    for area in sorted(bundle)?.into_iter().filter(|p| p.is_dir()) {
        let concept = sorted(&area)?
            .into_iter()
            .find(|p| okfit_bench::committed::is_concept(p));
        if let Some(c) = concept {
            return Ok(c);
        }
    }
    Err(format!("{}: no concept file", bundle.display()))
}

/// The first `validate_bundle` (`now` unset, as an agent calls it) of
/// servers left to settle after the handshake, and their largest peak RSS
/// after it.
fn measure_settled(bin: &Path, dir: &Path) -> Result<(Pct, f64), String> {
    let call = r#"{"name":"validate_bundle","arguments":{}}"#;
    let (mut times, mut rss) = (vec![], 0f64);
    for _ in 0..SETTLED_SERVERS {
        let mut s = start(bin, dir)?;
        s.initialize()?;
        if !s.wait_settled(Duration::from_millis(300), Duration::from_secs(60)) {
            s.close();
            return Err("the server did not settle within 60 s".into());
        }
        let t = Instant::now();
        s.request("tools/call", call)?;
        times.push(ms(t.elapsed()));
        rss = rss.max(s.peak_rss_mb().unwrap_or(f64::NAN));
        s.close();
    }
    Ok((Pct::of(&times), rss))
}

/// Wall time of `okfit ARGS` in `dir` with `input` on stdin, spawn → exit:
/// one warm-up, then [`CLI_RUNS`] runs. A failing run is an error.
fn time_cli(okfit: &Path, dir: &Path, args: &[&str], input: &str) -> Result<Pct, String> {
    run_cli(okfit, dir, args, input)?;
    let walls = (0..CLI_RUNS)
        .map(|_| run_cli(okfit, dir, args, input))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Pct::of(&walls))
}

/// Wall time in ms of one `okfit ARGS` in `dir` with `input` on stdin,
/// spawn → exit. A failing run is an error.
fn run_cli(okfit: &Path, dir: &Path, args: &[&str], input: &str) -> Result<f64, String> {
    use std::io::Write;
    use std::process::Stdio;
    let t = Instant::now();
    let mut child = Command::new(okfit)
        .args(args)
        .current_dir(dir)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("OKFIT_PROJECT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("{}: {e}", okfit.display()))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(input.as_bytes())
            .map_err(|e| format!("okfit {args:?}: stdin: {e}"))?;
    }
    let out = child
        .wait_with_output()
        .map_err(|e| format!("okfit {args:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!("okfit {args:?} failed in {}", dir.display()));
    }
    Ok(ms(t.elapsed()))
}

fn measure_size(bin: &Path, dir: &Path, n: usize) -> Result<SizeResult, String> {
    let list_first = r#"{"name":"list_concepts","arguments":{"limit":50}}"#;
    let mut firsts = vec![];
    for _ in 1..FIRST_CALL_SERVERS {
        let mut s = start(bin, dir)?;
        s.initialize()?;
        let t = Instant::now();
        s.request("tools/call", list_first)?;
        firsts.push(ms(t.elapsed()));
        s.close();
    }
    // The last server also takes the warm calls.
    let mut s = start(bin, dir)?;
    s.initialize()?;
    let t = Instant::now();
    s.request("tools/call", list_first)?;
    firsts.push(ms(t.elapsed()));
    let mid_id = {
        let line = s.request(
            "tools/call",
            &format!(
                r#"{{"name":"list_concepts","arguments":{{"limit":1,"offset":{}}}}}"#,
                n / 2
            ),
        )?;
        let v: serde_json::Value =
            serde_json::from_str(&line).map_err(|e| format!("bad JSON: {e}"))?;
        v["result"]["structuredContent"]["items"][0]["id"]
            .as_str()
            .ok_or("no id in list_concepts")?
            .to_string()
    };
    let mut list = vec![];
    let mut get = vec![];
    for i in 0..WARM_CALLS {
        let t = Instant::now();
        s.request(
            "tools/call",
            &format!(
                r#"{{"name":"list_concepts","arguments":{{"limit":20,"offset":{}}}}}"#,
                (i * 20) % n.max(20)
            ),
        )?;
        list.push(ms(t.elapsed()));
        let t = Instant::now();
        s.request(
            "tools/call",
            &format!(r#"{{"name":"get_concept","arguments":{{"id":"{mid_id}"}}}}"#),
        )?;
        get.push(ms(t.elapsed()));
    }
    let rss = s.peak_rss_mb().unwrap_or(f64::NAN);
    s.close();
    let okfit = bin.with_file_name("okfit");
    let context = time_cli(&okfit, dir, &["context", "--format", "json"], "")?;
    let file = dir.join(generator::BUNDLE_DIR).join(format!("{mid_id}.md"));
    let event = json!({
        "hook_event_name": "PostToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": file.display().to_string()},
        "cwd": dir.display().to_string(),
    })
    .to_string();
    let hook = time_cli(&okfit, dir, &["hook", "post-tool-use"], &event)?;
    let rel = format!("{}/{mid_id}.md", generator::BUNDLE_DIR);
    let file = time_cli(
        &okfit,
        dir,
        &["validate", "--file", &rel, "--format", "json"],
        "",
    )?;
    let concept = dir.join(&rel);
    let validate = measure_validate(bin, dir, &concept)?;
    Ok(SizeResult {
        concepts: n,
        validate,
        first: Pct::of(&firsts),
        list: Pct::of(&list),
        get: Pct::of(&get),
        rss,
        context,
        hook,
        file,
    })
}

fn run(root: &Path, args: &Args) -> Result<bool, String> {
    let status = Command::new("cargo")
        .current_dir(root)
        .args(["build", "--release", "-p", "okfit", "--bins"])
        .status()
        .map_err(|e| format!("cargo: {e}"))?;
    if !status.success() {
        return Err("cargo build failed".into());
    }
    let bin = root.join("target/release/okfit-mcp");

    // Start-up on the repository's own bundle.
    let mut startup = vec![];
    for _ in 0..args.runs {
        let t = Instant::now();
        let mut s = start(&bin, root)?;
        s.initialize()?;
        s.request("tools/list", "{}")?;
        startup.push(ms(t.elapsed()));
        s.close();
    }
    let su = Pct::of(&startup);

    let mut results = vec![];
    for &n in &args.sizes {
        let dir = prepare_bundle(root, n)?;
        results.push(measure_size(&bin, &dir, n)?);
    }
    let committed = match args.committed {
        Some(n) => Some(measure_committed(root, &bin, n)?),
        None => None,
    };

    println!("measure                                      median        p95      target");
    println!(
        "spawn → initialize → tools/list (okf/)      {:8.2} ms {:8.2} ms   < 10 ms",
        su.p50, su.p95
    );
    let mut met = su.p50 < 10.0;
    for r in &results {
        let at = count(r.concepts);
        let target = |t: &'static str| if r.concepts == TARGET_CONCEPTS { t } else { "" };
        let first = format!("first list_concepts, {at} concepts");
        let list = format!("warm list_concepts (limit 20), {at}");
        let get = format!("warm get_concept, {at}");
        let rss = format!("server peak RSS, {at}");
        let context = format!("okfit context, {at}");
        let hook = format!("okfit hook post-tool-use, {at}");
        let file = format!("okfit validate --file, {at}");
        println!(
            "{first:<44}{:8.1} ms {:8.1} ms   {}",
            r.first.p50,
            r.first.p95,
            target("< 300 ms")
        );
        println!(
            "{list:<44}{:8.3} ms {:8.3} ms   {}",
            r.list.p50,
            r.list.p95,
            target("< 1 ms")
        );
        println!(
            "{get:<44}{:8.3} ms {:8.3} ms   {}",
            r.get.p50,
            r.get.p95,
            target("< 1 ms")
        );
        println!(
            "{rss:<44}{:8.1} MB {:11}   {}",
            r.rss,
            "",
            target("< 100 MB")
        );
        let context_target = if r.concepts == 20_000 { "< 10 ms" } else { "" };
        println!(
            "{context:<44}{:8.2} ms {:8.2} ms   {context_target}",
            r.context.p50, r.context.p95
        );
        println!("{hook:<44}{:8.2} ms {:8.2} ms", r.hook.p50, r.hook.p95);
        let file_target = if r.concepts == 20_000 { "< 30 ms" } else { "" };
        println!(
            "{file:<44}{:8.2} ms {:8.2} ms   {file_target}",
            r.file.p50, r.file.p95
        );
        let v = &r.validate;
        let vfirst = format!("validate_bundle, first call, {at}");
        let vsettled = format!("validate_bundle, settled server, {at}");
        let vwarm = format!("validate_bundle, nothing changed, {at}");
        let vchanged = format!("validate_bundle, one file changed, {at}");
        let vcli = format!("okfit validate (the CLI), {at}");
        let vpaired = format!("CLI runs paired with first calls, {at}");
        let vsize = format!("validate_bundle default answer, {at}");
        println!(
            "{vfirst:<44}{:8.1} ms {:8.1} ms   {}",
            v.first.p50,
            v.first.p95,
            target("<= the CLI")
        );
        println!(
            "{vsettled:<44}{:8.1} ms {:8.1} ms   (peak RSS {:.1} MB)",
            v.settled.p50, v.settled.p95, v.settled_rss
        );
        println!(
            "{vwarm:<44}{:8.1} ms {:8.1} ms",
            v.unchanged.p50, v.unchanged.p95
        );
        println!(
            "{vchanged:<44}{:8.1} ms {:8.1} ms   {}",
            v.changed.p50,
            v.changed.p95,
            target("< 50 ms")
        );
        println!("{vcli:<44}{:8.1} ms {:8.1} ms", v.cli.p50, v.cli.p95);
        println!(
            "{vpaired:<44}{:8.1} ms {:8.1} ms",
            v.cli_paired.p50, v.cli_paired.p95
        );
        println!("{vsize:<44}{:8.1} KB", v.answer_bytes as f64 / 1000.0);
        if r.concepts == TARGET_CONCEPTS {
            met &= v.changed.p50 < 50.0 && v.first.p50 <= v.cli_paired.p50;
            met &= r.first.p50 < 300.0 && r.list.p50 < 1.0 && r.get.p50 < 1.0 && r.rss < 100.0;
        }
        if r.concepts == 20_000 {
            met &= r.context.p50 < 10.0 && r.file.p50 < 30.0;
        }
    }
    if let Some(c) = &committed {
        let at = count(c.concepts);
        let target = if c.concepts == TARGET_CONCEPTS {
            "< 50 ms"
        } else {
            ""
        };
        let rows = [
            (format!("in git: settled server, {at}"), c.settled, ""),
            (format!("in git: nothing changed, {at}"), c.unchanged, ""),
            (format!("in git: one file changed, {at}"), c.changed, target),
            (format!("in git: okfit validate, {at}"), c.cli, ""),
        ];
        for (label, p, t) in rows {
            println!("{label:<44}{:8.1} ms {:8.1} ms   {t}", p.p50, p.p95);
        }
        if c.concepts == TARGET_CONCEPTS {
            met &= c.changed.p50 < 50.0;
        }
    }
    if args.sizes.contains(&TARGET_CONCEPTS) {
        println!("targets: {}", if met { "MET" } else { "MISSED" });
    } else {
        println!(
            "targets: start-up {} (the others are stated at 10,000 concepts)",
            if met { "MET" } else { "MISSED" }
        );
    }

    if let Some(path) = &args.json {
        let sizes: Vec<serde_json::Value> = results
            .iter()
            .map(|r| {
                json!({
                    "concepts": r.concepts,
                    "first_call_ms": r.first.json(FIRST_CALL_SERVERS),
                    "list_ms": r.list.json(WARM_CALLS),
                    "get_ms": r.get.json(WARM_CALLS),
                    "rss_mb": r.rss,
                    "context_ms": r.context.json(CLI_RUNS),
                    "hook_ms": r.hook.json(CLI_RUNS),
                    "file_ms": r.file.json(CLI_RUNS),
                    "validate_bundle": {
                        "first_call_ms": r.validate.first.json(VALIDATE_PAIRS),
                        "settled_first_call_ms": r.validate.settled.json(SETTLED_SERVERS),
                        "settled_rss_mb": r.validate.settled_rss,
                        "unchanged_ms": r.validate.unchanged.json(CLI_RUNS),
                        "one_file_changed_ms": r.validate.changed.json(CLI_RUNS),
                        "answer_bytes": r.validate.answer_bytes,
                        "cli_ms": r.validate.cli.json(CLI_RUNS),
                        "cli_paired_ms": r.validate.cli_paired.json(VALIDATE_PAIRS),
                    },
                })
            })
            .collect();
        let mut doc = json!({"startup_ms": su.json(args.runs), "sizes": sizes});
        if let Some(c) = &committed {
            doc["committed"] = json!({
                "concepts": c.concepts,
                "settled_first_call_ms": c.settled.json(SETTLED_SERVERS),
                "unchanged_ms": c.unchanged.json(CLI_RUNS),
                "one_file_changed_ms": c.changed.json(CLI_RUNS),
                "cli_ms": c.cli.json(CLI_RUNS),
            });
        }
        write_json(path, &doc)?;
    }
    Ok(met)
}

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default();
    let args = match okfit_bench::kbdata::parsed(parse_args(), USAGE) {
        Ok(a) => a,
        Err(code) => return code,
    };
    match run(&root, &args) {
        Ok(_) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
