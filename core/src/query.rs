//! Read-only queries over a loaded bundle: concept summaries, filtered
//! lists, one concept with its links, graph neighbours, the stale report.

use crate::bundle::{Bundle, NodeKind, Resolution};
use crate::doc::{Concept, Document, LinkSource};
use crate::time::{self, Instant};
use serde::Serialize;

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
