//! Parsing one file of a bundle into a compact [`Document`]: its concept
//! model, its outgoing links, its heading slugs and every finding that can
//! be made from the file alone.

use crate::actor::{self, ActorKind};
use crate::config::Config;
use crate::diag::{Diagnostic, Tier};
use crate::frontmatter::{self, Split};
use crate::markdown::{self, Block, ItemStart};
use crate::node::{Mapping, Node};
use crate::text::{Positions, Range};
use crate::time::{self, Instant, Parsed};
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};
use std::cell::OnceCell;
use std::fmt::Display;

/// What a Markdown file is in the bundle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A decoded concept.
    Concept,
    /// A non-reserved `.md` that failed to decode (a conformance error).
    Undecodable,
    /// An `index.md`.
    Index,
    /// A `log.md`.
    Log,
}

/// Where a link was written.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LinkSource {
    /// A path-valued frontmatter field.
    Frontmatter,
    /// An inline link or image in the body.
    Body,
}

/// An outgoing link as written, before resolution.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Link {
    /// The value or URL as written.
    pub raw: String,
    /// Body or frontmatter.
    pub source: LinkSource,
    /// The frontmatter field (`resource`, `sources.resource`, …).
    pub field: Option<&'static str>,
    /// Where it was written.
    pub range: Option<Range>,
}

/// `generated`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Generated {
    /// The actor.
    pub by: String,
    /// When the content last changed meaningfully.
    pub at: Option<Instant>,
    /// okfit's recorded body digest.
    pub body_sha256: Option<String>,
}

/// One `verified` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verification {
    /// The verifier.
    pub by: String,
    /// When.
    pub at: Option<Instant>,
}

/// Derived trust tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum TrustTier {
    /// No `verified` entries.
    Unverified,
    /// Only non-human verifiers.
    MachineConfirmed,
    /// At least one `human:` verifier.
    HumanReviewed,
}

/// Derived staleness.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Staleness {
    /// No `stale_after`.
    Unknown,
    /// `now >= stale_after`.
    Stale,
    /// `now < stale_after`.
    Fresh,
}

/// The decoded concept model.
#[derive(Clone, Debug, PartialEq)]
pub struct Concept {
    /// Path id: bundle-relative path without `.md`.
    pub id: String,
    /// `type`.
    pub type_name: String,
    /// `title`, else the file stem.
    pub title: String,
    /// `description`.
    pub description: Option<String>,
    /// `status` as written, when it is a string.
    pub status: Option<String>,
    /// `tags`.
    pub tags: Vec<String>,
    /// `generated` (or the folded legacy `timestamp`).
    pub generated: Option<Generated>,
    /// `verified`, normalised to a list.
    pub verified: Vec<Verification>,
    /// `stale_after`.
    pub stale_after: Option<Instant>,
    /// Where `stale_after` is written, for its `stale` finding at another
    /// `now` ([`retime`]); parsed with diagnostics only.
    pub stale_range: Option<Range>,
    /// The whole frontmatter mapping, when asked for.
    pub frontmatter: Option<Map<String, Value>>,
    /// SHA-256 of the normalised body (reference §8.1); computed when
    /// [`ParseOptions::digests`] is set or a digest is recorded.
    pub body_digest: Option<[u8; 32]>,
    /// A `Surface`'s `resource` glob and where it is written.
    pub surface_glob: Option<(String, Option<Range>)>,
    /// A `Publication`'s `surface` and `renders`.
    pub publication: Option<PublicationSpec>,
}

/// What a `Publication` concept declares.
#[derive(Clone, Debug, PartialEq)]
pub struct PublicationSpec {
    /// `surface` as written.
    pub surface: Option<Value>,
    /// Where `surface` is written.
    pub surface_range: Option<Range>,
    /// `renders` as `(path, body_sha256)`, or `None` when malformed or empty.
    pub renders: Option<Vec<(String, Option<String>)>>,
    /// Where `renders` is written.
    pub renders_range: Option<Range>,
}

impl Concept {
    /// `status` with absence read as `stable`.
    pub fn status_or_stable(&self) -> &str {
        self.status.as_deref().unwrap_or("stable")
    }

    /// The trust tier derived from `verified`.
    pub fn trust_tier(&self) -> TrustTier {
        if self.verified.is_empty() {
            TrustTier::Unverified
        } else if self.verified.iter().any(|v| v.by.starts_with("human:")) {
            TrustTier::HumanReviewed
        } else {
            TrustTier::MachineConfirmed
        }
    }

    /// Staleness at `now`.
    pub fn staleness(&self, now: Instant) -> Staleness {
        match self.stale_after {
            None => Staleness::Unknown,
            Some(s) if now >= s => Staleness::Stale,
            Some(_) => Staleness::Fresh,
        }
    }

    /// The body digest as lowercase hex, when computed.
    pub fn body_digest_hex(&self) -> Option<String> {
        self.body_digest.as_ref().map(|d| hex(d))
    }
}

/// One parsed Markdown file.
#[derive(Clone, Debug, PartialEq)]
pub struct Document {
    /// Bundle-relative posix path.
    pub path: String,
    /// What it is.
    pub kind: Kind,
    /// The concept, for [`Kind::Concept`].
    pub concept: Option<Concept>,
    /// Findings made from this file alone.
    pub diagnostics: Vec<Diagnostic>,
    /// Outgoing links (concepts only): frontmatter fields first, then body.
    pub links: Vec<Link>,
    /// Heading slugs of a concept (for `#fragment` checks; links into
    /// reserved documents are never fragment-checked).
    pub slugs: Vec<String>,
    /// The body was not scanned ([`ParseOptions::skip_body`]): body links
    /// and slugs are still to come (see [`body_links`]).
    pub body_pending: bool,
}

