//! A commit's rows in a few statements whatever its size: each kind of row
//! goes in as arrays (`UNNEST`), so a commit of one document and one of
//! thousands make the same dozen round trips, and large commits are cut
//! into chunks that keep every statement's parameters far below the
//! protocol's limits.

use super::pending;
use super::pool::{pg_err, Prepared};
use crate::error::Error;
use crate::progress::Task;
use crate::sqlite::{term_changes, CommitPlan};
use okfit_core::kb::search::DocTerms;
use postgres::types::ToSql;
use postgres::{Row, Transaction};
use std::collections::{BTreeMap, HashMap};

/// Term ids learnt during a commit, kept once it commits.
pub(super) type NewTerms = HashMap<String, i64>;

/// A commit's transaction with its connection's prepared statements.
pub(super) struct Writing<'a, 't> {
    pub tx: &'a mut Transaction<'t>,
    pub prepared: &'a mut Prepared,
    /// The tenant written.
    pub id: i64,
    /// About how many of the tenant's slots are pending once this commit
    /// lands (see [`pending::room`]).
    pub pending: i64,
}

impl<'a, 't> Writing<'a, 't> {
    /// A commit of tenant `id` in `tx`, nothing pending yet.
    pub fn new(tx: &'a mut Transaction<'t>, prepared: &'a mut Prepared, id: i64) -> Self {
        Writing {
            tx,
            prepared,
            id,
            pending: 0,
        }
    }

    /// Runs `sql` (prepared once per connection) with `params`.
    pub fn execute(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64, Error> {
        let st = self.prepared.get(self.tx, sql)?;
        self.tx.execute(&st, params).map_err(pg_err)
    }

    /// The rows of `sql` (prepared once per connection) with `params`.
    pub fn query(
        &mut self,
        sql: &'static str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<Row>, Error> {
        let st = self.prepared.get(self.tx, sql)?;
        self.tx.query(&st, params).map_err(pg_err)
    }
}

/// Rows per statement.
const ROWS: usize = 20_000;

/// Bytes of content per statement (blobs, compiled rows).
const BYTES: usize = 32 << 20;

/// `items` cut into runs of at most [`ROWS`] items and, past the first item
/// of a run, at most [`BYTES`] of `size`.
fn runs<T>(items: &[T], size: impl Fn(&T) -> usize) -> Vec<&[T]> {
    let mut out = vec![];
    let (mut start, mut bytes) = (0, 0);
    for (i, item) in items.iter().enumerate() {
        let n = size(item);
        if i > start && (i - start == ROWS || bytes + n > BYTES) {
            out.push(&items[start..i]);
            (start, bytes) = (i, 0);
        }
        bytes += n;
    }
    if start < items.len() {
        out.push(&items[start..]);
    }
    out
}

/// The ids of terms: the cache of those known before the commit, and
/// those it learnt.
pub(super) struct Terms<'a> {
    pub cache: &'a HashMap<String, i64>,
    pub fresh: NewTerms,
}

impl<'a> Terms<'a> {
    /// Terms known from `cache`, none inserted yet.
    pub fn new(cache: &'a HashMap<String, i64>) -> Terms<'a> {
        Terms {
            cache,
            fresh: NewTerms::new(),
        }
    }

    /// Makes sure every term of `terms` has a known id, inserting the terms
    /// the database lacks. The terms go in sorted, so two commits adding
    /// the same new terms take their locks in one order and never
    /// deadlock.
    pub(super) fn learn<'t>(
        &mut self,
        w: &mut Writing<'_, '_>,
        terms: impl IntoIterator<Item = &'t str>,
    ) -> Result<(), Error> {
        self.ids_of(w, terms, true).map(|_| ())
    }

    /// Looks up the ids of `terms` the database has, inserting none; true
    /// when it has every one.
    pub(super) fn look_up(
        &mut self,
        w: &mut Writing<'_, '_>,
        terms: &[&str],
    ) -> Result<bool, Error> {
        self.ids_of(w, terms.iter().copied(), false)
    }

