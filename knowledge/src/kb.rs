//! Knowledge over a connection: the read model of a bundle folder or of a
//! store tenant, kept current, answering `manifest`, `search`, `get` and
//! `snapshot`, and committing changes.
//!
//! A folder connection reads the files through the folder's one live view
//! ([`crate::folder`]: a watch says when to re-check metadata; unchanged
//! files are never parsed again). A store
//! connection loads the compiled rows once, catches up with commits made
//! by other processes before each answer, and reads search postings for
//! the words asked about.

use crate::documents::{Bodies, Documents};
use crate::folder::FolderKb;
use crate::options::GetOptions;
use crate::tenant::{Loaded, StoreKb};
use crate::view::View;
use okfit_core::kb::compile::{self, Compiled};
use okfit_core::kb::model::{self, Sources};
use okfit_core::kb::names;
use okfit_core::kb::search;
use okfit_core::time::Instant;
use okfit_store::beneath::Root;
use okfit_store::change::{
    sha256_hex, Change, CommitError, Committed, Finding, Pre, RevisionPage, MAX_CHANGES,
    MAX_DOCUMENT_BYTES, MAX_GET_IDS, MAX_TRANSACTION_BYTES,
};
use okfit_store::dsn::Dsn;
use okfit_store::error::Error;
use okfit_store::progress::Task;
use okfit_store::sqlite::Storage;
use okfit_store::walk;
use rayon::prelude::*;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

enum Backend {
    Folder(Box<FolderKb>),
    /// A store tenant (see [`Knowledge::store`]).
    Store,
    /// Answers come from a running `okfit serve` (see [`Knowledge::remote`]).
    Remote,
}

/// Knowledge behind one connection string.
pub struct Knowledge {
    dsn: Dsn,
    name: String,
    now: Option<Instant>,
    inner: Mutex<Backend>,
    /// A store tenant's model and connections, shared by concurrent reads.
    store: Option<StoreKb>,
    remote: Option<crate::remote::Remote>,
    /// A validation made ahead of the first call
    /// ([`Knowledge::prepare_validation`]), which that call waits for.
    validation_ahead: crate::ahead::Ahead,
}

/// A local search's query and `k`, checked once for every kind of search.
fn check_search(query: &str, k: usize) -> Result<(), Error> {
    if query.trim().is_empty() {
        return Err(Error::Refused("query must not be empty".into()));
    }
    if !(1..=search::MAX_K).contains(&k) {
        return Err(Error::Refused(format!(
            "k must be an integer from 1 to {}",
            search::MAX_K
        )));
    }
    Ok(())
}

/// The bundle name a folder connection serves: the folder's name.
pub fn folder_bundle_name(path: &Path) -> Result<String, Error> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("")
        .to_string();
    names::check_bundle(&name).map_err(|e| {
        Error::Refused(format!(
            "{e} (a folder connection serves its folder as the bundle of that name; rename the folder or put it into a store with --bundle)"
        ))
    })?;
    Ok(name)
}

fn now_or(now: Option<Instant>) -> Instant {
    now.unwrap_or_else(okfit_store::clock::wall_clock)
}

impl Knowledge {
    /// Opens knowledge over a connection string. A store tenant that does
    /// not exist yet opens fine: reads say so, the first write creates it.
    pub fn open(dsn: &str) -> Result<Knowledge, Error> {
        let parsed = okfit_store::dsn::parse(dsn).map_err(Error::Usage)?;
        Knowledge::from_dsn(parsed)
    }

