//! A loaded bundle: every parsed document plus the asset list, link
//! resolution (reference §5.2), the link graph and the bundle-wide checks.

use crate::config::Config;
use crate::diag::{self, Diagnostic, Summary, Tier};
use crate::doc::{self, Concept, Document, Link, LinkSource, ParseOptions};
use crate::paths::{
    dirname, glob_match, is_url, normalize, normalize_cow, normalize_join, percent_decode,
    percent_decode_cow,
};
use crate::profile;
use crate::text::Range;
use crate::time::Instant;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::collections::BTreeSet;

/// What a link target turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum NodeKind {
    /// A decoded concept (id without `.md`).
    Concept,
    /// An existing file that is not a concept (path with extension).
    File,
    /// Nothing at that path.
    Missing,
}

/// The result of resolving one link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resolution {
    /// An absolute URL: no edge.
    Url,
    /// A link to the document itself (`#frag` or empty): no edge.
    SelfLink(Option<String>),
    /// Outside the bundle root: no edge, never broken.
    External,
    /// A scope descriptor in `sources[].resource`: no edge.
    Descriptor,
    /// A graph node.
    Node {
        /// Concept, file or missing.
        kind: NodeKind,
        /// Concept id, or bundle-relative path for files and missing targets.
        id: String,
        /// The percent-decoded `#fragment`, if any.
        fragment: Option<String>,
    },
}

/// A loaded bundle.
pub struct Bundle {
    /// Parsed Markdown files, sorted by path.
    pub docs: Vec<Document>,
    /// Non-Markdown files, sorted.
    pub assets: Vec<String>,
    dirs: HashSet<String>,
    /// Each document's position in `docs`, by path: link resolution looks
    /// a path up several times per document, and a hash beats a binary
    /// search over thousands of scattered paths.
    by_path: HashMap<String, usize>,
    short: std::sync::OnceLock<ShortIds>,
    by_id: std::sync::OnceLock<Vec<usize>>,
    graph: std::sync::OnceLock<Graph>,
}

/// Short ids (reference langonrock §3.3) both ways.
#[derive(Debug, Default)]
struct ShortIds {
    by_short: HashMap<String, String>,
    by_id: HashMap<String, String>,
}

/// Why an id argument names no single concept.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdError {
    /// Nothing matches.
    NotFound,
    /// A bare name that several concepts share; their path ids.
    Ambiguous(Vec<String>),
}

/// The shortest unambiguous form of each concept path: the file stem when
/// no other concept shares it, else `parent/stem` when that is unique, else
/// the full path id (reference langonrock §3.3).
pub fn short_ids(paths: &[&str]) -> Vec<String> {
    // Each tier is a suffix of the path id: its file stem, then its parent
    // and stem, then the whole id.
    let tiers: Vec<[&str; 3]> = paths
        .iter()
        .map(|p| {
            let id = crate::kb::model::strip_md(p);
            let stem = id.rfind('/').map_or(0, |i| i + 1);
            let t1 = id[..stem.saturating_sub(1)].rfind('/').map_or(0, |i| i + 1);
            [&id[stem..], &id[if stem == 0 { 0 } else { t1 }..], id]
        })
        .collect();
    let mut counts: [HashMap<&str, usize>; 2] = [HashMap::default(), HashMap::default()];
    for c in &mut counts {
        c.reserve(tiers.len());
    }
    for t in &tiers {
        for (i, c) in counts.iter_mut().enumerate() {
            *c.entry(t[i]).or_default() += 1;
        }
    }
    tiers
        .iter()
        .map(|t| {
            if counts[0][t[0]] == 1 {
                t[0].to_string()
            } else if counts[1][t[1]] == 1 {
                t[1].to_string()
            } else {
                t[2].to_string()
            }
        })
        .collect()
}

/// True for a file the bundle parses as a document (`.md`); every other
/// file is an asset.
pub fn is_document(path: &str) -> bool {
    path.ends_with(".md")
}

