//! Warm re-validation, the validation layer of a folder's one live view
//! ([`crate::folder`]) behind the MCP server's `validate_bundle`: the last
//! run's parsed documents and per-document findings are kept, and the next
//! run re-reads only the Markdown files the folder's refreshes reported as
//! changed, added or gone, re-times the `stale` finding of the concepts
//! whose `stale_after` lies between the two runs' `now` (without reading
//! them), re-checks only the documents those changes can affect, and
//! re-runs the bundle-level rules. The report
//! equals a cold run's ([`crate::project::validate`]).
//!
//! When nothing under the bundle changed since the last run (the folder's
//! watch saw no event), the folder is not walked again either.
//!
//! What a change can affect: the changed file's own findings; the links of
//! the documents that point at it with a `#fragment` (its headings and
//! whether it is a concept); Surface and Publication checks (globs over
//! paths, digests of other files). A file added or removed changes how
//! links resolve anywhere, so it re-checks every document's links (still
//! without re-reading them).

use crate::documents::Read;
use crate::project::{extra_findings_kept, load_for_validation, read_text};
use okfit_core::bundle::{self, Bundle, Report};
use okfit_core::diag::Diagnostic;
use okfit_core::doc::{self, Document, ParseOptions};
use okfit_core::time::Instant;
use okfit_store::discover::Project;
use okfit_store::error::Error;
use okfit_store::git::Memo;
use okfit_store::live::{Delta, LiveFolder, Stamp};
use okfit_store::walk;
use rayon::prelude::*;
use rustc_hash::{FxHashMap as HashMap, FxHashSet as HashSet};
use std::sync::Arc;

/// What a validation did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Work {
    /// It parsed everything (first run, or the config moved).
    pub cold: bool,
    /// Files read and parsed.
    pub parsed: usize,
    /// Documents whose checks ran (the rest reused their findings).
    pub checked: usize,
    /// It read the bundle's git history for `generated-at-drift`, rather
    /// than reusing what the last run found at the same `HEAD`.
    pub history: bool,
}

/// The last validation of a folder, and the changes its live view
/// reported since.
pub(crate) struct Checks {
    /// The config the documents were parsed with (its debug text).
    config: String,
    now: Instant,
    bundle: Bundle,
    /// Each document's findings (its own, links, surface, publication).
    per_doc: PerDoc,
    /// Markdown files new or changed since the run, with their bytes
    /// where a refresh read them for the other layers.
    changed: HashMap<String, Option<Arc<[u8]>>>,
    /// Markdown files gone since the run.
    gone: HashSet<String>,
    /// What the git tier found, while the run had it look.
    git: Option<Memo>,
    /// What the run did.
    work: Work,
}

/// Each document's findings as a run left them.
enum PerDoc {
    /// In the order of the bundle's documents, as a cold run makes them:
    /// keyed by path only when a later run needs them, so the first call
    /// does not pay for it.
    Aligned(Vec<Vec<Diagnostic>>),
    /// By path.
    ByPath(HashMap<String, Vec<Diagnostic>>),
}

impl PerDoc {
    /// The findings by path; `docs` are the documents they are aligned with.
    fn by_path(self, docs: &[Document]) -> HashMap<String, Vec<Diagnostic>> {
        match self {
            PerDoc::ByPath(m) => m,
            PerDoc::Aligned(v) => docs.iter().map(|d| d.path.clone()).zip(v).collect(),
        }
    }
}

/// The stamps of the files a run read, by path.
pub(crate) type Stamps = Vec<(String, Stamp)>;

/// The project, the `now` and whether to skip provenance: what a run is
/// asked.
pub(crate) type Asked<'a> = (&'a Project, Instant, bool);

impl Checks {
    /// What a run kept: no change noted since yet. Whether the run read
    /// the git history is `git`'s to say ([`Work::history`]).
    fn after(
        config: String,
        now: Instant,
        bundle: Bundle,
        per_doc: PerDoc,
        git: Option<Memo>,
        mut work: Work,
    ) -> Checks {
        work.history = git.as_ref().is_some_and(Memo::read_history);
        Checks {
            config,
            now,
            bundle,
            per_doc,
            changed: HashMap::default(),
            gone: HashSet::default(),
            git,
            work,
        }
    }

