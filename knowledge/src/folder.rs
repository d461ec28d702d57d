//! The one live view of a bundle folder behind a folder connection and
//! project mode: a [`LiveFolder`] (stamps and watch) and three layers made
//! on first use and refreshed together: the read model (manifest, search,
//! get, commits) and the parsed documents (the bundle tools), both from
//! one read of each changed file, and the last validation
//! ([`crate::warm`]), which notes what changed and re-reads it when
//! `validate_bundle` next asks. A change on disk is therefore seen the same
//! way by every reader, and a process that only lists concepts never reads
//! bodies or builds a search index.

use crate::cache::{self, Cache};
use crate::documents::{Bodies, Documents, Read};
use crate::tenant::StoreKb;
use crate::view::{terms_in, View};
use crate::warm::{Asked, Checks, Work};
use okfit_core::bundle;
use okfit_core::bundle::Report;
use okfit_core::kb::compile::{self, Compiled};
use okfit_core::kb::model::{Entry, Sources};
use okfit_core::kb::search::{DocTerms, Index};
use okfit_store::beneath::{Dir, Root};
use okfit_store::change::{check_precondition, sha256_hex, Change, CommitError, Committed};
use okfit_store::discover::Project;
use okfit_store::error::Error;
use okfit_store::live::{Delta, LiveFolder, Stamp};
use okfit_store::walk::Picker;
use rayon::prelude::*;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Documents whose terms are derived together.
const TERMS_RUN: usize = 1_000;

/// The read model of a folder, with the texts its answers quote.
pub(crate) struct Model {
    pub(crate) view: View,
    pub(crate) texts: HashMap<String, Arc<str>>,
}

impl Model {
    fn new(name: &str) -> Model {
        Model {
            view: View::new(name, true),
            texts: HashMap::new(),
        }
    }

    /// Applies one refresh: Markdown files gone and read again. Each file's
    /// bytes are let go of as soon as its text is made, so that a first
    /// read does not hold the folder twice.
    fn apply(&mut self, name: &str, gone: &[String], read: Vec<Read>) {
        let parsed: Vec<(String, Arc<str>, Compiled)> = read
            .into_par_iter()
            .filter(|(rel, _)| bundle::is_document(rel))
            .filter_map(|(rel, r)| {
                let bytes = r.ok()?;
                let text: Arc<str> = Arc::from(String::from_utf8_lossy(&bytes).into_owned());
                drop(bytes);
                let c = compile::compile(&rel, &text);
                Some((rel, text, c))
            })
            .collect();
        let changed: Vec<&str> = gone
            .iter()
            .map(String::as_str)
            .chain(parsed.iter().map(|(rel, _, _)| rel.as_str()))
            .collect();
        let mut direct = self.unindex(name, &changed);
        direct.sort_unstable();
        for rel in gone {
            self.texts.remove(rel);
            self.view.model.remove(name, rel);
        }
        let mut touched: Vec<u32> = vec![];
        for (rel, text, c) in parsed {
            let hash = sha256_hex(text.as_bytes());
            let (slot, _) = self.view.model.upsert(name, &rel, &hash, c);
            self.texts.insert(rel, text);
            touched.push(slot);
        }
        // Concepts whose ids the change moved were indexed with their old
        // ids, which the model no longer shows: their postings are found
        // in every list (rare: a new file sharing a file name).
        let mut renamed: Vec<u32> = self
            .view
            .model
            .settle()
            .into_iter()
            .filter(|s| direct.binary_search(s).is_err())
            .collect();
        renamed.sort_unstable();
        renamed.dedup();
        self.view.index.drop_postings_of(&renamed);
        for &slot in &renamed {
            self.view.index.forget(slot);
        }
        touched.extend(renamed);
        touched.sort_unstable();
        touched.dedup();
        self.index(&touched);
    }