    /// Reads the ids of the `terms` not known yet, inserting those the
    /// database lacks first when `insert` says; true when every one is
    /// known then.
    fn ids_of<'t>(
        &mut self,
        w: &mut Writing<'_, '_>,
        terms: impl IntoIterator<Item = &'t str>,
        insert: bool,
    ) -> Result<bool, Error> {
        let mut missing: Vec<&str> = terms
            .into_iter()
            .filter(|t| !self.cache.contains_key(*t) && !self.fresh.contains_key(*t))
            .collect();
        missing.sort_unstable();
        missing.dedup();
        for run in runs(&missing, |t| t.len()) {
            if insert {
                w.execute(
                    "INSERT INTO okfit_terms(term) SELECT t FROM UNNEST($1::TEXT[]) AS u(t)
                     ON CONFLICT (term) DO NOTHING",
                    &[&run],
                )?;
            }
            for r in w.query(
                "SELECT id, term FROM okfit_terms WHERE term = ANY($1)",
                &[&run],
            )? {
                self.fresh.insert(r.get(1), r.get(0));
            }
        }
        Ok(missing.iter().all(|t| self.fresh.contains_key(*t)))
    }

    /// The id of a term [`Terms::learn`] made known.
    fn id(&self, term: &str) -> Result<i64, Error> {
        self.cache
            .get(term)
            .or_else(|| self.fresh.get(term))
            .copied()
            .ok_or_else(|| Error::Store(format!("postgresql: no id for the term {term:?}")))
    }
}

/// Each slot the plan touches with its search terms after the commit
/// (`None`: the slot is empty then), in slot order. Deletes, then
/// upserts, then re-indexes, as the plan orders them.
fn final_terms(plan: &CommitPlan) -> BTreeMap<u32, Option<&DocTerms>> {
    let mut last = BTreeMap::new();
    for slot in &plan.deletes {
        last.insert(*slot, None);
    }
    for d in &plan.upserts {
        last.insert(d.slot, d.terms.as_ref());
    }
    for (slot, terms) in &plan.reindex {
        last.insert(*slot, Some(terms));
    }
    last
}

/// Stores the new contents of the commit.
pub(super) fn blobs(w: &mut Writing<'_, '_>, plan: &CommitPlan) -> Result<(), Error> {
    let id = w.id;
    for run in runs(&plan.blobs, |(_, b)| b.len()) {
        let (hashes, bytes): (Vec<&str>, Vec<&[u8]>) =
            run.iter().map(|(h, b)| (h.as_str(), b.as_slice())).unzip();
        w.execute(
            "INSERT INTO okfit_blobs(tenant, hash, bytes)
               SELECT $1, h, b FROM UNNEST($2::TEXT[], $3::BYTEA[]) AS u(h, b)
             ON CONFLICT (tenant, hash) DO NOTHING",
            &[&id, &hashes, &bytes],
        )?;
    }
    Ok(())
}

/// How one slot's postings change: the terms it loses, and those it gains
/// or whose frequency changes.
struct SlotChange<'a> {
    slot: i32,
    gone: Vec<&'a str>,
    put: Vec<(&'a str, f32)>,
}

/// Brings the postings and stored terms of every slot the commit touches
/// from what the database holds to the slot's final terms, touching only
/// the terms that differ. Every new term is learnt first, in one sorted
/// pass (so two commits adding the same new terms lock them in one order
/// and never deadlock); then the slots go [`SLOTS`] at a time, so a large
/// commit never holds all its postings' rows in memory at once.
pub(super) fn postings(
    w: &mut Writing<'_, '_>,
    terms: &mut Terms<'_>,
    plan: &CommitPlan,
) -> Result<(), Error> {
    let last: Vec<(u32, Option<&DocTerms>)> = final_terms(plan).into_iter().collect();
    postings_of_slots(w, terms, &last)
}

