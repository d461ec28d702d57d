//! `bench/RESULTS.md`: rendered from the JSON each benchmark writes, by
//! `okfit-bench-all`. Missing figures show as `–`, so a partial run still
//! gives a readable report that says what is missing.

use serde_json::Value;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Writes one benchmark's results as pretty JSON to `path` (creating its
/// folder), for the report to read.
pub fn write_json(path: &Path, doc: &Value) -> Result<(), String> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    }
    let text = serde_json::to_string_pretty(doc).map_err(|e| e.to_string())?;
    std::fs::write(path, text + "\n").map_err(|e| format!("{}: {e}", path.display()))
}

/// One step of the run: what ran and how it ended.
#[derive(Debug, Clone)]
pub struct Step {
    /// What the step measures or prepares.
    pub name: String,
    /// The exact command, shell-quoted.
    pub command: String,
    /// Wall time of the step.
    pub seconds: f64,
    /// Whether it exited 0.
    pub ok: bool,
    /// Why not, when it did not.
    pub note: Option<String>,
}

/// Everything the report is made from.
#[derive(Debug, Clone)]
pub struct Inputs {
    /// `(label, value)` lines describing the machine.
    pub machine: Vec<(String, String)>,
    /// The steps, in order.
    pub steps: Vec<Step>,
    /// Sentences about what was skipped and why.
    pub notes: Vec<String>,
    /// Labels of the peer validators, in `--peer` order.
    pub peers: Vec<String>,
    /// Folder holding the benchmarks' JSON files.
    pub suite: PathBuf,
    /// Wall time of the whole run.
    pub seconds: f64,
    /// The command line that produced the report.
    pub invocation: String,
}

fn cmd(program: &str, args: &[&str], dir: &Path) -> Option<String> {
    let o = Command::new(program)
        .args(args)
        .current_dir(dir)
        .output()
        .ok()?;
    let out = String::from_utf8_lossy(&o.stdout).trim().to_string();
    (o.status.success() && !out.is_empty()).then_some(out)
}

fn proc_field(file: &str, key: &str) -> Option<String> {
    std::fs::read_to_string(file).ok()?.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == key).then(|| v.trim().to_string())
    })
}

/// The machine the run is on, the toolchains it used and the commit measured.
pub fn machine(root: &Path) -> Vec<(String, String)> {
    let mut m = vec![];
    let cpu = proc_field("/proc/cpuinfo", "model name").unwrap_or_else(|| "unknown".into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    m.push(("CPU".into(), format!("{cpu}, {cores} cores available")));
    if let Some(kb) = proc_field("/proc/meminfo", "MemTotal").and_then(|v| {
        v.split_whitespace()
            .next()
            .and_then(|n| n.parse::<f64>().ok())
    }) {
        m.push(("Memory".into(), format!("{:.1} GiB", kb / 1024.0 / 1024.0)));
    }
    let os = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix("PRETTY_NAME=")
                    .map(|v| v.trim_matches('"').to_string())
            })
        })
        .unwrap_or_else(|| std::env::consts::OS.into());
    let kernel = cmd("uname", &["-srm"], root).unwrap_or_default();
    m.push(("OS".into(), format!("{os}; {kernel}")));
    if let Ok(l) = std::fs::read_to_string("/proc/loadavg") {
        let l: Vec<&str> = l.split_whitespace().take(3).collect();
        m.push(("Load average at start".into(), l.join(" ")));
    }
    for (label, program, args) in [
        ("rustc", "rustc", &["--version"][..]),
        ("Node.js", "node", &["--version"][..]),
        ("Chromium", "/usr/bin/chromium", &["--version"][..]),
    ] {
        if let Some(v) = cmd(program, args, root) {
            m.push((label.into(), v));
        }
    }
    if let Some(head) = cmd("git", &["rev-parse", "--short=12", "HEAD"], root) {
        let dirty = cmd(
            "git",
            &["status", "--porcelain", "--untracked-files=no"],
            root,
        )
        .is_some_and(|s| !s.is_empty());
        m.push((
            "Commit".into(),
            if dirty {
                format!("{head} with uncommitted changes")
            } else {
                head
            },
        ));
    }
    if let Some(d) = cmd("date", &["-u", "+%Y-%m-%d %H:%M UTC"], root) {
        m.push(("Date".into(), d));
    }
    m
}

fn load(dir: &Path, file: &str) -> Option<Value> {
    let text = std::fs::read_to_string(dir.join(file)).ok()?;
    serde_json::from_str(&text).ok()
}

/// Starts a section: its heading, then its benchmark's JSON, or the words
/// "Not measured in this run." when the file is missing.
fn section(out: &mut String, inputs: &Inputs, heading: &str, file: &str) -> Option<Value> {
    let _ = write!(out, "{heading}\n\n");
    let v = load(&inputs.suite, file);
    if v.is_none() {
        out.push_str("Not measured in this run.\n\n");
    }
    v
}

/// The number at a `.`-separated path.
fn num(v: &Value, path: &str) -> Option<f64> {
    path.split('.')
        .try_fold(v, |v, k| v.get(k))
        .and_then(Value::as_f64)
}

fn ms(x: Option<f64>) -> String {
    match x {
        None => "–".into(),
        Some(x) if x < 1.0 => format!("{x:.3}"),
        Some(x) if x < 10.0 => format!("{x:.2}"),
        Some(x) if x < 100.0 => format!("{x:.1}"),
        Some(x) => format!("{x:.0}"),
    }
}

/// `p50 / p95` of a latency object.
fn pair(v: &Value, path: &str) -> String {
    let p50 = num(v, &format!("{path}.p50"));
    let p95 = num(v, &format!("{path}.p95"));
    match (p50, p95) {
        (None, None) => "–".into(),
        _ => format!("{} / {}", ms(p50), ms(p95)),
    }
}

fn int(x: Option<f64>) -> String {
    match x {
        None => "–".into(),
        Some(x) if x < 0.0 => format!(
            "-{}",
            okfit_core::kb::model::with_commas((-x).round() as u64)
        ),
        Some(x) => okfit_core::kb::model::with_commas(x.round() as u64),
    }
}

fn one(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{x:.1}"))
}

fn verdict(ok: Option<bool>) -> &'static str {
    match ok {
        Some(true) => "met",
        Some(false) => "**missed**",
        None => "not measured",
    }
}