impl Bundle {
    /// Parses `(path, bytes)` pairs one after another ([`is_document`]s
    /// are parsed; the rest are assets). Native callers parse in parallel
    /// and use [`Bundle::assemble`].
    pub fn load<'a>(
        files: impl IntoIterator<Item = (&'a str, &'a [u8])>,
        opts: &ParseOptions,
    ) -> Bundle {
        let mut docs = vec![];
        let mut assets = vec![];
        for (path, bytes) in files {
            if is_document(path) {
                docs.push(doc::parse(path, bytes, opts));
            } else {
                assets.push(path.to_string());
            }
        }
        Bundle::from_parts(docs, assets)
    }

    /// Builds the bundle's indexes from already-parsed documents.
    pub fn from_parts(mut docs: Vec<Document>, mut assets: Vec<String>) -> Bundle {
        // Nearly always sorted already (a walk's order): sorting anyway
        // would still allocate a scratch copy of the documents.
        if !docs.is_sorted_by(|a, b| a.path <= b.path) {
            docs.sort_by(|a, b| a.path.cmp(&b.path));
        }
        assets.sort();
        let mut dirs = HashSet::default();
        for p in docs
            .iter()
            .map(|d| d.path.as_str())
            .chain(assets.iter().map(String::as_str))
        {
            let mut d = dirname(p);
            while !d.is_empty() && !dirs.contains(d) {
                dirs.insert(d.to_string());
                d = dirname(d);
            }
        }
        let by_path = docs
            .iter()
            .enumerate()
            .map(|(i, d)| (d.path.clone(), i))
            .collect();
        Bundle {
            docs,
            assets,
            dirs,
            by_path,
            short: std::sync::OnceLock::new(),
            by_id: std::sync::OnceLock::new(),
            graph: std::sync::OnceLock::new(),
        }
    }

    /// [`Bundle::from_parts`], then the body digests the checks need
    /// ([`Bundle::digests_needed`]) from `text_of(path)`, the text of a
    /// parsed document.
    pub fn assemble<T: AsRef<str>, E>(
        docs: Vec<Document>,
        assets: Vec<String>,
        text_of: impl FnMut(&str) -> Result<T, E>,
    ) -> Result<Bundle, E> {
        let mut bundle = Bundle::from_parts(docs, assets);
        bundle.fill_digests(text_of)?;
        Ok(bundle)
    }

    /// Computes the body digests that Publications need and no parse
    /// recorded ([`Bundle::digests_needed`]) from the texts `text_of` reads.
    pub fn fill_digests<T: AsRef<str>, E>(
        &mut self,
        mut text_of: impl FnMut(&str) -> Result<T, E>,
    ) -> Result<(), E> {
        for path in self.digests_needed() {
            let digest = doc::file_digest(text_of(&path)?.as_ref());
            self.set_digest(&path, digest);
        }
        Ok(())
    }

    /// Puts `doc` in the place of the document at its path and returns
    /// that one: the set of paths is unchanged, so only what is derived
    /// from the documents on demand is let go of. `None`, and `doc` is not
    /// kept, when no document has its path (a new path needs the bundle
    /// made again, [`Bundle::from_parts`]).
    pub fn replace(&mut self, doc: Document) -> Option<Document> {
        let &i = self.by_path.get(&doc.path)?;
        self.short = std::sync::OnceLock::new();
        self.by_id = std::sync::OnceLock::new();
        self.graph = std::sync::OnceLock::new();
        Some(std::mem::replace(&mut self.docs[i], doc))
    }

    /// Takes the bundle apart again (to update it in place).
    pub fn into_parts(self) -> (Vec<Document>, Vec<String>) {
        (self.docs, self.assets)
    }

    fn shorts(&self) -> &ShortIds {
        self.short.get_or_init(|| {
            let concepts: Vec<(&str, &str)> = self
                .concepts()
                .map(|(d, c)| (d.path.as_str(), c.id.as_str()))
                .collect();
            let paths: Vec<&str> = concepts.iter().map(|(p, _)| *p).collect();
            let mut ids = ShortIds::default();
            for ((_, id), short) in concepts.iter().zip(short_ids(&paths)) {
                ids.by_short.insert(short.clone(), id.to_string());
                ids.by_id.insert(id.to_string(), short);
            }
            ids
        })
    }

    /// The short id of a concept (its shortest unambiguous path form).
    pub fn short_id(&self, id: &str) -> Option<&str> {
        self.shorts().by_id.get(id).map(String::as_str)
    }

    /// Resolves an id argument: a path id or a short id, with or without a
    /// leading `/` or trailing `.md`. A bare name shared by several concepts
    /// is [`IdError::Ambiguous`] with their path ids.
    pub fn find_concept(&self, input: &str) -> Result<(&Document, &Concept), IdError> {
        let id = crate::query::normalize_id(input);
        if let Some(hit) = self.concept(&id) {
            return Ok(hit);
        }
        if let Some(full) = self.shorts().by_short.get(&id) {
            if let Some(hit) = self.concept(full) {
                return Ok(hit);
            }
        }
        let mut candidates: Vec<String> = self
            .concepts()
            .filter(|(_, c)| c.id.ends_with(&format!("/{id}")))
            .map(|(_, c)| c.id.clone())
            .collect();
        match candidates.len() {
            0 => Err(IdError::NotFound),
            1 => self.concept(&candidates[0]).ok_or(IdError::NotFound),
            _ => {
                candidates.sort();
                Err(IdError::Ambiguous(candidates))
            }
        }
    }

    /// Decoded concepts in id order (computed once per bundle).
    pub fn concepts_by_id(&self) -> impl Iterator<Item = (&Document, &Concept)> {
        let order = self.by_id.get_or_init(|| {
            let mut v: Vec<usize> = (0..self.docs.len())
                .filter(|&i| self.docs[i].concept.is_some())
                .collect();
            v.sort_by(|&a, &b| {
                let id = |i: usize| self.docs[i].concept.as_ref().map_or("", |c| c.id.as_str());
                id(a).cmp(id(b))
            });
            v
        });
        order
            .iter()
            .filter_map(|&i| self.docs[i].concept.as_ref().map(|c| (&self.docs[i], c)))
    }

    /// Decoded concepts in path order.
    pub fn concepts(&self) -> impl Iterator<Item = (&Document, &Concept)> {
        self.docs
            .iter()
            .filter_map(|d| d.concept.as_ref().map(|c| (d, c)))
    }

    /// The concept with this path id.
    pub fn concept(&self, id: &str) -> Option<(&Document, &Concept)> {
        let d = self.doc(&format!("{id}.md"))?;
        d.concept.as_ref().map(|c| (d, c))
    }

    /// Paths of concepts whose body digest a check needs but that were
    /// parsed without one (the targets of `Publication` renders).
    pub fn digests_needed(&self) -> Vec<String> {
        let mut out = vec![];
        for (d, c) in self.concepts() {
            let Some(p) = &c.publication else { continue };
            for (path, _) in p.renders.iter().flatten() {
                if let Resolution::Node {
                    kind: NodeKind::Concept,
                    id,
                    ..
                } = self.resolve(&d.path, path, None)
                {
                    if let Some((td, tc)) = self.concept(&id) {
                        if tc.body_digest.is_none() && !out.contains(&td.path) {
                            out.push(td.path.clone());
                        }
                    }
                }
            }
        }
        out
    }

    /// Records a body digest computed outside the parse.
    pub fn set_digest(&mut self, path: &str, digest: [u8; 32]) {
        if let Some(&i) = self.by_path.get(path) {
            if let Some(c) = self.docs[i].concept.as_mut() {
                c.body_digest = Some(digest);
            }
        }
    }

    /// Paths of documents whose body scan is still to come.
    pub fn bodies_pending(&self) -> Vec<String> {
        self.docs
            .iter()
            .filter(|d| d.body_pending)
            .map(|d| d.path.clone())
            .collect()
    }

    /// Completes a document parsed without its body (see
    /// [`crate::doc::body_links`]): body links follow the frontmatter ones.
    pub fn fill_body(&mut self, path: &str, links: Vec<Link>, slugs: Vec<String>) {
        if let Some(&i) = self.by_path.get(path) {
            let d = &mut self.docs[i];
            if d.body_pending {
                d.links.extend(links);
                d.slugs = slugs;
                d.body_pending = false;
                self.graph = std::sync::OnceLock::new();
            }
        }
    }

    /// The Markdown document at a bundle-relative path.
    pub fn doc(&self, path: &str) -> Option<&Document> {
        let &i = self.by_path.get(path)?;
        self.docs.get(i)
    }

    /// True when `path` is a walked file.
    pub fn has_file(&self, path: &str) -> bool {
        self.doc(path).is_some()
            || self
                .assets
                .binary_search_by(|a| a.as_str().cmp(path))
                .is_ok()
    }

    /// True when `dir` (bundle-relative, `""` = root) holds any walked file.
    pub fn has_dir(&self, dir: &str) -> bool {
        dir.is_empty() || self.dirs.contains(dir)
    }

    fn lookup(&self, candidate: &str) -> Option<(NodeKind, String)> {
        if candidate.ends_with('/') {
            return self.lookup_exact(&format!("{candidate}index.md"));
        }
        if candidate.is_empty() || candidate == "." {
            return None;
        }
        if let Some(hit) = self.lookup_exact(candidate) {
            return Some(hit);
        }
        let base = candidate.rsplit('/').next().unwrap_or(candidate);
        if !base.contains('.') {
            return self.lookup_exact(&format!("{candidate}.md"));
        }
        None
    }

    fn lookup_exact(&self, cand: &str) -> Option<(NodeKind, String)> {
        if let Some(d) = self.doc(cand) {
            return Some(match &d.concept {
                Some(c) => (NodeKind::Concept, c.id.clone()),
                None => (NodeKind::File, cand.to_string()),
            });
        }
        self.has_asset(cand)
            .then(|| (NodeKind::File, cand.to_string()))
    }

    fn has_asset(&self, path: &str) -> bool {
        self.assets
            .binary_search_by(|a| a.as_str().cmp(path))
            .is_ok()
    }

    fn missing_id(candidate: &str) -> String {
        if candidate.ends_with('/') || candidate.is_empty() {
            format!("{candidate}index.md")
        } else {
            candidate.to_string()
        }
    }

    /// Resolves a link written in the file at `from` (reference §5.2).
    pub fn resolve(&self, from: &str, raw: &str, field: Option<&str>) -> Resolution {
        let t = raw.trim();
        if is_url(t) {
            return Resolution::Url;
        }
        let is_source = field == Some("sources.resource");
        if is_source && t.chars().any(char::is_whitespace) {
            return Resolution::Descriptor;
        }
        let (path_part, fragment) = match t.find('#') {
            Some(i) => (&t[..i], Some(percent_decode(&t[i + 1..]))),
            None => (t, None),
        };
        let path_part = path_part.split('?').next().unwrap_or("");
        let decoded = percent_decode_cow(path_part);
        if decoded.is_empty() {
            return Resolution::SelfLink(fragment);
        }
        let node = |kind, id| Resolution::Node {
            kind,
            id,
            fragment: fragment.clone(),
        };
        let res = if let Some(stripped) = decoded.strip_prefix('/') {
            let rel = stripped.trim_start_matches('/');
            let rel = if rel.is_empty() { "index.md" } else { rel };
            match normalize_cow(rel) {
                None => Resolution::External,
                Some(c) => match self.lookup(&c) {
                    Some((k, id)) => node(k, id),
                    None => node(NodeKind::Missing, Self::missing_id(&c)),
                },
            }
        } else {
            let dir = dirname(from);
            let joined = if dir.is_empty() {
                normalize_cow(&decoded).map(|c| c.into_owned())
            } else {
                normalize_join(dir, &decoded)
            };
            match joined {
                None => Resolution::External,
                Some(c) => {
                    if let Some((k, id)) = self.lookup(&c) {
                        node(k, id)
                    } else if !decoded.starts_with("./") && !decoded.starts_with("../") {
                        match normalize_cow(&decoded) {
                            None => Resolution::External,
                            Some(r) => match self.lookup(&r) {
                                Some((k, id)) => node(k, id),
                                None if decoded.contains('/') => {
                                    node(NodeKind::Missing, Self::missing_id(&r))
                                }
                                None => node(NodeKind::Missing, Self::missing_id(&c)),
                            },
                        }
                    } else {
                        node(NodeKind::Missing, Self::missing_id(&c))
                    }
                }
            }
        };
        if is_source {
            if let Resolution::Node {
                kind: NodeKind::Missing,
                ..
            } = res
            {
                return Resolution::Descriptor;
            }
        }
        res
    }

    /// The link graph: nodes (concepts first, in path order, then targets as
    /// met) and edges in link order. Built once per bundle.
    pub fn graph(&self) -> &Graph {
        self.graph.get_or_init(|| self.build_graph())
    }

    fn build_graph(&self) -> Graph {
        let mut g = Graph::default();
        let mut index: HashMap<String, usize> = HashMap::default();
        for (_, c) in self.concepts() {
            index.insert(c.id.clone(), g.nodes.len());
            g.nodes.push((c.id.clone(), NodeKind::Concept));
        }
        for (d, c) in self.concepts() {
            let from = index[&c.id];
            for link in &d.links {
                if let Resolution::Node { kind, id, .. } =
                    self.resolve(&d.path, &link.raw, link.field)
                {
                    let to = *index.entry(id.clone()).or_insert_with(|| {
                        g.nodes.push((id.clone(), kind));
                        g.nodes.len() - 1
                    });
                    g.edges.push(Edge {
                        from,
                        to,
                        source: link.source,
                        field: link.field,
                        raw: link.raw.clone(),
                    });
                }
            }
        }
        g
    }
}

