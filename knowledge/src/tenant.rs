//! A store tenant's knowledge: one read model that every call shares, a
//! pool of SQLite read connections, and one connection for commits.
//!
//! Reads take the model shared and read document texts and search postings
//! through a connection of their own, so reads run side by side (WAL lets
//! them run beside a commit made through another connection, too). Before
//! each answer a read checks the head: when another connection or process
//! committed since the model was loaded, the model catches up first.

use crate::view::View;
use okfit_core::kb::compile;
use okfit_core::kb::compile::Compiled;
use okfit_core::kb::model::{Entry, Sources};
use okfit_core::kb::search::DocTerms;
use okfit_core::time::{self, Instant};
use okfit_store::backend::Location;
use okfit_store::change::{check_precondition, sha256_hex, Change, CommitError, Committed};
use okfit_store::error::Error;
use okfit_store::sqlite::{ChangeRow, CommitPlan, Head, NewDoc, Storage, COMPILER_VERSION};
use std::collections::HashMap;
use std::ops::Deref;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, RwLock, Weak};

/// Most bytes of document texts a tenant keeps between calls: the texts of
/// a few thousand typical concepts, which the hits of an agent's searches
/// come back to (their passages are found in them).
const TEXT_CACHE_BYTES: usize = 8 << 20;

/// Most idle read connections a tenant keeps open.
const IDLE_READERS: usize = 4;

/// How often a read catches up when commits keep landing while it loads
/// postings, before it answers from what it has.
const CATCH_UP_TRIES: usize = 8;

/// Attempts at a commit that other processes' commits keep overtaking
/// (with no expected revision: each attempt starts from their state).
const COMMIT_TRIES: u32 = 16;

/// Waits before commit attempt `attempt` (from 1): a random time up to
/// 1, 2, 4 … 64 ms, so processes committing to one tenant at once stop
/// overtaking each other in step.
fn backoff(attempt: u32) {
    use std::hash::{BuildHasher, RandomState};
    let cap_us = 1000u64 << attempt.min(6);
    let random = RandomState::new().hash_one(std::time::Instant::now());
    std::thread::sleep(std::time::Duration::from_micros(random % cap_us));
}

/// Most changed documents whose postings a catch-up patches into the
/// loaded terms; past it, the loaded terms are dropped and read again.
const PATCH_SLOTS: usize = 1_024;

/// The search terms the documents at `keys` were indexed with, derived
/// again from their stored texts as the commit that stored them derived
/// them; a document whose text cannot be read is left out.
fn indexed_terms(
    view: &View,
    store: &dyn Storage,
    keys: &[(String, String)],
) -> HashMap<u32, DocTerms> {
    let held: Vec<(u32, &str)> = keys
        .iter()
        .filter_map(|(b, p)| {
            let slot = view.model.slot_of(b, p)?;
            Some((slot, view.model.entry(slot)?.hash.as_str()))
        })
        .collect();
    let hashes: Vec<&str> = held.iter().map(|(_, h)| *h).collect();
    let Ok(texts) = store.blobs(&hashes) else {
        return HashMap::new();
    };
    held.iter()
        .zip(texts)
        .filter_map(|((slot, _), bytes)| {
            let text = String::from_utf8(bytes?).ok()?;
            Some((*slot, view.terms(*slot, &text)?))
        })
        .collect()
}

/// Documents recompiled per transaction (see [`Loaded::recompile`]).
const RECOMPILE_RUN: usize = 1_000;

/// The page cache of each read connection, KiB.
const READER_CACHE_KIB: u32 = 512;

/// The size from which a tenant's first search reads its words' postings
/// beside the model's load: below it the load is quick, and a second
/// connection would only cost time and, on SQLite, an open file for as
/// long as the first one holds the database (some hundreds of concepts).
const EARLY_READ_BYTES: u64 = 16 << 20;

/// Postings of a query's words read beside a model's first load: the
/// head they were read at, the words and each word's postings.
struct EarlyPostings {
    head: Option<Head>,
    terms: Vec<String>,
    lists: Vec<Vec<(u32, f32)>>,
}

/// The read model and the head it shows.
#[derive(Default)]
pub(crate) struct Loaded {
    pub(crate) view: Option<View>,
    pub(crate) head: Option<Head>,
}

