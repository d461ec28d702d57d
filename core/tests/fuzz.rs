//! Property tests: the validator never panics on any input, and every range
//! it reports lies inside the file and agrees with its line/character.

use okfit_core::bundle::{validate, Bundle, Report};
use okfit_core::config::{self, Config};
use okfit_core::diag::{Diagnostic, Tier};
use okfit_core::doc::ParseOptions;
use okfit_core::time::parse_now;
use proptest::prelude::*;

fn cfg_none() -> Config {
    config::resolve(Some(
        "[bundle]\nprofile = \"none\"\n[types.X]\nrequired = [\"title\"]\n",
    ))
    .unwrap()
}

fn cfg_default() -> Config {
    config::resolve(None).unwrap()
}

fn check(files: &[(&str, &[u8])], cfg: &Config) -> Report {
    let opts = ParseOptions {
        config: cfg,
        now: Some(parse_now("2026-09-01T00:00:00Z").unwrap()),
        keep_frontmatter: true,
        digests: true,
        diagnostics: true,
        skip_body: false,
    };
    let bundle = Bundle::load(files.iter().copied(), &opts);
    let report = validate(&bundle, cfg, vec![]);
    // Resolving every link and building the graph must not panic either.
    let _ = bundle.graph();
    for (path, bytes) in files {
        let Ok(text) = std::str::from_utf8(bytes) else {
            continue;
        };
        for d in report.diagnostics.iter().filter(|d| d.file == *path) {
            check_range(text, d);
        }
    }
    check_report(&report);
    report
}

/// The UTF-16 (line, character) of each UTF-16 offset that starts a char,
/// with `\n`, `\r\n` and a lone `\r` ending lines.
fn position_of(text: &str, offset: u32) -> Option<(u32, u32)> {
    let (mut units, mut line, mut ch) = (0u32, 0u32, 0u32);
    let mut chars = text.chars().peekable();
    loop {
        if units == offset {
            return Some((line, ch));
        }
        let c = chars.next()?;
        units += c.len_utf16() as u32;
        match c {
            '\n' => {
                line += 1;
                ch = 0;
            }
            '\r' if chars.peek() == Some(&'\n') => {
                // The `\n` ends the line.
                ch += 1;
            }
            '\r' => {
                line += 1;
                ch = 0;
            }
            _ => ch += c.len_utf16() as u32,
        }
        if units > offset {
            return None;
        }
    }
}

fn check_range(text: &str, d: &Diagnostic) {
    let Some(r) = d.range else {
        return;
    };
    let total: u32 = text.encode_utf16().count() as u32;
    assert!(
        r.offset as u64 + r.length as u64 <= total as u64,
        "range {r:?} of {} past the end ({total} units) in {text:?}",
        d.code
    );
    let pos = position_of(text, r.offset);
    assert_eq!(
        pos,
        Some((r.line, r.character)),
        "range {r:?} of {} disagrees with its offset in {text:?}",
        d.code
    );
    // The end must also fall on a character boundary.
    let end = r.offset + r.length;
    let mut units = 0u32;
    let on_boundary = end == total
        || text.chars().any(|c| {
            units += c.len_utf16() as u32;
            units == end
        })
        || end == 0;
    assert!(
        on_boundary,
        "range {r:?} of {} ends inside a character",
        d.code
    );
}

fn check_report(r: &Report) {
    // Sorted: file, range-less first, offset, code.
    for w in r.diagnostics.windows(2) {
        let key = |d: &Diagnostic| {
            (
                d.file.clone(),
                d.range.is_some(),
                d.range.map_or(0, |x| x.offset),
            )
        };
        let (a, b) = (key(&w[0]), key(&w[1]));
        assert!(
            a < b || (a == b && w[0].code <= w[1].code),
            "unsorted: {:?} before {:?}",
            w[0],
            w[1]
        );
    }
    let conformance = r
        .diagnostics
        .iter()
        .filter(|d| d.source == Tier::Conformance)
        .count();
    assert_eq!(conformance, r.summary.conformance_errors);
    let want = if conformance > 0 {
        2
    } else if r.summary.lint_errors + r.summary.profile_errors > 0 {
        1
    } else {
        0
    };
    assert_eq!(r.exit_code(), want);
}

