//! The PostgreSQL store: every tenant in one schema, each row keyed by its
//! tenant, behind the same [`Storage`] trait as the SQLite store and with
//! the same meaning: exact bytes content-addressed by sha256, the current
//! documents with their compiled rows and search postings, and every
//! revision with the changes it made.
//!
//! One schema keyed by tenant rather than a schema per tenant: migrations
//! run once for all tenants, a tenant is one row (created by its first
//! write), and thousands of tenants do not mean thousands of catalogs.
//! Migrations are versioned in `okfit_migrations` and run at open under an
//! advisory lock, so replicas starting together apply each once.
//!
//! A commit advances the tenant's head with `UPDATE … WHERE head = $base`
//! in the same transaction that writes its rows (no row updated: another
//! commit won), and announces `id:seq:revision` on the `okfit_commits`
//! channel. A long-lived process follows those announcements
//! ([`follow_commits`]) so its reads learn of other replicas' commits
//! without asking for the head each time.

mod listen;
mod pending;
mod pool;
mod schema;
mod tls;
mod write;

pub use pool::{connect, said, shown, PoolUse};
pub use schema::migrate;

use crate::error::Error;
use crate::progress::Task;
use crate::sqlite::{
    busy, check_revision, content_problem, revision_digest, AllPostings, Changed, CommitLock,
    CommitPlan, DocRow, Head, NewDoc, RevisionInfo, State, Storage, Verified, COMMIT_LOCK_WAIT,
    COMPILER_VERSION,
};
use okfit_core::kb::compile::Compiled;
use okfit_core::kb::postings::Postings;
use okfit_core::kb::search::DocTerms;
use pool::{pg_err, Conn, Pool};
use postgres::{Client, GenericClient, Row, Transaction};
use std::collections::HashMap;
use std::sync::Arc;

/// The channel commits are announced on, with payload `tenant:seq`.
pub const CHANNEL: &str = "okfit_commits";

/// Follows the commits announced on the database of `url` for the rest of
/// the process (once per database): reads then learn other processes'
/// heads from the announcements instead of asking each time. For daemons
/// and servers; a one-shot command has no use for it.
pub fn follow_commits(url: &str) {
    Pool::of(url).follow();
}

