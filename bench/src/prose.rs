//! Deterministic English-like prose for benchmarks that need documents
//! shaped like real writing rather than lorem ipsum.
//!
//! Words are drawn from a Zipf–Mandelbrot distribution, the word of rank
//! `r` (from 1) with weight `1 / (r + 1.5)^1.1`, over a vocabulary of
//! 40,000 words: English function words at the top ranks, then common
//! words of a data team's documentation, then short pronounceable made-up
//! words for the long tail (names, jargon, rare words). So about half of a
//! text's tokens are function words and one in sixteen is "the", a 4 KB
//! document has some 350 distinct terms, and a few thousand documents use
//! tens of thousands of terms, as real prose does: this is what a
//! full-text index sees. Sentences of 5–29 words with commas, numbers and
//! now and then an inline `code_name`, in paragraphs of 2–5 sentences.
//!
//! The same seed always gives the same vocabulary, and the same generator
//! state the same text.

use crate::rng::SplitMix64;
use std::fmt::Write as _;

/// Function words and the commonest English words, most frequent first.
const HEAD: &[&str] = &[
    "the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "with", "be", "on",
    "not", "this", "by", "are", "or", "from", "at", "which", "an", "have", "but", "can", "all",
    "when", "one", "if", "more", "they", "there", "each", "their", "these", "only", "its", "also",
    "into", "than", "other", "some", "any", "so", "has", "been", "no", "will", "may", "after",
    "before", "new", "then", "should", "would", "most", "such", "where", "how", "both", "same",
    "first", "two", "over", "between", "through", "while", "about", "under", "out", "up", "does",
    "must", "per", "them", "what", "who", "because", "without", "we", "our", "you", "your", "was",
    "were", "do", "used", "use", "make", "made", "need", "needs", "like", "well", "just", "even",
    "still", "every", "three", "last", "next", "since", "until", "once", "often", "many", "much",
    "few", "less", "very", "here", "those", "again", "against", "during", "within", "across",
    "instead", "whether", "rather", "though", "already", "always", "never", "usually",
];

/// Common words of technical and business documentation.
const COMMON: &[&str] = &[
    "data",
    "table",
    "time",
    "value",
    "number",
    "report",
    "team",
    "customer",
    "order",
    "account",
    "change",
    "process",
    "system",
    "service",
    "query",
    "source",
    "user",
    "result",
    "rule",
    "review",
    "update",
    "release",
    "plan",
    "cost",
    "price",
    "day",
    "week",
    "month",
    "year",
    "rate",
    "owner",
    "policy",
    "request",
    "event",
    "schema",
    "column",
    "row",
    "partition",
    "metric",
    "pipeline",
    "revenue",
    "region",
    "product",
    "payment",
    "invoice",
    "refund",
    "session",
    "dashboard",
    "window",
    "daily",
    "weekly",
    "monthly",
    "total",
    "average",
    "count",
    "field",
    "record",
    "file",
    "job",
    "task",
    "step",
    "stage",
    "model",
    "feature",
    "test",
    "error",
    "warning",
    "incident",
    "latency",
    "load",
    "run",
    "runs",
    "read",
    "write",
    "reads",
    "writes",
    "check",
    "checks",
    "field",
    "key",
    "keys",
    "join",
    "joins",
    "filter",
    "group",
    "level",
    "status",
    "state",
    "history",
    "version",
    "snapshot",
    "backfill",
    "refresh",
    "upstream",
    "downstream",
    "lineage",
    "quality",
    "freshness",
    "threshold",
    "alert",
    "budget",
    "forecast",
    "target",
    "goal",
    "risk",
    "decision",
    "approval",
    "contract",
    "supplier",
    "shipment",
    "inventory",
    "warehouse",
    "catalog",
    "pricing",
    "discount",
    "margin",
    "churn",
    "retention",
    "cohort",
    "signup",
    "trial",
    "subscription",
    "plan",
    "tier",
    "usage",
    "quota",
    "capacity",
    "storage",
    "cluster",
    "node",
    "region",
    "zone",
    "network",
    "traffic",
    "request",
    "response",
    "client",
    "server",
    "endpoint",
    "token",
    "access",
    "permission",
    "role",
    "security",
    "audit",
    "compliance",
    "privacy",
    "retention",
    "deletion",
    "export",
    "import",
    "format",
    "document",
    "page",
    "section",
    "note",
    "guide",
    "example",
    "definition",
    "term",
    "name",
    "label",
    "tag",
    "description",
    "comment",
    "question",
    "answer",
    "reason",
    "cause",
    "effect",
    "impact",
    "issue",
    "fix",
    "workaround",
    "cost",
    "spend",
    "finance",
    "sales",
    "marketing",
    "support",
    "operations",
    "engineering",
    "analytics",
    "platform",
    "infra",
    "manager",
    "analyst",
    "engineer",
    "lead",
    "director",
    "vendor",
    "partner",
    "market",
    "country",
    "currency",
    "tax",
    "amount",
    "balance",
    "ledger",
    "entry",
    "transaction",
    "settlement",
    "dispute",
    "fraud",
    "score",
    "signal",
    "trend",
    "growth",
    "decline",
    "spike",
    "drop",
    "gap",
    "delay",
    "outage",
    "recovery",
    "backup",
    "restore",
    "migration",
    "deploy",
    "rollout",
    "rollback",
    "flag",
    "experiment",
    "variant",
    "control",
    "sample",
    "population",
    "segment",
    "funnel",
    "conversion",
    "click",
    "visit",
    "page",
    "device",
    "browser",
    "mobile",
    "desktop",
    "email",
    "campaign",
    "channel",
    "attribution",
    "lifetime",
    "value",
    "estimate",
    "actual",
    "expected",
    "observed",
    "measured",
    "computed",
    "derived",
    "raw",
    "clean",
    "stale",
    "fresh",
    "late",
    "early",
    "missing",
    "duplicate",
    "unique",
    "null",
    "default",
    "current",
    "previous",
    "daily",
    "hourly",
    "nightly",
    "quarterly",
    "annual",
    "fiscal",
    "calendar",
    "holiday",
    "weekend",
    "peak",
    "baseline",
    "benchmark",
    "limit",
    "slow",
    "fast",
    "large",
    "small",
    "high",
    "low",
    "open",
    "closed",
    "active",
    "inactive",
    "internal",
    "external",
    "public",
    "private",
    "shared",
    "primary",
    "secondary",
    "manual",
    "automatic",
];

