//! Frontmatter YAML: a fast reader for the subset nearly every frontmatter
//! is written in, and the full parser (serde-saphyr) for everything else.
//!
//! The fast reader either returns exactly the value the full parser would,
//! or declines (`None`) and the full parser decides. It accepts block
//! mappings and sequences (including `- key: value` items), single-line
//! flow collections of scalars, quoted scalars with the common escapes,
//! and plain scalars whose type is unambiguous: words that are not a YAML
//! keyword, decimal integers, simple decimals and ISO dates. Anchors,
//! aliases, tags, block scalars, multi-line scalars, tabs, odd keys,
//! duplicate keys and anything else unusual are declined, so errors and
//! their messages always come from the full parser. The differential tests
//! in `core/tests/yaml_fast.rs` and the `yaml_fast` fuzz target hold the
//! two to the same answers.

use crate::node::{Mapping, Node};
use serde_json::{Number, Value};
use std::borrow::Cow;

/// Larger frontmatter goes to the full parser, whose budgets (nodes,
/// events) then apply exactly as they would without the fast reader.
const MAX_FAST_BYTES: usize = 64 * 1024;
/// Deeper nesting goes to the full parser (its own limit is 64).
const MAX_FAST_DEPTH: usize = 24;

/// Parses frontmatter YAML: the fast reader when it can, else the full
/// parser. The value is the same either way.
pub fn parse(yaml: &str) -> Result<Value, serde_saphyr::Error> {
    match fast(yaml) {
        Some(v) => Ok(v),
        None => full(yaml),
    }
}

/// The full YAML parser with okfit's options: YAML 1.2 booleans only
/// (`yes` stays a string), non-finite floats as strings, and budgets sized
/// for frontmatter, so an alias bomb or a deeply nested block is refused
/// with a diagnostic long before it costs memory.
pub fn full(yaml: &str) -> Result<Value, serde_saphyr::Error> {
    serde_saphyr::from_str_with_options::<Value>(yaml, options())
}

fn options() -> serde_saphyr::Options {
    serde_saphyr::options! {
        strict_booleans: true,
        non_finite_float_policy: serde_saphyr::NonFiniteFloatPolicy::AsString,
        budget: serde_saphyr::budget! {
            max_events: 200_000,
            max_nodes: 100_000,
            max_aliases: 10_000,
            max_anchors: 10_000,
            max_depth: 64,
            max_documents: 2,
            max_total_scalar_bytes: 16 * 1024 * 1024,
            max_recorded_anchor_bytes: 16 * 1024 * 1024,
        },
    }
}

/// The fast reader alone: `Some` with the full parser's value, or `None`
/// when the text is outside the subset it reads.
pub fn fast(yaml: &str) -> Option<Value> {
    fast_node(yaml).map(|n| n.to_value())
}

/// [`fast`] as a [`Node`] borrowing from `yaml`: what the validator reads.
pub fn fast_node(yaml: &str) -> Option<Node<'_>> {
    if yaml.len() > MAX_FAST_BYTES || !printable(yaml) {
        return None;
    }
    let lines = significant_lines(yaml)?;
    if lines.first()?.indent != 0 {
        return None;
    }
    let mut r = Reader {
        lines,
        at: 0,
        depth: 0,
    };
    let root = r.mapping(0)?;
    (r.at == r.lines.len()).then_some(Node::Object(root))
}

/// Only characters the reader handles the same way as the full parser:
/// no tabs, no control characters (a CR only before an LF), none of the
/// characters YAML treats as breaks or marks outside ASCII.
fn printable(yaml: &str) -> bool {
    let b = yaml.as_bytes();
    // Nearly every frontmatter has no control character but LF: one pass
    // the compiler vectorises answers that, the exact walk the rest.
    let plain = !crate::text::any_byte(b, |c| ((c < 0x20) & (c != b'\n')) | (c == 0x7f));
    if !plain {
        for (i, &c) in b.iter().enumerate() {
            if c < 0x20 && c != b'\n' && !(c == b'\r' && b.get(i + 1) == Some(&b'\n')) || c == 0x7f
            {
                return false;
            }
        }
    }
    yaml.is_ascii()
        || yaml.chars().all(|c| {
            !matches!(
                c,
                '\u{80}'
                    ..='\u{9f}' | '\u{2028}' | '\u{2029}' | '\u{feff}' | '\u{fffe}' | '\u{ffff}'
            )
        })
}

