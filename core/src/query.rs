//! Read-only queries over a loaded bundle: concept summaries, filtered
//! lists, one concept with its links, graph neighbours, the stale report.

use crate::bundle::{Bundle, NodeKind, Resolution};
use crate::config::Config;
use crate::doc::{self, Concept, Document, LinkSource, ParseOptions};
use crate::time::{self, Instant};
use serde::Serialize;
use serde_json::{json, Map, Value};

/// The seven-field summary of a concept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Summary {
    /// Path id.
    pub id: String,
    /// `type`.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Title (or file stem).
    pub title: String,
    /// Description.
    pub description: Option<String>,
    /// Status (absent ⇒ `stable`).
    pub status: String,
    /// Tags.
    pub tags: Vec<String>,
    /// Bundle-relative path with `.md`.
    pub path: String,
}

/// Summarises one concept.
pub fn summary(d: &Document, c: &Concept) -> Summary {
    Summary {
        id: c.id.clone(),
        type_name: c.type_name.clone(),
        title: c.title.clone(),
        description: c.description.clone(),
        status: c.status_or_stable().to_string(),
        tags: c.tags.clone(),
        path: d.path.clone(),
    }
}

/// Normalises a tolerant id: one leading `/` and one trailing `.md`
/// stripped, runs of `/` collapsed, a trailing `/` removed.
pub fn normalize_id(id: &str) -> String {
    let s = id.trim();
    let s = s.strip_prefix('/').unwrap_or(s);
    let s = crate::kb::model::strip_md(s);
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        if ch == '/' && out.ends_with('/') {
            continue;
        }
        out.push(ch);
    }
    while out.ends_with('/') {
        out.pop();
    }
    out
}

/// Filters for [`list`].
#[derive(Clone, Debug, Default)]
pub struct ListFilter {
    /// Any of these types (OR); empty = all.
    pub types: Vec<String>,
    /// All of these tags (AND).
    pub tags: Vec<String>,
    /// Any of these statuses (OR); empty = all.
    pub statuses: Vec<String>,
    /// `Some(true)`: at least one verified entry; `Some(false)`: none.
    pub verified: Option<bool>,
}

/// Matching summaries sorted by id, and the total before paging.
pub fn list(b: &Bundle, f: &ListFilter, offset: usize, limit: usize) -> (Vec<Summary>, usize) {
    let mut total = 0usize;
    let mut page = vec![];
    for (d, c) in b.concepts_by_id() {
        let hit = (f.types.is_empty() || f.types.contains(&c.type_name))
            && f.tags.iter().all(|t| c.tags.contains(t))
            && (f.statuses.is_empty() || f.statuses.iter().any(|s| s == c.status_or_stable()))
            && f.verified.is_none_or(|v| v != c.verified.is_empty());
        if hit {
            if total >= offset && page.len() < limit {
                page.push(summary(d, c));
            }
            total += 1;
        }
    }
    (page, total)
}

/// One outgoing link as `get_concept` reports it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LinkOut {
    /// Concept id, or path for files and missing targets.
    pub to: String,
    /// Node kind.
    pub kind: NodeKind,
    /// Body or frontmatter.
    pub source: LinkSource,
    /// Frontmatter field.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<&'static str>,
}

/// The outgoing edges of a concept, in link order.
pub fn links(b: &Bundle, d: &Document) -> Vec<LinkOut> {
    d.links
        .iter()
        .filter_map(|l| match b.resolve(&d.path, &l.raw, l.field) {
            Resolution::Node { kind, id, .. } => Some(LinkOut {
                to: id,
                kind,
                source: l.source,
                field: l.field,
            }),
            _ => None,
        })
        .collect()
}

/// A concept's JSON object: its [`summary`]'s fields (`path` only when
/// `with_path`), for the answers below to add to.
fn concept_object(d: &Document, c: &Concept, with_path: bool) -> Map<String, Value> {
    let Ok(Value::Object(mut m)) = serde_json::to_value(summary(d, c)) else {
        return Map::new();
    };
    if !with_path {
        m.shift_remove("path");
    }
    m
}

/// One concept as `okfit query get --format json` and the `get_concept`
/// tool show it: its summary, its whole `frontmatter`, the file's `raw`
/// text when given, and its outgoing [`links`].
pub fn concept_json(
    b: &Bundle,
    d: &Document,
    c: &Concept,
    frontmatter: Map<String, Value>,
    raw: Option<String>,
) -> Value {
    let mut m = concept_object(d, c, true);
    m.insert("frontmatter".into(), Value::Object(frontmatter));
    if let Some(raw) = raw {
        m.insert("raw".into(), Value::String(raw));
    }
    m.insert(
        "links".into(),
        serde_json::to_value(links(b, d)).unwrap_or(Value::Null),
    );
    Value::Object(m)
}

/// A link as written, before resolution.
#[derive(Serialize)]
struct Written<'a> {
    raw: &'a str,
    source: LinkSource,
    field: Option<&'static str>,
}