    /// Takes the documents at `paths` out of the index, by the terms they
    /// were indexed with (derived again from the model and texts that
    /// still show them); their slots.
    fn unindex(&mut self, name: &str, paths: &[&str]) -> Vec<u32> {
        let view = &self.view;
        let old: Vec<(u32, Option<DocTerms>)> = paths
            .par_iter()
            .filter_map(|rel| {
                let slot = view.model.slot_of(name, rel)?;
                let terms = self.texts.get(*rel).and_then(|t| view.terms(slot, t));
                Some((slot, terms))
            })
            .collect();
        for (slot, terms) in &old {
            match terms {
                Some(t) => self.view.index.remove(*slot, t),
                None => self.view.index.forget(*slot),
            }
        }
        old.into_iter().map(|(slot, _)| slot).collect()
    }

    /// Indexes the documents at `slots`: their terms are derived in
    /// parallel, a run at a time (so that only one run's worth is held as
    /// strings), the next run's while the last one's go into the index.
    fn index(&mut self, slots: &[u32]) {
        let (model, index, texts) = (&self.view.model, &mut self.view.index, &self.texts);
        let derive = |run: &[u32]| -> Vec<(u32, DocTerms)> {
            run.par_iter()
                .filter_map(|&slot| {
                    let e = model.entry(slot)?;
                    let text = texts.get(&e.path)?;
                    Some((slot, terms_in(model, slot, text)?))
                })
                .collect()
        };
        let insert = |index: &mut Index, derived: Vec<(u32, DocTerms)>| {
            for (slot, t) in derived {
                index.insert(slot, &t);
            }
        };
        let mut pending = vec![];
        for run in slots.chunks(TERMS_RUN) {
            let ((), derived) = rayon::join(|| insert(index, pending), || derive(run));
            pending = derived;
        }
        insert(index, pending);
    }
}

/// Where a folder's read model lives.
enum Kept {
    /// Not chosen yet (the folder has not been read for a model).
    Undecided,
    /// In memory ([`FolderKb::model`]); `fill`: a large folder without a
    /// cache, whose cache is to be filled in the background once the
    /// model is made.
    Memory { fill: bool },
    /// In the folder's cache on disk (a large folder).
    Cache(Box<Cache>),
}

/// Documents parsed, the files that could not be read, and the stamps of
/// those read ([`Documents::read`]).
pub(crate) type Parsed = (Documents, Vec<String>, Vec<(String, Stamp)>);

/// The Markdown files (relative and absolute paths), the other files, and
/// the changes seen when they were listed.
pub(crate) type Plan = (Vec<(String, PathBuf)>, Vec<String>, u64);

pub(crate) struct FolderKb {
    folder: LiveFolder,
    kept: Kept,
    model: Option<Box<Model>>,
    docs: Option<Box<Documents>>,
    checks: Option<Box<Checks>>,
    /// Counts the changes to the set of concept ids the documents saw.
    generation: u64,
    /// Refreshes that found files changed or gone: documents parsed
    /// without holding the folder are kept only if none came meanwhile.
    changes: u64,
    /// Markdown files read since the folder was opened.
    reads: u64,
}

/// Reads the Markdown files among `files`, in parallel, each with its
/// stamp from the open file.
fn read_files(files: Vec<(String, PathBuf)>) -> Vec<(Read, Option<Stamp>)> {
    let opener = okfit_store::walk::Opener::new(files.iter().map(|(_, abs)| abs.as_path()));
    files
        .into_par_iter()
        .filter(|(rel, _)| bundle::is_document(rel))
        .map(|(rel, abs)| match opener.read_stamped(&abs) {
            Ok((bytes, stamp)) => ((rel, Ok(Arc::from(bytes))), Some(stamp)),
            Err(e) => ((rel, Err(e)), None),
        })
        .collect()
}

impl FolderKb {
    /// The folder at `root`, not yet read.
    pub(crate) fn new(root: PathBuf) -> FolderKb {
        FolderKb {
            folder: LiveFolder::new(root),
            kept: Kept::Undecided,
            model: None,
            docs: None,
            checks: None,
            generation: 0,
            changes: 0,
            reads: 0,
        }
    }

    /// The folder.
    pub(crate) fn root(&self) -> &std::path::Path {
        self.folder.root()
    }

    /// Whether files may have changed since the last refresh (false
    /// before the first), consuming the watch's events.
    pub(crate) fn poll(&mut self) -> bool {
        self.folder.poll()
    }

