//! One document compiled for the read model: its manifest cells, search
//! title, link candidates and sections. Depends only on `(path, bytes)`, so
//! a store keeps it beside the bytes and never parses an unchanged document
//! again.

use super::text::{self, Section};
use crate::config::Config;
use crate::doc::{self, LinkSource, ParseOptions};
use crate::frontmatter::{self, Split};
use crate::paths::{dirname, is_url, normalize_cow, percent_decode_cow};
use crate::time;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::sync::OnceLock;

/// A compiled document (reference langonrock §3.2, SPEC §2).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Compiled {
    /// A navigation document (`index.md`, `log.md`): stored, never a concept.
    #[serde(default, skip_serializing_if = "is_false")]
    pub nav: bool,
    /// The `kind` cell: `type` slugged, `-` when unusable.
    #[serde(default)]
    pub kind: String,
    /// The `status` cell as stored (`-` for current); `stale` is applied at
    /// read time.
    #[serde(default)]
    pub status: String,
    /// The `grain` cell.
    #[serde(default)]
    pub grain: String,
    /// The one-line summary.
    #[serde(default)]
    pub summary: String,
    /// The title searched with the id (frontmatter `title`, else the first
    /// heading); empty when none.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub title: String,
    /// `stale_after` in milliseconds since the epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stale_after: Option<i64>,
    /// Outgoing links: for each, the bundle paths to probe in order
    /// (reference okfit §5.2); the first one that exists decides.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub links: Vec<Vec<String>>,
    /// Byte offset of the body in the source.
    #[serde(default)]
    pub body_start: u32,
    /// Sections of the body (UTF-16 offsets within the body).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sections: Vec<Section>,
    /// More words the concept is found by: its `aliases`, `tags` and
    /// `keywords` (top level or in an `x-` extension map) and its whole
    /// description, flattened to one line.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub keywords: String,
}

fn is_false(b: &bool) -> bool {
    !*b
}

fn default_config() -> &'static Config {
    static CFG: OnceLock<Config> = OnceLock::new();
    CFG.get_or_init(Config::default)
}

impl Compiled {
    /// A compact text form for storage (fast to read back; see
    /// [`Compiled::decode`]). Tabs, line feeds and the separators U+001E
    /// and U+001F never occur in cells (they are flattened) or in stored
    /// paths, so they delimit.
    pub fn encode(&self) -> String {
        fn clean(s: &str) -> std::borrow::Cow<'_, str> {
            if s.contains(['\t', '\n', '\u{1e}', '\u{1f}']) {
                s.replace(['\t', '\n', '\u{1e}', '\u{1f}'], " ").into()
            } else {
                s.into()
            }
        }
        let mut out = String::with_capacity(256);
        out.push_str(if self.nav { "1" } else { "0" });
        for cell in [
            &self.kind,
            &self.status,
            &self.grain,
            &self.summary,
            &self.title,
        ] {
            out.push('\t');
            out.push_str(&clean(cell));
        }
        out.push('\t');
        if let Some(s) = self.stale_after {
            out.push_str(&s.to_string());
        }
        out.push('\t');
        out.push_str(&self.body_start.to_string());
        if !self.keywords.is_empty() {
            out.push('\t');
            out.push_str(&clean(&self.keywords));
        }
        out.push('\n');
        let mut first = true;
        for link in &self.links {
            let cands: Vec<&String> = link
                .iter()
                .filter(|c| !c.contains(['\t', '\n', '\u{1e}', '\u{1f}']))
                .collect();
            if cands.is_empty() {
                continue;
            }
            if !first {
                out.push('\u{1e}');
            }
            first = false;
            for (i, c) in cands.iter().enumerate() {
                if i > 0 {
                    out.push('\u{1f}');
                }
                out.push_str(c);
            }
        }
        out.push('\n');
        for (i, s) in self.sections.iter().enumerate() {
            if i > 0 {
                out.push('\t');
            }
            out.push_str(&clean(&s.name));
            out.push('\u{1f}');
            out.push_str(&s.start.to_string());
            out.push('\u{1f}');
            out.push_str(&s.end.to_string());
        }
        out
    }

    /// Reads [`Compiled::encode`]'s form; `None` when it is not one.
    pub fn decode(s: &str) -> Option<Compiled> {
        let mut lines = split_at_byte(s, b'\n');
        let head = lines.next()?;
        let links = lines.next()?;
        let sections = lines.remainder()?;
        let mut f = split_at_byte(head, b'\t');
        let nav = match f.next()? {
            "1" => true,
            "0" => false,
            _ => return None,
        };
        let kind = f.next()?.to_string();
        let status = f.next()?.to_string();
        let grain = f.next()?.to_string();
        let summary = f.next()?.to_string();
        let title = f.next()?.to_string();
        let stale_after = match f.next()? {
            "" => None,
            v => Some(v.parse().ok()?),
        };
        let body_start = f.next()?.parse().ok()?;
        let keywords = f.next().unwrap_or("").to_string();
        if f.next().is_some() {
            return None;
        }
        let links = if links.is_empty() {
            vec![]
        } else {
            split_at_byte(links, 0x1e)
                .map(|l| split_at_byte(l, 0x1f).map(str::to_string).collect())
                .collect()
        };
        let sections = if sections.is_empty() {
            vec![]
        } else {
            split_at_byte(sections, b'\t')
                .map(|x| {
                    let mut p = split_at_byte(x, 0x1f);
                    Some(Section {
                        name: p.next()?.to_string(),
                        start: p.next()?.parse().ok()?,
                        end: p.next()?.parse().ok()?,
                    })
                })
                .collect::<Option<Vec<_>>>()?
        };
        Some(Compiled {
            nav,
            kind,
            status,
            grain,
            summary,
            title,
            stale_after,
            links,
            body_start,
            sections,
            keywords,
        })
    }
}

