//! The plain body scan against the CommonMark parser: whenever the plain
//! scan answers, its links, heading slugs and code spans are the parser's,
//! exactly. Checked on generated bodies (plain prose and every construct
//! the plain scan must decline: code, HTML, tables, quotes, setext
//! underlines, escapes, entities, link definitions, task boxes, odd
//! brackets and destinations, indentation, tabs, CRLF) and on every file of
//! the test fixtures, the shipped bundle and the real corpora.

use okfit_core::frontmatter::{self, Split};
use okfit_core::markdown;
use proptest::prelude::*;
use std::path::Path;

mod common;

/// The property: a plain answer is the parser's answer. Returns whether
/// the plain scan answered.
fn agree(body: &str) -> bool {
    match markdown::scan_plain(body) {
        None => false,
        Some(plain) => {
            assert_eq!(
                plain,
                markdown::scan_commonmark(body),
                "the plain scan differs on {body:?}"
            );
            true
        }
    }
}

#[test]
fn hand_picked_bodies() {
    let read = [
        "# Title\n\nText with [a link](../b.md) and ![an image](i.png).\n",
        "## A heading  \n\n- item [x1](a.md#frag)\n* item\n+ item\n1. one\n2) two\n",
        "Text[^1] and more.\n\n[^1]: The source, https://example.com/a?b=c\n",
        "#\n\n###### Six\n####### seven is text\n#hashtag\n",
        "Ünïcode heading\n# Ünïcode Straße\n\nText *em* **strong** _u_ ~~s~~ & more.\n",
        "# Same\n# Same\n# Same-1\n",
        "***\n___\n**bold** start\n",
        "```rust\n[a](b) <div> | \\ \t    x\n```\n\n~~~~\n```\n~~~~~\n",
        "Text `[a](b)` and ``a ` b`` and [`c`](d).\n",
        "# Heading `with code` and [a link](x.md)\n",
        "[a](b \"A title\") and [a][b] and [a] and a] and a < b and a<=b.\n",
        "*   [**Bold link**](#anchor): text\n    \n1.  Item\n",
        "---\n\nText\n\n***\n",
        "```\nunclosed\n",
        "# [Link](x)\n",
        "Text\n```\n",
        "- # heading in an item\n",
        "```\ncode\t\n```\t\nText\n",
    ];
    for b in read {
        assert!(agree(b), "declined {b:?}");
    }
    let declined = [
        "Text\n===\n",
        "Text\n---\n",
        "Text\n-\n",
        "    [a](b)\n",
        "\t[a](b)\n",
        "<div>[a](b)</div>\n",
        "a | b\n--|--\n[a](b) | c\n",
        "> [a](b)\n",
        "\\[a](b)\n",
        "[foo]: /url\n\n[foo]\n",
        "- [ ] task\n- [x] done\n",
        "[a](<b c>)\n",
        "[a](b(c))\n",
        "[[a]](b)\n",
        "[a\nb](c)\n",
        "# Title #\n",
        "# *Em* title\n",
        "# A &amp; B\n",
        "[a](b&amp;c)\n",
        "Text\r\n",
        "  ```\ncode\n  ```\n",
        "- ```\n  code\n  ```\n",
        "- [a]: b\n",
        "<http://a.b>\n",
        "[^1]:\n",
        "[^a][^b]\n",
        "[^a](b)\n",
        "[^`x`]\n",
        "Text\n-\x0c\n",
        "Text\n---\x0b\n",
        "[^a<b]\n",
        "Plain text\x0c that fills more than one block of thirty-two bytes.\n",
        "Plain text that fills more than one block of thirty-two bytes\x00\n",
    ];
    let read_anyway: Vec<_> = declined.iter().filter(|b| agree(b)).collect();
    assert!(read_anyway.is_empty(), "read {read_anyway:?}");
    for b in declined {
        // And the full scan still answers.
        let _ = markdown::scan_body(b);
    }
}

/// Inline pieces: plain words and links, and every construct that can
/// change what a bracket, a heading or code is.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => "[a-zA-Z]{1,8}",
        2 => Just(" ".to_string()),
        3 => ("[A-Za-z ]{1,10}", "[a-z0-9./#?=%_:-]{1,12}").prop_map(|(t, d)| format!("[{t}]({d})")),
        1 => ("[A-Za-z ]{0,6}", "[a-z0-9./#_-]{1,8}").prop_map(|(t, d)| format!("![{t}]({d})")),
        1 => "[a-z0-9-]{1,5}".prop_map(|l| format!("[^{l}]")),
        1 => prop::sample::select(vec![
            "[", "]", "(", ")", "!", "^", "*", "**", "_", "~~", "~~~", "#", "&",
            "&amp;", "&#91;", "`", "``", "\\", "\\[", "<", ">", "<http://a.b>",
            "<!-- c -->", "|", "\t", "\r", "\u{a0}", "é", "[x]", "[ ]", "[]", "[a][b]",
            "[a]()", "[a](<b>)", "[a](b \"t\")", "[a](b 't')", "[a](b(c))",
            "[a]( b )", "[[a]](b)", "[a](b)(c)", "[^x](y)", "[^x]:", "https://a.b/c",
            "www.a.com", "\x0c", "\x0b", "[a](b\\)c)", "[a](é)", "[a](b>c)", "[a](&#41;)", "[*](x)",
            "[a *b*](c)", "*[a](b)*", "[a](b)]", "[a]: b", "\0",
        ])
        .prop_map(str::to_string),
    ]
}