/// Consonant onsets of made-up syllables, single ones listed twice.
const ONSETS: &[&str] = &[
    "b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "b", "c", "d",
    "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "w", "j", "z", "br", "cl", "dr",
    "fl", "gr", "pl", "pr", "sh", "st", "th", "tr", "ch", "qu", "sp",
];

/// Vowels of made-up syllables.
const VOWELS: &[&str] = &[
    "a", "e", "i", "o", "u", "a", "e", "i", "o", "ai", "ea", "ee", "ou", "y",
];

/// Codas of made-up syllables (most often none).
const CODAS: &[&str] = &[
    "", "", "", "", "", "", "", "n", "r", "s", "l", "t", "m", "nd", "st", "ck", "ng",
];

/// Words in the vocabulary, all ranks together.
pub const VOCABULARY: usize = 40_000;

/// A vocabulary with its rank distribution.
pub struct Prose {
    words: Vec<String>,
    /// Cumulative weights, scaled to `u64`.
    cdf: Vec<u64>,
}

impl Prose {
    /// The vocabulary of `seed` (the made-up words depend on it).
    pub fn new(seed: u64) -> Prose {
        Prose::with_vocabulary(seed, VOCABULARY)
    }

    /// [`Prose::new`] with `size` words in all (at least the English head
    /// and common words).
    pub fn with_vocabulary(seed: u64, size: usize) -> Prose {
        let mut words: Vec<String> = vec![];
        let mut seen = std::collections::HashSet::new();
        for w in HEAD.iter().chain(COMMON) {
            if seen.insert(w.to_string()) {
                words.push(w.to_string());
            }
        }
        let mut rng = SplitMix64::stream(seed, 0, 0x70_726f_7365);
        while words.len() < size {
            // One syllable in five, two in two, three otherwise.
            let syllables = match rng.below(20) {
                0..=3 => 1,
                4..=14 => 2,
                _ => 3,
            };
            let mut w = String::new();
            for _ in 0..syllables {
                w.push_str(rng.pick(ONSETS).copied().unwrap_or("t"));
                w.push_str(rng.pick(VOWELS).copied().unwrap_or("a"));
                w.push_str(rng.pick(CODAS).copied().unwrap_or(""));
            }
            if seen.insert(w.clone()) {
                words.push(w);
            }
        }
        let weights: Vec<f64> = (0..words.len())
            .map(|r| 1.0 / (r as f64 + 2.5).powf(1.1))
            .collect();
        let sum: f64 = weights.iter().sum();
        let mut acc = 0.0;
        let cdf = weights
            .iter()
            .map(|w| {
                acc += w / sum;
                (acc * u64::MAX as f64) as u64
            })
            .collect();
        Prose { words, cdf }
    }

    /// The word of `rank` (0 is the most frequent).
    pub fn word_at(&self, rank: usize) -> &str {
        &self.words[rank.min(self.words.len() - 1)]
    }

    /// The rank of one word drawn from the distribution.
    pub fn rank(&self, rng: &mut SplitMix64) -> usize {
        let x = rng.next_u64();
        self.cdf
            .partition_point(|&c| c < x)
            .min(self.words.len() - 1)
    }

    /// One word drawn from the distribution.
    pub fn word(&self, rng: &mut SplitMix64) -> &str {
        self.word_at(self.rank(rng))
    }

    /// A content word: drawn again while it is a function word.
    pub fn content_word(&self, rng: &mut SplitMix64) -> &str {
        loop {
            let r = self.rank(rng);
            if r >= HEAD.len() {
                return self.word_at(r);
            }
        }
    }

