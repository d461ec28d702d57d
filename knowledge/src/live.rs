//! The project's bundle kept live for the MCP server: one view of the
//! bundle folder for every tool and resource.
//!
//! Config discovery (re-read when its file changes) decides the bundle
//! folder; a folder [`Knowledge`] ([`Knowledge::project_folder`], or the
//! server's own folder connection when it serves that folder) keeps the
//! folder's one set of stamps and one watch, and from them the parsed
//! documents (the bundle tools, the concept resources), the last
//! validation (`validate_bundle`) and, once a knowledge tool or
//! `okf://manifest` asks, the read model. On Linux a
//! change made before a request is always seen by it; elsewhere every call
//! re-checks file metadata.

use crate::documents::{Bodies, Documents};
use crate::kb::{folder_bundle_name, Knowledge};
use crate::project::Stamp;
use okfit_core::bundle::Bundle;
use okfit_store::discover::{self, Project};
use okfit_store::dsn::Dsn;
use okfit_store::error::Error;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The project's bundle, kept fresh. Shared by reference: a call holds the
/// bundle only while it reads it.
pub struct Live {
    start: PathBuf,
    /// A folder connection this view may serve from (see [`Live::sharing`]).
    shared: Option<Arc<Knowledge>>,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The project as last resolved, with its config file's stamp.
    project: Option<(Arc<Project>, Option<Stamp>)>,
    /// The bundle folder of that project.
    kb: Option<Arc<Knowledge>>,
    /// The folder's generation when the set of concepts was last announced.
    announced: u64,
    /// The config moved the bundle to another folder since the last
    /// announcement.
    moved: bool,
}

fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

/// True when `kb` is a folder connection over `root` (canonical).
fn serves(kb: &Knowledge, root: &Path) -> bool {
    matches!(kb.dsn(), Dsn::Folder { path } if canonical(path) == root)
}

impl Live {
    /// A live view whose config discovery starts at `start`.
    pub fn new(start: PathBuf) -> Live {
        Live {
            start,
            shared: None,
            state: Mutex::new(State::default()),
        }
    }

    /// Serves from `kb`, a folder connection, when the project's bundle is
    /// its folder, instead of opening the folder a second time.
    pub fn sharing(mut self, kb: Arc<Knowledge>) -> Live {
        self.shared = Some(kb);
        self
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Resolves the project (config discovery) without loading the bundle.
    pub fn project(&self) -> Result<Project, Error> {
        discover::resolve(None, &self.start, None)
    }

    /// The project and its bundle folder, re-resolved when discovery finds
    /// another config file or the file's metadata changed.
    fn current(&self) -> Result<(Arc<Project>, Arc<Knowledge>), Error> {
        let mut st = self.lock();
        let (found, _) = discover::find(&discover::absolute(&self.start));
        let cstamp = found.as_deref().and_then(Stamp::of);
        let same = st
            .project
            .as_ref()
            .is_some_and(|(p, s)| p.config_path == found && *s == cstamp);
        if !same {
            let project = self.project()?;
            let cstamp = project.config_path.as_deref().and_then(Stamp::of);
            let root = canonical(&project.bundle_root);
            if !st.kb.as_ref().is_some_and(|k| serves(k, &root)) {
                let kb = match &self.shared {
                    Some(k) if serves(k, &root) => k.clone(),
                    _ => Arc::new(Knowledge::project_folder(root)),
                };
                st.moved |= st.kb.is_some();
                st.announced = kb.generation();
                st.kb = Some(kb);
            }
            st.project = Some((Arc::new(project), cstamp));
        }
        match (&st.project, &st.kb) {
            (Some((p, _)), Some(kb)) => Ok((p.clone(), kb.clone())),
            _ => Err(Error::Io("bundle not loaded".into())),
        }
    }

    /// Validates the project's bundle at `now` as `okfit validate` does,
    /// re-reading and re-checking only what changed since the last call.
    pub fn validate(
        &self,
        now: okfit_core::time::Instant,
        skip_provenance: bool,
    ) -> Result<(Project, okfit_core::bundle::Report), Error> {
        let (project, kb) = self.current()?;
        let report = kb.validate(&project, now, skip_provenance)?;
        Ok(((*project).clone(), report))
    }

    /// Resolves the project and walks and watches its bundle folder, if no
    /// call did yet: work a server does as it starts, so the first call
    /// finds it done.
    pub fn look(&self) -> Result<(), Error> {
        let (_, kb) = self.current()?;
        kb.look()
    }

    /// Parses the bundle's documents ahead of the first call that reads
    /// them, without keeping a call waiting meanwhile
    /// ([`Knowledge::prepare_documents`]).
    pub fn prepare(&self) -> Result<(), Error> {
        let (project, kb) = self.current()?;
        kb.prepare_documents(&project)
    }

    /// Validates the bundle ahead of the first `validate_bundle`, at this
    /// instant, without keeping a call waiting meanwhile
    /// ([`Knowledge::prepare_validation`]).
    pub fn prepare_validation(&self) -> Result<(), Error> {
        let (project, kb) = self.current()?;
        kb.prepare_validation(&project, okfit_store::clock::wall_clock())
    }

    /// What the last [`Live::validate`] did (`None` before the first).
    pub fn validation_work(&self) -> Option<crate::warm::Work> {
        let kb = self.lock().kb.clone();
        kb.and_then(|k| k.validation_work())
    }

    /// Brings the bundle up to date, scans the bodies `bodies` asks for,
    /// and runs `f` over the bundle with its project.
    pub fn read<R>(
        &self,
        bodies: Bodies<'_>,
        f: impl FnOnce(&Project, &Bundle) -> R,
    ) -> Result<R, Error> {
        let (project, kb) = self.current()?;
        kb.documents(&project, bodies, |d: &Documents| f(&project, d.bundle()))
    }

    /// The knowledge behind `okf://manifest` and the knowledge tools in
    /// project mode: the bundle folder these documents come from. Refused
    /// when the folder is missing or its name is no bundle name.
    pub fn knowledge(&self) -> Result<Arc<Knowledge>, Error> {
        let (project, kb) = self.current()?;
        let root = &project.bundle_root;
        if !root.is_dir() {
            return Err(Error::BundleNotDirectory(root.clone()));
        }
        folder_bundle_name(&canonical(root))?;
        Ok(kb)
    }

    /// True when files may have changed since the last refresh (false
    /// before the first, and while a call holds the folder: that call
    /// refreshes). Consumes the watch's events.
    pub fn poll(&self) -> bool {
        let kb = match self.state.try_lock() {
            Ok(st) => st.kb.clone(),
            Err(_) => return false,
        };
        kb.and_then(|k| k.poll()).unwrap_or(false)
    }

    /// Whether the set of concepts changed since this was last asked (then
    /// `notifications/resources/list_changed` is due), as of the last read.
    pub fn take_change(&self) -> bool {
        let mut st = self.lock();
        let generation = st.kb.as_ref().map_or(0, |k| k.generation());
        let changed = std::mem::take(&mut st.moved) || generation != st.announced;
        st.announced = generation;
        changed
    }
}
