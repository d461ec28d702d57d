//! Per-file text helpers for the knowledge read model (reference langonrock
//! §3.2, §3.5): manifest cells, kinds, statuses, one-line summaries, the
//! search title and the section table of a body.
//!
//! Everything exposed to clients counts UTF-16 code units (JavaScript string
//! semantics); internally the code works on `&str` byte offsets and converts
//! with [`utf16_len`] and [`utf16_to_byte`].

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Default summary width in UTF-16 code units (`--summary-width`).
pub const SUMMARY_WIDTH: usize = 120;

/// Whether `c` is whitespace for JavaScript's `\s` (WhiteSpace and
/// LineTerminator of ECMA-262; notably not U+0085).
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{000B}' | '\u{000C}' | '\r' | ' ' | '\u{00A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}'
                | '\u{2028}'
                | '\u{2029}'
                | '\u{202F}'
                | '\u{205F}'
                | '\u{3000}'
                | '\u{FEFF}'
    )
}

/// Length of `s` in UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// Byte offset in `s` of UTF-16 code unit `unit`, clamped to `s.len()`.
/// A unit inside a surrogate pair maps to the start of that character.
pub fn utf16_to_byte(s: &str, unit: usize) -> usize {
    let mut units = 0usize;
    for (byte, c) in s.char_indices() {
        let next = units + c.len_utf16();
        if next > unit {
            return byte;
        }
        units = next;
    }
    s.len()
}

/// Every run of JavaScript whitespace becomes one space; the result is
/// trimmed.
pub fn flatten(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for word in s.split(is_js_whitespace).filter(|w| !w.is_empty()) {
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    out
}

/// A manifest cell: [`flatten`]ed, and `-` when empty.
pub fn cell(s: &str) -> String {
    let f = flatten(s);
    if f.is_empty() {
        "-".to_owned()
    } else {
        f
    }
}

/// Slug: lowercase, runs of characters outside `[a-z0-9]` become `_`,
/// leading and trailing `_` trimmed (may be empty).
fn slug(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut gap = false;
    for c in s.to_lowercase().chars() {
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            if gap && !out.is_empty() {
                out.push('_');
            }
            gap = false;
            out.push(c);
        } else {
            gap = true;
        }
    }
    out
}

/// The `kind` of a concept: its frontmatter `type` slugged ("BigQuery
/// Table" → `bigquery_table`); `None` when missing, not a string, or the
/// slug is empty.
pub fn kind_of(type_value: Option<&Value>) -> Option<String> {
    let s = type_value?.as_str()?;
    let k = slug(s);
    (!k.is_empty()).then_some(k)
}

/// The `status` cell: a string status flattened; `-` when absent, not a
/// string, empty, `current` or `stable` (case-insensitive).
pub fn status_cell(status: Option<&Value>) -> String {
    let Some(s) = status.and_then(Value::as_str) else {
        return "-".to_owned();
    };
    let f = flatten(s);
    let lower = f.to_lowercase();
    if f.is_empty() || lower == "current" || lower == "stable" {
        "-".to_owned()
    } else {
        f
    }
}

/// Lines of `s` as `(start, end)` byte ranges, split on `\n`; `end`
/// excludes the `\n` and a `\r` right before it.
fn line_ranges(s: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut start = 0;
    for nl in memchr::memchr_iter(b'\n', s.as_bytes()) {
        out.push((start, strip_cr(s, start, nl)));
        start = nl + 1;
    }
    out.push((start, strip_cr(s, start, s.len())));
    out
}

fn strip_cr(s: &str, start: usize, end: usize) -> usize {
    if end > start && s.as_bytes()[end - 1] == b'\r' {
        end - 1
    } else {
        end
    }
}

fn is_fence(line: &str) -> bool {
    line.starts_with("```")
}

/// A closing fence: ```` ``` ```` followed by spaces or tabs only.
fn is_fence_close(line: &str) -> bool {
    line.strip_prefix("```")
        .is_some_and(|rest| rest.bytes().all(|b| b == b' ' || b == b'\t'))
}

/// The text of an ATX heading line (`^#{1,6}[ \t]+(.+?)[ \t]*$`), or
/// `None` when the line is not one. Mirrors the regex exactly: a line of
/// `#` and two or more blanks yields its last blank.
fn heading_text(line: &str) -> Option<&str> {
    let hashes = line.bytes().take_while(|&b| b == b'#').count();
    if !(1..=6).contains(&hashes) {
        return None;
    }
    let rest = &line[hashes..];
    let blanks = rest
        .bytes()
        .take_while(|&b| b == b' ' || b == b'\t')
        .count();
    if blanks == 0 {
        return None;
    }
    let text = rest[blanks..].trim_end_matches([' ', '\t']);
    if !text.is_empty() {
        Some(text)
    } else if blanks >= 2 {
        Some(&rest[blanks - 1..blanks])
    } else {
        None
    }
}