#[derive(Clone, Copy)]
struct Line<'a> {
    indent: usize,
    /// The content after the indent, without a trailing CR.
    text: &'a str,
}

/// The lines that carry content (not blank, not a whole-line comment), or
/// `None` when a line is a document marker or a directive.
fn significant_lines(yaml: &str) -> Option<Vec<Line<'_>>> {
    let mut out = Vec::with_capacity(32);
    let mut start = 0;
    let ends = memchr::memchr_iter(b'\n', yaml.as_bytes()).chain(std::iter::once(yaml.len()));
    for end in ends {
        let raw = &yaml[start..end];
        start = end + 1;
        let raw = raw.strip_suffix('\r').unwrap_or(raw);
        let text = raw.trim_start_matches(' ');
        if text.is_empty() || text.starts_with('#') {
            continue;
        }
        let indent = raw.len() - text.len();
        if indent == 0
            && (text.starts_with("---") || text.starts_with("...") || text.starts_with('%'))
        {
            return None;
        }
        out.push(Line { indent, text });
    }
    Some(out)
}

struct Reader<'a> {
    lines: Vec<Line<'a>>,
    at: usize,
    depth: usize,
}

impl<'a> Reader<'a> {
    fn peek(&self) -> Option<Line<'a>> {
        self.lines.get(self.at).copied()
    }

    fn deeper(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_FAST_DEPTH).then_some(())
    }

    /// A block mapping whose keys sit at column `n`.
    fn mapping(&mut self, n: usize) -> Option<Mapping<'a>> {
        self.deeper()?;
        let mut map = Mapping::default();
        while let Some(line) = self.peek() {
            if line.indent < n {
                break;
            }
            if line.indent > n {
                return None;
            }
            let (key, rest) = split_key(line.text)?;
            self.at += 1;
            let value = self.value_of_key(n, rest)?;
            if !map.insert_new(Cow::Borrowed(key), value) {
                // A duplicate key: the full parser says so.
                return None;
            }
        }
        self.depth -= 1;
        Some(map)
    }

    /// The value after `key:` on a line at column `n`: inline, a nested
    /// block on the following lines, or null.
    fn value_of_key(&mut self, n: usize, rest: &'a str) -> Option<Node<'a>> {
        let rest = rest.trim_start_matches(' ');
        if rest.is_empty() || rest.starts_with('#') {
            return match self.peek() {
                Some(l) if l.indent > n && is_item(l.text) => self.sequence(l.indent),
                Some(l) if l.indent > n => self.mapping(l.indent).map(Node::Object),
                Some(l) if l.indent == n && is_item(l.text) => self.sequence(n),
                _ => Some(Node::Null),
            };
        }
        let v = inline(rest)?;
        // A more indented line after an inline value continues it (or is
        // an error): either way, the full parser's business.
        match self.peek() {
            Some(l) if l.indent > n => None,
            _ => Some(v),
        }
    }

    /// A block sequence whose dashes sit at column `m`.
    fn sequence(&mut self, m: usize) -> Option<Node<'a>> {
        self.deeper()?;
        let mut items = Vec::new();
        while let Some(line) = self.peek() {
            if line.indent < m {
                break;
            }
            if line.indent > m {
                return None;
            }
            if !is_item(line.text) {
                break;
            }
            let after = &line.text[1..];
            let body = after.trim_start_matches(' ');
            if body.is_empty() || body.starts_with('#') || is_item(body) {
                return None;
            }
            if split_key(body).is_some() {
                // `- key: value`: a mapping whose keys sit where this key does.
                let col = m + 1 + (after.len() - body.len());
                self.lines[self.at] = Line {
                    indent: col,
                    text: body,
                };
                items.push(Node::Object(self.mapping(col)?));
            } else {
                self.at += 1;
                let v = inline(body)?;
                if self.peek().is_some_and(|l| l.indent > m) {
                    return None;
                }
                items.push(v);
            }
        }
        self.depth -= 1;
        Some(Node::Array(items))
    }
}