/// One edge of the link graph.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Edge {
    /// Node index of the linking concept.
    pub from: usize,
    /// Node index of the target.
    pub to: usize,
    /// Body or frontmatter.
    pub source: LinkSource,
    /// The frontmatter field.
    pub field: Option<&'static str>,
    /// The link as written.
    pub raw: String,
}

/// The directed link multigraph.
#[derive(Clone, Debug, Default)]
pub struct Graph {
    /// `(id, kind)` per node.
    pub nodes: Vec<(String, NodeKind)>,
    /// Edges, not deduplicated.
    pub edges: Vec<Edge>,
}

impl Graph {
    /// Unique successors of node `n`, in edge order.
    pub fn successors(&self, n: usize) -> Vec<usize> {
        self.ends(|e| (e.from, e.to), n)
    }

    /// Unique predecessors of node `n`, in edge order.
    pub fn predecessors(&self, n: usize) -> Vec<usize> {
        self.ends(|e| (e.to, e.from), n)
    }

    /// The unique far ends of the edges whose near end is `n`, in edge
    /// order; `ends` gives an edge's (near, far).
    fn ends(&self, ends: impl Fn(&Edge) -> (usize, usize), n: usize) -> Vec<usize> {
        let mut seen = BTreeSet::new();
        self.edges
            .iter()
            .map(ends)
            .filter(|&(near, far)| near == n && seen.insert(far))
            .map(|(_, far)| far)
            .collect()
    }