/// Whether a summary candidate line is skipped: it matches
/// `^\s*(?:#|>|<!--|!\[|\||-{3,}|={3,})`.
fn is_skipped_line(line: &str) -> bool {
    let t = line.trim_start_matches(is_js_whitespace);
    ["#", ">", "<!--", "![", "|", "---", "==="]
        .iter()
        .any(|p| t.starts_with(p))
}

/// Cuts `s` to `width` UTF-16 units (see [`summary`]), appending `…`.
fn truncate(s: String, width: usize) -> String {
    if utf16_len(&s) <= width {
        return s;
    }
    let mut cut = &s[..utf16_to_byte(&s, width)];
    if let Some(space) = cut.rfind(' ') {
        // `space` is a byte offset; the JS rule compares code units.
        if utf16_len(&cut[..space]) * 2 > width {
            cut = &cut[..space];
        }
    }
    let mut out = cut.trim_end_matches(is_js_whitespace).to_owned();
    out.push('…');
    out
}

/// The first sentence of a body, before flattening and truncation.
fn first_sentence(body: &str) -> &str {
    let lines = line_ranges(body);
    let mut i = 0;
    while i < lines.len() {
        let (s, e) = lines[i];
        let line = &body[s..e];
        if is_fence(line) {
            // An opener without a closer removes nothing; no later opener
            // can close either, so the rest is plain text.
            if let Some(close) =
                (i + 1..lines.len()).find(|&j| is_fence_close(&body[lines[j].0..lines[j].1]))
            {
                i = close + 1;
                continue;
            }
        }
        if !line.trim_matches(is_js_whitespace).is_empty() && !is_skipped_line(line) {
            let mut iter = line.char_indices().peekable();
            while let Some((at, c)) = iter.next() {
                if matches!(c, '.' | '!' | '?')
                    && iter.peek().is_none_or(|&(_, n)| is_js_whitespace(n))
                {
                    return &line[..at + 1];
                }
            }
            return line;
        }
        i += 1;
    }
    ""
}

/// The manifest summary: `description` when it is a string that is non-empty
/// after [`flatten`], else the first sentence of `body` (fenced code,
/// headings, quotes, tables, comments, images and rules skipped); flattened
/// (`-` if empty) and truncated to `width` UTF-16 units with `…`.
pub fn summary(description: Option<&Value>, body: &str, width: usize) -> String {
    if let Some(d) = description.and_then(Value::as_str) {
        let f = flatten(d);
        if !f.is_empty() {
            return truncate(f, width);
        }
    }
    let f = flatten(first_sentence(body));
    truncate(if f.is_empty() { "-".to_owned() } else { f }, width)
}

/// The text of the first ATX heading of `body`, or `None` when there is none
/// or a code fence opens before it.
pub fn first_heading(body: &str) -> Option<String> {
    for (s, e) in line_ranges(body) {
        let line = &body[s..e];
        if is_fence(line) {
            return None;
        }
        if let Some(t) = heading_text(line) {
            return Some(t.to_owned());
        }
    }
    None
}

/// A named range of a body, in UTF-16 code units within the body.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Section {
    /// Slug of the heading text (`body` for the text before the first
    /// heading), made unique with `_2`, `_3`, ….
    pub name: String,
    /// Start of the heading line (0 for `body`).
    pub start: u32,
    /// Start of the next heading, or the end of the body.
    pub end: u32,
}

