//! `okfit-bench-search`: how well okfit's `search` ranks the concept that
//! answers a question, beside plain BM25 over the raw Markdown.
//!
//! From the workspace root:
//! `cargo run --release -p okfit-bench --bin okfit-bench-search`.
//! For each question set in `bench/search/` it opens the corpus folder it
//! names (under `../shared/corpora`, or `$OKFIT_CORPORA`) as a folder
//! connection, asks every question through `search` (k = 8; direct hits,
//! then linked ones) and through plain BM25 over the same concept files,
//! and reports hit@1, hit@8, MRR@8 and nDCG@8 per corpus and per kind of
//! question. `--misses` lists the questions okfit does not answer first;
//! `--json PATH` also writes the figures as JSON.

use okfit_bench::relevance::{self, Metrics, PlainBm25, QuestionSet, CUTOFF};
use okfit_knowledge::kb::Knowledge;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

const USAGE: &str = "\
okfit-bench-search: retrieval quality of okfit's search on real corpora

Usage: okfit-bench-search [--sets DIR] [--misses] [--json PATH] [--rankings PATH]

  --sets DIR        question sets (default bench/search)
  --misses          list the questions okfit's search does not answer first
  --json PATH       also write the figures as JSON
  --rankings PATH   also write okfit's top 50 per question as JSON lines";

/// The ranked result paths of one question by one system.
type Ranking = Vec<String>;

/// okfit's ranking: the ids of the search answer's rows (direct hits,
/// then linked ones), mapped to the corpus files they name.
fn okfit_ranking(kb: &Knowledge, files: &[String], q: &str, k: usize) -> Result<Ranking, String> {
    let tsv = kb.search(q, k, None).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    let mut rows = false;
    for line in tsv.lines() {
        if line.starts_with("id\t") {
            rows = true;
            continue;
        }
        if !rows || line.starts_with('#') || line.is_empty() {
            continue;
        }
        let id = line.split('\t').next().unwrap_or("");
        let path = files
            .iter()
            .find(|p| relevance::id_names(id, p))
            .ok_or_else(|| format!("search returned id {id:?}, which names no concept file"))?;
        out.push(path.clone());
    }
    out.truncate(k);
    Ok(out)
}

/// How deep `--rankings` lists okfit's answer to each question.
const DEEP: usize = 50;

/// Per question: (kind, okfit's metrics, plain BM25's metrics, okfit's
/// ranking, and its deep ranking when asked).
type Scored = Vec<(String, Metrics, Metrics, Ranking, Option<Ranking>)>;

fn run_set(corpora: &Path, set: &QuestionSet, deep: bool) -> Result<Scored, String> {
    let root = std::fs::canonicalize(corpora.join(&set.path))
        .map_err(|e| format!("{}: {e}", corpora.join(&set.path).display()))?;
    let files = relevance::concept_files(&root)?;
    for q in &set.questions {
        for a in &q.answers {
            if !files.contains(a) {
                return Err(format!("{}: answer {a} is no concept file", set.corpus));
            }
        }
    }
    let texts: Vec<(String, String)> = files
        .iter()
        .map(|p| {
            std::fs::read_to_string(root.join(p))
                .map(|t| (p.clone(), t))
                .map_err(|e| format!("{p}: {e}"))
        })
        .collect::<Result<_, _>>()?;
    let plain = PlainBm25::new(&texts);
    let kb = Knowledge::open(&format!("okf://{}", root.display())).map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    for q in &set.questions {
        let judge = |ranked: &[String]| {
            let rel: Vec<bool> = ranked.iter().map(|p| q.answers.contains(p)).collect();
            relevance::score(&rel, q.answers.len())
        };
        let ours = okfit_ranking(&kb, &files, &q.text, CUTOFF)?;
        let deeper = if deep {
            Some(okfit_ranking(&kb, &files, &q.text, DEEP)?)
        } else {
            None
        };
        let base: Vec<String> = plain
            .rank(&q.text, CUTOFF)
            .into_iter()
            .map(str::to_string)
            .collect();
        out.push((q.kind.clone(), judge(&ours), judge(&base), ours, deeper));
    }
    Ok(out)
}

fn row(corpus: &str, kind: &str, system: &str, m: &Metrics) -> String {
    format!(
        "| {corpus} | {kind} | {system} | {} | {:.3} | {:.3} | {:.3} | {:.3} |",
        m.n, m.hit1, m.hit8, m.mrr8, m.ndcg8
    )
}