fn rows<'a>(v: &'a Value, key: &str) -> Vec<&'a Value> {
    v.get(key)
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn at<'a>(v: &'a [&'a Value], concepts: usize) -> Option<&'a Value> {
    v.iter()
        .copied()
        .find(|r| num(r, "concepts") == Some(concepts as f64))
}

fn percentile(walls: &[f64], p: usize) -> Option<f64> {
    let mut w = walls.to_vec();
    w.sort_by(|a, b| a.total_cmp(b));
    (!w.is_empty()).then(|| w[(w.len() * p / 100).min(w.len() - 1)])
}

fn validation(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## Validation: `okfit validate` and its peers",
        "validate.json",
    ) else {
        return;
    };
    let results = rows(&v, "results");
    let runs = num(&v, "runs").unwrap_or(0.0);
    let _ = writeln!(
        out,
        "Generated bundles (`okfit-gen`: about 4 KB per concept, round(N/100) folders, links of which about 5% are broken), in two shapes: *standard* (about 500 bytes of YAML per concept) and *frontmatter-heavy* (about 1.4 KB: aliases, a block `generated` with its true `body_sha256`, a `verified` list, three sources with every source field and a nested `usage_window`, nested maps in block and flow style, a comment; the same bodies). Wall time from spawn to exit and peak RSS of the process, after one warm-up run; okfit {runs:.0} runs, each peer 5. Seconds; MB = 10^6 bytes.\n"
    );
    let mut shapes: Vec<&str> = vec![];
    for r in &results {
        let shape = r.get("shape").and_then(Value::as_str).unwrap_or("standard");
        if !shapes.contains(&shape) {
            shapes.push(shape);
        }
    }
    let mut verdicts = vec![];
    for shape in shapes {
        let _ = writeln!(out, "**{shape}**\n");
        verdicts.extend(validation_table(out, inputs, &results, shape));
        out.push('\n');
    }
    let met = (!verdicts.is_empty()).then(|| verdicts.iter().all(|(_, ok)| *ok));
    let _ = writeln!(
        out,
        "Targets, each shape: 10,000 concepts in ≤ 0.15 s median and ≤ 60 MB, and at least 5× faster than okf 0.2.7 at 2,000, 10,000 and 20,000 concepts: {}.",
        verdict(met)
    );
    for (what, _) in verdicts.iter().filter(|(_, ok)| !ok) {
        let _ = writeln!(out, "- missed: {what}.");
    }
    committed(out, &results);
    if !inputs.peers.is_empty() {
        out.push_str("\nEach tool reads the same bundle from disk and writes its report: okfit `validate --format json` (conformance, lint, links, index and log checks), `okf validate --json` (its V1–V36 checks; it exits 65 because the bundle has warnings, as it should), and okf-cli `validate` (a conformance check per file). The exact commands are under Commands.\n");
    }
    out.push('\n');
}

/// The line on a bundle committed to git, beside the same bundle
/// uncommitted, when the run measured one.
fn committed(out: &mut String, results: &[&Value]) {
    let tool = |r: &&Value, t: &str| r.get("tool").and_then(Value::as_str) == Some(t);
    let Some(c) = results.iter().find(|r| tool(r, "okfit-committed")) else {
        return;
    };
    let n = num(c, "concepts");
    let plain = results.iter().find(|r| {
        tool(r, "okfit")
            && num(r, "concepts") == n
            && r.get("shape").and_then(Value::as_str) == Some("standard")
    });
    let walls = |r: &Value| -> Vec<f64> {
        r.get("wall_s")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default()
    };
    let p95 = |r: &Value| percentile(&walls(r), 95).unwrap_or(f64::NAN);
    let _ = write!(
        out,
        "\nCommitted to git: the standard bundle of {} concepts in its own repository (one commit of every file, then one changing every tenth concept's body), where every concept records `generated` without `body_sha256`, so the git tier of `generated-at-drift` reads each one's history: okfit median (p95) {:.3} ({:.3}) s, RSS {} MB",
        int(n),
        num(c, "median_s").unwrap_or(f64::NAN),
        p95(c),
        one(num(c, "peak_rss_mb")),
    );
    if let Some(p) = plain {
        let _ = write!(
            out,
            "; the same bundle outside git {:.3} ({:.3}) s",
            num(p, "median_s").unwrap_or(f64::NAN),
            p95(p)
        );
    }
    out.push_str(".\n");
}

/// One shape's table; returns each target it judged (what, met).
fn validation_table(
    out: &mut String,
    inputs: &Inputs,
    results: &[&Value],
    shape: &str,
) -> Vec<(String, bool)> {
    let mut head = "| concepts | MB on disk | okfit median (p95) s | okfit RSS MB |".to_string();
    let mut rule = "| ---: | ---: | ---: | ---: |".to_string();
    for p in &inputs.peers {
        let _ = write!(head, " {p}: median s | RSS MB | its time / okfit's |");
        rule.push_str(" ---: | ---: | ---: |");
    }
    let _ = writeln!(out, "{head}\n{rule}");
    let of_shape: Vec<&Value> = results
        .iter()
        .copied()
        .filter(|r| r.get("shape").and_then(Value::as_str).unwrap_or("standard") == shape)
        .collect();
    let mut sizes: Vec<u64> = of_shape
        .iter()
        .filter(|r| r.get("tool").and_then(Value::as_str) == Some("okfit"))
        .filter_map(|r| num(r, "concepts").map(|c| c as u64))
        .collect();
    sizes.dedup();
    let mut verdicts = vec![];
    for n in sizes {
        let of = |tool: &str| {
            of_shape
                .iter()
                .find(|r| {
                    num(r, "concepts") == Some(n as f64)
                        && r.get("tool").and_then(Value::as_str) == Some(tool)
                })
                .copied()
        };
        let Some(o) = of("okfit") else { continue };
        let walls: Vec<f64> = o
            .get("wall_s")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let med = num(o, "median_s");
        let rss = num(o, "peak_rss_mb");
        if n == 10_000 {
            let ok = med.is_some_and(|m| m <= 0.15) && rss.is_some_and(|r| r <= 60.0);
            verdicts.push((
                format!("{shape}, 10,000 concepts in ≤ 0.15 s and ≤ 60 MB"),
                ok,
            ));
        }
        let mut line = format!(
            "| {} | {} | {:.3} ({:.3}) | {} |",
            int(Some(n as f64)),
            one(num(o, "bytes").map(|b| b / 1e6)),
            med.unwrap_or(f64::NAN),
            percentile(&walls, 95).unwrap_or(f64::NAN),
            one(rss)
        );
        for i in 0..inputs.peers.len() {
            match of(&format!("peer{}", i + 1)) {
                Some(p) => {
                    let pm = num(p, "median_s");
                    let ratio = match (pm, med) {
                        (Some(a), Some(b)) if b > 0.0 => {
                            // The target names 2,000, 10,000 and 20,000
                            // concepts; smaller bundles get no verdict.
                            if i == 0 && n >= 2_000 {
                                verdicts.push((
                                    format!(
                                        "{shape}, {} concepts: at least 5× okf 0.2.7",
                                        int(Some(n as f64))
                                    ),
                                    a / b >= 5.0,
                                ));
                            }
                            format!("{:.1}×", a / b)
                        }
                        _ => "–".into(),
                    };
                    let exit = p.get("exit").and_then(Value::as_str).unwrap_or("?");
                    let _ = write!(
                        line,
                        " {:.3}{} | {} | {ratio} |",
                        pm.unwrap_or(f64::NAN),
                        if exit == "0" || exit == "65" || exit == "1" {
                            String::new()
                        } else {
                            format!(" (exit {exit})")
                        },
                        one(num(p, "peak_rss_mb"))
                    );
                }
                None => line.push_str(" – | – | – |"),
            }
        }
        let _ = writeln!(out, "{line}");
    }
    verdicts
}

