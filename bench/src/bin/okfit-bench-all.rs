//! `okfit-bench-all`: every benchmark in one run, at 500 / 5,000 / 20,000
//! concepts, with the peers that install from a registry, written to
//! `bench/RESULTS.md`.
//!
//! From the workspace root:
//! `cargo run --release -p okfit-bench --bin okfit-bench-all`.
//! It builds what it measures, runs each benchmark as its own process with
//! `--json`, then renders the tables, the machine description and the exact
//! commands. A step that fails is reported in the file and makes the run exit
//! 1; the other steps still run.

use okfit_bench::kbdata::{parse_sizes, parse_sizes_of};
use okfit_bench::measure::shell_quote as quote;
use okfit_bench::report::{self, Inputs, Step};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::Instant;

const USAGE: &str = "\
okfit-bench-all: run every okfit benchmark and write bench/RESULTS.md

Usage: cargo run --release -p okfit-bench --bin okfit-bench-all [-- options]

Options:
  --sizes LIST   concept counts (default 500,5000,20000); validation and the
                 project-mode MCP server also run at 10,000, where their
                 targets are set
  --scale-sizes LIST
                 concept counts of the one-large-tenant benchmark on each
                 backend (default 20000,100000; 100,000 adds about 25 min)
  --runs N       measured runs of each validation (default 11; peers 5)
  --no-peers     do not run or install the peer validators
  --no-node      skip the Node package benchmark
  --no-browser   skip the WebAssembly-in-Chromium benchmark
  --out PATH     where to write the report (default bench/RESULTS.md)
  -h, --help     show this help";

struct Args {
    sizes: Vec<usize>,
    scale_sizes: Vec<usize>,
    runs: usize,
    peers: bool,
    node: bool,
    browser: bool,
    out: PathBuf,
}

fn parse(root: &Path) -> Result<Option<Args>, String> {
    let mut a = Args {
        sizes: vec![500, 5_000, 20_000],
        scale_sizes: vec![20_000, 100_000],
        runs: 11,
        peers: true,
        node: true,
        browser: true,
        out: root.join("bench").join("RESULTS.md"),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |flag: &str| it.next().ok_or(format!("{flag} needs a value"));
        match arg.as_str() {
            "-h" | "--help" => return Ok(None),
            "--no-peers" => a.peers = false,
            "--no-node" => a.node = false,
            "--no-browser" => a.browser = false,
            "--sizes" => a.sizes = parse_sizes(&value("--sizes")?)?,
            "--scale-sizes" => {
                a.scale_sizes = parse_sizes_of("--scale-sizes", &value("--scale-sizes")?)?
            }
            "--runs" => {
                let v = value("--runs")?;
                a.runs = v
                    .parse()
                    .ok()
                    .filter(|n| *n > 0)
                    .ok_or(format!("--runs: {v:?} is not a positive number"))?;
            }
            "--out" => a.out = PathBuf::from(value("--out")?),
            other => return Err(format!("unknown argument {other:?} (see --help)")),
        }
    }
    Ok(Some(a))
}