    /// Node index of an id.
    pub fn node(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|(i, _)| i == id)
    }
}

/// The findings of one validation run, sorted, with counts.
#[derive(Clone, Debug)]
pub struct Report {
    /// Sorted diagnostics.
    pub diagnostics: Vec<Diagnostic>,
    /// Counts.
    pub summary: Summary,
}

impl Report {
    /// Sorts and counts.
    pub fn new(mut diagnostics: Vec<Diagnostic>, concepts: usize) -> Report {
        diag::sort(&mut diagnostics);
        let summary = Summary::of(&diagnostics, concepts);
        Report {
            diagnostics,
            summary,
        }
    }

    /// 0, 1 or 2.
    pub fn exit_code(&self) -> i32 {
        self.summary.exit_code()
    }

    /// Drops the conformance tier (what `okfit lint` shows).
    pub fn lint_only(mut self) -> Report {
        self.diagnostics.retain(|d| d.source != Tier::Conformance);
        self.summary.conformance_errors = 0;
        self
    }
}

fn lint(
    cfg: &Config,
    out: &mut Vec<Diagnostic>,
    file: &str,
    code: &'static str,
    message: String,
    range: Option<Range>,
) {
    if let Some(severity) = cfg.severity(code) {
        out.push(Diagnostic {
            source: Tier::Lint,
            file: file.to_string(),
            code,
            severity,
            message,
            range,
        });
    }
}