/// How a column of a per-size table shows its figure.
#[derive(Clone, Copy)]
enum Col {
    /// A latency object, `p50 / p95`.
    Pair,
    /// A whole number with separators.
    Int,
    /// One decimal.
    One,
    /// Milliseconds, by magnitude.
    Ms,
    /// Two decimals.
    Ratio,
}

/// A table of one row per size: the concept count, then `cols`
/// (`(heading, key, how)`).
fn size_table(out: &mut String, rows: &[&Value], cols: &[(&str, &str, Col)]) {
    out.push_str("| concepts |");
    for (heading, _, _) in cols {
        let _ = write!(out, " {heading} |");
    }
    out.push_str("\n| ---: |");
    out.push_str(&" ---: |".repeat(cols.len()));
    out.push('\n');
    for row in rows {
        let _ = write!(out, "| {} |", int(num(row, "concepts")));
        for (_, key, how) in cols {
            let cell = match how {
                Col::Pair => pair(row, key),
                Col::Int => int(num(row, key)),
                Col::One => one(num(row, key)),
                Col::Ms => ms(num(row, key)),
                Col::Ratio => num(row, key).map_or("–".into(), |x| format!("{x:.2}")),
            };
            let _ = write!(out, " {cell} |");
        }
        out.push('\n');
    }
}

/// The line of targets stated at `concepts`: each `(label, key, limit)` is
/// met when the figure at `key` of that size's row is below `limit`.
fn targets(out: &mut String, rows: &[&Value], concepts: usize, checks: &[(&str, &str, f64)]) {
    let row = at(rows, concepts);
    let parts: Vec<String> = checks
        .iter()
        .map(|(label, key, limit)| {
            let ok = row.and_then(|r| num(r, key)).map(|x| x < *limit);
            format!("{label}: {}", verdict(ok))
        })
        .collect();
    let _ = writeln!(
        out,
        "\nTargets at {}: {}.\n",
        int(Some(concepts as f64)),
        parts.join("; ")
    );
}

fn mcp(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## MCP server, project mode (`okfit-mcp` over stdio)",
        "mcp.json",
    ) else {
        return;
    };
    let _ = writeln!(
        out,
        "Spawn → `initialize` → `tools/list` answered, on this repository's `okf/`: p50 / p95 {} ms (target < 10 ms: {}).\n",
        pair(&v, "startup_ms"),
        verdict(num(&v, "startup_ms.p50").map(|x| x < 10.0))
    );
    let r = rows(&v, "sizes");
    size_table(
        out,
        &r,
        &[
            (
                "first `list_concepts` after spawn, ms p50 / p95",
                "first_call_ms",
                Col::Pair,
            ),
            ("warm `list_concepts` ms", "list_ms", Col::Pair),
            ("warm `get_concept` ms", "get_ms", Col::Pair),
            ("peak RSS MB", "rss_mb", Col::One),
            ("`okfit context` ms", "context_ms", Col::Pair),
            ("`okfit hook post-tool-use` ms", "hook_ms", Col::Pair),
            ("`okfit validate --file` ms", "file_ms", Col::Pair),
        ],
    );
    targets(
        out,
        &r,
        10_000,
        &[
            ("first call < 300 ms", "first_call_ms.p50", 300.0),
            ("warm `list_concepts` < 1 ms", "list_ms.p50", 1.0),
            ("warm `get_concept` < 1 ms", "get_ms.p50", 1.0),
            ("RSS < 100 MB", "rss_mb", 100.0),
        ],
    );
    out.push_str("The last three columns are each a fresh `okfit` process (spawn → exit): the plugin's session-start orientation (`okfit context --format json`, config only), its check after a `Write` of one concept (`okfit hook post-tool-use`), and `okfit validate --file` on that concept (the full run's findings for it).\n");
    targets(
        out,
        &r,
        20_000,
        &[
            ("`okfit context` < 10 ms", "context_ms.p50", 10.0),
            ("`okfit validate --file` < 30 ms", "file_ms.p50", 30.0),
        ],
    );
    out.push_str("\n`validate_bundle` through the server (same bundles, `now` fixed): its first call after spawn (eleven servers, each paired with one `okfit validate --format json` run on the same bundle made just before or just after it, so that both meet the same state of the machine), the first call of a server left to settle after the handshake (an agent's first call comes seconds later: five servers, each called once it used no CPU for 300 ms, `now` unset, with their largest peak RSS after it), warm calls with nothing changed and after one concept was rewritten (21 each), and the CLI on its own (21 runs). Milliseconds, p50 / p95.\n\n");
    size_table(
        out,
        &r,
        &[
            ("first call", "validate_bundle.first_call_ms", Col::Pair),
            (
                "first call, settled server",
                "validate_bundle.settled_first_call_ms",
                Col::Pair,
            ),
            (
                "settled server's peak RSS MB",
                "validate_bundle.settled_rss_mb",
                Col::One,
            ),
            ("nothing changed", "validate_bundle.unchanged_ms", Col::Pair),
            (
                "one file changed",
                "validate_bundle.one_file_changed_ms",
                Col::Pair,
            ),
            (
                "the CLI, paired with the first calls",
                "validate_bundle.cli_paired_ms",
                Col::Pair,
            ),
            ("the CLI", "validate_bundle.cli_ms", Col::Pair),
            (
                "default answer bytes",
                "validate_bundle.answer_bytes",
                Col::Int,
            ),
        ],
    );
    targets(
        out,
        &r,
        10_000,
        &[(
            "one file changed < 50 ms",
            "validate_bundle.one_file_changed_ms.p50",
            50.0,
        )],
    );
    if let Some(r10) = r.iter().find(|x| num(x, "concepts") == Some(10_000.0)) {
        let first = num(r10, "validate_bundle.first_call_ms.p50");
        let cli = num(r10, "validate_bundle.cli_paired_ms.p50");
        let _ = writeln!(
            out,
            "First call no slower than the CLI runs paired with it at 10,000 concepts: {}.\n",
            verdict(first.zip(cli).map(|(f, c)| f <= c))
        );
    }
    if let Some(c) = v.get("committed").filter(|c| c.is_object()) {
        let n = num(c, "concepts").unwrap_or(f64::NAN);
        let changed = num(c, "one_file_changed_ms.p50");
        let _ = writeln!(
            out,
            "Committed to git: the standard bundle of {} concepts in its own repository (`bench/out/git<N>`, as under Validation), whose concepts record `generated` without a digest, so the git tier of `generated-at-drift` reads their history. `validate_bundle`, ms p50 / p95: settled server's first call {}; nothing changed {}; one file changed {} (target < 50 ms: {}); `okfit validate` {}.\n",
            okfit_core::kb::model::with_commas(n as u64),
            pair(c, "settled_first_call_ms"),
            pair(c, "unchanged_ms"),
            pair(c, "one_file_changed_ms"),
            verdict(changed.map(|x| x < 50.0)),
            pair(c, "cli_ms"),
        );
    }
}

