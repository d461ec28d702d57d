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

use super::{bm25, Postings, TopK, K1};

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
    /// The list, the score its postings need and [`longest_reaching`]
    /// for it, as [`Cursors::pass_unreachable`] last used them.
    reach: Option<(usize, f64, Box<[f64; 256]>)>,
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
            reach: None,
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

    /// With a single essential list left (the common case of a query of
    /// common words once `k` documents are kept), moves its cursor past
    /// the postings that cannot reach `floor` even with every
    /// non-essential list's bound: the test the candidate loop would make
    /// first, in a tight loop over one list.
    ///
    /// A posting longer than its tf's entry in [`longest_reaching`] is
    /// passed over without dividing.
    fn pass_unreachable(&mut self, lens: &Lengths<'_>, idfs: &[f64], floor: f64) {
        if self.skip == 0 || self.skip + 1 != self.order.len() {
            return;
        }
        let (j, rest) = (self.order[self.skip], self.upto[self.skip - 1]);
        let need = floor - rest;
        if self.reach.as_ref().is_none_or(|r| r.0 != j || r.1 != need) {
            self.reach = Some((j, need, longest_reaching(idfs[j], need, lens.norm)));
        }
        let Some((_, _, longest)) = self.reach.as_ref() else {
            return;
        };
        let list = self.lists[j];
        let slots = list.slots();
        let mut p = self.pos[j];
        while let Some(&slot) = slots.get(p) {
            if let Some(len) = lens.of_slot(slot) {
                let too_long = list
                    .small_tf_at(p)
                    .is_some_and(|tf| f64::from(len) > longest[usize::from(tf)]);
                if !too_long && lens.part(idfs[j], list.tf_at(p), len) + rest >= floor {
                    break;
                }
            }
            p += 1;
        }
        self.pos[j] = p;
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

/// The documents' weighted lengths as ranking reads them.
pub(super) struct Lengths<'a> {
    /// Each slot's length (postings of slots past it are ignored).
    pub of: &'a [f32],
    /// Which slots hold a document.
    pub present: &'a [bool],
    /// `(c0, c1)` of the score's length norm `c0 + c1·len` (BM25's
    /// `idf·tf(k1+1) / (tf + norm)`).
    pub norm: (f64, f64),
}

impl Lengths<'_> {
    /// The length of the document in `slot`, if one is there.
    fn of_slot(&self, slot: u32) -> Option<f32> {
        let i = slot as usize;
        self.of
            .get(i)
            .copied()
            .filter(|_| self.present.get(i) == Some(&true))
    }

    /// A posting's part of a document's score.
    fn part(&self, idf: f64, tf: f32, len: f32) -> f64 {
        bm25(idf, tf, self.norm.0 + self.norm.1 * f64::from(len))
    }
}

/// For each small tf, the longest document in which a posting of that tf
/// still scores `need` (a little longer, so that rounding never passes
/// over one that does): infinite when any length does.
fn longest_reaching(idf: f64, need: f64, (c0, c1): (f64, f64)) -> Box<[f64; 256]> {
    let mut longest = Box::new([f64::INFINITY; 256]);
    if need > 0.0 && c1 > 0.0 {
        for (tf, l) in longest.iter_mut().enumerate().skip(1) {
            let tf = tf as f64;
            let at = (idf * (K1 + 1.0) * tf / need - tf - c0) / c1;
            *l = at + at.abs() * 1e-9 + 1e-3;
        }
    }
    longest
}