/// The parts of `s` between occurrences of the ASCII byte `sep`, as
/// `str::split` gives them: the stored form is read with it, many short
/// fields per row, where finding a byte beats matching a `char`.
fn split_at_byte(s: &str, sep: u8) -> ByteSplit<'_> {
    ByteSplit { rest: Some(s), sep }
}

struct ByteSplit<'a> {
    rest: Option<&'a str>,
    sep: u8,
}

impl<'a> ByteSplit<'a> {
    /// What is left, unsplit (`splitn`'s last part).
    fn remainder(self) -> Option<&'a str> {
        self.rest
    }
}

impl<'a> Iterator for ByteSplit<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        let rest = self.rest?;
        // `sep` is ASCII, so either side of it is a char boundary.
        match rest.bytes().position(|b| b == self.sep) {
            Some(i) => {
                self.rest = Some(&rest[i + 1..]);
                Some(&rest[..i])
            }
            None => {
                self.rest = None;
                Some(rest)
            }
        }
    }
}

/// The body of a source text (after its frontmatter; the whole text when
/// the frontmatter never closes).
pub fn body_start(text: &str) -> usize {
    match frontmatter::split(text) {
        Split::Present(b) => b.body_start,
        Split::Absent { body_start } => body_start,
        Split::Unclosed { .. } => 0,
    }
}