fn store(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## Knowledge store (embedded SQLite tenant)",
        "kb.json",
    ) else {
        return;
    };
    out.push_str("Tenants of bundles of 500 generated concepts. Reads in fresh processes; milliseconds, p50 / p95.\n\n");
    let r = rows(&v, "reads");
    size_table(
        out,
        &r,
        &[
            ("open + first search", "open_first_search_ms", Col::Pair),
            ("warm search", "warm_search_ms", Col::Pair),
            ("batched get of 3 sections", "get_3_sections_ms", Col::Pair),
            ("whole manifest", "manifest_ms", Col::Pair),
            ("peak RSS MB", "peak_rss_mb", Col::One),
        ],
    );
    targets(
        out,
        &r,
        20_000,
        &[
            (
                "open + first search < 100 ms",
                "open_first_search_ms.p50",
                100.0,
            ),
            ("warm search < 0.3 ms", "warm_search_ms.p50", 0.3),
            ("get < 0.05 ms", "get_3_sections_ms.p50", 0.05),
            ("manifest < 1 ms", "manifest_ms.p50", 1.0),
            ("RSS < 150 MB", "peak_rss_mb", 150.0),
        ],
    );
    let w = rows(&v, "writes");
    if !w.is_empty() {
        out.push_str("Writes, on a copy of each tenant; milliseconds, p50 / p95. A write's time includes the validator's findings for the file, as the `write` tool answers.\n\n");
        size_table(
            out,
            &w,
            &[
                ("write", "write_ms", Col::Pair),
                ("stale-hash refusal", "stale_refusal_ms", Col::Pair),
                ("transact of 25", "transact25_ms", Col::Pair),
                ("restore (undo/redo 25)", "restore_ms", Col::Pair),
                (
                    "restore across every commit of the run",
                    "restore_all_ms",
                    Col::Ms,
                ),
                ("history page", "history_page_ms", Col::Pair),
            ],
        );
        targets(
            out,
            &w,
            20_000,
            &[
                ("write < 10 ms", "write_ms.p50", 10.0),
                ("refusal < 1 ms", "stale_refusal_ms.p50", 1.0),
                ("transact < 30 ms", "transact25_ms.p50", 30.0),
                ("restore < 100 ms", "restore_ms.p50", 100.0),
                ("history < 1 ms", "history_page_ms.p50", 1.0),
            ],
        );
    }
}

fn daemon(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## Daemon (`okfit serve` on a unix socket)",
        "serve.json",
    ) else {
        return;
    };
    let r = rows(&v, "sizes");
    size_table(
        out,
        &r,
        &[
            (
                "search over the socket, ms p50 / p95",
                "socket_search_ms",
                Col::Pair,
            ),
            (
                "search through `okfit-mcp` over the daemon",
                "mcp_search_ms",
                Col::Pair,
            ),
            ("mixed reads, requests/s (4 clients)", "rps", Col::Int),
            ("errors", "errors", Col::Int),
            ("daemon peak RSS MB", "daemon_rss_mb", Col::One),
        ],
    );
    targets(
        out,
        &r,
        5_000,
        &[
            ("socket search < 0.3 ms", "socket_search_ms.p50", 0.3),
            ("through MCP < 0.5 ms", "mcp_search_ms.p50", 0.5),
        ],
    );
}

fn search_quality(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## Search quality (`okfit-bench-search`)",
        "search.json",
    ) else {
        return;
    };
    out.push_str("The question sets of `bench/search/` over the real corpora (`../shared/corpora`): per corpus, questions that name their concept and questions that describe a situation in other words, each with the files that answer it. okfit's `search` (k = 8, direct hits then linked ones) beside plain BM25 over the raw Markdown of the same concept files (k1 1.2, b 0.75, lowercase alphanumeric tokens, no stemming).\n\n| corpus | questions | n | okfit hit@1 | hit@8 | MRR@8 | nDCG@8 | BM25 hit@1 | hit@8 | MRR@8 | nDCG@8 |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    let f3 = |x: Option<f64>| x.map_or("–".into(), |x| format!("{x:.3}"));
    let mut line = |corpus: &str, k: &Value| {
        let _ = writeln!(
            out,
            "| {corpus} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            k["kind"].as_str().unwrap_or("?"),
            int(num(k, "okfit.n")),
            f3(num(k, "okfit.hit1")),
            f3(num(k, "okfit.hit8")),
            f3(num(k, "okfit.mrr8")),
            f3(num(k, "okfit.ndcg8")),
            f3(num(k, "bm25.hit1")),
            f3(num(k, "bm25.hit8")),
            f3(num(k, "bm25.mrr8")),
            f3(num(k, "bm25.ndcg8")),
        );
    };
    for c in rows(&v, "corpora") {
        for k in rows(c, "kinds") {
            line(c["corpus"].as_str().unwrap_or("?"), k);
        }
    }
    for k in rows(&v, "total") {
        line("every corpus", k);
    }
    let mut hit8 = Some(true);
    let mut gain = Some(true);
    for c in rows(&v, "corpora") {
        for k in rows(c, "kinds") {
            if k["kind"] == "all" {
                hit8 = hit8.and_then(|ok| Some(ok && num(k, "okfit.hit8")? >= 0.98));
            }
            if k["kind"] == "described" {
                gain = gain.and_then(|ok| {
                    Some(ok && num(k, "okfit.mrr8")? >= num(k, "bm25.mrr8")? + 0.12)
                });
            }
        }
    }
    let _ = writeln!(
        out,
        "\nTargets: hit@8 ≥ 0.98 on each corpus: {}; MRR@8 on describing questions ≥ plain BM25's + 0.12 on each corpus: {}.\n",
        verdict(hit8),
        verdict(gain)
    );
}