/// Inputs that shape per-file findings.
pub struct ParseOptions<'a> {
    /// The resolved configuration.
    pub config: &'a Config,
    /// The instant for the `stale` lint; `None` disables it.
    pub now: Option<Instant>,
    /// Keep the whole frontmatter mapping on the concept.
    pub keep_frontmatter: bool,
    /// Compute every concept's body digest (otherwise only where one is
    /// recorded; see [`crate::bundle::Bundle::digests_needed`]).
    pub digests: bool,
    /// Make lint findings and ranges. Off for a model that only answers
    /// queries (conformance findings are always made: they decide what is a
    /// concept).
    pub diagnostics: bool,
    /// Leave the Markdown body unscanned (no body links, slugs or footnote
    /// findings) for a query model that fills them in on demand.
    pub skip_body: bool,
}

impl<'a> ParseOptions<'a> {
    /// The options of a validation run at `now`: every finding, no
    /// frontmatter kept, body digests only where one is recorded (the
    /// bundle fills in the rest a check needs: [`crate::bundle::Bundle::assemble`]).
    pub fn validation(config: &'a Config, now: Option<Instant>) -> ParseOptions<'a> {
        ParseOptions {
            config,
            now,
            keep_frontmatter: false,
            digests: false,
            diagnostics: true,
            skip_body: false,
        }
    }
}

/// True when `path`'s file name is a reserved name (`index.md`, `log.md`).
pub fn is_reserved(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name == "index.md" || name == "log.md"
}

/// Lowercase hex.
pub fn hex(bytes: &[u8]) -> String {
    const H: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        s.push(H[(b >> 4) as usize] as char);
        s.push(H[(b & 15) as usize] as char);
    }
    s
}

/// The first occurrence of `needle` in `hay`. Frontmatter is short, and
/// building a substring searcher for each link costs more there than
/// checking each place its first byte occurs.
fn find_short(hay: &[u8], needle: &[u8]) -> Option<usize> {
    if hay.len() > 4096 {
        return memchr::memmem::find(hay, needle);
    }
    let (&first, rest) = needle.split_first()?;
    memchr::memchr_iter(first, hay).find(|&i| hay[i + 1..].starts_with(rest))
}

/// The body digest of reference §8.1: line endings normalised to `\n`,
/// trailing whitespace removed, SHA-256.
pub fn body_digest(body: &str) -> [u8; 32] {
    // JavaScript's `\s`, which the recorded digests were computed with (it
    // differs from Unicode White_Space at U+0085 and U+FEFF).
    let trimmed = body.trim_end_matches(crate::kb::text::is_js_whitespace);
    let mut h = Sha256::new();
    if !trimmed.contains('\r') {
        h.update(trimmed.as_bytes());
    } else {
        let b = trimmed.as_bytes();
        let mut i = 0;
        let mut start = 0;
        while i < b.len() {
            if b[i] == b'\r' {
                h.update(&b[start..i]);
                h.update(b"\n");
                if b.get(i + 1) == Some(&b'\n') {
                    i += 1;
                }
                start = i + 1;
            }
            i += 1;
        }
        h.update(&b[start..]);
    }
    h.finalize().into()
}

/// The body links (in document order, without ranges) and heading slugs of
/// a file's text: what a parse with [`ParseOptions::skip_body`] left out.
pub fn body_links(text: &str) -> (Vec<Link>, Vec<String>) {
    let body = match frontmatter::split(text) {
        Split::Present(b) => &text[b.body_start..],
        Split::Absent { body_start } => &text[body_start..],
        Split::Unclosed { .. } => "",
    };
    let scan = markdown::scan_body(body);
    let links = scan
        .links
        .into_iter()
        .map(|l| Link {
            raw: l.dest,
            source: LinkSource::Body,
            field: None,
            range: None,
        })
        .collect();
    (links, scan.slugs)
}

/// The decoded frontmatter mapping of a file's text, when it has one.
pub fn frontmatter_of(text: &str) -> Option<Map<String, Value>> {
    let Split::Present(b) = frontmatter::split(text) else {
        return None;
    };
    match crate::yaml::parse(&text[b.yaml_start..b.yaml_end]) {
        Ok(Value::Object(m)) => Some(m),
        _ => None,
    }
}

/// The body digest of a whole file's text (the body follows its frontmatter).
pub fn file_digest(text: &str) -> [u8; 32] {
    let body = match frontmatter::split(text) {
        Split::Present(b) => &text[b.body_start..],
        Split::Absent { body_start } => &text[body_start..],
        Split::Unclosed { .. } => text,
    };
    body_digest(body)
}

/// [`file_digest`] as lowercase hex.
pub fn file_body_digest(text: &str) -> String {
    hex(&file_digest(text))
}

struct Ctx<'a> {
    path: &'a str,
    text: &'a str,
    /// `None` when diagnostics are not wanted: ranges are then skipped.
    /// The line table is built by the first range asked for (most files
    /// have no finding).
    pos: Option<OnceCell<Positions<'a>>>,
    cfg: &'a Config,
    diags: Vec<Diagnostic>,
}