/// A store tenant behind one connection string.
pub(crate) struct StoreKb {
    at: Location,
    tenant: String,
    /// The connection commits go through, one at a time (history, restore,
    /// gc and verify use it too).
    writer: Mutex<Option<Box<dyn Storage>>>,
    /// Idle read connections.
    readers: Mutex<Vec<Box<dyn Storage>>>,
    /// The read model every call shares.
    state: Arc<RwLock<Loaded>>,
    /// The state of a tenant reading beside this one (see
    /// [`StoreKb::seed_from`]).
    reads: OnceLock<Weak<RwLock<Loaded>>>,
    /// Recently read document texts by content hash (contents never
    /// change under a hash).
    texts: Mutex<TextCache>,
}

/// Document texts by content hash, and their bytes.
#[derive(Default)]
struct TextCache {
    texts: HashMap<String, Arc<str>>,
    bytes: usize,
}

/// A read connection borrowed from the pool; it goes back when dropped.
struct Borrowed<'a> {
    pool: &'a Mutex<Vec<Box<dyn Storage>>>,
    conn: Option<Box<dyn Storage>>,
}

impl Deref for Borrowed<'_> {
    type Target = dyn Storage;
    fn deref(&self) -> &(dyn Storage + 'static) {
        // Present from creation until drop.
        self.conn.as_deref().unwrap_or_else(|| unreachable!())
    }
}

impl Borrowed<'_> {
    /// Closes the connection rather than keeping it idle (one opened for a
    /// single read: a daemon holding many tenants keeps few files open).
    fn close(mut self) {
        drop(self.conn.take());
    }
}

impl Drop for Borrowed<'_> {
    fn drop(&mut self) {
        if let Some(c) = self.conn.take() {
            let mut idle = lock(self.pool);
            if idle.len() < IDLE_READERS {
                idle.push(c);
            }
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The document texts of one read: the tenant's cache, then its store.
struct Texts<'a> {
    kb: &'a StoreKb,
    conn: &'a dyn Storage,
}

impl Sources for Texts<'_> {
    fn text(&mut self, e: &Entry) -> Option<Arc<str>> {
        self.kb.text(self.conn, e)
    }

    fn prefetch(&mut self, entries: &[&Entry]) {
        self.kb.prefetch(self.conn, entries);
    }
}

impl StoreKb {
    /// A tenant of the store at `at`; nothing is opened until the first
    /// call.
    pub(crate) fn new(at: Location, tenant: String) -> StoreKb {
        StoreKb {
            at,
            tenant,
            writer: Mutex::new(None),
            readers: Mutex::new(vec![]),
            state: Arc::new(RwLock::new(Loaded::default())),
            reads: OnceLock::new(),
            texts: Mutex::new(TextCache::default()),
        }
    }