fn search_speed(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## Search speed on realistic prose (`okfit-bench-search-speed`)",
        "search-speed.json",
    ) else {
        return;
    };
    out.push_str("Concepts of Zipf-distributed prose over a 50,000-word vocabulary (200–900 words, `##` sections), searched with 120 queries of 2–8 consecutive words of generated sentences (common words included), three measured passes after one warm-up. Through `okfit-mcp` over stdio, a `ping` round trip's p50 subtracted; first search: spawn → `initialize` → first `search` answered, median of 5 servers. The folder's servers find its cache (okfit's cache root, filled by a first server beforehand: see below).\n\n| connection | concepts | first search ms | warm search ms p50 / p95 | ping ms | server peak RSS MB |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    let mut ok = Some(true);
    for row in rows(&v, "mcp") {
        let m = &row["mcp"];
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            row["connection"].as_str().unwrap_or("?"),
            int(num(row, "concepts")),
            one(num(m, "first_search_ms")),
            pair(m, "search_ms"),
            num(m, "ping_ms").map_or("–".into(), |x| format!("{x:.3}")),
            one(num(m, "peak_rss_mb")),
        );
        ok = ok.and_then(|o| {
            Some(
                o && num(m, "search_ms.p50")? < 0.3
                    && num(m, "search_ms.p95")? < 0.6
                    && num(m, "first_search_ms")? < 100.0
                    && num(m, "peak_rss_mb")? < 150.0,
            )
        });
    }
    for row in rows(&v, "mcp") {
        let c = &row["uncached"];
        if c.is_null() {
            continue;
        }
        let _ = writeln!(
            out,
            "\nThe folder of {} concepts without a cache (a first server ever): first search {} ms, peak RSS {} MB; that server had filled the folder's cache in the background {} s after spawn.",
            int(num(row, "concepts")),
            one(num(c, "first_search_ms")),
            one(num(c, "peak_rss_mb")),
            num(c, "cache_saved_ms").map_or("–".into(), |x| format!("{:.1}", x / 1e3)),
        );
    }
    let s = &v["socket"];
    if !s.is_null() {
        let _ = writeln!(
            out,
            "\nOver the daemon's unix socket (`/v1/{{tenant}}/search` through okfit's client), {} concepts: search ms p50 / p95 {}, daemon peak RSS {} MB.",
            int(num(s, "concepts")),
            pair(s, "search_ms"),
            one(num(s, "peak_rss_mb")),
        );
    }
    let _ = writeln!(
        out,
        "\nTargets through MCP (warm p50 < 0.3 ms, p95 < 0.6 ms, first search < 100 ms, RSS < 150 MB): {}; over the socket p50 < 0.3 ms: {}.\n",
        verdict(ok),
        verdict(num(s, "search_ms.p50").map(|p| p < 0.3))
    );
}

fn mcp_http(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## MCP over HTTP (`okfit serve`'s `/mcp`)",
        "mcp-http.json",
    ) else {
        return;
    };
    out.push_str("Protocol revision 2026-07-28 (no session) with a bearer token, through ureq on kept-alive connections; the daemon on loopback TCP, then through TLS with a self-signed certificate the client trusts. Latency over one connection (1,000 calls after 100); throughput from 8 clients for 5 s, the same `search` calls.\n\n| transport | concepts | `tools/call search` ms p50 / p95 | requests/s (8 clients) | errors | daemon peak RSS MB |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    let r = rows(&v, "rows");
    for row in &r {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            if row["tls"] == serde_json::json!(true) {
                "TLS"
            } else {
                "HTTP"
            },
            int(num(row, "concepts")),
            pair(row, "search_ms"),
            int(num(row, "requests_per_s")),
            int(num(row, "errors")),
            one(num(row, "daemon_rss_mb")),
        );
    }
    let plain = r
        .iter()
        .find(|row| row["tls"] == serde_json::json!(false) && num(row, "concepts") == Some(5000.0));
    let _ = writeln!(
        out,
        "\nTarget: `tools/call search` over HTTP at 5,000 concepts p50 < 1 ms: {}.\n",
        verdict(
            plain
                .and_then(|row| num(row, "search_ms.p50"))
                .map(|p| p < 1.0)
        )
    );
}

fn reads_during_commits(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## Daemon reads during commits (`okfit serve` over HTTP)",
        "reads-during-commits.json",
    ) else {
        return;
    };
    let _ = writeln!(
        out,
        "{} concepts of Zipf-distributed prose ({} MB), {} reader clients (search, get, manifest), {} s a phase; commits are back-to-back transactions of {} documents. Milliseconds.\n",
        int(num(&v, "concepts")),
        one(num(&v, "tenant_mb")),
        int(num(&v, "readers")),
        int(num(&v, "seconds")),
        int(num(&v, "batch")),
    );
    out.push_str("| phase | reads p50 / p95 | reads p99 | reads/s | commits p50 / p95 | commits/s |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for (label, key) in [
        ("no writes", "baseline"),
        ("during commits", "during_commits"),
        ("commits alone", "commits_alone"),
    ] {
        let Some(p) = v.get(key) else { continue };
        let reads = num(p, "reads").unwrap_or(0.0) > 0.0;
        let _ = writeln!(
            out,
            "| {label} | {} | {} | {} | {} | {} |",
            if reads {
                pair(p, "read_ms")
            } else {
                "–".into()
            },
            if reads {
                ms(num(p, "read_ms.p99"))
            } else {
                "–".into()
            },
            if reads {
                int(num(p, "reads_per_s"))
            } else {
                "–".into()
            },
            pair(p, "commit_ms"),
            one(num(p, "commits_per_s")),
        );
    }
    let _ = writeln!(
        out,
        "\nDaemon peak RSS: {} MB.\n",
        one(num(&v, "daemon_rss_mb"))
    );
}

fn replicas(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## Replicas over PostgreSQL, and many tenants on one daemon",
        "replicas.json",
    ) else {
        return;
    };
    let vis = &v["visibility"];
    let _ = writeln!(
        out,
        "Two `okfit serve --store postgres://…` replicas over one database, a tenant of {} prose concepts. A one-document `transact` through replica A, then `get` through replica B back to back until it shows the new text, {} rounds. From A's answer to B's first answer showing it, ms: p50 / p95 {}, p99 {}, max {}; B's first read already showed it in {}% of rounds (target p95 < 50 ms: {}).\n",
        int(num(vis, "concepts")),
        int(num(vis, "rounds")),
        pair(vis, "visible_ms"),
        ms(num(vis, "visible_ms.p99")),
        ms(num(vis, "visible_ms.max")),
        one(num(vis, "first_read_share").map(|x| x * 100.0)),
        verdict(num(vis, "visible_ms.p95").map(|x| x < 50.0)),
    );
    out.push_str("Tenants of 50 short prose concepts each, written in-process, then one daemon with the default `--warm-tenants` (150) searching each tenant once in turn, so every search opens a cold tenant.\n\n| backend | tenants | search of a cold tenant ms p50 / p95 | p99 | daemon peak RSS MB | most open files | searched concept not first |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for r in rows(&v, "tenants") {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} |",
            r["backend"].as_str().unwrap_or("–"),
            int(num(r, "tenants")),
            pair(r, "search_ms"),
            ms(num(r, "search_ms.p99")),
            one(num(r, "daemon_rss_mb")),
            int(num(r, "daemon_open_files")),
            int(num(r, "errors")),
        );
    }
    let ok = rows(&v, "tenants").iter().all(|r| {
        num(r, "daemon_rss_mb").is_some_and(|x| x < 500.0)
            && num(r, "daemon_open_files").is_some_and(|x| x < 1000.0)
            && num(r, "search_ms.p50").is_some_and(|x| x < 20.0)
            && num(r, "errors") == Some(0.0)
    });
    let _ = writeln!(
        out,
        "\nTargets (set at 10,000 tenants; measured at the count above) on each backend: RSS < 500 MB, < 1,000 open files, a cold tenant's first search < 20 ms (p50), the searched concept first every time: {}.\n",
        verdict((!rows(&v, "tenants").is_empty()).then_some(ok))
    );
}