/// [`postings`] for the slots of `last` and their final terms.
fn postings_of_slots(
    w: &mut Writing<'_, '_>,
    terms: &mut Terms<'_>,
    last: &[(u32, Option<&DocTerms>)],
) -> Result<(), Error> {
    terms.learn(
        w,
        last.iter()
            .filter_map(|(_, t)| *t)
            .flat_map(|t| t.terms.iter().map(|(w, _)| w.as_str())),
    )?;
    if last.len() <= pending::SLOTS && pending::room(w, last.len())? {
        pending::leave(w, last)?;
        return doc_terms(w, last);
    }
    let task = Task::begin("writing search postings", Some(last.len() as u64));
    for run in last.chunks(SLOTS) {
        slot_postings(w, terms, run)?;
        doc_terms(w, run)?;
        task.advance(run.len() as u64);
    }
    Ok(())
}

/// Slots whose postings are written together.
const SLOTS: usize = 1_000;

/// [`postings`] for one run of slots: from what the postings hold for
/// each (its stored terms, or, for a pending slot, the terms it was posted
/// with) to its final terms; the run's slots are then pending no more.
fn slot_postings(
    w: &mut Writing<'_, '_>,
    terms: &mut Terms<'_>,
    run: &[(u32, Option<&DocTerms>)],
) -> Result<(), Error> {
    let id = w.id;
    let slots: Vec<i32> = run.iter().map(|(s, _)| *s as i32).collect();
    // A fold of these slots elsewhere finishes first (or waits for this).
    w.query(
        "SELECT slot FROM okfit_pending WHERE tenant = $1 AND slot = ANY($2) ORDER BY slot FOR UPDATE",
        &[&id, &slots],
    )?;
    let mut old: HashMap<i32, DocTerms> = HashMap::new();
    for r in w.query(
        "SELECT u.s, CASE WHEN p.slot IS NULL THEN d.terms ELSE p.posted END
           FROM UNNEST($2::INT[]) AS u(s)
           LEFT JOIN okfit_pending p ON p.tenant = $1 AND p.slot = u.s
           LEFT JOIN okfit_doc_terms d ON d.tenant = $1 AND d.slot = u.s",
        &[&id, &slots],
    )? {
        if let Some(t) = r.get::<_, Option<&[u8]>>(1).and_then(DocTerms::decode) {
            old.insert(r.get(0), t);
        }
    }
    let new: Vec<Option<&DocTerms>> = run.iter().map(|(_, t)| *t).collect();
    repost(w, terms, &slots, &old, &new)
}

/// Moves the postings rows of each of `slots` from the terms `old` says
/// they hold to its terms in `new` (in step with `slots`; none where
/// either is absent), and marks the slots pending no more.
pub(super) fn repost(
    w: &mut Writing<'_, '_>,
    terms: &mut Terms<'_>,
    slots: &[i32],
    old: &HashMap<i32, DocTerms>,
    new: &[Option<&DocTerms>],
) -> Result<(), Error> {
    let empty: Vec<(String, f32)> = vec![];
    let changes: Vec<SlotChange> = slots
        .iter()
        .zip(new)
        .map(|(s, new)| {
            let a = old.get(s).map_or(&empty, |t| &t.terms);
            let b = new.map_or(&empty, |t| &t.terms);
            let (gone, put) = term_changes(a, b);
            SlotChange {
                slot: *s,
                gone,
                put,
            }
        })
        .collect();
    write_changes(w, terms, &changes)?;
    let id = w.id;
    w.execute(
        "DELETE FROM okfit_pending WHERE tenant = $1 AND slot = ANY($2)",
        &[&id, &slots],
    )?;
    Ok(())
}

