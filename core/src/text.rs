//! Byte offsets to editor positions: UTF-16 code units with zero-based line
//! and character, as JS clients and LSP expect.

use serde::Serialize;

/// A source range in UTF-16 code units, zero-based.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct Range {
    /// Offset of the first unit from the start of the file.
    pub offset: u32,
    /// Length in UTF-16 code units.
    pub length: u32,
    /// Zero-based line of `offset`.
    pub line: u32,
    /// Zero-based UTF-16 column of `offset` within its line.
    pub character: u32,
}

/// Maps byte offsets of one text to [`Range`]s. Nearly every text ends
/// its lines with `\n` alone: then the positions are counted forward from
/// the last one asked for (ranges are mostly asked in text order), so a
/// file costs one pass up to its last range and no table. A text with
/// `\r` keeps a table of line starts (a binary search per lookup).
pub struct Positions<'a> {
    text: &'a str,
    ascii: bool,
    lines: Lines,
}

enum Lines {
    /// The last position asked for: (byte offset, line, UTF-16 offset).
    Cursor(std::cell::Cell<(usize, u32, u32)>),
    /// (byte offset of line start, UTF-16 offset of line start)
    Table(Vec<(u32, u32)>),
}

impl<'a> Positions<'a> {
    /// Indexes `text`. Lines end at `\n`, `\r\n` or a lone `\r`.
    pub fn new(text: &'a str) -> Self {
        let ascii = text.is_ascii();
        let bytes = text.as_bytes();
        if memchr::memchr(b'\r', bytes).is_none() {
            let lines = Lines::Cursor(std::cell::Cell::new((0, 0, 0)));
            return Positions { text, ascii, lines };
        }
        let mut lines = Vec::with_capacity(bytes.len() / 40 + 1);
        lines.push((0u32, 0u32));
        let mut prev_end = 0usize;
        let mut u16pos: u32 = 0;
        let mut skip_lf_at = usize::MAX;
        for i in memchr::memchr2_iter(b'\n', b'\r', bytes) {
            if i == skip_lf_at {
                continue;
            }
            let mut end = i + 1;
            if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                end = i + 2;
                skip_lf_at = i + 1;
            }
            u16pos = if ascii {
                end as u32
            } else {
                u16pos + utf16_len(&text[prev_end..end])
            };
            lines.push((end as u32, u16pos));
            prev_end = end;
        }
        Positions {
            text,
            ascii,
            lines: Lines::Table(lines),
        }
    }

    fn units(&self, from: usize, to: usize) -> u32 {
        if self.ascii {
            (to - from) as u32
        } else {
            utf16_len(&self.text[from..to])
        }
    }

    /// The range covering bytes `start..end` (clamped to the text and to
    /// character boundaries).
    pub fn range(&self, start: usize, end: usize) -> Range {
        let len = self.text.len();
        let mut start = start.min(len);
        let mut end = end.clamp(start, len);
        while !self.text.is_char_boundary(start) {
            start -= 1;
        }
        while !self.text.is_char_boundary(end) {
            end += 1;
        }
        let (line, line_byte, line_u16) = match &self.lines {
            Lines::Cursor(cursor) => {
                let (at, mut line, mut u16) = cursor.get();
                let (from, to) = (at.min(start), at.max(start));
                let newlines = newlines(&self.text.as_bytes()[from..to]);
                let units = self.units(from, to);
                if start >= at {
                    (line, u16) = (line + newlines, u16 + units);
                } else {
                    (line, u16) = (line - newlines, u16 - units);
                }
                cursor.set((start, line, u16));
                let line_byte =
                    memchr::memrchr(b'\n', &self.text.as_bytes()[..start]).map_or(0, |i| i + 1);
                (line, line_byte, u16 - self.units(line_byte, start))
            }
            Lines::Table(lines) => {
                let idx = match lines.binary_search_by(|(b, _)| (*b as usize).cmp(&start)) {
                    Ok(i) => i,
                    Err(i) => i - 1,
                };
                let (line_byte, line_u16) = lines[idx];
                (idx as u32, line_byte as usize, line_u16)
            }
        };
        let character = self.units(line_byte, start);
        Range {
            offset: line_u16 + character,
            length: self.units(start, end),
            line,
            character,
        }
    }
}

