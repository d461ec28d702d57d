//! The scan of a plain body without the CommonMark parser.
//!
//! Most concept bodies are prose: paragraphs, ATX headings, bullet and
//! numbered lists, inline links and images, inline code, fenced code
//! blocks and footnotes. For those the parser's work (every block and
//! inline construct, an event tree) buys nothing the scan keeps, so
//! [`scan`] reads them line by line. It answers only when nothing in the
//! body depends on the rest of CommonMark: no indented code or indented
//! continuation lines, HTML, tables, block quotes, setext underlines,
//! escapes, link definitions, tabs or CR line ends, no bracket left open on
//! its line, and no heading with markup other than links and code. Anything
//! else is declined (`None`) and goes to the parser. Where it answers, its
//! answer is the parser's (checked against it on generated bodies and on
//! every real corpus).

use super::{BodyLink, BodyScan, Slugger};

/// The links, heading slugs and code spans of `body`, or `None` when it is
/// not plain.
pub(super) fn scan(body: &str) -> Option<BodyScan> {
    let b = body.as_bytes();
    // Control bytes other than `\n` and tab (CR, form feed, NUL, …) count
    // as whitespace or line ends in places the line reader does not look;
    // a tab is read inside fenced code and declined anywhere else.
    if has_control(b) {
        return None;
    }
    let mut s = Scan {
        body,
        out: BodyScan::default(),
        slugger: Slugger::default(),
        after_text: false,
        fence: None,
    };
    let mut start = 0;
    while start < b.len() {
        let end = memchr::memchr(b'\n', &b[start..]).map_or(b.len(), |i| start + i);
        s.line(start, end)?;
        start = end + 1;
    }
    if let Some(f) = s.fence {
        // An unclosed fence runs to the end of the body.
        s.out.code.push(f.start..b.len());
    }
    s.out.code.sort_by_key(|r| r.start);
    Some(s.out)
}

/// Whether `b` holds a control byte other than `\n` and tab.
fn has_control(b: &[u8]) -> bool {
    crate::text::any_byte(b, |c| (c < 0x20) & (c != b'\n') & (c != b'\t'))
}

/// An open fenced code block.
#[derive(Clone, Copy)]
struct Fence {
    ch: u8,
    len: usize,
    start: usize,
}

struct Scan<'a> {
    body: &'a str,
    out: BodyScan,
    slugger: Slugger,
    /// The line before was paragraph text (a `---` under it would make it
    /// a heading).
    after_text: bool,
    fence: Option<Fence>,
}

/// Bytes that end a run of literal text in a line.
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    let mut i = 0;
    let s = b"[]`\\<|\t";
    while i < s.len() {
        t[s[i] as usize] = true;
        i += 1;
    }
    t
};

/// Bytes a plain heading's text may not hold outside links and code.
fn heading_refuses(c: u8) -> bool {
    matches!(c, b'#' | b'*' | b'_' | b'~' | b'&' | b'!')
}

fn run(b: &[u8], at: usize, c: u8) -> usize {
    b[at..].iter().take_while(|&&x| x == c).count()
}

/// A thematic break: three or more of one of `-`, `*`, `_`, and spaces.
fn thematic(line: &[u8]) -> bool {
    let c = line[0];
    matches!(c, b'-' | b'*' | b'_')
        && line.iter().all(|&x| x == c || x == b' ')
        && line.iter().filter(|&&x| x == c).count() >= 3
}