impl Ctx<'_> {
    fn range(&self, start: usize, end: usize) -> Option<Range> {
        self.pos.as_ref().map(|p| {
            p.get_or_init(|| Positions::new(self.text))
                .range(start, end)
        })
    }

    fn lint(&mut self, code: &'static str, message: String, range: Option<Range>) {
        if self.pos.is_none() {
            return;
        }
        if let Some(sev) = self.cfg.severity(code) {
            self.diags.push(Diagnostic {
                source: Tier::Lint,
                file: self.path.to_string(),
                code,
                severity: sev,
                message,
                range,
            });
        }
    }

    fn conformance(&mut self, code: &'static str, message: String, range: Option<Range>) {
        self.diags
            .push(Diagnostic::conformance(self.path, code, message, range));
    }
}

/// Parses one Markdown file. Never fails: problems become diagnostics.
pub fn parse(path: &str, bytes: &[u8], opts: &ParseOptions) -> Document {
    let name = path.rsplit('/').next().unwrap_or(path);
    let kind = match name {
        "index.md" => Kind::Index,
        "log.md" => Kind::Log,
        _ => Kind::Concept,
    };
    let mut doc = Document {
        path: path.to_string(),
        kind,
        concept: None,
        diagnostics: vec![],
        links: vec![],
        slugs: vec![],
        body_pending: false,
    };
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            if kind == Kind::Concept {
                doc.kind = Kind::Undecodable;
            }
            doc.diagnostics.push(Diagnostic::conformance(
                path,
                "frontmatter-unparseable",
                format!(
                    "file is not valid UTF-8 (invalid byte at offset {})",
                    e.valid_up_to()
                ),
                None,
            ));
            return doc;
        }
    };
    let mut cx = Ctx {
        path,
        text,
        pos: opts.diagnostics.then(OnceCell::new),
        cfg: opts.config,
        diags: vec![],
    };
    let split = frontmatter::split(text);
    let (block, body_start) = match &split {
        Split::Unclosed { open } => {
            let r = cx.range(*open, open + 3);
            cx.conformance(
                "frontmatter-unclosed",
                "frontmatter opens with --- but never closes".into(),
                r,
            );
            if kind == Kind::Concept {
                doc.kind = Kind::Undecodable;
            }
            doc.diagnostics = cx.diags;
            return doc;
        }
        Split::Absent { body_start } => (None, *body_start),
        Split::Present(b) => (Some(b.clone()), b.body_start),
    };
    let body = &text[body_start..];
    match kind {
        Kind::Log => {
            if let Some(b) = &block {
                let r = cx.range(b.open, b.close_end);
                cx.lint(
                    "log-frontmatter",
                    "log.md carries frontmatter; the spec defines none".into(),
                    r,
                );
            }
            check_log(&mut cx, body, body_start);
        }
        Kind::Index => {
            if let Some(b) = &block {
                check_index_frontmatter(&mut cx, b);
            }
            check_index(&mut cx, body, body_start);
        }
        _ => {
            let Some(b) = block else {
                cx.conformance(
                    "frontmatter-missing",
                    "concept files must start with a --- frontmatter block".into(),
                    None,
                );
                doc.kind = Kind::Undecodable;
                doc.diagnostics = cx.diags;
                return doc;
            };
            let mut held = None;
            match decode_yaml(&mut cx, &b, text, &mut held) {
                None => doc.kind = Kind::Undecodable,
                Some(value) => match decode_concept(&mut cx, &b, value, body, opts) {
                    None => doc.kind = Kind::Undecodable,
                    Some((concept, links, slugs)) => {
                        doc.concept = Some(concept);
                        doc.links = links;
                        doc.slugs = slugs;
                        doc.body_pending = opts.skip_body;
                    }
                },
            }
        }
    }
    doc.diagnostics = cx.diags;
    doc
}

/// Parses the YAML of block `b` of `text` (the file's, which `cx` holds
/// too): the fast reader when it can, else the full parser, whose value is
/// kept in `held` for the node to borrow. A failure is
/// `frontmatter-unparseable`.
fn decode_yaml<'x>(
    cx: &mut Ctx,
    b: &frontmatter::Block,
    text: &'x str,
    held: &'x mut Option<Value>,
) -> Option<Node<'x>> {
    let yaml = &text[b.yaml_start..b.yaml_end];
    if let Some(n) = crate::yaml::fast_node(yaml) {
        return Some(n);
    }
    match crate::yaml::full(yaml) {
        Ok(v) => Some(Node::from_value(held.insert(v))),
        Err(e) => {
            let msg = yaml_message(&e);
            let range = e
                .location()
                .and_then(|l| offset_of(yaml, l.line() as usize, l.column() as usize))
                .and_then(|o| {
                    let s = b.yaml_start + o;
                    let end = cx.text[s..]
                        .find(['\n', '\r'])
                        .map_or(cx.text.len(), |x| s + x)
                        .max(s + 1)
                        .min(b.yaml_end.max(s));
                    cx.range(s, end)
                })
                .or_else(|| cx.range(b.open, b.close_end));
            cx.conformance("frontmatter-unparseable", msg, range);
            None
        }
    }
}

fn yaml_message(e: &serde_saphyr::Error) -> String {
    let full = e.without_snippet().to_string();
    let first = full.lines().next().unwrap_or("").trim();
    let first = first.strip_prefix("error: ").unwrap_or(first);
    // Drop the "line L column C: " prefix: the range says where.
    let msg = match first.split_once(": ") {
        Some((loc, rest)) if loc.starts_with("line ") => rest,
        _ => first,
    };
    // The range says where; the text need not repeat it.
    let msg = match msg.rfind(" at line ") {
        Some(i) if msg[i + 9..].contains(", column ") => &msg[..i],
        _ => msg,
    };
    let msg = msg
        .strip_suffix(", set DuplicateKeyPolicy in Options if acceptable")
        .unwrap_or(msg);
    if msg.starts_with("budget breached") {
        format!("YAML expands past the safety budget ({msg}); aliases may be nested too deeply")
    } else {
        format!("invalid YAML: {msg}")
    }
}

