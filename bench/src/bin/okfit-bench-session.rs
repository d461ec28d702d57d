//! `okfit-bench-session`: what a 20-question agent session costs, billed the
//! way langonrock's read-model benchmark bills it (reference §8.1).
//!
//! From the workspace root:
//! `cargo run --release -p okfit-bench --bin okfit-bench-session [-- --json PATH]`.
//!
//! It writes the generated 500-concept reference corpus
//! (`okfit_bench::reference`) to `bench/out/session/reference/` as plain OKF
//! files, imports the same files into a store tenant, and replays the twenty
//! questions with three strategies, calling the real tools (the same code
//! that answers `tools/call`):
//!
//! - **navigation**, the plain OKF baseline: read the root `index.md`, the
//!   folder's `index.md`, then whole concept files, following links; perfect
//!   navigation, no wrong turns;
//! - **manifest in the prompt**: the `okf://manifest` text is in the prompt;
//!   answers from its rows cost nothing, the rest is one `get` with `section`
//!   per section needed;
//! - **search first**: `search` with the question's words, then `get` with
//!   `section` for the rows that hold the answer; when a needed concept is
//!   neither in the results nor named by what was already read, the agent
//!   reads the manifest.
//!
//! Billing: a call bills its new content in full plus 10% of everything
//! already in context (the prompt included); a call adding nothing new is not
//! counted. Tokens are characters/4 (UTF-16 code units, as JavaScript counts).
//! Each strategy must end every question holding the text of its answer; the
//! run fails otherwise.

use okfit_bench::reference::{self, Kind, Need, Place, Question};
use okfit_knowledge::kb::Knowledge;
use okfit_store::change::{Change, Pre};
use okfit_tools::knowledge::call;
use serde_json::{json, Value};
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Characters/4, counting UTF-16 code units.
fn tokens(text: &str) -> f64 {
    text.encode_utf16().count() as f64 / 4.0
}

/// What one read item lets the agent answer: `(id, section)` pairs, where
/// section `*` is the whole concept.
type Covers = Vec<(String, String)>;

struct Item {
    text: String,
    covers: Covers,
}

/// The running bill of one strategy.
#[derive(Default)]
struct Session {
    context: f64,
    billed: f64,
    calls: usize,
    seen: HashSet<String>,
    items: Vec<Item>,
    log: Vec<String>,
}

impl Session {
    /// Content placed in the prompt: billed once in full, then re-billed at
    /// 10% by every call.
    fn prompt(&mut self, what: &str, text: String, covers: Covers) {
        let t = tokens(&text);
        self.billed += t;
        self.context += t;
        self.seen.insert(text.clone());
        self.log.push(format!("prompt {what}: {t:.0} tokens"));
        self.items.push(Item { text, covers });
    }

    /// One tool call returning `text`. Returns false (and bills nothing) when
    /// the text is already in context.
    fn call(&mut self, what: String, text: String, covers: Covers) -> bool {
        if self.seen.contains(&text) {
            return false;
        }
        let t = tokens(&text);
        self.billed += t + 0.1 * self.context;
        self.context += t;
        self.calls += 1;
        self.seen.insert(text.clone());
        self.log
            .push(format!("call {}: {what} -> {t:.0} tokens", self.calls));
        self.items.push(Item { text, covers });
        true
    }

    /// Whether something in context holds `p`'s answer where `p` says.
    fn holds(&self, p: &Place) -> bool {
        self.items.iter().any(|i| {
            i.covers
                .iter()
                .any(|(id, s)| *id == p.id && (s == "*" || *s == p.section))
                && i.text.contains(&p.answer)
        })
    }

    fn satisfied(&self, n: &Need) -> bool {
        n.any_of.iter().any(|p| self.holds(p))
    }
}

struct Corpus {
    root: PathBuf,
    kb: Knowledge,
    manifest: String,
    /// Concept id → folder, from the generated paths.
    folders: BTreeMap<String, String>,
}

fn tool(kb: &Knowledge, name: &str, args: Value) -> Result<String, String> {
    call(kb, name, &args).map_err(|e| format!("{name} {args}: {e}"))
}

/// Ids of the rows of a manifest-shaped answer (search results included).
fn row_ids(text: &str) -> Vec<String> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("id\t"))
        .filter(|l| l.contains('\t'))
        .filter_map(|l| l.split('\t').next().map(str::to_string))
        .collect()
}