impl Scan<'_> {
    /// Reads the line `body[start..end]` (no line break).
    fn line(&mut self, start: usize, end: usize) -> Option<()> {
        let b = &self.body.as_bytes()[..end];
        if let Some(f) = self.fence {
            let indent = run(b, start, b' ');
            let at = start + indent;
            let n = run(b, at, f.ch);
            if indent < 4 && n >= f.len && b[at + n..].iter().all(|&c| c == b' ') {
                self.out.code.push(f.start..end);
                self.fence = None;
            }
            return Some(());
        }
        let indent = run(b, start, b' ');
        let at = start + indent;
        let after_text = std::mem::replace(&mut self.after_text, false);
        if at == end {
            return Some(()); // blank
        }
        if indent >= 4 {
            return None; // indented code, or a list's continuation
        }
        let c = b[at];
        if c == b'`' || c == b'~' {
            let n = run(b, at, c);
            if n >= 3 {
                // A fence (only at the margin: inside a list it would be
                // the item's, with its indentation taken off).
                let info = &b[at + n..];
                if indent > 0 || (c == b'`' && memchr::memchr(b'`', info).is_some()) {
                    return None;
                }
                self.fence = Some(Fence {
                    ch: c,
                    len: n,
                    start,
                });
                return Some(());
            }
            if c == b'~' {
                return None;
            }
        }
        if matches!(c, b'-' | b'=') && b[at..].iter().all(|&x| x == c || x == b' ') {
            // A setext underline under text; else a thematic break.
            if c == b'=' || after_text || !thematic(&b[at..]) {
                return None;
            }
            return Some(());
        }
        if thematic(&b[at..]) {
            return Some(());
        }
        self.block(at, end, 0, after_text)
    }

    /// Reads a block that starts at `at` (at a line's margin, or after a
    /// list marker or footnote label at `depth` containers in).
    /// `after_text`: the line before was paragraph text, which this line
    /// may continue.
    fn block(&mut self, at: usize, end: usize, depth: usize, after_text: bool) -> Option<()> {
        let b = &self.body.as_bytes()[..end];
        match b[at] {
            b'#' => {
                let n = run(b, at, b'#');
                if n <= 6 && (at + n == end || b[at + n] == b' ') {
                    return self.heading(at + n, end);
                }
            }
            b'>' | b'=' => return None,
            b'-' | b'+' | b'*' if matches!(b.get(at + 1), None | Some(b' ')) => {
                return self.item(at + 1, end, depth, false);
            }
            b'0'..=b'9' => {
                let digits = run_digits(b, at);
                if digits <= 9 && matches!(b.get(at + digits), Some(b'.' | b')')) {
                    let after = at + digits + 1;
                    if matches!(b.get(after), None | Some(b' ')) {
                        // Only a list starting at 1 interrupts a paragraph:
                        // after text, any other is either a sibling item
                        // or the paragraph's next line.
                        let sure = !after_text || &b[at..at + digits] == b"1";
                        return self.item(after, end, depth, !sure);
                    }
                }
            }
            b'[' if b.get(at + 1) == Some(&b'^') && depth == 0 => {
                let close = footnote_label(b, at + 2)?;
                if b.get(close + 1) == Some(&b':') {
                    // A definition: its text follows one space.
                    if b.get(close + 2) != Some(&b' ') || close + 3 >= end {
                        return None;
                    }
                    if after_text {
                        return None;
                    }
                    return self.block(close + 3, end, depth + 1, false);
                }
            }
            b'[' => {
                // A link definition (`[label]:`) or, first in an item, a
                // task box (`[ ]`, `[x]`).
                let close = at + 1 + memchr::memchr(b']', &b[at + 1..])?;
                if b.get(close + 1) == Some(&b':')
                    || (depth > 0 && matches!(b.get(at + 1), Some(b' ' | b'x' | b'X' | b'^')))
                {
                    return None;
                }
            }
            b'`' | b'~' if depth > 0 && run(b, at, b[at]) >= 3 => return None,
            b'~' if depth > 0 => return None,
            _ => {}
        }
        self.after_text = true;
        self.inline(at, end, None)
    }

    /// A list item's content after its marker, which ends at `after`.
    /// `either`: the line may instead be paragraph text; then the item
    /// must read the same both ways (it opens with a letter).
    fn item(&mut self, after: usize, end: usize, depth: usize, either: bool) -> Option<()> {
        let b = &self.body.as_bytes()[..end];
        let spaces = run(b, after, b' ');
        let at = after + spaces;
        // An empty item, indented code in it, or a break inside it.
        if depth >= 4 || spaces == 0 || spaces > 4 || at == end || thematic(&b[at..]) {
            return None;
        }
        if either && !b[at].is_ascii_alphabetic() {
            return None;
        }
        self.block(at, end, depth + 1, false)
    }

    /// An ATX heading whose text (with its closing spaces) runs `at..end`.
    fn heading(&mut self, at: usize, end: usize) -> Option<()> {
        let b = self.body.as_bytes();
        let from = at + run(b, at, b' ');
        let mut to = end.max(from);
        while to > from && b[to - 1] == b' ' {
            to -= 1;
        }
        let mut text = String::new();
        self.inline(from, to, Some(&mut text))?;
        let slug = self.slugger.slug(&text);
        self.out.slugs.push(slug);
        Some(())
    }

    /// Reads the inline text `body[at..end]`, appending a heading's text to
    /// `text` when given.
    fn inline(&mut self, at: usize, end: usize, mut text: Option<&mut String>) -> Option<()> {
        let body = self.body;
        let b = &body.as_bytes()[..end];
        // Prose without `\`, `|` or tabs (nearly all of it) jumps from one
        // `[`, backtick or `<` to the next; a heading's text, or a line
        // holding those, is read byte by byte.
        let jump = text.is_none() && memchr::memchr3(b'\\', b'|', b'\t', &b[at..]).is_none();
        let mut i = at;
        let mut lit = at;
        while i < end {
            if jump {
                match memchr::memchr3(b'[', b'`', b'<', &b[i..]) {
                    Some(k) => i += k,
                    None => break,
                }
            }
            let c = b[i];
            if text.is_some() && heading_refuses(c) {
                return None;
            }
            if !SPECIAL[c as usize] {
                i += 1;
                continue;
            }
            match c {
                b'<' => {
                    // Literal unless it could open HTML or an autolink.
                    if !matches!(b.get(i + 1), None | Some(b' ' | b'=' | b'-' | b'0'..=b'9')) {
                        return None;
                    }
                    i += 1;
                }
                b']' => {
                    if text.is_some() {
                        return None;
                    }
                    i += 1; // closes nothing: literal
                }
                b'`' => {
                    let close = code_span(b, i)?;
                    if let Some(t) = text.as_deref_mut() {
                        t.push_str(&body[lit..i]);
                        t.push_str(code_text(&body[i..close]));
                    }
                    self.out.code.push(i..close);
                    i = close;
                    lit = i;
                }
                b'[' => {
                    if b.get(i + 1) == Some(&b'^') {
                        let close = footnote_label(b, i + 2)?;
                        if text.is_some() || matches!(b.get(close + 1), Some(b'(' | b'[')) {
                            return None;
                        }
                        i = close + 1;
                        continue;
                    }
                    let close = bracket_close(b, i)?;
                    if b.get(close + 1) != Some(&b'(') {
                        // `[text]` with no definition to refer to: literal.
                        if text.is_some() {
                            return None;
                        }
                        i += 1;
                        continue;
                    }
                    let (dest_end, after) = destination(b, close + 2)?;
                    let open = if i > 0 && b[i - 1] == b'!' { i - 1 } else { i };
                    if let Some(t) = text.as_deref_mut() {
                        t.push_str(&body[lit..i]);
                    }
                    self.out.links.push(BodyLink {
                        dest: body[close + 2..dest_end].to_string(),
                        span: open..after,
                    });
                    self.inline(i + 1, close, text.as_deref_mut())?;
                    i = after;
                    lit = i;
                }
                _ => return None, // `\`, `|`, tab
            }
        }
        if let Some(t) = text {
            t.push_str(&body[lit..end]);
        }
        Some(())
    }
}