/// Byte offset of 1-based (line, column) in `s`.
fn offset_of(s: &str, line: usize, column: usize) -> Option<usize> {
    let (ls, le, _) = crate::text::lines(s).nth(line.checked_sub(1)?)?;
    let col = column.saturating_sub(1);
    Some(
        s[ls..le]
            .char_indices()
            .nth(col)
            .map_or(le, |(i, _)| ls + i),
    )
}

/// Byte span (relative to the YAML text) of a top-level key's value, or of
/// the key line when the value is empty.
fn key_span(yaml: &str, key: &str) -> Option<(usize, usize)> {
    let mut lines = crate::text::lines(yaml).map(|(s, e, _)| (s, e));
    while let Some((s, e)) = lines.next() {
        let line = &yaml[s..e];
        let Some(rest) = strip_key(line, key) else {
            continue;
        };
        let Some(val) = rest.trim_start_matches([' ', '\t']).strip_prefix(':') else {
            continue;
        };
        let vt = val.trim_start();
        let mut start = if vt.is_empty() || vt.starts_with('#') {
            None
        } else {
            Some(e - vt.len())
        };
        let mut end = s + line.trim_end().len();
        for (s2, e2) in lines.clone() {
            let l2 = &yaml[s2..e2];
            let blank = l2.trim().is_empty();
            if !(blank || l2.starts_with([' ', '\t', '-', '#'])) {
                break;
            }
            if blank || l2.trim_start().starts_with('#') {
                continue;
            }
            if start.is_none() {
                start = Some(s2 + (l2.len() - l2.trim_start().len()));
            }
            end = s2 + l2.trim_end().len();
        }
        return Some(match start {
            Some(st) => (st, end.max(st)),
            None => (s, s + line.trim_end().len()),
        });
    }
    None
}

fn strip_key<'a>(line: &'a str, key: &str) -> Option<&'a str> {
    if let Some(r) = line.strip_prefix(key) {
        return Some(r);
    }
    for q in ['"', '\''] {
        if let Some(r) = line
            .strip_prefix(q)
            .and_then(|l| l.strip_prefix(key))
            .and_then(|l| l.strip_prefix(q))
        {
            return Some(r);
        }
    }
    None
}

fn check_index_frontmatter(cx: &mut Ctx, b: &frontmatter::Block) {
    let root = !cx.path.contains('/');
    let r = cx.range(b.open, b.close_end);
    if !root {
        cx.conformance(
            "index-frontmatter",
            "index.md below the bundle root must not carry frontmatter".into(),
            r,
        );
        return;
    }
    let text = cx.text;
    let mut held = None;
    let Some(v) = decode_yaml(cx, b, text, &mut held) else {
        return;
    };
    let ok = match &v {
        Node::Null => true,
        Node::Object(m) => m
            .iter()
            .all(|(k, v)| k == "okf_version" && matches!(v, Node::String(_))),
        _ => false,
    };
    if !ok {
        cx.conformance(
            "index-frontmatter",
            "root index.md frontmatter may only carry a string \"okf_version\"".into(),
            r,
        );
    }
}

fn check_index(cx: &mut Ctx, body: &str, base: usize) {
    let mut section: Option<String> = None;
    for (block, span) in markdown::blocks(body) {
        match block {
            Block::Heading(level, text) => {
                section = Some(format!("{} {text}", "#".repeat(level as usize)))
            }
            _ if section.is_none() => {}
            Block::List(items) => {
                for it in items {
                    if !matches!(it.start, ItemStart::Text { link: Some(_), .. }) {
                        let r = cx.range(base + it.span.start, base + it.span.end);
                        cx.conformance("index-malformed", "index entry has no link".into(), r);
                    }
                }
            }
            Block::Other(found) => {
                let r = cx.range(base + span.start, base + span.end);
                let heading = section.clone().unwrap_or_default();
                cx.conformance(
                    "index-malformed",
                    format!("expected a list under \"{heading}\", found {found}"),
                    r,
                );
            }
        }
    }
}

fn check_log(cx: &mut Ctx, body: &str, base: usize) {
    // None: before any H2; Some(None): under an invalid heading (skipped);
    // Some(Some(date)): under a valid date heading.
    let mut group: Option<Option<String>> = None;
    for (block, span) in markdown::blocks(body) {
        let r = cx.range(base + span.start, base + span.end);
        match block {
            Block::Heading(2, text) => {
                if time::is_date_shape(&text) {
                    group = Some(Some(text));
                } else {
                    cx.conformance(
                        "log-heading-invalid",
                        format!("log heading \"{text}\" is not a YYYY-MM-DD date"),
                        r,
                    );
                    group = Some(None);
                }
            }
            Block::Heading(1, _) if group.is_none() => {}
            _ if matches!(group, Some(None)) => {}
            Block::List(items) => match &group {
                None => cx.conformance(
                    "log-malformed",
                    "log entries appear before any date heading".into(),
                    r,
                ),
                Some(_) => {
                    for it in items {
                        if it.start == ItemStart::Other {
                            let r = cx.range(base + it.span.start, base + it.span.end);
                            cx.conformance(
                                "log-malformed",
                                "log item does not start with text".into(),
                                r,
                            );
                        }
                    }
                }
            },
            _ if group.is_none() => {}
            other => {
                let found = match other {
                    Block::Heading(..) => "heading",
                    Block::Other(n) => n,
                    Block::List(_) => "list",
                };
                let date = match &group {
                    Some(Some(d)) => d.clone(),
                    _ => String::new(),
                };
                cx.conformance(
                    "log-malformed",
                    format!("expected a list under \"## {date}\", found {found}"),
                    r,
                );
            }
        }
    }
}