    fn borrow(&self) -> Result<Borrowed<'_>, Error> {
        let idle = lock(&self.readers).pop();
        let conn = match idle {
            Some(c) => c,
            None => {
                let c = self.at.open(&self.tenant, false)?;
                c.set_cache_kib(READER_CACHE_KIB)?;
                c
            }
        };
        Ok(Borrowed {
            pool: &self.readers,
            conn: Some(conn),
        })
    }

    /// Runs `f` with a read connection of the pool: no model, no catch-up,
    /// and no wait for a commit in progress.
    pub(crate) fn reading<R>(
        &self,
        f: impl FnOnce(&dyn Storage) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let conn = self.borrow()?;
        f(&*conn)
    }

    /// A document's text, from the cache or read through `conn`.
    fn text(&self, conn: &dyn Storage, e: &Entry) -> Option<Arc<str>> {
        if let Some(t) = lock(&self.texts).texts.get(&e.hash) {
            return Some(t.clone());
        }
        let bytes = conn.blob(&e.hash).ok()??;
        let t: Arc<str> = Arc::from(String::from_utf8(bytes).ok()?);
        self.keep(vec![(e.hash.clone(), t.clone())]);
        Some(t)
    }

    /// Reads the texts of `entries` not cached yet in one request.
    fn prefetch(&self, conn: &dyn Storage, entries: &[&Entry]) {
        let mut wanted: Vec<&str> = {
            let texts = lock(&self.texts);
            entries
                .iter()
                .map(|e| e.hash.as_str())
                .filter(|h| !texts.texts.contains_key(*h))
                .collect()
        };
        wanted.sort_unstable();
        wanted.dedup();
        if wanted.len() < 2 {
            return;
        }
        // A failed read is read again, one by one, when the text is asked
        // for (and reported there).
        let Ok(found) = conn.blobs(&wanted) else {
            return;
        };
        let read = wanted.iter().zip(found).filter_map(|(h, bytes)| {
            let t: Arc<str> = Arc::from(String::from_utf8(bytes?).ok()?);
            Some((h.to_string(), t))
        });
        self.keep(read.collect());
    }

    /// Caches texts read from the store; the cache starts over when they
    /// would not fit, never dropping texts it is given.
    fn keep(&self, read: Vec<(String, Arc<str>)>) {
        let mut cache = lock(&self.texts);
        let adding: usize = read.iter().map(|(_, t)| t.len()).sum();
        if cache.bytes + adding > TEXT_CACHE_BYTES {
            cache.texts.clear();
            cache.bytes = 0;
        }
        for (hash, text) in read {
            let len = text.len();
            if cache.texts.insert(hash, text).is_none() {
                cache.bytes += len;
            }
        }
    }

    /// Runs `f` over the current model (with the postings of `query`'s
    /// words loaded) and a reader of document texts.
    pub(crate) fn read<R>(
        &self,
        query: Option<&str>,
        f: impl FnOnce(&View, &mut dyn Sources) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let conn = self.borrow()?;
        let unloaded = {
            let st = self.state.read().unwrap_or_else(|p| p.into_inner());
            st.view.is_none()
        };
        if unloaded && conn.compiler()? != COMPILER_VERSION {
            // Written by an older okfit: derive its rows again first.
            self.exclusive(false, |_, _| Ok::<(), Error>(()))?;
        }
        let mut texts = Texts {
            kb: self,
            conn: &*conn,
        };
        let head = conn.head()?;
        {
            let st = self.state.read().unwrap_or_else(|p| p.into_inner());
            if let Some(view) = st.view.as_ref().filter(|_| st.shows(&head)) {
                if query.is_none_or(|q| view.index.missing_terms(q).is_empty()) {
                    return f(view, &mut texts);
                }
            }
        }
        // Behind, or words not loaded yet: catch up alone, then answer
        // before anyone else can move the model on.
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        let mut early = None;
        let first_of_large =
            st.view.is_none() && conn.size_hint().is_none_or(|b| b >= EARLY_READ_BYTES);
        if let Some(q) = query.filter(|_| first_of_large) {
            // The first load of a large tenant: the query's postings are
            // read on a second connection meanwhile (a cold search waits
            // for the longer of the two, not for both).
            early = std::thread::scope(|s| {
                let read = s.spawn(|| self.postings_now(q));
                let loaded = st.catch_up(&*conn, &self.tenant);
                let lists = read.join().ok().flatten();
                loaded.map(|()| lists)
            })?;
        }
        for _ in 0..CATCH_UP_TRIES {
            st.catch_up(&*conn, &self.tenant)?;
            let Some(q) = query else { break };
            if let Some(early) = early.take() {
                st.hold_early(early);
            }
            st.load_terms(&*conn, q)?;
            // Postings read after another commit landed would score the
            // model's documents against a different collection (more
            // documents holding a word than the model has): catch up and
            // read them again.
            if conn.head()? == st.head {
                break;
            }
        }
        let view = st
            .view
            .as_ref()
            .ok_or_else(|| Error::Store("no view".into()))?;
        f(view, &mut texts)
    }

    /// The postings of `query`'s words and the head they were read at, on
    /// a connection of their own, closed afterwards; `None` when they
    /// cannot be read or a commit landed meanwhile (they are read again
    /// with the model).
    fn postings_now(&self, query: &str) -> Option<EarlyPostings> {
        let conn = self.borrow().ok()?;
        let read = || {
            let head = conn.head_now().ok()?;
            let terms = okfit_core::kb::analyze::query_terms(query);
            let lists = conn.postings_of(&terms).ok()?;
            (conn.head_now().ok()? == head).then_some(EarlyPostings { head, terms, lists })
        };
        let early = read();
        conn.close();
        early
    }

    /// Runs `f` with the commit connection and the model to itself, the
    /// model caught up first. `create` opens a missing tenant (a commit)
    /// rather than refusing.
    pub(crate) fn exclusive<R, E: From<Error>>(
        &self,
        create: bool,
        f: impl FnOnce(&mut dyn Storage, &mut Loaded) -> Result<R, E>,
    ) -> Result<R, E> {
        let mut writer = lock(&self.writer);
        if writer.is_none() {
            *writer = Some(self.at.open(&self.tenant, create)?);
        }
        let store = writer
            .as_deref_mut()
            .ok_or_else(|| Error::Store("store not open".into()))?;
        let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
        if st.view.is_none() {
            if store.compiler()? != COMPILER_VERSION {
                st.recompile(store, &self.tenant)?;
            } else {
                self.seed(&mut st);
            }
        }
        st.catch_up_now(store, &self.tenant)?;
        f(store, &mut st)
    }

    /// Has this tenant's commits start their model from `reader`'s (same
    /// store, same tenant) whenever they have none, sharing its documents
    /// rather than loading a second copy of every compiled row: a daemon
    /// keeps one knowledge for commits beside one for reads, so that a
    /// commit never holds the model reads use.
    pub(crate) fn seed_from(&self, reader: &StoreKb) {
        let _ = self.reads.set(Arc::downgrade(&reader.state));
    }

    /// Starts `st` from the reading tenant's model, when there is one
    /// loaded (waiting for a load in progress there rather than loading
    /// the same rows twice); the caller catches it up.
    fn seed(&self, st: &mut Loaded) {
        let Some(reads) = self.reads.get().and_then(Weak::upgrade) else {
            return;
        };
        let r = reads.read().unwrap_or_else(|p| p.into_inner());
        if let (Some(view), Some(head)) = (r.view.as_ref(), r.head.as_ref()) {
            st.view = Some(view.for_commits());
            st.head = Some(head.clone());
        }
    }

    /// The concepts of the read model if it is loaded (and not being
    /// changed this instant).
    pub(crate) fn loaded_concepts(&self) -> Option<usize> {
        let st = self.state.try_read().ok()?;
        st.view.as_ref().map(|v| v.model.concepts())
    }

    /// The search postings the read model holds if it is loaded (and not
    /// being changed this instant).
    pub(crate) fn held_postings(&self) -> Option<usize> {
        let st = self.state.try_read().ok()?;
        st.view.as_ref().map(|v| v.index.loaded_postings())
    }

    /// The tenant's name.
    pub(crate) fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Loads the model and then every term's postings, read in one
    /// snapshot of the same revision, unless they number more than
    /// `limit`: a long-lived reader's searches then never wait for the
    /// store, and commits made elsewhere are patched in as before. The
    /// postings held (`None`: more than `limit`, or commits kept landing
    /// while they were read).
    pub(crate) fn load_all_terms(&self, limit: usize) -> Result<Option<usize>, Error> {
        let conn = self.borrow()?;
        for _ in 0..CATCH_UP_TRIES {
            let Some((head, lists)) = conn.all_postings(limit)? else {
                return Ok(None);
            };
            let mut st = self.state.write().unwrap_or_else(|p| p.into_inner());
            st.catch_up(&*conn, &self.tenant)?;
            if st.head != head {
                continue; // a commit landed in between: read them again
            }
            let Some(view) = st.view.as_mut() else {
                return Ok(None);
            };
            for (term, list) in lists {
                view.index.hold_term(&term, list);
            }
            view.index.hold_every_term();
            return Ok(Some(view.index.loaded_postings()));
        }
        Ok(None)
    }
}