    /// The same run with its findings keyed by path, as a later run needs
    /// them: work for a run made ahead of calls, so the next call does not
    /// do it.
    pub(crate) fn keyed(mut self) -> Checks {
        let per_doc = std::mem::replace(&mut self.per_doc, PerDoc::Aligned(vec![]));
        self.per_doc = PerDoc::ByPath(per_doc.by_path(&self.bundle.docs));
        self
    }

    /// What the last run did.
    pub(crate) fn work(&self) -> Work {
        self.work
    }

    /// True when the run parsed with `project`'s config.
    pub(crate) fn fits(&self, project: &Project) -> bool {
        self.config == format!("{:?}", project.config)
    }

    /// Notes a refresh of the folder for the next run.
    pub(crate) fn note(&mut self, delta: &Delta) {
        for (rel, _) in delta.changed.iter().filter(|(p, _)| bundle::is_document(p)) {
            self.gone.remove(rel);
            self.changed.insert(rel.clone(), None);
        }
        for rel in delta.gone.iter().filter(|p| bundle::is_document(p)) {
            self.changed.remove(rel);
            self.gone.insert(rel.clone());
        }
    }

    /// Keeps the bytes a refresh read of files it noted, so the next run
    /// does not read them again.
    pub(crate) fn keep(&mut self, read: &[Read]) {
        for (rel, r) in read {
            if let (Some(slot), Ok(bytes)) = (self.changed.get_mut(rel), r) {
                *slot = Some(bytes.clone());
            }
        }
    }

    /// The first run over `folder` (refreshed): every Markdown file read
    /// and parsed, each one's stamp taken from its open file, for the
    /// folder to record.
    pub(crate) fn cold(
        asked: Asked<'_>,
        folder: &LiveFolder,
    ) -> Result<(Report, Checks, Stamps), Error> {
        Checks::cold_over(asked, &listed(folder))
    }

    /// [`Checks::cold`] over the files `walked` lists ([`listed`]): a run
    /// that needs no hold on the folder while it reads.
    pub(crate) fn cold_over(
        (project, now, skip_provenance): Asked<'_>,
        walked: &walk::Walked,
    ) -> Result<(Report, Checks, Stamps), Error> {
        let mut loaded = load_for_validation(project, walked, now, skip_provenance, true)?;
        let (extra, git) = extra_findings_kept(project, &mut loaded, skip_provenance, None, None);
        let mut kept = vec![];
        let report =
            bundle::validate_with(&loaded.bundle, &project.config, extra, |docs, check| {
                let out: Vec<Vec<Diagnostic>> = docs.par_iter().map(check).collect();
                kept = out.par_iter().cloned().collect();
                out
            });
        let n = loaded.bundle.docs.len();
        let work = Work {
            cold: true,
            parsed: n,
            checked: n,
            ..Work::default()
        };
        let config = format!("{:?}", project.config);
        let per_doc = PerDoc::Aligned(kept);
        let checks = Checks::after(config, now, loaded.bundle, per_doc, git, work);
        Ok((report, checks, loaded.stamps))
    }

