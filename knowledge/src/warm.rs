//! Warm re-validation for a long-lived process (the MCP server's
//! `validate_bundle`): the last run's parsed documents and per-document
//! findings are kept, and the next run re-reads only the files whose
//! length or modification time moved (and the concepts whose
//! `stale_after` lies between the two runs' `now`), re-checks only the
//! documents those changes can affect, and re-runs the bundle-level rules.
//! The report equals a cold run's ([`crate::project::validate`]).
//!
//! When nothing under the bundle changed since the last run (the folder
//! watch of [`okfit_store::watch`] saw no event), the walk and the stamps
//! are not taken again either.
//!
//! What a change can affect: the changed file's own findings; the links of
//! the documents that point at it with a `#fragment` (its headings and
//! whether it is a concept); Surface and Publication checks (globs over
//! paths, digests of other files). A file added or removed changes how
//! links resolve anywhere, so it re-checks every document's links (still
//! without re-reading them).

use crate::project::{load_for_validation, read_text};
use okfit_core::bundle::{self, Bundle, Report};
use okfit_core::diag::Diagnostic;
use okfit_core::doc::{self, Document, ParseOptions};
use okfit_core::time::Instant;
use okfit_store::discover::Project;
use okfit_store::error::Error;
use okfit_store::walk;
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::path::PathBuf;

use okfit_store::walk::Stamp;
use okfit_store::watch::Watch;

/// What the last run kept.
struct Kept {
    /// The config the documents were parsed with (its debug text).
    config: String,
    bundle_root: PathBuf,
    now: Instant,
    /// Stamps of the Markdown files parsed.
    stamps: HashMap<String, Stamp>,
    bundle: Bundle,
    /// Each document's findings (its own, links, surface, publication).
    per_doc: HashMap<String, Vec<Diagnostic>>,
    /// The walk these stamps came from.
    walked: walk::Walked,
    /// Events under the walked directories since the walk (`None` where
    /// the platform cannot watch: then every run walks).
    watch: Option<Watch>,
}

impl Kept {
    /// What a run read and found, kept for the next run to start from.
    fn new(
        config: String,
        bundle_root: PathBuf,
        now: Instant,
        (walked, stamps, watch): Looked,
        bundle: Bundle,
        per_doc: HashMap<String, Vec<Diagnostic>>,
    ) -> Kept {
        Kept {
            config,
            bundle_root,
            now,
            stamps,
            bundle,
            per_doc,
            walked,
            watch,
        }
    }
}

/// The kept state of warm re-validation; empty until the first run.
#[derive(Default)]
pub struct Warm {
    kept: Option<Kept>,
    last: Work,
}

/// What the last run did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// It parsed everything (first run, or the config or bundle moved).
    pub cold: bool,
    /// Files read and parsed.
    pub parsed: usize,
    /// Documents whose checks ran (the rest reused their findings).
    pub checked: usize,
}

impl Warm {
    /// What the last [`Warm::validate`] did.
    pub fn last(&self) -> Work {
        self.last
    }

    /// Validates `project`'s bundle at `now` as [`crate::project::validate`]
    /// would, reusing what the last call kept where nothing changed.
    pub fn validate(
        &mut self,
        project: &Project,
        now: Instant,
        skip_provenance: bool,
    ) -> Result<Report, Error> {
        let root = &project.bundle_root;
        let config = format!("{:?}", project.config);
        let kept = self
            .kept
            .take()
            .filter(|k| k.config == config && &k.bundle_root == root);
        let Some(mut kept) = kept else {
            return self.cold((project, now, skip_provenance), config);
        };
        let quiet = kept.watch.as_mut().is_some_and(|w| !w.changed());
        let looked = if quiet {
            (
                std::mem::take(&mut kept.walked),
                // The run compares its stamps with the kept ones.
                kept.stamps.clone(),
                kept.watch.take(),
            )
        } else {
            let (walked, stamps) = walk::walk_stamped(root)?;
            let stamps = md_stamps(&walked, stamps);
            // The watch was on while the files were stamped, so a change
            // made meanwhile is an event for next time; a new directory it
            // now covers counts as one too. Stamps taken by the walk itself
            // cost a fraction of a path lookup each.
            let watch = kept
                .watch
                .take()
                .and_then(|mut w| w.cover(&walked.dirs).then_some(w))
                .or_else(|| Watch::new(&walked.dirs));
            (walked, stamps, watch)
        };
        self.warm((project, now, skip_provenance), looked, kept)
    }