/// The sections of `body` in order: the text before the first heading (as
/// `body`, unless whitespace-only), then one per heading outside code fences.
pub fn sections(body: &str) -> Vec<Section> {
    // (byte start, name) of each section.
    let mut starts: Vec<(usize, String)> = Vec::new();
    let mut used: rustc_hash::FxHashSet<String> = Default::default();
    let mut in_fence = false;
    for (s, e) in line_ranges(body) {
        let line = &body[s..e];
        if is_fence(line) {
            in_fence = !in_fence;
            continue;
        }
        if in_fence {
            continue;
        }
        let Some(text) = heading_text(line) else {
            continue;
        };
        if starts.is_empty() && !body[..s].trim_matches(is_js_whitespace).is_empty() {
            used.insert("body".to_owned());
            starts.push((0, "body".to_owned()));
        }
        let mut name = slug(text);
        if name.is_empty() {
            name = "body".to_owned();
        }
        if used.contains(&name) {
            let mut n = 2u32;
            while used.contains(&format!("{name}_{n}")) {
                n += 1;
            }
            name = format!("{name}_{n}");
        }
        used.insert(name.clone());
        starts.push((s, name));
    }
    if starts.is_empty() && !body.trim_matches(is_js_whitespace).is_empty() {
        starts.push((0, "body".to_owned()));
    }
    let to_u32 = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let mut out = Vec::with_capacity(starts.len());
    let mut unit = 0usize;
    let mut byte = 0usize;
    let mut begin = Vec::with_capacity(starts.len());
    for (s, _) in &starts {
        unit += utf16_len(&body[byte..*s]);
        byte = *s;
        begin.push(unit);
    }
    let total = unit + utf16_len(&body[byte..]);
    for (i, (_, name)) in starts.into_iter().enumerate() {
        let end = begin.get(i + 1).copied().unwrap_or(total);
        out.push(Section {
            name,
            start: to_u32(begin[i]),
            end: to_u32(end),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn names(body: &str) -> Vec<(String, u32, u32)> {
        sections(body)
            .into_iter()
            .map(|s| (s.name, s.start, s.end))
            .collect()
    }

    fn sec(name: &str, start: u32, end: u32) -> (String, u32, u32) {
        (name.to_owned(), start, end)
    }

    #[test]
    fn utf16_helpers() {
        let s = "a😀é";
        assert_eq!(utf16_len(s), 4);
        assert_eq!(utf16_to_byte(s, 0), 0);
        assert_eq!(utf16_to_byte(s, 1), 1);
        assert_eq!(utf16_to_byte(s, 2), 1); // inside the pair
        assert_eq!(utf16_to_byte(s, 3), 5);
        assert_eq!(utf16_to_byte(s, 4), 7);
        assert_eq!(utf16_to_byte(s, 99), 7);
    }

    #[test]
    fn flatten_and_cell() {
        assert_eq!(flatten("  a\tb\n\nc\u{3000}d\r\n "), "a b c d");
        assert_eq!(flatten("x\u{00A0}\u{2028}y\u{FEFF}"), "x y");
        assert_eq!(flatten("keep\u{0085}nel"), "keep\u{0085}nel");
        for (raw, shown) in [(" \t\n", "-"), ("", "-"), (" a  b ", "a b")] {
            assert_eq!(cell(raw), shown, "{raw:?}");
        }
    }

    #[test]
    fn kinds() {
        assert_eq!(
            kind_of(Some(&json!("BigQuery Table"))).as_deref(),
            Some("bigquery_table")
        );
        assert_eq!(
            kind_of(Some(&json!("--Metric--View!"))).as_deref(),
            Some("metric_view")
        );
        assert_eq!(kind_of(Some(&json!("Tëst 2"))).as_deref(), Some("t_st_2"));
        assert_eq!(kind_of(Some(&json!("!!!"))), None);
        assert_eq!(kind_of(Some(&json!(""))), None);
        assert_eq!(kind_of(Some(&json!(3))), None);
        assert_eq!(kind_of(None), None);
    }

    #[test]
    fn statuses() {
        assert_eq!(status_cell(None), "-");
        assert_eq!(status_cell(Some(&json!(true))), "-");
        assert_eq!(status_cell(Some(&json!("  "))), "-");
        assert_eq!(status_cell(Some(&json!("Current"))), "-");
        assert_eq!(status_cell(Some(&json!(" STABLE "))), "-");
        assert_eq!(status_cell(Some(&json!("deprecated"))), "deprecated");
        assert_eq!(status_cell(Some(&json!("Draft\n v2"))), "Draft v2");
    }

    #[test]
    fn summary_description_wins() {
        let d = json!("  Orders  placed\tonline. More ");
        assert_eq!(
            summary(Some(&d), "Body text.", SUMMARY_WIDTH),
            "Orders placed online. More"
        );
        let empty = json!(" \n ");
        assert_eq!(
            summary(Some(&empty), "Body text.", SUMMARY_WIDTH),
            "Body text."
        );
        assert_eq!(
            summary(Some(&json!(5)), "Body text.", SUMMARY_WIDTH),
            "Body text."
        );
        let long = json!("Registered customers, including churned.");
        assert_eq!(summary(Some(&long), "", 12), "Registered…");
    }

    #[test]
    fn summary_skips_fences_and_markup() {
        let body = "```sql\nselect 1. from x\n```  \n\n# Title\n> quote\n| a | b |\n\
                    <!-- c -->\n![img](x.png)\n---\n===\n  ## indented\nFirst. Second";
        assert_eq!(summary(None, body, SUMMARY_WIDTH), "First.");
        let crlf = "```\r\nCode here.\r\n```\r\nReal line!\r\n";
        assert_eq!(summary(None, crlf, SUMMARY_WIDTH), "Real line!");
        // A closer must be bare; "```rust" inside does not close.
        let body = "```a\nx.\n```rust\ny.\n```\nAfter it.";
        assert_eq!(summary(None, body, SUMMARY_WIDTH), "After it.");
        // An unclosed fence removes nothing.
        let body = "```\nInside still counts. Yes";
        assert_eq!(summary(None, body, SUMMARY_WIDTH), "```");
    }

    #[test]
    fn summary_sentences_and_width() {
        assert_eq!(summary(None, "First. Second", SUMMARY_WIDTH), "First.");
        assert_eq!(summary(None, "Wow! Then", SUMMARY_WIDTH), "Wow!");
        assert_eq!(summary(None, "Why?\tThen", SUMMARY_WIDTH), "Why?");
        assert_eq!(
            summary(None, "Use e.g.x here. Next", SUMMARY_WIDTH),
            "Use e.g.x here."
        );
        assert_eq!(summary(None, "No stop here", SUMMARY_WIDTH), "No stop here");
        assert_eq!(
            summary(None, "Registered customers, including churned.", 12),
            "Registered…"
        );
        // The last space at or before width/2 is not used.
        assert_eq!(summary(None, "ab cdefghijklmnop", 12), "ab cdefghijk…");
        assert_eq!(summary(None, "", SUMMARY_WIDTH), "-");
        assert_eq!(
            summary(None, "\n\n# Only heading\n> quote\n\n", SUMMARY_WIDTH),
            "-"
        );
        // Width counts UTF-16 units; a pair is never split.
        assert_eq!(summary(None, "😀😀😀", 3), "😀…");
    }

    #[test]
    fn first_heading_rules() {
        assert_eq!(
            first_heading("intro\n## Orders table  \r\nx").as_deref(),
            Some("Orders table")
        );
        assert_eq!(first_heading("```\n# not\n```\n# yes"), None);
        assert_eq!(first_heading("#nospace\n####### seven"), None);
        assert_eq!(first_heading("plain"), None);
        assert_eq!(first_heading("#\tTab").as_deref(), Some("Tab"));
    }

    #[test]
    fn sections_basic_and_duplicates() {
        let body = "Intro.\n# Schema\na\n## Schema\nb\n# Joins\n";
        assert_eq!(
            names(body),
            vec![
                sec("body", 0, 7),
                sec("schema", 7, 18),
                sec("schema_2", 18, 30),
                sec("joins", 30, 38),
            ]
        );
        // Whitespace-only preamble gives no body section.
        assert_eq!(names(" \n\n# A b\nx"), vec![sec("a_b", 3, 10)]);
        // No headings: the whole body, unless blank.
        assert_eq!(names("just text"), vec![sec("body", 0, 9)]);
        assert!(names(" \n\t").is_empty());
        assert!(names("").is_empty());
    }

    #[test]
    fn sections_reserved_body_and_empty_slug() {
        assert_eq!(
            names("# !!!\nx\n# ???\ny"),
            vec![sec("body", 0, 8), sec("body_2", 8, 15)]
        );
        assert_eq!(
            names("pre\n# Body\n"),
            vec![sec("body", 0, 4), sec("body_2", 4, 11)]
        );
        // "Foo 2" takes foo_2 first; the duplicate Foo moves on to foo_3.
        assert_eq!(
            names("# Foo 2\n# Foo\n# Foo"),
            vec![sec("foo_2", 0, 8), sec("foo", 8, 14), sec("foo_3", 14, 19)]
        );
    }

    #[test]
    fn sections_fences() {
        let body = "# A\n```md\n# hidden\n```\n# B\n";
        assert_eq!(names(body), vec![sec("a", 0, 23), sec("b", 23, 27)]);
        // Unclosed fence runs to the end.
        let body = "# A\n```\n# hidden\n# also hidden\n";
        assert_eq!(names(body), vec![sec("a", 0, 31)]);
    }

    #[test]
    fn sections_crlf_and_utf16() {
        let body = "Pré\r\n# Café  \r\nx\r\n# Next\r\n";
        assert_eq!(
            names(body),
            vec![sec("body", 0, 5), sec("caf", 5, 18), sec("next", 18, 26)]
        );
        // An astral char counts two units.
        let body = "😀\n# 😀 Emoji\n😀😀\n# End";
        let s = sections(body);
        assert_eq!(
            s[0],
            Section {
                name: "body".into(),
                start: 0,
                end: 3
            }
        );
        assert_eq!(s[1].name, "emoji");
        assert_eq!((s[1].start, s[1].end), (3, 19));
        assert_eq!((s[2].start, s[2].end), (19, 24));
        let units: Vec<u16> = body.encode_utf16().collect();
        let tail = String::from_utf16(&units[s[1].start as usize..s[1].end as usize]).unwrap();
        assert_eq!(tail, "# 😀 Emoji\n😀😀\n");
    }
}