fn scale(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## One large tenant on each backend",
        "scale.json",
    ) else {
        return;
    };
    out.push_str("Concepts of Zipf-distributed prose (about 4.2 KB each) imported with `okfit import` (on PostgreSQL the database is then settled as after any bulk load: `VACUUM (ANALYZE)` and a `CHECKPOINT`), then served by `okfit serve` replicas: open + first search of a fresh replica, 400 searches of two or three content words, 200 single-document transacts and 20 of 25 documents through one replica, and 8 clients over two replicas for 10 s (search 70 %, get 20 %, write 10 %).\n\n| backend | concepts | Markdown MB | import s | importer RSS MB | open + first search s | search ms p50 / p95 | write ms p50 / p95 | transact of 25 ms p50 | mixed ops/s | daemon peak RSS MB |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    for r in rows(&v, "scale") {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            r["backend"].as_str().unwrap_or("–"),
            int(num(r, "concepts")),
            int(num(r, "markdown_mb")),
            one(num(r, "import_s")),
            int(num(r, "import_rss_mb")),
            ms(num(r, "open_first_search_s")),
            pair(r, "search_ms"),
            pair(r, "write_ms"),
            int(num(r, "transact25_ms.p50")),
            int(num(r, "mixed.ops_per_s")),
            one(num(r, "daemon_rss_mb")),
        );
    }
    scale_growth(out, &v);
    let pg = rows(&v, "scale")
        .into_iter()
        .find(|r| r["backend"] == "postgres" && num(r, "concepts") == Some(100_000.0));
    let ok = pg.map(|r| {
        num(r, "write_ms.p50").is_some_and(|x| x < 15.0)
            && num(r, "search_ms.p50").is_some_and(|x| x < 1.0)
            && num(r, "open_first_search_s").is_some_and(|x| x < 2.0)
            && num(r, "daemon_rss_mb").is_some_and(|x| x < 600.0)
    });
    let _ = writeln!(
        out,
        "\nTargets at 100,000 concepts on PostgreSQL: write p50 < 15 ms, search p50 < 1 ms, open + first search < 2 s, daemon RSS < 600 MB: {}.\n",
        verdict(ok)
    );
}

/// How each figure of a backend grows from its smallest tenant to its
/// largest: the ratio of the two (5.0 when it grows as the tenant does).
fn scale_growth(out: &mut String, v: &Value) {
    let all = rows(v, "scale");
    let mut lines = String::new();
    for backend in ["sqlite", "postgres"] {
        let mut of: Vec<&Value> = all
            .iter()
            .copied()
            .filter(|r| r["backend"] == backend)
            .collect();
        of.sort_by(|a, b| {
            num(a, "concepts")
                .partial_cmp(&num(b, "concepts"))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let (Some(small), Some(large)) = (of.first(), of.last()) else {
            continue;
        };
        if num(small, "concepts") == num(large, "concepts") {
            continue;
        }
        let times = |path: &str| match (num(small, path), num(large, path)) {
            (Some(a), Some(b)) if a > 0.0 => format!("{:.1}×", b / a),
            _ => "–".into(),
        };
        let _ = writeln!(
            lines,
            "| {backend} | {} → {} | {} | {} | {} | {} | {} | {} | {} | {} |",
            int(num(small, "concepts")),
            int(num(large, "concepts")),
            times("import_s"),
            times("open_first_search_s"),
            times("search_ms.p50"),
            times("write_ms.p50"),
            times("transact25_ms.p50"),
            times("mixed.ops_per_s"),
            times("daemon_rss_mb"),
            times("markdown_mb"),
        );
    }
    if lines.is_empty() {
        return;
    }
    out.push_str("\nHow each figure grows with the tenant (the larger tenant's figure over the smaller's):\n\n| backend | concepts | import | open + first search | search p50 | write p50 | transact of 25 | mixed ops/s | daemon RSS | Markdown |\n| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n");
    out.push_str(&lines);
}

fn node(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(out, inputs, "## Node package (`@okfit/mcp`)", "npx.json") else {
        return;
    };
    let _ = writeln!(
        out,
        "Spawn → `tools/list` answered, ms p50 / p95: `npx --yes @okfit/mcp` {}; the installed bin {}; the native binary {} (target for the bin < 150 ms: {}).\n",
        pair(&v, "startup_ms.npx"),
        pair(&v, "startup_ms.bin"),
        pair(&v, "startup_ms.native"),
        verdict(num(&v, "startup_ms.bin.p50").map(|x| x < 150.0))
    );
    let r = rows(&v, "sizes");
    size_table(
        out,
        &r,
        &[
            (
                "search through the Node bin, ms p50 / p95",
                "node_search_ms",
                Col::Pair,
            ),
            ("through the native binary", "native_search_ms", Col::Pair),
            ("Node / native", "ratio", Col::Ratio),
            ("Node RSS MB", "node_rss_mb", Col::One),
            ("native RSS MB", "native_rss_mb", Col::One),
        ],
    );
    let ok = (!r.is_empty()).then(|| {
        r.iter()
            .all(|row| num(row, "ratio").is_some_and(|x| x <= 1.5))
    });
    let _ = writeln!(
        out,
        "\nTarget: Node within 1.5× of native: {}.\n",
        verdict(ok)
    );
}

fn wasm(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## WebAssembly (`@okfit/wasm`) in headless Chromium",
        "wasm.json",
    ) else {
        return;
    };
    let gz = num(&v, "wasm_gzip_bytes");
    let _ = writeln!(
        out,
        "The `.wasm` is {} bytes, {} gzipped (budget 600 KB gzipped: {}).\n",
        int(num(&v, "wasm_bytes")),
        int(gz),
        verdict(gz.map(|g| g <= 614_400.0))
    );
    out.push_str("A generated bundle of valid, interlinked concepts, validated in the page by the preview's module; memory is the browser's and is not measured.\n\n");
    let r = rows(&v, "sizes");
    size_table(
        out,
        &r,
        &[
            ("`validate()` in the page, ms p50 / p95", "ms", Col::Pair),
            ("runs", "runs", Col::Int),
        ],
    );
    let _ = writeln!(
        out,
        "\nTarget: 100 concepts < 50 ms: {}.\n",
        verdict(at(&r, 100).and_then(|t| num(t, "ms.p50")).map(|x| x < 50.0))
    );
}

fn tokens(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(
        out,
        inputs,
        "## Tokens: tool definitions and the manifest",
        "tokens.json",
    ) else {
        return;
    };
    out.push_str("Each tool's `tools/list` entry exactly as served (JSON, descriptions with their \"when to call\" guidance and the manifest's advice), in o200k tokens (tiktoken-rs) and in characters/4, the unit langonrock reports.\n\n");
    out.push_str("| tool set | tools | o200k | chars/4 | langonrock, chars/4 |\n| --- | --- | ---: | ---: | ---: |\n");
    let sets = rows(&v, "tool_sets");
    let anchor = |mode: &str| match mode {
        m if m.contains("read-only") => "1,122 (four read tools)",
        m if m.contains("database") => "2,228 (nine; +510)",
        m if m.contains("knowledge") => "1,741 (six)",
        _ => "",
    };
    for set in &sets {
        let mode = set.get("mode").and_then(Value::as_str).unwrap_or("?");
        let tools: Vec<String> = rows(set, "tools")
            .iter()
            .map(|t| {
                format!(
                    "{} {}/{}",
                    t.get("name").and_then(Value::as_str).unwrap_or("?"),
                    int(num(t, "o200k")),
                    int(num(t, "chars4"))
                )
            })
            .collect();
        let _ = writeln!(
            out,
            "| {mode} | {} | {} | {} | {} |",
            tools.join(", "),
            int(num(set, "o200k")),
            int(num(set, "chars4")),
            anchor(mode)
        );
    }
    let six = sets
        .iter()
        .find(|s| {
            s.get("mode")
                .and_then(Value::as_str)
                .is_some_and(|m| m.contains("knowledge"))
        })
        .and_then(|s| num(s, "chars4"));
    let _ = writeln!(
        out,
        "\nEach tool is shown as name o200k/chars4. Target: the six knowledge tools ≤ 1,741 characters/4: {}.\n",
        verdict(six.map(|x| x <= 1741.0))
    );
    out.push_str("| manifest of | concepts | characters | o200k | o200k per concept | chars/4 per concept |\n| --- | ---: | ---: | ---: | ---: | ---: |\n");
    for m in rows(&v, "manifests") {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} | {} |",
            m.get("source").and_then(Value::as_str).unwrap_or("?"),
            int(num(m, "concepts")),
            int(num(m, "chars")),
            int(num(m, "o200k")),
            one(num(m, "o200k_per_concept")),
            one(num(m, "chars4_per_concept"))
        );
    }
    out.push('\n');
}

