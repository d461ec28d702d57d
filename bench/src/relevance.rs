//! Retrieval quality: question sets over real OKF corpora, the ranking
//! metrics reported for them, and the plain BM25 baseline okfit's search is
//! compared with.
//!
//! A question set (`bench/search/*.json`) names a corpus folder under the
//! shared corpora directory and lists questions, each of kind `named` (it
//! names its concept) or `described` (it describes a situation in other
//! words), with the concept files that answer it. The corpora themselves
//! are not part of the repository: [`corpora_dir`] finds them.

use serde_json::Value;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// Rank cut-off of every metric.
pub const CUTOFF: usize = 8;

/// One question and the files that answer it.
#[derive(Clone, Debug)]
pub struct Question {
    /// `named` or `described`.
    pub kind: String,
    /// The question as a user would type it.
    pub text: String,
    /// Answering files, relative to the corpus root.
    pub answers: Vec<String>,
}

/// The questions over one corpus.
#[derive(Clone, Debug)]
pub struct QuestionSet {
    /// Short name of the corpus.
    pub corpus: String,
    /// The corpus folder, relative to the corpora directory.
    pub path: String,
    /// Its questions.
    pub questions: Vec<Question>,
}

/// The corpora directory: `$OKFIT_CORPORA`, else `../shared/corpora` next
/// to the repository.
pub fn corpora_dir(repo: &Path) -> PathBuf {
    match std::env::var_os("OKFIT_CORPORA") {
        Some(p) => PathBuf::from(p),
        None => repo.join("..").join("shared").join("corpora"),
    }
}

/// Reads every question set in `dir` (`*.json`, in name order).
pub fn load_sets(dir: &Path) -> Result<Vec<QuestionSet>, String> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| format!("{}: {e}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.iter().map(|f| load_set(f)).collect()
}

fn load_set(file: &Path) -> Result<QuestionSet, String> {
    let at = |what: &str| format!("{}: {what}", file.display());
    let text = std::fs::read_to_string(file).map_err(|e| at(&e.to_string()))?;
    let v: Value = serde_json::from_str(&text).map_err(|e| at(&e.to_string()))?;
    let s = |v: &Value, k: &str| -> Result<String, String> {
        v.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| at(&format!("\"{k}\" must be a string")))
    };
    let mut questions = Vec::new();
    for q in v
        .get("questions")
        .and_then(Value::as_array)
        .ok_or_else(|| at("\"questions\" must be an array"))?
    {
        let kind = s(q, "kind")?;
        if kind != "named" && kind != "described" {
            return Err(at(&format!("unknown kind {kind:?}")));
        }
        let answers: Vec<String> = q
            .get("answers")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        if answers.is_empty() {
            return Err(at("every question needs at least one answer"));
        }
        questions.push(Question {
            kind,
            text: s(q, "q")?,
            answers,
        });
    }
    Ok(QuestionSet {
        corpus: s(&v, "corpus")?,
        path: s(&v, "path")?,
        questions,
    })
}

/// Ranking metrics averaged over questions.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Metrics {
    /// Questions measured.
    pub n: usize,
    /// Share whose first result answers.
    pub hit1: f64,
    /// Share with an answer in the first [`CUTOFF`].
    pub hit8: f64,
    /// Mean reciprocal rank of the first answer within [`CUTOFF`].
    pub mrr8: f64,
    /// Mean nDCG at [`CUTOFF`] with binary relevance.
    pub ndcg8: f64,
}

/// The metrics of one ranked list: `relevant[i]` says whether result `i`
/// answers; `answers` is how many files answer in all.
pub fn score(relevant: &[bool], answers: usize) -> Metrics {
    let top = &relevant[..relevant.len().min(CUTOFF)];
    let first = top.iter().position(|r| *r);
    let dcg: f64 = top
        .iter()
        .enumerate()
        .filter(|(_, r)| **r)
        .map(|(i, _)| 1.0 / ((i + 2) as f64).log2())
        .sum();
    let ideal: f64 = (0..answers.min(CUTOFF))
        .map(|i| 1.0 / ((i + 2) as f64).log2())
        .sum();
    Metrics {
        n: 1,
        hit1: f64::from(u8::from(first == Some(0))),
        hit8: f64::from(u8::from(first.is_some())),
        mrr8: first.map_or(0.0, |i| 1.0 / (i + 1) as f64),
        ndcg8: if ideal > 0.0 { dcg / ideal } else { 0.0 },
    }
}

impl Metrics {
    /// The mean of `items`.
    pub fn mean(items: &[Metrics]) -> Metrics {
        let n = items.len();
        if n == 0 {
            return Metrics::default();
        }
        let avg = |f: fn(&Metrics) -> f64| items.iter().map(f).sum::<f64>() / n as f64;
        Metrics {
            n,
            hit1: avg(|m| m.hit1),
            hit8: avg(|m| m.hit8),
            mrr8: avg(|m| m.mrr8),
            ndcg8: avg(|m| m.ndcg8),
        }
    }
}