/// Number of `\n` bytes in `b`.
fn newlines(b: &[u8]) -> u32 {
    // Counted in 64-byte blocks of byte comparisons, which compile to
    // vector compares: a few cycles per block.
    let mut n = 0u32;
    let mut blocks = b.chunks_exact(64);
    for block in &mut blocks {
        // At most 64 per block: a byte-wide sum cannot overflow.
        let in_block = block.iter().fold(0u8, |a, &c| a + u8::from(c == b'\n'));
        n += u32::from(in_block);
    }
    n + blocks.remainder().iter().filter(|&&c| c == b'\n').count() as u32
}

/// Whether any byte of `b` is one `hit` picks. Blocks of 32 bytes are
/// tested whole (no early exit inside one), which the compiler turns into
/// vector compares: for the checks that read every byte of a text before a
/// fast reader takes it.
pub fn any_byte(b: &[u8], hit: impl Fn(u8) -> bool) -> bool {
    let mut blocks = b.chunks_exact(32);
    let found = blocks.any(|block| block.iter().fold(false, |f, &c| f | hit(c)));
    found || blocks.remainder().iter().any(|&c| hit(c))
}

/// Number of UTF-16 code units in `s`.
pub fn utf16_len(s: &str) -> u32 {
    s.chars().map(|c| c.len_utf16() as u32).sum()
}

/// Splits `text` into lines, returning `(start, end_without_terminator,
/// end_with_terminator)` byte offsets. `\n`, `\r\n` and lone `\r` end a line.
pub fn lines(text: &str) -> impl Iterator<Item = (usize, usize, usize)> + Clone + '_ {
    let bytes = text.as_bytes();
    let mut pos = 0usize;
    std::iter::from_fn(move || {
        if pos >= bytes.len() {
            return None;
        }
        let start = pos;
        let mut i = memchr::memchr2(b'\n', b'\r', &bytes[pos..]).map_or(bytes.len(), |x| pos + x);
        let content_end = i;
        if i < bytes.len() {
            if bytes[i] == b'\r' && bytes.get(i + 1) == Some(&b'\n') {
                i += 2;
            } else {
                i += 1;
            }
        }
        pos = i;
        Some((start, content_end, i))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ascii_and_utf16_ranges() {
        // (text, byte start, byte end) → (offset, length, line, character).
        let cases = [
            ("ab\ncd\r\nef", 7, 9, [7, 2, 2, 0]),
            ("ab\ncd\nef", 7, 8, [7, 1, 2, 1]),
            ("ab\n\n", 3, 4, [3, 1, 1, 0]),
            // é = 1 unit, 😀 = 2 units, \n = 1
            ("é😀\nx", 7, 8, [4, 1, 1, 0]),
            ("é😀\nx", 2, 6, [1, 2, 0, 1]),
        ];
        for (text, start, end, want) in cases {
            let r = Positions::new(text).range(start, end);
            assert_eq!([r.offset, r.length, r.line, r.character], want, "{text:?}");
        }
    }

    #[test]
    fn ranges_asked_in_any_order_agree_with_a_table() {
        // Every pair of offsets, forward and backward, against the table
        // a CR-free text would build (the CR path is that table).
        for text in ["ab\ncd\n\nef\n", "é😀\nx\nyé\n\n😀z", "", "\n\n"] {
            let with_cr = text.replace('\n', "\r\n");
            let p = Positions::new(text);
            let table = Positions::new(&with_cr);
            let bounds: Vec<usize> = (0..=text.len())
                .filter(|&i| text.is_char_boundary(i))
                .collect();
            for &a in bounds.iter().chain(bounds.iter().rev()) {
                let r = p.range(a, text.len());
                // The same character in the CRLF text: one more byte per line before it.
                let lines_before = text[..a].matches('\n').count();
                let t = table.range(a + lines_before, with_cr.len());
                assert_eq!(
                    (r.line, r.character),
                    (t.line, t.character),
                    "{text:?} at {a}"
                );
                assert_eq!(r.offset + lines_before as u32, t.offset, "{text:?} at {a}");
            }
        }
    }

    #[test]
    fn lone_cr_ends_a_line() {
        let v: Vec<_> = lines("a\rb\r\nc\n").collect();
        assert_eq!(v, vec![(0, 1, 2), (2, 3, 5), (5, 6, 7)]);
    }
}