/// Runs every check over a loaded bundle. `extra` carries findings made
/// outside the core (unreadable directories, the git tier of drift).
pub fn validate(bundle: &Bundle, cfg: &Config, extra: Vec<Diagnostic>) -> Report {
    validate_with(bundle, cfg, extra, |docs, f| docs.iter().map(f).collect())
}

/// Validates a bundle given whole as `(path, text)` files at `now` (the
/// WebAssembly build's `validate`): [`is_document`]s are parsed with
/// [`ParseOptions::validation`], the rest are assets, and the bundle is
/// [assembled](Bundle::assemble) and [validated](validate) as the CLI does
/// after its walk. Paths are bundle-relative and already checked
/// ([`crate::overlay::Given`]).
pub fn validate_texts(files: &[(String, String)], cfg: &Config, now: Instant) -> Report {
    let opts = ParseOptions::validation(cfg, Some(now));
    let (md, assets): (Vec<_>, Vec<_>) = files.iter().partition(|(p, _)| is_document(p));
    let docs = md
        .iter()
        .map(|(p, t)| doc::parse(p, t.as_bytes(), &opts))
        .collect();
    let texts: HashMap<&str, &str> = md.iter().map(|(p, t)| (p.as_str(), t.as_str())).collect();
    let assets = assets.into_iter().map(|(p, _)| p.clone()).collect();
    let text_of = |p: &str| Ok::<_, std::convert::Infallible>(texts.get(p).copied().unwrap_or(""));
    let Ok(bundle) = Bundle::assemble(docs, assets, text_of);
    validate(&bundle, cfg, vec![])
}

