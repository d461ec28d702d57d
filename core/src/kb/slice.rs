//! `get` slicing and rendering (reference langonrock §4.3).
//!
//! Offsets, lengths and match positions are UTF-16 code units within the
//! addressed text (a section, or the whole body), because the clients are
//! JavaScript models. Boundaries never split a character: a start inside a
//! surrogate pair moves back one unit, an end inside one moves forward.

use std::fmt::Write as _;

use super::text::utf16_len;

/// Default `limit` per concept for the MCP `get` tool.
pub const GET_LIMIT: usize = 15000;
/// Window size with `find` and no `limit`.
pub const FIND_WINDOW: usize = 2000;
/// How many match offsets a slice lists.
pub const MATCH_CAP: usize = 20;

/// What part of a text to return.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SliceOptions {
    /// First UTF-16 unit to return (ignored with `find`).
    pub offset: Option<u64>,
    /// Maximum units to return; with `find`, the window size
    /// ([`FIND_WINDOW`] when `None`). `None` without `find` means no cap.
    pub limit: Option<u64>,
    /// Literal phrase to locate (case-insensitive when safe). An empty
    /// phrase counts as absent.
    pub find: Option<String>,
}

/// A window of a text, with match information when `find` was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Slice {
    /// The text of the window.
    pub text: String,
    /// Start of the window, in UTF-16 units.
    pub start: usize,
    /// End of the window (exclusive), in UTF-16 units.
    pub end: usize,
    /// UTF-16 length of the whole addressed text.
    pub total: usize,
    /// With `find`: the first [`MATCH_CAP`] match offsets.
    pub matches: Option<Vec<usize>>,
    /// With `find`: the number of (non-overlapping) matches.
    pub match_count: Option<usize>,
}

fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

/// Byte offset and adjusted unit for UTF-16 `unit` in `s` (clamped). A unit
/// inside a surrogate pair moves back to the character start, or forward
/// past it when `up`.
fn boundary(s: &str, unit: usize, up: bool) -> (usize, usize) {
    let mut units = 0usize;
    for (byte, c) in s.char_indices() {
        if units >= unit {
            return (byte, units);
        }
        let next = units + c.len_utf16();
        if next > unit {
            return if up {
                (byte + c.len_utf8(), next)
            } else {
                (byte, units)
            };
        }
        units = next;
    }
    (s.len(), units)
}

fn window(
    text: &str,
    total: usize,
    start: usize,
    end: usize,
    matches: Option<Vec<usize>>,
    match_count: Option<usize>,
) -> Slice {
    let (sb, start) = boundary(text, start, false);
    let (eb, end) = boundary(text, end.max(start), true);
    Slice {
        text: text[sb..eb].to_owned(),
        start,
        end,
        total,
        matches,
        match_count,
    }
}

/// Slices `text` per `opts` (reference langonrock §4.3).
///
/// Without `find`: `start = clamp(offset, 0, total)`, `end = min(total,
/// start + limit)` or `total`. With `find`: a window of `limit` (default
/// [`FIND_WINDOW`]) units centred on the first match, plus every match
/// offset (first [`MATCH_CAP`]) and the count; an empty slice at 0 when
/// nothing matches.
pub fn slice(text: &str, opts: &SliceOptions) -> Slice {
    let total = utf16_len(text);
    let Some(needle) = opts.find.as_deref().filter(|f| !f.is_empty()) else {
        let start = to_usize(opts.offset.unwrap_or(0)).min(total);
        let end = match opts.limit {
            Some(l) => total.min(start.saturating_add(to_usize(l))),
            None => total,
        };
        return window(text, total, start, end, None, None);
    };

    // Case-fold only when lowercasing keeps both UTF-16 lengths, as in JS.
    let folded_text = text.to_lowercase();
    let folded_needle = needle.to_lowercase();
    let fold = utf16_len(&folded_text) == total && utf16_len(&folded_needle) == utf16_len(needle);
    let (hay, pat) = if fold {
        (folded_text.as_str(), folded_needle.as_str())
    } else {
        (text, needle)
    };

    let finder = memchr::memmem::Finder::new(pat.as_bytes());
    let mut count = 0usize;
    let mut matches = Vec::new();
    let (mut at, mut units_at, mut units) = (0usize, 0usize, 0usize);
    while let Some(i) = finder.find(&hay.as_bytes()[at..]) {
        let byte = at + i;
        count += 1;
        if matches.len() < MATCH_CAP {
            units += utf16_len(&hay[units_at..byte]);
            units_at = byte;
            matches.push(units);
        }
        at = byte + pat.len();
    }
    let Some(&first) = matches.first() else {
        return Slice {
            text: String::new(),
            start: 0,
            end: 0,
            total,
            matches: Some(Vec::new()),
            match_count: Some(0),
        };
    };

    let limit = opts.limit.map_or(FIND_WINDOW, to_usize);
    let half = limit.saturating_sub(utf16_len(pat)) / 2;
    let end = total.min(first.saturating_sub(half).saturating_add(limit));
    let start = end.saturating_sub(limit);
    window(text, total, start, end, Some(matches), Some(count))
}

