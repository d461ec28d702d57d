//! The live bundle behind the MCP server: parsed once, kept in memory, and
//! refreshed before each answer from the files whose metadata changed.
//! A [`Watch`] on every bundle directory says whether anything changed
//! (exactly on Linux, where a change made before a request is always seen
//! by it; elsewhere every call re-checks file metadata).

use crate::project::{self, LoadOptions, Stamp};
use okfit_core::bundle::Bundle;
use okfit_core::doc::{self, Document, ParseOptions};
use okfit_store::discover::{self, Project};
use okfit_store::error::Error;
use okfit_store::walk;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use okfit_store::watch::Watch;

fn stamp(p: &Path) -> Option<Stamp> {
    Stamp::of(p)
}

struct Loaded {
    project: Project,
    config_stamp: Option<Stamp>,
    bundle: Bundle,
    stamps: HashMap<String, Stamp>,
}

/// The project's bundle, kept fresh.
pub struct Live {
    start: PathBuf,
    loaded: Option<Loaded>,
    watch: Option<Watch>,
    pending: bool,
    unannounced: bool,
}

impl Live {
    /// A live view whose config discovery starts at `start`.
    pub fn new(start: PathBuf) -> Live {
        Live {
            start,
            loaded: None,
            watch: None,
            pending: false,
            unannounced: false,
        }
    }

    /// True when files changed since the last refresh (always true where no
    /// watch is available). Consumes the pending change events.
    pub fn poll(&mut self) -> bool {
        self.pending |= self.watch.as_mut().is_none_or(Watch::changed);
        self.loaded.is_some() && self.pending
    }

    /// Scans the bodies of `only` (a bundle-relative path), or of every
    /// document, that were parsed without them; body links and slugs are
    /// needed by the link graph and by `get_concept`.
    pub fn fill_bodies(&mut self, only: Option<&str>) -> Result<(), Error> {
        let Some(l) = self.loaded.as_mut() else {
            return Ok(());
        };
        let pending: Vec<String> = match only {
            Some(p) => l
                .bundle
                .doc(p)
                .filter(|d| d.body_pending)
                .map(|d| vec![d.path.clone()])
                .unwrap_or_default(),
            None => l.bundle.bodies_pending(),
        };
        if pending.is_empty() {
            return Ok(());
        }
        let root = l.project.bundle_root.clone();
        use rayon::prelude::*;
        let scanned: Vec<(String, Vec<doc::Link>, Vec<String>)> = pending
            .par_iter()
            .filter_map(|p| {
                let bytes = std::fs::read(root.join(p)).ok()?;
                let (links, slugs) = doc::body_links(&String::from_utf8_lossy(&bytes));
                Some((p.clone(), links, slugs))
            })
            .collect();
        for (p, links, slugs) in scanned {
            l.bundle.fill_body(&p, links, slugs);
        }
        Ok(())
    }

    /// The bundle as the last [`Live::fresh`] left it (no refresh).
    pub fn current(&self) -> Result<(&Project, &Bundle), Error> {
        self.loaded
            .as_ref()
            .map(|l| (&l.project, &l.bundle))
            .ok_or_else(|| Error::Io("bundle not loaded".into()))
    }

    /// Resolves the project (config discovery) without loading the bundle.
    pub fn project(&self) -> Result<Project, Error> {
        discover::resolve(None, &self.start, None)
    }

    /// Brings the bundle up to date and returns it with its project.
    pub fn fresh(&mut self) -> Result<(&Project, &Bundle), Error> {
        // The config is re-read only when discovery finds another file or
        // the file's metadata changed.
        let (found, _) = discover::find(&discover::absolute(&self.start));
        let cstamp = found.as_deref().and_then(stamp);
        let same_config = self
            .loaded
            .as_ref()
            .is_some_and(|l| l.project.config_path == found && l.config_stamp == cstamp);
        if !same_config {
            let project = self.project()?;
            let cstamp = project.config_path.as_deref().and_then(stamp);
            let before: Option<Vec<String>> = self.loaded.as_ref().map(|l| ids(&l.bundle));
            self.loaded = None;
            // Watch first, so a change made during the load is not missed.
            let walked = walk::walk(&project.bundle_root)?;
            self.watch = Watch::new(&walked.dirs);
            self.pending = false;
            let loaded = load_full(project, walked, cstamp)?;
            self.unannounced |= before.is_some_and(|b| b != ids(&loaded.bundle));
            self.loaded = Some(loaded);
        } else if self.poll() {
            self.pending = false;
            if let Some(l) = self.loaded.as_mut() {
                let walked = walk::walk(&l.project.bundle_root)?;
                // A directory new since the last walk counts as a change
                // (see Watch::cover), so nothing written into it is missed.
                if let Some(w) = self.watch.as_mut() {
                    if !w.cover(&walked.dirs) {
                        self.watch = None;
                    }
                }
                self.unannounced |= refresh(l, walked)?;
            }
        }
        self.current()
    }