fn is_item(text: &str) -> bool {
    text == "-" || text.starts_with("- ")
}

/// `key: rest` with a plain key of word characters, followed by a space
/// or the end of the line.
fn split_key(text: &str) -> Option<(&str, &str)> {
    let b = text.as_bytes();
    if !b.first()?.is_ascii_alphabetic() && b[0] != b'_' {
        return None;
    }
    let end = b
        .iter()
        .position(|&c| !(c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'.')))?;
    if b[end] != b':' || b.get(end + 1).is_some_and(|&c| c != b' ') {
        return None;
    }
    let key = &text[..end];
    (!keyword(key)).then_some((key, &text[end + 1..]))
}

/// Words that some YAML schema reads as other than a string.
fn keyword(s: &str) -> bool {
    const WORDS: [&str; 13] = [
        "true", "false", "yes", "no", "on", "off", "y", "n", "null", "none", "nan", "inf",
        "infinity",
    ];
    // Every word starts with one of these letters, in either case.
    let first = s.as_bytes().first().map(|c| c | 0x20);
    s.len() <= 8
        && matches!(first, Some(b't' | b'f' | b'y' | b'n' | b'o' | b'i'))
        && WORDS.iter().any(|w| w.eq_ignore_ascii_case(s))
}

/// Where a comment starts in a plain scalar's line: the first `#` after a
/// space.
fn comment_start(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    memchr::memchr_iter(b'#', b).find(|&i| i > 0 && b[i - 1] == b' ')
}

/// Whether a plain scalar holds a `: ` or ends with `:` (a mapping
/// indicator, not text).
fn has_value_indicator(s: &str) -> bool {
    let b = s.as_bytes();
    memchr::memchr_iter(b':', b).any(|i| b.get(i + 1).is_none_or(|&c| c == b' '))
}

/// Whatever may follow a scalar on its line: nothing, or a comment.
fn only_comment(rest: &str) -> bool {
    let t = rest.trim_start_matches(' ');
    t.is_empty() || (t.starts_with('#') && t.len() < rest.len())
}

/// An inline value in block context: a quoted scalar, a flow collection or
/// a plain scalar, with nothing but a comment after it.
fn inline(text: &str) -> Option<Node<'_>> {
    match text.as_bytes()[0] {
        b'"' => {
            let (s, rest) = double_quoted(text)?;
            only_comment(rest).then_some(Node::String(s))
        }
        b'\'' => {
            let (s, rest) = single_quoted(text)?;
            only_comment(rest).then_some(Node::String(s))
        }
        b'[' => {
            let (v, rest) = flow_sequence(text)?;
            only_comment(rest).then_some(v)
        }
        b'{' => {
            let (v, rest) = flow_mapping(text)?;
            only_comment(rest).then_some(v)
        }
        _ => {
            let s = match comment_start(text) {
                Some(i) => &text[..i],
                None => text,
            }
            .trim_end_matches(' ');
            if has_value_indicator(s) {
                return None;
            }
            plain(s)
        }
    }
}