    /// Opens knowledge over a parsed connection.
    pub fn from_dsn(dsn: Dsn) -> Result<Knowledge, Error> {
        let (name, backend) = match &dsn {
            Dsn::Folder { path } => {
                if !path.is_dir() {
                    return Err(Error::BundleNotDirectory(path.clone()));
                }
                let name = folder_bundle_name(path)?;
                (
                    name,
                    Backend::Folder(Box::new(FolderKb::new(path.clone()))),
                )
            }
            Dsn::Store { tenant, .. } | Dsn::Postgres { tenant, .. } => {
                (tenant.clone(), Backend::Store)
            }
            Dsn::Npipe { .. } => {
                return Err(Error::Usage(
                    "npipe transport is unavailable: run the daemon on loopback TCP and connect with okf+http://127.0.0.1:PORT?token=...".into(),
                ))
            }
            Dsn::Unix {
                socket,
                tenant,
                token,
            } => {
                if tenant.is_none() && token.is_none() {
                    return Err(Error::Usage(format!(
                        "{dsn}: a socket connection needs ?tenant= (or a token that names one)"
                    )));
                }
                return Knowledge::remote(
                    &dsn,
                    crate::remote::Target::Unix(socket.clone()),
                    tenant,
                    token,
                );
            }
            Dsn::Http {
                origin,
                tenant,
                token,
            } => {
                let url = url::Url::parse(origin)
                    .map_err(|_| Error::Usage(format!("invalid dsn \"{dsn}\"")))?;
                let host = url
                    .host_str()
                    .unwrap_or_default()
                    .trim_start_matches('[')
                    .trim_end_matches(']')
                    .to_string();
                let tls = url.scheme() == "https";
                let port = url.port_or_known_default().unwrap_or(if tls { 443 } else { 80 });
                return Knowledge::remote(
                    &dsn,
                    crate::remote::Target::Tcp { host, port, tls },
                    tenant,
                    token,
                );
            }
        };
        let store = dsn
            .store()
            .map(|(at, tenant)| StoreKb::new(at, tenant.to_string()));
        Ok(Knowledge {
            dsn,
            name,
            now: None,
            store,
            inner: Mutex::new(backend),
            remote: None,
            validation_ahead: Default::default(),
        })
    }

    fn remote(
        dsn: &Dsn,
        target: crate::remote::Target,
        tenant: &Option<String>,
        token: &Option<String>,
    ) -> Result<Knowledge, Error> {
        Ok(Knowledge {
            name: tenant.clone().unwrap_or_default(),
            dsn: dsn.clone(),
            now: None,
            inner: Mutex::new(Backend::Remote),
            store: None,
            remote: Some(crate::remote::Remote::new(
                target,
                tenant.clone(),
                token.clone(),
            )?),
            validation_ahead: Default::default(),
        })
    }

    /// Fixes `now` (stale demotion) instead of the wall clock.
    pub fn with_now(mut self, now: Option<Instant>) -> Knowledge {
        self.now = now;
        self
    }

    /// The connection.
    pub fn dsn(&self) -> &Dsn {
        &self.dsn
    }

    /// The tenant (or folder bundle) name.
    pub fn name(&self) -> &str {
        &self.name
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Backend> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Loads a store tenant's read model now rather than at its first
    /// read (a daemon warming up before it says it is ready). A tenant not
    /// created yet has nothing to load.
    pub fn warm(&self) -> Result<(), Error> {
        match self.read(None, |_, _| Ok(())) {
            Err(Error::NoTenant(_)) => Ok(()),
            r => r,
        }
    }

    /// Loads a store tenant's model and every term's postings unless they
    /// number more than `limit` (see the daemon's warm-up): the postings
    /// held, or `None` (more than `limit`, not a store tenant, no tenant).
    pub fn warm_postings(&self, limit: usize) -> Result<Option<usize>, Error> {
        match self.store.as_ref().map(|s| s.load_all_terms(limit)) {
            Some(Err(Error::NoTenant(_))) | None => Ok(None),
            Some(r) => r,
        }
    }

    /// Has commits through this knowledge start their model from
    /// `reader`'s, a knowledge of the same store tenant, sharing its
    /// documents instead of loading a copy of each (a daemon commits and
    /// reads through two, so that a commit never holds the model reads
    /// use). Nothing for other connections.
    pub fn seed_from(&self, reader: &Knowledge) {
        if let (Some(w), Some(r)) = (self.store.as_ref(), reader.store.as_ref()) {
            if self.dsn == reader.dsn {
                w.seed_from(r);
            }
        }
    }

    /// The search postings a store tenant's read model holds now, without
    /// loading anything (`None`: not loaded, or not a store tenant).
    pub fn held_postings(&self) -> Option<usize> {
        self.store.as_ref().and_then(StoreKb::held_postings)
    }

    /// The concepts in a store tenant's read model as loaded now, without
    /// loading it (`None`: not loaded, or not a store tenant).
    pub fn warm_documents(&self) -> Option<usize> {
        self.store.as_ref().and_then(StoreKb::loaded_concepts)
    }

    /// Runs `f` over the current view and a source reader.
    fn read<R>(
        &self,
        query: Option<&str>,
        f: impl FnOnce(&View, &mut dyn Sources) -> Result<R, Error>,
    ) -> Result<R, Error> {
        if let Some(sk) = &self.store {
            return sk.read(query, f);
        }
        let mut guard = self.lock();
        match &mut *guard {
            Backend::Folder(fk) => fk.read(&self.name, query, f),
            Backend::Remote | Backend::Store => {
                Err(Error::Store("a remote connection has no local view".into()))
            }
        }
    }
}

impl Knowledge {
    /// The manifest TSV, whole or for one bundle.
    pub fn manifest(&self, bundle: Option<&str>) -> Result<Arc<str>, Error> {
        if let Some(r) = &self.remote {
            return r.manifest(bundle);
        }
        let now = now_or(self.now);
        self.read(None, |view, _| view.manifest(bundle, now))
    }