/// The frame line of one slice.
fn frame(out: &mut String, id: &str, s: &Slice) {
    let partial = !(s.start == 0 && s.end == s.total);
    let count = s.match_count.or_else(|| s.matches.as_ref().map(Vec::len));
    let _ = write!(out, "@@ {id}");
    if count == Some(0) {
        let _ = write!(out, " no match in {} chars", s.total);
        return;
    }
    if partial {
        let _ = write!(out, " [{}..{} of {}]", s.start, s.end, s.total);
    }
    if let Some(n) = count {
        let listed: &[usize] = s.matches.as_deref().unwrap_or(&[]);
        if listed.len() < n {
            let _ = write!(out, " first {} of {n}", listed.len());
        } else {
            let _ = write!(out, " {n}");
        }
        out.push_str(if n == 1 { " match at" } else { " matches at" });
        for o in listed {
            let _ = write!(out, " {o}");
        }
    }
}

/// Renders `get` output: per found `(id, slice)` in order, a frame line
/// (`@@ id`, `@@ id [s..e of T]`, match counts and offsets, or `no match in
/// T chars`) followed by the text when non-empty; then `@@ missing` with the
/// missing ids space-separated. Chunks are joined with `\n`, with no
/// trailing newline.
pub fn render(found: &[(&str, &Slice)], missing: &[&str]) -> String {
    let mut out = String::new();
    for (i, (id, s)) in found.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        frame(&mut out, id, s);
        if !s.text.is_empty() && s.match_count != Some(0) {
            out.push('\n');
            out.push_str(&s.text);
        }
    }
    if !missing.is_empty() {
        if !found.is_empty() {
            out.push('\n');
        }
        out.push_str("@@ missing\n");
        out.push_str(&missing.join(" "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(offset: Option<u64>, limit: Option<u64>, find: Option<&str>) -> SliceOptions {
        SliceOptions {
            offset,
            limit,
            find: find.map(str::to_owned),
        }
    }

    fn huge() -> String {
        let mut s = "a".repeat(20005);
        s.push_str("Needle");
        s.push_str(&"b".repeat(40022 - 20005 - 6));
        assert_eq!(s.len(), 40022);
        s
    }

    fn framed(id: &str, s: &Slice) -> String {
        render(&[(id, s)], &[])
    }

    #[test]
    fn whole_and_partial() {
        let t = huge();
        let s = slice(&t, &SliceOptions::default());
        assert_eq!((s.start, s.end, s.total), (0, 40022, 40022));
        assert_eq!(s.text, t);
        assert!(framed("huge", &s).starts_with("@@ huge\naaa"));

        let s = slice(&t, &opts(None, Some(GET_LIMIT as u64), None));
        assert_eq!(s.text.len(), 15000);
        assert!(framed("huge", &s).starts_with("@@ huge [0..15000 of 40022]\naaa"));

        let s = slice(&t, &opts(Some(15000), Some(15000), None));
        assert_eq!((s.start, s.end), (15000, 30000));
        assert_eq!(&s.text, &t[15000..30000]);
        assert!(framed("huge", &s).starts_with("@@ huge [15000..30000 of 40022]\n"));

        let s = slice(&t, &opts(None, Some(25), None));
        assert_eq!(
            framed("huge", &s),
            format!("@@ huge [0..25 of 40022]\n{}", "a".repeat(25))
        );
        assert_eq!(s.matches, None);
        assert_eq!(s.match_count, None);

        // Offset beyond the end clamps to an empty tail.
        let s = slice("hello", &opts(Some(99), Some(3), None));
        assert_eq!((s.start, s.end, s.text.as_str()), (5, 5, ""));
        assert_eq!(framed("h", &s), "@@ h [5..5 of 5]");
        let s = slice("hello", &opts(Some(u64::MAX), Some(u64::MAX), None));
        assert_eq!((s.start, s.end), (5, 5));
        // Offset without limit runs to the end.
        let s = slice("hello", &opts(Some(2), None, None));
        assert_eq!((s.start, s.end, s.text.as_str()), (2, 5, "llo"));
        // Empty text is whole.
        assert_eq!(framed("e", &slice("", &SliceOptions::default())), "@@ e");
    }

    #[test]
    fn find_centres_window() {
        let t = huge();
        let s = slice(&t, &opts(Some(7), None, Some("needle")));
        // half = (2000 - 6) / 2 = 997; end = 20005 - 997 + 2000.
        assert_eq!((s.start, s.end, s.total), (19008, 21008, 40022));
        assert_eq!(s.matches, Some(vec![20005]));
        assert_eq!(s.match_count, Some(1));
        assert_eq!(&s.text, &t[19008..21008]);
        let r = framed("huge", &s);
        assert!(r.starts_with("@@ huge [19008..21008 of 40022] 1 match at 20005\naaa"));

        // A window near the start is pushed right, near the end left.
        let s = slice("xx needle yy", &opts(None, Some(4), Some("needle")));
        assert_eq!((s.start, s.end), (3, 7));
        let s = slice("abcdefghij", &opts(None, Some(4), Some("j")));
        assert_eq!((s.start, s.end, s.text.as_str()), (6, 10, "ghij"));
        // Whole text in the window: no range in the frame.
        let s = slice("one two one", &opts(None, None, Some("ONE")));
        assert_eq!(framed("w", &s), "@@ w 2 matches at 0 8\none two one");
    }

    #[test]
    fn find_caps_and_counts() {
        let t = "ab ".repeat(30);
        let s = slice(&t, &opts(None, None, Some("AB")));
        assert_eq!(s.match_count, Some(30));
        let expected: Vec<usize> = (0..20).map(|i| i * 3).collect();
        assert_eq!(s.matches.as_deref(), Some(&expected[..]));
        let offsets: Vec<String> = expected.iter().map(|o| o.to_string()).collect();
        assert_eq!(
            framed("x", &s),
            format!("@@ x first 20 of 30 matches at {}\n{t}", offsets.join(" "))
        );
        // Non-overlapping.
        let s = slice("aaaaa", &opts(None, None, Some("aa")));
        assert_eq!(s.matches, Some(vec![0, 2]));
    }

    #[test]
    fn find_case_rules() {
        let s = slice("Hello WORLD", &opts(None, None, Some("world")));
        assert_eq!(s.matches, Some(vec![6]));
        let s = slice("Ωmega ωMEGA", &opts(None, None, Some("ΩMEGA")));
        assert_eq!(s.matches, Some(vec![0, 6]));
        // U+0130 lowercases to two units: the search falls back to exact case.
        let s = slice("İ abc ABC", &opts(None, None, Some("abc")));
        assert_eq!((s.matches, s.match_count), (Some(vec![2]), Some(1)));
        let s = slice("İ abc ABC", &opts(None, None, Some("ABC")));
        assert_eq!(s.matches, Some(vec![6]));
        // Offsets after astral characters count two units each.
        let s = slice("😀😀 key", &opts(None, None, Some("KEY")));
        assert_eq!(s.matches, Some(vec![5]));
    }

    #[test]
    fn find_no_match() {
        let s = slice("hello", &opts(Some(2), Some(3), Some("zzz")));
        assert_eq!(
            s,
            Slice {
                text: String::new(),
                start: 0,
                end: 0,
                total: 5,
                matches: Some(vec![]),
                match_count: Some(0),
            }
        );
        assert_eq!(framed("h", &s), "@@ h no match in 5 chars");
        // An empty phrase is no find at all.
        let s = slice("hello", &opts(Some(2), Some(2), Some("")));
        assert_eq!((s.text.as_str(), s.matches), ("ll", None));
    }

    #[test]
    fn surrogate_boundaries() {
        let t = "😀".repeat(10);
        assert_eq!(utf16_len(&t), 20);
        let s = slice(&t, &opts(Some(1), Some(4), None));
        assert_eq!((s.start, s.end, s.text.as_str()), (0, 6, "😀😀😀"));
        let s = slice(&t, &opts(Some(2), Some(3), None));
        assert_eq!((s.start, s.end, s.text.as_str()), (2, 6, "😀😀"));
        let s = slice(&t, &opts(Some(3), Some(1), None));
        assert_eq!((s.start, s.end, s.text.as_str()), (2, 4, "😀"));
        let s = slice(&t, &opts(Some(19), None, None));
        assert_eq!((s.start, s.end, s.text.as_str()), (18, 20, "😀"));
        for off in 0..21u64 {
            for lim in 0..5u64 {
                let s = slice(&t, &opts(Some(off), Some(lim), None));
                assert_eq!(utf16_len(&s.text), s.end - s.start);
                assert!(s.start.is_multiple_of(2) && s.end.is_multiple_of(2));
            }
        }
        // A find window whose start lands inside a pair.
        let t = "😀😀😀x😀😀😀";
        let s = slice(t, &opts(None, Some(4), Some("x")));
        assert_eq!(s.matches, Some(vec![6]));
        assert_eq!((s.start, s.end, s.text.as_str()), (4, 9, "😀x😀"));
        assert_eq!(framed("e", &s), "@@ e [4..9 of 13] 1 match at 6\n😀x😀");
    }

    #[test]
    fn render_many() {
        let whole = slice("hello", &SliceOptions::default());
        let part = slice("hello", &opts(None, Some(2), None));
        let none = slice("hello", &opts(None, None, Some("q")));
        let empty = slice("", &SliceOptions::default());
        assert_eq!(
            render(
                &[("a", &whole), ("b", &part), ("c", &none), ("d", &empty)],
                &["x", "y"]
            ),
            "@@ a\nhello\n@@ b [0..2 of 5]\nhe\n@@ c no match in 5 chars\n@@ d\n@@ missing\nx y"
        );
        assert_eq!(render(&[], &["nope"]), "@@ missing\nnope");
        assert_eq!(render(&[("a", &whole)], &[]), "@@ a\nhello");
        assert_eq!(render(&[], &[]), "");
    }
}