fn join(sizes: &[usize]) -> String {
    sizes
        .iter()
        .map(usize::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Runs one step from the workspace root, output shown as it comes.
fn run(root: &Path, steps: &mut Vec<Step>, name: &str, argv: &[String]) -> bool {
    // Shown relative to the repository root, where every step runs.
    let prefix = format!("{}/", root.display());
    let display = argv
        .iter()
        .map(|a| quote(&a.replace(&prefix, "")))
        .collect::<Vec<_>>()
        .join(" ");
    eprintln!("\n== okfit-bench-all: {name}\n$ {display}");
    // Let the machine settle after the step before (page cache writes,
    // processes still exiting), so one step does not tax the next.
    std::thread::sleep(std::time::Duration::from_secs(2));
    let t = Instant::now();
    let status = Command::new(&argv[0])
        .args(&argv[1..])
        .current_dir(root)
        .stdin(Stdio::null())
        .status();
    let (ok, note) = match status {
        Ok(s) if s.success() => (true, None),
        Ok(s) => (false, Some(format!("failed: {s}"))),
        Err(e) => (false, Some(format!("could not start: {e}"))),
    };
    if let Some(n) = &note {
        eprintln!("okfit-bench-all: {name} {n}");
    }
    steps.push(Step {
        name: name.to_string(),
        command: display,
        seconds: t.elapsed().as_secs_f64(),
        ok,
        note,
    });
    ok
}

fn works(program: &str, args: &[&str]) -> Option<String> {
    let o = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    o.status
        .success()
        .then(|| String::from_utf8_lossy(&o.stdout).trim().to_string())
}

fn s(v: &str) -> String {
    v.to_string()
}

fn main() -> ExitCode {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let root = std::fs::canonicalize(&root).unwrap_or(root);
    let args = match okfit_bench::kbdata::parsed(parse(&root), USAGE) {
        Ok(a) => a,
        Err(code) => return code,
    };
    let suite = root.join("bench").join("out").join("suite");
    if let Err(e) = std::fs::create_dir_all(&suite) {
        eprintln!("error: {}: {e}", suite.display());
        return ExitCode::from(2);
    }
    // Results of an earlier run must not be mistaken for this one's.
    for f in [
        "validate.json",
        "mcp.json",
        "kb.json",
        "serve.json",
        "tokens.json",
        "session.json",
        "npx.json",
        "wasm.json",
        "reads-during-commits.json",
        "mcp-http.json",
        "replicas.json",
        "scale.json",
    ] {
        let _ = std::fs::remove_file(suite.join(f));
    }
    let json = |f: &str| suite.join(f).display().to_string();
    let rel = |p: &str| root.join(p).display().to_string();
    let machine = report::machine(&root);
    let started = Instant::now();
    let mut steps: Vec<Step> = vec![];
    let mut notes: Vec<String> = vec![];
    let sizes = join(&args.sizes);
    let mut with_10k = args.sizes.clone();
    if !with_10k.contains(&10_000) {
        with_10k.push(10_000);
        with_10k.sort_unstable();
    }
    // Validation's targets name 2,000, 10,000 and 20,000 concepts.
    let mut validation_sizes = with_10k.clone();
    for n in [2_000, 20_000] {
        if !validation_sizes.contains(&n) {
            validation_sizes.push(n);
        }
    }
    validation_sizes.sort_unstable();

    // Two builds, each with the feature set the benchmarks' own `cargo build`
    // and `cargo run` use, so those find nothing to rebuild; the product's
    // binaries are built as users build them (`-p okfit`).
    let built = run(
        &root,
        &mut steps,
        "build the benchmarks",
        &[
            s("cargo"),
            s("build"),
            s("--release"),
            s("--locked"),
            s("-p"),
            s("okfit-bench"),
        ],
    ) && run(
        &root,
        &mut steps,
        "build okfit and okfit-mcp",
        &[
            s("cargo"),
            s("build"),
            s("--release"),
            s("--locked"),
            s("-p"),
            s("okfit"),
            s("--bins"),
        ],
    );
    if !built {
        notes.push("The release build failed, so nothing was measured.".into());
    }

    // Peers: the `okf` crate (cargo, needs a nightly toolchain) and okf-cli (PyPI).
    let mut peers: Vec<(String, String)> = vec![];
    if built && args.peers {
        let okf_root = root.join("bench/out/peers/okf-0.2.7");
        let okf = okf_root.join("bin/okf");
        if !okf.exists() {
            if works("cargo", &["+nightly", "--version"]).is_some() {
                run(
                    &root,
                    &mut steps,
                    "install okf 0.2.7 (crates.io)",
                    &[
                        s("cargo"),
                        s("+nightly"),
                        s("install"),
                        s("okf"),
                        s("--version"),
                        s("0.2.7"),
                        s("--locked"),
                        s("--root"),
                        okf_root.display().to_string(),
                    ],
                );
            } else {
                notes.push("The `okf` crate was not run: it needs rustc ≥ 1.96 (its locked dependencies), which here means a nightly toolchain, and `cargo +nightly` is not available. Install one with `rustup toolchain install nightly` and run again.".into());
            }
        }
        if okf.exists() {
            let version = works(&okf.display().to_string(), &["--version"])
                .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
                .unwrap_or_else(|| "?".into());
            peers.push((
                format!("okf {version} (Rust, crates.io)"),
                format!(
                    "{} validate {{bundle}} --today 2026-09-01 --json",
                    okf.display()
                ),
            ));
        }
        let venv = root.join("bench/out/peers/okf-cli-0.7.0");
        let cli = venv.join("bin/okf");
        if !cli.exists() {
            if works("python3", &["--version"]).is_some() {
                let ok = run(
                    &root,
                    &mut steps,
                    "create a venv for okf-cli",
                    &[s("python3"), s("-m"), s("venv"), venv.display().to_string()],
                ) && run(
                    &root,
                    &mut steps,
                    "install okf-cli 0.7.0 (PyPI)",
                    &[
                        venv.join("bin/pip").display().to_string(),
                        s("install"),
                        s("--quiet"),
                        s("okf-cli==0.7.0"),
                    ],
                );
                if !ok {
                    notes
                        .push("okf-cli (PyPI) could not be installed; see the failed step.".into());
                }
            } else {
                notes.push("okf-cli (PyPI) was not run: python3 is not available.".into());
            }
        }
        if cli.exists() {
            peers.push((
                "okf-cli 0.7.0 (Python, PyPI)".into(),
                format!("{} validate {{bundle}}", cli.display()),
            ));
        }
    } else if !args.peers {
        notes.push("Peers were not run (--no-peers).".into());
    }

    // Everything is built before anything is measured; then the disk is
    // synced and the machine left alone for a moment.
    let node = works("node", &["--version"]);
    let mut node_ready = false;
    let mut browser_ready = false;
    if !args.node {
        notes.push("The Node package was not measured (--no-node).".into());
    } else if node.is_none() {
        notes.push("The Node package was not measured: node is not installed.".into());
    } else if built {
        node_ready = run(
            &root,
            &mut steps,
            "build the Node addon",
            &[rel("scripts/build-node.sh"), s("--release")],
        );
    }
    if !args.browser {
        notes.push("WebAssembly in the browser was not measured (--no-browser).".into());
    } else if node.is_none() || !Path::new("/usr/bin/chromium").exists() {
        notes.push("WebAssembly in the browser was not measured: it needs node and Debian's chromium (/usr/bin/chromium); `./scripts/test.sh` installs both.".into());
    } else if built {
        let deps = root
            .join("tests/node/node_modules/playwright-core")
            .exists()
            || run(
                &root,
                &mut steps,
                "install the browser driver",
                &[
                    s("npm"),
                    s("ci"),
                    s("--prefix"),
                    rel("tests/node"),
                    s("--no-audit"),
                    s("--no-fund"),
                ],
            );
        browser_ready = deps
            && run(
                &root,
                &mut steps,
                "build the WebAssembly package",
                &[rel("scripts/build-wasm.sh")],
            );
    }
    if built {
        let _ = Command::new("sync").status();
        std::thread::sleep(std::time::Duration::from_secs(5));
    }

    if built {
        let bin = |b: &str| rel(&format!("target/release/{b}"));
        let mut v = vec![
            bin("okfit-bench"),
            s("--no-build"),
            s("--sizes"),
            join(&validation_sizes),
            s("--shapes"),
            s("standard,frontmatter-heavy"),
            s("--runs"),
            args.runs.to_string(),
            s("--peer-runs"),
            s("5"),
            s("--json"),
            json("validate.json"),
        ];
        if validation_sizes.contains(&10_000) {
            v.push(s("--committed"));
            v.push(s("10000"));
        }
        for (_, cmd) in &peers {
            v.push(s("--peer"));
            v.push(cmd.clone());
        }
        run(&root, &mut steps, "validation", &v);
        run(
            &root,
            &mut steps,
            "MCP server, project mode",
            &[
                bin("okfit-bench-mcp"),
                s("--sizes"),
                join(&with_10k),
                s("--committed"),
                s("10000"),
                s("--json"),
                json("mcp.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "knowledge store",
            &[
                bin("okfit-bench-kb"),
                s("--sizes"),
                sizes.clone(),
                s("--writes"),
                s("--json"),
                json("kb.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "daemon",
            &[
                bin("okfit-bench-serve"),
                s("--sizes"),
                sizes.clone(),
                s("--json"),
                json("serve.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "search quality",
            &[
                bin("okfit-bench-search"),
                s("--sets"),
                rel("bench/search"),
                s("--json"),
                json("search.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "search speed on realistic prose",
            &[
                bin("okfit-bench-search-speed"),
                s("--json"),
                json("search-speed.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "MCP over HTTP",
            &[
                bin("okfit-bench-mcp-http"),
                s("--json"),
                json("mcp-http.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "daemon reads during commits",
            &[
                bin("okfit-bench-reads-during-commits"),
                s("--json"),
                json("reads-during-commits.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "replicas and many tenants",
            &[
                bin("okfit-bench-replicas"),
                s("--tenants"),
                s("500"),
                s("--json"),
                json("replicas.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "one large tenant on each backend",
            &[
                bin("okfit-bench-scale"),
                s("--sizes"),
                join(&args.scale_sizes),
                s("--json"),
                json("scale.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "agent session",
            &[
                bin("okfit-bench-session"),
                s("--json"),
                json("session.json"),
            ],
        );
        run(
            &root,
            &mut steps,
            "tokens",
            &[bin("okfit-bench-tokens"), s("--json"), json("tokens.json")],
        );
        if node_ready {
            run(
                &root,
                &mut steps,
                "Node package",
                &[
                    s("node"),
                    rel("bench/node/npx.mjs"),
                    s("--sizes"),
                    sizes.clone(),
                    s("--json"),
                    json("npx.json"),
                ],
            );
        }
        if browser_ready {
            let mut wasm_sizes = vec![100];
            wasm_sizes.extend(&args.sizes);
            run(
                &root,
                &mut steps,
                "WebAssembly in Chromium",
                &[
                    s("node"),
                    rel("bench/node/wasm-browser.mjs"),
                    s("--sizes"),
                    join(&wasm_sizes),
                    s("--json"),
                    json("wasm.json"),
                ],
            );
        }
    }

    let inputs = Inputs {
        machine,
        steps,
        notes,
        peers: peers.into_iter().map(|(label, _)| label).collect(),
        suite,
        seconds: started.elapsed().as_secs_f64(),
        invocation: {
            let extra: Vec<String> = std::env::args().skip(1).map(|a| quote(&a)).collect();
            let base = "cargo run --release -p okfit-bench --bin okfit-bench-all".to_string();
            if extra.is_empty() {
                base
            } else {
                format!("{base} -- {}", extra.join(" "))
            }
        },
    };
    let text = report::render(&inputs);
    if let Err(e) = std::fs::write(&args.out, text) {
        eprintln!("error: {}: {e}", args.out.display());
        return ExitCode::from(2);
    }
    eprintln!("\nokfit-bench-all: wrote {}", args.out.display());
    if inputs.steps.iter().all(|s| s.ok) {
        ExitCode::SUCCESS
    } else {
        eprintln!("okfit-bench-all: some steps failed; see the report");
        ExitCode::FAILURE
    }
}