    /// The snapshot digest and concept count.
    pub fn snapshot(&self) -> Result<(String, usize), Error> {
        if let Some(r) = &self.remote {
            return crate::remote::ops::snapshot(r);
        }
        self.read(None, |view, _| {
            Ok((view.model.snapshot(), view.model.concepts()))
        })
    }

    /// Ranked search as TSV (reference langonrock §4.2).
    pub fn search(&self, query: &str, k: usize, bundle: Option<&str>) -> Result<String, Error> {
        self.search_with(query, k, bundle, true)
    }

    /// [`Knowledge::search`], with the one-hop expansion optional.
    pub fn search_with(
        &self,
        query: &str,
        k: usize,
        bundle: Option<&str>,
        expand: bool,
    ) -> Result<String, Error> {
        if let Some(r) = &self.remote {
            if query.trim().is_empty() {
                return Err(Error::Refused("query must not be empty".into()));
            }
            return crate::remote::ops::search(r, query, k, bundle, expand);
        }
        check_search(query, k)?;
        let now = now_or(self.now);
        self.read(Some(query), |view, body| {
            view.model
                .search_with(&view.index, query, k, bundle, expand, now, body)
                .map_err(Error::Refused)
        })
    }

    /// Each direct hit of a search with its score broken down by query
    /// term and field (`okfit search --explain`). Local connections only:
    /// a remote daemon answers searches, not their workings.
    pub fn explain(
        &self,
        query: &str,
        k: usize,
        bundle: Option<&str>,
    ) -> Result<Vec<model::Explained>, Error> {
        if self.remote.is_some() {
            return Err(Error::Refused(
                "--explain needs a local connection (a folder or a store), not a remote one".into(),
            ));
        }
        check_search(query, k)?;
        self.read(Some(query), |view, body| {
            view.model
                .explain(&view.index, query, k, bundle, body)
                .map_err(Error::Refused)
        })
    }

    /// Batched slices rendered with the `@@` framing (reference §4.3).
    pub fn get(&self, ids: &[String], opts: &GetOptions) -> Result<String, Error> {
        check_ids(ids)?;
        if let Some(r) = &self.remote {
            let (found, missing) = crate::remote::ops::get(r, ids, opts)?;
            let f: Vec<(&str, &okfit_core::kb::slice::Slice)> =
                found.iter().map(|(i, s)| (i.as_str(), s)).collect();
            let m: Vec<&str> = missing.iter().map(String::as_str).collect();
            return Ok(okfit_core::kb::slice::render(&f, &m));
        }
        self.read(None, |view, body| {
            view.model
                .get_text(ids, opts.section.as_deref(), &opts.slice, body)
                .map_err(Error::Refused)
        })
    }

    /// Batched slices, structured (ids found, ids missing).
    pub fn get_slices(&self, ids: &[String], opts: &GetOptions) -> Result<model::Fetched, Error> {
        check_ids(ids)?;
        if let Some(r) = &self.remote {
            return crate::remote::ops::get(r, ids, opts);
        }
        self.read(None, |view, body| {
            view.model
                .get(ids, opts.section.as_deref(), &opts.slice, body)
                .map_err(Error::Refused)
        })
    }

