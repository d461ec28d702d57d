//! The project's bundle kept live for the MCP server: one view of the
//! bundle folder for every tool and resource.
//!
//! Config discovery (re-read when its file changes) decides the bundle
//! folder; a folder [`Knowledge`] opened with
//! [`Knowledge::project_folder`] keeps the folder's one set of stamps, one
//! [`okfit_store::watch::Watch`] and, from one read and parse of each
//! changed file, both the read model (`okf://manifest`, the knowledge
//! tools) and the parsed documents (the bundle tools and the concept
//! resources). A change on disk is therefore parsed once and seen the same
//! way by every reader; on Linux a change made before a request is always
//! seen by it, elsewhere every call re-checks file metadata.

use crate::documents::Documents;
use crate::kb::{folder_bundle_name, Knowledge};
use crate::project::Stamp;
use okfit_core::bundle::Bundle;
use okfit_store::discover::{self, Project};
use okfit_store::dsn::Dsn;
use okfit_store::error::Error;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

/// The project's bundle, kept fresh. Shared by reference: every method
/// takes `&self`, and a call holds the bundle only while it reads it.
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
    /// The documents' generation as this view's last refresh saw it, and
    /// as last announced.
    seen: u64,
    announced: u64,
    /// The config moved the bundle to another folder since the last
    /// announcement.
    moved: bool,
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
    fn current(&self, st: &mut State) -> Result<(Arc<Project>, Arc<Knowledge>), Error> {
        let (found, _) = discover::find(&discover::absolute(&self.start));
        let cstamp = found.as_deref().and_then(Stamp::of);
        let same = st
            .project
            .as_ref()
            .is_some_and(|(p, s)| p.config_path == found && *s == cstamp);
        if !same {
            let project = self.project()?;
            let cstamp = project.config_path.as_deref().and_then(Stamp::of);
            let root = std::fs::canonicalize(&project.bundle_root)
                .unwrap_or_else(|_| project.bundle_root.clone());
            if !st.kb.as_ref().is_some_and(|k| serves(k, &root)) {
                let (kb, generation) = self.open(root);
                st.moved |= st.kb.is_some();
                st.kb = Some(kb);
                st.seen = generation;
                st.announced = generation;
            }
            st.project = Some((Arc::new(project), cstamp));
        }
        match (&st.project, &st.kb) {
            (Some((p, _)), Some(kb)) => Ok((p.clone(), kb.clone())),
            _ => Err(Error::Io("bundle not loaded".into())),
        }
    }

    /// The folder `root` as a knowledge that keeps documents, and their
    /// generation.
    fn open(&self, root: PathBuf) -> (Arc<Knowledge>, u64) {
        if let Some(kb) = &self.shared {
            if serves(kb, &root) {
                if let Some(generation) = kb.keep_documents() {
                    return (kb.clone(), generation);
                }
            }
        }
        (Arc::new(Knowledge::project_folder(root)), 0)
    }

    /// Brings the bundle up to date and runs `f` over it with its project.
    pub fn read<R>(&self, f: impl FnOnce(&Project, &Bundle) -> R) -> Result<R, Error> {
        let (project, kb) = self.current(&mut self.lock())?;
        let (r, generation) =
            kb.documents(|d: &Documents| (f(&project, d.bundle()), d.generation()))?;
        let mut st = self.lock();
        if st.kb.as_ref().is_some_and(|k| Arc::ptr_eq(k, &kb)) {
            st.seen = st.seen.max(generation);
        }
        Ok(r)
    }

    /// Brings the bundle up to date.
    pub fn refresh(&self) -> Result<(), Error> {
        self.read(|_, _| ())
    }

    /// The knowledge behind `okf://manifest` and the knowledge tools in
    /// project mode: the same folder the bundle tools read. A config that
    /// stops resolving keeps the folder it named last.
    pub fn knowledge(&self) -> Result<Arc<Knowledge>, Error> {
        let kb = {
            let mut st = self.lock();
            match self.current(&mut st) {
                Ok((_, kb)) => kb,
                Err(e) => st.kb.clone().ok_or(e)?,
            }
        };
        if let Some(root) = folder_of(&kb) {
            if !root.is_dir() {
                return Err(Error::BundleNotDirectory(root.to_path_buf()));
            }
            folder_bundle_name(root)?;
        }
        Ok(kb)
    }

    /// True when files changed since the last refresh, or a call to the
    /// knowledge tools refreshed the folder and this view has not looked
    /// since (always true where no watch is available). Never waits for a
    /// call in progress: false then, as that call refreshes.
    pub fn poll(&self) -> bool {
        let Ok(st) = self.state.try_lock() else {
            return false;
        };
        let Some(kb) = &st.kb else {
            return false;
        };
        match kb.poll() {
            Some((changed, generation)) => changed || generation != st.seen,
            None => false,
        }
    }

    /// Whether the set of concepts changed since this was last asked (then
    /// `notifications/resources/list_changed` is due).
    pub fn take_change(&self) -> bool {
        let mut st = self.lock();
        let changed = std::mem::take(&mut st.moved) || st.seen != st.announced;
        st.announced = st.seen;
        changed
    }
}

/// Whether `kb` is the folder `root` (canonical where it exists).
fn serves(kb: &Knowledge, root: &Path) -> bool {
    folder_of(kb).is_some_and(|p| p == root || std::fs::canonicalize(p).is_ok_and(|c| c == root))
}

fn folder_of(kb: &Knowledge) -> Option<&Path> {
    match kb.dsn() {
        Dsn::Folder { path } => Some(path),
        _ => None,
    }
}