    /// Appends one sentence of 5–29 words, capitalised, with its stop.
    pub fn sentence(&self, rng: &mut SplitMix64, out: &mut String) {
        let n = 5 + rng.below(9) + rng.below(9) + rng.below(9);
        for i in 0..n {
            if i > 0 {
                out.push(' ');
            }
            let roll = rng.below(1000);
            if i > 0 && roll < 15 {
                let _ = match rng.below(3) {
                    0 => write!(out, "{}", 2 + rng.below(98)),
                    1 => write!(out, "{}.{}", rng.below(100), rng.below(10)),
                    _ => write!(out, "{}", 2015 + rng.below(12)),
                };
            } else if i > 0 && roll < 25 {
                let a = self.content_word(rng).to_string();
                let b = self.content_word(rng);
                let _ = write!(out, "`{a}_{b}`");
            } else {
                let w = self.word(rng);
                if i == 0 {
                    let mut c = w.chars();
                    if let Some(f) = c.next() {
                        out.extend(f.to_uppercase());
                        out.push_str(c.as_str());
                    }
                } else {
                    out.push_str(w);
                }
            }
            if i + 1 < n && i > 1 && rng.below(100) < 7 {
                out.push(',');
            }
        }
        out.push(if rng.below(40) == 0 { '?' } else { '.' });
    }

    /// Appends a paragraph of 2–5 sentences.
    pub fn paragraph(&self, rng: &mut SplitMix64, out: &mut String) {
        let n = 2 + rng.below(4);
        for i in 0..n {
            if i > 0 {
                out.push(' ');
            }
            self.sentence(rng, out);
        }
    }

    /// A concept of about `words` words: frontmatter (type `Note`, the
    /// title, a description naming `mark`), a heading, paragraphs of prose,
    /// and `mark` on its last line.
    pub fn concept(&self, rng: &mut SplitMix64, title: &str, mark: &str, words: usize) -> String {
        let mut body = String::new();
        while body.split_whitespace().count() < words {
            self.paragraph(rng, &mut body);
            body.push_str("\n\n");
        }
        format!("---\ntype: Note\ntitle: \"{title}\"\ndescription: \"About {mark}.\"\n---\n\n# {title}\n\n{body}{mark}\n")
    }

    /// A document shaped like a written concept: frontmatter (type `Note`,
    /// the title, a one-sentence description, two tags), the title as a
    /// heading, then sections of 1–4 paragraphs under `##` headings of 2–4
    /// words, until about `words` words.
    pub fn sectioned(&self, rng: &mut SplitMix64, title: &str, words: usize) -> String {
        let mut description = String::new();
        self.sentence(rng, &mut description);
        let tags = [self.content_word(rng), self.content_word(rng)];
        let mut body = String::new();
        let mut count = 0;
        while count < words {
            let n = 2 + rng.below(3) as usize;
            let heading = self.title(rng, n);
            body.push_str("## ");
            body.push_str(&heading);
            body.push_str("\n\n");
            let paragraphs = 1 + rng.below(4);
            for _ in 0..paragraphs {
                let from = body.len();
                self.paragraph(rng, &mut body);
                count += body[from..].split_whitespace().count();
                body.push_str("\n\n");
            }
        }
        format!(
            "---\ntype: Note\ntitle: \"{title}\"\ndescription: \"{}\"\ntags: [{}, {}]\n---\n\n# {title}\n\n{body}",
            description.replace('"', "'"),
            tags[0],
            tags[1]
        )
    }

    /// `n` capitalised content words joined by spaces (a title or heading).
    pub fn title(&self, rng: &mut SplitMix64, n: usize) -> String {
        let mut t = String::new();
        for i in 0..n {
            if i > 0 {
                t.push(' ');
            }
            let w = self.content_word(rng);
            let mut c = w.chars();
            if let Some(f) = c.next() {
                t.extend(f.to_uppercase());
                t.push_str(c.as_str());
            }
        }
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deterministic_and_zipf_like() {
        let (a, b) = (Prose::new(7), Prose::new(7));
        let (mut ra, mut rb) = (SplitMix64::new(1), SplitMix64::new(1));
        let (mut ta, mut tb) = (String::new(), String::new());
        for _ in 0..200 {
            a.paragraph(&mut ra, &mut ta);
            b.paragraph(&mut rb, &mut tb);
        }
        assert_eq!(ta, tb);
        let words: Vec<&str> = ta
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .collect();
        let the = words
            .iter()
            .filter(|w| w.eq_ignore_ascii_case("the"))
            .count();
        // "the" is the commonest word, a few per cent of the tokens.
        assert!(the * 100 > words.len() * 3 && the * 100 < words.len() * 15);
        let distinct: std::collections::HashSet<String> =
            words.iter().map(|w| w.to_lowercase()).collect();
        assert!(distinct.len() > 2_000, "{}", distinct.len());
    }
}