/// The type the full parser gives a plain scalar, when unambiguous.
fn plain(s: &str) -> Option<Node<'_>> {
    let c = *s.as_bytes().first()?;
    match s {
        "true" => return Some(Node::Bool(true)),
        "false" => return Some(Node::Bool(false)),
        "null" | "~" => return Some(Node::Null),
        _ => {}
    }
    let relative = s.starts_with("./") || s.starts_with("../");
    if c.is_ascii_alphabetic() || c == b'_' || c == b'/' || c >= 0x80 || relative {
        return (!keyword(s)).then_some(Node::String(Cow::Borrowed(s)));
    }
    if c.is_ascii_digit() || c == b'-' {
        if let Some(n) = integer(s) {
            return Some(Node::Number(n));
        }
        if let Some(n) = decimal(s) {
            return Some(Node::Number(n));
        }
        if date(s) || not_a_number(s) {
            return Some(Node::String(Cow::Borrowed(s)));
        }
    }
    None
}

/// A word that starts with a digit but cannot be read as a number in any
/// notation (a digest, `3rd`, `12:30`): it has a character no number has,
/// and no `0x`/`0o`/`0b` prefix, or it is letters and digits after `0b` or
/// `0o` with a digit that radix lacks (a digest such as `0b9f…`).
fn not_a_number(s: &str) -> bool {
    let b = s.as_bytes();
    if b[0] == b'0' && matches!(b.get(1), Some(b'o' | b'b')) {
        let radix_lacks = if b[1] == b'b' { b'2' } else { b'8' };
        let rest = &b[2..];
        return rest.iter().all(u8::is_ascii_alphanumeric)
            && rest.iter().any(|c| (radix_lacks..=b'9').contains(c));
    }
    b[0].is_ascii_digit()
        && !(b[0] == b'0' && matches!(b.get(1), Some(b'x' | b'X' | b'O' | b'B')))
        && b.iter()
            .any(|c| !(c.is_ascii_digit() || matches!(c, b'.' | b'_' | b'+' | b'-' | b'e' | b'E')))
}

/// `0`, or up to 18 digits without a leading zero, optionally negative.
fn integer(s: &str) -> Option<Number> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let ok = !digits.is_empty()
        && digits.len() <= 18
        && digits.bytes().all(|c| c.is_ascii_digit())
        && (digits == "0" || !digits.starts_with('0'));
    ok.then(|| s.parse::<i64>().ok().map(Number::from))
        .flatten()
}

/// `I.F` with a plain integer part and up to 15 fraction digits.
fn decimal(s: &str) -> Option<Number> {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let (int, frac) = digits.split_once('.')?;
    let ok = !int.is_empty()
        && int.len() <= 15
        && (int == "0" || !int.starts_with('0'))
        && int.bytes().all(|c| c.is_ascii_digit())
        && !frac.is_empty()
        && frac.len() <= 15
        && frac.bytes().all(|c| c.is_ascii_digit());
    ok.then(|| s.parse::<f64>().ok().and_then(Number::from_f64))
        .flatten()
}

/// `YYYY-MM-DD`, optionally followed by a time of day in ISO form.
fn date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 10
        && b[..10].iter().enumerate().all(|(i, c)| {
            if i == 4 || i == 7 {
                *c == b'-'
            } else {
                c.is_ascii_digit()
            }
        })
        && b[10..].iter().all(|c| {
            c.is_ascii_digit() || matches!(c, b':' | b'.' | b'T' | b't' | b'Z' | b'z' | b'+' | b'-')
        })
}

/// A double-quoted scalar on one line, with the escapes `\\ \" \/ \n \t
/// \r`; returns the string and what follows the closing quote.
fn double_quoted(text: &str) -> Option<(Cow<'_, str>, &str)> {
    let mut rest = &text[1..];
    // Nearly every quoted scalar has no escape: then it is the text itself.
    let i = rest.find(['"', '\\', '\n', '\r'])?;
    if rest.as_bytes()[i] == b'"' {
        return Some((Cow::Borrowed(&rest[..i]), &rest[i + 1..]));
    }
    let mut out = String::new();
    loop {
        let i = rest.find(['"', '\\', '\n', '\r'])?;
        out.push_str(&rest[..i]);
        match rest.as_bytes()[i] {
            b'"' => return Some((Cow::Owned(out), &rest[i + 1..])),
            b'\\' => {
                out.push(match rest.as_bytes().get(i + 1)? {
                    b'\\' => '\\',
                    b'"' => '"',
                    b'/' => '/',
                    b'n' => '\n',
                    b't' => '\t',
                    b'r' => '\r',
                    _ => return None,
                });
                rest = &rest[i + 2..];
            }
            _ => return None,
        }
    }
}

