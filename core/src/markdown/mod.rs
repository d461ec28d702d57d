//! The Markdown side of a document: links, headings and their slugs, code
//! ranges (for footnote scanning), and the top-level block structure that
//! `index.md` and `log.md` rules read.

mod plain;

use crate::scan_map::ScanMap;
use pulldown_cmark::{Event, LinkType, Options, Parser, Tag, TagEnd};
use std::ops::Range;

fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_FOOTNOTES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_TASKLISTS
}

/// A body link: destination as written and its byte span (relative to the body).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BodyLink {
    /// The destination URL as written (escapes and `<>` removed).
    pub dest: String,
    /// Byte span of the whole link in the body.
    pub span: Range<usize>,
}

/// What a concept body contributes: links, heading slugs, code spans.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BodyScan {
    /// Inline links and images, in document order.
    pub links: Vec<BodyLink>,
    /// GitHub-style slugs of every heading, duplicates suffixed.
    pub slugs: Vec<String>,
    /// Byte spans of inline code and code blocks, ascending.
    pub code: Vec<Range<usize>>,
}

/// Scans a body for links, heading slugs and code spans: a plain body
/// (see [`scan_plain`]) without the CommonMark parser, any other with it.
pub fn scan_body(body: &str) -> BodyScan {
    scan_plain(body).unwrap_or_else(|| scan_commonmark(body))
}

/// The scan of a body of plain prose (paragraphs, ATX headings, lists,
/// inline links, footnotes), read line by line; `None` when the body holds
/// anything else. Where it answers, it equals [`scan_commonmark`].
pub fn scan_plain(body: &str) -> Option<BodyScan> {
    plain::scan(body)
}

/// The scan of any body by the CommonMark parser.
pub fn scan_commonmark(body: &str) -> BodyScan {
    let mut out = BodyScan::default();
    let mut slugger = Slugger::default();
    let mut heading: Option<String> = None;
    for (ev, range) in Parser::new_ext(body, options()).into_offset_iter() {
        match ev {
            Event::Start(Tag::Heading { .. }) => heading = Some(String::new()),
            Event::End(TagEnd::Heading(_)) => {
                if let Some(text) = heading.take() {
                    out.slugs.push(slugger.slug(&text));
                }
            }
            Event::Text(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
            }
            Event::Code(t) => {
                if let Some(h) = heading.as_mut() {
                    h.push_str(&t);
                }
                out.code.push(range);
            }
            Event::Start(Tag::CodeBlock(_)) => out.code.push(range),
            Event::Start(Tag::Link {
                link_type,
                dest_url,
                ..
            })
            | Event::Start(Tag::Image {
                link_type,
                dest_url,
                ..
            }) => {
                // The start event's range spans the whole link.
                if matches!(link_type, LinkType::Inline) {
                    out.links.push(BodyLink {
                        dest: dest_url.into_string(),
                        span: range,
                    });
                }
            }
            _ => {}
        }
    }
    out.code.sort_by_key(|r| r.start);
    out
}

/// GitHub-compatible heading slugs with duplicate suffixes.
#[derive(Default)]
pub struct Slugger {
    /// Each slug given, and each base's last suffix.
    seen: ScanMap<String, usize>,
}

impl Slugger {
    /// The slug for the next heading with this text.
    pub fn slug(&mut self, text: &str) -> String {
        let base = slug_base(text);
        let Some(&start) = self.seen.get(&base) else {
            // The common case: a heading text not met before keeps its slug.
            self.seen.insert_new(base.clone(), 0);
            return base;
        };
        let (mut n, mut candidate) = (start, base.clone());
        while self.seen.get(&candidate).is_some() {
            n += 1;
            candidate = format!("{base}-{n}");
        }
        if let Some(last) = self.seen.get_mut(&base) {
            *last = n;
        }
        self.seen.insert_new(candidate.clone(), 0);
        candidate
    }
}

