//! One term's postings `(slot, tf)`, compact and in slot order: a slot
//! takes four bytes and a tf one, since a tf is a weighted count (whole
//! numbers, nearly always small); the rare tf that is not a whole number
//! from 1 to 255 is kept exactly beside the list. A long-lived reader that
//! holds every posting of a large tenant in memory needs five bytes a
//! posting rather than eight.

/// The byte of a tf kept beside the list (no posting has a tf of 0).
const WIDE: u8 = 0;

/// Lists shorter than this grow by doubling (their slack is small).
const SMALL: usize = 1024;

/// The byte standing for `tf`: the tf itself when it is a whole number
/// from 1 to 255, else [`WIDE`].
fn byte(tf: f32) -> u8 {
    if (1.0..=255.0).contains(&tf) && tf.fract() == 0.0 {
        tf as u8
    } else {
        WIDE
    }
}

/// A term's postings in slot order, each slot once.
#[derive(Debug, Clone, Default)]
pub struct Postings {
    slots: Vec<u32>,
    /// Each posting's tf as [`byte`] gives it.
    tfs: Vec<u8>,
    /// `(slot, tf)` of the postings whose byte is [`WIDE`], in slot order.
    wide: Vec<(u32, f32)>,
}

impl Postings {
    /// Postings from `(slot, tf)` pairs in any order (a slot listed twice
    /// keeps its last tf).
    pub fn from_pairs(mut pairs: Vec<(u32, f32)>) -> Postings {
        if !pairs.is_sorted_by_key(|&(s, _)| s) {
            pairs.sort_by_key(|&(s, _)| s);
        }
        let mut p = Postings::with_capacity(pairs.len());
        for (slot, tf) in pairs {
            p.put(slot, tf);
        }
        p.wide.shrink_to_fit();
        p
    }

    /// Room for `n` postings before the lists grow.
    fn with_capacity(n: usize) -> Postings {
        Postings {
            slots: Vec::with_capacity(n),
            tfs: Vec::with_capacity(n),
            wide: vec![],
        }
    }

    /// The number of postings (the term's document frequency).
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// Whether no document holds the term.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// The slots, in order.
    pub fn slots(&self) -> &[u32] {
        &self.slots
    }