    /// See [`crate::Knowledge::generation`].
    pub(crate) fn generation(&self) -> u64 {
        self.generation
    }

    /// See [`crate::Knowledge::reads`].
    pub(crate) fn reads(&self) -> u64 {
        self.reads
    }

    /// The folder's non-Markdown files.
    fn assets(&self) -> Vec<String> {
        self.folder
            .files()
            .filter(|p| !bundle::is_document(p))
            .cloned()
            .collect()
    }

    /// Reads `files` (in path order) and records their stamps; a file that
    /// cannot be read is looked at again next time.
    fn read_docs(&mut self, files: Vec<(String, PathBuf)>) -> Vec<Read> {
        let (read, stamps): (Vec<Read>, Vec<Option<Stamp>>) = read_files(files).into_iter().unzip();
        let mut taken = Vec::with_capacity(read.len());
        for ((rel, r), stamp) in read.iter().zip(stamps) {
            match (r, stamp) {
                (Ok(_), Some(s)) => {
                    self.reads += 1;
                    taken.push((rel.clone(), s));
                }
                _ => self.folder.forget(rel),
            }
        }
        self.folder.record(taken);
        read
    }

    /// Walks the folder and starts its watch, if that is not done yet,
    /// leaving the Markdown files for their first reader to stamp.
    pub(crate) fn look(&mut self, name: &str) -> Result<(), Error> {
        if self.folder.looked() {
            return Ok(());
        }
        self.refresh_reading(name, &bundle::is_document)
    }

    /// Brings the layers that exist up to date with the folder.
    pub(crate) fn refresh(&mut self, name: &str) -> Result<(), Error> {
        self.refresh_reading(name, &|_| false)
    }

    /// [`FolderKb::refresh`]; on the first look, the files `reads` picks
    /// are left for the caller to read and stamp
    /// ([`LiveFolder::refresh_reading`]).
    fn refresh_reading(&mut self, name: &str, reads: &Picker<'_>) -> Result<(), Error> {
        let Some(delta) = self.folder.refresh_reading(reads)? else {
            return Ok(());
        };
        if let Some(c) = self.checks.as_mut() {
            c.note(&delta);
        }
        let Delta { changed, gone } = delta;
        if !(changed.is_empty() && gone.is_empty()) {
            self.changes += 1;
        }
        let cached = matches!(self.kept, Kept::Cache(_));
        if (changed.is_empty() && gone.is_empty())
            || (self.model.is_none() && self.docs.is_none() && !cached)
        {
            return Ok(());
        }
        let mut read = self.read_docs(changed);
        if let Some(c) = self.checks.as_mut() {
            c.keep(&read);
        }
        let folder = &mut self.folder;
        if matches!(&self.kept, Kept::Cache(c) if c.apply(folder, &gone, &read).is_err()) {
            // The cache cannot hold this folder now: memory from here on.
            self.kept = Kept::Memory { fill: false };
        }
        if let Some(m) = self.model.as_mut() {
            // The documents layer reads the same bytes after it, if there
            // is one; else the model takes them.
            let own = if self.docs.is_some() {
                read.iter()
                    .filter_map(|(rel, r)| Some((rel.clone(), Ok(r.as_ref().ok()?.clone()))))
                    .collect()
            } else {
                std::mem::take(&mut read)
            };
            m.apply(name, &gone, own);
        }
        let assets = self.assets();
        if let Some(d) = self.docs.as_mut() {
            if d.apply(&gone, &read, assets) {
                self.generation += 1;
            }
        }
        Ok(())
    }

    /// Every Markdown file of the folder, as of the last refresh.
    fn all(&self) -> Vec<(String, PathBuf)> {
        let root = self.folder.root();
        self.folder
            .files()
            .filter(|p| bundle::is_document(p))
            .map(|p| (p.clone(), root.join(p)))
            .collect()
    }