/// The per-document part of a validation, handed to a caller-chosen map.
pub type DocCheck<'a> = dyn Fn(&Document) -> Vec<Diagnostic> + Sync + 'a;

/// [`validate`], with the per-document checks (the file's own findings,
/// links, surfaces, publications) run by `map`, so a caller with threads
/// can spread them; results are sorted, so the order of `map` is free.
pub fn validate_with<M>(bundle: &Bundle, cfg: &Config, extra: Vec<Diagnostic>, map: M) -> Report
where
    M: FnOnce(&[Document], &DocCheck) -> Vec<Vec<Diagnostic>>,
{
    let per_doc = |d: &Document| {
        let mut out = d.diagnostics.clone();
        if let Some(c) = &d.concept {
            check_links(bundle, cfg, d, &mut out);
            if let Some((glob, range)) = &c.surface_glob {
                check_surface(bundle, cfg, d, glob, *range, &mut out);
            }
            if cfg.profile == Some(profile::DEFAULT) {
                if let Some(p) = &c.publication {
                    check_publication(bundle, cfg, d, c, p, &mut out);
                }
            }
        }
        out
    };
    let mut out: Vec<Diagnostic> = map(&bundle.docs, &per_doc).into_iter().flatten().collect();
    out.extend(extra);
    for k in &cfg.unknown_keys {
        lint(
            cfg,
            &mut out,
            "",
            "config-unknown-key",
            format!("Unknown config key \"{k}\""),
            None,
        );
    }
    let concept_dirs: BTreeSet<&str> = bundle.concepts().map(|(d, _)| dirname(&d.path)).collect();
    for dir in concept_dirs {
        let index = if dir.is_empty() {
            "index.md".to_string()
        } else {
            format!("{dir}/index.md")
        };
        if !bundle.has_file(&index) {
            let shown = if dir.is_empty() { "." } else { dir };
            lint(
                cfg,
                &mut out,
                &index,
                "missing-index",
                format!("Directory \"{shown}\" has no index.md"),
                None,
            );
        }
    }
    if let Some(p) = cfg.profile {
        let pairs: Vec<(&str, &str)> = bundle
            .concepts()
            .map(|(d, c)| (d.path.as_str(), c.type_name.as_str()))
            .collect();
        out.extend(profile::check(p, &pairs));
    }
    let concepts = bundle.concepts().count();
    Report::new(out, concepts)
}

fn check_links(bundle: &Bundle, cfg: &Config, d: &Document, out: &mut Vec<Diagnostic>) {
    for link in &d.links {
        let res = bundle.resolve(&d.path, &link.raw, link.field);
        match res {
            Resolution::Node {
                kind: NodeKind::Missing,
                ..
            } => lint(
                cfg,
                out,
                &d.path,
                "broken-links",
                format!("Link target \"{}\" does not exist in the bundle", link.raw),
                link.range,
            ),
            Resolution::Node {
                kind: NodeKind::Concept,
                id,
                fragment: Some(frag),
            } if link.source == LinkSource::Body => {
                if let Some((target, _)) = bundle.concept(&id) {
                    check_fragment(cfg, d, link, &frag, &target.slugs, out);
                }
            }
            Resolution::SelfLink(Some(frag)) if link.source == LinkSource::Body => {
                check_fragment(cfg, d, link, &frag, &d.slugs, out);
            }
            Resolution::Descriptor if link.field == Some("sources.resource") => {
                let t = link.raw.trim();
                let path_like =
                    !t.chars().any(char::is_whitespace) && (t.contains('/') || t.ends_with(".md"));
                if path_like {
                    lint(
                        cfg,
                        out,
                        &d.path,
                        "source-resource-missing",
                        format!("Resource \"{t}\" does not exist relative to {}", d.path),
                        link.range,
                    );
                }
            }
            _ => {}
        }
    }
}