    /// Each `(slot, tf)`, in slot order.
    pub fn iter(&self) -> Iter<'_> {
        Iter {
            p: self,
            i: 0,
            w: 0,
        }
    }

    /// The tf of `slot`, if it holds the term.
    pub fn tf_of(&self, slot: u32) -> Option<f32> {
        let i = self.slots.binary_search(&slot).ok()?;
        Some(self.tf_at(i))
    }

    /// The tf of the `i`-th posting (in slot order).
    pub fn tf_at(&self, i: usize) -> f32 {
        match self.tfs[i] {
            WIDE => self.wide_tf(self.slots[i]),
            b => f32::from(b),
        }
    }

    fn wide_tf(&self, slot: u32) -> f32 {
        self.wide
            .binary_search_by_key(&slot, |&(s, _)| s)
            .map_or(0.0, |w| self.wide[w].1)
    }

    /// Puts `slot`'s posting in, replacing the one it has; a slot past the
    /// last, the common case, is appended. True when the posting is new.
    pub fn put(&mut self, slot: u32, tf: f32) -> bool {
        let b = byte(tf);
        let at = match self.slots.last() {
            Some(&last) if last >= slot => self.slots.binary_search(&slot),
            _ => Err(self.slots.len()),
        };
        let (i, new) = match at {
            Ok(i) => (i, false),
            Err(i) => {
                self.grow();
                self.slots.insert(i, slot);
                self.tfs.insert(i, b);
                (i, true)
            }
        };
        self.tfs[i] = b;
        let w = self.wide.binary_search_by_key(&slot, |&(s, _)| s);
        match (b, w) {
            (WIDE, Ok(w)) => self.wide[w].1 = tf,
            (WIDE, Err(w)) => self.wide.insert(w, (slot, tf)),
            (_, Ok(w)) => {
                self.wide.remove(w);
            }
            (_, Err(_)) => {}
        }
        new
    }

    /// Makes room for one more posting. A long list grows by an eighth,
    /// not by doubling: a reader holding every list of a large tenant
    /// would otherwise double the memory of each common word's list on the
    /// first document written after the warm-up.
    fn grow(&mut self) {
        let n = self.slots.len();
        if n < self.slots.capacity() && n < self.tfs.capacity() {
            return;
        }
        let more = if n < SMALL { n.max(4) } else { n / 8 };
        self.slots.reserve_exact(more);
        self.tfs.reserve_exact(more);
    }

    /// Takes `slot`'s posting out; true when it had one.
    pub fn remove(&mut self, slot: u32) -> bool {
        let Ok(i) = self.slots.binary_search(&slot) else {
            return false;
        };
        self.slots.remove(i);
        if self.tfs.remove(i) == WIDE {
            if let Ok(w) = self.wide.binary_search_by_key(&slot, |&(s, _)| s) {
                self.wide.remove(w);
            }
        }
        true
    }

    /// Applies `edits` in one pass over the list: each `(slot, Some(tf))`
    /// puts the slot's posting in (replacing the one it has), each
    /// `(slot, None)` takes it out. `edits` are in slot order, each slot
    /// once. `counted(slot, change)` hears of each posting added (+1) or
    /// removed (-1). Many documents changed at once cost one copy of the
    /// list rather than a shift of it per document.
    pub fn merge(&mut self, edits: &[(u32, Option<f32>)], mut counted: impl FnMut(u32, i64)) {
        let adds = edits.iter().filter(|(_, tf)| tf.is_some()).count();
        let mut out = Postings::with_capacity(self.slots.len() + adds);
        // Next posting and next wide tf of `self` not copied yet.
        let (mut i, mut w) = (0, 0);
        for &(slot, tf) in edits {
            let end = i + self.slots[i..].partition_point(|&s| s < slot);
            w = self.copy_into(&mut out, i..end, w);
            i = end;
            let had = self.slots.get(i) == Some(&slot);
            if had {
                i += 1;
                if self.wide.get(w).is_some_and(|&(s, _)| s == slot) {
                    w += 1;
                }
            }
            match tf {
                Some(tf) => {
                    let b = byte(tf);
                    out.slots.push(slot);
                    out.tfs.push(b);
                    if b == WIDE {
                        out.wide.push((slot, tf));
                    }
                    if !had {
                        counted(slot, 1);
                    }
                }
                None if had => counted(slot, -1),
                None => {}
            }
        }
        self.copy_into(&mut out, i..self.slots.len(), w);
        *self = out;
    }

    /// Appends the postings `run` to `out`, with their wide tfs (looked for
    /// from `w` on); where the next wide tf is looked for after them.
    fn copy_into(&self, out: &mut Postings, run: std::ops::Range<usize>, w: usize) -> usize {
        let Some(&last) = self.slots[run.clone()].last() else {
            return w;
        };
        out.slots.extend_from_slice(&self.slots[run.clone()]);
        out.tfs.extend_from_slice(&self.tfs[run]);
        let to = w + self.wide[w..].partition_point(|&(s, _)| s <= last);
        out.wide.extend_from_slice(&self.wide[w..to]);
        to
    }

    /// Keeps only the postings of slots `keep` accepts.
    pub fn retain(&mut self, keep: impl Fn(u32) -> bool) {
        let mut at = 0;
        for i in 0..self.slots.len() {
            if keep(self.slots[i]) {
                self.slots[at] = self.slots[i];
                self.tfs[at] = self.tfs[i];
                at += 1;
            }
        }
        self.slots.truncate(at);
        self.tfs.truncate(at);
        self.wide.retain(|&(s, _)| keep(s));
    }
}

/// The `(slot, tf)` pairs of a [`Postings`], in slot order.
pub struct Iter<'a> {
    p: &'a Postings,
    i: usize,
    /// Where the next wide tf is looked for (wide tfs come in slot order).
    w: usize,
}

impl Iterator for Iter<'_> {
    type Item = (u32, f32);

    fn next(&mut self) -> Option<(u32, f32)> {
        let i = self.i;
        let slot = *self.p.slots.get(i)?;
        self.i += 1;
        let tf = match self.p.tfs[i] {
            WIDE => {
                let wide = &self.p.wide;
                while wide.get(self.w).is_some_and(|&(s, _)| s < slot) {
                    self.w += 1;
                }
                wide.get(self.w)
                    .filter(|&&(s, _)| s == slot)
                    .map_or(0.0, |&(_, tf)| tf)
            }
            b => f32::from(b),
        };
        Some((slot, tf))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let n = self.p.slots.len() - self.i;
        (n, Some(n))
    }
}

