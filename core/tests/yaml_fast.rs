//! The fast frontmatter reader against the full YAML parser: whenever the
//! fast reader answers, its value is the full parser's, exactly. Checked
//! on hand-picked cases, on generated frontmatter (the common shapes and
//! the odd ones: anchors, aliases, tags, block scalars, flow collections,
//! odd quoting, keywords, numbers, comments, CRLF, tabs, duplicate keys),
//! and on every file of the test fixtures and the real corpora.

use okfit_core::frontmatter::{self, Split};
use okfit_core::yaml;
use proptest::prelude::*;
use std::path::{Path, PathBuf};

mod common;

/// The property: a fast answer is the full parser's answer. Returns
/// whether the fast reader answered.
fn agree(y: &str) -> bool {
    match yaml::fast(y) {
        None => false,
        Some(v) => {
            match yaml::full(y) {
                Ok(full) => assert_eq!(v, full, "fast reader differs on {y:?}"),
                Err(e) => panic!("fast reader accepted {y:?}, the full parser refused it: {e}"),
            }
            true
        }
    }
}

#[test]
fn large_mappings_are_read_and_duplicates_declined() {
    let keys: String = (0..3000).map(|i| format!("key_{i}: value {i}\n")).collect();
    assert!(agree(&keys), "the fast reader should read 3,000 keys");
    let dup = format!("{keys}key_1500: again\n");
    assert!(
        !agree(&dup),
        "a duplicate key is the full parser's to report"
    );
    assert!(yaml::full(&dup).is_err());
}

#[test]
fn accepted_cases_equal_the_full_parser() {
    let cases = [
        "type: Table\ntitle: \"Revenue Funnel Facts 1\"\n",
        "tags:\n  - support\n  - product\n",
        "tags:\n- a\n- b\nnext: 1\n",
        "generated: { by: okfit-gen/1.0, at: 2026-07-12T04:40:02Z }\n",
        "stale_after: 2027-03-12T07:25:22Z\nupdated: 2026-01-01\n",
        "sources:\n  - id: src-1\n    resource: https://example.com/a?b=c#d\n    title: \"x\"\n",
        "sources:\n  -   id: a\n      k: 2\n  - id: b\n",
        "sha: 759c3131da038f5425d455c5946dd18b5fc05f9ba39b24f9cbb17d87e1d6e1a0\nv: 3rd\nt: 12:30\n",
        "d: 0b9b1f6683a136702d70a7\ne: 0o9f\nf: 0b1e9\ng: 0o18e\nh: 0b2\n",
        "a:\n  b:\n    c: [1, -2, 3.5, x]\n  d: {}\ne: []\n",
        "k: 'it''s'\nj: \"a\\tb \\\"q\\\" \\\\ \\/\"\n",
        "k: a #c\nj: a#b\n# whole line\n\nl: \"x\" # c\n",
        "k: 0\nj: -0\nl: 123456789012345678\nm: 0.25\np: -10.5\n",
        "k:\r\n  - a\r\n  - b\r\n",
        "title: Café — naïve ünïcode\n",
        "k:\n  - id: a\n    tags:\n    - x\n    - z2\n  - id: b\n",
        "resource: ../../core\nnext: ./here\n",
        "k:   \nj: x\n",
        "path: /a/b.md\n_private: yes_no\n",
        "a: true\nb: false\nc: null\nd: ~\ne: [true, null, ~]\n",
        "v: ['a', \"b\", c d]\n",
    ];
    for y in cases {
        assert!(agree(y), "the fast reader should read {y:?}");
    }
}