    /// The current bytes and hash of a document.
    pub fn read_source(
        &self,
        bundle: &str,
        path: &str,
    ) -> Result<Option<(Vec<u8>, String)>, Error> {
        if let Some(r) = &self.remote {
            return crate::remote::ops::read_source(r, bundle, path);
        }
        if let Some(sk) = &self.store {
            let read = sk.read(None, |view, body| {
                let Some(e) = view
                    .model
                    .slot_of(bundle, path)
                    .and_then(|s| view.model.entry(s))
                else {
                    return Ok(None);
                };
                // Stored contents are UTF-8 (checked on commit): the text
                // is the bytes.
                Ok(body
                    .text(e)
                    .map(|t| (t.as_bytes().to_vec(), e.hash.clone())))
            });
            return match read {
                Err(Error::NoTenant(_)) => Ok(None),
                r => r,
            };
        }
        let mut guard = self.lock();
        match &mut *guard {
            Backend::Remote => Ok(None),
            Backend::Folder(fk) => {
                fk.refresh(&self.name)?;
                if bundle != self.name {
                    return Ok(None);
                }
                let shown = format!("{bundle}/{path}");
                let root = fk.root();
                let bytes = match Root::open(root)?.read(path, &shown) {
                    // A file link is read as the walk reads it: only when
                    // its target stays inside the folder.
                    Err(e @ Error::Symlink { .. }) => {
                        let canon =
                            std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
                        let Some(t) = walk::linked_file(&canon, &root.join(path)) else {
                            return Err(e);
                        };
                        Some(
                            std::fs::read(&t)
                                .map_err(|e| Error::Io(format!("cannot read {shown} ({e})")))?,
                        )
                    }
                    r => r?,
                };
                Ok(bytes.map(|b| {
                    let h = sha256_hex(&b);
                    (b, h)
                }))
            }
            Backend::Store => Ok(None),
        }
    }

    /// Every document `(bundle, path, hash)` in bundle and path order.
    pub fn list_sources(&self) -> Result<Vec<(String, String, String)>, Error> {
        if let Some(r) = &self.remote {
            return crate::remote::ops::list_sources(r);
        }
        self.read(None, |view, _| {
            let mut out = vec![];
            for b in view.model.bundles() {
                for (p, s) in view.model.bundle_docs(b) {
                    if let Some(e) = view.model.entry(s) {
                        out.push((b.to_string(), p.to_string(), e.hash.clone()));
                    }
                }
            }
            Ok(out)
        })
    }

    /// Commits changes atomically (store) or writes files (folder). All
    /// names are checked and every precondition holds, or nothing is
    /// written.
    pub fn commit(
        &self,
        changes: Vec<Change>,
        expected_revision: Option<&str>,
    ) -> Result<Committed, CommitError> {
        for c in &changes {
            names::check_bundle(&c.bundle).map_err(Error::Refused)?;
            names::check_path(&c.path).map_err(Error::Refused)?;
            if let Some(b) = &c.content {
                if b.len() > MAX_DOCUMENT_BYTES {
                    return Err(Error::Refused(format!(
                        "document {}/{} is {} bytes; a document may be at most 16 MiB",
                        c.bundle,
                        c.path,
                        b.len()
                    ))
                    .into());
                }
                if std::str::from_utf8(b).is_err() {
                    return Err(Error::Refused(format!(
                        "document {}/{} is not valid UTF-8",
                        c.bundle, c.path
                    ))
                    .into());
                }
            }
        }
        let mut seen = std::collections::HashSet::new();
        for c in &changes {
            if !seen.insert(format!("{}/{}", c.bundle, c.path).to_lowercase()) {
                return Err(Error::Refused(
                    "transaction contains duplicate document targets".into(),
                )
                .into());
            }
        }
        // Compile outside any lock: pure work.
        let task = Task::begin("compiling", Some(changes.len() as u64));
        let compiled: Vec<Option<Compiled>> = changes
            .par_iter()
            .map(|c| {
                task.advance(1);
                c.content
                    .as_ref()
                    .map(|b| compile::compile(&c.path, std::str::from_utf8(b).unwrap_or_default()))
            })
            .collect();
        drop(task);
        let now = now_or(self.now);
        let mut guard = self.lock();
        match &mut *guard {
            Backend::Remote => match &self.remote {
                Some(r) => crate::remote::ops::commit(r, &changes, expected_revision),
                None => Err(Error::Store("no remote connection".into()).into()),
            },
            Backend::Store => match &self.store {
                Some(sk) => sk.exclusive(true, |store, st| {
                    st.commit(
                        store,
                        sk.tenant(),
                        &changes,
                        compiled,
                        expected_revision,
                        now,
                    )
                }),
                None => Err(Error::Store("no store connection".into()).into()),
            },
            Backend::Folder(fk) => {
                if expected_revision.is_some() {
                    return Err(Error::Refused(
                        "a folder connection has no revisions: omit expectedRevision".into(),
                    )
                    .into());
                }
                fk.commit(&self.name, &changes)
            }
        }
    }