/// Lowercase; letters, digits, `_`, `-` kept; spaces become `-`; everything else dropped.
pub fn slug_base(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.trim().chars() {
        if c == ' ' {
            s.push('-');
        } else if c.is_ascii() {
            // Nearly every heading: ASCII needs no Unicode tables.
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                s.push(c.to_ascii_lowercase());
            }
        } else if c.is_alphanumeric() {
            s.extend(c.to_lowercase());
        }
    }
    s
}

/// The first child of a list item.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ItemStart {
    /// Inline text (a paragraph, tight or loose); the first link in it.
    Text {
        /// The first inline link: (destination, link text, end offset).
        link: Option<(String, String)>,
        /// Byte offset just past the first link, when there is one.
        link_end: usize,
    },
    /// Anything else (a nested list, code, nothing).
    Other,
}

/// A list item at the top level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Item {
    /// Byte span of the item.
    pub span: Range<usize>,
    /// How it starts.
    pub start: ItemStart,
}

/// A top-level block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Block {
    /// A heading: level and plain text.
    Heading(u8, String),
    /// A list and its items.
    List(Vec<Item>),
    /// Any other block, by its mdast type name.
    Other(&'static str),
}

/// Top-level blocks with their byte spans.
pub fn blocks(body: &str) -> Vec<(Block, Range<usize>)> {
    let mut out = vec![];
    let mut depth = 0usize;
    let mut cur: Option<(Block, Range<usize>)> = None;
    // List item tracking (only for top-level lists: depth 1 = list, 2 = item).
    let mut item: Option<(Range<usize>, Option<ItemStart>)> = None;
    let mut in_first_para = false;
    let mut link: Option<(String, String)> = None;
    let mut link_text: Option<String> = None;
    let mut link_end = 0usize;
    let mut heading_text = String::new();
    for (ev, range) in Parser::new_ext(body, options()).into_offset_iter() {
        match &ev {
            Event::Start(tag) => {
                if depth == 0 {
                    let b = match tag {
                        Tag::Heading { level, .. } => {
                            heading_text.clear();
                            Block::Heading(*level as u8, String::new())
                        }
                        Tag::List(_) => Block::List(vec![]),
                        other => Block::Other(block_name(other)),
                    };
                    cur = Some((b, range.clone()));
                } else if depth == 1 && matches!(cur, Some((Block::List(_), _))) {
                    if let Tag::Item = tag {
                        item = Some((range.clone(), None));
                        in_first_para = false;
                        link = None;
                        link_end = 0;
                    }
                } else if depth == 2 {
                    if let Some((_, st @ None)) = item.as_mut() {
                        match tag {
                            Tag::Paragraph => {
                                *st = Some(ItemStart::Text {
                                    link: None,
                                    link_end: 0,
                                });
                                in_first_para = true;
                            }
                            t if is_inline(t) => {
                                *st = Some(ItemStart::Text {
                                    link: None,
                                    link_end: 0,
                                });
                                in_first_para = true;
                            }
                            _ => *st = Some(ItemStart::Other),
                        }
                    }
                }
                if in_first_para && depth >= 2 {
                    if let Tag::Link { dest_url, .. } = tag {
                        if link.is_none() && link_text.is_none() {
                            link = Some((dest_url.to_string(), String::new()));
                            link_text = Some(String::new());
                            link_end = range.end;
                        }
                    }
                }
                depth += 1;
            }
            Event::End(tag_end) => {
                depth = depth.saturating_sub(1);
                if in_first_para {
                    if let TagEnd::Link = tag_end {
                        if let (Some(t), Some(l)) = (link_text.take(), link.as_mut()) {
                            l.1 = t;
                        }
                    }
                    if depth == 2 && matches!(tag_end, TagEnd::Paragraph) {
                        in_first_para = false;
                    }
                }
                if depth == 1 && matches!(tag_end, TagEnd::Item) {
                    if let Some((span, st)) = item.take() {
                        let start = match st {
                            Some(ItemStart::Text { .. }) => ItemStart::Text {
                                link: link.take(),
                                link_end,
                            },
                            _ => ItemStart::Other,
                        };
                        if let Some((Block::List(items), _)) = cur.as_mut() {
                            items.push(Item { span, start });
                        }
                    }
                    in_first_para = false;
                    link_text = None;
                }
                if depth == 0 {
                    if let Some((mut b, r)) = cur.take() {
                        if let Block::Heading(_, t) = &mut b {
                            *t = heading_text.trim().to_string();
                        }
                        out.push((b, r));
                    }
                }
            }
            Event::Text(t) | Event::Code(t) => {
                if depth >= 1 && matches!(cur, Some((Block::Heading(..), _))) {
                    heading_text.push_str(t);
                }
                if let Some(lt) = link_text.as_mut() {
                    lt.push_str(t);
                }
                inline_first(&mut item, depth, &mut in_first_para);
            }
            Event::Rule if depth == 0 => out.push((Block::Other("thematicBreak"), range.clone())),
            Event::Html(_)
            | Event::InlineHtml(_)
            | Event::SoftBreak
            | Event::HardBreak
            | Event::FootnoteReference(_)
            | Event::TaskListMarker(_)
            | Event::InlineMath(_) => {
                inline_first(&mut item, depth, &mut in_first_para);
            }
            _ => {}
        }
    }
    out
}