impl Loaded {
    /// Whether the model shows `head` or a later revision.
    fn shows(&self, head: &Option<Head>) -> bool {
        match (&self.head, head) {
            (Some(mine), Some(theirs)) => mine.seq >= theirs.seq,
            (mine, theirs) => mine == theirs,
        }
    }

    /// Loads the model once, then applies commits made elsewhere, as far
    /// as the store has heard of them (a read).
    pub(crate) fn catch_up(&mut self, store: &dyn Storage, tenant: &str) -> Result<(), Error> {
        self.catch_up_with(store, tenant, false)
    }

    /// As [`Loaded::catch_up`], to the head the store has now (a commit's
    /// preconditions are checked against it).
    pub(crate) fn catch_up_now(&mut self, store: &dyn Storage, tenant: &str) -> Result<(), Error> {
        self.catch_up_with(store, tenant, true)
    }

    fn catch_up_with(&mut self, store: &dyn Storage, tenant: &str, now: bool) -> Result<(), Error> {
        if let Some(view) = self.view.as_mut() {
            let head = if now {
                store.head_now()?
            } else {
                store.head()?
            };
            if head == self.head {
                return Ok(());
            }
            let since = self.head.as_ref().map_or(0, |h| h.seq);
            let (head, keys, rows) = store.changed_since(since)?;
            // Before the model moves on: what the changed documents were
            // indexed with, so their postings leave by those terms alone
            // (a binary search in each of their lists, not a probe of
            // every loaded list).
            let before = if keys.len() <= PATCH_SLOTS {
                indexed_terms(view, store, &keys)
            } else {
                HashMap::new()
            };
            let mut upserted: Vec<u32> = rows.iter().map(|r| r.slot).collect();
            upserted.sort_unstable();
            let mut slots = upserted.clone();
            for (b, p) in &keys {
                if let Some((slot, _)) = view.model.remove(b, p) {
                    view.index.forget(slot);
                    slots.push(slot);
                }
            }
            view.upsert_rows(rows);
            // Concepts renamed by those commits were re-indexed there (the
            // id is a searched field): their lengths and postings changed
            // too (the rows read carry their own lengths already).
            let renamed: Vec<u32> = view
                .model
                .settle()
                .into_iter()
                .filter(|s| upserted.binary_search(s).is_err())
                .collect();
            slots.extend(&renamed);
            slots.sort_unstable();
            slots.dedup();
            if slots.len() <= PATCH_SLOTS {
                // A few documents changed: patch the loaded postings with
                // their stored terms rather than loading every term again.
                // Each moves from the terms it was indexed with to its new
                // ones where those are known; the others are dropped from
                // every list and inserted again.
                let live: Vec<u32> = slots
                    .iter()
                    .copied()
                    .filter(|&s| view.model.entry(s).is_some())
                    .collect();
                let now: HashMap<u32, DocTerms> = live
                    .iter()
                    .copied()
                    .zip(store.terms_of_many(&live)?)
                    .filter_map(|(s, t)| Some((s, t?)))
                    .collect();
                let (known, mut rest): (Vec<u32>, Vec<u32>) =
                    slots.iter().partition(|s| before.contains_key(s));
                let moves: Vec<(u32, &DocTerms, Option<&DocTerms>)> =
                    known.iter().map(|s| (*s, &before[s], now.get(s))).collect();
                rest.extend(view.index.repost_many(&moves));
                rest.sort_unstable();
                view.index.drop_postings_of(&rest);
                for (slot, t) in &now {
                    if rest.binary_search(slot).is_ok() {
                        view.index.insert(*slot, t);
                    } else {
                        view.index.set_doc_len(*slot, t.len);
                    }
                }
            } else {
                for slot in renamed {
                    if let Some(t) = store.terms_of(slot)? {
                        view.index.set_doc_len(slot, t.len);
                    }
                }
                // Many changed (an import elsewhere): loaded postings are
                // read again on demand.
                view.index.clear_terms();
            }
            self.head = head;
            return Ok(());
        }
        let (head, rows) = store.load()?;
        let mut view = View::new(tenant, false);
        view.upsert_rows(rows);
        view.model.settle();
        self.view = Some(view);
        self.head = head;
        Ok(())
    }