impl ExactSizeIterator for Iter<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_tf_comes_back_exactly_in_slot_order() {
        let pairs = vec![
            (9, 1.0),
            (2, 300.0),
            (5, 0.5),
            (7, 255.0),
            (1, 4.0),
            (3, 1e9),
            (4, 256.0),
        ];
        let p = Postings::from_pairs(pairs.clone());
        let mut want = pairs;
        want.sort_by_key(|&(s, _)| s);
        assert_eq!(p.iter().collect::<Vec<_>>(), want);
        assert_eq!(p.iter().len(), 7);
        for &(s, tf) in &want {
            assert_eq!(p.tf_of(s), Some(tf));
        }
        assert_eq!(p.tf_of(6), None);
    }

    #[test]
    fn merging_edits_equals_putting_and_removing_them_one_by_one() {
        let pairs: Vec<(u32, f32)> = (0..200)
            .map(|s| (s * 3, if s % 9 == 0 { 0.5 } else { (s % 4 + 1) as f32 }))
            .collect();
        let edits: Vec<(u32, Option<f32>)> = (0..600)
            .step_by(7)
            .map(|s| match s % 5 {
                0 => (s, None),
                1 => (s, Some(2.5)),
                _ => (s, Some(3.0)),
            })
            .collect();
        let mut merged = Postings::from_pairs(pairs.clone());
        let mut net = 0i64;
        merged.merge(&edits, |_, by| net += by);
        let mut one = Postings::from_pairs(pairs);
        let before = one.len() as i64;
        for &(s, tf) in &edits {
            match tf {
                Some(tf) => {
                    one.put(s, tf);
                }
                None => {
                    one.remove(s);
                }
            }
        }
        assert_eq!(
            merged.iter().collect::<Vec<_>>(),
            one.iter().collect::<Vec<_>>()
        );
        assert_eq!(merged.wide, one.wide);
        assert_eq!(net, one.len() as i64 - before);
    }

    #[test]
    fn a_long_list_grows_by_an_eighth() {
        let mut p = Postings::from_pairs((0..10_000).map(|s| (s * 2, 1.0)).collect());
        assert_eq!(p.slots.capacity(), 10_000);
        p.put(1, 2.0);
        p.put(30_000, 3.0);
        assert_eq!(p.len(), 10_002);
        assert!(
            p.slots.capacity() <= 10_000 + 10_000 / 8,
            "{}",
            p.slots.capacity()
        );
        assert!(
            p.tfs.capacity() <= 10_000 + 10_000 / 8,
            "{}",
            p.tfs.capacity()
        );
        assert_eq!(p.tf_of(1), Some(2.0));
        assert_eq!(p.tf_of(30_000), Some(3.0));
        // A short list still doubles.
        let mut q = Postings::from_pairs(vec![(1, 1.0), (2, 1.0)]);
        q.put(3, 1.0);
        assert!(q.slots.capacity() >= 4);
    }

    #[test]
    fn put_remove_and_retain_keep_the_wide_tfs_in_step() {
        let mut p = Postings::from_pairs(vec![(1, 2.0), (4, 0.25), (8, 3.0)]);
        // Replaced by a byte, then by a wide tf, then a new wide posting.
        assert!(!p.put(4, 6.0));
        assert!(!p.put(8, 1000.0));
        assert!(p.put(6, 0.75));
        assert!(p.put(0, 2.0));
        assert_eq!(
            p.iter().collect::<Vec<_>>(),
            [(0, 2.0), (1, 2.0), (4, 6.0), (6, 0.75), (8, 1000.0)]
        );
        assert!(p.remove(6));
        assert!(!p.remove(6));
        p.retain(|s| s != 8);
        assert_eq!(p.iter().collect::<Vec<_>>(), [(0, 2.0), (1, 2.0), (4, 6.0)]);
        assert!(p.wide.is_empty());
        assert_eq!(p.slots(), [0, 1, 4]);
    }
}