fn check_fragment(
    cfg: &Config,
    d: &Document,
    link: &Link,
    frag: &str,
    slugs: &[String],
    out: &mut Vec<Diagnostic>,
) {
    if frag.is_empty() || slugs.iter().any(|s| s == frag) {
        return;
    }
    let hint = if slugs.is_empty() {
        "the target has no headings".to_string()
    } else if let Some(best) = closest(frag, slugs) {
        format!("did you mean \"#{best}\"?")
    } else {
        let list: Vec<String> = slugs.iter().take(10).map(|s| format!("#{s}")).collect();
        format!("its headings are {}", list.join(", "))
    };
    lint(
        cfg,
        out,
        &d.path,
        "broken-links",
        format!(
            "Link target \"{}\" has no heading \"#{frag}\"; {hint}",
            link.raw
        ),
        link.range,
    );
}

fn closest<'a>(frag: &str, slugs: &'a [String]) -> Option<&'a str> {
    let limit = (frag.chars().count() / 3).max(2);
    slugs
        .iter()
        .map(|s| (edit_distance(frag, s), s))
        .filter(|(d, _)| *d <= limit)
        .min_by_key(|(d, _)| *d)
        .map(|(_, s)| s.as_str())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let v = (prev[j] + usize::from(ca != cb))
                .min(prev[j + 1] + 1)
                .min(cur[j] + 1);
            cur.push(v);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn check_surface(
    bundle: &Bundle,
    cfg: &Config,
    d: &Document,
    glob: &str,
    range: Option<Range>,
    out: &mut Vec<Diagnostic>,
) {
    if is_url(glob) {
        return;
    }
    let dir = dirname(&d.path);
    let pattern = if let Some(rest) = glob.strip_prefix('/') {
        normalize(rest)
    } else if dir.is_empty() {
        normalize(glob)
    } else {
        normalize(&format!("{dir}/{glob}"))
    };
    // A pattern that climbs out of the bundle cannot be checked here.
    let Some(pattern) = pattern else {
        return;
    };
    let hit = bundle
        .docs
        .iter()
        .map(|x| x.path.as_str())
        .chain(bundle.assets.iter().map(String::as_str))
        .any(|p| glob_match(&pattern, p));
    if !hit {
        let shown = if dir.is_empty() { "." } else { dir };
        lint(
            cfg,
            out,
            &d.path,
            "surface-unmatched",
            format!("Surface resource \"{glob}\" matches nothing under {shown}"),
            range,
        );
    }
}

