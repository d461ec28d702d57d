//! Surgical edits to a concept's YAML frontmatter: set `generated.at` and
//! `generated.body_sha256`, append an entry to `verified`. Only the bytes
//! of the values change; quoting style, line endings (LF, CRLF or CR), a
//! byte-order mark, comments and key order stay as written. YAML shapes an
//! edit cannot place safely (aliases, anchors, merge keys, flow
//! collections, block scalars) are refused with their [`Shape`], and the
//! caller skips the file.

use crate::frontmatter::{self, Split};
use crate::text::lines;

/// Why a frontmatter could not be edited.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    /// The file has no complete frontmatter block.
    NoFrontmatter,
    /// The value (or a key inside it) is an alias, or carries an anchor
    /// that an alias elsewhere may share.
    Alias,
    /// The mapping holds a `<<` merge key.
    MergeKey,
    /// A flow collection (`{…}` or a non-empty `[…]`).
    Flow,
    /// A scalar where a mapping or sequence belongs, or a block scalar
    /// (`|`, `>`) where a plain value belongs.
    Scalar,
    /// A mapping where a sequence belongs, or the reverse.
    Mapping,
}

impl Shape {
    /// The shape's name in messages and skip reasons.
    pub fn as_str(self) -> &'static str {
        match self {
            Shape::NoFrontmatter => "no-frontmatter",
            Shape::Alias => "alias",
            Shape::MergeKey => "merge-key",
            Shape::Flow => "flow",
            Shape::Scalar => "scalar",
            Shape::Mapping => "mapping",
        }
    }
}

/// What [`stamp_generated`] could not do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StampError {
    /// No `generated` key, and no agent to write a new block for.
    Missing,
    /// The frontmatter's shape cannot be edited safely.
    Unsupported(Shape),
}

/// One line of the YAML text: offsets of its start, content end and the
/// start of the next line.
#[derive(Clone, Copy, Debug)]
struct Line {
    start: usize,
    end: usize,
    next: usize,
}

struct Yaml<'a> {
    text: &'a str,
    lines: Vec<Line>,
    /// Where the YAML text ends (the closing fence's line start).
    end: usize,
    eol: &'static str,
}

fn indent_of(s: &str) -> usize {
    s.len() - s.trim_start_matches(' ').len()
}

fn is_content(s: &str) -> bool {
    let t = s.trim_start();
    !t.is_empty() && !t.starts_with('#')
}

/// The line terminator the file uses (its first one), LF when it has none.
fn eol_of(text: &str) -> &'static str {
    match text.find(['\n', '\r']) {
        Some(i) if text[i..].starts_with("\r\n") => "\r\n",
        Some(i) if text.as_bytes()[i] == b'\r' => "\r",
        _ => "\n",
    }
}

impl<'a> Yaml<'a> {
    fn of(text: &'a str) -> Result<Yaml<'a>, Shape> {
        let Split::Present(b) = frontmatter::split(text) else {
            return Err(Shape::NoFrontmatter);
        };
        let lines = lines(&text[b.yaml_start..b.yaml_end])
            .map(|(s, e, n)| Line {
                start: b.yaml_start + s,
                end: b.yaml_start + e,
                next: b.yaml_start + n,
            })
            .collect();
        Ok(Yaml {
            text,
            lines,
            end: b.yaml_end,
            eol: eol_of(text),
        })
    }

    fn line(&self, i: usize) -> &'a str {
        &self.text[self.lines[i].start..self.lines[i].end]
    }

    /// The top-level key `key`: its line index and the offset where its
    /// value text starts (after `key:` and spaces).
    fn top_key(&self, key: &str) -> Option<(usize, usize)> {
        (0..self.lines.len()).find_map(|i| {
            let l = self.line(i);
            let after = key_rest(l, key)?;
            let value_at = self.lines[i].end - after.trim_start_matches([' ', '\t']).len();
            Some((i, value_at))
        })
    }

    /// The lines after `i` that belong to its value: until the next line
    /// with content at column 0 (a `- ` item at column 0 belongs to a
    /// sequence value, as YAML allows).
    fn children(&self, i: usize, allow_dash: bool) -> std::ops::Range<usize> {
        let mut j = i + 1;
        while j < self.lines.len() {
            let l = self.line(j);
            if is_content(l) && indent_of(l) == 0 && !(allow_dash && is_dash(l)) {
                break;
            }
            j += 1;
        }
        i + 1..j
    }

    /// The last line in `range` with content, if any.
    fn last_content(&self, range: std::ops::Range<usize>) -> Option<usize> {
        range.rev().find(|&j| is_content(self.line(j)))
    }
}

