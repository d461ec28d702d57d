//! What search compares: the terms of a text. A text is split into
//! tokens (lowercased, accent-folded runs of letters and digits), and each
//! token of letters only is reduced to its English Snowball stem, so
//! "persisting", "persisted" and "persists" are one term. A query also
//! drops its stopwords ("how", "do", "the", …) unless it is made of
//! nothing else: they occur in almost every concept, so they only add
//! noise to the ranking and work to the search.

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::{FxHashMap, FxHashSet};
use std::sync::OnceLock;
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

/// Appends the search tokens of `text` to `out`: lowercased, accent-folded
/// (NFKD minus combining marks) maximal runs of alphanumeric characters.
pub fn tokenize(text: &str, out: &mut Vec<String>) {
    if text.is_ascii() {
        // Fast path: runs of [A-Za-z0-9], one allocation per token.
        for run in ascii_runs(text) {
            out.push(run.to_ascii_lowercase());
        }
        return;
    }
    let mut cur = String::new();
    for c in text.to_lowercase().nfkd() {
        if is_combining_mark(c) {
            continue;
        }
        if c.is_alphanumeric() {
            cur.push(c);
        } else if !cur.is_empty() {
            out.push(std::mem::take(&mut cur));
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
}

/// The maximal runs of ASCII letters and digits in `text`, as written.
fn ascii_runs(text: &str) -> impl Iterator<Item = &str> {
    let bytes = text.as_bytes();
    let mut i = 0;
    std::iter::from_fn(move || {
        while i < bytes.len() && !bytes[i].is_ascii_alphanumeric() {
            i += 1;
        }
        let start = i;
        while i < bytes.len() && bytes[i].is_ascii_alphanumeric() {
            i += 1;
        }
        // Both ends sit next to ASCII bytes: always character boundaries.
        text.get(start..i).filter(|run| !run.is_empty())
    })
}

/// The search tokens of `text` (see [`tokenize`]).
pub fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    tokenize(text, &mut out);
    out
}

fn stemmer() -> &'static Stemmer {
    static STEMMER: OnceLock<Stemmer> = OnceLock::new();
    STEMMER.get_or_init(|| Stemmer::create(Algorithm::English))
}

/// The term of one token: its English stem when the token is three or more
/// letters (words with digits, like `h100` or `ga4`, and short words stay
/// as they are).
pub fn stem(token: &str) -> String {
    if token.len() < 3 || !token.chars().all(char::is_alphabetic) {
        return token.to_owned();
    }
    stemmer().stem(token).into_owned()
}

/// Words whose stems a thread remembers before it forgets them all: more
/// than a large corpus's vocabulary, a few MB at most.
const STEM_MEMO: usize = 200_000;

thread_local! {
    /// The stems of the words this thread met: a corpus repeats its words,
    /// and stemming is most of the cost of deriving terms.
    static STEMS: std::cell::RefCell<FxHashMap<String, String>> =
        std::cell::RefCell::new(FxHashMap::default());
}

thread_local! {
    /// The token counts of the text being analysed on this thread, kept
    /// between texts so that its table does not grow again for each.
    static RAW: std::cell::RefCell<FxHashMap<String, u32>> =
        std::cell::RefCell::new(FxHashMap::default());
}

/// The terms of `text` with their counts: each distinct token stemmed once.
pub fn term_counts(text: &str, out: &mut FxHashMap<String, u32>) -> usize {
    RAW.with(|raw| {
        let mut raw = raw.borrow_mut();
        raw.clear();
        let n = count_tokens(text, &mut raw);
        STEMS.with(|memo| {
            let mut memo = memo.borrow_mut();
            if memo.len() > STEM_MEMO {
                memo.clear();
            }
            for (t, n) in raw.drain() {
                match memo.get(t.as_str()) {
                    Some(s) => add_count(out, s, n),
                    None => {
                        let s = stem(&t);
                        add_count(out, &s, n);
                        memo.insert(t, s);
                    }
                }
            }
        });
        n
    })
}

/// Adds `n` to `term`'s count, allocating its key only when it is new.
fn add_count(out: &mut FxHashMap<String, u32>, term: &str, n: u32) {
    match out.get_mut(term) {
        Some(c) => *c += n,
        None => {
            out.insert(term.to_owned(), n);
        }
    }
}