/// One batched `get` for everything `places` need: with `section` when they
/// all need the same one, else whole bodies (the tool's advice: every id in
/// one call).
fn get_all(c: &Corpus, s: &mut Session, places: &[Place]) -> Result<(), String> {
    let mut ids: Vec<&str> = vec![];
    for p in places {
        if !ids.contains(&p.id.as_str()) {
            ids.push(&p.id);
        }
    }
    let first = places.first().map(|p| p.section.as_str());
    if ids.len() > 1 && places.iter().any(|p| Some(p.section.as_str()) != first) {
        let text = tool(&c.kb, "get", json!({ "ids": ids }))?;
        let covers = ids
            .iter()
            .map(|i| (i.to_string(), "*".to_string()))
            .collect();
        s.call(format!("get {ids:?}"), text, covers);
        return Ok(());
    }
    let mut by_section: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for p in places {
        let ids = by_section.entry(&p.section).or_default();
        if !ids.contains(&p.id.as_str()) {
            ids.push(&p.id);
        }
    }
    for (section, ids) in by_section {
        let text = tool(&c.kb, "get", json!({"ids": ids, "section": section}))?;
        let covers = ids
            .iter()
            .map(|i| (i.to_string(), section.to_string()))
            .collect();
        s.call(format!("get {ids:?} section {section}"), text, covers);
    }
    Ok(())
}

fn navigation(c: &Corpus, qs: &[Question]) -> Result<Session, String> {
    let mut s = Session::default();
    let read = |s: &mut Session, path: &str| -> Result<(), String> {
        let text = std::fs::read_to_string(c.root.join(path))
            .map_err(|e| format!("{}: {e}", c.root.join(path).display()))?;
        let covers = if path.ends_with("index.md") {
            // An index line carries the title and description of each entry.
            let folder = path.trim_end_matches("index.md").trim_end_matches('/');
            c.folders
                .iter()
                .filter(|(_, f)| f.as_str() == folder)
                .map(|(id, _)| (id.clone(), "summary".to_string()))
                .collect()
        } else {
            let id = path
                .rsplit('/')
                .next()
                .unwrap_or(path)
                .trim_end_matches(".md");
            vec![(id.to_string(), "*".to_string())]
        };
        s.call(format!("read {path}"), text, covers);
        Ok(())
    };
    read(&mut s, "index.md")?;
    for q in qs {
        for (i, need) in q.needs.iter().enumerate() {
            if s.satisfied(need) {
                continue;
            }
            let p = &need.any_of[0];
            let folder = c.folders.get(&p.id).cloned().unwrap_or_default();
            // The second part of a metric question is linked from the metric
            // just read; everything else is found through the folder's index.
            let linked = q.kind == Kind::Metric && i > 0;
            if !linked {
                // Down from the root: every index on the way to the folder.
                let mut at = String::new();
                for part in folder.split('/') {
                    at = if at.is_empty() {
                        part.to_string()
                    } else {
                        format!("{at}/{part}")
                    };
                    read(&mut s, &format!("{at}/index.md"))?;
                }
            }
            if !s.satisfied(need) {
                read(&mut s, &p.path)?;
            }
        }
    }
    Ok(s)
}

fn manifest_first(c: &Corpus, qs: &[Question]) -> Result<Session, String> {
    let mut s = Session::default();
    let covers = c
        .folders
        .keys()
        .map(|id| (id.clone(), "summary".to_string()))
        .collect();
    s.prompt("okf://manifest", c.manifest.clone(), covers);
    for q in qs {
        let wanted: Vec<Place> = q
            .needs
            .iter()
            .filter(|n| !s.satisfied(n))
            .map(|n| n.any_of[0].clone())
            .collect();
        get_all(c, &mut s, &wanted)?;
    }
    Ok(s)
}