/// Offers to `top` every document that can rank in it, with its exact
/// score (BM25 with `lens.norm`): `lists` in query order, `idfs` theirs.
/// The number of documents scored in full.
pub(super) fn rank(
    lists: &[&Postings],
    idfs: &[f64],
    lens: &Lengths<'_>,
    top: &mut TopK<'_, '_>,
) -> usize {
    let mut c = Cursors::new(lists, idfs);
    // Each list's part of the candidate's score (`None`: not holding the
    // term, or not looked up).
    let mut parts: Vec<Option<f64>> = vec![None; lists.len()];
    let mut scored = 0;
    loop {
        c.pass_unreachable(lens, idfs, top.floor * (1.0 - MARGIN));
        let Some(d) = c.next_candidate() else {
            break;
        };
        // A slot without a length or a document is passed over.
        let len = lens.of_slot(d);
        // The essential lists' parts, their cursors moved past `d`.
        let mut partial = 0.0;
        for e in c.skip..c.order.len() {
            let j = c.order[e];
            parts[j] = None;
            if c.lists[j].slots().get(c.pos[j]) == Some(&d) {
                let tf = c.lists[j].tf_at(c.pos[j]);
                c.pos[j] += 1;
                if let Some(len) = len {
                    let part = lens.part(idfs[j], tf, len);
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
            parts[j] = c.seek(j, d).map(|tf| lens.part(idfs[j], tf, len));
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

/// Offers to `top` every document holding a term of `lists`, with its
/// exact score, accumulated list by list in one array of the tenant's size
/// (reused by the thread): when even the rarest list holds a large share of
/// the documents, MaxScore can skip little, and a pass over each list is
/// cheaper than merging them a document at a time. The sums are the same
/// parts added in the same (query) order, so the scores are bit-identical.
/// The number of documents scored (offered).
pub(super) fn rank_dense(
    lists: &[&Postings],
    idfs: &[f64],
    lens: &Lengths<'_>,
    top: &mut TopK<'_, '_>,
) -> usize {
    thread_local! {
        /// Zero between calls: the last pass zeroes what it reads, so no
        /// call clears the whole array first. `true` while a call runs
        /// (were one cut short, the next clears it).
        static SCORES: std::cell::RefCell<(Vec<f64>, bool)> =
            const { std::cell::RefCell::new((Vec::new(), false)) };
    }
    SCORES.with(|cell| {
        let (scores, busy) = &mut *cell.borrow_mut();
        if *busy || scores.len() != lens.of.len() {
            scores.clear();
            scores.resize(lens.of.len(), 0.0);
        }
        *busy = true;
        for (list, &idf) in lists.iter().zip(idfs) {
            accumulate(scores, list, idf, lens);
        }
        let scored = offer_scores(scores, top);
        *busy = false;
        scored
    })
}

/// Adds each posting's [`Lengths::part`] to its document's score in
/// `scores`, the three arrays cut to one length first so that the loop
/// checks one bound per posting.
fn accumulate(scores: &mut [f64], list: &Postings, idf: f64, lens: &Lengths<'_>) {
    let n = scores.len().min(lens.of.len()).min(lens.present.len());
    let (scores, of, present) = (&mut scores[..n], &lens.of[..n], &lens.present[..n]);
    for (p, &slot) in list.slots().iter().enumerate() {
        let i = slot as usize;
        if i < n && present[i] {
            scores[i] += lens.part(idf, list.tf_at(p), of[i]);
        }
    }
}

/// Offers to `top` each positive score of `scores` at or above its floor,
/// zeroing `scores`. Scores are tested a block at a time without
/// branching, so the blocks none of whose scores can enter (nearly all,
/// once `k` are kept) cost a few vector instructions: at 100,000 concepts
/// of Zipf prose, a search of two common words went from 1.06 to 0.33 ms
/// through the daemon's socket (a test of each score with a branch taken
/// at random was most of the pass).
fn offer_scores(scores: &mut [f64], top: &mut TopK<'_, '_>) -> usize {
    const BLOCK: usize = 16;
    // `s >= least` is `s > 0.0` for every score (none is NaN).
    let least = f64::from_bits(1);
    let mut scored = 0;
    for (b, block) in scores.chunks_mut(BLOCK).enumerate() {
        let floor = top.floor.max(least);
        if block.iter().fold(false, |any, &s| any | (s >= floor)) {
            for (i, &s) in block.iter().enumerate() {
                if s > 0.0 && s >= top.floor {
                    scored += 1;
                    top.offer((b * BLOCK + i) as u32, s);
                }
            }
        }
        block.fill(0.0);
    }
    scored
}

/// Whether [`rank_dense`] ranks `lists` over `slots` slots faster than
/// [`rank`]: when the rarest list holds at least one document in
/// [`DENSE_SHARE`].
pub(super) fn dense(lists: &[&Postings], slots: usize) -> bool {
    lists
        .iter()
        .map(|l| l.len())
        .min()
        .is_some_and(|m| m.saturating_mul(DENSE_SHARE) >= slots)
}

/// See [`dense`]. On 20,000 generated concepts whose query words each occur
/// in a fifth to a half of them, a warm search took 0.39–0.44 ms by
/// MaxScore and 0.23 ms by the array; on Zipf prose, where most queries hold
/// a rarer word, the choice changes nothing measurable.
const DENSE_SHARE: usize = 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_posting_longer_than_its_tfs_longest_reaching_length_never_reaches() {
        let norms = [(0.3, 0.0014), (0.3, 0.9), (1.2, 1e-6), (0.0, 0.05)];
        let (mut passed, mut kept) = (0, 0);
        for &(c0, c1) in &norms {
            for idf in [0.05, 1.2, 7.5] {
                for need in [1e-9, 0.4, 1.7, 9.0] {
                    let longest = longest_reaching(idf, need, (c0, c1));
                    for tf in 1..=255u8 {
                        for len in [0.0f32, 1.0, 17.0, 311.0, 640.0, 5e3, 1e6] {
                            let part = bm25(idf, f32::from(tf), c0 + c1 * f64::from(len));
                            if f64::from(len) > longest[usize::from(tf)] {
                                assert!(part < need, "{idf} {need} {tf} {len} {c0} {c1}");
                                passed += 1;
                            } else {
                                kept += 1;
                            }
                        }
                    }
                }
            }
        }
        assert!(passed > 1000 && kept > 1000, "{passed} {kept}");
    }
}