/// Counts the tokens of `text` (see [`tokenize`]) into `raw`; how many
/// there were. ASCII text is counted in place: a token is allocated only
/// the first time the text uses it.
fn count_tokens(text: &str, raw: &mut FxHashMap<String, u32>) -> usize {
    if !text.is_ascii() {
        let mut toks = Vec::new();
        tokenize(text, &mut toks);
        let n = toks.len();
        for t in toks {
            *raw.entry(t).or_insert(0) += 1;
        }
        return n;
    }
    let mut lower = String::new();
    let mut n = 0;
    for run in ascii_runs(text) {
        n += 1;
        let tok = if run.bytes().any(|b| b.is_ascii_uppercase()) {
            lower.clear();
            lower.push_str(run);
            lower.make_ascii_lowercase();
            lower.as_str()
        } else {
            run
        };
        add_count(raw, tok, 1);
    }
    n
}

/// English stopwords: function words that say nothing about which concept
/// a question is about (the Snowball project's English list, lightly
/// extended with question words).
const STOPWORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
];

/// Whether `token` (lowercased) is a stopword.
pub fn is_stopword(token: &str) -> bool {
    STOPWORDS.binary_search(&token).is_ok()
}

/// The terms of a query, de-duplicated in first-occurrence order: its
/// tokens without stopwords (all of them when every token is one),
/// stemmed.
pub fn query_terms(query: &str) -> Vec<String> {
    let toks = tokens(query);
    let content = toks.iter().any(|t| !is_stopword(t));
    let mut seen = FxHashSet::default();
    let mut out = Vec::new();
    for t in toks {
        if content && is_stopword(&t) {
            continue;
        }
        let s = stem(&t);
        if seen.insert(s.clone()) {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokenize_ascii() {
        assert_eq!(tokens("order_id"), ["order", "id"]);
        assert_eq!(tokens("  Hello, World-42x! "), ["hello", "world", "42x"]);
        assert!(tokens("").is_empty());
        assert!(tokens(" -_- ").is_empty());
        let mut out = vec!["pre".to_owned()];
        tokenize("A b", &mut out);
        assert_eq!(out, ["pre", "a", "b"]);
    }

    #[test]
    fn tokenize_unicode() {
        assert_eq!(tokens("Operações"), ["operacoes"]);
        assert_eq!(tokens("売上高 の report"), ["売上高", "の", "report"]);
        assert_eq!(tokens("Ünïcödé_ÉTÉ"), ["unicode", "ete"]);
        // NFKD compatibility folding.
        assert_eq!(tokens("ﬁle ①"), ["file", "1"]);
    }

    #[test]
    fn stopwords_are_sorted_for_the_binary_search() {
        assert!(STOPWORDS.windows(2).all(|w| w[0] < w[1]));
        assert!(is_stopword("the") && is_stopword("how") && !is_stopword("table"));
    }

    #[test]
    fn stems_join_word_forms() {
        for w in ["persist", "persisting", "persisted", "persists"] {
            assert_eq!(stem(w), "persist", "{w}");
        }
        assert_eq!(stem("joins"), stem("join"));
        // Words with digits and short words are kept whole.
        for w in ["h100s", "ga4", "is"] {
            assert_eq!(stem(w), w);
        }
    }

    #[test]
    fn query_terms_drop_stopwords_unless_nothing_else() {
        assert_eq!(
            query_terms("How do I join the Blocks to transactions?"),
            ["join", "block", "transact"]
        );
        assert_eq!(query_terms("to be or not to be"), ["to", "be", "or", "not"]);
        assert_eq!(query_terms("b a b A c"), ["b", "c"]);
        assert!(query_terms(" -- ").is_empty());
    }

    #[test]
    fn term_counts_equal_stemmed_token_counts() {
        let texts = [
            "Tables table TABLE chairs",
            "  Hello, World-42x! persisting persisted Persists  ",
            "Café crème, CAFÉ naïve: ﬁle Ünïcödé 42 h100 GA4",
            "",
            " -_- ",
            "a an the THE The of",
            "x".repeat(300).as_str(),
        ]
        .map(str::to_owned);
        let mut seed = 7u64;
        let mut random = String::new();
        for _ in 0..2000 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let alphabet = b"aAbBcdeE z9_-.\n\t";
            random.push(alphabet[(seed >> 33) as usize % alphabet.len()] as char);
        }
        for text in texts.iter().chain([&random]) {
            let mut want: FxHashMap<String, u32> = FxHashMap::default();
            let toks = tokens(text);
            for t in &toks {
                *want.entry(stem(t)).or_insert(0) += 1;
            }
            let mut got = FxHashMap::default();
            assert_eq!(term_counts(text, &mut got), toks.len(), "{text:?}");
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn term_counts_stem_once_and_count_tokens() {
        let mut m = FxHashMap::default();
        assert_eq!(term_counts("Tables table TABLE chairs", &mut m), 4);
        assert_eq!(m.get("tabl"), Some(&3));
        assert_eq!(m.get("chair"), Some(&1));
    }
}