    /// The validator's findings for `text` as `bundle/path` in the
    /// current state.
    pub fn diagnostics_for(
        &self,
        bundle: &str,
        path: &str,
        text: &str,
    ) -> Result<Vec<Finding>, Error> {
        if let Some(r) = &self.remote {
            return crate::remote::ops::diagnostics(r, bundle, path, text);
        }
        let now = now_or(self.now);
        // A store has no okfit.toml: the OKF rules without a profile.
        let cfg =
            okfit_core::config::resolve(Some("[bundle]\nprofile = \"none\"\n")).unwrap_or_default();
        self.read(None, |view, _| {
            Ok(view
                .model
                .file_diagnostics(bundle, path, text, &cfg, now)
                .into_iter()
                .map(|d| Finding {
                    level: d.severity.as_str().to_string(),
                    path: path.to_string(),
                    message: d.message,
                })
                .collect())
        })
    }
}

/// Project mode: the bundle folder's parsed documents, kept by the same
/// live view of the folder as the read model (see [`crate::folder`]).
impl Knowledge {
    /// Opens the bundle folder `root` for project mode. Unlike
    /// [`Knowledge::from_dsn`] it opens before the folder exists and
    /// whatever its name: the first read reports a missing folder, and
    /// [`crate::live::Live::knowledge`] refuses a name that is no bundle
    /// name before the knowledge tools read it.
    pub fn project_folder(root: PathBuf) -> Knowledge {
        let name = root
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string();
        Knowledge {
            dsn: Dsn::Folder { path: root.clone() },
            name,
            now: None,
            inner: Mutex::new(Backend::Folder(Box::new(FolderKb::new(root)))),
            store: None,
            remote: None,
            validation_ahead: Default::default(),
        }
    }

    /// Brings the folder up to date and runs `f` over its documents,
    /// parsed with `project`'s config, with the bodies `bodies` asks for
    /// scanned. Refused for connections that are no folder.
    pub fn documents<R>(
        &self,
        project: &Arc<okfit_store::discover::Project>,
        bodies: Bodies<'_>,
        f: impl FnOnce(&Documents) -> R,
    ) -> Result<R, Error> {
        let mut guard = self.lock();
        let Backend::Folder(fk) = &mut *guard else {
            return Err(Error::Refused(
                "the bundle tools read a bundle folder, not this connection".into(),
            ));
        };
        Ok(f(fk.documents(&self.name, project, bodies)?))
    }

    /// Work for the folder made without holding it: `plan` says what it
    /// needs (under the lock; `None`: nothing to do), `make` does it, and
    /// `keep` takes the result under the lock again (it drops it when
    /// files changed meanwhile). A no-op for connections that are no
    /// folder.
    fn aside<P, R>(
        &self,
        plan: impl FnOnce(&str, &mut FolderKb) -> Result<Option<P>, Error>,
        make: impl FnOnce(P) -> Result<R, Error>,
        keep: impl FnOnce(&str, &mut FolderKb, R) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        let planned = match &mut *self.lock() {
            Backend::Folder(fk) => plan(&self.name, fk)?,
            _ => None,
        };
        let Some(planned) = planned else {
            return Ok(());
        };
        let made = make(planned)?;
        if let Backend::Folder(fk) = &mut *self.lock() {
            keep(&self.name, fk, made)?;
        }
        Ok(())
    }

    /// Parses the folder's documents for `project` ahead of the first call
    /// that reads them, holding the folder only to list its files and to
    /// take the result: a call arriving meanwhile (a first validation)
    /// does not wait for the parse. A no-op for connections that are no
    /// folder, and when the documents are parsed already.
    pub fn prepare_documents(
        &self,
        project: &Arc<okfit_store::discover::Project>,
    ) -> Result<(), Error> {
        self.aside(
            |name, fk| fk.documents_plan(name, project),
            |(files, assets, at)| {
                let parsed = crate::documents::Documents::read(project.clone(), files, assets);
                Ok((parsed, at))
            },
            |name, fk, (parsed, at)| fk.install_documents(name, project, parsed, at),
        )
    }