fn inline() -> impl Strategy<Value = String> {
    prop::collection::vec(piece(), 0..8).prop_map(|p| p.concat())
}

/// One line: a block opener (or none) and inline text.
fn line() -> impl Strategy<Value = String> {
    let opener = prop::sample::select(vec![
        "",
        "",
        "",
        "",
        " ",
        "  ",
        "   ",
        "    ",
        "\t",
        "# ",
        "## ",
        "###### ",
        "####### ",
        "#",
        "- ",
        "* ",
        "+ ",
        "-  ",
        "1. ",
        "2) ",
        "10. ",
        "1234567890. ",
        "-",
        "> ",
        ">",
        "[^n]: ",
        "[^n]:",
        "[foo]: ",
        "  - ",
        "    - ",
        "---",
        "===",
        "***",
        "- - -",
        "```",
        "~~~",
        "| ",
        "<div>",
        "- [ ] ",
        "- [x] ",
        "1.",
        "=",
        "  # ",
    ]);
    (opener, inline()).prop_map(|(o, i)| format!("{o}{i}"))
}

fn body() -> impl Strategy<Value = String> {
    (prop::collection::vec(line(), 0..10), any::<bool>()).prop_map(|(lines, last_newline)| {
        let mut b = lines.join("\n");
        if last_newline {
            b.push('\n');
        }
        b
    })
}

/// Bodies as concept files are written: headings, paragraphs of words
/// with links and footnotes, lists, footnote definitions. The plain scan
/// must read every one of them (else it saves nothing).
fn prose() -> impl Strategy<Value = String> {
    let sentence = "[A-Z][a-z]{1,9}( [a-z]{1,9}){2,12}[.!?]";
    let link = (
        "[A-Z][a-z]{1,8}( [A-Za-z0-9]{1,8}){0,3}",
        "(\\.\\./)?[a-z0-9-]{1,12}(/[a-z0-9-]{1,12}){0,2}\\.md(#[a-z-]{1,8})?",
    );
    let para = prop::collection::vec((sentence, prop::option::of(link)), 1..6).prop_map(|s| {
        s.into_iter()
            .map(|(t, l)| match l {
                Some((text, dest)) => format!("{t} See [{text}]({dest})."),
                None => t,
            })
            .collect::<Vec<_>>()
            .join(" ")
    });
    let block = prop_oneof![
        4 => para.clone(),
        2 => "#{1,4} [A-Z][a-z]{1,9}( [A-Za-z0-9]{1,9}){0,4}",
        1 => prop::collection::vec("[A-Z][a-z]{1,9}( [a-z]{1,9}){0,5}", 1..5)
            .prop_map(|items| items.iter().map(|i| format!("- {i}")).collect::<Vec<_>>().join("\n")),
        1 => ("[a-z0-9-]{1,6}", "[A-Z][a-z]{1,9}( [a-z]{1,9}){0,5}, https://example\\.com/[a-z]{1,8}")
            .prop_map(|(l, t)| format!("Text[^{l}].\n\n[^{l}]: {t}")),
    ];
    prop::collection::vec(block, 1..12).prop_map(|b| b.join("\n\n") + "\n")
}

/// Generated bodies: where the plain scan answers, it answers as the
/// parser does; it reads plain prose; it answers often.
#[test]
fn plain_scan_equals_the_parser_on_generated_bodies() {
    common::differential(body(), prose(), 6000, 10, |b| agree(b));
}

/// The reading property fails on a body the plain scan declines (the
/// helper catches and reports what the reader does, not only panics).
#[test]
#[should_panic(expected = "declined")]
fn a_declined_body_fails_the_reading_property() {
    common::property(Just("Text\r\n".to_string()), 4, true, |b| agree(b));
}

/// Every body under `dir` (the text after its frontmatter): read plain
/// where the plain scan does, always equal to the parser. Returns the
/// number of bodies and of those read plain.
fn compare_tree(dir: &Path) -> (usize, usize) {
    let files = common::markdown_under(dir);
    let (mut bodies, mut read) = (0, 0);
    for f in files {
        let Ok(text) = std::fs::read_to_string(&f) else {
            continue;
        };
        let start = match frontmatter::split(&text) {
            Split::Present(b) => b.body_start,
            Split::Absent { body_start } => body_start,
            Split::Unclosed { .. } => continue,
        };
        bodies += 1;
        if agree(&text[start..]) {
            read += 1;
        }
    }
    (bodies, read)
}

#[test]
fn the_fixtures_and_the_shipped_bundle_scan_the_same() {
    let (bodies, read) = compare_tree(&common::repo().join("tests/fixtures"));
    let (b2, r2) = compare_tree(&common::repo().join("okf"));
    eprintln!("fixtures: {read} of {bodies} bodies read plain; okf/: {r2} of {b2}");
    assert!(bodies > 20 && b2 > 10);
}

#[test]
fn the_corpora_scan_the_same() {
    let Some(corpora) = common::corpora() else {
        return;
    };
    let (bodies, read) = compare_tree(&corpora);
    eprintln!("corpora: {read} of {bodies} bodies read plain");
    assert!(bodies > 1000, "{bodies}");
}