fn session(out: &mut String, inputs: &Inputs) {
    let Some(v) = section(out, inputs, "## Agent-session bill", "session.json") else {
        return;
    };
    out.push_str("Twenty fixed questions over a generated 500-concept reference tenant (a warehouse catalogue shaped like Google's OKF samples: `# Schema` and `# Joins` sections, links, about 2 KB per concept), billed by langonrock's method: a call bills its new content in full and everything already in context at 10%; a call adding nothing new is not counted; tokens = characters/4. The tools answer as over MCP. Every strategy must end each question holding its answer's text.\n\n");
    out.push_str("| strategy | billed tokens | calls | langonrock billed | langonrock calls |\n| --- | ---: | ---: | ---: | ---: |\n");
    for s in rows(&v, "strategies") {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            s.get("strategy").and_then(Value::as_str).unwrap_or("?"),
            int(num(s, "billed_tokens")),
            int(num(s, "calls")),
            int(num(s, "langonrock_billed_tokens")),
            int(num(s, "langonrock_calls"))
        );
    }
    let _ = writeln!(
        out,
        "\nSearch results held the answer's concept for {}/20 questions. The manifest's advice on this tenant, as the server appends it to the manifest tool's description: \"{}\"\n",
        int(num(&v, "search_hits")),
        v.get("advice").and_then(Value::as_str).unwrap_or("–")
    );
    let strategies = rows(&v, "strategies");
    let name = |s: &Value| {
        s.get("strategy")
            .and_then(Value::as_str)
            .unwrap_or("?")
            .to_string()
    };
    let least = |key: &str| {
        strategies
            .iter()
            .filter(|s| num(s, key).is_some())
            .min_by(|a, b| {
                num(a, key)
                    .unwrap_or(0.0)
                    .total_cmp(&num(b, key).unwrap_or(0.0))
            })
            .map(|s| name(s))
            .unwrap_or_else(|| "–".into())
    };
    let _ = write!(
        out,
        "langonrock's corpus and questions are its own and not published in full; these figures apply its billing to this corpus and these questions. Least billed here: {}; fewest calls: {}.",
        least("billed_tokens"),
        least("calls")
    );
    if let (Some(m), Some(manifest)) = (
        strategies.iter().find(|s| name(s).contains("manifest")),
        num(&v, "reads.manifest"),
    ) {
        let calls = num(m, "calls").unwrap_or(0.0);
        let _ = write!(
            out,
            " The manifest strategy re-reads the {}-token manifest at the cache rate on each of its {} calls: {} of its {} tokens.",
            int(Some(manifest)),
            int(Some(calls)),
            int(Some(manifest * 0.1 * calls)),
            int(num(m, "billed_tokens"))
        );
    }
    if strategies
        .iter()
        .find(|s| name(s).contains("navigation"))
        .and_then(|s| num(s, "billed_tokens"))
        .is_some_and(|b| b < 116_357.0)
    {
        out.push_str(" The plain navigator bills less than in langonrock's run: navigation here is perfect, and each folder's `index.md` carries every concept's description, so questions about what a concept is for cost nothing once the index is read.");
    }
    out.push_str("\n\n");
    out.push_str("| read | tokens | langonrock |\n| --- | ---: | ---: |\n");
    for (label, key, anchor) in [
        (
            "a whole concept file (plain OKF read)",
            "reads.whole_file",
            "594",
        ),
        ("`get(id)`, frontmatter compiled away", "reads.get", "445"),
        (
            "`get(id, section: schema)`",
            "reads.get_section_schema",
            "213",
        ),
        ("one search result", "reads.search_result", "731"),
        ("the bundle in full", "reads.bundle", "264,744"),
        ("every `index.md`", "reads.index_files", "16,575"),
        ("the manifest", "reads.manifest", "20,549"),
    ] {
        let _ = writeln!(out, "| {label} | {} | {anchor} |", int(num(&v, key)));
    }
    out.push('\n');
}

