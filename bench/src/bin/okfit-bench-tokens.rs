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
//! when `okfit-bench-kb` has built them, the 500 and 5,000-concept tenants.

use okfit::kb::Knowledge;
use okfit::mcp::{Options, Server};
use okfit_bench::kbdata::{dsn, out_dir};
use std::path::PathBuf;
use std::process::ExitCode;

fn run() -> Result<(), String> {
    let bpe = tiktoken_rs::o200k_base().map_err(|e| e.to_string())?;
    let tokens = |s: &str| bpe.encode_with_special_tokens(s).len();
    let repo = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    let okf = std::fs::canonicalize(repo.join("okf")).map_err(|e| e.to_string())?;
    let folder = format!("okf://{}", okf.display());
    let modes: [(&str, Options); 3] = [
        ("project mode (bundle tools)", Options::default()),
        (
            "connection (knowledge tools)",
            Options {
                connection: Some(folder.clone()),
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
    for (name, opts) in modes {
        let server = Server::with_options(okf.clone(), &opts).map_err(|e| e.to_string())?;
        let (mut total_t, mut total_c) = (0usize, 0usize);
        for tool in server.tool_list() {
            let json = serde_json::to_string(&tool).map_err(|e| e.to_string())?;
            let (t, c) = (tokens(&json), json.chars().count().div_ceil(4));
            total_t += t;
            total_c += c;
            println!("| {name} | {} | {t} | {c} |", tool.name);
        }
        println!("| {name} | **all** | **{total_t}** | **{total_c}** |");
    }
    println!();
    println!("| manifest | concepts | characters | o200k tokens | tokens per concept |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    let mut sources = vec![("okf/ (this repository)".to_string(), folder)];
    for n in [500usize, 5_000] {
        if out_dir().join(format!("t{n}.ready")).exists() {
            sources.push((format!("generated tenant t{n}"), dsn(n)));
        }
    }
    for (label, d) in sources {
        let kb = Knowledge::open(&d).map_err(|e| e.to_string())?;
        let m = kb.manifest(None).map_err(|e| e.to_string())?;
        let (_, n) = kb.snapshot().map_err(|e| e.to_string())?;
        let t = tokens(&m);
        println!(
            "| {label} | {n} | {} | {t} | {:.1} |",
            m.chars().count(),
            t as f64 / n.max(1) as f64
        );
    }
    Ok(())
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
