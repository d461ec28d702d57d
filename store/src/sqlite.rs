//! The embedded store: one SQLite database per tenant under
//! `<data>/tenants/<tenant>/okfit.sqlite` (WAL, full sync). It keeps the
//! exact bytes of every document content-addressed by sha256, the current
//! documents with their compiled rows and search postings, and every
//! revision with the changes it made. Storage sits behind [`Storage`] so
//! another database can take its place.

use crate::error::Error;
use crate::progress::Task;
use okfit_core::doc::hex;
use okfit_core::kb::compile::Compiled;
use okfit_core::kb::postings::Postings;
use okfit_core::kb::search::DocTerms;
use rusqlite::{params, Connection, OpenFlags, OptionalExtension, TransactionBehavior};
use serde::Serialize;
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// Bumped when the compiled form of a document changes meaning.
pub const COMPILER_VERSION: &str = "2";

/// The head of a tenant: its newest revision.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    /// Monotonic sequence number of the revision.
    pub seq: i64,
    /// The revision digest.
    pub revision: String,
}

/// A current document as the read model loads it.
#[derive(Clone, Debug)]
pub struct DocRow {
    /// The model slot (also the posting key).
    pub slot: u32,
    /// Bundle name.
    pub bundle: String,
    /// Path inside the bundle.
    pub path: String,
    /// sha256 of the exact bytes.
    pub hash: String,
    /// The compiled row.
    pub compiled: Compiled,
    /// Weighted search length (0 for navigation documents).
    pub len: f32,
}

/// A document row to write.
#[derive(Clone, Debug)]
pub struct NewDoc {
    /// Slot.
    pub slot: u32,
    /// Bundle.
    pub bundle: String,
    /// Path.
    pub path: String,
    /// Content hash.
    pub hash: String,
    /// The compiled row.
    pub compiled: Compiled,
    /// Search terms (none for navigation documents).
    pub terms: Option<DocTerms>,
}

/// One document changed by a commit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangeRow {
    /// Bundle.
    pub bundle: String,
    /// Path.
    pub path: String,
    /// Hash before (none: created).
    pub old: Option<String>,
    /// Hash after (none: deleted).
    pub new: Option<String>,
}

/// Everything one commit writes, prepared from the read model.
#[derive(Clone, Debug, Default)]
pub struct CommitPlan {
    /// New contents by hash.
    pub blobs: Vec<(String, Vec<u8>)>,
    /// Documents written (created or replaced).
    pub upserts: Vec<NewDoc>,
    /// Documents whose search terms changed without their bytes changing
    /// (their id changed): slot and new terms.
    pub reindex: Vec<(u32, DocTerms)>,
    /// Slots removed.
    pub deletes: Vec<u32>,
    /// The changes recorded in history.
    pub changes: Vec<ChangeRow>,
    /// Snapshot digest after the commit.
    pub snapshot: String,
    /// Concepts after the commit.
    pub concepts: usize,
    /// Bundles after the commit.
    pub bundles: Vec<String>,
    /// Commit time (RFC 3339, UTC, milliseconds).
    pub created: String,
}

impl CommitPlan {
    /// The head and revision this plan became as revision number `seq`.
    pub fn committed(
        &self,
        seq: i64,
        revision: String,
        parent: Option<String>,
    ) -> (Head, RevisionInfo) {
        (
            Head {
                seq,
                revision: revision.clone(),
            },
            RevisionInfo {
                revision,
                parent,
                snapshot: self.snapshot.clone(),
                created: self.created.clone(),
                concepts: self.concepts,
                bundles: self.bundles.clone(),
            },
        )
    }
}

/// A committed revision (reference langonrock §5).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct RevisionInfo {
    /// Revision digest.
    pub revision: String,
    /// Parent revision digest.
    pub parent: Option<String>,
    /// Snapshot digest.
    pub snapshot: String,
    /// Commit time.
    pub created: String,
    /// Concept count.
    pub concepts: usize,
    /// Bundle names.
    pub bundles: Vec<String>,
}

/// What changed since a revision: the new head, the `(bundle, path)` keys
/// touched, and the current rows of those still present.
pub type Changed = (Option<Head>, Vec<(String, String)>, Vec<DocRow>);