/// Up to `limit` tenants of the database at `url`, most recently committed
/// to first.
pub fn recent_tenants(url: &str, limit: usize) -> Result<Vec<String>, Error> {
    let pool = Pool::of(url);
    let rows = pool
        .lend()?
        .query(
            "SELECT t.name FROM okfit_tenants t
               LEFT JOIN okfit_revisions r ON r.tenant = t.id AND r.seq = t.head
              ORDER BY r.created DESC NULLS LAST, t.id DESC LIMIT $1",
            &[&(limit as i64)],
        )
        .map_err(pg_err)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Whether the database at `url` answers a query now.
pub fn ping(url: &str) -> Result<(), Error> {
    let pool = Pool::of(url);
    pool.lend()?.simple_query("SELECT 1").map_err(pg_err)?;
    Ok(())
}

/// What each database's pool in this process holds, by database.
pub fn pool_use() -> Vec<(String, PoolUse)> {
    Pool::usage()
}

/// One tenant of the PostgreSQL store. It holds no connection of its own:
/// each call borrows one from the database's pool.
pub struct PgStore {
    pool: Arc<Pool>,
    tenant: String,
    id: i64,
    /// Term ids already in the database (ids are never reused or removed).
    term_ids: HashMap<String, i64>,
}

fn head_in(c: &mut impl GenericClient, id: i64) -> Result<Option<Head>, Error> {
    let row = c
        .query_opt(
            "SELECT seq, revision FROM okfit_revisions WHERE tenant = $1 ORDER BY seq DESC LIMIT 1",
            &[&id],
        )
        .map_err(pg_err)?;
    Ok(row.map(|r| Head {
        seq: r.get(0),
        revision: r.get(1),
    }))
}

fn doc_row(tenant: &str, r: &Row) -> Result<DocRow, Error> {
    let (bundle, path): (String, String) = (r.get(1), r.get(2));
    let text: String = r.get(4);
    let compiled = Compiled::decode(&text).ok_or_else(|| {
        Error::Store(format!(
            "postgresql tenant {tenant}: database corruption: unreadable compiled row for {bundle}/{path}"
        ))
    })?;
    Ok(DocRow {
        slot: r.get::<_, i32>(0) as u32,
        bundle,
        path,
        hash: r.get(3),
        compiled,
        len: r.get::<_, f64>(5) as f32,
    })
}

fn info_row(r: &Row) -> RevisionInfo {
    let bundles: String = r.get(5);
    RevisionInfo {
        revision: r.get(0),
        parent: r.get(1),
        snapshot: r.get(2),
        created: r.get(3),
        concepts: r.get::<_, i64>(4) as usize,
        bundles: serde_json::from_str(&bundles).unwrap_or_default(),
    }
}

const DOC_COLUMNS: &str = "slot, bundle, path, hash, compiled, len";

/// Document rows a load decodes at a time.
const LOAD_BATCH: usize = 1024;

impl PgStore {
    /// Opens `tenant` over `url`, running migrations first. With `create`,
    /// a missing tenant is created; without, it is an error naming it.
    pub fn open(url: &str, tenant: &str, create: bool) -> Result<PgStore, Error> {
        let pool = Pool::of(url);
        let mut client = pool.lend()?;
        let find = |c: &mut Client| -> Result<Option<i64>, Error> {
            Ok(
                c.query_opt("SELECT id FROM okfit_tenants WHERE name = $1", &[&tenant])
                    .map_err(pg_err)?
                    .map(|r| r.get(0)),
            )
        };
        let id = match find(&mut client)? {
            Some(id) => id,
            None if create => {
                client
                    .execute(
                        "INSERT INTO okfit_tenants(name, compiler) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                        &[&tenant, &COMPILER_VERSION],
                    )
                    .map_err(pg_err)?;
                find(&mut client)?.ok_or_else(|| {
                    Error::Store(format!("postgresql: cannot create tenant {tenant}"))
                })?
            }
            None => {
                return Err(Error::NoTenant(format!(
                    "no tenant \"{tenant}\" in {}: write a concept or run okfit put to create it",
                    shown(url)
                )))
            }
        };
        drop(client);
        Ok(PgStore {
            pool,
            tenant: tenant.to_string(),
            id,
            term_ids: HashMap::new(),
        })
    }

    fn client(&self) -> Result<Conn, Error> {
        self.pool.lend()
    }

    fn current_state(c: &mut impl GenericClient, id: i64) -> Result<State, Error> {
        Ok(c.query(
            "SELECT bundle, path, hash FROM okfit_docs WHERE tenant = $1",
            &[&id],
        )
        .map_err(pg_err)?
        .iter()
        .map(|r| ((r.get(0), r.get(1)), r.get(2)))
        .collect())
    }

    /// Undoes, newest first, the changes of the revisions after `from` up
    /// to and including `to`.
    fn undo_between(
        c: &mut impl GenericClient,
        id: i64,
        state: &mut State,
        from: i64,
        to: i64,
    ) -> Result<(), Error> {
        let rows = c
            .query(
                "SELECT bundle, path, old FROM okfit_changes
                  WHERE tenant = $1 AND seq > $2 AND seq <= $3 ORDER BY seq DESC",
                &[&id, &from, &to],
            )
            .map_err(pg_err)?;
        for r in rows {
            let key = (r.get(0), r.get(1));
            match r.get::<_, Option<String>>(2) {
                Some(h) => {
                    state.insert(key, h);
                }
                None => {
                    state.remove(&key);
                }
            }
        }
        Ok(())
    }

    fn seq_of(c: &mut impl GenericClient, id: i64, revision: &str) -> Result<Option<i64>, Error> {
        Ok(c.query_opt(
            "SELECT seq FROM okfit_revisions WHERE tenant = $1 AND revision = $2",
            &[&id, &revision],
        )
        .map_err(pg_err)?
        .map(|r| r.get(0)))
    }

    /// Runs `f` in one read-only snapshot, with the tenant's head as of it.
    fn in_snapshot<R>(
        &self,
        f: impl FnOnce(&mut Transaction<'_>, Option<Head>) -> Result<R, Error>,
    ) -> Result<R, Error> {
        let mut c = self.client()?;
        let mut tx = Self::snapshot(&mut c)?;
        let head = head_in(&mut tx, self.id)?;
        let r = f(&mut tx, head)?;
        tx.commit().map_err(pg_err)?;
        Ok(r)
    }

    /// The tenant's pending slots in slot order, each with its stored
    /// terms (`None`: the slot is empty), as `c` sees them.
    fn pending_in(
        &self,
        c: &mut impl GenericClient,
    ) -> Result<Vec<(u32, Option<DocTerms>)>, Error> {
        let rows = c
            .query(
                "SELECT p.slot, d.terms FROM okfit_pending p
                   LEFT JOIN okfit_doc_terms d ON d.tenant = p.tenant AND d.slot = p.slot
                  WHERE p.tenant = $1 ORDER BY p.slot",
                &[&self.id],
            )
            .map_err(pg_err)?;
        rows.iter()
            .map(|r| {
                let slot = r.get::<_, i32>(0) as u32;
                let stored: Option<&[u8]> = r.get(1);
                Ok((
                    slot,
                    stored.map(|b| self.decode_terms(slot, b)).transpose()?,
                ))
            })
            .collect()
    }

    /// The stored terms of `slot`, decoded.
    fn decode_terms(&self, slot: u32, bytes: &[u8]) -> Result<DocTerms, Error> {
        DocTerms::decode(bytes).ok_or_else(|| {
            Error::Store(format!(
                "postgresql tenant {}: database corruption: unreadable terms of slot {slot}",
                self.tenant
            ))
        })
    }

    /// A read-only transaction that sees one snapshot.
    fn snapshot<'a>(c: &'a mut Client) -> Result<Transaction<'a>, Error> {
        c.build_transaction()
            .isolation_level(postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .map_err(pg_err)
    }
}

/// Documents a commit changes from which it vacuums the postings after
/// landing (an import, a large transact).
const VACUUM_AFTER: usize = 1000;

/// The first key of okfit's commit locks (`pg_advisory_lock(int, int)`;
/// the second is the tenant's id): "okfc".
const COMMIT_LOCKS: i32 = 0x6f6b_6663;

/// A session-level advisory lock on one tenant's commits, held by a pooled
/// connection; released (or the connection closed) when dropped.
struct CommitHold {
    conn: Option<Conn>,
    key: i32,
}

impl Drop for CommitHold {
    fn drop(&mut self) {
        let Some(mut conn) = self.conn.take() else {
            return;
        };
        let sql = format!("SELECT pg_advisory_unlock({COMMIT_LOCKS}, {})", self.key);
        if conn.simple_query(&sql).is_err() {
            // Closing the session releases the lock for certain.
            conn.discard();
        }
    }
}

impl Storage for PgStore {
    /// A session-level advisory lock on the tenant, taken on a pooled
    /// connection; waiting for it gives up after [`COMMIT_LOCK_WAIT`]. A
    /// process that dies loses its session, and the lock with it.
    fn lock_commits(&self) -> Result<CommitLock, Error> {
        let mut conn = self.client()?;
        // Ids wrap into the lock's 32-bit key: two tenants sharing a key
        // only take turns.
        let key = self.id as i32;
        let sql = format!(
            "SET lock_timeout = '{}s'; SELECT pg_advisory_lock({COMMIT_LOCKS}, {key}); RESET lock_timeout",
            COMMIT_LOCK_WAIT.as_secs()
        );
        // The three run as one implicit transaction: a timeout rolls the
        // SET back too.
        match conn.simple_query(&sql) {
            Ok(_) => Ok(CommitLock::new(CommitHold {
                conn: Some(conn),
                key,
            })),
            Err(e) if e.code() == Some(&postgres::error::SqlState::LOCK_NOT_AVAILABLE) => {
                Err(busy(&self.tenant))
            }
            Err(e) => Err(pg_err(e)),
        }
    }

    fn head(&self) -> Result<Option<Head>, Error> {
        if let Some(head) = self.pool.heads.known(self.id) {
            return Ok(head);
        }
        self.head_now()
    }

    fn head_now(&self) -> Result<Option<Head>, Error> {
        let heads = &self.pool.heads;
        let epoch = heads.epoch();
        let head = head_in(&mut *self.client()?, self.id)?;
        heads.learn(epoch, self.id, head.clone());
        Ok(head)
    }

    /// The rows stream in and are decoded [`LOAD_BATCH`] at a time, so a
    /// large tenant's load never holds all of its rows twice (as sent and
    /// as decoded).
    fn load(&self) -> Result<(Option<Head>, Vec<DocRow>), Error> {
        use postgres::fallible_iterator::FallibleIterator;
        use rayon::prelude::*;
        self.in_snapshot(|tx, head| {
            let sql = format!("SELECT {DOC_COLUMNS} FROM okfit_docs WHERE tenant = $1");
            let id: &(dyn postgres::types::ToSql + Sync) = &self.id;
            let mut rows = tx.query_raw(&sql, [id]).map_err(pg_err)?;
            let mut decoded = vec![];
            let mut batch = Vec::with_capacity(LOAD_BATCH);
            loop {
                let next = rows.next().map_err(pg_err)?;
                let done = next.is_none();
                batch.extend(next);
                if batch.len() == LOAD_BATCH || done {
                    let run = batch
                        .par_iter()
                        .map(|r| doc_row(&self.tenant, r))
                        .collect::<Result<Vec<_>, _>>()?;
                    decoded.extend(run);
                    batch.clear();
                }
                if done {
                    return Ok((head, decoded));
                }
            }
        })
    }

    fn changed_since(&self, seq: i64) -> Result<Changed, Error> {
        let (head, keys, rows) = self.in_snapshot(|tx, head| {
            let keys: Vec<(String, String)> = tx
                .query(
                    "SELECT DISTINCT bundle, path FROM okfit_changes WHERE tenant = $1 AND seq > $2",
                    &[&self.id, &seq],
                )
                .map_err(pg_err)?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            let (bundles, paths): (Vec<&str>, Vec<&str>) =
                keys.iter().map(|(b, p)| (b.as_str(), p.as_str())).unzip();
            let sql = format!(
                "SELECT {DOC_COLUMNS} FROM okfit_docs d
                   JOIN UNNEST($2::TEXT[], $3::TEXT[]) AS k(b, p) ON d.bundle = k.b AND d.path = k.p
                  WHERE d.tenant = $1"
            );
            let rows = tx
                .query(&sql, &[&self.id, &bundles, &paths])
                .map_err(pg_err)?;
            Ok((head, keys, rows))
        })?;
        let rows = rows
            .iter()
            .map(|r| doc_row(&self.tenant, r))
            .collect::<Result<Vec<_>, _>>()?;
        Ok((head, keys, rows))
    }

    fn blob(&self, hash: &str) -> Result<Option<Vec<u8>>, Error> {
        Ok(self.blobs(&[hash])?.pop().flatten())
    }

    fn blobs(&self, hashes: &[&str]) -> Result<Vec<Option<Vec<u8>>>, Error> {
        if hashes.is_empty() {
            return Ok(vec![]);
        }
        let rows = self.client()?.query_prepared(
            "SELECT hash, bytes FROM okfit_blobs WHERE tenant = $1 AND hash = ANY($2)",
            &[&self.id, &hashes],
        )?;
        let mut found: HashMap<&str, &[u8]> = HashMap::with_capacity(rows.len());
        for r in &rows {
            found.insert(r.try_get(0).map_err(pg_err)?, r.try_get(1).map_err(pg_err)?);
        }
        Ok(hashes
            .iter()
            .map(|h| found.get(h).map(|b| b.to_vec()))
            .collect())
    }

    fn terms_of(&self, slot: u32) -> Result<Option<DocTerms>, Error> {
        Ok(self.terms_of_many(&[slot])?.pop().flatten())
    }

    fn terms_of_many(&self, slots: &[u32]) -> Result<Vec<Option<DocTerms>>, Error> {
        if slots.is_empty() {
            return Ok(vec![]);
        }
        let wanted: Vec<i32> = slots.iter().map(|&s| s as i32).collect();
        let rows = self.client()?.query_prepared(
            "SELECT slot, terms FROM okfit_doc_terms WHERE tenant = $1 AND slot = ANY($2)",
            &[&self.id, &wanted],
        )?;
        let mut found: HashMap<i32, DocTerms> = HashMap::with_capacity(rows.len());
        for r in &rows {
            let slot: i32 = r.try_get(0).map_err(pg_err)?;
            if let Some(t) = DocTerms::decode(r.try_get::<_, &[u8]>(1).map_err(pg_err)?) {
                found.insert(slot, t);
            }
        }
        Ok(wanted.iter().map(|s| found.remove(s)).collect())
    }

    fn postings(&self, term: &str) -> Result<Vec<(u32, f32)>, Error> {
        Ok(self
            .postings_of(&[term.to_string()])?
            .pop()
            .unwrap_or_default())
    }

    fn postings_of(&self, terms: &[String]) -> Result<Vec<Vec<(u32, f32)>>, Error> {
        if terms.is_empty() {
            return Ok(vec![]);
        }
        // Per term, its id first, then the (tenant, term) range of the
        // primary key, whatever the planner's statistics say; the postings
        // come back as two arrays in one row (a common word's tens of
        // thousands of rows would cost far more to send and decode one by
        // one), every term in one round trip.
        // The pending slots come in the same statement (one snapshot), each
        // as the negative row -1 - slot with its stored terms.
        let rows = self.client()?.query_prepared(
            "SELECT q.i, x.slots, x.tfs, NULL::BYTEA
               FROM unnest($2::text[]) WITH ORDINALITY AS q(term, i)
             CROSS JOIN LATERAL (
               SELECT coalesce(array_agg(slot), '{}') AS slots, coalesce(array_agg(tf), '{}') AS tfs
                 FROM okfit_postings
                WHERE tenant = $1 AND term = (SELECT id FROM okfit_terms WHERE term = q.term)) x
             UNION ALL
             SELECT -1 - p.slot::BIGINT, NULL::INT[], NULL::REAL[], d.terms FROM okfit_pending p
               LEFT JOIN okfit_doc_terms d ON d.tenant = p.tenant AND d.slot = p.slot
              WHERE p.tenant = $1",
            &[&self.id, &terms],
        )?;
        let mut out = vec![vec![]; terms.len()];
        let mut pending = vec![];
        for r in &rows {
            let i: i64 = r.try_get(0).map_err(pg_err)?;
            if i < 0 {
                let slot = (-1 - i) as u32;
                let stored: Option<&[u8]> = r.try_get(3).map_err(pg_err)?;
                pending.push((
                    slot,
                    stored.map(|b| self.decode_terms(slot, b)).transpose()?,
                ));
                continue;
            }
            let slots: Vec<i32> = r.try_get(1).map_err(pg_err)?;
            let tfs: Vec<f32> = r.try_get(2).map_err(pg_err)?;
            if let Some(list) = usize::try_from(i - 1).ok().and_then(|i| out.get_mut(i)) {
                *list = slots.into_iter().map(|s| s as u32).zip(tfs).collect();
            }
        }
        pending.sort_unstable_by_key(|(s, _)| *s);
        for (list, term) in out.iter_mut().zip(terms) {
            pending::patch(list, term, &pending);
        }
        Ok(out)
    }

    fn all_postings(&self, limit: usize) -> Result<Option<AllPostings>, Error> {
        let found = self.in_snapshot(|tx, head| {
            use postgres::fallible_iterator::FallibleIterator;
            let id: &(dyn postgres::types::ToSql + Sync) = &self.id;
            let mut lists: Vec<(i64, Postings)> = vec![];
            let mut count = 0usize;
            // Per term, its postings as two arrays in one row (as a
            // search's terms are read), in the primary key's order; the
            // index puts a list in slot order should it not be. JIT
            // compiling the aggregate costs more than it saves.
            tx.batch_execute("SET LOCAL jit = off").map_err(pg_err)?;
            let pending = self.pending_in(tx)?;
            // The ids of the pending slots' terms, and which of them the
            // postings rows list (the others get lists of their own).
            let mut pending_terms: HashMap<i64, (String, bool)> = HashMap::new();
            if !pending.is_empty() {
                let names: Vec<&str> = pending
                    .iter()
                    .filter_map(|(_, t)| t.as_ref())
                    .flat_map(|t| t.terms.iter().map(|(w, _)| w.as_str()))
                    .collect::<std::collections::BTreeSet<_>>()
                    .into_iter()
                    .collect();
                for r in tx
                    .query("SELECT id, term FROM okfit_terms WHERE term = ANY($1)", &[&names])
                    .map_err(pg_err)?
                {
                    pending_terms.insert(r.get(0), (r.get(1), false));
                }
            }
            let mut rows = tx
                .query_raw(
                    "SELECT term, array_agg(slot), array_agg(tf) FROM okfit_postings
                      WHERE tenant = $1 GROUP BY term",
                    [id],
                )
                .map_err(pg_err)?;
            while let Some(r) = rows.next().map_err(pg_err)? {
                let slots: Vec<i32> = r.try_get(1).map_err(pg_err)?;
                let tfs: Vec<f32> = r.try_get(2).map_err(pg_err)?;
                let term: i64 = r.try_get(0).map_err(pg_err)?;
                let mut pairs: Vec<(u32, f32)> =
                    slots.into_iter().map(|s| s as u32).zip(tfs).collect();
                if !pending.is_empty() {
                    let name = pending_terms.get_mut(&term).map(|(n, seen)| {
                        *seen = true;
                        n.as_str()
                    });
                    pending::patch(&mut pairs, name.unwrap_or(""), &pending);
                }
                count += pairs.len();
                if count > limit {
                    return Ok(None);
                }
                if !pairs.is_empty() {
                    lists.push((term, Postings::from_pairs(pairs)));
                }
            }
            drop(rows);
            for (term, (name, seen)) in &pending_terms {
                if !seen {
                    let mut pairs = vec![];
                    pending::patch(&mut pairs, name, &pending);
                    count += pairs.len();
                    lists.push((*term, Postings::from_pairs(pairs)));
                }
            }
            if count > limit {
                return Ok(None);
            }
            let ids: Vec<i64> = lists.iter().map(|(t, _)| *t).collect();
            let names: HashMap<i64, String> = tx
                .query("SELECT id, term FROM okfit_terms WHERE id = ANY($1)", &[&ids])
                .map_err(pg_err)?
                .iter()
                .map(|r| (r.get(0), r.get(1)))
                .collect();
            let named = lists
                .into_iter()
                .map(|(id, list)| {
                    let name = names.get(&id).cloned().ok_or_else(|| {
                        Error::Store(format!(
                            "postgresql tenant {}: database corruption: postings of unknown term {id}",
                            self.tenant
                        ))
                    })?;
                    Ok((name, list))
                })
                .collect::<Result<Vec<_>, Error>>()?;
            Ok(Some((head, named)))
        })?;
        Ok(found)
    }

    fn commit(
        &mut self,
        base: Option<&Head>,
        plan: &CommitPlan,
    ) -> Result<(Head, RevisionInfo), Error> {
        let id = self.id;
        let epoch = self.pool.heads.epoch();
        let mut guard = self.client()?;
        let (client, prepared) = guard.parts();
        let mut tx = client.transaction().map_err(pg_err)?;
        // The head moves first: a concurrent commit on the same base waits
        // for this row, then finds it moved and updates nothing.
        let base_seq = base.map_or(0, |h| h.seq);
        let moved = tx
            .query_opt(
                "UPDATE okfit_tenants SET head = head + 1 WHERE id = $1 AND head = $2 RETURNING head",
                &[&id, &base_seq],
            )
            .map_err(pg_err)?;
        let head = head_in(&mut tx, id)?;
        let Some(moved) = moved.filter(|_| head.as_ref() == base) else {
            return Err(Error::Conflict(
                "database changed: re-read the revision and document hashes".into(),
            ));
        };
        let seq: i64 = moved.get(0);
        let mut terms = write::Terms::new(&self.term_ids);
        let mut w = write::Writing::new(&mut tx, prepared, id);
        write::blobs(&mut w, plan)?;
        write::docs(&mut w, plan)?;
        write::postings(&mut w, &mut terms, plan)?;
        let fresh = terms.fresh;
        let parent = head.as_ref().map(|h| h.revision.clone());
        let revision = revision_digest(parent.as_deref(), plan);
        let bundles = serde_json::to_string(&plan.bundles).unwrap_or_else(|_| "[]".into());
        w.execute(
            "INSERT INTO okfit_revisions(tenant, seq, revision, parent, snapshot, created, concepts, bundles)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            &[
                &id,
                &seq,
                &revision,
                &parent,
                &plan.snapshot,
                &plan.created,
                &(plan.concepts as i64),
                &bundles,
            ],
        )?;
        write::changes(&mut w, seq, plan)?;
        let pending = w.pending;
        let new_head = Head {
            seq,
            revision: revision.clone(),
        };
        let payload = listen::payload(id, &new_head);
        w.execute("SELECT pg_notify($1, $2)", &[&CHANNEL, &payload])?;
        tx.commit().map_err(pg_err)?;
        self.pool.heads.learn(epoch, id, Some(new_head));
        self.term_ids.extend(fresh);
        if pending >= pending::FOLD_AT {
            pending::fold_later(&self.pool, id);
        }
        if plan.upserts.len() + plan.deletes.len() >= VACUUM_AFTER {
            // Index-only scans of the postings need their pages marked
            // all-visible, which autovacuum would do only a minute or more
            // later; until then every posting read visits its table page.
            // Best effort: the commit has landed either way.
            let _ = guard.batch_execute("VACUUM (ANALYZE) okfit_postings, okfit_docs");
        }
        drop(guard);
        Ok(plan.committed(seq, revision, parent))
    }

    fn compiler(&self) -> Result<String, Error> {
        let row = self
            .client()?
            .query_one(
                "SELECT compiler FROM okfit_tenants WHERE id = $1",
                &[&self.id],
            )
            .map_err(pg_err)?;
        Ok(row.get(0))
    }

    fn recompile(&mut self, docs: &[NewDoc], last: bool) -> Result<(), Error> {
        let id = self.id;
        let mut guard = self.client()?;
        let (client, prepared) = guard.parts();
        let mut tx = client.transaction().map_err(pg_err)?;
        let plan = CommitPlan {
            upserts: docs.to_vec(),
            ..CommitPlan::default()
        };
        let mut terms = write::Terms::new(&self.term_ids);
        let mut w = write::Writing::new(&mut tx, prepared, id);
        write::docs(&mut w, &plan)?;
        write::postings(&mut w, &mut terms, &plan)?;
        if last {
            w.execute(
                "UPDATE okfit_tenants SET compiler = $2 WHERE id = $1",
                &[&id, &COMPILER_VERSION],
            )?;
        }
        let fresh = terms.fresh;
        tx.commit().map_err(pg_err)?;
        self.term_ids.extend(fresh);
        if last {
            // Best effort, as after a large commit.
            let _ = guard.batch_execute("VACUUM (ANALYZE) okfit_postings, okfit_docs");
        }
        Ok(())
    }

    fn state_at(&self, revision: &str) -> Result<Option<State>, Error> {
        let mut c = self.client()?;
        let mut tx = Self::snapshot(&mut c)?;
        let Some(seq) = Self::seq_of(&mut tx, self.id, revision)? else {
            return Ok(None);
        };
        let mut state = Self::current_state(&mut tx, self.id)?;
        Self::undo_between(&mut tx, self.id, &mut state, seq, i64::MAX)?;
        tx.commit().map_err(pg_err)?;
        Ok(Some(state))
    }

    fn history(
        &self,
        before: Option<&str>,
        limit: usize,
    ) -> Result<Option<(Vec<RevisionInfo>, bool)>, Error> {
        let mut c = self.client()?;
        let mut tx = Self::snapshot(&mut c)?;
        let upper = match before {
            Some(b) => match Self::seq_of(&mut tx, self.id, b)? {
                Some(s) => s,
                None => return Ok(None),
            },
            None => i64::MAX,
        };
        let mut v: Vec<RevisionInfo> = tx
            .query(
                "SELECT revision, parent, snapshot, created, concepts, bundles FROM okfit_revisions
                  WHERE tenant = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3",
                &[&self.id, &upper, &((limit + 1) as i64)],
            )
            .map_err(pg_err)?
            .iter()
            .map(info_row)
            .collect();
        tx.commit().map_err(pg_err)?;
        let more = v.len() > limit;
        v.truncate(limit);
        Ok(Some((v, more)))
    }

    /// Folds every pending slot into the postings first.
    fn gc(&mut self, keep: usize) -> Result<(usize, usize), Error> {
        let id = self.id;
        pending::fold(&self.pool, id)?;
        let mut c = self.client()?;
        let mut tx = c.transaction().map_err(pg_err)?;
        // Commits wait while old revisions go.
        tx.execute(
            "SELECT 1 FROM okfit_tenants WHERE id = $1 FOR UPDATE",
            &[&id],
        )
        .map_err(pg_err)?;
        let boundary: Option<i64> = tx
            .query_opt(
                "SELECT seq FROM okfit_revisions WHERE tenant = $1 ORDER BY seq DESC LIMIT 1 OFFSET $2",
                &[&id, &((keep.max(1) - 1) as i64)],
            )
            .map_err(pg_err)?
            .map(|r| r.get(0));
        let Some(boundary) = boundary else {
            tx.commit().map_err(pg_err)?;
            return Ok((0, 0));
        };
        let revisions = tx
            .execute(
                "DELETE FROM okfit_revisions WHERE tenant = $1 AND seq < $2",
                &[&id, &boundary],
            )
            .map_err(pg_err)?;
        tx.execute(
            "DELETE FROM okfit_changes WHERE tenant = $1 AND seq <= $2",
            &[&id, &boundary],
        )
        .map_err(pg_err)?;
        let contents = tx
            .execute(
                "DELETE FROM okfit_blobs b WHERE b.tenant = $1
                   AND NOT EXISTS (SELECT 1 FROM okfit_docs d WHERE d.tenant = $1 AND d.hash = b.hash)
                   AND NOT EXISTS (SELECT 1 FROM okfit_changes c WHERE c.tenant = $1
                                    AND (c.old = b.hash OR c.new = b.hash))",
                &[&id],
            )
            .map_err(pg_err)?;
        tx.commit().map_err(pg_err)?;
        Ok((revisions as usize, contents as usize))
    }

    fn verify(&self) -> Result<Verified, Error> {
        let id = self.id;
        let mut c = self.client()?;
        let mut tx = Self::snapshot(&mut c)?;
        let mut out = Verified::default();
        let revs: Vec<(i64, RevisionInfo)> = tx
            .query(
                "SELECT revision, parent, snapshot, created, concepts, bundles, seq
                   FROM okfit_revisions WHERE tenant = $1 ORDER BY seq DESC",
                &[&id],
            )
            .map_err(pg_err)?
            .iter()
            .map(|r| (r.get::<_, i64>(6), info_row(r)))
            .collect();
        let mut state = Self::current_state(&mut tx, id)?;
        out.documents = state.len();
        let mut checked: std::collections::HashSet<String> = Default::default();
        let task = Task::begin("verifying contents", None);
        for (i, (seq, info)) in revs.iter().enumerate() {
            if i > 0 {
                Self::undo_between(&mut tx, id, &mut state, *seq, revs[i - 1].0)?;
            }
            let unchecked: Vec<&str> = state
                .values()
                .filter(|h| !checked.contains(*h))
                .map(String::as_str)
                .collect();
            // A thousand contents per query: a large tenant's bytes are
            // never all in memory at once.
            for run in unchecked.chunks(1000) {
                let found: HashMap<String, Vec<u8>> = tx
                    .query(
                        "SELECT hash, bytes FROM okfit_blobs WHERE tenant = $1 AND hash = ANY($2)",
                        &[&id, &run],
                    )
                    .map_err(pg_err)?
                    .iter()
                    .map(|r| (r.get(0), r.get(1)))
                    .collect();
                for hash in run {
                    out.problems
                        .extend(content_problem(hash, found.get(*hash).map(Vec::as_slice)));
                    checked.insert(hash.to_string());
                }
                task.advance(run.len() as u64);
            }
            let newer = i.checked_sub(1).map(|j| &revs[j].1);
            check_revision(&mut out, newer, *seq, info, &state);
        }
        for r in tx
            .query(
                "SELECT bundle, path, compiled FROM okfit_docs WHERE tenant = $1",
                &[&id],
            )
            .map_err(pg_err)?
        {
            if Compiled::decode(r.get::<_, &str>(2)).is_none() {
                let (b, p): (String, String) = (r.get(0), r.get(1));
                out.problems
                    .push(format!("the compiled row of {b}/{p} is unreadable"));
            }
        }
        out.contents = checked.len();
        tx.commit().map_err(pg_err)?;
        out.ok = out.problems.is_empty();
        Ok(out)
    }
}