fn is_dash(l: &str) -> bool {
    let t = l.trim_start_matches(' ');
    t == "-" || t.starts_with("- ")
}

/// For a line `key: rest` (the key plain or quoted, at column 0), `rest`.
fn key_rest<'l>(line: &'l str, key: &str) -> Option<&'l str> {
    for q in ["", "\"", "'"] {
        if let Some(r) = line
            .strip_prefix(q)
            .and_then(|l| l.strip_prefix(key))
            .and_then(|l| l.strip_prefix(q))
            .and_then(|l| l.strip_prefix(':'))
        {
            if r.is_empty() || r.starts_with([' ', '\t']) {
                return Some(r);
            }
        }
    }
    None
}

/// The value text of a line from `at` (content end excluded), without a
/// trailing comment. `""` when only a comment or nothing follows.
fn value_text(line_rest: &str) -> &str {
    let t = line_rest.trim_start_matches([' ', '\t']);
    if t.starts_with('#') {
        return "";
    }
    match t.find(" #").or_else(|| t.find("\t#")) {
        Some(i) if !t.starts_with(['"', '\'']) => t[..i].trim_end(),
        _ => t.trim_end(),
    }
}

/// Classifies a value that should open a block collection.
fn block_opener(v: &str) -> Result<(), Shape> {
    match v.chars().next() {
        None => Ok(()),
        Some('&') | Some('*') => Err(Shape::Alias),
        Some('{') => Err(Shape::Flow),
        Some('[') => Err(Shape::Flow),
        Some('!') => Err(Shape::Scalar),
        _ => Err(Shape::Scalar),
    }
}

/// A scalar's byte span inside `text` for the value starting at `at` on a
/// line ending at `end`, and its quote character (`None`: plain).
fn scalar_span(text: &str, at: usize, end: usize) -> Result<(usize, usize, Option<char>), Shape> {
    let v = &text[at..end];
    match v.chars().next() {
        Some(q @ ('"' | '\'')) => {
            let bytes = v.as_bytes();
            let mut i = 1;
            while i < bytes.len() {
                let c = bytes[i];
                if q == '"' && c == b'\\' {
                    i += 2;
                    continue;
                }
                if c == q as u8 {
                    if q == '\'' && bytes.get(i + 1) == Some(&b'\'') {
                        i += 2;
                        continue;
                    }
                    return Ok((at + 1, at + i, Some(q)));
                }
                i += 1;
            }
            Err(Shape::Scalar) // a quoted scalar continued on the next line
        }
        Some('&' | '*') => Err(Shape::Alias),
        Some('|' | '>' | '{' | '[' | '!') | None => Err(Shape::Scalar),
        Some(_) => {
            let plain = value_text(v);
            if plain.is_empty() {
                return Err(Shape::Scalar);
            }
            Ok((at, at + plain.len(), None))
        }
    }
}

/// Sets `generated.at` and `generated.body_sha256` in `text`. When the
/// file has no `generated` key and `agent` is given, a whole block
/// `{by: agent, at, body_sha256}` is added at the end of the frontmatter.
/// Values are written plain (both are plain-safe) unless the existing
/// value was quoted, whose quote is kept.
pub fn stamp_generated(
    text: &str,
    at: &str,
    digest: &str,
    agent: Option<&str>,
) -> Result<String, StampError> {
    let y = Yaml::of(text).map_err(StampError::Unsupported)?;
    let Some((gi, value_at)) = y.top_key("generated") else {
        let Some(agent) = agent else {
            return Err(StampError::Missing);
        };
        let e = y.eol;
        let block = format!("generated:{e}  by: {agent}{e}  at: {at}{e}  body_sha256: {digest}{e}");
        return Ok(splice(text, &[(y.end, y.end, block)]));
    };
    let opener = value_text(&text[value_at..y.lines[gi].end]);
    block_opener(opener).map_err(StampError::Unsupported)?;
    let kids = y.children(gi, false);
    let Some(first) = kids.clone().find(|&j| is_content(y.line(j))) else {
        return Err(StampError::Unsupported(Shape::Scalar)); // `generated:` is null
    };
    let indent = indent_of(y.line(first));
    if indent == 0 {
        return Err(StampError::Unsupported(Shape::Scalar));
    }
    if is_dash(y.line(first)) {
        return Err(StampError::Unsupported(Shape::Mapping));
    }
    let mut edits = vec![];
    let mut found = [false, false];
    for j in kids.clone() {
        let l = y.line(j);
        if !is_content(l) || indent_of(l) != indent {
            continue;
        }
        let body = &l[indent..];
        if body.starts_with("<<") {
            return Err(StampError::Unsupported(Shape::MergeKey));
        }
        for (k, (key, new)) in [("at", at), ("body_sha256", digest)].iter().enumerate() {
            if let Some(rest) = key_rest(body, key) {
                let start = y.lines[j].end - rest.trim_start_matches([' ', '\t']).len();
                let (s, e, _) =
                    scalar_span(text, start, y.lines[j].end).map_err(StampError::Unsupported)?;
                found[k] = true;
                if &text[s..e] != *new {
                    edits.push((s, e, new.to_string()));
                }
            }
        }
    }
    let mut inserted = String::new();
    let pad = " ".repeat(indent);
    if !found[0] {
        inserted.push_str(&format!("{pad}at: {at}{}", y.eol));
    }
    if !found[1] {
        inserted.push_str(&format!("{pad}body_sha256: {digest}{}", y.eol));
    }
    if !inserted.is_empty() {
        let last = y.last_content(kids).unwrap_or(first);
        let pos = y.lines[last].next;
        let lead = if pos == y.lines[last].end {
            y.eol // the last line had no terminator
        } else {
            ""
        };
        edits.push((pos, pos, format!("{lead}{inserted}")));
    }
    Ok(splice(text, &edits))
}