#[test]
fn declined_cases_go_to_the_full_parser() {
    let cases = [
        "",
        "# only a comment\n",
        "k: True\n",
        "k: yes\n",
        "k: .inf\n",
        "k: NaN\n",
        "k: 007\n",
        "k: 0x1F\n",
        "k: 1e3\n",
        "k: 1_000\n",
        "k: +1\n",
        "k: &a x\nj: *a\n",
        "base: &b {x: 1}\nk:\n  <<: *b\n",
        "k: !tag x\n",
        "k: |\n  text\n",
        "k: >-\n  folded\n",
        "k: a\n  continued\n",
        "k: \"multi\n  line\"\n",
        "k: a: b\n",
        "k: a\nk: b\n",
        "k: [a, [b]]\n",
        "k: [a, ]\n",
        "k: {a: 1, a: 2}\n",
        "k: \"\\u00e9\"\n",
        "k:\ta\n",
        "\"quoted key\": 1\n",
        "? complex\n: key\n",
        "k: x\n---\nj: y\n",
        "%YAML 1.2\n---\nk: x\n",
        "  indented: root\n",
        "- a\n- b\n",
        "k:\n  -\n  - a\n",
        "k:\n  - - a\n",
        "k: -x\n",
        "k: @x\n",
        "key with space: 1\n",
        "1: one\n",
        "yes: 1\n",
    ];
    for y in cases {
        assert!(!agree(y), "the fast reader should decline {y:?}");
    }
}

/// Scalars of every kind, in the text they are written as.
fn scalar() -> impl Strategy<Value = String> {
    let pool = prop::sample::select(vec![
        "alpha",
        "Beta gamma",
        "x/1.0",
        "https://e.com/a?b=c#d",
        "a#b",
        "é café",
        "true",
        "True",
        "FALSE",
        "yes",
        "No",
        "on",
        "y",
        "null",
        "Null",
        "~",
        "none",
        "NaN",
        ".inf",
        "-.Inf",
        "1",
        "-1",
        "+1",
        "0",
        "-0",
        "007",
        "00",
        "1_000",
        "0x1F",
        "0o17",
        "0b1",
        "0b9b1f66",
        "0o9f",
        "0b1e9",
        "0b12",
        "0o18e",
        "0b101",
        "0o8",
        "0b_1",
        "0b2_0",
        "1.5",
        "-2.25",
        "0.1",
        "1e3",
        "1.5e-3",
        "5.",
        ".5",
        "1.0",
        "123456789012345678",
        "1234567890123456789012",
        "2026-01-01",
        "2026-07-12T04:40:02Z",
        "2026-07-12 04:40:02",
        "2026-07-12T04:40:02.5+02:00",
        "12:30",
        "1:30:00",
        "1.2.3",
        "a: b",
        "a:",
        ":a",
        "-a",
        "- a",
        "-",
        "?",
        "? x",
        "@x",
        "`x`",
        "%x",
        "!tag x",
        "!!str 1",
        "!!int 3",
        "&a x",
        "*a",
        "&a",
        "|",
        "|-",
        ">",
        ">-",
        "[a, b]",
        "[]",
        "{}",
        "[ a ,b ]",
        "{a: 1, b: x}",
        "{a: [x]}",
        "[a, [b]]",
        "[a, ]",
        "[a,,b]",
        "{a: 1, a: 2}",
        "{a:1}",
        "{a}",
        "[a: b]",
        "[\"x, y\", 'z']",
        "\"q\\\"uote\"",
        "\"tab\\tx\"",
        "\"\\u00e9\"",
        "\"\\x41\"",
        "\"\\e\"",
        "\"\"",
        "''",
        "'it''s'",
        "'a' b",
        "\"a\" # c",
        "\"a\"#c",
        "x # comment",
        "x #",
        "#x",
        "x  y",
        "x\\y",
        "<<",
        "=",
        "a,b",
        "a]b",
        "~x",
        "/",
        "_",
        "e",
        "Y",
        "n",
        "Inf",
        "infinity",
        "\"unclosed",
        "'unclosed",
    ]);
    let odd = "[a-zA-Z0-9 _:#'\"\\-\\[\\]{},.&*!|>%@`?/\\\\~+]{1,10}";
    let common = prop_oneof![
        "[A-Z][a-z]{2,8}( [a-z]{1,8}){0,4}",
        "\"[A-Za-z ,:#'-]{0,20}\"",
        "'[A-Za-z ,:#\"-]{0,20}'",
        "-?[0-9]{1,5}(\\.[0-9]{1,4})?",
        "20[0-9]{2}-[01][0-9]-[0-3][0-9](T[0-2][0-9]:[0-5][0-9]:[0-5][0-9]Z)?",
        "[0-9a-f]{8,16}",
        "\\[([a-z]{2,6}(, [a-z]{2,6}){0,3})?\\]",
        "\\{ ?by: [a-z]{2,6}/1\\.0, at: 2026-0[1-9]-1[0-9]T00:00:00Z ?\\}",
    ];
    prop_oneof![20 => common, 4 => pool.prop_map(str::to_owned), 1 => odd]
}