fn check_publication(
    bundle: &Bundle,
    cfg: &Config,
    d: &Document,
    c: &Concept,
    p: &doc::PublicationSpec,
    out: &mut Vec<Diagnostic>,
) {
    let resolve_concept = |raw: &str| match bundle.resolve(&d.path, raw, None) {
        Resolution::Node {
            kind: NodeKind::Concept,
            id,
            ..
        } => bundle.concept(&id),
        _ => None,
    };
    let surface_json = p
        .surface
        .as_ref()
        .map_or("null".to_string(), |v| v.to_string());
    match p
        .surface
        .as_ref()
        .and_then(|v| v.as_str())
        .map(resolve_concept)
    {
        Some(Some((_, t))) if t.type_name == "Surface" => {}
        Some(Some((_, t))) => lint(
            cfg,
            out,
            &d.path,
            "publication-orphan",
            format!(
                "surface {surface_json} resolves to a {} concept, not a Surface",
                t.type_name
            ),
            p.surface_range,
        ),
        _ => lint(
            cfg,
            out,
            &d.path,
            "publication-orphan",
            format!("surface {surface_json} does not resolve to a concept in the bundle"),
            p.surface_range,
        ),
    }
    let Some(renders) = &p.renders else {
        lint(
            cfg,
            out,
            &d.path,
            "publication-orphan",
            "renders must be a list of { path, body_sha256 } entries".into(),
            p.renders_range,
        );
        return;
    };
    let mut stale: Vec<String> = vec![];
    for (i, (path, sha)) in renders.iter().enumerate() {
        match resolve_concept(path) {
            None => lint(
                cfg,
                out,
                &d.path,
                "publication-orphan",
                format!(
                    "renders[{i}].path {} does not resolve to a concept in the bundle",
                    serde_json::Value::String(path.clone())
                ),
                p.renders_range,
            ),
            Some((_, t)) => match sha {
                None => stale.push(format!("{} (never stamped)", t.id)),
                Some(s) if Some(s) != t.body_digest_hex().as_ref() => {
                    stale.push(format!("{} (changed)", t.id))
                }
                Some(_) => {}
            },
        }
    }
    if !stale.is_empty() {
        lint(
            cfg,
            out,
            &d.path,
            "publication-drift",
            format!(
                "Rendered page {} is stale against: {}; re-render it, then run okfit sync --publication {}",
                c.id,
                stale.join(", "),
                c.id
            ),
            p.renders_range,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replaced_document_is_seen_by_every_lookup() {
        let cfg = Config::default();
        let opts = ParseOptions::validation(&cfg, None);
        let concept = |title: &str| format!("---\ntype: Skill\ntitle: {title}\n---\n# {title}\n");
        let parse = |path: &str, text: &str| doc::parse(path, text.as_bytes(), &opts);
        let mut b = Bundle::from_parts(
            vec![
                parse("a/x.md", &concept("Old")),
                parse("b/x.md", "# Plain\n"),
            ],
            vec![],
        );
        assert_eq!(b.concepts().count(), 1);
        assert!(b.find_concept("x").is_ok(), "the one concept named x");
        let old = b.replace(parse("b/x.md", &concept("New")));
        assert!(old.is_some_and(|d| d.concept.is_none()));
        assert_eq!(b.concepts().count(), 2);
        assert!(
            matches!(b.find_concept("x"), Err(IdError::Ambiguous(_))),
            "short ids are derived again"
        );
        assert!(b.replace(parse("c/new.md", &concept("C"))).is_none());
        assert!(
            b.doc("c/new.md").is_none(),
            "a new path needs the bundle made again"
        );
    }

    #[test]
    fn short_ids_follow_the_tiers() {
        assert_eq!(
            short_ids(&["tables/orders.md", "metrics/wau.md"]),
            vec!["orders", "wau"]
        );
        assert_eq!(
            short_ids(&[
                "tables/orders.md",
                "metrics/orders.md",
                "datasets/orders_db.md"
            ]),
            vec!["tables/orders", "metrics/orders", "orders_db"]
        );
        assert_eq!(
            short_ids(&["a/x/orders.md", "b/x/orders.md"]),
            vec!["a/x/orders", "b/x/orders"]
        );
        assert_eq!(
            short_ids(&["orders.md", "tables/orders.md"]),
            vec!["orders", "tables/orders"]
        );
    }

    #[test]
    fn short_id_tiers_are_the_path_stem_parent_and_whole() {
        // The tiers as split out of the path one by one.
        fn tiers(p: &str) -> [String; 3] {
            let id = crate::kb::model::strip_md(p);
            let mut parts = id.rsplit('/');
            let stem = parts.next().unwrap_or(id).to_string();
            let t1 = match parts.next() {
                Some(parent) => format!("{parent}/{stem}"),
                None => stem.clone(),
            };
            [stem, t1, id.to_string()]
        }
        let paths = [
            "orders.md",
            "a/orders.MD",
            "a/b/orders.md",
            "c/b/orders.md",
            "a//orders.md",
            "x/y/z/w.md",
            "y/z/w.md",
            "z/w.md",
            "w.md",
            "é/ü.md",
            "a/b/",
            "noext",
        ];
        for n in 1..=paths.len() {
            for start in 0..=paths.len() - n {
                let run = &paths[start..start + n];
                let want: Vec<String> = run
                    .iter()
                    .map(|p| {
                        let t = tiers(p);
                        let unique =
                            |i: usize| run.iter().filter(|q| tiers(q)[i] == t[i]).count() == 1;
                        if unique(0) {
                            t[0].clone()
                        } else if unique(1) {
                            t[1].clone()
                        } else {
                            t[2].clone()
                        }
                    })
                    .collect();
                assert_eq!(short_ids(run), want, "{run:?}");
            }
        }
    }
}