/// The whole report.
pub fn render(inputs: &Inputs) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "# okfit benchmark results\n\nWritten by `{}` in {:.0} min. Do not edit this file: run the command again. Latencies are p50 / p95 where both are shown; MB = 10^6 bytes. The figures come from a shared {}-core machine and move by 10–20% between runs.\n",
        inputs.invocation,
        inputs.seconds / 60.0,
        std::thread::available_parallelism().map_or(0, |n| n.get())
    );
    out.push_str("## Machine\n\n");
    for (k, v) in &inputs.machine {
        let _ = writeln!(out, "- {k}: {v}");
    }
    out.push('\n');
    if inputs.steps.iter().any(|s| !s.ok) || !inputs.notes.is_empty() {
        out.push_str("## Not measured\n\n");
        for s in inputs.steps.iter().filter(|s| !s.ok) {
            let _ = writeln!(
                out,
                "- {}: {} (`{}`)",
                s.name,
                s.note.as_deref().unwrap_or("failed"),
                s.command
            );
        }
        for n in &inputs.notes {
            let _ = writeln!(out, "- {n}");
        }
        out.push('\n');
    }
    validation(&mut out, inputs);
    mcp(&mut out, inputs);
    store(&mut out, inputs);
    daemon(&mut out, inputs);
    search_quality(&mut out, inputs);
    search_speed(&mut out, inputs);
    mcp_http(&mut out, inputs);
    reads_during_commits(&mut out, inputs);
    replicas(&mut out, inputs);
    scale(&mut out, inputs);
    node(&mut out, inputs);
    wasm(&mut out, inputs);
    tokens(&mut out, inputs);
    session(&mut out, inputs);
    out.push_str("## Commands\n\nRun from the repository root, in this order.\n\n| step | command | seconds | result |\n| --- | --- | ---: | --- |\n");
    for s in &inputs.steps {
        let _ = writeln!(
            out,
            "| {} | `{}` | {:.0} | {} |",
            s.name,
            s.command.replace('|', "\\|"),
            s.seconds,
            if s.ok {
                "ok".to_string()
            } else {
                s.note.clone().unwrap_or_else(|| "failed".into())
            }
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers() {
        assert_eq!(int(Some(1234567.0)), "1,234,567");
        assert_eq!(int(Some(999.0)), "999");
        assert_eq!(int(None), "–");
        assert_eq!(ms(Some(0.2468)), "0.247");
        assert_eq!(ms(Some(75.66)), "75.7");
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 50), Some(2.0));
    }

    #[test]
    fn a_committed_bundle_is_shown_beside_the_same_bundle_outside_git() {
        let dir = std::env::temp_dir().join(format!("okfit-report-git-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let row = |tool: &str, walls: &str, median: f64| {
            format!(
                r#"{{"tool":"{tool}","shape":"standard","concepts":10000,"bytes":42137767,"wall_s":[{walls}],"median_s":{median},"peak_rss_mb":45.5}}"#
            )
        };
        std::fs::write(
            dir.join("validate.json"),
            format!(
                r#"{{"runs":3,"results":[{},{}]}}"#,
                row("okfit", "0.25,0.26,0.27", 0.26),
                row("okfit-committed", "0.38,0.39,0.41", 0.39)
            ),
        )
        .unwrap();
        let text = render(&Inputs {
            machine: vec![],
            steps: vec![],
            notes: vec![],
            peers: vec![],
            suite: dir.clone(),
            seconds: 1.0,
            invocation: "okfit-bench-all".into(),
        });
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            text.contains("okfit median (p95) 0.390 (0.410) s, RSS 45.5 MB; the same bundle outside git 0.260 (0.270) s."),
            "{text}"
        );
        // One table row for the size, not one per tool.
        assert_eq!(text.matches("| 10,000 |").count(), 1, "{text}");
    }

    #[test]
    fn renders_what_it_has_and_says_what_is_missing() {
        let dir = std::env::temp_dir().join(format!("okfit-report-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("session.json"),
            r#"{"strategies":[{"strategy":"search first","billed_tokens":48588,"calls":37,"langonrock_billed_tokens":56928,"langonrock_calls":36}],"search_hits":20,"reads":{"manifest":19991}}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("kb.json"),
            r#"{"reads":[{"concepts":20000,"open_first_search_ms":{"p50":75.7,"p95":80.1},"warm_search_ms":{"p50":0.25,"p95":0.4},"get_3_sections_ms":{"p50":0.02,"p95":0.03},"manifest_ms":{"p50":0.08,"p95":0.1},"peak_rss_mb":89}]}"#,
        )
        .unwrap();
        std::fs::write(
            dir.join("reads-during-commits.json"),
            r#"{"concepts":2000,"tenant_mb":10.8,"readers":4,"seconds":10,"batch":25,
                "baseline":{"reads":60410,"reads_per_s":6041,"read_ms":{"p50":0.568,"p95":1.418,"p99":2.172}},
                "during_commits":{"reads":36170,"reads_per_s":3617,"read_ms":{"p50":0.748,"p95":3.842,"p99":6.447},"commit_ms":{"p50":77.2,"p95":124.8},"commits_per_s":12.7},
                "commits_alone":{"reads":0,"commit_ms":{"p50":66.0,"p95":80.0},"commits_per_s":15.0},
                "daemon_rss_mb":190.2}"#,
        )
        .unwrap();
        let text = render(&Inputs {
            machine: vec![("CPU".into(), "test".into())],
            steps: vec![Step {
                name: "daemon".into(),
                command: "okfit-bench-serve --json x".into(),
                seconds: 1.0,
                ok: false,
                note: Some("failed: exit status: 1".into()),
            }],
            notes: vec!["Peers were not run (--no-peers).".into()],
            peers: vec![],
            suite: dir.clone(),
            seconds: 60.0,
            invocation: "okfit-bench-all".into(),
        });
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(
            text.contains("| search first | 48,588 | 37 | 56,928 | 36 |"),
            "{text}"
        );
        assert!(
            text.contains("| 20,000 | 75.7 / 80.1 | 0.250 / 0.400 |"),
            "{text}"
        );
        assert!(text.contains("warm search < 0.3 ms: met"), "{text}");
        assert!(text.contains("write < 10 ms") || !text.contains("Writes,"));
        assert!(text.contains("- daemon: failed: exit status: 1"), "{text}");
        assert!(text.contains("Peers were not run"), "{text}");
        assert!(text.contains(
            "## Validation: `okfit validate` and its peers\n\nNot measured in this run."
        ));
        assert!(text.contains("| 19,991 | 20,549 |"), "{text}");
        assert!(
            text.contains("| during commits | 0.748 / 3.84 | 6.45 | 3,617 | 77.2 / 125 | 12.7 |"),
            "{text}"
        );
        assert!(
            text.contains("| commits alone | – | – | – | 66.0 / 80.0 | 15.0 |"),
            "{text}"
        );
    }
}