    /// Runs `f` over the current read model and a reader of document
    /// texts: the folder's cache for a large folder, else the model in
    /// memory.
    pub(crate) fn read<R>(
        &mut self,
        name: &str,
        query: Option<&str>,
        f: impl FnOnce(&View, &mut dyn Sources) -> Result<R, Error>,
    ) -> Result<R, Error> {
        if let Some(kb) = self.cached(name, query)? {
            return kb.read(query, f);
        }
        self.model(name)?;
        if let Kept::Memory { fill: true } = self.kept {
            self.kept = Kept::Memory { fill: false };
            cache::fill(self.folder.root(), name);
        }
        let Model { view, texts } = self.model(name)?;
        let mut body = |e: &Entry| -> Option<Arc<str>> { texts.get(&e.path).cloned() };
        f(view, &mut body)
    }

    /// Chooses where the model lives, on the first read. With a saved
    /// cache, its model (and `query`'s postings) load while the folder is
    /// walked and compared with it: a first answer waits for the longer of
    /// the two.
    fn decide(&mut self, name: &str, query: Option<&str>) -> Result<(), Error> {
        let root = self.folder.root().to_path_buf();
        self.kept = Kept::Memory { fill: false };
        let saved = self.model.is_none() && Cache::exists(&root);
        let opened = saved.then(|| Cache::open(&root, name)).flatten();
        let Some(c) = opened else {
            self.refresh(name)?;
            let docs = self.folder.files().filter(|p| bundle::is_document(p));
            if self.model.is_none() && docs.count() >= cache::MIN_DOCUMENTS {
                self.kept = Kept::Memory { fill: true };
            }
            return Ok(());
        };
        let synced = std::thread::scope(|s| {
            s.spawn(|| c.kb.read(query, |_, _| Ok(())));
            self.refresh(name)?;
            Ok::<_, Error>(c.reconcile(&mut self.folder))
        })?;
        if let Ok(n) = synced {
            self.reads += n;
            self.kept = Kept::Cache(Box::new(c));
        }
        Ok(())
    }

    /// The folder's cache, current, where one was saved (chosen on the
    /// first read); `None` when the model lives in memory. A large folder
    /// (at least [`cache::MIN_DOCUMENTS`] documents) without one is read
    /// into memory and its cache filled in the background, for the next
    /// process. A cache that cannot hold the folder (a path a store
    /// refuses, a cache root that cannot be written) gives way to memory.
    fn cached(&mut self, name: &str, query: Option<&str>) -> Result<Option<&StoreKb>, Error> {
        if matches!(self.kept, Kept::Undecided) {
            self.decide(name, query)?;
        } else {
            self.refresh(name)?;
        }
        Ok(match &self.kept {
            Kept::Cache(c) => Some(&c.kb),
            _ => None,
        })
    }

    /// The read model in memory, current (made on first use).
    fn model(&mut self, name: &str) -> Result<&mut Model, Error> {
        self.refresh(name)?;
        if self.model.is_none() {
            let all = self.all();
            let read = self.read_docs(all);
            let mut m = Box::new(Model::new(name));
            m.apply(name, &[], read);
            self.model = Some(m);
        }
        self.model
            .as_deref_mut()
            .ok_or_else(|| Error::Store("no read model".into()))
    }

    /// The documents parsed with `project`'s config, current (made on
    /// first use, and again when the config changed), with the bodies
    /// `bodies` asks for scanned. A Markdown file that cannot be read is
    /// an error, as it is for a load of the bundle.
    pub(crate) fn documents(
        &mut self,
        name: &str,
        project: &Arc<Project>,
        bodies: Bodies<'_>,
    ) -> Result<&Documents, Error> {
        self.refresh(name)?;
        if !self.documents_fit(project) {
            let parsed = Documents::read(project.clone(), self.all(), self.assets());
            self.install(parsed);
        }
        let root = self.folder.root().to_path_buf();
        let d = self
            .docs
            .as_deref_mut()
            .ok_or_else(|| Error::Store("no documents".into()))?;
        d.check(&root)?;
        d.fill(&root, bodies);
        Ok(d)
    }

    /// True when the documents are parsed with `project`'s config.
    fn documents_fit(&self, project: &Arc<Project>) -> bool {
        self.docs
            .as_ref()
            .is_some_and(|d| Arc::ptr_eq(d.project(), project))
    }