    /// Whether the set of concepts changed since this was last asked (then
    /// `notifications/resources/list_changed` is due).
    pub fn take_change(&mut self) -> bool {
        std::mem::take(&mut self.unannounced)
    }
}

fn ids(b: &Bundle) -> Vec<String> {
    b.concepts().map(|(_, c)| c.id.clone()).collect()
}

fn parse_opts(project: &Project) -> ParseOptions<'_> {
    ParseOptions {
        config: &project.config,
        now: None,
        keep_frontmatter: false,
        digests: false,
        diagnostics: false,
        skip_body: true,
    }
}

fn load_full(
    project: Project,
    walked: walk::Walked,
    config_stamp: Option<Stamp>,
) -> Result<Loaded, Error> {
    // Frontmatter mappings are not kept (get_concept re-reads its one file),
    // which keeps a 10,000-concept bundle well under 100 MB.
    let opts = LoadOptions {
        no_diagnostics: true,
        stamps: true,
        ..LoadOptions::default()
    };
    // `now: None`: staleness is computed per call, not baked into the parse.
    let loaded = project::load_walked(&project, walked, &opts)?;
    let root = &project.bundle_root;
    let mut stamps: HashMap<String, Stamp> = loaded.stamps.into_iter().collect();
    for a in &loaded.bundle.assets {
        if let Some(s) = stamp(&root.join(a)) {
            stamps.insert(a.clone(), s);
        }
    }
    Ok(Loaded {
        project,
        config_stamp,
        bundle: loaded.bundle,
        stamps,
    })
}

/// Re-parses only the walked files whose metadata changed; true when the
/// set of concepts changed.
fn refresh(l: &mut Loaded, walked: walk::Walked) -> Result<bool, Error> {
    let root = l.project.bundle_root.clone();
    let mut stamps = HashMap::with_capacity(walked.files.len());
    let mut changed: Vec<(String, PathBuf)> = vec![];
    for (rel, abs) in &walked.files {
        let Some(s) = stamp(abs) else { continue };
        if l.stamps.get(rel) != Some(&s) {
            changed.push((rel.clone(), abs.clone()));
        }
        stamps.insert(rel.clone(), s);
    }
    let removed = l.stamps.keys().any(|k| !stamps.contains_key(k));
    if changed.is_empty() && !removed {
        return Ok(false);
    }
    let before = ids(&l.bundle);
    let bundle = std::mem::replace(&mut l.bundle, Bundle::from_parts(vec![], vec![]));
    let (docs, _) = bundle.into_parts();
    let mut by_path: HashMap<String, Document> = docs
        .into_iter()
        .filter(|d| stamps.contains_key(&d.path))
        .map(|d| (d.path.clone(), d))
        .collect();
    let opts = parse_opts(&l.project);
    for (rel, abs) in &changed {
        if rel.ends_with(".md") {
            let bytes = std::fs::read(abs).map_err(|e| Error::FileUnreadable {
                rel: rel.clone(),
                root: root.clone(),
                source: e,
            })?;
            by_path.insert(rel.clone(), doc::parse(rel, &bytes, &opts));
        }
    }
    let assets = walked
        .files
        .iter()
        .filter(|(p, _)| !p.ends_with(".md"))
        .map(|(p, _)| p.clone())
        .collect();
    l.bundle = Bundle::from_parts(by_path.into_values().collect(), assets);
    l.stamps = stamps;
    Ok(before != ids(&l.bundle))
}
