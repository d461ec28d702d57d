//! Document-at-a-time MaxScore: the exact top `k` of a BM25 query without
//! scoring every document that holds one of its terms.
//!
//! No document gets more than `idf·(k1+1)` from one term (a term's bound).
//! The lists are ordered by bound; once the `k` kept documents found so far
//! all score more than the bounds of the lowest lists added together, a
//! document holding only those terms cannot enter, so those lists stop
//! proposing candidates (they are "non-essential") and are only looked up,
//! by galloping search, for the candidates of the others — and only while
//! the candidate's score so far plus the bounds still to add can reach the
//! `k`-th score. Candidates come in slot order from the essential lists.
//!
//! Scores are exact and bit-identical to a full pass: a candidate that can
//! still enter is scored by adding its terms' parts in query order, as a
//! full pass accumulates them; pruning decisions keep a margin far above
//! rounding.

use super::{Postings, TopK, K1};

/// Relative margin of the pruning decisions: partial sums and bounds may be
/// added in other orders than the exact score.
const MARGIN: f64 = 1e-9;

/// The lists' state during one query.
struct Cursors<'l> {
    lists: &'l [&'l Postings],
    /// List indices by bound, smallest first.
    order: Vec<usize>,
    /// `upto[i]`: the bounds of `order[..=i]` added up.
    upto: Vec<f64>,
    /// Next posting of each list (query order).
    pos: Vec<usize>,
    /// `order[..skip]` are non-essential.
    skip: usize,
}

impl<'l> Cursors<'l> {
    fn new(lists: &'l [&'l Postings], idfs: &[f64]) -> Cursors<'l> {
        let mut order: Vec<usize> = (0..lists.len()).collect();
        order.sort_by(|&a, &b| idfs[a].total_cmp(&idfs[b]));
        let mut sum = 0.0;
        let upto = order
            .iter()
            .map(|&j| {
                sum += idfs[j] * (K1 + 1.0);
                sum
            })
            .collect();
        Cursors {
            lists,
            order,
            upto,
            pos: vec![0; lists.len()],
            skip: 0,
        }
    }

    /// The smallest slot an essential list holds at its cursor.
    fn next_candidate(&self) -> Option<u32> {
        self.order[self.skip..]
            .iter()
            .filter_map(|&j| self.lists[j].slots().get(self.pos[j]).copied())
            .min()
    }

    /// Makes non-essential the lists whose bounds add up to less than
    /// `floor`.
    fn raise(&mut self, floor: f64) {
        while self.skip < self.order.len() && self.upto[self.skip] < floor {
            self.skip += 1;
        }
    }

    /// Moves list `j`'s cursor to its first posting at or past `slot`
    /// (galloping, then binary search); the tf there when it is `slot`'s.
    fn seek(&mut self, j: usize, slot: u32) -> Option<f32> {
        let slots = self.lists[j].slots();
        let from = self.pos[j];
        let (mut lo, mut hi, mut step) = (from, from, 1);
        while hi < slots.len() && slots[hi] < slot {
            lo = hi + 1;
            hi += step;
            step *= 2;
        }
        let hi = hi.min(slots.len());
        let at = lo + slots[lo..hi].partition_point(|&s| s < slot);
        self.pos[j] = at;
        (slots.get(at) == Some(&slot)).then(|| {
            self.pos[j] = at + 1;
            self.lists[j].tf_at(at)
        })
    }
}

/// Offers to `top` every document that can rank in it, with its exact
/// score: `lists` in query order, `idfs` theirs, `lens` the documents'
/// weighted lengths (postings of slots past it are ignored), `present`
/// which slots hold a document. The number of documents scored in full.
pub(super) fn rank(
    lists: &[&Postings],
    idfs: &[f64],
    lens: &[f32],
    present: &[bool],
    score: impl Fn(f64, f32, f32) -> f64,
    top: &mut TopK<'_, '_>,
) -> usize {
    let mut c = Cursors::new(lists, idfs);
    // Each list's part of the candidate's score (`None`: not holding the
    // term, or not looked up).
    let mut parts: Vec<Option<f64>> = vec![None; lists.len()];
    let mut scored = 0;
    while let Some(d) = c.next_candidate() {
        let i = d as usize;
        // A slot without a length or a document is passed over.
        let len = lens
            .get(i)
            .copied()
            .filter(|_| present.get(i) == Some(&true));
        // The essential lists' parts, their cursors moved past `d`.
        let mut partial = 0.0;
        for e in c.skip..c.order.len() {
            let j = c.order[e];
            parts[j] = None;
            if c.lists[j].slots().get(c.pos[j]) == Some(&d) {
                let tf = c.lists[j].tf_at(c.pos[j]);
                c.pos[j] += 1;
                if let Some(len) = len {
                    let part = score(idfs[j], tf, len);
                    parts[j] = Some(part);
                    partial += part;
                }
            }
        }
        let Some(len) = len else {
            continue;
        };
        // The non-essential lists, largest bound first, while they can
        // still lift `d` to the k-th score.
        let floor = top.floor * (1.0 - MARGIN);
        let mut reachable = true;
        for e in (0..c.skip).rev() {
            if partial + c.upto[e] < floor {
                reachable = false;
                break;
            }
            let j = c.order[e];
            parts[j] = c.seek(j, d).map(|tf| score(idfs[j], tf, len));
            partial += parts[j].unwrap_or(0.0);
        }
        if !reachable {
            continue;
        }
        scored += 1;
        // The exact score: the parts added in query order.
        let s = parts.iter().flatten().fold(0.0, |s, p| s + p);
        if s > 0.0 && s >= top.floor {
            top.offer(d, s);
            c.raise(top.floor * (1.0 - MARGIN));
        }
    }
    scored
}