fn metrics_json(m: &Metrics) -> Value {
    json!({"n": m.n, "hit1": m.hit1, "hit8": m.hit8, "mrr8": m.mrr8, "ndcg8": m.ndcg8})
}

/// Prints the rows of `label` per kind of question (and all together),
/// okfit beside plain BM25, and returns them as JSON.
fn by_kind(label: &str, scored: &Scored) -> Vec<Value> {
    ["named", "described", "all"]
        .into_iter()
        .map(|kind| {
            let pick: Vec<_> = scored
                .iter()
                .filter(|s| kind == "all" || s.0 == kind)
                .collect();
            let ours = Metrics::mean(&pick.iter().map(|s| s.1).collect::<Vec<_>>());
            let base = Metrics::mean(&pick.iter().map(|s| s.2).collect::<Vec<_>>());
            println!("{}", row(label, kind, "okfit", &ours));
            println!("{}", row(label, kind, "plain BM25", &base));
            json!({"kind": kind, "okfit": metrics_json(&ours), "bm25": metrics_json(&base)})
        })
        .collect()
}

/// What to write beside the table.
#[derive(Default)]
struct Outputs {
    misses: bool,
    json: Option<PathBuf>,
    rankings: Option<PathBuf>,
}

fn run(sets_dir: &Path, outputs: &Outputs) -> Result<(), String> {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map_or_else(|| PathBuf::from(".."), Path::to_path_buf);
    let corpora = relevance::corpora_dir(&repo);
    if !corpora.is_dir() {
        return Err(format!(
            "the corpora directory {} is absent (set OKFIT_CORPORA): nothing measured",
            corpora.display()
        ));
    }
    let sets = relevance::load_sets(sets_dir)?;
    println!("| corpus | questions | system | n | hit@1 | hit@8 | MRR@8 | nDCG@8 |");
    println!("|---|---|---|---:|---:|---:|---:|---:|");
    let mut report = Vec::new();
    let mut all: Scored = Vec::new();
    let mut lines = String::new();
    for set in &sets {
        let scored = run_set(&corpora, set, outputs.rankings.is_some())?;
        let kinds = by_kind(&set.corpus, &scored);
        for (q, s) in set.questions.iter().zip(&scored) {
            if let Some(deep) = &s.4 {
                let line = json!({"corpus": set.corpus, "kind": q.kind, "q": q.text,
                    "answers": q.answers, "okfit": deep});
                lines.push_str(&line.to_string());
                lines.push('\n');
            }
        }
        if outputs.misses {
            for (q, s) in set.questions.iter().zip(&scored) {
                if s.1.hit1 < 1.0 {
                    eprintln!(
                        "miss {} [{}] rr={:.2} {:?}\n  want {:?}\n  got  {:?}",
                        set.corpus, q.kind, s.1.mrr8, q.text, q.answers, s.3
                    );
                }
            }
        }
        report.push(json!({"corpus": set.corpus, "path": set.path, "kinds": kinds}));
        all.extend(scored);
    }
    let totals = by_kind("every corpus", &all);
    if let Some(p) = &outputs.json {
        let v = json!({"cutoff": CUTOFF, "corpora": report, "total": totals});
        okfit_bench::report::write_json(p, &v)?;
    }
    if let Some(p) = &outputs.rankings {
        std::fs::write(p, lines).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let mut sets = PathBuf::from("bench/search");
    let mut outputs = Outputs::default();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "-h" | "--help" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            "--misses" => outputs.misses = true,
            "--sets" | "--json" | "--rankings" => {
                let Some(v) = it.next() else {
                    eprintln!("okfit-bench-search: {a} needs a value");
                    return ExitCode::from(2);
                };
                match a.as_str() {
                    "--sets" => sets = PathBuf::from(v),
                    "--json" => outputs.json = Some(PathBuf::from(v)),
                    _ => outputs.rankings = Some(PathBuf::from(v)),
                }
            }
            other => {
                eprintln!("okfit-bench-search: unknown argument {other:?}\n{USAGE}");
                return ExitCode::from(2);
            }
        }
    }
    match run(&sets, &outputs) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("okfit-bench-search: {e}");
            ExitCode::FAILURE
        }
    }
}