fn inline_first(
    item: &mut Option<(Range<usize>, Option<ItemStart>)>,
    depth: usize,
    in_first_para: &mut bool,
) {
    if depth == 2 {
        if let Some((_, st @ None)) = item.as_mut() {
            *st = Some(ItemStart::Text {
                link: None,
                link_end: 0,
            });
            *in_first_para = true;
        }
    }
}

fn is_inline(t: &Tag) -> bool {
    matches!(
        t,
        Tag::Emphasis
            | Tag::Strong
            | Tag::Strikethrough
            | Tag::Link { .. }
            | Tag::Image { .. }
            | Tag::Superscript
            | Tag::Subscript
    )
}

fn block_name(t: &Tag) -> &'static str {
    match t {
        Tag::Paragraph => "paragraph",
        Tag::Heading { .. } => "heading",
        Tag::BlockQuote(_) => "blockquote",
        Tag::CodeBlock(_) => "code",
        Tag::HtmlBlock => "html",
        Tag::List(_) => "list",
        Tag::FootnoteDefinition(_) => "footnoteDefinition",
        Tag::Table(_) => "table",
        Tag::MetadataBlock(_) => "yaml",
        _ => "block",
    }
}

/// One entry of an `index.md`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct IndexEntry {
    /// The heading of the section it is listed under.
    pub section: String,
    /// The link text.
    pub title: String,
    /// The link destination as written.
    pub target: String,
    /// Text after the link, with one leading `-`, `–`, `—` or `:` removed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// One dated group of a `log.md`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct LogGroup {
    /// The `YYYY-MM-DD` heading.
    pub date: String,
    /// Each item's first paragraph, as written.
    pub items: Vec<String>,
}