/// Appends `{by, at}` to the top-level `verified` sequence (created when
/// absent, or when it is null or `[]`).
pub fn append_verified(text: &str, by: &str, at: &str) -> Result<String, Shape> {
    let y = Yaml::of(text)?;
    let e = y.eol;
    let Some((vi, value_at)) = y.top_key("verified") else {
        let block = format!("verified:{e}  - by: {by}{e}    at: {at}{e}");
        return Ok(splice(text, &[(y.end, y.end, block)]));
    };
    let line_end = y.lines[vi].end;
    let opener = value_text(&text[value_at..line_end]);
    let kids = y.children(vi, true);
    let first = kids.clone().find(|&j| is_content(y.line(j)));
    if opener == "[]" || (opener.is_empty() && first.is_none()) {
        let mut edits = vec![];
        if opener == "[]" {
            let colon = text[..value_at].trim_end_matches([' ', '\t']).len();
            edits.push((colon, value_at + 2, String::new()));
        }
        let pos = y.lines[vi].next;
        edits.push((pos, pos, format!("  - by: {by}{e}    at: {at}{e}")));
        return Ok(splice(text, &edits));
    }
    block_opener(opener)?;
    let Some(first) = first else {
        return Err(Shape::Scalar);
    };
    let l = y.line(first);
    if !is_dash(l) {
        return Err(Shape::Mapping);
    }
    let dash = indent_of(l);
    // Where an item's keys start: after "- " and any further spaces.
    let key_col = dash + 1 + (l[dash + 1..].len() - l[dash + 1..].trim_start_matches(' ').len());
    let key_col = key_col.max(dash + 2);
    for j in kids.clone() {
        let t = y.line(j).trim_start_matches([' ', '-']);
        if t.starts_with("<<") {
            return Err(Shape::MergeKey);
        }
        if t.starts_with(['&', '*']) {
            return Err(Shape::Alias);
        }
    }
    let item = format!(
        "{}-{}by: {by}{e}{}at: {at}{e}",
        " ".repeat(dash),
        " ".repeat(key_col - dash - 1),
        " ".repeat(key_col)
    );
    let last = y.last_content(kids).unwrap_or(first);
    let pos = y.lines[last].next;
    let lead = if pos == y.lines[last].end { e } else { "" };
    Ok(splice(text, &[(pos, pos, format!("{lead}{item}"))]))
}