    /// Validates the folder as `project`'s bundle at `now` ahead of the
    /// first `validate_bundle`, holding the folder only to list its files
    /// and to keep the result, so that call re-checks only what changed
    /// since ([`crate::warm`]). A validation arriving meanwhile waits for
    /// this one rather than reading and checking every file beside it.
    /// The run is dropped when files changed meanwhile or a call that
    /// began before it validated first. The git tier runs
    /// too, so that call reuses what it found while `HEAD` stays
    /// ([`okfit_store::git::Memo`]). A no-op for connections that are no
    /// folder, when a validation is kept already, and while another is
    /// being made ahead.
    pub fn prepare_validation(
        &self,
        project: &okfit_store::discover::Project,
        now: okfit_core::time::Instant,
    ) -> Result<(), Error> {
        let Some(_underway) = self.validation_ahead.begin() else {
            return Ok(());
        };
        self.aside(
            |name, fk| fk.validation_plan(name, project),
            |(walked, at)| {
                let (_, checks, stamped) =
                    crate::warm::Checks::cold_over((project, now, false), &walked)?;
                Ok((checks.keyed(), stamped, at))
            },
            |name, fk, (checks, stamped, at)| {
                fk.install_checks(name, project, (checks, stamped), at)
            },
        )
    }

    /// Validates the folder as `project`'s bundle at `now` (with the git
    /// tier unless `skip_provenance`), as `okfit validate` does, re-reading
    /// and re-checking only what changed since the last validation
    /// ([`crate::warm`]); a validation being made ahead
    /// ([`Knowledge::prepare_validation`]) is waited for and built on.
    /// Refused for connections that are no folder.
    pub fn validate(
        &self,
        project: &okfit_store::discover::Project,
        now: okfit_core::time::Instant,
        skip_provenance: bool,
    ) -> Result<okfit_core::bundle::Report, Error> {
        self.validation_ahead.wait();
        let mut guard = self.lock();
        let Backend::Folder(fk) = &mut *guard else {
            return Err(Error::Refused(
                "validation reads a bundle folder, not this connection".into(),
            ));
        };
        fk.validate(&self.name, (project, now, skip_provenance))
    }

    /// Walks the folder and starts its watch, if no call did yet, so the
    /// first call finds that done (nothing is read). A no-op for
    /// connections that are no folder.
    pub fn look(&self) -> Result<(), Error> {
        match &mut *self.lock() {
            Backend::Folder(fk) => fk.look(&self.name),
            _ => Ok(()),
        }
    }

    /// What the folder's last validation did (`None` before the first,
    /// and for connections that are no folder).
    pub fn validation_work(&self) -> Option<crate::warm::Work> {
        match &*self.lock() {
            Backend::Folder(fk) => fk.validation_work(),
            _ => None,
        }
    }

    /// Asks the folder's watch whether files changed since the last
    /// refresh, without waiting for a call in progress (`None` then, and
    /// for connections that are no folder). False before the first read.
    pub fn poll(&self) -> Option<bool> {
        let mut guard = match self.inner.try_lock() {
            Ok(g) => g,
            Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner(),
            Err(std::sync::TryLockError::WouldBlock) => return None,
        };
        match &mut *guard {
            Backend::Folder(fk) => Some(fk.poll()),
            _ => None,
        }
    }

    /// Counts the changes to the set of concept ids the folder's documents
    /// have seen (0 for other connections): a change is due a
    /// `notifications/resources/list_changed`.
    pub fn generation(&self) -> u64 {
        match &*self.lock() {
            Backend::Folder(fk) => fk.generation(),
            _ => 0,
        }
    }