/// Pieces of Markdown, YAML and awkward characters, glued at random.
fn fragment() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec![
        "---\n",
        "---\r\n",
        "---",
        "\n",
        "\r\n",
        "\r",
        " ",
        "\t",
        "type: X\n",
        "type: ",
        "title: ",
        "tags: [a, b]\n",
        "tags: x\n",
        "status: draft\n",
        "status: wip\n",
        "stale_after: 2020-01-01\n",
        "stale_after: 2020-01-01T00:00:00Z\n",
        "stale_after: 2020-01-01T00:00:00\n",
        "resource: ",
        "sources:\n  - resource: ",
        "    id: s1\n",
        "generated:\n  by: ",
        "  body_sha256: ",
        "  at: ",
        "verified:\n  - by: human:a\n    at: 2020-01-01T00:00:00Z\n",
        "human:x",
        "team:x",
        "okfit/claude",
        "&a ",
        "*a",
        "{",
        "}",
        "[",
        "]",
        ":",
        "- ",
        "* ",
        "1. ",
        "# ",
        "## ",
        "## 2026-01-01\n",
        "## not-a-date\n",
        "[x](a.md)",
        "[x](sub/b.md#frag)",
        "[x](#frag)",
        "[x](../out.md)",
        "[x](/abs.md)",
        "[x](dir/)",
        "[x](https://example.com)",
        "![i](img.png)",
        "[^a]",
        "[^a]: def\n",
        "[^s1]",
        "`",
        "```\n",
        "    ",
        "> ",
        "| a | b |\n|---|---|\n",
        "<div>",
        "\\",
        "\"",
        "'",
        "%20",
        "%ff",
        "é",
        "😀",
        "𝄞",
        "\u{feff}",
        "\u{0}",
        "\u{2028}",
        "a",
        "Z",
        "0",
        "0.2",
        "yes",
        "~",
        "null",
        "!!str ",
        "? ",
        "<<: ",
        "Surface\n",
        "Publication\n",
        "Attested Computation\n",
        "Project\n",
    ])
}

fn glued(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(fragment(), 0..max).prop_map(|v| v.concat())
}

const HEADER: &str = "---\ntype: X\n---\n";

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_as_a_concept(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&[("a.md", &bytes)], &cfg_none());
        check(&[("sub/a.md", &bytes)], &cfg_default());
    }

    #[test]
    fn arbitrary_bytes_as_index_md(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&[("index.md", &bytes)], &cfg_none());
        check(&[("sub/index.md", &bytes), ("sub/a.md", HEADER.as_bytes())], &cfg_none());
    }

    #[test]
    fn arbitrary_bytes_as_log_md(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&[("log.md", &bytes)], &cfg_none());
    }

    #[test]
    fn arbitrary_text_files(text in any::<String>()) {
        let b = text.as_bytes();
        check(&[("a.md", b), ("index.md", b), ("log.md", b)], &cfg_none());
    }

    #[test]
    fn arbitrary_body_after_valid_header(body in any::<String>()) {
        let text = format!("{HEADER}{body}");
        check(&[("a.md", text.as_bytes()), ("b.md", HEADER.as_bytes())], &cfg_none());
    }

    #[test]
    fn structured_body_after_valid_header(body in glued(40)) {
        let text = format!("{HEADER}{body}");
        check(
            &[("a.md", text.as_bytes()), ("sub/b.md", HEADER.as_bytes()), ("index.md", b"# C\n")],
            &cfg_none(),
        );
    }

    #[test]
    fn structured_frontmatter(yaml in glued(30), body in glued(15)) {
        let text = format!("---\ntype: X\n{yaml}\n---\n{body}");
        check(&[("a.md", text.as_bytes()), ("index.md", b"# C\n")], &cfg_none());
        check(&[("a.md", text.as_bytes()), ("index.md", b"# C\n")], &cfg_default());
    }

    #[test]
    fn structured_whole_files(a in glued(50), idx in glued(30), log in glued(30)) {
        let files: [(&str, &[u8]); 5] = [
            ("a.md", a.as_bytes()),
            ("sub/b.md", a.as_bytes()),
            ("index.md", idx.as_bytes()),
            ("sub/index.md", idx.as_bytes()),
            ("log.md", log.as_bytes()),
        ];
        check(&files, &cfg_none());
        check(&files, &cfg_default());
    }

    #[test]
    fn resolve_never_panics(from in "[a-z/]{0,12}\\.md", raw in any::<String>()) {
        let opts_cfg = cfg_none();
        let opts = ParseOptions { config: &opts_cfg, now: None, keep_frontmatter: false, digests: false, diagnostics: true, skip_body: false };
        let files: [(&str, &[u8]); 3] = [("a.md", HEADER.as_bytes()), ("sub/b.md", HEADER.as_bytes()), ("img/x.png", b"")];
        let b = Bundle::load(files.iter().copied(), &opts);
        for field in [None, Some("resource"), Some("sources.resource")] {
            let _ = b.resolve(&from, &raw, field);
        }
    }

    #[test]
    fn body_digest_ignores_line_ending_style(body in glued(30)) {
        let lf = format!("{HEADER}{}", body.replace("\r\n", "\n").replace('\r', "\n"));
        let crlf = lf.replace('\n', "\r\n");
        prop_assert_eq!(
            okfit_core::doc::file_body_digest(&lf),
            okfit_core::doc::file_body_digest(&crlf)
        );
        let trailing = format!("{lf}\n\n  \n");
        prop_assert_eq!(
            okfit_core::doc::file_body_digest(&lf),
            okfit_core::doc::file_body_digest(&trailing)
        );
    }
}