fn run_digits(b: &[u8], at: usize) -> usize {
    b[at..].iter().take_while(|c| c.is_ascii_digit()).count()
}

/// The offset of the `]` closing a footnote label that starts at `from`:
/// a plain one, of letters, digits, `-`, `_` and `.` (a backtick, `<` or
/// `\` inside would open code, HTML or an escape first).
fn footnote_label(b: &[u8], from: usize) -> Option<usize> {
    let len = b[from..]
        .iter()
        .take_while(|&&c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        .count();
    (len > 0 && b.get(from + len) == Some(&b']')).then_some(from + len)
}

/// The end of the code span whose backticks start at `at`: just past the
/// next run of exactly as many backticks on the line.
fn code_span(b: &[u8], at: usize) -> Option<usize> {
    let n = run(b, at, b'`');
    let mut i = at + n;
    while let Some(k) = memchr::memchr(b'`', &b[i..]) {
        let m = run(b, i + k, b'`');
        if m == n {
            return Some(i + k + m);
        }
        i += k + m;
    }
    None
}

/// A code span's text: without its backticks, and with one space taken
/// off each end when both ends have one (and it is not all spaces).
fn code_text(span: &str) -> &str {
    let n = span.bytes().take_while(|&c| c == b'`').count();
    let inner = &span[n..span.len() - n];
    let b = inner.as_bytes();
    if b.len() >= 2 && b[0] == b' ' && b[b.len() - 1] == b' ' && b.iter().any(|&c| c != b' ') {
        &inner[1..inner.len() - 1]
    } else {
        inner
    }
}

/// The `]` closing the link text that opens at `open`: code spans inside
/// are passed over; another bracket, an escape or the line's end declines.
fn bracket_close(b: &[u8], open: usize) -> Option<usize> {
    let mut i = open + 1;
    while i < b.len() {
        match b[i] {
            b']' => return Some(i),
            b'[' | b'\\' => return None,
            b'`' => i = code_span(b, i)?,
            _ => i += 1,
        }
    }
    None
}

fn dest_byte(c: u8) -> bool {
    c.is_ascii_graphic()
        && !matches!(
            c,
            b'(' | b')' | b'<' | b'>' | b'"' | b'\'' | b'&' | b'[' | b']' | b'\\' | b'`'
        )
}

/// The end of the destination of an inline link's `(dest "title")` that
/// starts at `from`, and the offset just past its `)`; `None` when it is
/// not a plain one.
fn destination(b: &[u8], from: usize) -> Option<(usize, usize)> {
    let len = b[from..].iter().take_while(|&&c| dest_byte(c)).count();
    let mut i = from + len;
    if b.get(i) == Some(&b' ') && len > 0 {
        i += run(b, i, b' ');
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let title = b[i + 1..]
            .iter()
            .take_while(|&&c| !matches!(c, b'"' | b'\\' | b'`'))
            .count();
        i += 1 + title;
        if b.get(i) != Some(&b'"') {
            return None;
        }
        i += 1;
        i += run(b, i, b' ');
    }
    (b.get(i) == Some(&b')')).then_some((from + len, i + 1))
}