/// Held while one connection commits to a tenant: until it drops, every
/// other connection's [`Storage::lock_commits`] waits, in this process or
/// another.
pub struct CommitLock(#[allow(dead_code)] Box<dyn Send>);

impl CommitLock {
    /// A lock held as long as `held` lives (dropping it releases).
    pub fn new(held: impl Send + 'static) -> CommitLock {
        CommitLock(Box::new(held))
    }
}

/// How long a commit waits for another connection's commit to the same
/// tenant before it answers that the database is busy.
pub const COMMIT_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The answer when [`COMMIT_LOCK_WAIT`] passed.
pub fn busy(tenant: &str) -> Error {
    Error::Conflict(format!(
        "database busy: another process has been committing to tenant \"{tenant}\" for {} s; retry",
        COMMIT_LOCK_WAIT.as_secs()
    ))
}

/// Where and how a tenant's documents are kept.
pub trait Storage: Send {
    /// Waits until no other connection commits to this tenant, then holds
    /// them off until the returned lock drops. A commit takes it before it
    /// reads the head it builds on, so committers in several processes take
    /// turns instead of overtaking each other.
    fn lock_commits(&self) -> Result<CommitLock, Error>;
    /// The newest revision, if any. A store that follows commit
    /// announcements may answer from the last one it received, a few
    /// milliseconds behind another process's commit.
    fn head(&self) -> Result<Option<Head>, Error>;
    /// The newest revision as the store has it now, never from an
    /// announcement: what a commit's preconditions are checked against.
    fn head_now(&self) -> Result<Option<Head>, Error> {
        self.head()
    }
    /// The head and every current document, read in one snapshot.
    fn load(&self) -> Result<(Option<Head>, Vec<DocRow>), Error>;
    /// The head and the current rows of documents changed after revision
    /// `seq` (documents deleted since are listed in the first vector).
    fn changed_since(&self, seq: i64) -> Result<Changed, Error>;
    /// The exact bytes of a content hash.
    fn blob(&self, hash: &str) -> Result<Option<Vec<u8>>, Error>;
    /// The bytes of each of `hashes`, in their order: one round trip where
    /// the store is remote.
    fn blobs(&self, hashes: &[&str]) -> Result<Vec<Option<Vec<u8>>>, Error> {
        hashes.iter().map(|h| self.blob(h)).collect()
    }
    /// The stored search terms of a slot.
    fn terms_of(&self, slot: u32) -> Result<Option<DocTerms>, Error>;
    /// The stored search terms of each of `slots`, in their order: one
    /// round trip where the store is remote.
    fn terms_of_many(&self, slots: &[u32]) -> Result<Vec<Option<DocTerms>>, Error> {
        slots.iter().map(|&s| self.terms_of(s)).collect()
    }
    /// The postings `(slot, tf)` of one term.
    fn postings(&self, term: &str) -> Result<Vec<(u32, f32)>, Error>;
    /// The postings of each of `terms`, in their order: one round trip
    /// where the store is remote.
    fn postings_of(&self, terms: &[String]) -> Result<Vec<Vec<(u32, f32)>>, Error> {
        terms.iter().map(|t| self.postings(t)).collect()
    }
    /// The head and every term's postings (each list in slot order), read
    /// in one snapshot; `Ok(None)` when they number more than `limit`. What
    /// a long-lived reader holds so that no search waits for the store.
    fn all_postings(&self, limit: usize) -> Result<Option<AllPostings>, Error>;
    /// Applies `plan` atomically on top of `base`; a different head is a
    /// [`Error::Conflict`].
    fn commit(
        &mut self,
        base: Option<&Head>,
        plan: &CommitPlan,
    ) -> Result<(Head, RevisionInfo), Error>;
    /// Up to `limit` retained revisions older than `before` (newest
    /// first), and whether more follow. `before` unknown: `Ok(None)`.
    fn history(
        &self,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Option<(Vec<RevisionInfo>, bool)>, Error>;
    /// The documents `(bundle, path) → hash` of a retained revision.
    fn state_at(&self, revision: &str) -> Result<Option<State>, Error>;
    /// Keeps the newest `keep` revisions; returns (revisions removed,
    /// contents removed).
    fn gc(&mut self, keep: usize) -> Result<(usize, usize), Error>;
    /// Re-checks every retained revision's documents and digests.
    fn verify(&self) -> Result<Verified, Error>;
    /// The version of the compiler ([`COMPILER_VERSION`]) that derived the
    /// stored rows and search terms.
    fn compiler(&self) -> Result<String, Error>;
    /// Replaces what is derived from some current documents (compiled
    /// rows, search lengths and postings) with `docs`, the same documents
    /// compiled again, in one transaction and without a revision, since no
    /// document changes; with `last`, also records [`COMPILER_VERSION`].
    /// Run under [`Storage::lock_commits`]; a run cut short is done again
    /// from the start, as the version still names the old compiler.
    fn recompile(&mut self, docs: &[NewDoc], last: bool) -> Result<(), Error>;
    /// Caps this connection's own cache at `kib` KiB where it has one. A
    /// pool of read connections keeps theirs small: the read model holds
    /// what they read.
    fn set_cache_kib(&self, kib: u32) -> Result<(), Error> {
        let _ = kib;
        Ok(())
    }
    /// The bytes the tenant takes where that costs nothing to learn (a
    /// local file's length); `None` elsewhere. A reader uses it to tell a
    /// small tenant, whose first load is quick, from a large one.
    fn size_hint(&self) -> Option<u64> {
        None
    }
}

/// A tenant's head and each term's postings as of it.
pub type AllPostings = (Option<Head>, Vec<(String, Postings)>);

/// The documents of one revision: `(bundle, path) → hash`.
pub type State = std::collections::BTreeMap<(String, String), String>;

/// What `verify` found.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Verified {
    /// True when nothing is wrong.
    pub ok: bool,
    /// Retained revisions checked.
    pub revisions: usize,
    /// Distinct contents checked.
    pub contents: usize,
    /// Current documents.
    pub documents: usize,
    /// What is wrong, one sentence each.
    pub problems: Vec<String>,
}

/// The SQLite store of one tenant.
pub struct SqliteStore {
    conn: Connection,
    path: PathBuf,
    /// The data root and tenant, to reach the tenant's lock file.
    root: PathBuf,
    tenant: String,
    /// Term ids already in the database (ids are never reused or removed).
    term_ids: std::collections::HashMap<String, i64>,
    /// The tenant's lock file, opened by the first commit and kept as
    /// long as the connection (both name the tenant's folder as it was
    /// when they were opened).
    lock_file: std::cell::RefCell<Option<std::sync::Arc<std::fs::File>>>,
}

/// The tenant's lock file while a commit holds it: dropping unlocks.
struct Flocked(std::sync::Arc<std::fs::File>);

impl Drop for Flocked {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

/// Term ids a transaction created; they join the cache only once it commits.
type NewTerms = std::collections::HashMap<String, i64>;
/// A queued posting change: term id, slot, order queued, and the new `tf`
/// (`None`: the posting goes).
type PostingOp = (i64, u32, u32, Option<f32>);

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS blobs(hash TEXT PRIMARY KEY, bytes BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS docs(
  slot INTEGER PRIMARY KEY, bundle TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL,
  len REAL NOT NULL, compiled TEXT NOT NULL, UNIQUE(bundle, path));
CREATE TABLE IF NOT EXISTS doc_terms(slot INTEGER PRIMARY KEY, terms BLOB NOT NULL);
CREATE TABLE IF NOT EXISTS terms(id INTEGER PRIMARY KEY, term TEXT NOT NULL UNIQUE);
CREATE TABLE IF NOT EXISTS postings(term INTEGER NOT NULL, slot INTEGER NOT NULL, tf REAL NOT NULL,
  PRIMARY KEY(term, slot)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS revisions(seq INTEGER PRIMARY KEY, revision TEXT NOT NULL UNIQUE,
  parent TEXT, snapshot TEXT NOT NULL, created TEXT NOT NULL, concepts INTEGER NOT NULL,
  bundles TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS changes(seq INTEGER NOT NULL, bundle TEXT NOT NULL, path TEXT NOT NULL,
  old TEXT, new TEXT, PRIMARY KEY(seq, bundle, path)) WITHOUT ROWID;
";

/// The tenant directory under a data root.
pub fn tenant_dir(root: &Path, tenant: &str) -> PathBuf {
    root.join("tenants").join(tenant)
}

fn store_err(path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Store(format!("store {}: {e}", path.display()))
}

impl SqliteStore {
    /// Opens a tenant's store. With `create`, a missing tenant is created
    /// (directory and database); without, it is an error naming the tenant.
    pub fn open(root: &Path, tenant: &str, create: bool) -> Result<SqliteStore, Error> {
        let dir = tenant_dir(root, tenant);
        let path = dir.join("okfit.sqlite");
        let missing = || {
            Error::NoTenant(format!(
                "no tenant \"{tenant}\" in {}: write a concept or run okfit put to create it",
                root.display()
            ))
        };
        // The tenant's folder is reached (and created) without following a
        // link, and SQLite refuses a link at the database file itself.
        let data = match crate::beneath::Root::open(root) {
            Ok(d) => d,
            Err(_) if create => crate::beneath::Root::create(root)?,
            Err(_) => return Err(missing()),
        };
        let shown = format!("tenants/{tenant}/okfit.sqlite");
        match data.dir(&format!("tenants/{tenant}"), create, &shown)? {
            Some(d) if create || d.kind("okfit.sqlite")?.is_some() => {}
            _ => return Err(missing()),
        }
        let flags = if create {
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_CREATE
        } else {
            OpenFlags::SQLITE_OPEN_READ_WRITE
        } | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        let conn = Connection::open_with_flags(&path, flags).map_err(|e| store_err(&path, e))?;
        conn.busy_timeout(std::time::Duration::from_secs(5))
            .map_err(|e| store_err(&path, e))?;
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(|e| store_err(&path, e))?;
        conn.pragma_update(None, "synchronous", "FULL")
            .map_err(|e| store_err(&path, e))?;
        // 32 MiB of page cache: postings and index pages stay in memory
        // between calls instead of being read again from the file.
        conn.pragma_update(None, "cache_size", -32768)
            .map_err(|e| store_err(&path, e))?;
        // Checkpoint the write-ahead log every 32 MiB rather than 4 MiB: pages
        // rewritten by nearby commits are copied back once.
        conn.pragma_update(None, "wal_autocheckpoint", 8192)
            .map_err(|e| store_err(&path, e))?;
        conn.execute_batch(SCHEMA)
            .map_err(|e| store_err(&path, e))?;
        rusqlite::vtab::array::load_module(&conn).map_err(|e| store_err(&path, e))?;
        let schema: Option<String> = conn
            .query_row("SELECT value FROM meta WHERE key='schema'", [], |r| {
                r.get(0)
            })
            .optional()
            .map_err(|e| store_err(&path, e))?;
        match schema.as_deref() {
            None => {
                conn.execute(
                    "INSERT OR IGNORE INTO meta(key, value) VALUES ('schema', '1'), ('tenant', ?1), ('compiler', ?2)",
                    params![tenant, COMPILER_VERSION],
                )
                .map_err(|e| store_err(&path, e))?;
            }
            Some("1") => {}
            Some(v) => {
                return Err(store_err(
                    &path,
                    format!("schema {v} is newer than this okfit understands; upgrade okfit"),
                ))
            }
        }
        Ok(SqliteStore {
            conn,
            path,
            root: root.to_path_buf(),
            tenant: tenant.to_string(),
            term_ids: Default::default(),
            lock_file: Default::default(),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn head_in(conn: &Connection) -> rusqlite::Result<Option<Head>> {
        // Asked before every read: the statement is prepared once.
        conn.prepare_cached("SELECT seq, revision FROM revisions ORDER BY seq DESC LIMIT 1")?
            .query_row([], |r| {
                Ok(Head {
                    seq: r.get(0)?,
                    revision: r.get(1)?,
                })
            })
            .optional()
    }

    fn row(r: &rusqlite::Row) -> rusqlite::Result<(u32, String, String, String, String, f64)> {
        Ok((
            r.get(0)?,
            r.get(1)?,
            r.get(2)?,
            r.get(3)?,
            r.get(4)?,
            r.get(5)?,
        ))
    }

    /// Reads the head and every document row in one snapshot, sending
    /// the rows on in numbered batches; the channel closes when done.
    fn read_rows(
        &self,
        to: std::sync::mpsc::Sender<(usize, Vec<RawRow>)>,
    ) -> Result<Option<Head>, Error> {
        let tx = self.conn.unchecked_transaction()?;
        let head = Self::head_in(&tx)?;
        {
            let mut st = tx.prepare("SELECT slot, bundle, path, hash, compiled, len FROM docs")?;
            let mut rows = st.query([])?;
            for n in 0.. {
                let mut batch = Vec::with_capacity(LOAD_BATCH);
                while batch.len() < LOAD_BATCH {
                    let Some(r) = rows.next()? else { break };
                    batch.push(Self::row(r)?);
                }
                let last = batch.len() < LOAD_BATCH;
                to.send((n, batch))
                    .map_err(|_| store_err(&self.path, "the rows' decoder stopped"))?;
                if last {
                    break;
                }
            }
        }
        tx.commit()?;
        Ok(head)
    }

    fn doc_row(&self, t: (u32, String, String, String, String, f64)) -> Result<DocRow, Error> {
        doc_row_at(&self.path, t)
    }
}

/// A stored row as the read model loads it.
type RawRow = (u32, String, String, String, String, f64);

/// Rows a tenant's load hands to its decoding threads at a time.
const LOAD_BATCH: usize = 1024;

fn doc_row_at(path: &Path, t: RawRow) -> Result<DocRow, Error> {
    {
        let compiled = Compiled::decode(&t.4).ok_or_else(|| {
            store_err(
                path,
                format!(
                    "database corruption: unreadable compiled row for {}/{}",
                    t.1, t.2
                ),
            )
        })?;
        Ok(DocRow {
            slot: t.0,
            bundle: t.1,
            path: t.2,
            hash: t.3,
            compiled,
            len: t.5 as f32,
        })
    }
}

impl SqliteStore {
    fn stored_terms(tx: &rusqlite::Transaction, slot: u32) -> rusqlite::Result<Option<DocTerms>> {
        let old: Option<Vec<u8>> = tx
            .prepare_cached("SELECT terms FROM doc_terms WHERE slot = ?1")?
            .query_row([slot], |r| r.get(0))
            .optional()?;
        Ok(old.and_then(|b| DocTerms::decode(&b)))
    }

    /// Writes the queued posting changes, the last change of each
    /// `(term, slot)` winning: new postings in `(term, slot)` order (a
    /// commit of many documents walks the postings B-tree once, rather
    /// than jumping about it per document), gone ones a statement per slot.
    fn write_postings(tx: &rusqlite::Transaction, mut ops: Vec<PostingOp>) -> rusqlite::Result<()> {
        ops.sort_unstable_by_key(|&(term, slot, seq, _)| (term, slot, seq));
        let mut put = tx.prepare_cached(
            "INSERT OR REPLACE INTO postings(term, slot, tf) VALUES (?1, ?2, ?3)",
        )?;
        let mut gone: std::collections::BTreeMap<u32, Vec<rusqlite::types::Value>> =
            Default::default();
        for (i, &(term, slot, _, tf)) in ops.iter().enumerate() {
            let last = ops
                .get(i + 1)
                .is_none_or(|&(t, s, _, _)| (t, s) != (term, slot));
            if !last {
                continue;
            }
            match tf {
                Some(tf) => {
                    put.execute(params![term, slot, tf as f64])?;
                }
                None => gone
                    .entry(slot)
                    .or_default()
                    .push(rusqlite::types::Value::Integer(term)),
            }
        }
        let mut del =
            tx.prepare_cached("DELETE FROM postings WHERE slot = ?1 AND term IN rarray(?2)")?;
        for (slot, terms) in gone {
            del.execute(params![slot, std::rc::Rc::new(terms)])?;
        }
        Ok(())
    }

    fn term_id(
        tx: &rusqlite::Transaction,
        cache: &std::collections::HashMap<String, i64>,
        fresh: &mut NewTerms,
        term: &str,
    ) -> rusqlite::Result<i64> {
        if let Some(id) = cache.get(term).or_else(|| fresh.get(term)) {
            return Ok(*id);
        }
        let id: i64 = tx
            .prepare_cached(
                "INSERT INTO terms(term) VALUES (?1) ON CONFLICT(term) DO UPDATE SET term = excluded.term RETURNING id",
            )?
            .query_row([term], |r| r.get(0))?;
        fresh.insert(term.to_string(), id);
        Ok(id)
    }

    /// Brings a slot's postings from its stored terms to `new`, touching
    /// only the terms that differ (queued in `ops`, see
    /// [`SqliteStore::write_postings`]), and stores `new` as its terms.
    fn update_postings(
        tx: &rusqlite::Transaction,
        cache: &std::collections::HashMap<String, i64>,
        fresh: &mut NewTerms,
        ops: &mut Vec<PostingOp>,
        slot: u32,
        new: Option<&DocTerms>,
    ) -> rusqlite::Result<()> {
        let old = Self::stored_terms(tx, slot)?;
        let empty: Vec<(String, f32)> = vec![];
        let a = old.as_ref().map_or(&empty, |t| &t.terms);
        let b = new.map_or(&empty, |t| &t.terms);
        let (old_terms, new_terms) = term_changes(a, b);
        for t in old_terms {
            let id = Self::term_id(tx, cache, fresh, t)?;
            ops.push((id, slot, ops.len() as u32, None));
        }
        for (t, tf) in new_terms {
            let id = Self::term_id(tx, cache, fresh, t)?;
            ops.push((id, slot, ops.len() as u32, Some(tf)));
        }
        match new {
            Some(t) => {
                tx.prepare_cached("INSERT OR REPLACE INTO doc_terms(slot, terms) VALUES (?1, ?2)")?
                    .execute(params![slot, t.encode()])?;
            }
            None => {
                tx.prepare_cached("DELETE FROM doc_terms WHERE slot = ?1")?
                    .execute([slot])?;
            }
        }
        Ok(())
    }
}

/// How a slot's stored terms `a` become `b` (both sorted by term): the
/// terms to remove, and the terms to write with their new frequency.
pub(crate) fn term_changes<'a>(
    a: &'a [(String, f32)],
    b: &'a [(String, f32)],
) -> (Vec<&'a str>, Vec<(&'a str, f32)>) {
    let (mut gone, mut put) = (vec![], vec![]);
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        let ord = match (a.get(i), b.get(j)) {
            (Some(x), Some(y)) => x.0.cmp(&y.0),
            (Some(_), None) => std::cmp::Ordering::Less,
            _ => std::cmp::Ordering::Greater,
        };
        match ord {
            std::cmp::Ordering::Less => {
                gone.push(a[i].0.as_str());
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                put.push((b[j].0.as_str(), b[j].1));
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                if a[i].1 != b[j].1 {
                    put.push((b[j].0.as_str(), b[j].1));
                }
                i += 1;
                j += 1;
            }
        }
    }
    (gone, put)
}

/// The revision digest: sha256 of the canonical JSON of the revision's
/// metadata and the changes it made.
pub(crate) fn revision_digest(parent: Option<&str>, plan: &CommitPlan) -> String {
    let mut ch = Sha256::new();
    for c in &plan.changes {
        ch.update(c.bundle.as_bytes());
        ch.update([0]);
        ch.update(c.path.as_bytes());
        ch.update([0]);
        ch.update(c.old.as_deref().unwrap_or("-").as_bytes());
        ch.update([0]);
        ch.update(c.new.as_deref().unwrap_or("-").as_bytes());
        ch.update(b"\n");
    }
    let meta = serde_json::json!({
        "version": 1,
        "parent": parent,
        "snapshot": plan.snapshot,
        "created": plan.created,
        "concepts": plan.concepts,
        "bundles": plan.bundles,
        "changes": hex(&ch.finalize()),
    });
    hex(&Sha256::digest(meta.to_string().as_bytes()))
}

fn info_row(r: &rusqlite::Row) -> rusqlite::Result<RevisionInfo> {
    let bundles: String = r.get(5)?;
    Ok(RevisionInfo {
        revision: r.get(0)?,
        parent: r.get(1)?,
        snapshot: r.get(2)?,
        created: r.get(3)?,
        concepts: r.get::<_, i64>(4)? as usize,
        bundles: serde_json::from_str(&bundles).unwrap_or_default(),
    })
}

/// The problem with one stored content, if any: missing, not matching its
/// digest, or not UTF-8.
pub(crate) fn content_problem(hash: &str, bytes: Option<&[u8]>) -> Option<String> {
    match bytes {
        None => Some(format!("content {hash} is missing")),
        Some(b) if hex(&Sha256::digest(b)) != hash => {
            Some(format!("content {hash} does not match its digest"))
        }
        Some(b) if std::str::from_utf8(b).is_err() => {
            Some(format!("content {hash} is not valid UTF-8"))
        }
        Some(_) => None,
    }
}

/// Checks one retained revision (number `seq`) against `state`, the
/// documents it should hold: the next newer revision must name it as its
/// parent, and its recorded snapshot and concept count must match.
pub(crate) fn check_revision(
    out: &mut Verified,
    newer: Option<&RevisionInfo>,
    seq: i64,
    info: &RevisionInfo,
    state: &State,
) {
    if let Some(n) = newer {
        if n.parent.as_deref() != Some(info.revision.as_str()) {
            out.problems.push(format!(
                "revision {} does not name {} as its parent",
                n.revision, info.revision
            ));
        }
    }
    let (snapshot, concepts) = digest_of(state);
    if snapshot != info.snapshot {
        out.problems.push(format!(
            "revision {} (#{seq}) records snapshot {} but its documents give {snapshot}",
            info.revision, info.snapshot
        ));
    }
    if concepts != info.concepts {
        out.problems.push(format!(
            "revision {} records {} concepts but has {concepts}",
            info.revision, info.concepts
        ));
    }
    out.revisions += 1;
}

/// The snapshot digest and concept count of a state.
pub fn digest_of(state: &State) -> (String, usize) {
    let mut bundles: Vec<(&str, [u8; 32])> = vec![];
    let mut concepts = 0;
    let mut i = state.iter().peekable();
    while let Some(((b, _), _)) = i.peek() {
        let b = b.as_str();
        let mut docs = vec![];
        while let Some(((b2, p), h)) = i.peek() {
            if b2 != b {
                break;
            }
            if !okfit_core::doc::is_reserved(p) {
                concepts += 1;
            }
            docs.push((p.as_str(), h.as_str()));
            i.next();
        }
        bundles.push((b, okfit_core::kb::model::bundle_digest(docs)));
    }
    (okfit_core::kb::model::snapshot_digest(bundles), concepts)
}

impl SqliteStore {
    fn current_state(tx: &Connection) -> rusqlite::Result<State> {
        let mut st = tx.prepare("SELECT bundle, path, hash FROM docs")?;
        let rows = st.query_map([], |r| Ok(((r.get(0)?, r.get(1)?), r.get(2)?)))?;
        rows.collect()
    }

    /// Undoes, newest first, the changes made after revision `seq`.
    fn undo_after(tx: &Connection, state: &mut State, seq: i64) -> rusqlite::Result<()> {
        Self::undo_between(tx, state, seq, i64::MAX)
    }

    /// Undoes, newest first, the changes of the revisions after `from` up
    /// to and including `to`.
    fn undo_between(
        tx: &Connection,
        state: &mut State,
        from: i64,
        to: i64,
    ) -> rusqlite::Result<()> {
        let mut st = tx.prepare_cached(
            "SELECT bundle, path, old FROM changes WHERE seq > ?1 AND seq <= ?2 ORDER BY seq DESC",
        )?;
        let rows = st.query_map([from, to], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })?;
        for row in rows {
            let (b, p, old) = row?;
            match old {
                Some(h) => {
                    state.insert((b, p), h);
                }
                None => {
                    state.remove(&(b, p));
                }
            }
        }
        Ok(())
    }

    fn seq_of(tx: &Connection, revision: &str) -> rusqlite::Result<Option<i64>> {
        tx.prepare_cached("SELECT seq FROM revisions WHERE revision = ?1")?
            .query_row([revision], |r| r.get(0))
            .optional()
    }

    /// The tenant's lock file, opened beneath the data root (never through
    /// a link) the first time.
    fn lock_file(&self) -> Result<std::sync::Arc<std::fs::File>, Error> {
        if let Some(f) = self.lock_file.borrow().as_ref() {
            return Ok(f.clone());
        }
        let shown = format!("tenants/{}/okfit.lock", self.tenant);
        let dir = crate::beneath::Root::open(&self.root)?
            .dir(&format!("tenants/{}", self.tenant), false, &shown)?
            .ok_or_else(|| store_err(&self.path, "the tenant's folder is gone"))?;
        let file = std::sync::Arc::new(dir.lock_file("okfit.lock", &shown)?);
        *self.lock_file.borrow_mut() = Some(file.clone());
        Ok(file)
    }
}

impl Storage for SqliteStore {
    /// An exclusive lock on `tenants/<tenant>/okfit.lock` (never the
    /// database file: closing any descriptor of that would drop SQLite's
    /// own locks). The kernel releases it if the process dies.
    fn lock_commits(&self) -> Result<CommitLock, Error> {
        let file = self.lock_file()?;
        let started = std::time::Instant::now();
        let mut wait = std::time::Duration::from_micros(100);
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(CommitLock::new(Flocked(file))),
                Err(std::fs::TryLockError::WouldBlock) if started.elapsed() < COMMIT_LOCK_WAIT => {
                    std::thread::sleep(wait);
                    wait = (wait * 2).min(std::time::Duration::from_millis(4));
                }
                Err(std::fs::TryLockError::WouldBlock) => return Err(busy(&self.tenant)),
                Err(std::fs::TryLockError::Error(e)) => return Err(store_err(&self.path, e)),
            }
        }
    }

    fn size_hint(&self) -> Option<u64> {
        std::fs::metadata(&self.path).ok().map(|m| m.len())
    }

    fn set_cache_kib(&self, kib: u32) -> Result<(), Error> {
        self.conn
            .pragma_update(None, "cache_size", -i64::from(kib))
            .map_err(|e| store_err(&self.path, e))
    }

    fn head(&self) -> Result<Option<Head>, Error> {
        Ok(Self::head_in(&self.conn)?)
    }

    fn load(&self) -> Result<(Option<Head>, Vec<DocRow>), Error> {
        // Decoding is a large part of opening a big tenant: batches of
        // rows are decoded on a second thread while this one reads on,
        // then by both.
        let (to_decode, batches) = std::sync::mpsc::channel::<(usize, Vec<RawRow>)>();
        let batches = std::sync::Mutex::new(batches);
        let path = self.path.as_path();
        let decode = || {
            let mut out: Vec<(usize, Result<Vec<DocRow>, Error>)> = vec![];
            loop {
                let next = batches.lock().unwrap_or_else(|p| p.into_inner()).recv();
                let Ok((i, raw)) = next else { break };
                out.push((i, raw.into_iter().map(|t| doc_row_at(path, t)).collect()));
            }
            out
        };
        let (head, mut decoded) = std::thread::scope(|s| {
            let helper = s.spawn(decode);
            let read = self.read_rows(to_decode);
            let mut decoded = decode();
            if let Ok(theirs) = helper.join() {
                decoded.extend(theirs);
            }
            read.map(|h| (h, decoded))
        })?;
        decoded.sort_unstable_by_key(|(i, _)| *i);
        let total = decoded
            .iter()
            .map(|(_, r)| r.as_ref().map_or(0, Vec::len))
            .sum();
        let mut rows = Vec::with_capacity(total);
        for (_, r) in decoded {
            rows.extend(r?);
        }
        Ok((head, rows))
    }

    fn changed_since(&self, seq: i64) -> Result<Changed, Error> {
        let tx = self.conn.unchecked_transaction()?;
        let head = Self::head_in(&tx)?;
        let keys: Vec<(String, String)> = {
            let mut st =
                tx.prepare_cached("SELECT DISTINCT bundle, path FROM changes WHERE seq > ?1")?;
            let rows = st.query_map([seq], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut raw = vec![];
        {
            let mut st = tx.prepare_cached(
                "SELECT slot, bundle, path, hash, compiled, len FROM docs WHERE bundle = ?1 AND path = ?2",
            )?;
            for (b, p) in &keys {
                if let Some(t) = st.query_row(params![b, p], Self::row).optional()? {
                    raw.push(t);
                }
            }
        }
        tx.commit()?;
        let rows = raw
            .into_iter()
            .map(|t| self.doc_row(t))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((head, keys, rows))
    }

    fn blob(&self, hash: &str) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.blobs(&[hash])?.pop().flatten())
    }

    fn blobs(&self, hashes: &[&str]) -> Result<Vec<Option<Vec<u8>>>, Error> {
        // One read transaction for all: the WAL's shared lock is taken
        // once, not per text.
        let tx = self.conn.unchecked_transaction()?;
        let out = {
            let mut st = tx.prepare_cached("SELECT bytes FROM blobs WHERE hash = ?1")?;
            hashes
                .iter()
                .map(|h| st.query_row([h], |r| r.get(0)).optional())
                .collect::<rusqlite::Result<Vec<_>>>()?
        };
        tx.commit()?;
        Ok(out)
    }

    fn terms_of(&self, slot: u32) -> Result<Option<DocTerms>, Error> {
        let b: Option<Option<Vec<u8>>> = self
            .conn
            .prepare_cached("SELECT terms FROM doc_terms WHERE slot = ?1")?
            .query_row([slot], |r| r.get(0))
            .optional()?;
        Ok(b.flatten().and_then(|b| DocTerms::decode(&b)))
    }

    fn postings(&self, term: &str) -> Result<Vec<(u32, f32)>, Error> {
        let mut st = self.conn.prepare_cached(
            "SELECT slot, tf FROM postings WHERE term = (SELECT id FROM terms WHERE term = ?1)",
        )?;
        let rows = st.query_map([term], |r| {
            Ok((r.get::<_, u32>(0)?, r.get::<_, f64>(1)? as f32))
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn all_postings(&self, limit: usize) -> Result<Option<AllPostings>, Error> {
        let tx = self.conn.unchecked_transaction()?;
        let head = Self::head_in(&tx)?;
        let names: std::collections::HashMap<i64, String> = {
            let mut st = tx.prepare("SELECT id, term FROM terms")?;
            let rows = st.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut out: Vec<(String, Postings)> = vec![];
        let mut last: Option<i64> = None;
        // The postings of the last term read so far (read whole, then
        // made compact at their exact size).
        let mut pairs: Vec<(u32, f32)> = vec![];
        let finish = |out: &mut Vec<(String, Postings)>, pairs: &mut Vec<(u32, f32)>| {
            if let Some((_, l)) = out.last_mut() {
                *l = Postings::from_pairs(std::mem::take(pairs));
            }
        };
        let mut count = 0usize;
        {
            // The primary key's order: term, then slot.
            let mut st = tx.prepare("SELECT term, slot, tf FROM postings ORDER BY term, slot")?;
            let mut rows = st.query([])?;
            while let Some(r) = rows.next()? {
                count += 1;
                if count > limit {
                    return Ok(None);
                }
                let term: i64 = r.get(0)?;
                if last != Some(term) {
                    finish(&mut out, &mut pairs);
                    let name = names.get(&term).cloned().ok_or_else(|| {
                        Error::Store(format!(
                            "database corruption: postings of unknown term {term}"
                        ))
                    })?;
                    out.push((name, Postings::default()));
                    last = Some(term);
                }
                pairs.push((r.get::<_, u32>(1)?, r.get::<_, f64>(2)? as f32));
            }
        }
        finish(&mut out, &mut pairs);
        tx.commit()?;
        Ok(Some((head, out)))
    }

    fn commit(
        &mut self,
        base: Option<&Head>,
        plan: &CommitPlan,
    ) -> Result<(Head, RevisionInfo), Error> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let head = Self::head_in(&tx)?;
        if head.as_ref() != base {
            return Err(Error::Conflict(
                "database changed: re-read the revision and document hashes".into(),
            ));
        }
        {
            let mut ins =
                tx.prepare_cached("INSERT OR IGNORE INTO blobs(hash, bytes) VALUES (?1, ?2)")?;
            for (h, b) in &plan.blobs {
                ins.execute(params![h, b])?;
            }
        }
        let cache = &self.term_ids;
        let mut fresh = NewTerms::new();
        let mut ops = vec![];
        let task = Task::begin(
            "writing documents",
            Some((plan.deletes.len() + plan.upserts.len()) as u64),
        );
        for slot in &plan.deletes {
            Self::update_postings(&tx, cache, &mut fresh, &mut ops, *slot, None)?;
            tx.prepare_cached("DELETE FROM docs WHERE slot = ?1")?
                .execute([slot])?;
            task.advance(1);
        }
        for d in &plan.upserts {
            let compiled = d.compiled.encode();
            let len = d.terms.as_ref().map_or(0.0, |t| t.len as f64);
            tx.prepare_cached(
                "INSERT OR REPLACE INTO docs(slot, bundle, path, hash, len, compiled) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
            )?
            .execute(params![d.slot, d.bundle, d.path, d.hash, len, compiled])?;
            Self::update_postings(&tx, cache, &mut fresh, &mut ops, d.slot, d.terms.as_ref())?;
            task.advance(1);
        }
        drop(task);
        for (slot, terms) in &plan.reindex {
            tx.prepare_cached("UPDATE docs SET len = ?2 WHERE slot = ?1")?
                .execute(params![slot, terms.len as f64])?;
            Self::update_postings(&tx, cache, &mut fresh, &mut ops, *slot, Some(terms))?;
        }
        Self::write_postings(&tx, ops)?;
        let parent = head.as_ref().map(|h| h.revision.clone());
        let revision = revision_digest(parent.as_deref(), plan);
        let bundles = serde_json::to_string(&plan.bundles).unwrap_or_else(|_| "[]".into());
        tx.prepare_cached(
            "INSERT INTO revisions(revision, parent, snapshot, created, concepts, bundles) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
        )?
        .execute(params![
            revision,
            parent,
            plan.snapshot,
            plan.created,
            plan.concepts as i64,
            bundles
        ])?;
        let seq = tx.last_insert_rowid();
        {
            let mut ins = tx.prepare_cached(
                "INSERT INTO changes(seq, bundle, path, old, new) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for c in &plan.changes {
                ins.execute(params![seq, c.bundle, c.path, c.old, c.new])?;
            }
        }
        tx.commit()?;
        self.term_ids.extend(fresh);
        Ok(plan.committed(seq, revision, parent))
    }

    fn compiler(&self) -> Result<String, Error> {
        let v: Option<String> = self
            .conn
            .query_row("SELECT value FROM meta WHERE key = 'compiler'", [], |r| {
                r.get(0)
            })
            .optional()?;
        Ok(v.unwrap_or_default())
    }

    fn recompile(&mut self, docs: &[NewDoc], last: bool) -> Result<(), Error> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let cache = &self.term_ids;
        let mut fresh = NewTerms::new();
        let mut ops = vec![];
        let task = Task::begin("recompiling documents", Some(docs.len() as u64));
        for d in docs {
            let len = d.terms.as_ref().map_or(0.0, |t| t.len as f64);
            tx.prepare_cached("UPDATE docs SET len = ?2, compiled = ?3 WHERE slot = ?1")?
                .execute(params![d.slot, len, d.compiled.encode()])?;
            Self::update_postings(&tx, cache, &mut fresh, &mut ops, d.slot, d.terms.as_ref())?;
            task.advance(1);
        }
        drop(task);
        Self::write_postings(&tx, ops)?;
        if last {
            tx.execute(
                "INSERT OR REPLACE INTO meta(key, value) VALUES ('compiler', ?1)",
                [COMPILER_VERSION],
            )?;
        }
        tx.commit()?;
        self.term_ids.extend(fresh);
        Ok(())
    }

    fn history(
        &self,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Option<(Vec<RevisionInfo>, bool)>, Error> {
        let tx = self.conn.unchecked_transaction()?;
        let upper = match before {
            Some(b) => match Self::seq_of(&tx, b)? {
                Some(s) => s,
                None => return Ok(None),
            },
            None => i64::MAX,
        };
        let mut v: Vec<RevisionInfo> = {
            let mut st = tx.prepare_cached(
                "SELECT revision, parent, snapshot, created, concepts, bundles FROM revisions WHERE seq < ?1 ORDER BY seq DESC LIMIT ?2",
            )?;
            let rows = st.query_map(params![upper, (limit + 1) as i64], info_row)?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        tx.commit()?;
        let more = v.len() > limit;
        v.truncate(limit);
        Ok(Some((v, more)))
    }

    fn state_at(&self, revision: &str) -> Result<Option<State>, Error> {
        let tx = self.conn.unchecked_transaction()?;
        let Some(seq) = Self::seq_of(&tx, revision)? else {
            return Ok(None);
        };
        let mut state = Self::current_state(&tx)?;
        Self::undo_after(&tx, &mut state, seq)?;
        tx.commit()?;
        Ok(Some(state))
    }

    fn gc(&mut self, keep: usize) -> Result<(usize, usize), Error> {
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let boundary: Option<i64> = tx
            .query_row(
                "SELECT seq FROM revisions ORDER BY seq DESC LIMIT 1 OFFSET ?1",
                [(keep.max(1) - 1) as i64],
                |r| r.get(0),
            )
            .optional()?;
        let Some(boundary) = boundary else {
            tx.commit()?;
            return Ok((0, 0));
        };
        let revisions = tx.execute("DELETE FROM revisions WHERE seq < ?1", [boundary])?;
        tx.execute("DELETE FROM changes WHERE seq <= ?1", [boundary])?;
        let contents = tx.execute(
            "DELETE FROM blobs WHERE hash NOT IN (SELECT hash FROM docs)
               AND hash NOT IN (SELECT old FROM changes WHERE old IS NOT NULL)
               AND hash NOT IN (SELECT new FROM changes WHERE new IS NOT NULL)",
            [],
        )?;
        tx.commit()?;
        let _ = self
            .conn
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()));
        Ok((revisions, contents))
    }

    fn verify(&self) -> Result<Verified, Error> {
        let tx = self.conn.unchecked_transaction()?;
        let mut out = Verified::default();
        let revs: Vec<(i64, RevisionInfo)> = {
            let mut st = tx.prepare(
                "SELECT revision, parent, snapshot, created, concepts, bundles, seq FROM revisions ORDER BY seq DESC",
            )?;
            let rows = st.query_map([], |r| Ok((r.get::<_, i64>(6)?, info_row(r)?)))?;
            rows.collect::<rusqlite::Result<_>>()?
        };
        let mut state = Self::current_state(&tx)?;
        out.documents = state.len();
        // The head must describe the current documents.
        let mut checked: std::collections::HashSet<String> = Default::default();
        let task = Task::begin("verifying contents", None);
        let mut check_blob = |hash: &str, out: &mut Verified| -> rusqlite::Result<()> {
            if !checked.insert(hash.to_string()) {
                return Ok(());
            }
            task.advance(1);
            let bytes: Option<Vec<u8>> = tx
                .prepare_cached("SELECT bytes FROM blobs WHERE hash = ?1")?
                .query_row([hash], |r| r.get(0))
                .optional()?;
            out.problems.extend(content_problem(hash, bytes.as_deref()));
            Ok(())
        };
        for (i, (seq, info)) in revs.iter().enumerate() {
            if i > 0 {
                // Step back from the newer revision to this one.
                Self::undo_between(&tx, &mut state, *seq, revs[i - 1].0)?;
            }
            for h in state.values() {
                check_blob(h, &mut out)?;
            }
            let newer = i.checked_sub(1).map(|j| &revs[j].1);
            check_revision(&mut out, newer, *seq, info, &state);
        }
        // Every current row reads back.
        let bad: Vec<(String, String)> = {
            let mut st = tx.prepare("SELECT bundle, path, compiled FROM docs")?;
            let rows = st.query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?;
            let mut bad = vec![];
            for row in rows {
                let (b, p, c) = row?;
                if Compiled::decode(&c).is_none() {
                    bad.push((b, p));
                }
            }
            bad
        };
        for (b, p) in bad {
            out.problems
                .push(format!("the compiled row of {b}/{p} is unreadable"));
        }
        out.contents = checked.len();
        tx.commit()?;
        out.ok = out.problems.is_empty();
        Ok(out)
    }
}