fn key() -> impl Strategy<Value = String> {
    let pool = prop::sample::select(vec![
        "id", "title", "type", "tags", "a", "b", "c", "a", "sources", "x.y", "x-y", "_k", "Yes",
        "null", "1", "\"q\"", "'q'", "? k", "<<", "k k", "k ", "-k", "é",
    ]);
    prop_oneof![3 => pool.prop_map(str::to_owned), 12 => "[a-z]{3,8}(_[a-z]{2,5})?", 1 => "[a-z]{1,3}"]
}

#[derive(Clone, Debug)]
enum Node {
    Scalar(String),
    Map(Vec<(String, Node)>),
    Seq(Vec<Node>),
}

fn node() -> impl Strategy<Value = Node> {
    scalar()
        .prop_map(Node::Scalar)
        .prop_recursive(4, 40, 5, |inner| {
            prop_oneof![
                prop::collection::vec((key(), inner.clone()), 1..5).prop_map(Node::Map),
                prop::collection::vec(inner, 1..4).prop_map(Node::Seq),
            ]
        })
}

/// How a tree is written out: indent width, whether a sequence under a
/// key is indented, line ends, and noise (comments, blank lines, tabs).
#[derive(Clone, Debug)]
struct Style {
    step: usize,
    indent_seq: bool,
    crlf: bool,
    comments: bool,
    tab: bool,
}

fn style() -> impl Strategy<Value = Style> {
    (
        1usize..5,
        any::<bool>(),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.05),
    )
        .prop_map(|(step, indent_seq, crlf, comments, tab)| Style {
            step,
            indent_seq,
            crlf,
            comments,
            tab,
        })
}

fn render_map(
    out: &mut Vec<String>,
    entries: &[(String, Node)],
    col: usize,
    first: Option<usize>,
    s: &Style,
) {
    for (i, (k, v)) in entries.iter().enumerate() {
        // The first entry of a sequence item shares the dash's line.
        let pad = if i == 0 { first.unwrap_or(col) } else { col };
        let lead = if i == 0 && first.is_some() {
            String::new()
        } else {
            " ".repeat(pad)
        };
        match v {
            Node::Scalar(x) => out.push(format!("{lead}{k}: {x}")),
            Node::Map(m) => {
                out.push(format!("{lead}{k}:"));
                render_map(out, m, col + s.step, None, s);
            }
            Node::Seq(items) => {
                out.push(format!("{lead}{k}:"));
                let at = if s.indent_seq { col + s.step } else { col };
                render_seq(out, items, at, s);
            }
        }
    }
}

fn render_seq(out: &mut Vec<String>, items: &[Node], col: usize, s: &Style) {
    for item in items {
        match item {
            Node::Scalar(x) => out.push(format!("{}- {x}", " ".repeat(col))),
            Node::Map(m) => {
                out.push(format!("{}- ", " ".repeat(col)));
                let mut sub = vec![];
                render_map(&mut sub, m, col + 2, Some(col + 2), s);
                let first = sub.remove(0);
                if let Some(last) = out.last_mut() {
                    last.push_str(&first);
                }
                out.extend(sub);
            }
            Node::Seq(inner) => {
                out.push(format!("{}-", " ".repeat(col)));
                render_seq(out, inner, col + 2, s);
            }
        }
    }
}

fn render(entries: &[(String, Node)], s: &Style, noise: &[usize]) -> String {
    let mut lines = vec![];
    render_map(&mut lines, entries, 0, None, s);
    for (i, &n) in noise.iter().enumerate() {
        let at = n % (lines.len() + 1);
        if s.comments {
            lines.insert(
                at,
                if i % 2 == 0 {
                    "# note".into()
                } else {
                    String::new()
                },
            );
        }
    }
    if s.tab {
        if let Some(l) = lines.first_mut() {
            l.insert(0, '\t');
        }
    }
    let end = if s.crlf { "\r\n" } else { "\n" };
    let mut y = lines.join(end);
    y.push_str(end);
    y
}