/// What okfit reads from one file on its own (the WebAssembly build's
/// `parseConcept`), parsed at `now` with the default config: its `path`
/// and `kind`; the `concept` (the summary's fields without the path, then
/// `stale_after`, `trust_tier`, `body_sha256` and `frontmatter`), or
/// `null`; the `frontmatter` mapping when it decodes; the outgoing `links`
/// as written; the heading slugs (`headings`); and the `diagnostics` that
/// need no other file. `path` is bundle-relative and already checked.
pub fn file_json(path: &str, text: &str, now: Instant) -> Value {
    let cfg = Config::default();
    let opts = ParseOptions {
        config: &cfg,
        now: Some(now),
        keep_frontmatter: true,
        digests: true,
        diagnostics: true,
        skip_body: false,
    };
    let d = doc::parse(path, text.as_bytes(), &opts);
    let concept = d.concept.as_ref().map(|c| {
        let mut m = concept_object(&d, c, false);
        m.insert(
            "stale_after".into(),
            json!(c.stale_after.map(time::format_millis)),
        );
        m.insert("trust_tier".into(), json!(c.trust_tier()));
        m.insert("body_sha256".into(), json!(c.body_digest_hex()));
        m.insert("frontmatter".into(), json!(c.frontmatter));
        Value::Object(m)
    });
    let frontmatter = d
        .concept
        .as_ref()
        .and_then(|c| c.frontmatter.clone())
        .or_else(|| doc::frontmatter_of(text));
    let links: Vec<Written> = d
        .links
        .iter()
        .map(|l| Written {
            raw: &l.raw,
            source: l.source,
            field: l.field,
        })
        .collect();
    json!({
        "path": path,
        "kind": d.kind,
        "concept": concept,
        "frontmatter": frontmatter,
        "links": links,
        "headings": d.slugs,
        "diagnostics": d.diagnostics,
    })
}

/// A graph neighbour.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Neighbor {
    /// Node id.
    pub id: String,
    /// Node kind.
    pub kind: NodeKind,
    /// Summary for concept nodes.
    pub summary: Option<Summary>,
}

/// Unique outgoing and incoming neighbours of a concept.
pub fn neighbors(b: &Bundle, id: &str) -> Option<(Vec<Neighbor>, Vec<Neighbor>)> {
    let g = b.graph();
    let n = g.node(id)?;
    let mk = |i: usize| {
        let (nid, kind) = &g.nodes[i];
        Neighbor {
            id: nid.clone(),
            kind: *kind,
            summary: b.concept(nid).map(|(d, c)| summary(d, c)),
        }
    };
    Some((
        g.successors(n).into_iter().map(mk).collect(),
        g.predecessors(n).into_iter().map(mk).collect(),
    ))
}

/// One stale concept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct StaleItem {
    /// The concept.
    pub summary: Summary,
    /// `stale_after`, with milliseconds.
    pub stale_after: String,
    /// Whole days past.
    pub days_past: i64,
}

/// Concepts with `now >= stale_after`, sorted by id.
pub fn stale(b: &Bundle, now: Instant) -> Vec<StaleItem> {
    let mut v: Vec<StaleItem> = b
        .concepts()
        .filter_map(|(d, c)| {
            let sa = c.stale_after?;
            (now >= sa).then(|| StaleItem {
                summary: summary(d, c),
                stale_after: time::format_millis(sa),
                days_past: time::whole_days(sa, now),
            })
        })
        .collect();
    v.sort_by(|a, b| a.summary.id.cmp(&b.summary.id));
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "---\ntype: Metric\ntitle: Revenue\ntags: [a]\nresource: t.md\nverified:\n  by: bot/1\nstale_after: 2026-06-01\n---\n\n# Revenue\n\n[x](x.md)\n";

    /// The keys both concept shapes begin with, in order.
    const COMMON_KEYS: [&str; 6] = ["id", "type", "title", "description", "status", "tags"];

    fn keys(v: &Value) -> Vec<&str> {
        v.as_object().unwrap().keys().map(String::as_str).collect()
    }

    #[test]
    fn file_json_shape() {
        let v = file_json("m/r.md", TEXT, Instant(0));
        assert_eq!(
            keys(&v),
            [
                "path",
                "kind",
                "concept",
                "frontmatter",
                "links",
                "headings",
                "diagnostics"
            ]
        );
        assert_eq!(v["kind"], "concept");
        let c = &v["concept"];
        assert_eq!(keys(c)[..6], COMMON_KEYS);
        assert_eq!(
            keys(c)[6..],
            ["stale_after", "trust_tier", "body_sha256", "frontmatter"]
        );
        assert_eq!(c["id"], "m/r");
        assert_eq!(c["stale_after"], "2026-06-01T00:00:00.000Z");
        assert_eq!(c["trust_tier"], "machine-confirmed");
        assert_eq!(c["body_sha256"], doc::file_body_digest(TEXT));
        assert_eq!(
            v["links"],
            json!([
                {"raw": "t.md", "source": "frontmatter", "field": "resource"},
                {"raw": "x.md", "source": "body", "field": null}
            ])
        );
        assert_eq!(v["headings"], json!(["revenue"]));
        let plain = file_json("p.md", "# no frontmatter\n", Instant(0));
        assert_eq!(plain["kind"], "undecodable");
        assert_eq!(plain["concept"], Value::Null);
        assert_eq!(plain["frontmatter"], Value::Null);
    }

    #[test]
    fn concept_json_shape() {
        let cfg = Config::default();
        let opts = ParseOptions {
            keep_frontmatter: true,
            ..ParseOptions::validation(&cfg, None)
        };
        let b = Bundle::load([("m/r.md", TEXT.as_bytes()), ("m/t.md", b"x")], &opts);
        let (d, c) = b.concept("m/r").unwrap();
        let fm = c.frontmatter.clone().unwrap();
        let v = concept_json(&b, d, c, fm.clone(), None);
        assert_eq!(keys(&v)[..6], COMMON_KEYS);
        assert_eq!(keys(&v)[6..], ["path", "frontmatter", "links"]);
        assert_eq!(v["path"], "m/r.md");
        let v = concept_json(&b, d, c, fm, Some(TEXT.into()));
        assert_eq!(keys(&v)[7..], ["frontmatter", "raw", "links"]);
        assert_eq!(v["links"][0]["to"], "m/t.md");
    }
}