/// Applies non-overlapping edits `(start, end, replacement)`.
fn splice(text: &str, edits: &[(usize, usize, String)]) -> String {
    let mut sorted: Vec<&(usize, usize, String)> = edits.iter().collect();
    sorted.sort_by_key(|e| (e.0, e.1));
    let mut out = String::with_capacity(text.len() + 128);
    let mut pos = 0;
    for (s, e, r) in sorted {
        out.push_str(&text[pos..*s]);
        out.push_str(r);
        pos = *e;
    }
    out.push_str(&text[pos..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doc::frontmatter_of;

    const AT: &str = "2026-12-01T10:00:00Z";
    const D: &str = "ab12";

    #[test]
    fn replaces_values_keeping_quotes_and_comments() {
        let t = "---\ntype: A\ngenerated:\n  by: x/1  # who\n  at: \"2020-01-01T00:00:00Z\" # old\n  body_sha256: 'ff'\n---\nbody\n";
        let out = stamp_generated(t, AT, D, None).unwrap();
        assert_eq!(
            out,
            "---\ntype: A\ngenerated:\n  by: x/1  # who\n  at: \"2026-12-01T10:00:00Z\" # old\n  body_sha256: 'ab12'\n---\nbody\n"
        );
    }

    #[test]
    fn inserts_missing_keys_in_one_edit_with_crlf_and_bom() {
        let t = "\u{feff}---\r\ntype: A\r\ngenerated:\r\n    by: x/1\r\n\r\n# trailing comment\r\ntitle: T\r\n---\r\nbody";
        let out = stamp_generated(t, AT, D, None).unwrap();
        assert_eq!(
            out,
            "\u{feff}---\r\ntype: A\r\ngenerated:\r\n    by: x/1\r\n    at: 2026-12-01T10:00:00Z\r\n    body_sha256: ab12\r\n\r\n# trailing comment\r\ntitle: T\r\n---\r\nbody"
        );
        let fm = frontmatter_of(&out).unwrap();
        assert_eq!(fm["generated"]["body_sha256"], "ab12");
    }

    #[test]
    fn missing_block_needs_an_agent() {
        let t = "---\ntype: A\n---\n";
        assert_eq!(stamp_generated(t, AT, D, None), Err(StampError::Missing));
        let out = stamp_generated(t, AT, D, Some("okfit/claude-code")).unwrap();
        let fm = frontmatter_of(&out).unwrap();
        assert_eq!(fm["generated"]["by"], "okfit/claude-code");
        assert_eq!(fm["generated"]["at"], AT);
    }

    #[test]
    fn refuses_shapes_it_cannot_edit() {
        let cases = [
            (
                "---\ngenerated: {by: x/1, at: 2020-01-01}\n---\n",
                Shape::Flow,
            ),
            ("---\ngenerated: *g\n---\n", Shape::Alias),
            ("---\ngenerated: &g\n  by: x/1\n---\n", Shape::Alias),
            (
                "---\ngenerated:\n  <<: *base\n  at: x\n---\n",
                Shape::MergeKey,
            ),
            ("---\ngenerated: yesterday\n---\n", Shape::Scalar),
            ("---\ngenerated:\n  at: |\n    x\n---\n", Shape::Scalar),
            ("# no frontmatter\n", Shape::NoFrontmatter),
        ];
        for (t, shape) in cases {
            assert_eq!(
                stamp_generated(t, AT, D, None),
                Err(StampError::Unsupported(shape)),
                "{t}"
            );
        }
    }

    #[test]
    fn unchanged_values_give_the_same_text() {
        let t = "---\ngenerated:\n  at: 2026-12-01T10:00:00Z\n  body_sha256: ab12\n---\n";
        assert_eq!(stamp_generated(t, AT, D, None).unwrap(), t);
    }

    #[test]
    fn appends_verified_entries() {
        let t =
            "---\ntype: A\nverified:\n- by: human:a\n  at: 2020-01-01T00:00:00Z\ntitle: T\n---\n";
        let out = append_verified(t, "human:b", AT).unwrap();
        assert_eq!(
            out,
            "---\ntype: A\nverified:\n- by: human:a\n  at: 2020-01-01T00:00:00Z\n- by: human:b\n  at: 2026-12-01T10:00:00Z\ntitle: T\n---\n"
        );
        let t = "---\nverified:\n  -   by: human:a\n      at: 2020-01-01T00:00:00Z\n---\n";
        let out = append_verified(t, "human:b", AT).unwrap();
        let fm = frontmatter_of(&out).unwrap();
        assert_eq!(fm["verified"][1]["by"], "human:b");
        for t in [
            "---\ntype: A\n---\n",
            "---\nverified: []\n---\n",
            "---\nverified:\ntype: A\n---\n",
        ] {
            let out = append_verified(t, "human:b", AT).unwrap();
            let fm = frontmatter_of(&out).unwrap();
            assert_eq!(fm["verified"][0]["by"], "human:b", "{out}");
            assert_eq!(fm["verified"].as_array().unwrap().len(), 1, "{out}");
        }
        assert_eq!(
            append_verified("---\nverified: human:a\n---\n", "human:b", AT),
            Err(Shape::Scalar)
        );
        assert_eq!(
            append_verified("---\nverified: [{by: human:a}]\n---\n", "human:b", AT),
            Err(Shape::Flow)
        );
        assert_eq!(
            append_verified("---\nverified:\n  by: human:a\n---\n", "human:b", AT),
            Err(Shape::Mapping)
        );
    }
}
