//! Splitting a Markdown file into its YAML frontmatter block and body.

use crate::text::lines;

/// Where the frontmatter and body of a file are, in byte offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Split {
    /// No opening `---` line: the whole file (after any BOM) is body.
    Absent {
        /// Start of the body (after a UTF-8 BOM, if any).
        body_start: usize,
    },
    /// An opening `---` with no closing `---` line.
    Unclosed {
        /// Offset of the opening fence.
        open: usize,
    },
    /// A complete block.
    Present(Block),
}

/// A complete frontmatter block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Block {
    /// Offset of the opening `---`.
    pub open: usize,
    /// Start of the YAML text (the line after the opening fence).
    pub yaml_start: usize,
    /// End of the YAML text (start of the closing fence line).
    pub yaml_end: usize,
    /// End of the closing fence line's content (exclusive, no terminator).
    pub close_end: usize,
    /// Start of the body: right after the closing fence's line terminator.
    pub body_start: usize,
}

/// Finds the frontmatter fences. A UTF-8 BOM before the opening `---` is
/// tolerated; lines may end in `\n`, `\r\n` or `\r`. Fence lines must be
/// exactly `---` (trailing spaces and tabs allowed).
pub fn split(text: &str) -> Split {
    let base = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let rest = &text[base..];
    let mut it = lines(rest);
    let first = match it.next() {
        Some(l) => l,
        None => return Split::Absent { body_start: base },
    };
    if !is_fence(&rest[first.0..first.1]) {
        return Split::Absent { body_start: base };
    }
    let yaml_start = first.2;
    for (s, e, t) in it {
        if rest.as_bytes()[s] == b'-' && is_fence(&rest[s..e]) {
            return Split::Present(Block {
                open: base,
                yaml_start: base + yaml_start,
                yaml_end: base + s,
                close_end: base + e,
                body_start: base + t,
            });
        }
    }
    Split::Unclosed { open: base }
}

fn is_fence(line: &str) -> bool {
    line.trim_end_matches([' ', '\t']) == "---"
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_lf_crlf_bom() {
        let t = "---\ntype: a\n---\nbody\n";
        let Split::Present(b) = split(t) else {
            panic!()
        };
        assert_eq!(&t[b.yaml_start..b.yaml_end], "type: a\n");
        assert_eq!(&t[b.body_start..], "body\n");
        let t = "\u{feff}---\r\ntype: a\r\n---\r\n\r\nbody";
        let Split::Present(b) = split(t) else {
            panic!()
        };
        assert_eq!(&t[b.yaml_start..b.yaml_end], "type: a\r\n");
        assert_eq!(&t[b.body_start..], "\r\nbody");
        assert_eq!(split("---\ntype: a\n"), Split::Unclosed { open: 0 });
        assert_eq!(split(""), Split::Absent { body_start: 0 });
        assert_eq!(split("# hi\n---\n"), Split::Absent { body_start: 0 });
        let Split::Present(b) = split("---\n---") else {
            panic!()
        };
        assert_eq!(b.yaml_start, b.yaml_end);
    }
}
