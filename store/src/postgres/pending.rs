//! Search postings left pending. A commit of a few documents stores each
//! one's terms (one row) and marks its slot pending, rather than rewriting
//! the hundreds of postings rows a document's words make; reads take a
//! pending slot's postings from its stored terms; and the pending slots are
//! folded into the postings later, a run at a time, off the commit's path
//! (PostgreSQL's own GIN indexes keep a pending list for the same reason).
//!
//! What every reader and writer relies on: the postings rows of a slot that
//! is not pending are exactly its stored terms; those of a pending slot are
//! the terms its `posted` column records (none when NULL), and its stored
//! terms are the truth. A commit takes a slot's pending row before it
//! changes the slot's stored terms, and a fold locks the rows it folds, so
//! neither ever reads the other's half-done work.

use super::pool::{pg_err, Pool};
use super::write::{repost, Terms, Writing};
use crate::error::Error;
use okfit_core::kb::search::DocTerms;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// A commit touching at most this many slots leaves their postings pending
/// (while [`MOST`] allows).
pub(super) const SLOTS: usize = 64;

/// Pending slots from which the committing process folds them, in the
/// background.
pub(super) const FOLD_AT: i64 = 64;

/// Slots folded per transaction.
const FOLD_RUN: i64 = 16;

/// Pending slots past which commits write their postings at once again,
/// so that writes faster than folds cannot make reads ever slower.
const MOST: i64 = 256;

/// Whether the tenant has room for `more` pending slots; sets `w.pending`
/// to how many it has.
pub(super) fn room(w: &mut Writing<'_, '_>, more: usize) -> Result<bool, Error> {
    let id = w.id;
    let rows = w.query(
        "SELECT count(*) FROM okfit_pending WHERE tenant = $1",
        &[&id],
    )?;
    w.pending = rows.first().map_or(0, |r| r.get(0));
    Ok(w.pending + more as i64 <= MOST)
}

/// Marks the slots of `last` (in slot order) pending, recording for each
/// slot not pending yet the terms its postings hold (its stored terms
/// before this commit).
pub(super) fn leave(
    w: &mut Writing<'_, '_>,
    last: &[(u32, Option<&DocTerms>)],
) -> Result<(), Error> {
    let id = w.id;
    let slots: Vec<i32> = last.iter().map(|(s, _)| *s as i32).collect();
    // The no-op update locks a slot already pending, so a fold running now
    // finishes with it first (or waits for this commit).
    let added = w.execute(
        "INSERT INTO okfit_pending(tenant, slot, posted)
           SELECT $1, u.s, d.terms FROM UNNEST($2::INT[]) AS u(s)
             LEFT JOIN okfit_doc_terms d ON d.tenant = $1 AND d.slot = u.s
            ORDER BY u.s
         ON CONFLICT (tenant, slot) DO UPDATE SET posted = okfit_pending.posted",
        &[&id, &slots],
    )?;
    w.pending += added as i64;
    Ok(())
}

/// Folds up to [`FOLD_RUN`] pending slots into the postings (skipping those
/// another fold holds); how many it folded.
fn fold_run(w: &mut Writing<'_, '_>, terms: &mut Terms<'_>) -> Result<usize, Error> {
    let id = w.id;
    let mut posted: HashMap<i32, DocTerms> = HashMap::new();
    let mut slots: Vec<i32> = vec![];
    for r in w.query(
        "SELECT slot, posted FROM okfit_pending WHERE tenant = $1 ORDER BY slot LIMIT $2
            FOR UPDATE SKIP LOCKED",
        &[&id, &FOLD_RUN],
    )? {
        let slot: i32 = r.get(0);
        slots.push(slot);
        if let Some(bytes) = r.get::<_, Option<&[u8]>>(1) {
            posted.insert(slot, decode(slot, bytes)?);
        }
    }
    if slots.is_empty() {
        return Ok(0);
    }
    let mut now: HashMap<i32, DocTerms> = HashMap::new();
    for r in w.query(
        "SELECT slot, terms FROM okfit_doc_terms WHERE tenant = $1 AND slot = ANY($2)",
        &[&id, &slots],
    )? {
        let slot: i32 = r.get(0);
        now.insert(slot, decode(slot, r.get(1))?);
    }
    // Every stored term was learnt by the commit that stored it.
    let all: Vec<&str> = posted
        .values()
        .chain(now.values())
        .flat_map(|t| t.terms.iter().map(|(t, _)| t.as_str()))
        .collect();
    if !terms.look_up(w, &all)? {
        return Err(Error::Store(
            "postgresql: database corruption: a stored term is not in okfit_terms".into(),
        ));
    }
    let new: Vec<Option<&DocTerms>> = slots.iter().map(|s| now.get(s)).collect();
    repost(w, terms, &slots, &posted, &new)?;
    Ok(slots.len())
}