    /// The first run: walked, then watched, then read, each Markdown file
    /// stamped from its open file as it is read. A change after the watch
    /// starts is an event for next time, and one before it is in the text
    /// read (a stamp older than the text only costs one more read later).
    fn cold(&mut self, asked: Asked<'_>, config: String) -> Result<Report, Error> {
        let (project, now, skip_provenance) = asked;
        let walked = walk::walk(&project.bundle_root)?;
        let watch = Watch::new(&walked.dirs);
        let loaded = load_for_validation(project, &walked, now, skip_provenance, true)?;
        let extra = crate::project::extra_findings(project, &loaded, skip_provenance);
        let mut per_doc = HashMap::default();
        let report =
            bundle::validate_with(&loaded.bundle, &project.config, extra, |docs, check| {
                let out: Vec<Vec<Diagnostic>> = docs.par_iter().map(check).collect();
                per_doc = by_path(docs, &out);
                out
            });
        let n = loaded.bundle.docs.len();
        self.last = Work {
            cold: true,
            parsed: n,
            checked: n,
        };
        let stamps = loaded.stamps.into_iter().collect();
        self.kept = Some(Kept::new(
            config,
            project.bundle_root.clone(),
            now,
            (walked, stamps, watch),
            loaded.bundle,
            per_doc,
        ));
        Ok(report)
    }