    /// Takes parsed documents as the folder's documents layer.
    fn install(&mut self, (d, failed, stamps): Parsed) {
        self.reads += stamps.len() as u64;
        self.folder.record(stamps);
        for rel in &failed {
            self.folder.forget(rel);
        }
        if self.docs.as_ref().is_some_and(|old| old.ids() != d.ids()) {
            self.generation += 1;
        }
        self.docs = Some(Box::new(d));
    }

    /// What parsing the documents for `project` without holding the
    /// folder needs (its Markdown files, its other files, and the changes
    /// seen so far), or `None` when they are parsed already.
    pub(crate) fn documents_plan(
        &mut self,
        name: &str,
        project: &Arc<Project>,
    ) -> Result<Option<Plan>, Error> {
        self.refresh(name)?;
        if self.documents_fit(project) {
            return Ok(None);
        }
        Ok(Some((self.all(), self.assets(), self.changes)))
    }

    /// Takes documents parsed from the plan made at `at`, unless files
    /// changed since (they would be stale) or another call parsed them
    /// meanwhile. True when they were taken.
    pub(crate) fn install_documents(
        &mut self,
        name: &str,
        project: &Arc<Project>,
        parsed: Parsed,
        at: u64,
    ) -> Result<bool, Error> {
        if !self.unchanged_since(name, at)? || self.documents_fit(project) {
            return Ok(false);
        }
        self.install(parsed);
        Ok(true)
    }

    /// Refreshes the folder; true when no refresh since the plan made at
    /// `at` (see [`FolderKb::documents_plan`]) found files changed or gone.
    fn unchanged_since(&mut self, name: &str, at: u64) -> Result<bool, Error> {
        self.refresh(name)?;
        Ok(self.changes == at)
    }

    /// What a first validation for `project` reads, listed now (the folder
    /// refreshed), with the changes seen so far; `None` when a validation
    /// with `project`'s config is kept already.
    pub(crate) fn validation_plan(
        &mut self,
        name: &str,
        project: &Project,
    ) -> Result<Option<(okfit_store::walk::Walked, u64)>, Error> {
        self.refresh_reading(name, &bundle::is_document)?;
        if self.checks.as_ref().is_some_and(|c| c.fits(project)) {
            return Ok(None);
        }
        Ok(Some((crate::warm::listed(&self.folder), self.changes)))
    }

    /// Keeps a first validation made from the plan listed at `at`, with the
    /// stamps of the files it read, unless files changed since (its
    /// findings would be stale) or a call validated meanwhile. True when
    /// it was kept.
    pub(crate) fn install_checks(
        &mut self,
        name: &str,
        project: &Project,
        (checks, stamped): (Checks, crate::warm::Stamps),
        at: u64,
    ) -> Result<bool, Error> {
        if !self.unchanged_since(name, at)? || self.checks.as_ref().is_some_and(|c| c.fits(project))
        {
            return Ok(false);
        }
        self.reads += checks.work().parsed as u64;
        self.folder.record(stamped);
        self.checks = Some(Box::new(checks));
        Ok(true)
    }

    /// Validates the folder as `project`'s bundle at `now`, as
    /// `okfit validate` does, re-reading and re-checking only what changed
    /// since the last validation ([`crate::warm`]). A first validation
    /// stamps each Markdown file as it reads it.
    pub(crate) fn validate(&mut self, name: &str, asked: Asked<'_>) -> Result<Report, Error> {
        let (project, ..) = asked;
        if self.checks.as_ref().is_some_and(|c| !c.fits(project)) {
            self.checks = None;
        }
        self.refresh_reading(name, &bundle::is_document)?;
        let (report, checks) = match self.checks.take() {
            Some(c) => {
                let (report, checks, read) = c.warm(asked, &self.folder)?;
                self.reads += read;
                (report, checks)
            }
            None => {
                let (report, checks, stamped) = Checks::cold(asked, &self.folder)?;
                self.reads += checks.work().parsed as u64;
                self.folder.record(stamped);
                (report, checks)
            }
        };
        self.checks = Some(Box::new(checks));
        Ok(report)
    }

    /// What the last validation did (`None` before the first).
    pub(crate) fn validation_work(&self) -> Option<Work> {
        self.checks.as_ref().map(|c| c.work())
    }