/// `parent[i]` (or `parent` alone): a field path written only when a
/// message needs it, so reading a valid concept formats nothing.
#[derive(Clone, Copy)]
struct Item<'a>(&'a dyn Display, Option<usize>);

impl Display for Item<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            Some(i) => write!(f, "{}[{i}]", self.0),
            None => self.0.fmt(f),
        }
    }
}

/// `parent.key`, written only when a message needs it.
#[derive(Clone, Copy)]
struct Field<'a>(&'a dyn Display, &'a str);

impl Display for Field<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.0, self.1)
    }
}

struct Fam<'a, 'b> {
    cx: &'a mut Ctx<'b>,
    block: &'a frontmatter::Block,
    whole: Option<Range>,
}

impl Fam<'_, '_> {
    fn key_range(&self, key: &str) -> Option<Range> {
        let yaml = &self.cx.text[self.block.yaml_start..self.block.yaml_end];
        match key_span(yaml, key) {
            Some((s, e)) => self
                .cx
                .range(self.block.yaml_start + s, self.block.yaml_start + e),
            None => self.whole,
        }
    }

    fn invalid(&mut self, top: &str, path: impl Display, msg: &str) {
        let r = self.key_range(top);
        self.cx.lint("family-invalid", format!("{path}: {msg}"), r);
    }

    fn string(&mut self, top: &str, path: impl Display + Copy, v: &Node) -> Option<String> {
        self.str(top, path, v).map(str::to_string)
    }