    fn warm(
        &mut self,
        (project, now, skip_provenance): Asked<'_>,
        (walked, stamps, watch): Looked,
        kept: Kept,
    ) -> Result<Report, Error> {
        let root = &project.bundle_root;
        let cfg = &project.config;
        let (lo, hi) = if kept.now <= now {
            (kept.now, now)
        } else {
            (now, kept.now)
        };
        // Files to read again: changed, added, or crossing stale_after.
        let mut reread: HashSet<String> = stamps
            .iter()
            .filter(|(p, s)| kept.stamps.get(*p) != Some(s))
            .map(|(p, _)| p.clone())
            .collect();
        for (d, c) in kept.bundle.concepts() {
            if c.stale_after.is_some_and(|sa| lo < sa && sa <= hi) {
                reread.insert(d.path.clone());
            }
        }
        let removed: HashSet<String> = kept
            .stamps
            .keys()
            .filter(|p| !stamps.contains_key(*p))
            .cloned()
            .collect();
        let assets: Vec<String> = walked
            .files
            .iter()
            .map(|(p, _)| p.clone())
            .filter(|p| !bundle::is_document(p))
            .collect();
        let (old_docs, old_assets) = kept.bundle.into_parts();
        let structure_changed = removed.len()
            + stamps
                .keys()
                .filter(|p| !kept.stamps.contains_key(*p))
                .count()
            > 0
            || old_assets != assets;
        let popts = ParseOptions::validation(cfg, Some(now));
        let fresh: Vec<Document> = reread
            .par_iter()
            .map(|rel| {
                let bytes = okfit_store::walk::read_file(&root.join(rel)).map_err(|e| {
                    Error::FileUnreadable {
                        rel: rel.clone(),
                        root: root.clone(),
                        source: e,
                    }
                })?;
                Ok(doc::parse(rel, &bytes, &popts))
            })
            .collect::<Result<_, Error>>()?;
        // Fresh documents take their old places, so the bundle's sort by
        // path finds the order nearly made.
        let mut fresh: HashMap<String, Document> =
            fresh.into_iter().map(|d| (d.path.clone(), d)).collect();
        let mut docs: Vec<Document> = old_docs
            .into_iter()
            .filter(|d| !removed.contains(&d.path))
            .map(|d| fresh.remove(&d.path).unwrap_or(d))
            .collect();
        docs.extend(fresh.into_values());
        let b = Bundle::assemble(docs, assets, |path| read_text(root, path))?;
        // Documents whose checks must run again.
        let recheck: HashSet<String> = b
            .docs
            .par_iter()
            .filter(|d| {
                structure_changed
                    || reread.contains(&d.path)
                    || d.concept
                        .as_ref()
                        .is_some_and(|c| c.surface_glob.is_some() || c.publication.is_some())
                    || links_into(&b, d, &reread)
            })
            .map(|d| d.path.clone())
            .collect();
        let loaded = crate::project::Loaded {
            bundle: b,
            extra: crate::project::walk_findings(cfg, walked.unreadable.clone()),
            repo: None,
            stamps: vec![],
        };
        let extra = crate::project::extra_findings(project, &loaded, skip_provenance);
        let mut per_doc = HashMap::default();
        let mut cached = kept.per_doc;
        let report = bundle::validate_with(&loaded.bundle, cfg, extra, |docs, check| {
            // The checks that must run, in parallel; the rest are moved
            // out of the kept findings, not copied.
            let mut fresh: HashMap<&str, Vec<Diagnostic>> = docs
                .par_iter()
                .filter(|d| recheck.contains(&d.path) || !cached.contains_key(&d.path))
                .map(|d| (d.path.as_str(), check(d)))
                .collect();
            let out: Vec<Vec<Diagnostic>> = docs
                .iter()
                .map(|d| {
                    fresh
                        .remove(d.path.as_str())
                        .or_else(|| cached.remove(&d.path))
                        .unwrap_or_default()
                })
                .collect();
            per_doc = by_path(docs, &out);
            out
        });
        self.last = Work {
            cold: false,
            parsed: reread.len(),
            checked: recheck.len(),
        };
        self.kept = Some(Kept::new(
            kept.config,
            kept.bundle_root,
            now,
            (walked, stamps, watch),
            loaded.bundle,
            per_doc,
        ));
        Ok(report)
    }
}

/// The project, the `now` and whether to skip provenance: what a run is
/// asked.
type Asked<'a> = (&'a Project, Instant, bool);

/// The walk, the Markdown files' stamps and the watch a run works from.
type Looked = (walk::Walked, HashMap<String, Stamp>, Option<Watch>);

/// Each document's findings, by path, to keep for the next run.
fn by_path(docs: &[Document], out: &[Vec<Diagnostic>]) -> HashMap<String, Vec<Diagnostic>> {
    docs.par_iter()
        .zip(out)
        .map(|(d, v)| (d.path.clone(), v.clone()))
        .collect()
}

/// The Markdown files' stamps, as [`walk::walk_stamped`] took them.
fn md_stamps(walked: &walk::Walked, stamps: Vec<Option<Stamp>>) -> HashMap<String, Stamp> {
    walked
        .files
        .iter()
        .zip(stamps)
        .filter(|((p, _), _)| bundle::is_document(p))
        .filter_map(|((p, _), s)| Some((p.clone(), s?)))
        .collect()
}

/// Whether a body link of `d` with a `#fragment` leads to one of `paths`.
fn links_into(b: &Bundle, d: &Document, paths: &HashSet<String>) -> bool {
    d.links.iter().any(|l| {
        l.raw.contains('#')
            && match b.resolve(&d.path, &l.raw, l.field) {
                bundle::Resolution::Node { kind, id, .. } => {
                    let path = match kind {
                        bundle::NodeKind::Concept => format!("{id}.md"),
                        _ => id,
                    };
                    paths.contains(&path)
                }
                _ => false,
            }
    })
}