    /// How many Markdown files the folder behind this knowledge has read
    /// since it opened (0 for other connections): each changed file once,
    /// whichever layers it feeds (a validation re-reads one only when no
    /// other layer read it first).
    pub fn reads(&self) -> u64 {
        match &*self.lock() {
            Backend::Folder(fk) => fk.reads(),
            _ => 0,
        }
    }
}

/// Checks the ids of one `get`: at least one, at most [`MAX_GET_IDS`].
fn check_ids(ids: &[String]) -> Result<(), Error> {
    if ids.is_empty() {
        return Err(Error::Refused("get needs at least one id".into()));
    }
    if ids.len() > MAX_GET_IDS {
        return Err(Error::Refused(format!(
            "get takes at most {MAX_GET_IDS} ids per call, not {}; split them into several calls",
            ids.len()
        )));
    }
    Ok(())
}

fn is_digest(s: &str) -> bool {
    s.len() == 64
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl Knowledge {
    fn store_only(&self, what: &str) -> Result<(), Error> {
        if self.dsn.has_revisions() {
            return Ok(());
        }
        Err(Error::Refused(format!(
            "{what} needs a store connection (okf:///abs/data?tenant=t); a folder has no revisions"
        )))
    }

    /// Checks a transaction's shape before anything is read: 1–1000
    /// changes, at most 16 MiB of content, digests well formed.
    pub fn check_transaction(changes: &[Change], expected: Option<&str>) -> Result<(), Error> {
        if changes.is_empty() || changes.len() > MAX_CHANGES {
            return Err(Error::Refused(
                "transaction needs between 1 and 1000 changes".into(),
            ));
        }
        let total: usize = changes
            .iter()
            .map(|c| c.content.as_ref().map_or(0, Vec::len))
            .sum();
        if total > MAX_TRANSACTION_BYTES {
            return Err(Error::Refused(
                "transaction source payload exceeds 16 MiB".into(),
            ));
        }
        if let Some(e) = expected {
            if !is_digest(e) {
                return Err(Error::Refused(
                    "expectedRevision must be 64 lowercase hex characters".into(),
                ));
            }
        }
        for c in changes {
            if let Pre::Hash(h) = &c.pre {
                if !is_digest(h) {
                    return Err(Error::Refused(format!(
                        "replaces for {}/{} must be 64 lowercase hex characters",
                        c.bundle, c.path
                    )));
                }
            }
        }
        Ok(())
    }

    /// An atomic batch (reference langonrock §5.1).
    pub fn transact(
        &self,
        changes: Vec<Change>,
        expected: Option<&str>,
    ) -> Result<Committed, CommitError> {
        self.store_only("transact")?;
        Knowledge::check_transaction(&changes, expected)?;
        self.commit(changes, expected)
    }

    fn with_store<R>(
        &self,
        f: impl FnOnce(&mut dyn Storage, &Loaded) -> Result<R, Error>,
    ) -> Result<R, Error> {
        if let Some(sk) = &self.store {
            return sk.exclusive(false, |store, st| f(store, st));
        }
        Err(self.no_store())
    }

    /// Runs `f` with one of the store's read connections.
    fn with_reader<R>(&self, f: impl FnOnce(&dyn Storage) -> Result<R, Error>) -> Result<R, Error> {
        if let Some(sk) = &self.store {
            return sk.reading(f);
        }
        Err(self.no_store())
    }

    /// Why a store-only call cannot run on this connection.
    fn no_store(&self) -> Error {
        match &*self.lock() {
            Backend::Remote => Error::Refused(
                "gc and verify run where the store is: run them on the daemon's host with --data".into(),
            ),
            _ => Error::Refused(
                "this needs a store connection (okf:///abs/data?tenant=t); a folder has no revisions".into(),
            ),
        }
    }

    /// A page of retained revisions, newest first (limit 1..=100).
    pub fn history(&self, before: Option<&str>, limit: usize) -> Result<RevisionPage, Error> {
        if let Some(r) = &self.remote {
            if !(1..=100).contains(&limit) {
                return Err(Error::Refused(
                    "history limit must be an integer from 1 to 100".into(),
                ));
            }
            return crate::remote::ops::history(r, before, limit);
        }
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        if !(1..=100).contains(&limit) {
            return Err(Error::Refused(
                "history limit must be an integer from 1 to 100".into(),
            ));
        }
        let tenant = self.name.clone();
        let before_rev = match before {
            None => None,
            Some(c) => {
                let invalid = || Error::Refused("invalid history cursor".into());
                if c.len() > 512 {
                    return Err(invalid());
                }
                let bytes = b64.decode(c.trim_end_matches('=')).map_err(|_| invalid())?;
                let v: serde_json::Value = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
                let rev = v["before"].as_str().unwrap_or("");
                if v["version"] != 1 || v["tenant"] != tenant.as_str() || !is_digest(rev) {
                    return Err(invalid());
                }
                Some(rev.to_string())
            }
        };
        self.with_reader(|store| {
            let Some((revisions, more)) = store.history(before_rev.as_deref(), limit)? else {
                return Err(Error::Conflict(
                    "history cursor expired or is not committed; restart history pagination".into(),
                ));
            };
            let next = match (more, revisions.last()) {
                (true, Some(last)) => Some(b64.encode(
                    serde_json::json!({"version": 1, "tenant": tenant, "before": last.revision})
                        .to_string(),
                )),
                _ => None,
            };
            Ok(RevisionPage { revisions, next })
        })
    }

    /// Publishes a retained revision's documents, byte for byte, as a new
    /// revision on top of `expected` (which must be the head).
    pub fn restore(&self, revision: &str, expected: &str) -> Result<Committed, CommitError> {
        if let Some(r) = &self.remote {
            return crate::remote::ops::restore(r, revision, expected);
        }
        self.store_only("restore")?;
        if !is_digest(revision) || !is_digest(expected) {
            return Err(Error::Refused(
                "restore needs revision and expectedRevision as 64 lowercase hex characters".into(),
            )
            .into());
        }
        let changes = self.with_store(|store, sk| {
            if sk.head.as_ref().map(|h| h.revision.as_str()) != Some(expected) {
                return Err(Error::Conflict(
                    "database changed: re-read the revision and document hashes".into(),
                ));
            }
            let Some(target) = store.state_at(revision)? else {
                return Err(Error::Conflict(
                    "revision is not in retained committed history".into(),
                ));
            };
            let view = sk.view.as_ref().ok_or_else(|| Error::Store("not loaded".into()))?;
            let mut changes = vec![];
            let mut current: okfit_store::sqlite::State = Default::default();
            for b in view.model.bundles() {
                for (p, s) in view.model.bundle_docs(b) {
                    if let Some(e) = view.model.entry(s) {
                        current.insert((b.to_string(), p.to_string()), e.hash.clone());
                    }
                }
            }
            for (k, h) in &current {
                if !target.contains_key(k) {
                    changes.push(Change {
                        bundle: k.0.clone(),
                        path: k.1.clone(),
                        content: None,
                        pre: Pre::Hash(h.clone()),
                    });
                }
            }
            for (k, h) in &target {
                if current.get(k) == Some(h) {
                    continue;
                }
                let bytes = store.blob(h)?.ok_or_else(|| {
                    Error::Store(format!(
                        "database corruption: content {h} of {}/{} is missing; nothing was restored",
                        k.0, k.1
                    ))
                })?;
                if sha256_hex(&bytes) != *h {
                    return Err(Error::Store(format!(
                        "database corruption: content of {}/{} does not match its digest {h}; nothing was restored",
                        k.0, k.1
                    )));
                }
                changes.push(Change {
                    bundle: k.0.clone(),
                    path: k.1.clone(),
                    content: Some(bytes),
                    pre: match current.get(k) {
                        Some(c) => Pre::Hash(c.clone()),
                        None => Pre::Create,
                    },
                });
            }
            Ok(changes)
        })?;
        self.commit_unchecked(changes, Some(expected))
    }

    /// Commits without the per-request shape checks (restore may publish
    /// any number of changes, or none).
    fn commit_unchecked(
        &self,
        changes: Vec<Change>,
        expected: Option<&str>,
    ) -> Result<Committed, CommitError> {
        self.commit(changes, expected)
    }

    /// Keeps the newest `keep` revisions (≥ 1) and drops the rest and the
    /// contents only they used.
    pub fn gc(&self, keep: usize) -> Result<(usize, usize), Error> {
        if keep == 0 {
            return Err(Error::Usage("--keep must be a positive integer".into()));
        }
        self.with_store(|store, _| store.gc(keep))
    }

    /// Re-checks every retained revision.
    pub fn verify(&self) -> Result<okfit_store::sqlite::Verified, Error> {
        self.with_store(|store, _| store.verify())
    }

    /// The current head revision.
    pub fn head(&self) -> Result<Option<String>, Error> {
        if let Some(r) = &self.remote {
            return crate::remote::ops::head(r);
        }
        self.with_store(|_, st| Ok(st.head.as_ref().map(|h| h.revision.clone())))
    }
}