/// Writes the postings rows `changes` remove, add and re-weigh.
fn write_changes(
    w: &mut Writing<'_, '_>,
    terms: &mut Terms<'_>,
    changes: &[SlotChange<'_>],
) -> Result<(), Error> {
    let id = w.id;
    // The terms a slot loses are in the database already: learning them
    // inserts nothing and takes no lock.
    terms.learn(w, changes.iter().flat_map(|c| c.gone.iter().copied()))?;
    let (mut gone_slots, mut gone_terms) = (vec![], vec![]);
    let (mut put_slots, mut put_terms, mut put_tfs) = (vec![], vec![], vec![]);
    for c in changes {
        for t in &c.gone {
            gone_slots.push(c.slot);
            gone_terms.push(terms.id(t)?);
        }
        for (t, tf) in &c.put {
            put_slots.push(c.slot);
            put_terms.push(terms.id(t)?);
            put_tfs.push(*tf);
        }
    }
    for (slots, ids) in gone_slots.chunks(ROWS).zip(gone_terms.chunks(ROWS)) {
        w.execute(
            "DELETE FROM okfit_postings p USING UNNEST($2::INT[], $3::BIGINT[]) AS u(s, t)
              WHERE p.tenant = $1 AND p.slot = u.s AND p.term = u.t",
            &[&id, &slots, &ids],
        )?;
    }
    for ((slots, ids), tfs) in put_slots
        .chunks(ROWS)
        .zip(put_terms.chunks(ROWS))
        .zip(put_tfs.chunks(ROWS))
    {
        w.execute(
            "INSERT INTO okfit_postings(tenant, term, slot, tf)
               SELECT $1, t, s, f FROM UNNEST($2::BIGINT[], $3::INT[], $4::REAL[]) AS u(t, s, f)
             ON CONFLICT (tenant, term, slot) DO UPDATE SET tf = excluded.tf",
            &[&id, &ids, &slots, &tfs],
        )?;
    }
    Ok(())
}

/// Stores each touched slot's final terms (or removes them).
pub(super) fn doc_terms(
    w: &mut Writing<'_, '_>,
    last: &[(u32, Option<&DocTerms>)],
) -> Result<(), Error> {
    let id = w.id;
    let emptied: Vec<i32> = last
        .iter()
        .filter(|(_, t)| t.is_none())
        .map(|(s, _)| *s as i32)
        .collect();
    for run in runs(&emptied, |_| 0) {
        w.execute(
            "DELETE FROM okfit_doc_terms WHERE tenant = $1 AND slot = ANY($2)",
            &[&id, &run],
        )?;
    }
    let stored: Vec<(i32, Vec<u8>)> = last
        .iter()
        .filter_map(|(s, t)| t.map(|t| (*s as i32, t.encode())))
        .collect();
    for run in runs(&stored, |(_, b)| b.len()) {
        let (slots, bytes): (Vec<i32>, Vec<&[u8]>) =
            run.iter().map(|(s, b)| (*s, b.as_slice())).unzip();
        w.execute(
            "INSERT INTO okfit_doc_terms(tenant, slot, terms)
               SELECT $1, s, b FROM UNNEST($2::INT[], $3::BYTEA[]) AS u(s, b)
             ON CONFLICT (tenant, slot) DO UPDATE SET terms = excluded.terms",
            &[&id, &slots, &bytes],
        )?;
    }
    Ok(())
}

/// Writes the current documents' rows: removed slots go, a path moving to
/// another slot frees its old row, written documents are stored, and
/// re-indexed ones get their new length.
pub(super) fn docs(w: &mut Writing<'_, '_>, plan: &CommitPlan) -> Result<(), Error> {
    let id = w.id;
    let deleted: Vec<i32> = plan.deletes.iter().map(|s| *s as i32).collect();
    for run in runs(&deleted, |_| 0) {
        w.execute(
            "DELETE FROM okfit_docs WHERE tenant = $1 AND slot = ANY($2)",
            &[&id, &run],
        )?;
    }
    let rows: Vec<(i32, &str, &str, &str, f64, String)> = plan
        .upserts
        .iter()
        .map(|d| {
            let len = d.terms.as_ref().map_or(0.0, |t| t.len as f64);
            (
                d.slot as i32,
                d.bundle.as_str(),
                d.path.as_str(),
                d.hash.as_str(),
                len,
                d.compiled.encode(),
            )
        })
        .collect();
    // Every moving path leaves its old slot before any row is written, so
    // no write meets a path still held by another slot.
    for run in runs(&rows, |r| r.1.len() + r.2.len()) {
        let slots: Vec<i32> = run.iter().map(|r| r.0).collect();
        let bundles: Vec<&str> = run.iter().map(|r| r.1).collect();
        let paths: Vec<&str> = run.iter().map(|r| r.2).collect();
        w.execute(
            "DELETE FROM okfit_docs d USING UNNEST($2::TEXT[], $3::TEXT[], $4::INT[]) AS u(b, p, s)
              WHERE d.tenant = $1 AND d.bundle = u.b AND d.path = u.p AND d.slot <> u.s",
            &[&id, &bundles, &paths, &slots],
        )?;
    }
    let task = Task::begin("writing documents", Some(rows.len() as u64));
    for run in runs(&rows, |r| r.5.len()) {
        let slots: Vec<i32> = run.iter().map(|r| r.0).collect();
        let bundles: Vec<&str> = run.iter().map(|r| r.1).collect();
        let paths: Vec<&str> = run.iter().map(|r| r.2).collect();
        let hashes: Vec<&str> = run.iter().map(|r| r.3).collect();
        let lens: Vec<f64> = run.iter().map(|r| r.4).collect();
        let compiled: Vec<&str> = run.iter().map(|r| r.5.as_str()).collect();
        w.execute(
            "INSERT INTO okfit_docs(tenant, slot, bundle, path, hash, len, compiled)
               SELECT $1, s, b, p, h, l, c
                 FROM UNNEST($2::INT[], $3::TEXT[], $4::TEXT[], $5::TEXT[], $6::FLOAT8[], $7::TEXT[])
                   AS u(s, b, p, h, l, c)
             ON CONFLICT (tenant, slot) DO UPDATE SET bundle = excluded.bundle,
               path = excluded.path, hash = excluded.hash, len = excluded.len,
               compiled = excluded.compiled",
            &[&id, &slots, &bundles, &paths, &hashes, &lens, &compiled],
        )?;
        task.advance(run.len() as u64);
    }
    drop(task);
    for run in runs(&plan.reindex, |_| 0) {
        let slots: Vec<i32> = run.iter().map(|(s, _)| *s as i32).collect();
        let lens: Vec<f64> = run.iter().map(|(_, t)| t.len as f64).collect();
        w.execute(
            "UPDATE okfit_docs d SET len = u.l FROM UNNEST($2::INT[], $3::FLOAT8[]) AS u(s, l)
              WHERE d.tenant = $1 AND d.slot = u.s",
            &[&id, &slots, &lens],
        )?;
    }
    Ok(())
}

/// Records the changes of revision `seq`.
pub(super) fn changes(w: &mut Writing<'_, '_>, seq: i64, plan: &CommitPlan) -> Result<(), Error> {
    let id = w.id;
    for run in runs(&plan.changes, |c| c.bundle.len() + c.path.len()) {
        let mut b = vec![];
        let mut p = vec![];
        let mut o = vec![];
        let mut n = vec![];
        for c in run {
            b.push(c.bundle.as_str());
            p.push(c.path.as_str());
            o.push(c.old.as_deref());
            n.push(c.new.as_deref());
        }
        w.execute(
            "INSERT INTO okfit_changes(tenant, seq, bundle, path, old, new)
               SELECT $1, $2, b, p, o, n
                 FROM UNNEST($3::TEXT[], $4::TEXT[], $5::TEXT[], $6::TEXT[]) AS u(b, p, o, n)",
            &[&id, &seq, &b, &p, &o, &n],
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_cut_at_rows_and_bytes() {
        let items: Vec<usize> = vec![1; ROWS * 2 + 3];
        let r = runs(&items, |_| 0);
        assert_eq!(
            r.iter().map(|r| r.len()).collect::<Vec<_>>(),
            [ROWS, ROWS, 3]
        );
        let big = vec![BYTES / 2 + 1; 3];
        assert_eq!(runs(&big, |n| *n).len(), 3);
        let huge = vec![BYTES * 2];
        assert_eq!(runs(&huge, |n| *n).len(), 1);
        assert!(runs(&Vec::<usize>::new(), |_| 0).is_empty());
    }
}