    /// A later run over `folder` (refreshed, its changes noted), and how
    /// many files it read.
    pub(crate) fn warm(
        self,
        (project, now, skip_provenance): Asked<'_>,
        folder: &LiveFolder,
    ) -> Result<(Report, Checks, u64), Error> {
        let root = &project.bundle_root;
        let cfg = &project.config;
        let mut per_doc = self.per_doc.by_path(&self.bundle.docs);
        let (lo, hi) = if self.now <= now {
            (self.now, now)
        } else {
            (now, self.now)
        };
        // Files to read again: changed or added. A concept whose
        // stale_after lies between the two runs' `now` is re-timed in place
        // (its `stale` finding is the only one that moves) and checked
        // again.
        let reread = self.changed;
        let mut bundle = self.bundle;
        let retimed: HashSet<String> = bundle
            .docs
            .par_iter_mut()
            .filter(|d| {
                !reread.contains_key(&d.path)
                    && d.concept
                        .as_ref()
                        .and_then(|c| c.stale_after)
                        .is_some_and(|sa| lo < sa && sa <= hi)
            })
            .map(|d| {
                doc::retime(d, cfg, Some(now));
                d.path.clone()
            })
            .collect();
        let assets: Vec<String> = folder
            .files()
            .filter(|p| !bundle::is_document(p))
            .cloned()
            .collect();
        let known = |p: &String| bundle.doc(p).is_some();
        let removed = self.gone;
        let structure_changed = removed.iter().any(known)
            || reread.keys().any(|p| !known(p))
            || bundle.assets != assets;
        let popts = ParseOptions::validation(cfg, Some(now));
        let read = reread.values().filter(|b| b.is_none()).count() as u64;
        let fresh: Vec<Document> = reread
            .par_iter()
            .map(|(rel, kept)| {
                if let Some(bytes) = kept {
                    return Ok(doc::parse(rel, bytes, &popts));
                }
                let bytes = walk::read_file(&folder.root().join(rel)).map_err(|e| {
                    Error::FileUnreadable {
                        rel: rel.clone(),
                        root: root.clone(),
                        source: e,
                    }
                })?;
                Ok(doc::parse(rel, &bytes, &popts))
            })
            .collect::<Result<_, Error>>()?;
        let reread: HashSet<String> = reread.into_keys().collect();
        let b = if structure_changed {
            // Fresh documents take their old places, so the bundle's sort
            // by path finds the order nearly made.
            let (old_docs, _) = bundle.into_parts();
            let mut fresh: HashMap<String, Document> =
                fresh.into_iter().map(|d| (d.path.clone(), d)).collect();
            let mut docs: Vec<Document> = old_docs
                .into_iter()
                .filter(|d| !removed.contains(&d.path))
                .map(|d| fresh.remove(&d.path).unwrap_or(d))
                .collect();
            docs.extend(fresh.into_values());
            Bundle::assemble(docs, assets, |path| read_text(root, path))?
        } else {
            // The same paths: each fresh document in its old place.
            let mut b = bundle;
            for d in fresh {
                b.replace(d);
            }
            b.fill_digests(|path| read_text(root, path))?;
            b
        };
        // Documents whose checks must run again.
        let recheck: HashSet<String> = b
            .docs
            .par_iter()
            .filter(|d| {
                structure_changed
                    || reread.contains(&d.path)
                    || retimed.contains(&d.path)
                    || d.concept
                        .as_ref()
                        .is_some_and(|c| c.surface_glob.is_some() || c.publication.is_some())
                    || (!reread.is_empty() && links_into(&b, d, &reread))
            })
            .map(|d| d.path.clone())
            .collect();
        let mut loaded = crate::project::Loaded {
            bundle: b,
            extra: crate::project::walk_findings(cfg, folder.unreadable().to_vec()),
            repo: None,
            stamps: vec![],
        };
        let touched = |p: &str| reread.contains(p);
        let (extra, git) = extra_findings_kept(
            project,
            &mut loaded,
            skip_provenance,
            self.git,
            Some(&touched),
        );
        // The kept findings are updated in place: only the documents
        // checked again (and those gone) change their entries.
        for p in &removed {
            per_doc.remove(p);
        }
        let report = bundle::validate_with(&loaded.bundle, cfg, extra, |docs, check| {
            let fresh: Vec<(usize, Vec<Diagnostic>)> = docs
                .par_iter()
                .enumerate()
                .filter(|(_, d)| recheck.contains(&d.path) || !per_doc.contains_key(&d.path))
                .map(|(i, d)| (i, check(d)))
                .collect();
            for (i, found) in fresh {
                match per_doc.get_mut(&docs[i].path) {
                    Some(slot) => *slot = found,
                    None => {
                        per_doc.insert(docs[i].path.clone(), found);
                    }
                }
            }
            docs.par_iter()
                .map(|d| per_doc.get(&d.path).cloned().unwrap_or_default())
                .collect()
        });
        let work = Work {
            cold: false,
            parsed: reread.len(),
            checked: recheck.len(),
            ..Work::default()
        };
        let per_doc = PerDoc::ByPath(per_doc);
        let checks = Checks::after(self.config, now, loaded.bundle, per_doc, git, work);
        Ok((report, checks, read))
    }
}

/// The files of `folder` (refreshed) as a first run reads them: its files
/// and the directories its walk could not read.
pub(crate) fn listed(folder: &LiveFolder) -> walk::Walked {
    let root = folder.root();
    let names: Vec<&String> = folder.files().collect();
    walk::Walked {
        files: names
            .par_iter()
            .map(|p| ((*p).clone(), root.join(p)))
            .collect(),
        unreadable: folder.unreadable().to_vec(),
        ..walk::Walked::default()
    }
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