/// Whether a search hit's id names the answer file `path`: an id is the
/// shortest unambiguous form of its path (`stem`, `parent/stem` or the
/// path without `.md`), so it is the path or one of its `/`-suffixes.
pub fn id_names(id: &str, path: &str) -> bool {
    let p = path.strip_suffix(".md").unwrap_or(path);
    p == id || p.ends_with(&format!("/{id}"))
}

/// The concept files of a corpus folder: every `.md` file below it except
/// the navigation files `index.md` and `log.md`, as `/`-separated paths
/// relative to it, sorted.
pub fn concept_files(root: &Path) -> Result<Vec<String>, String> {
    fn walk(dir: &Path, rel: &str, out: &mut Vec<String>) -> Result<(), String> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for e in entries {
            let e = e.map_err(|e| e.to_string())?;
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with('.') {
                continue;
            }
            let sub = if rel.is_empty() {
                name.clone()
            } else {
                format!("{rel}/{name}")
            };
            let ft = e.file_type().map_err(|e| e.to_string())?;
            if ft.is_dir() {
                walk(&e.path(), &sub, out)?;
            } else if name.ends_with(".md") && name != "index.md" && name != "log.md" {
                out.push(sub);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    walk(root, "", &mut out)?;
    out.sort();
    Ok(out)
}

/// Plain Okapi BM25 over raw file text: lowercase alphanumeric tokens, no
/// stemming, no stopwords, no fields; k1 1.2, b 0.75.
pub struct PlainBm25 {
    paths: Vec<String>,
    lens: Vec<f64>,
    avg: f64,
    postings: HashMap<String, Vec<(usize, f64)>>,
}

/// Lowercase maximal runs of alphanumeric characters.
pub fn plain_tokens(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(str::to_lowercase)
        .collect()
}

impl PlainBm25 {
    /// Indexes `files` (path, whole text).
    pub fn new(files: &[(String, String)]) -> PlainBm25 {
        let mut postings: HashMap<String, Vec<(usize, f64)>> = HashMap::new();
        let mut lens = Vec::with_capacity(files.len());
        for (i, (_, text)) in files.iter().enumerate() {
            let toks = plain_tokens(text);
            lens.push(toks.len() as f64);
            let mut tf: HashMap<String, f64> = HashMap::new();
            for t in toks {
                *tf.entry(t).or_default() += 1.0;
            }
            for (t, f) in tf {
                postings.entry(t).or_default().push((i, f));
            }
        }
        let avg = lens.iter().sum::<f64>() / lens.len().max(1) as f64;
        PlainBm25 {
            paths: files.iter().map(|(p, _)| p.clone()).collect(),
            lens,
            avg,
            postings,
        }
    }

    /// The paths of the top `k` files for `query`, best first (ties by
    /// path).
    pub fn rank(&self, query: &str, k: usize) -> Vec<&str> {
        let (k1, b) = (1.2, 0.75);
        let n = self.paths.len() as f64;
        let mut terms = plain_tokens(query);
        terms.sort();
        terms.dedup();
        let mut acc = vec![0f64; self.paths.len()];
        for t in &terms {
            let Some(list) = self.postings.get(t) else {
                continue;
            };
            let df = list.len() as f64;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(i, tf) in list {
                let norm = k1 * (1.0 - b + b * self.lens[i] / self.avg);
                acc[i] += idf * tf * (k1 + 1.0) / (tf + norm);
            }
        }
        let mut order: Vec<usize> = (0..acc.len()).filter(|&i| acc[i] > 0.0).collect();
        order.sort_by(|&a, &b| {
            acc[b]
                .total_cmp(&acc[a])
                .then_with(|| self.paths[a].cmp(&self.paths[b]))
        });
        order
            .into_iter()
            .take(k)
            .map(|i| self.paths[i].as_str())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metrics_of_a_ranking() {
        let m = score(&[false, true, false, true], 2);
        assert_eq!((m.hit1, m.hit8, m.mrr8), (0.0, 1.0, 0.5));
        let ideal = 1.0 + 1.0 / 3f64.log2();
        let dcg = 1.0 / 3f64.log2() + 1.0 / 5f64.log2();
        assert!((m.ndcg8 - dcg / ideal).abs() < 1e-12);
        let miss = score(&[false; 10], 1);
        assert_eq!(miss.hit8, 0.0);
        // Beyond the cut-off nothing counts.
        let late = score(
            &[false, false, false, false, false, false, false, false, true],
            1,
        );
        assert_eq!(late.mrr8, 0.0);
        assert_eq!(score(&[true], 1).ndcg8, 1.0);
    }

    #[test]
    fn ids_name_paths_by_suffix() {
        assert!(id_names("foo", "concepts/foo.md"));
        assert!(id_names("concepts/foo", "concepts/foo.md"));
        assert!(!id_names("oo", "concepts/foo.md"));
        assert!(!id_names("bar", "concepts/foo.md"));
    }

    #[test]
    fn plain_bm25_prefers_the_rarer_word() {
        let files = vec![
            ("a.md".to_string(), "common rare".to_string()),
            ("b.md".to_string(), "common common".to_string()),
            ("c.md".to_string(), "other".to_string()),
        ];
        let ix = PlainBm25::new(&files);
        assert_eq!(ix.rank("rare common", 8), ["a.md", "b.md"]);
        assert!(ix.rank("absent", 8).is_empty());
    }
}