    /// Writes files in the bundle folder: every precondition is checked
    /// first; each file is written to a temporary file in its directory
    /// and renamed over the target, so a reader sees old or new bytes.
    pub(crate) fn commit(
        &mut self,
        name: &str,
        changes: &[Change],
    ) -> Result<Committed, CommitError> {
        let root = Root::open(self.folder.root())?;
        let shown: Vec<String> = changes
            .iter()
            .map(|c| format!("{}/{}", c.bundle, c.path))
            .collect();
        let mut current: Vec<Option<Vec<u8>>> = vec![];
        for (i, c) in changes.iter().enumerate() {
            if c.bundle != name {
                return Err(Error::Refused(format!(
                    "no bundle \"{}\" in this folder connection: it serves the bundle \"{name}\"",
                    c.bundle
                ))
                .into());
            }
            let bytes = root.read(&c.path, &shown[i])?;
            let hash = bytes.as_deref().map(sha256_hex);
            if let Err(failure) = check_precondition(c, hash.as_deref()) {
                return Err(CommitError::Precondition { index: i, failure });
            }
            current.push(bytes);
        }
        // Stage every new file (in its own directory, reached without
        // following a link) before touching any target.
        let mut staged: Vec<(Dir, Option<String>)> = vec![];
        let cleanup = |staged: &[(Dir, Option<String>)]| {
            for (d, t) in staged {
                if let Some(t) = t {
                    d.remove_quiet(t);
                }
            }
        };
        for (n, c) in changes.iter().enumerate() {
            let (d, file) = Root::split(&c.path);
            let dir = match root.dir(d, c.content.is_some(), &shown[n]) {
                Ok(Some(dir)) => dir,
                Ok(None) => {
                    cleanup(&staged);
                    return Err(Error::Io(format!(
                        "cannot remove {}: its folder is gone",
                        shown[n]
                    ))
                    .into());
                }
                Err(e) => {
                    cleanup(&staged);
                    return Err(e.into());
                }
            };
            let tmp = match &c.content {
                Some(bytes) => match dir.stage(file, n, bytes) {
                    Ok(t) => Some(t),
                    Err(e) => {
                        cleanup(&staged);
                        return Err(e.into());
                    }
                },
                None => None,
            };
            staged.push((dir, tmp));
        }
        let mut done: Vec<usize> = vec![];
        let mut failure = None;
        for (i, c) in changes.iter().enumerate() {
            let (_, file) = Root::split(&c.path);
            let (dir, tmp) = &staged[i];
            let r = match tmp {
                Some(tmp) => dir.replace(tmp, file, &shown[i]),
                None => dir.remove(file, &shown[i]),
            };
            match r {
                Ok(()) => done.push(i),
                Err(e) => {
                    failure = Some(e);
                    break;
                }
            }
        }
        if let Some(e) = failure {
            // Put back what was already replaced.
            for i in done {
                let (_, file) = Root::split(&changes[i].path);
                let (dir, _) = &staged[i];
                match &current[i] {
                    Some(old) => {
                        if let Ok(t) = dir.stage(file, i, old) {
                            if dir.replace(&t, file, &shown[i]).is_err() {
                                dir.remove_quiet(&t);
                            }
                        }
                    }
                    None => dir.remove_quiet(file),
                }
            }
            cleanup(&staged);
            return Err(e.into());
        }
        for (dir, _) in &staged {
            dir.sync();
        }
        // Files changed: look at the folder again even before the event.
        self.folder.touch();
        let hashes = changes
            .iter()
            .map(|c| c.content.as_deref().map(sha256_hex))
            .collect();
        let committed = self.read(name, None, |view, _| {
            Ok(Committed {
                revision: None,
                snapshot: view.model.snapshot(),
                concepts: view.model.concepts(),
                bundles: view.model.bundles().iter().map(|s| s.to_string()).collect(),
                hashes,
            })
        })?;
        Ok(committed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn concept(title: &str) -> String {
        format!("---\ntype: Note\ntitle: {title}\n---\n# {title}\n\nA harbour note.\n")
    }

    /// A project whose bundle holds `a.md` and `b.md`, and its folder.
    fn folder() -> (tempfile::TempDir, Arc<Project>, FolderKb) {
        let dir = tempfile::tempdir().unwrap();
        let okf = dir.path().join("okf");
        std::fs::create_dir_all(&okf).unwrap();
        std::fs::write(okf.join("a.md"), concept("Pilot")).unwrap();
        std::fs::write(okf.join("b.md"), concept("Tug")).unwrap();
        let p = okfit_store::discover::resolve(None, dir.path(), None).unwrap();
        let fk = FolderKb::new(p.bundle_root.clone());
        (dir, Arc::new(p), fk)
    }

    fn titles(fk: &mut FolderKb, p: &Arc<Project>) -> Vec<String> {
        let d = fk.documents("okf", p, Bodies::None).unwrap();
        d.bundle()
            .concepts()
            .map(|(_, c)| c.title.clone())
            .collect()
    }

    #[test]
    fn documents_parsed_aside_are_taken_when_nothing_changed() {
        let (_dir, p, mut fk) = folder();
        let (files, assets, at) = fk.documents_plan("okf", &p).unwrap().unwrap();
        let parsed = Documents::read(p.clone(), files, assets);
        assert!(fk.install_documents("okf", &p, parsed, at).unwrap());
        assert!(fk.documents_plan("okf", &p).unwrap().is_none());
        assert_eq!(titles(&mut fk, &p), ["Pilot", "Tug"]);
    }

    #[test]
    fn documents_parsed_aside_are_dropped_when_a_file_changed_meanwhile() {
        let (dir, p, mut fk) = folder();
        let (files, assets, at) = fk.documents_plan("okf", &p).unwrap().unwrap();
        let parsed = Documents::read(p.clone(), files, assets);
        std::fs::write(dir.path().join("okf/a.md"), concept("Pilot boat")).unwrap();
        fk.folder.touch();
        assert!(!fk.install_documents("okf", &p, parsed, at).unwrap());
        assert_eq!(titles(&mut fk, &p), ["Pilot boat", "Tug"]);
    }

    fn now() -> okfit_core::time::Instant {
        okfit_core::time::parse_now("2026-09-01T00:00:00Z").unwrap()
    }

    /// A first validation made aside from the plan, taken or not.
    fn validate_aside(fk: &mut FolderKb, p: &Project, change: impl FnOnce()) -> bool {
        let (walked, at) = fk.validation_plan("okf", p).unwrap().unwrap();
        let (_, checks, stamped) = Checks::cold_over((p, now(), true), &walked).unwrap();
        change();
        fk.install_checks("okf", p, (checks, stamped), at).unwrap()
    }

    /// The findings of a validation, as text.
    fn findings(fk: &mut FolderKb, p: &Project) -> String {
        format!("{:?}", fk.validate("okf", (p, now(), false)).unwrap())
    }

    #[test]
    fn a_validation_made_aside_is_kept_and_the_next_one_reads_nothing() {
        let (dir, p, mut fk) = folder();
        std::fs::write(dir.path().join("okf/b.md"), "---\ntitle: Tug\n---\n# Tug\n").unwrap();
        assert!(validate_aside(&mut fk, &p, || ()));
        assert!(fk.validation_plan("okf", &p).unwrap().is_none());
        let warm = findings(&mut fk, &p);
        let work = fk.validation_work().unwrap();
        assert!(!work.cold && work.parsed == 0, "{work:?}");
        let mut fresh = FolderKb::new(p.bundle_root.clone());
        assert_eq!(warm, findings(&mut fresh, &p));
        assert!(warm.contains("b.md"), "{warm}");
    }

    #[test]
    fn a_validation_made_aside_is_dropped_when_a_file_changed_meanwhile() {
        let (dir, p, mut fk) = folder();
        let b = dir.path().join("okf/b.md");
        let kept = validate_aside(&mut fk, &p, || {
            std::fs::write(&b, "---\ntitle: Tug\n---\n# Tug\n").unwrap();
        });
        assert!(!kept);
        let report = findings(&mut fk, &p);
        assert!(fk.validation_work().unwrap().cold);
        assert!(report.contains("b.md"), "{report}");
    }
}
