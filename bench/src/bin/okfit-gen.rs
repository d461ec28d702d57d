//! `okfit-gen`: writes a deterministic synthetic OKF project (okfit.toml + okf/ bundle).

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

use okfit_bench::generator::{self, GenParams, Shape, DEFAULT_SEED};

const USAGE: &str = "\
okfit-gen: write a deterministic synthetic OKF bundle for benchmarks

Usage: okfit-gen --concepts N [--folders D] --out DIR [--seed S] [--shape SHAPE]

  --concepts N   number of concept files (~4 KB each)
  --folders D    number of folders area-000.. (default: N/100 rounded, at least 1)
  --out DIR      project directory; writes DIR/okfit.toml and DIR/okf/
                 (DIR/okf is removed first if it exists)
  --seed S       PRNG seed (default 42)
  --shape SHAPE  frontmatter: standard (about 500 bytes of YAML, the default)
                 or frontmatter-heavy (about 1.3 KB, every frontmatter family)
  -h, --help     show this help

The same arguments always produce byte-identical files.
Exit codes: 0 success, 2 bad arguments or I/O error.";

struct Args {
    concepts: usize,
    folders: Option<usize>,
    out: PathBuf,
    seed: u64,
    shape: Shape,
}

fn parse_num<T: std::str::FromStr>(flag: &str, value: &str) -> Result<T, String> {
    value
        .trim()
        .replace('_', "")
        .parse()
        .map_err(|_| format!("{flag} expects a non-negative integer, got {value:?}"))
}

fn parse_args() -> Result<Option<Args>, String> {
    let mut concepts = None;
    let mut folders = None;
    let mut out = None;
    let mut seed = DEFAULT_SEED;
    let mut shape = Shape::Standard;
    let mut it = std::env::args_os().skip(1);
    while let Some(arg) = it.next() {
        let arg = arg
            .into_string()
            .map_err(|a| format!("argument {a:?} is not valid UTF-8"))?;
        let (flag, inline) = match arg.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (arg.clone(), None),
        };
        if flag == "-h" || flag == "--help" {
            return Ok(None);
        }
        if !matches!(
            flag.as_str(),
            "--concepts" | "--folders" | "--out" | "--seed" | "--shape"
        ) {
            return Err(format!("unknown argument {arg:?} (see --help)"));
        }
        let value = match inline {
            Some(v) => v,
            None => it
                .next()
                .ok_or_else(|| format!("{flag} needs a value"))?
                .into_string()
                .map_err(|a| format!("value {a:?} of {flag} is not valid UTF-8"))?,
        };
        match flag.as_str() {
            "--concepts" => concepts = Some(parse_num(&flag, &value)?),
            "--folders" => folders = Some(parse_num(&flag, &value)?),
            "--out" => out = Some(PathBuf::from(value)),
            "--shape" => {
                shape = Shape::parse(&value).ok_or_else(|| {
                    format!("--shape: unknown shape {value:?} (standard, frontmatter-heavy)")
                })?
            }
            _ => seed = parse_num(&flag, &value)?,
        }
    }
    Ok(Some(Args {
        concepts: concepts.ok_or("--concepts is required (see --help)")?,
        folders,
        out: out.ok_or("--out is required (see --help)")?,
        seed,
        shape,
    }))
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(Some(a)) => a,
        Ok(None) => {
            // Ignore a closed stdout (e.g. `| head`).
            let _ = writeln!(std::io::stdout(), "{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let params = GenParams {
        concepts: args.concepts,
        folders: args
            .folders
            .unwrap_or_else(|| generator::default_folders(args.concepts)),
        seed: args.seed,
        shape: args.shape,
    };
    let start = Instant::now();
    match generator::generate(&args.out, &params) {
        Ok(s) => {
            eprintln!(
                "okfit-gen: wrote {} files, {} bytes ({} concepts in {} folders, {} links of which {} broken, {} verified, {} stale) to {} in {:.2}s",
                s.files,
                s.bytes,
                s.concepts,
                s.folders,
                s.links,
                s.broken_links,
                s.verified,
                s.stale,
                args.out.join(generator::BUNDLE_DIR).display(),
                start.elapsed().as_secs_f64()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
    }
}