/// A single-quoted scalar on one line (`''` is a quote).
fn single_quoted(text: &str) -> Option<(Cow<'_, str>, &str)> {
    let body = &text[1..];
    let i = body.find('\'')?;
    if !body[i + 1..].starts_with('\'') {
        return Some((Cow::Borrowed(&body[..i]), &body[i + 1..]));
    }
    let mut out = String::with_capacity(body.len());
    let mut rest = body;
    loop {
        let i = rest.find('\'')?;
        out.push_str(&rest[..i]);
        if rest[i + 1..].starts_with('\'') {
            out.push('\'');
            rest = &rest[i + 2..];
        } else {
            return Some((Cow::Owned(out), &rest[i + 1..]));
        }
    }
}

/// A scalar inside a flow collection: quoted, or plain up to the next `,`
/// or the closing bracket. Returns the value and the text after it.
fn flow_scalar(text: &str, close: u8) -> Option<(Node<'_>, &str)> {
    match text.as_bytes().first()? {
        b'"' => double_quoted(text).map(|(s, r)| (Node::String(s), r)),
        b'\'' => single_quoted(text).map(|(s, r)| (Node::String(s), r)),
        _ => {
            let end = memchr::memchr2(b',', close, text.as_bytes())?;
            let s = text[..end].trim_end_matches(' ');
            let odd = |c: &u8| matches!(c, b'[' | b']' | b'{' | b'}' | b'#' | b'"' | b'\'');
            if s.as_bytes().iter().any(odd) || has_value_indicator(s) {
                return None;
            }
            Some((plain(s)?, &text[end..]))
        }
    }
}

/// After an item in a flow collection: `,` and more, or the close.
/// Returns whether the collection closed, and the text after the mark.
fn flow_next(text: &str, close: u8) -> Option<(bool, &str)> {
    let t = text.trim_start_matches(' ');
    match t.as_bytes().first()? {
        b',' => {
            let rest = t[1..].trim_start_matches(' ');
            // A trailing comma is left to the full parser.
            (!rest.starts_with(close as char)).then_some((false, rest))
        }
        &c if c == close => Some((true, &t[1..])),
        _ => None,
    }
}

/// `[a, "b", 3]` on one line: scalars only.
fn flow_sequence(text: &str) -> Option<(Node<'_>, &str)> {
    let mut rest = text[1..].trim_start_matches(' ');
    let mut items = Vec::new();
    if let Some(r) = rest.strip_prefix(']') {
        return Some((Node::Array(items), r));
    }
    loop {
        let (v, r) = flow_scalar(rest, b']')?;
        items.push(v);
        let (closed, r) = flow_next(r, b']')?;
        rest = r;
        if closed {
            return Some((Node::Array(items), rest));
        }
    }
}

/// `{a: 1, b: "x"}` on one line: plain keys and scalar values only.
fn flow_mapping(text: &str) -> Option<(Node<'_>, &str)> {
    let mut rest = text[1..].trim_start_matches(' ');
    let mut map = Mapping::default();
    if let Some(r) = rest.strip_prefix('}') {
        return Some((Node::Object(map), r));
    }
    loop {
        let (key, r) = split_key(rest)?;
        let r = r.strip_prefix(' ')?.trim_start_matches(' ');
        let (v, r) = flow_scalar(r, b'}')?;
        if !map.insert_new(Cow::Borrowed(key), v) {
            return None;
        }
        let (closed, r) = flow_next(r, b'}')?;
        rest = r;
        if closed {
            return Some((Node::Object(map), rest));
        }
    }
}