/// The first paragraph of a list item's source, marker removed.
fn item_text(body: &str, span: &Range<usize>, from: Option<usize>) -> String {
    let src = &body[span.start..span.end];
    let src = match from {
        Some(f) if f >= span.start && f <= span.end => &body[f..span.end],
        _ => src
            .trim_start()
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start_matches(['*', '-', '+', '.', ')'])
            .trim_start(),
    };
    let mut out = String::new();
    for line in src.lines() {
        let t = line.trim();
        if t.is_empty()
            || t.starts_with(['*', '-', '+'])
                && t.len() > 1
                && t.as_bytes()[1] == b' '
                && !out.is_empty()
        {
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(t);
    }
    out
}

/// The entries of an `index.md` body, section by section.
pub fn index_entries(body: &str) -> Vec<IndexEntry> {
    let mut out = vec![];
    let mut section = String::new();
    for (block, _) in blocks(body) {
        match block {
            Block::Heading(_, t) => section = t,
            Block::List(items) => {
                for it in items {
                    if let ItemStart::Text {
                        link: Some((target, title)),
                        link_end,
                    } = &it.start
                    {
                        let rest = item_text(body, &it.span, Some(*link_end));
                        let rest = rest.trim_start();
                        let rest = rest
                            .strip_prefix(['-', '–', '—', ':'])
                            .map_or(rest, str::trim_start);
                        out.push(IndexEntry {
                            section: section.clone(),
                            title: title.clone(),
                            target: target.clone(),
                            description: (!rest.is_empty()).then(|| rest.to_string()),
                        });
                    }
                }
            }
            Block::Other(_) => {}
        }
    }
    out
}

/// The dated groups of a `log.md` body (valid `YYYY-MM-DD` headings only).
pub fn log_groups(body: &str) -> Vec<LogGroup> {
    let mut out: Vec<LogGroup> = vec![];
    let mut current: Option<usize> = None;
    for (block, _) in blocks(body) {
        match block {
            Block::Heading(2, t) => {
                current = crate::time::is_date_shape(&t).then(|| {
                    out.push(LogGroup {
                        date: t,
                        items: vec![],
                    });
                    out.len() - 1
                });
            }
            Block::List(items) => {
                if let Some(g) = current {
                    for it in items {
                        if matches!(it.start, ItemStart::Text { .. }) {
                            out[g].items.push(item_text(body, &it.span, None));
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Every `[^label]` token outside code, with its byte span; first occurrence
/// order. Labels contain no whitespace and no `]`.
pub fn footnote_tokens(body: &str, code: &[Range<usize>]) -> Vec<(String, Range<usize>)> {
    let b = body.as_bytes();
    let mut out = vec![];
    let mut ci = 0;
    for start in memchr::memmem::find_iter(b, b"[^") {
        let mut j = start + 2;
        while j < b.len() && b[j] != b']' && !b[j].is_ascii_whitespace() && b[j] != b'[' {
            j += 1;
        }
        if j >= b.len() || b[j] != b']' || j == start + 2 {
            continue;
        }
        while ci < code.len() && code[ci].end <= start {
            ci += 1;
        }
        if ci < code.len() && code[ci].start <= start {
            continue;
        }
        out.push((body[start + 2..j].to_string(), start..j + 1));
    }
    out
}

/// Labels with a line-start `[^label]:` definition (up to three spaces of indent).
pub fn footnote_definitions(body: &str) -> Vec<String> {
    let b = body.as_bytes();
    let mut out = vec![];
    for start in memchr::memmem::find_iter(b, b"[^") {
        let line_start = b[..start]
            .iter()
            .rposition(|&c| c == b'\n' || c == b'\r')
            .map_or(0, |p| p + 1);
        if start - line_start > 3 || b[line_start..start].iter().any(|&c| c != b' ') {
            continue;
        }
        // The label runs to the first `]:`, and holds no whitespace or `[`:
        // so the search stops at the first of those.
        let rest = &body[start + 2..];
        let stop = rest
            .find(|c: char| c.is_whitespace() || c == '[')
            .unwrap_or(rest.len());
        if let Some(close) = rest[..stop].find("]:") {
            if close > 0 {
                out.push(rest[..close].to_string());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slug_rule_on_ascii_and_beyond() {
        assert_eq!(
            slug_base(" The v4 SQLite decision? "),
            "the-v4-sqlite-decision"
        );
        assert_eq!(
            slug_base("a_b-c D!#$%&()*+,./:;<=>?@[]^`{|}~\\\"'"),
            "a_b-c-d"
        );
        assert_eq!(slug_base("Ünïcode Straße ΣΑ 1½"), "ünïcode-straße-σα-1½");
    }

    #[test]
    fn slugs_past_the_scan_agree_with_a_map() {
        // The reference: every slug and base suffix in one map.
        fn reference(texts: &[String]) -> Vec<String> {
            let mut seen = std::collections::HashMap::<String, usize>::new();
            texts
                .iter()
                .map(|t| {
                    let base = slug_base(t);
                    let Some(&start) = seen.get(&base) else {
                        seen.insert(base.clone(), 0);
                        return base;
                    };
                    let (mut n, mut c) = (start, base.clone());
                    while seen.contains_key(&c) {
                        n += 1;
                        c = format!("{base}-{n}");
                    }
                    seen.insert(base, n);
                    seen.insert(c.clone(), 0);
                    c
                })
                .collect()
        }
        let texts: Vec<String> = (0..60)
            .map(|i| match i % 4 {
                0 => "Setup".to_string(),
                1 => format!("Part {}", i / 8),
                2 => "Setup 1".to_string(),
                _ => format!("Setup-{}", i % 3),
            })
            .collect();
        let mut s = Slugger::default();
        let got: Vec<String> = texts.iter().map(|t| s.slug(t)).collect();
        assert_eq!(got, reference(&texts));
    }

    #[test]
    fn links_slugs_code() {
        let body = "# The v4 SQLite decision?\n\n## Setup\n\n## Setup\n\nSee [a](a.md#x) and ![i](img.png) and [r][ref] `[b](c.md)`.\n\n[ref]: r.md\n\n```\n[^x]\n```\n";
        let s = scan_body(body);
        assert_eq!(s.slugs, vec!["the-v4-sqlite-decision", "setup", "setup-1"]);
        let dests: Vec<_> = s.links.iter().map(|l| l.dest.as_str()).collect();
        assert_eq!(dests, vec!["a.md#x", "img.png"]);
        assert_eq!(&body[s.links[0].span.clone()], "[a](a.md#x)");
        let toks = footnote_tokens(body, &s.code);
        assert!(toks.is_empty());
    }

    #[test]
    fn footnotes() {
        let body = "Claim.[^a] More[^b] and `[^c]`.\n\n[^a]: Source A\n";
        let s = scan_body(body);
        let toks: Vec<_> = footnote_tokens(body, &s.code)
            .into_iter()
            .map(|(l, _)| l)
            .collect();
        assert_eq!(toks, vec!["a", "b", "a"]);
        assert_eq!(footnote_definitions(body), vec!["a"]);
    }

    #[test]
    fn index_and_log_models() {
        let idx = "# Tables\n\n* [Orders](orders.md) - All orders.\n* [Bare](b.md)\n\n# Subdirectories\n\n- [x](x/index.md): The x folder\n";
        let e = index_entries(idx);
        assert_eq!(e.len(), 3);
        assert_eq!(e[0].section, "Tables");
        assert_eq!(e[0].title, "Orders");
        assert_eq!(e[0].target, "orders.md");
        assert_eq!(e[0].description.as_deref(), Some("All orders."));
        assert_eq!(e[1].description, None);
        assert_eq!(e[2].section, "Subdirectories");
        assert_eq!(e[2].description.as_deref(), Some("The x folder"));
        let log = "# Log\n\n## 2026-05-22\n* **Update**: Added [x](/x.md).\n* second\n\n## not a date\n* skipped\n\n## 2026-05-15\n- one\n";
        let g = log_groups(log);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].date, "2026-05-22");
        assert_eq!(g[0].items, vec!["**Update**: Added [x](/x.md).", "second"]);
        assert_eq!(g[1].items, vec!["one"]);
    }

    #[test]
    fn top_level_blocks() {
        let body = "# Tables\n\n* [Orders](orders.md) - All orders.\n* plain\n*\n  ```\n  x\n  ```\n\nText\n\n## 2026-01-01\n\n- loose\n\n- [x](y.md)\n";
        let b = blocks(body);
        assert_eq!(b[0].0, Block::Heading(1, "Tables".into()));
        let Block::List(items) = &b[1].0 else {
            panic!("{b:?}")
        };
        assert!(matches!(
            &items[0].start,
            ItemStart::Text { link: Some((d, t)), .. } if d == "orders.md" && t == "Orders"
        ));
        assert_eq!(
            items[1].start,
            ItemStart::Text {
                link: None,
                link_end: 0
            }
        );
        assert_eq!(items[2].start, ItemStart::Other);
        assert_eq!(b[2].0, Block::Other("paragraph"));
        assert_eq!(b[3].0, Block::Heading(2, "2026-01-01".into()));
        let Block::List(items) = &b[4].0 else {
            panic!()
        };
        assert!(matches!(
            &items[1].start,
            ItemStart::Text { link: Some((d, t)), .. } if d == "y.md" && t == "x"
        ));
    }
}