    /// [`Fam::string`], borrowed.
    fn str<'v>(&mut self, top: &str, path: impl Display + Copy, v: &'v Node) -> Option<&'v str> {
        match v {
            Node::String(s) => Some(s),
            other => {
                self.invalid(
                    top,
                    path,
                    &format!("expected a string, got {}", other.kind()),
                );
                None
            }
        }
    }

    fn timestamp(&mut self, top: &str, path: impl Display + Copy, v: &Node) -> Option<Instant> {
        let s = self.str(top, path, v)?;
        match time::parse(s) {
            Ok(Parsed::Instant(i)) => Some(i),
            Ok(Parsed::DateOnly(i)) => {
                let r = self.key_range(top);
                self.cx.lint(
                    "timestamp-date-only",
                    format!(
                        "{path}: \"{s}\" is a date without a time or offset; read as {s}T00:00:00Z"
                    ),
                    r,
                );
                Some(i)
            }
            Err(e) => {
                self.invalid(top, path, &e);
                None
            }
        }
    }

    fn actor(&mut self, top: &str, path: impl Display + Copy, v: &Node) -> Option<String> {
        let s = self.string(top, path, v)?;
        match actor::classify(&s) {
            None => {
                self.invalid(top, path, actor::ACTOR_MESSAGE);
                None
            }
            Some(ActorKind::Other) => {
                let r = self.key_range(top);
                self.cx.lint(
                    "actor-prefix-unknown",
                    format!("Actor \"{s}\" uses an unknown prefix; expected human:<id>, process:<id>, or <producer>/<version>"),
                    r,
                );
                Some(s)
            }
            Some(_) => Some(s),
        }
    }

    fn mapping<'v, 'x>(
        &mut self,
        top: &str,
        path: impl Display,
        v: &'v Node<'x>,
    ) -> Option<&'v Mapping<'x>> {
        match v {
            Node::Object(m) => Some(m),
            other => {
                self.invalid(
                    top,
                    path,
                    &format!("expected a mapping, got {}", other.kind()),
                );
                None
            }
        }
    }

    fn string_list(
        &mut self,
        top: &str,
        path: impl Display + Copy,
        v: &Node,
    ) -> Option<Vec<String>> {
        let Node::Array(a) = v else {
            self.invalid(
                top,
                path,
                &format!("expected a list of strings, got {}", v.kind()),
            );
            return None;
        };
        let mut out = vec![];
        let mut ok = true;
        for (i, x) in a.iter().enumerate() {
            match self.string(top, Item(&path, Some(i)), x) {
                Some(s) => out.push(s),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn usage_window(&mut self, top: &str, path: impl Display + Copy, v: &Node) {
        if let Some(m) = self.mapping(top, path, v) {
            for k in ["from", "to"] {
                match m.get(k) {
                    Some(x) => {
                        self.timestamp(top, Field(&path, k), x);
                    }
                    None => self.invalid(top, Field(&path, k), "is required"),
                }
            }
        }
    }
}

type Decoded = (Concept, Vec<Link>, Vec<String>);

fn decode_concept(
    cx: &mut Ctx,
    b: &frontmatter::Block,
    value: Node,
    body: &str,
    opts: &ParseOptions,
) -> Option<Decoded> {
    let Node::Object(map) = value else {
        cx.conformance("type-missing", "frontmatter is not a mapping".into(), None);
        return None;
    };
    let type_name = match map.get("type") {
        Some(Node::String(s)) if !s.trim().is_empty() => s.to_string(),
        Some(Node::String(_)) => {
            cx.conformance("type-missing", "`type` must not be empty".into(), None);
            return None;
        }
        _ => {
            cx.conformance(
                "type-missing",
                "`type` must be a non-empty string".into(),
                None,
            );
            return None;
        }
    };
    let cfg = opts.config;
    let whole = cx.range(b.open, b.close_end);
    let id = cx.path.strip_suffix(".md").unwrap_or(cx.path).to_string();
    let stem = id.rsplit('/').next().unwrap_or(&id).to_string();
    let yaml_start = b.yaml_start;
    let yaml_end = b.yaml_end;
    let mut f = Fam {
        cx,
        block: b,
        whole,
    };
    let mut links: Vec<Link> = vec![];
    let mut fm_link = |f: &mut Fam, raw: &str, field: &'static str, top: &str| {
        let yaml = &f.cx.text[yaml_start..yaml_end];
        let found = find_short(yaml.as_bytes(), raw.as_bytes());
        let range = match found.filter(|_| !raw.is_empty()) {
            Some(o) => f.cx.range(yaml_start + o, yaml_start + o + raw.len()),
            None => f.key_range(top),
        };
        links.push(Link {
            raw: raw.to_string(),
            source: LinkSource::Frontmatter,
            field: Some(field),
            range,
        });
    };

    let title = map.get("title").and_then(|v| f.string("title", "title", v));
    let description = map
        .get("description")
        .and_then(|v| f.string("description", "description", v));
    let mut surface_glob = None;
    if let Some(v) = map.get("resource") {
        if let Some(r) = f.string("resource", "resource", v) {
            if type_name == "Surface" {
                // A Surface's resource is a glob, checked by surface-unmatched.
                surface_glob = Some((r, f.key_range("resource")));
            } else {
                fm_link(&mut f, &r, "resource", "resource");
            }
        }
    }
    let tags = map
        .get("tags")
        .and_then(|v| f.string_list("tags", "tags", v))
        .unwrap_or_default();
    if let Some(v) = map.get("sources") {
        match v {
            Node::Array(items) => {
                for (i, it) in items.iter().enumerate() {
                    let p = Item(&"sources", Some(i));
                    let Some(m) = f.mapping("sources", p, it) else {
                        continue;
                    };
                    match m.get("resource") {
                        Some(r) => {
                            if let Some(r) = f.string("sources", Field(&p, "resource"), r) {
                                fm_link(&mut f, &r, "sources.resource", "sources");
                            }
                        }
                        None => f.invalid("sources", Field(&p, "resource"), "is required"),
                    }
                    for k in ["id", "title"] {
                        if let Some(x) = m.get(k) {
                            f.string("sources", Field(&p, k), x);
                        }
                    }
                    if let Some(x) = m.get("author") {
                        f.actor("sources", Field(&p, "author"), x);
                    }
                    if let Some(x) = m.get("usage_count") {
                        let ok = x.is_number()
                            || x.as_str().is_some_and(|s| s.trim().parse::<f64>().is_ok());
                        if !ok {
                            f.invalid(
                                "sources",
                                Field(&p, "usage_count"),
                                &format!("expected a number, got {}", x.kind()),
                            );
                        }
                    }
                    if let Some(x) = m.get("last_modified") {
                        f.timestamp("sources", Field(&p, "last_modified"), x);
                    }
                    if let Some(x) = m.get("usage_window") {
                        f.usage_window("sources", Field(&p, "usage_window"), x);
                    }
                }
            }
            other => f.invalid(
                "sources",
                "sources",
                &format!("expected a list, got {}", other.kind()),
            ),
        }
    }
    if let Some(v) = map.get("usage_window") {
        f.usage_window("usage_window", "usage_window", v);
    }
    let mut generated = None;
    if let Some(v) = map.get("generated") {
        if let Some(m) = f.mapping("generated", "generated", v) {
            let by = match m.get("by") {
                Some(x) => f.actor("generated", "generated.by", x),
                None => {
                    f.invalid("generated", "generated.by", "is required");
                    None
                }
            };
            let at = m
                .get("at")
                .and_then(|x| f.timestamp("generated", "generated.at", x));
            let sha = match m.get("body_sha256") {
                Some(Node::String(s))
                    if s.len() == 64 && s.bytes().all(|c| c.is_ascii_hexdigit()) =>
                {
                    Some(s.to_ascii_lowercase())
                }
                Some(x) => {
                    f.invalid(
                        "generated",
                        "generated.body_sha256",
                        &format!("expected 64 hex digits, got {}", short_json(x)),
                    );
                    None
                }
                None => None,
            };
            if let Some(by) = by {
                generated = Some(Generated {
                    by,
                    at,
                    body_sha256: sha,
                });
            }
        }
    } else if let Some(v) = map.get("timestamp") {
        if let Some(at) = f.timestamp("timestamp", "timestamp", v) {
            let r = f.key_range("timestamp");
            f.cx.lint(
                "legacy-timestamp",
                "legacy `timestamp` used as `generated.at`".into(),
                r,
            );
            generated = Some(Generated {
                by: "process:legacy-timestamp".into(),
                at: Some(at),
                body_sha256: None,
            });
        }
    }
    let mut verified = vec![];
    if let Some(v) = map.get("verified") {
        let entries: Vec<(Option<usize>, &Node)> = match v {
            Node::Array(a) => a.iter().enumerate().map(|(i, x)| (Some(i), x)).collect(),
            Node::Object(_) => vec![(None, v)],
            other => {
                f.invalid(
                    "verified",
                    "verified",
                    &format!(
                        "expected a mapping or a list of mappings, got {}",
                        other.kind()
                    ),
                );
                vec![]
            }
        };
        for (i, e) in entries {
            let p = Item(&"verified", i);
            let Some(m) = f.mapping("verified", p, e) else {
                continue;
            };
            let by = match m.get("by") {
                Some(x) => f.actor("verified", Field(&p, "by"), x),
                None => {
                    f.invalid("verified", Field(&p, "by"), "is required");
                    None
                }
            };
            let at = match m.get("at") {
                Some(x) => f.timestamp("verified", Field(&p, "at"), x),
                None => {
                    f.invalid("verified", Field(&p, "at"), "is required");
                    None
                }
            };
            if let Some(by) = by {
                verified.push(Verification { by, at });
            }
        }
    }
    let status = match map.get("status") {
        None | Some(Node::Null) => None,
        Some(v) => match f.string("status", "status", v) {
            Some(s) => {
                if !matches!(s.as_str(), "draft" | "stable" | "deprecated" | "current") {
                    let r = f.key_range("status");
                    f.cx.lint(
                        "status-unknown",
                        format!("Status \"{s}\" is not one of draft, stable, deprecated"),
                        r,
                    );
                }
                Some(s)
            }
            None => None,
        },
    };
    let stale_after = map
        .get("stale_after")
        .and_then(|v| f.timestamp("stale_after", "stale_after", v));
    if type_name == "Attested Computation" {
        match map.get("runtime") {
            None | Some(Node::Null) => {
                let r = f.whole;
                f.cx.lint(
                    "computation-runtime-missing",
                    "`runtime` is required on an Attested Computation".into(),
                    r,
                );
            }
            Some(v) => {
                f.string("runtime", "runtime", v);
            }
        }
        if let Some(v) = map.get("parameters") {
            match v {
                Node::Array(a) => {
                    for (i, p) in a.iter().enumerate() {
                        let path = Item(&"parameters", Some(i));
                        if let Some(m) = f.mapping("parameters", path, p) {
                            for k in ["name", "type"] {
                                match m.get(k) {
                                    Some(x) => {
                                        f.string("parameters", Field(&path, k), x);
                                    }
                                    None => f.invalid("parameters", Field(&path, k), "is required"),
                                }
                            }
                            if let Some(x) = m.get("required") {
                                if !x.is_boolean() {
                                    f.invalid(
                                        "parameters",
                                        Field(&path, "required"),
                                        &format!("expected a boolean, got {}", x.kind()),
                                    );
                                }
                            }
                        }
                    }
                }
                other => f.invalid(
                    "parameters",
                    "parameters",
                    &format!("expected a list, got {}", other.kind()),
                ),
            }
        }
        if let Some(v) = map.get("computation") {
            if let Some(s) = f.string("computation", "computation", v) {
                fm_link(&mut f, &s, "computation", "computation");
            }
        }
        if let Some(v) = map.get("executor") {
            if let Some(m) = f.mapping("executor", "executor", v) {
                match m.get("resource") {
                    Some(r) => {
                        if let Some(s) = f.string("executor", "executor.resource", r) {
                            fm_link(&mut f, &s, "executor.resource", "executor");
                        }
                    }
                    None => f.invalid("executor", "executor.resource", "is required"),
                }
                if let Some(r) = m.get("receipt") {
                    f.string_list("executor", "executor.receipt", r);
                }
            }
        }
        if let Some(v) = map.get("attester") {
            if let Some(m) = f.mapping("attester", "attester", v) {
                match m.get("resource") {
                    Some(r) => {
                        if let Some(s) = f.string("attester", "attester.resource", r) {
                            fm_link(&mut f, &s, "attester.resource", "attester");
                        }
                    }
                    None => f.invalid("attester", "attester.resource", "is required"),
                }
            }
        }
    }

    let publication = (type_name == "Publication").then(|| PublicationSpec {
        surface: map.get("surface").map(Node::to_value),
        surface_range: f.key_range("surface"),
        renders: match map.get("renders") {
            Some(Node::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|e| {
                    let path = e.get("path").and_then(Node::as_str)?;
                    let sha = match e.get("body_sha256") {
                        None | Some(Node::Null) => None,
                        Some(Node::String(s)) => Some(s.to_ascii_lowercase()),
                        Some(_) => return None,
                    };
                    Some((path.to_string(), sha))
                })
                .collect::<Option<Vec<_>>>(),
            _ => None,
        },
        renders_range: f.key_range("renders"),
    });

    // Vocabulary and requirement lints.
    if !cfg.types.contains_key(&type_name) {
        let r = f.key_range("type");
        f.cx.lint(
            "unknown-type",
            format!("Type \"{type_name}\" is not declared in [types]"),
            r,
        );
    }
    let decl = cfg.types.get(&type_name);
    let mut required: Vec<&String> = cfg.concepts_required.iter().collect();
    if let Some(extra) = decl.and_then(|d| d.required.as_ref()) {
        for k in extra {
            if !required.contains(&k) {
                required.push(k);
            }
        }
    }
    for k in required {
        if map.get(k.as_str()).is_none_or(Node::is_null) {
            let r = f.whole;
            f.cx.lint(
                "required-key-missing",
                format!("Required key \"{k}\" is missing"),
                r,
            );
        }
    }
    if let Some(d) = decl {
        for (k, fd) in &d.fields {
            let (Some(values), Some(v)) = (&fd.values, map.get(k.as_str())) else {
                continue;
            };
            if v.is_null() {
                continue;
            }
            let ok = v
                .as_str()
                .is_some_and(|s| values.iter().any(|(name, _)| name == s));
            if !ok {
                let names: Vec<&str> = values.iter().map(|(n, _)| n.as_str()).collect();
                let r = f.key_range(k);
                f.cx.lint(
                    "field-value-unknown",
                    format!(
                        "Value {} for \"{k}\" is not one of: {}",
                        short_json(v),
                        names.join(", ")
                    ),
                    r,
                );
            }
        }
        if d.require_verified == Some(true)
            && status.as_deref() != Some("draft")
            && verified.is_empty()
        {
            let r = f.key_range("verified").or(f.whole);
            f.cx.lint(
                "require-verified-unmet",
                format!("Type \"{type_name}\" requires a verified entry"),
                r,
            );
        }
    }
    if status.is_none() && verified.is_empty() {
        let r = f.whole;
        f.cx.lint(
            "status-missing",
            "Concept has neither a status nor a verified entry; set status (draft for unreviewed work)".into(),
            r,
        );
    }
    let stale_range = match stale_after {
        Some(_) if opts.diagnostics => f.key_range("stale_after"),
        _ => None,
    };
    if let Some(d) = stale_finding(f.cx.path, f.cx.cfg, opts.now, stale_after, stale_range) {
        if f.cx.pos.is_some() {
            f.cx.diags.push(d);
        }
    }
    let _ = f;

    // Body: links, headings, footnotes, digest.
    let body_start = b.body_start;
    let scan = if opts.skip_body {
        markdown::BodyScan::default()
    } else {
        markdown::scan_body(body)
    };
    for l in &scan.links {
        links.push(Link {
            raw: l.dest.clone(),
            source: LinkSource::Body,
            field: None,
            range: cx.range(body_start + l.span.start, body_start + l.span.end),
        });
    }
    let tokens = if cx.pos.is_some() {
        markdown::footnote_tokens(body, &scan.code)
    } else {
        vec![]
    };
    if !tokens.is_empty() {
        let source_ids: Vec<&str> = match map.get("sources") {
            Some(Node::Array(a)) => a
                .iter()
                .filter_map(|s| s.get("id").and_then(Node::as_str))
                .collect(),
            _ => vec![],
        };
        let defs = markdown::footnote_definitions(body);
        let mut seen: Vec<&str> = vec![];
        for (label, span) in &tokens {
            if seen.contains(&label.as_str()) {
                continue;
            }
            seen.push(label);
            let r = cx.range(body_start + span.start, body_start + span.end);
            if !source_ids.is_empty() && !source_ids.contains(&label.as_str()) {
                cx.lint(
                    "footnote-source-unknown",
                    format!("Footnote label \"{label}\" matches no sources[].id"),
                    r,
                );
            }
            if !defs.contains(label) {
                cx.lint(
                    "footnote-undefined",
                    format!("Footnote \"{label}\" is referenced but has no [^{label}]: definition"),
                    r,
                );
            }
        }
    }
    let recorded = generated.as_ref().and_then(|g| g.body_sha256.as_ref());
    let digest = (opts.digests || recorded.is_some()).then(|| body_digest(body));
    if let (Some(rec), Some(d)) = (recorded, &digest) {
        {
            let now_hex = hex(d);
            if *rec != now_hex {
                let yaml = &cx.text[yaml_start..yaml_end];
                let r = match yaml
                    .find(rec.as_str())
                    .or_else(|| yaml.to_ascii_lowercase().find(rec.as_str()))
                {
                    Some(o) => cx.range(yaml_start + o, yaml_start + o + rec.len()),
                    None => whole,
                };
                cx.lint(
                    "generated-at-drift",
                    format!(
                        "generated.body_sha256 is {}…; the body now hashes to {}…, so it changed after generated.at; re-stamp generated.at and body_sha256",
                        &rec[..12],
                        &now_hex[..12]
                    ),
                    r,
                );
            }
        }
    }
    let concept = Concept {
        id,
        type_name,
        title: title.unwrap_or(stem),
        description,
        status,
        tags,
        generated,
        verified,
        stale_after,
        stale_range,
        frontmatter: opts.keep_frontmatter.then(|| map.to_map()),
        body_digest: digest,
        surface_glob,
        publication,
    };
    Some((concept, links, scan.slugs))
}

/// The `stale` finding of a concept of `path` whose `stale_after` (written
/// at `range`) has passed at `now`, if the config reports it.
fn stale_finding(
    path: &str,
    cfg: &Config,
    now: Option<Instant>,
    stale_after: Option<Instant>,
    range: Option<Range>,
) -> Option<Diagnostic> {
    let (now, sa) = (now?, stale_after?);
    if now < sa {
        return None;
    }
    Some(Diagnostic {
        source: Tier::Lint,
        file: path.to_string(),
        code: "stale",
        severity: cfg.severity("stale")?,
        message: format!("Concept is stale since {}", time::format_millis(sa)),
        range,
    })
}

/// Makes the `stale` finding of `d` (parsed with diagnostics) the one a
/// parse at `now` makes, without parsing it again: it is the only finding
/// of a parse that depends on `now`, so a warm run whose `now` moved
/// re-checks the concepts it concerns instead of reading them again.
pub fn retime(d: &mut Document, cfg: &Config, now: Option<Instant>) {
    d.diagnostics.retain(|x| x.code != "stale");
    if let Some(c) = &d.concept {
        d.diagnostics.extend(stale_finding(
            &d.path,
            cfg,
            now,
            c.stale_after,
            c.stale_range,
        ));
    }
}

fn short_json(v: &Node) -> String {
    let s = v.to_value().to_string();
    if s.chars().count() > 80 {
        let t: String = s.chars().take(80).collect();
        format!("{t}…")
    } else {
        s
    }
}