    /// Derives every current document's compiled row and search terms
    /// again from its stored bytes, when the store was written by another
    /// compiler ([`COMPILER_VERSION`]): what a query is compared with must
    /// be what this okfit derives. Under the commit lock, so one process
    /// does it once; [`RECOMPILE_RUN`] documents per transaction.
    fn recompile(&mut self, store: &mut dyn Storage, tenant: &str) -> Result<(), Error> {
        let _lock = store.lock_commits()?;
        if store.compiler()? == COMPILER_VERSION {
            return Ok(());
        }
        self.view = None;
        self.head = None;
        self.catch_up_now(store, tenant)?;
        let Some(view) = self.view.as_mut() else {
            return Ok(());
        };
        let docs: Vec<(u32, String, String, String)> = view
            .model
            .slots()
            .filter_map(|s| {
                let e = view.model.entry(s)?;
                Some((s, e.bundle.clone(), e.path.clone(), e.hash.clone()))
            })
            .collect();
        let runs = docs.chunks(RECOMPILE_RUN);
        let count = runs.len();
        for (i, run) in runs.enumerate() {
            let hashes: Vec<&str> = run.iter().map(|d| d.3.as_str()).collect();
            let mut rows = Vec::with_capacity(run.len());
            for ((slot, bundle, path, hash), bytes) in run.iter().zip(store.blobs(&hashes)?) {
                let bytes = bytes.ok_or_else(|| {
                    Error::Store(format!("{bundle}/{path}: content {hash} is missing"))
                })?;
                let text = String::from_utf8_lossy(&bytes);
                let compiled = compile::compile(path, &text);
                // Same path, same slot: the id stays, so the terms can be
                // derived at once.
                view.model
                    .upsert_at(*slot, bundle, path, hash, compiled.clone());
                rows.push(NewDoc {
                    slot: *slot,
                    bundle: bundle.clone(),
                    path: path.clone(),
                    hash: hash.clone(),
                    terms: view.terms(*slot, &text),
                    compiled,
                });
            }
            store.recompile(&rows, i + 1 == count)?;
        }
        if count == 0 {
            store.recompile(&[], true)?;
        }
        // Read again as stored.
        self.view = None;
        self.head = None;
        Ok(())
    }