fn document() -> impl Strategy<Value = String> {
    (
        prop::collection::vec((key(), node()), 1..8),
        style(),
        prop::collection::vec(any::<usize>(), 0..4),
    )
        .prop_map(|(entries, s, noise)| render(&entries, &s, &noise))
}

/// Frontmatter in the shapes real bundles use; the fast reader must read
/// every one of them (else it saves nothing).
fn common_document() -> impl Strategy<Value = String> {
    let word = "About [a-z]{1,8}( [a-z]{1,8}){0,4}";
    let title = "[A-Z][a-z]{1,8}( [A-Za-z]{1,8}){0,5}";
    (
        title,
        word,
        prop::collection::vec("t-[a-z]{2,10}", 0..5),
        prop::collection::vec(("[a-z0-9-]{1,12}", word, 0u32..100), 0..4),
        (2000u32..2100, 1u32..13, 1u32..29),
        any::<bool>(),
    )
        .prop_map(|(title, desc, tags, sources, (y, m, d), flow)| {
            let mut out = format!(
                "type: Concept\ntitle: \"{title}\"\ndescription: {desc}\nupdated: {y}-{m:02}-{d:02}\n"
            );
            if flow {
                out.push_str(&format!("tags: [{}]\n", tags.join(", ")));
            } else if !tags.is_empty() {
                out.push_str("tags:\n");
                for t in &tags {
                    out.push_str(&format!("  - {t}\n"));
                }
            }
            if !sources.is_empty() {
                out.push_str("sources:\n");
                for (i, (id, note, n)) in sources.iter().enumerate() {
                    out.push_str(&format!(
                        "  - id: s{i}-{id}\n    resource: https://example.com/{id}\n    note: '{note}'\n    pages: {n}\n"
                    ));
                }
            }
            out.push_str(&format!(
                "generated: {{ by: gen/1.0, at: {y}-{m:02}-{d:02}T04:40:02Z }}\nverified:\n  - by: human:ada\n    at: {y}-{m:02}-{d:02}T00:00:00Z\n"
            ));
            out
        })
}

/// Generated frontmatter: where the fast reader answers, it answers as
/// the full parser does; it reads the common shapes; it answers often.
#[test]
fn fast_reader_equals_the_full_parser_on_generated_frontmatter() {
    common::differential(document(), common_document(), 4000, 20, |y| agree(y));
}

/// Every frontmatter block under `dir`: read fast where the fast reader
/// does, always equal to the full parser. Returns the number of blocks
/// and the files whose block the fast reader declined.
fn compare_tree(dir: &Path) -> (usize, Vec<PathBuf>) {
    let files = common::markdown_under(dir);
    let (mut blocks, mut declined) = (0, vec![]);
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        if let Split::Present(b) = frontmatter::split(&text) {
            blocks += 1;
            if !agree(&text[b.yaml_start..b.yaml_end]) {
                declined.push(f);
            }
        }
    }
    (blocks, declined)
}

#[test]
fn the_fixtures_and_the_shipped_bundle_read_the_same() {
    let (blocks, declined) = compare_tree(&common::repo().join("tests/fixtures"));
    let (b2, d2) = compare_tree(&common::repo().join("okf"));
    eprintln!(
        "fixtures: {} of {blocks} read fast; okf/: {} of {b2}",
        blocks - declined.len(),
        b2 - d2.len()
    );
    assert!(blocks > 20 && b2 > 10);
    assert!(
        d2.is_empty(),
        "okf/ is written in the common subset: {d2:?}"
    );
}

#[test]
fn the_corpora_read_the_same() {
    let Some(corpora) = common::corpora() else {
        return;
    };
    let (blocks, declined) = compare_tree(&corpora);
    let fast = blocks - declined.len();
    eprintln!("corpora: {fast} of {blocks} frontmatter blocks read fast");
    assert!(blocks > 1000, "{blocks}");
    assert!(fast * 2 > blocks, "only {fast} of {blocks} read fast");
}