/// Compiles one document. Never fails: a document that is not a concept
/// still gets cells (`-`), a summary from its body and its links.
pub fn compile(path: &str, text: &str) -> Compiled {
    let start = body_start(text);
    let body = &text[start..];
    if doc::is_reserved(path) {
        return Compiled {
            nav: true,
            kind: "-".into(),
            status: "-".into(),
            grain: "-".into(),
            summary: "-".into(),
            body_start: start as u32,
            ..Compiled::default()
        };
    }
    let opts = ParseOptions {
        config: default_config(),
        now: None,
        keep_frontmatter: true,
        digests: false,
        diagnostics: false,
        skip_body: false,
    };
    let d = doc::parse(path, text.as_bytes(), &opts);
    type Raw<'a> = Vec<(String, Option<&'a str>)>;
    let (fm, raw_links): (Option<Map<String, Value>>, Raw) = match d.concept {
        Some(c) => (
            c.frontmatter,
            d.links
                .into_iter()
                .map(|l| {
                    let field = (l.source == LinkSource::Frontmatter)
                        .then_some(l.field)
                        .flatten();
                    (l.raw, field)
                })
                .collect(),
        ),
        None => (
            doc::frontmatter_of(text),
            doc::body_links(text)
                .0
                .into_iter()
                .map(|l| (l.raw, None))
                .collect(),
        ),
    };
    let empty = Map::new();
    let fm_ref = fm.as_ref().unwrap_or(&empty);
    let get = |k: &str| fm_ref.get(k);
    let title = match get("title").and_then(Value::as_str).map(text::flatten) {
        Some(t) if !t.is_empty() => t,
        _ => text::first_heading(body).unwrap_or_default(),
    };
    let stale_after = get("stale_after")
        .and_then(Value::as_str)
        .and_then(|s| time::parse(s.trim()).ok())
        .map(|p| p.instant().0);
    let mut links = Vec::with_capacity(raw_links.len());
    for (raw, field) in &raw_links {
        let c = candidates(path, raw, *field);
        if !c.is_empty() && !links.contains(&c) {
            links.push(c);
        }
    }
    Compiled {
        nav: false,
        kind: text::kind_of(get("type")).unwrap_or_else(|| "-".into()),
        status: text::status_cell(get("status")),
        grain: match get("grain") {
            Some(Value::String(s)) => text::cell(s),
            Some(Value::Number(n)) => n.to_string(),
            _ => "-".into(),
        },
        summary: text::summary(get("description"), body, text::SUMMARY_WIDTH),
        title,
        stale_after,
        links,
        body_start: start as u32,
        sections: text::sections(body),
        keywords: keywords(fm_ref),
    }
}

/// The keyword words of a frontmatter (see [`Compiled::keywords`]).
fn keywords(fm: &Map<String, Value>) -> String {
    fn push(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::String(s) => out.push(text::flatten(s)),
            Value::Array(a) => a.iter().for_each(|x| {
                if let Value::String(s) = x {
                    out.push(text::flatten(s));
                }
            }),
            _ => {}
        }
    }
    const KEYS: [&str; 3] = ["aliases", "tags", "keywords"];
    let mut out = Vec::new();
    for (k, v) in fm {
        if KEYS.contains(&k.as_str()) {
            push(v, &mut out);
        } else if k.starts_with("x-") {
            if let Value::Object(ext) = v {
                for key in KEYS {
                    if let Some(v) = ext.get(key) {
                        push(v, &mut out);
                    }
                }
            }
        }
    }
    if let Some(Value::String(d)) = fm.get("description") {
        out.push(text::flatten(d));
    }
    out.retain(|s| !s.is_empty());
    out.join(" ")
}

/// The bundle paths a link written in `from` may name, in the order the
/// resolver of reference okfit §5.2 probes them. Empty for URLs, anchors,
/// descriptors and targets outside the bundle.
pub fn candidates(from: &str, raw: &str, field: Option<&str>) -> Vec<String> {
    let t = raw.trim();
    if is_url(t) {
        return vec![];
    }
    if field == Some("sources.resource") && t.chars().any(char::is_whitespace) {
        return vec![];
    }
    let path_part = t.split('#').next().unwrap_or("");
    let path_part = path_part.split('?').next().unwrap_or("");
    let decoded = percent_decode_cow(path_part);
    if decoded.is_empty() {
        return vec![];
    }
    let mut out = vec![];
    if let Some(stripped) = decoded.strip_prefix('/') {
        let rel = stripped.trim_start_matches('/');
        let rel = if rel.is_empty() { "index.md" } else { rel };
        if let Some(c) = normalize_cow(rel) {
            probes(&c, &mut out);
        }
        return out;
    }
    let dir = dirname(from);
    let joined = if dir.is_empty() {
        normalize_cow(&decoded).map(|c| c.into_owned())
    } else {
        crate::paths::normalize(&format!("{dir}/{decoded}"))
    };
    let Some(joined) = joined else {
        return out;
    };
    probes(&joined, &mut out);
    if !decoded.starts_with("./") && !decoded.starts_with("../") {
        if let Some(r) = normalize_cow(&decoded) {
            if r != joined {
                probes(&r, &mut out);
            }
        }
    }
    out
}