    /// Holds postings read beside the model's load, when they were read
    /// at the revision the model shows (else they are dropped).
    fn hold_early(&mut self, early: EarlyPostings) {
        let Some(view) = self.view.as_mut() else {
            return;
        };
        if early.head != self.head {
            return;
        }
        for (t, p) in early.terms.iter().zip(early.lists) {
            view.index.load_term(t, p);
        }
    }

    /// Reads the postings of `query`'s words not in memory yet.
    fn load_terms(&mut self, store: &dyn Storage, query: &str) -> Result<(), Error> {
        let Some(view) = self.view.as_mut() else {
            return Ok(());
        };
        let missing = view.index.missing_terms(query);
        let lists = store.postings_of(&missing)?;
        for (t, p) in missing.iter().zip(lists) {
            view.index.load_term(t, p);
        }
        Ok(())
    }
}

impl Loaded {
    /// Commits `changes` through `store` under the tenant's commit lock,
    /// retrying from the new state should another connection still commit
    /// first (one that takes no lock; unless `expected` pins the base).
    pub(crate) fn commit(
        &mut self,
        store: &mut dyn Storage,
        tenant: &str,
        changes: &[Change],
        compiled: Vec<Option<Compiled>>,
        expected: Option<&str>,
        now: Instant,
    ) -> Result<Committed, CommitError> {
        // The caller ([`StoreKb::exclusive`]) caught the model up to the
        // head as stored now: a change it refuses is refused at that head,
        // without waiting for the commit lock.
        self.check(changes, expected)?;
        // Other processes' commits wait from here until this one lands, so
        // the head read below is the one it builds on.
        let _lock = store.lock_commits()?;
        let mut last = None;
        for attempt in 0..COMMIT_TRIES {
            if attempt > 0 {
                backoff(attempt);
            }
            self.catch_up_now(store, tenant)?;
            match self.try_commit(store, changes, &compiled, expected, now) {
                Err(CommitError::Other(Error::Conflict(m))) => {
                    // Someone committed first: start again from their state.
                    self.view = None;
                    self.head = None;
                    if expected.is_some() {
                        return Err(Error::Conflict(m).into());
                    }
                    last = Some(m);
                }
                Err(e) => {
                    if matches!(e, CommitError::Other(_)) {
                        self.view = None;
                        self.head = None;
                    }
                    return Err(e);
                }
                ok => return ok,
            }
        }
        Err(Error::Conflict(last.unwrap_or_else(|| "database busy".into())).into())
    }

    /// Refuses `changes` if the revision the model shows is not
    /// `expected`, or a document's precondition does not hold in it.
    fn check(&self, changes: &[Change], expected: Option<&str>) -> Result<(), CommitError> {
        let Some(view) = self.view.as_ref() else {
            return Ok(());
        };
        if let Some(exp) = expected {
            if self.head.as_ref().map(|h| h.revision.as_str()) != Some(exp) {
                return Err(Error::Conflict(
                    "database changed: re-read the revision and document hashes".into(),
                )
                .into());
            }
        }
        for (i, c) in changes.iter().enumerate() {
            let cur = view
                .model
                .slot_of(&c.bundle, &c.path)
                .and_then(|s| view.model.entry(s))
                .map(|e| e.hash.as_str());
            if let Err(failure) = check_precondition(c, cur) {
                return Err(CommitError::Precondition { index: i, failure });
            }
        }
        Ok(())
    }

