//! The parsed documents of a bundle folder, the layer the bundle tools
//! (list, get, neighbours, stale) and the concept resources read. It is
//! kept by the folder's one live view ([`crate::folder`]) beside the read
//! model, made only when a bundle tool first asks, and refreshed from the
//! same reads of the changed files.

use okfit_core::bundle::{self, Bundle};
use okfit_core::doc::{self, Document, ParseOptions};
use okfit_store::discover::Project;
use okfit_store::error::Error;
use okfit_store::live::Stamp;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

/// Which bodies to scan before a bundle tool reads the documents (they are
/// parsed without them; body links and slugs feed the link graph and
/// `get_concept`).
#[derive(Clone, Copy, Debug)]
pub enum Bodies<'a> {
    /// None.
    None,
    /// The body of the concept with this id (or short id), if there is one.
    Of(&'a str),
    /// Every body.
    All,
}

/// A bundle folder's documents as the last refresh left them, parsed with
/// the project's config (frontmatter mappings not kept: `get_concept`
/// re-reads its one file).
pub struct Documents {
    project: Arc<Project>,
    bundle: Bundle,
    /// Markdown files the walk found but that could not be read, with the
    /// error (the bundle tools refuse while one is left).
    unreadable: BTreeMap<String, (std::io::ErrorKind, String)>,
}

fn parse_options(project: &Project) -> ParseOptions<'_> {
    ParseOptions {
        config: &project.config,
        // Staleness is computed per call, not baked into the parse.
        now: None,
        keep_frontmatter: false,
        digests: false,
        diagnostics: false,
        skip_body: true,
    }
}

/// A Markdown file read (or not) for a refresh.
pub(crate) type Read = (String, std::io::Result<Arc<[u8]>>);

impl Documents {
    /// Reads and parses `files` (every Markdown file of the folder:
    /// relative and absolute paths, in path order) with `project`'s
    /// config, each file parsed as soon as it is read so its bytes are not
    /// kept; `assets` are the folder's other files. Also returns the files
    /// that could not be read, and the stamps of those that were (from
    /// the open file, in path order).
    pub(crate) fn read(
        project: Arc<Project>,
        files: Vec<(String, std::path::PathBuf)>,
        assets: Vec<String>,
    ) -> (Documents, Vec<String>, Vec<(String, Stamp)>) {
        let opts = parse_options(&project);
        let opener = okfit_store::walk::Opener::new(files.iter().map(|(_, abs)| abs.as_path()));
        // The peak is this layer's documents held once: the documents are
        // filtered before the parallel parse (so rayon writes each result
        // straight into its slot instead of concatenating chunks), and
        // the results become documents in the same buffer.
        let files: Vec<(String, std::path::PathBuf)> = files
            .into_iter()
            .filter(|(rel, _)| bundle::is_document(rel))
            .collect();
        let parsed: Vec<Result<(Document, Stamp), (String, std::io::Error)>> = files
            .into_par_iter()
            .map(|(rel, abs)| match opener.read_stamped(&abs) {
                Ok((b, stamp)) => Ok((doc::parse(&rel, &b, &opts), stamp)),
                Err(e) => Err((rel, e)),
            })
            .collect();
        let mut stamps = Vec::with_capacity(parsed.len());
        let mut unreadable = BTreeMap::new();
        let docs: Vec<Document> = parsed
            .into_iter()
            .filter_map(|r| match r {
                Ok((d, stamp)) => {
                    stamps.push((d.path.clone(), stamp));
                    Some(d)
                }
                Err((rel, e)) => {
                    unreadable.insert(rel, (e.kind(), e.to_string()));
                    None
                }
            })
            .collect();
        let failed: Vec<String> = unreadable.keys().cloned().collect();
        let d = Documents {
            project,
            bundle: Bundle::from_parts(docs, assets),
            unreadable,
        };
        (d, failed, stamps)
    }

    /// The project whose config the documents were parsed with.
    pub(crate) fn project(&self) -> &Arc<Project> {
        &self.project
    }

    /// The bundle.
    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }

    /// The concept ids, in path order.
    pub(crate) fn ids(&self) -> Vec<String> {
        self.bundle.concepts().map(|(_, c)| c.id.clone()).collect()
    }

    /// The first Markdown file that could not be read, as the error a load
    /// of the bundle reports.
    pub(crate) fn check(&self, root: &Path) -> Result<(), Error> {
        match self.unreadable.iter().next() {
            None => Ok(()),
            Some((rel, (kind, message))) => Err(Error::FileUnreadable {
                rel: rel.clone(),
                root: root.to_path_buf(),
                source: std::io::Error::new(*kind, message.clone()),
            }),
        }
    }

    /// Applies one refresh: documents gone, documents read again (or that
    /// could not be read), and the folder's non-Markdown files. True when
    /// the set of concept ids may have changed.
    pub(crate) fn apply(&mut self, gone: &[String], read: &[Read], assets: Vec<String>) -> bool {
        let opts = parse_options(&self.project);
        let parsed: Vec<Document> = read
            .par_iter()
            .filter(|(rel, _)| bundle::is_document(rel))
            .filter_map(|(rel, r)| r.as_ref().ok().map(|b| doc::parse(rel, b, &opts)))
            .collect();
        let in_place = gone.is_empty()
            && parsed.len() == read.len()
            && assets == self.bundle.assets
            && parsed.iter().all(|d| self.bundle.doc(&d.path).is_some());
        if in_place {
            // Files edited, none added or removed: each document takes its
            // old place, without rebuilding the bundle.
            let mut ids_moved = false;
            for d in parsed {
                self.unreadable.remove(&d.path);
                let id = d.concept.as_ref().map(|c| c.id.clone());
                if let Some(old) = self.bundle.replace(d) {
                    ids_moved |= old.concept.map(|c| c.id) != id;
                }
            }
            return ids_moved;
        }
        let before = self.ids();
        let (docs, _) =
            std::mem::replace(&mut self.bundle, Bundle::from_parts(vec![], vec![])).into_parts();
        let mut by_path: HashMap<String, Document> =
            docs.into_iter().map(|d| (d.path.clone(), d)).collect();
        for p in gone {
            by_path.remove(p);
            self.unreadable.remove(p);
        }
        for d in parsed {
            self.unreadable.remove(&d.path);
            by_path.insert(d.path.clone(), d);
        }
        for (rel, r) in read {
            if let Err(e) = r {
                by_path.remove(rel);
                self.unreadable
                    .insert(rel.clone(), (e.kind(), e.to_string()));
            }
        }
        self.bundle = Bundle::from_parts(by_path.into_values().collect(), assets);
        self.ids() != before
    }

    /// Scans the bodies `which` asks for that are not scanned yet.
    pub(crate) fn fill(&mut self, root: &Path, which: Bodies<'_>) {
        let pending: Vec<String> = match which {
            Bodies::None => return,
            Bodies::Of(id) => match self.bundle.find_concept(id) {
                Ok((d, _)) if d.body_pending => vec![d.path.clone()],
                _ => return,
            },
            Bodies::All => self.bundle.bodies_pending(),
        };
        let scanned: Vec<(String, Vec<doc::Link>, Vec<String>)> = pending
            .par_iter()
            .filter_map(|p| {
                let bytes = okfit_store::walk::read_file(&root.join(p)).ok()?;
                let (links, slugs) = doc::body_links(&String::from_utf8_lossy(&bytes));
                Some((p.clone(), links, slugs))
            })
            .collect();
        for (p, links, slugs) in scanned {
            self.bundle.fill_body(&p, links, slugs);
        }
    }
}
