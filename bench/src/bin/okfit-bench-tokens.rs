//! `okfit-bench-tokens`: what the MCP tool definitions and the manifest cost
//! an agent, in tokens.
//!
//! From the workspace root: `cargo run --release -p okfit-bench --bin okfit-bench-tokens`.
//! For each mode's default tool set (project mode; a connection; a
//! connection with `--database-tools`) and for each tool, it measures the
//! `tools/list` entry exactly as served (JSON, with the manifest advice) in
//! o200k tokens (tiktoken-rs) and in characters/4, the unit langonrock
//! reports (its six tools: 1,741; the database tools: +510). It also
//! measures the manifest per concept on the repository's `okf/` bundle and,
//! when `okfit-bench-kb` and `okfit-bench-session` have built them, the
//! generated tenants (500 / 5,000 / 20,000) and the reference tenant.
//! `--json PATH` also writes the figures as JSON.

use okfit_bench::kbdata::{dsn, out_dir};
use okfit_knowledge::kb::Knowledge;
use okfit_mcp::Server;
use okfit_tools::Options;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn run(json_out: Option<PathBuf>) -> Result<(), String> {
    let bpe = tiktoken_rs::o200k_base().map_err(|e| e.to_string())?;
    let tokens = |s: &str| bpe.encode_with_special_tokens(s).len();
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf);
    let okf = std::fs::canonicalize(repo.join("okf")).map_err(|e| e.to_string())?;
    let folder = format!("okf://{}", okf.display());
    let modes: [(&str, Options); 4] = [
        ("project mode (bundle tools)", Options::default()),
        (
            "connection (knowledge tools)",
            Options {
                connection: Some(folder.clone()),
                ..Options::default()
            },
        ),
        (
            "connection --read-only",
            Options {
                connection: Some(folder.clone()),
                read_only: true,
                ..Options::default()
            },
        ),
        (
            "connection --database-tools",
            Options {
                connection: Some(format!(
                    "okf://{}?tenant=tokens",
                    std::env::temp_dir().join("okfit-bench-tokens").display()
                )),
                database_tools: true,
                ..Options::default()
            },
        ),
    ];
    println!("| tool set | tool | o200k tokens | chars/4 |");
    println!("| --- | --- | ---: | ---: |");
    let mut sets: Vec<Value> = vec![];
    for (name, opts) in modes {
        let server = Server::with_options(okf.clone(), &opts).map_err(|e| e.to_string())?;
        let (mut total_t, mut total_c) = (0usize, 0usize);
        let mut rows = vec![];
        for tool in server.tool_list() {
            let json = serde_json::to_string(&tool).map_err(|e| e.to_string())?;
            let (t, c) = (tokens(&json), json.encode_utf16().count().div_ceil(4));
            total_t += t;
            total_c += c;
            println!("| {name} | {} | {t} | {c} |", tool.name);
            rows.push(json!({"name": tool.name, "o200k": t, "chars4": c}));
        }
        println!("| {name} | **all** | **{total_t}** | **{total_c}** |");
        sets.push(json!({"mode": name, "tools": rows, "o200k": total_t, "chars4": total_c}));
    }
    println!();
    println!("| manifest | concepts | characters | o200k tokens | tokens per concept |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let mut sources = vec![("okf/ (this repository)".to_string(), folder)];
    // Connection strings refuse `..`: name the session's folder plainly.
    let reference = out_dir()
        .parent()
        .map_or_else(out_dir, Path::to_path_buf)
        .join("session")
        .join("data");
    if reference.join("tenants").join("reference").exists() {
        sources.push((
            "reference tenant (agent session)".to_string(),
            format!("okf://{}?tenant=reference", reference.display()),
        ));
    }
    for n in [500usize, 5_000, 20_000] {
        if out_dir().join(format!("t{n}.ready")).exists() {
            sources.push((format!("generated tenant t{n}"), dsn(n)));
        }
    }
    let mut manifests: Vec<Value> = vec![];
    for (label, d) in sources {
        let kb = Knowledge::open(&d).map_err(|e| e.to_string())?;
        let m = kb.manifest(None).map_err(|e| e.to_string())?;
        let (_, n) = kb.snapshot().map_err(|e| e.to_string())?;
        let t = tokens(&m);
        let chars = m.encode_utf16().count();
        println!(
            "| {label} | {n} | {chars} | {t} | {:.1} |",
            t as f64 / n.max(1) as f64
        );
        manifests.push(json!({
            "source": label,
            "concepts": n,
            "chars": chars,
            "o200k": t,
            "chars4": chars.div_ceil(4),
            "o200k_per_concept": t as f64 / n.max(1) as f64,
            "chars4_per_concept": chars as f64 / 4.0 / n.max(1) as f64,
        }));
    }
    if let Some(path) = json_out {
        let v = json!({"tool_sets": sets, "manifests": manifests});
        okfit_bench::report::write_json(&path, &v)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let json_out = match args.as_slice() {
        [] => None,
        [flag, path] if flag == "--json" => Some(PathBuf::from(path)),
        _ => {
            eprintln!("usage: okfit-bench-tokens [--json PATH]");
            return ExitCode::from(2);
        }
    };
    match run(json_out) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