/// Search first; returns the session and how many questions' answers were
/// among the search results.
fn search_first(c: &Corpus, qs: &[Question]) -> Result<(Session, usize), String> {
    let mut s = Session::default();
    let mut hits = 0;
    for q in qs {
        let text = tool(&c.kb, "search", json!({"query": q.query}))?;
        let ids = row_ids(&text);
        let covers = ids
            .iter()
            .map(|i| (i.clone(), "summary".to_string()))
            .collect();
        s.call(format!("search {:?}", q.query), text.clone(), covers);
        let rank = |p: &Place| ids.iter().position(|i| *i == p.id);
        let mut found = vec![];
        let mut missing = vec![];
        for need in &q.needs {
            if s.satisfied(need) {
                continue;
            }
            match need
                .any_of
                .iter()
                .filter_map(|p| rank(p).map(|r| (r, p)))
                .min_by_key(|x| x.0)
            {
                Some((_, p)) => found.push(p.clone()),
                None => missing.push(need),
            }
        }
        if missing.is_empty() {
            hits += 1;
        }
        get_all(c, &mut s, &found)?;
        for need in missing {
            if s.satisfied(need) {
                continue;
            }
            let p = &need.any_of[0];
            // Named by something already read (a metric names its table)?
            let named = s.items.iter().any(|i| {
                i.text.contains(&format!("{}.md", p.id)) || i.text.contains(&format!("`{}`", p.id))
            });
            if !named {
                let m = tool(&c.kb, "manifest", json!({}))?;
                let covers = c
                    .folders
                    .keys()
                    .map(|id| (id.clone(), "summary".to_string()))
                    .collect();
                s.call("manifest".into(), m, covers);
            }
            if !s.satisfied(need) {
                get_all(c, &mut s, std::slice::from_ref(p))?;
            }
        }
    }
    Ok((s, hits))
}

fn out_dir() -> PathBuf {
    okfit_bench::kbdata::bench_out("session")
}

fn build(dir: &Path) -> Result<Corpus, String> {
    let corpus = reference::corpus();
    let root = dir.join("reference").join("okf");
    // Only what this program made there is replaced.
    let _ = std::fs::remove_dir_all(dir.join("reference"));
    let _ = std::fs::remove_dir_all(dir.join("data"));
    std::fs::create_dir_all(&root).map_err(|e| format!("{}: {e}", root.display()))?;
    let config = dir.join("reference").join("okfit.toml");
    std::fs::write(&config, "[bundle]\npath = \"okf\"\nprofile = \"none\"\n")
        .map_err(|e| format!("{}: {e}", config.display()))?;
    let mut changes = vec![];
    let mut folders = BTreeMap::new();
    for d in &corpus.docs {
        let path = root.join(&d.path);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
        }
        std::fs::write(&path, &d.text).map_err(|e| format!("{}: {e}", path.display()))?;
        if !d.path.ends_with("index.md") {
            let (folder, file) = d.path.rsplit_once('/').unwrap_or(("", &d.path));
            folders.insert(file.trim_end_matches(".md").to_string(), folder.to_string());
        }
        changes.push(Change {
            bundle: reference::BUNDLE.into(),
            path: d.path.clone(),
            content: Some(d.text.clone().into_bytes()),
            pre: Pre::Any,
        });
    }
    let dsn = format!("okf://{}?tenant=reference", dir.join("data").display());
    let kb = Knowledge::open(&dsn).map_err(|e| e.to_string())?;
    kb.commit(changes, None).map_err(|e| format!("{e:?}"))?;
    let manifest = tool(&kb, "manifest", json!({}))?;
    let ids = row_ids(&manifest);
    if ids.len() != reference::CONCEPTS {
        return Err(format!(
            "the manifest has {} rows, not {}",
            ids.len(),
            reference::CONCEPTS
        ));
    }
    if let Some(id) = ids.iter().find(|i| !folders.contains_key(*i)) {
        return Err(format!("manifest id {id} is not a file name of the corpus"));
    }
    Ok(Corpus {
        root,
        kb,
        manifest,
        folders,
    })
}