fn probes(candidate: &str, out: &mut Vec<String>) {
    if let Some(dir) = candidate.strip_suffix('/') {
        out.push(format!("{dir}/index.md"));
        return;
    }
    if candidate.is_empty() || candidate == "." {
        return;
    }
    out.push(candidate.to_string());
    let base = candidate.rsplit('/').next().unwrap_or(candidate);
    if !base.contains('.') {
        out.push(format!("{candidate}.md"));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_of_a_concept() {
        let t = "---\ntype: BigQuery Table\nstatus: deprecated\ngrain: customer_id\ndescription: Registered customers, including churned.\nstale_after: 2027-03-01\n---\n# Customers\n\nSee [orders](./orders.md).\n";
        let c = compile("tables/customers.md", t);
        assert_eq!(
            [&c.kind, &c.status, &c.grain, &c.summary, &c.title],
            [
                "bigquery_table",
                "deprecated",
                "customer_id",
                "Registered customers, including churned.",
                "Customers"
            ]
        );
        assert_eq!(
            c.stale_after,
            Some(time::parse("2027-03-01").unwrap().instant().0)
        );
        assert_eq!(c.links, vec![vec!["tables/orders.md".to_string()]]);
        assert!(!c.nav);
    }

    #[test]
    fn plain_markdown_still_compiles() {
        let c = compile("notes/x.md", "# Heading\n\nFirst sentence. More.\n[a](b)\n");
        assert_eq!(
            [&c.kind, &c.status, &c.summary, &c.title],
            ["-", "-", "First sentence.", "Heading"]
        );
        assert_eq!(
            c.links,
            vec![vec![
                "notes/b".to_string(),
                "notes/b.md".into(),
                "b".into(),
                "b.md".into()
            ]]
        );
        let n = compile("index.md", "# Index\n");
        assert!(n.nav);
        let n = compile("INDEX.md", "# Index\n");
        assert!(!n.nav, "reserved names are case-sensitive");
    }

    #[test]
    fn encoding_round_trips() {
        let t = "---\ntype: BigQuery Table\nstatus: deprecated\ngrain: customer_id\ndescription: Registered customers.\nstale_after: 2027-03-01\n---\n# Customers\n\nSee [orders](./orders.md) and [x](y).\n\n## Schema\n\ntext\n";
        for c in [
            compile("tables/customers.md", t),
            compile("index.md", "# Index\n"),
            compile("a.md", ""),
            Compiled::default(),
        ] {
            assert_eq!(Compiled::decode(&c.encode()), Some(c.clone()));
        }
        assert_eq!(Compiled::decode("garbage"), None);
        assert_eq!(Compiled::decode("2\t\t\t\t\t\t\t0\n\n"), None);
    }

    #[test]
    fn link_candidates() {
        assert!(candidates("a.md", "https://x.y/z", None).is_empty());
        assert!(candidates("a.md", "#frag", None).is_empty());
        assert!(candidates("a/b.md", "../../x.md", None).is_empty());
        assert_eq!(candidates("a/b.md", "/c.md#x", None), vec!["c.md"]);
        assert_eq!(candidates("a/b.md", "/", None), vec!["index.md"]);
        assert_eq!(candidates("a/b.md", "./c.md", None), vec!["a/c.md"]);
        assert_eq!(
            candidates("a/b.md", "x/c.md", None),
            vec!["a/x/c.md", "x/c.md"]
        );
        assert_eq!(candidates("b.md", "c%20d.md", None), vec!["c d.md"]);
        assert!(candidates("b.md", "two words", Some("sources.resource")).is_empty());
    }
}