    fn try_commit(
        &mut self,
        store: &mut dyn Storage,
        changes: &[Change],
        compiled: &[Option<Compiled>],
        expected: Option<&str>,
        now: Instant,
    ) -> Result<Committed, CommitError> {
        self.check(changes, expected)?;
        let view = self
            .view
            .as_mut()
            .ok_or_else(|| Error::Store("store not loaded".into()))?;
        let mut plan = CommitPlan::default();
        let mut hashes = vec![];
        let mut touched: Vec<u32> = vec![];
        let mut old_terms: HashMap<u32, DocTerms> = HashMap::new();
        let mut new_texts: HashMap<u32, Arc<str>> = HashMap::new();
        for (c, comp) in changes.iter().zip(compiled) {
            let old_hash = view
                .model
                .slot_of(&c.bundle, &c.path)
                .and_then(|s| view.model.entry(s))
                .map(|e| e.hash.clone());
            match (&c.content, comp) {
                (Some(bytes), Some(comp)) => {
                    let hash = sha256_hex(bytes);
                    if let Some(s) = view.model.slot_of(&c.bundle, &c.path) {
                        if let Some(t) = store.terms_of(s)? {
                            old_terms.entry(s).or_insert(t);
                        }
                    }
                    let (slot, _) = view.model.upsert(&c.bundle, &c.path, &hash, comp.clone());
                    plan.blobs.push((hash.clone(), bytes.clone()));
                    new_texts.insert(slot, Arc::from(String::from_utf8_lossy(bytes).into_owned()));
                    touched.push(slot);
                    plan.changes.push(ChangeRow {
                        bundle: c.bundle.clone(),
                        path: c.path.clone(),
                        old: old_hash,
                        new: Some(hash.clone()),
                    });
                    hashes.push(Some(hash));
                }
                _ => {
                    if let Some(s) = view.model.slot_of(&c.bundle, &c.path) {
                        if let Some(t) = store.terms_of(s)? {
                            old_terms.entry(s).or_insert(t);
                        }
                    }
                    if let Some((slot, _)) = view.model.remove(&c.bundle, &c.path) {
                        plan.deletes.push(slot);
                    }
                    plan.changes.push(ChangeRow {
                        bundle: c.bundle.clone(),
                        path: c.path.clone(),
                        old: old_hash,
                        new: None,
                    });
                    hashes.push(None);
                }
            }
        }
        let renamed = view.model.settle();
        for slot in renamed {
            if touched.contains(&slot) {
                continue;
            }
            if let Some(t) = store.terms_of(slot)? {
                old_terms.entry(slot).or_insert(t);
            }
            let Some(e) = view.model.entry(slot) else {
                continue;
            };
            let Some(bytes) = store.blob(&e.hash)? else {
                continue;
            };
            let text = String::from_utf8_lossy(&bytes).into_owned();
            if let Some(t) = view.terms(slot, &text) {
                plan.reindex.push((slot, t));
            }
        }
        for slot in &touched {
            // A slot deleted and re-used in one batch is written as new.
            plan.deletes.retain(|d| d != slot);
            let Some(e) = view.model.entry(*slot) else {
                continue;
            };
            let text = new_texts
                .get(slot)
                .cloned()
                .unwrap_or_else(|| Arc::from(""));
            let terms = if e.is_concept() {
                view.terms(*slot, &text)
            } else {
                None
            };
            plan.upserts.push(NewDoc {
                slot: *slot,
                bundle: e.bundle.clone(),
                path: e.path.clone(),
                hash: e.hash.clone(),
                compiled: e.compiled.clone(),
                terms,
            });
        }
        plan.snapshot = view.model.snapshot();
        plan.concepts = view.model.concepts();
        plan.bundles = view.model.bundles().iter().map(|s| s.to_string()).collect();
        plan.created = time::format_millis(now);
        let (head, info) = store.commit(self.head.as_ref(), &plan)?;
        // Committed: bring the loaded postings and lengths along.
        for (slot, t) in &old_terms {
            view.index.remove(*slot, t);
        }
        for slot in &plan.deletes {
            if !old_terms.contains_key(slot) {
                view.index.forget(*slot);
            }
        }
        for d in &plan.upserts {
            if let Some(t) = &d.terms {
                view.index.insert(d.slot, t);
            }
        }
        for (slot, t) in &plan.reindex {
            view.index.insert(*slot, t);
        }
        self.head = Some(head);
        Ok(Committed {
            snapshot: info.snapshot.clone(),
            concepts: info.concepts,
            bundles: info.bundles.clone(),
            revision: Some(info),
            hashes,
        })
    }
}