fn check(name: &str, s: &Session, qs: &[Question]) -> Result<(), String> {
    for (i, q) in qs.iter().enumerate() {
        for n in &q.needs {
            if !s.satisfied(n) {
                return Err(format!(
                    "{name}: question {} ({}) ends without {:?} from {}",
                    i + 1,
                    q.text,
                    n.any_of[0].answer,
                    n.any_of[0].id
                ));
            }
        }
    }
    Ok(())
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

fn run(dir: PathBuf, json_out: Option<PathBuf>, verbose: bool) -> Result<(), String> {
    let c = build(&dir)?;
    let qs = reference::corpus().questions;

    let nav = navigation(&c, &qs)?;
    let man = manifest_first(&c, &qs)?;
    let (srch, hits) = search_first(&c, &qs)?;
    for (name, s) in [("navigation", &nav), ("manifest", &man), ("search", &srch)] {
        check(name, s, &qs)?;
        if verbose {
            eprintln!("== {name}");
            for l in &s.log {
                eprintln!("  {l}");
            }
        }
    }

    // Read costs, as in langonrock's table.
    let docs = reference::corpus().docs;
    let concept_docs: Vec<_> = docs
        .iter()
        .filter(|d| !d.path.ends_with("index.md"))
        .collect();
    let whole: Vec<f64> = concept_docs.iter().map(|d| tokens(&d.text)).collect();
    let mut get_whole = vec![];
    let mut get_schema = vec![];
    for d in &concept_docs {
        let id = d
            .path
            .rsplit('/')
            .next()
            .unwrap_or("")
            .trim_end_matches(".md");
        get_whole.push(tokens(&tool(&c.kb, "get", json!({"ids": [id]}))?));
        if d.text.contains("\n# Schema\n") {
            get_schema.push(tokens(&tool(
                &c.kb,
                "get",
                json!({"ids": [id], "section": "schema"}),
            )?));
        }
    }
    let mut search_result = vec![];
    for q in &qs {
        search_result.push(tokens(&tool(&c.kb, "search", json!({"query": q.query}))?));
    }
    let bundle: f64 = docs.iter().map(|d| tokens(&d.text)).sum();
    let indexes: f64 = docs
        .iter()
        .filter(|d| d.path.ends_with("index.md"))
        .map(|d| tokens(&d.text))
        .sum();
    let manifest = tokens(&c.manifest);
    let advice = okfit_core::kb::model::advice(&c.manifest);

    let strategies = [
        ("OKF index navigation", &nav, 116_357, 30),
        ("manifest in the prompt", &man, 64_355, 17),
        ("search first", &srch, 56_928, 36),
    ];
    println!(
        "agent session: 20 questions over the 500-concept reference tenant (tokens = characters/4)"
    );
    println!("| strategy | billed tokens | calls | langonrock billed | langonrock calls |");
    println!("| --- | ---: | ---: | ---: | ---: |");
    for (name, s, lb, lc) in &strategies {
        println!("| {name} | {:.0} | {} | {lb} | {lc} |", s.billed, s.calls);
    }
    println!("search results held the answer for {hits}/20 questions");
    println!("the manifest's advice: {advice}");
    println!("| read | tokens |\n| --- | ---: |");
    println!("| whole concept file (mean) | {:.0} |", mean(&whole));
    println!("| get(id) (mean) | {:.0} |", mean(&get_whole));
    println!(
        "| get(id, section schema) (mean over tables) | {:.0} |",
        mean(&get_schema)
    );
    println!(
        "| one search result (mean of the 20 queries) | {:.0} |",
        mean(&search_result)
    );
    println!("| bundle in full / every index.md / manifest | {bundle:.0} / {indexes:.0} / {manifest:.0} |");

    if let Some(path) = json_out {
        let v = json!({
            "concepts": reference::CONCEPTS,
            "questions": qs.len(),
            "strategies": strategies.iter().map(|(name, s, lb, lc)| json!({
                "strategy": name,
                "billed_tokens": s.billed.round(),
                "calls": s.calls,
                "langonrock_billed_tokens": lb,
                "langonrock_calls": lc,
            })).collect::<Vec<_>>(),
            "search_hits": hits,
            "advice": advice,
            "reads": {
                "whole_file": mean(&whole).round(),
                "get": mean(&get_whole).round(),
                "get_section_schema": mean(&get_schema).round(),
                "search_result": mean(&search_result).round(),
                "bundle": bundle.round(),
                "index_files": indexes.round(),
                "manifest": manifest.round(),
            },
        });
        okfit_bench::report::write_json(&path, &v)?;
    }
    Ok(())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut json_out = None;
    let mut dir = out_dir();
    let mut verbose = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--json" => match it.next() {
                Some(p) => json_out = Some(PathBuf::from(p)),
                None => {
                    eprintln!("error: --json needs a path");
                    return ExitCode::from(2);
                }
            },
            "--dir" => match it.next() {
                Some(p) => dir = PathBuf::from(p),
                None => {
                    eprintln!("error: --dir needs a path");
                    return ExitCode::from(2);
                }
            },
            "--verbose" | "-v" => verbose = true,
            "-h" | "--help" => {
                println!(
                    "usage: okfit-bench-session [--json PATH] [--dir DIR] [--verbose]\n\nDIR (default bench/out/session) receives the corpus (DIR/reference) and the tenant (DIR/data), replacing earlier ones."
                );
                return ExitCode::SUCCESS;
            }
            other => {
                eprintln!("error: unknown argument {other:?} (see --help)");
                return ExitCode::from(2);
            }
        }
    }
    match run(dir, json_out, verbose) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