fn decode(slot: i32, bytes: &[u8]) -> Result<DocTerms, Error> {
    DocTerms::decode(bytes).ok_or_else(|| {
        Error::Store(format!(
            "postgresql: database corruption: unreadable terms of slot {slot}"
        ))
    })
}

/// Folds every pending slot of tenant `id`, run by run, each run in a
/// transaction of its own.
pub(super) fn fold(pool: &Arc<Pool>, id: i64) -> Result<(), Error> {
    let known = HashMap::new();
    loop {
        let mut guard = pool.lend()?;
        let (client, prepared) = guard.parts();
        let mut tx = client.transaction().map_err(pg_err)?;
        let mut terms = Terms::new(&known);
        let mut w = Writing {
            tx: &mut tx,
            prepared,
            id,
            pending: 0,
        };
        let folded = fold_run(&mut w, &mut terms)?;
        tx.commit().map_err(pg_err)?;
        if folded < FOLD_RUN as usize {
            return Ok(());
        }
    }
}

/// Tenants (by pool and id) a thread of this process is folding.
static FOLDING: Mutex<Vec<(usize, i64)>> = Mutex::new(vec![]);

/// Folds tenant `id`'s pending slots on a thread of its own, unless one is
/// at it already. Best effort: what is not folded now is folded after a
/// later commit, and reads are right either way.
pub(super) fn fold_later(pool: &Arc<Pool>, id: i64) {
    let key = (Arc::as_ptr(pool) as usize, id);
    {
        let mut folding = FOLDING.lock().unwrap_or_else(|p| p.into_inner());
        if folding.contains(&key) {
            return;
        }
        folding.push(key);
    }
    let done = move || {
        let mut folding = FOLDING.lock().unwrap_or_else(|p| p.into_inner());
        folding.retain(|k| *k != key);
    };
    let pool = pool.clone();
    let spawned = std::thread::Builder::new()
        .name("okfit-fold".into())
        .spawn(move || {
            let _ = fold(&pool, id);
            done();
        });
    if spawned.is_err() {
        let mut folding = FOLDING.lock().unwrap_or_else(|p| p.into_inner());
        folding.retain(|k| *k != key);
    }
}

/// The pending slots' postings for `term`: `list` (read from the postings
/// rows) loses every pending slot and gains those whose stored terms hold
/// `term`. `pending` is in slot order, each with its stored terms (`None`:
/// the slot is empty).
pub(super) fn patch(list: &mut Vec<(u32, f32)>, term: &str, pending: &[(u32, Option<DocTerms>)]) {
    if pending.is_empty() {
        return;
    }
    list.retain(|(s, _)| pending.binary_search_by_key(s, |(p, _)| *p).is_err());
    for (slot, terms) in pending {
        if let Some(tf) = terms.as_ref().and_then(|t| tf_in(t, term)) {
            list.push((*slot, tf));
        }
    }
    list.sort_unstable_by_key(|(s, _)| *s);
}

/// The weight of `term` in `t`, if it holds it.
fn tf_in(t: &DocTerms, term: &str) -> Option<f32> {
    t.terms
        .binary_search_by(|(w, _)| w.as_str().cmp(term))
        .ok()
        .map(|i| t.terms[i].1)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(terms: &[(&str, f32)]) -> DocTerms {
        DocTerms {
            len: 1.0,
            terms: terms.iter().map(|(t, f)| (t.to_string(), *f)).collect(),
        }
    }

    #[test]
    fn a_pending_slot_answers_from_its_stored_terms() {
        let pending = vec![
            (2, Some(doc(&[("apple", 3.0), ("pear", 1.0)]))),
            (5, None),
            (7, Some(doc(&[("pear", 2.0)]))),
        ];
        let mut apple = vec![(1, 1.0), (2, 9.0), (5, 1.0), (9, 2.0)];
        patch(&mut apple, "apple", &pending);
        assert_eq!(apple, [(1, 1.0), (2, 3.0), (9, 2.0)]);
        let mut pear = vec![(3, 1.0)];
        patch(&mut pear, "pear", &pending);
        assert_eq!(pear, [(2, 1.0), (3, 1.0), (7, 2.0)]);
        let mut plum = vec![(5, 4.0)];
        patch(&mut plum, "plum", &pending);
        assert!(plum.is_empty());
    }
}
