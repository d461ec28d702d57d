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

    /// The tf of the `i`-th posting when it is a whole number from 1 to
    /// 255 (nearly always), read without a look beside the list.
    pub fn small_tf_at(&self, i: usize) -> Option<u8> {
        Some(self.tfs[i]).filter(|&b| b != WIDE)
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
        self.make_room(1);
    }

    /// Makes room for `extra` more postings, growing as [`Postings::grow`]
    /// says when the buffers are full.
    fn make_room(&mut self, extra: usize) {
        let n = self.slots.len();
        if n + extra <= self.slots.capacity().min(self.tfs.capacity()) {
            return;
        }
        let slack = if n < SMALL { n.max(4) } else { n / 8 };
        let more = extra.max(slack);
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

    /// Applies `edits` to the list in place: each `(slot, Some(tf))` puts
    /// the slot's posting in (replacing the one it has), each
    /// `(slot, None)` takes it out. `edits` are in slot order, each slot
    /// once. `counted(slot, change)` hears of each posting added (+1) or
    /// removed (-1). Many documents changed at once cost one pass over the
    /// list rather than a shift of it per document, and the list keeps its
    /// buffer (growing it as [`Postings::grow`] does): a copy per merge
    /// would leave each common word's old buffer behind as a hole the next,
    /// longer copy does not fit, and a long-lived reader's memory would
    /// climb with every batch of changes it is told of.
    pub fn merge(&mut self, edits: &[(u32, Option<f32>)], mut counted: impl FnMut(u32, i64)) {
        let added = self.take_out(edits, &mut counted);
        self.put_in(&added);
        self.wide
            .retain(|&(s, _)| edits.binary_search_by_key(&s, |&(e, _)| e).is_err());
        let wide = edits
            .iter()
            .filter_map(|&(s, tf)| tf.filter(|&tf| byte(tf) == WIDE).map(|tf| (s, tf)));
        let before = self.wide.len();
        self.wide.extend(wide);
        if self.wide.len() > before {
            self.wide.sort_unstable_by_key(|&(s, _)| s);
        }
    }

    /// The forward half of [`Postings::merge`]: removes and re-weighs the
    /// postings `edits` name, closing the gaps as it goes; the postings
    /// new to the list, in slot order.
    fn take_out(
        &mut self,
        edits: &[(u32, Option<f32>)],
        counted: &mut impl FnMut(u32, i64),
    ) -> Vec<(u32, f32)> {
        let n = self.slots.len();
        let mut added = vec![];
        // Postings kept so far (`..keep`), and the next one not looked at.
        let (mut keep, mut i) = (0, 0);
        for &(slot, tf) in edits {
            let end = i + self.slots[i..].partition_point(|&s| s < slot);
            self.shift(i..end, keep);
            keep += end - i;
            i = end;
            let had = self.slots.get(i) == Some(&slot);
            match (had, tf) {
                (true, Some(tf)) => {
                    self.slots[keep] = slot;
                    self.tfs[keep] = byte(tf);
                    keep += 1;
                    i += 1;
                }
                (true, None) => {
                    counted(slot, -1);
                    i += 1;
                }
                (false, Some(tf)) => {
                    counted(slot, 1);
                    added.push((slot, tf));
                }
                (false, None) => {}
            }
        }
        self.shift(i..n, keep);
        keep += n - i;
        self.slots.truncate(keep);
        self.tfs.truncate(keep);
        added
    }

    /// Moves the postings `run` down to start at `to` (`to <= run.start`).
    fn shift(&mut self, run: std::ops::Range<usize>, to: usize) {
        if to != run.start {
            self.slots.copy_within(run.clone(), to);
            self.tfs.copy_within(run, to);
        }
    }

    /// The backward half of [`Postings::merge`]: merges `added` (in slot
    /// order, none in the list) in from the end, each kept posting moving
    /// once.
    fn put_in(&mut self, added: &[(u32, f32)]) {
        if added.is_empty() {
            return;
        }
        let len = self.slots.len();
        let total = len + added.len();
        self.make_room(added.len());
        self.slots.resize(total, 0);
        self.tfs.resize(total, 0);
        // The kept postings not moved yet are `..read`; the next free
        // place from the end is `write - 1`.
        let (mut read, mut write) = (len, total);
        for &(slot, tf) in added.iter().rev() {
            let at = self.slots[..read].partition_point(|&s| s < slot);
            let run = read - at;
            self.slots.copy_within(at..read, write - run);
            self.tfs.copy_within(at..read, write - run);
            write -= run + 1;
            read = at;
            self.slots[write] = slot;
            self.tfs[write] = byte(tf);
        }
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

    proptest::proptest! {
        #[test]
        fn merging_matches_one_by_one_edits_anywhere_in_the_list(
            held in proptest::collection::btree_map(0u32..400, 0u8..6, 0..120),
            edits in proptest::collection::btree_map(0u32..420, proptest::option::of(0u8..6), 0..80),
        ) {
            // A tf of 0 stands for one that is not a whole number (kept wide).
            let tf = |b: u8| if b == 0 { 0.25 } else { f32::from(b) };
            let pairs: Vec<(u32, f32)> = held.iter().map(|(&s, &b)| (s, tf(b))).collect();
            let edits: Vec<(u32, Option<f32>)> =
                edits.iter().map(|(&s, b)| (s, b.map(tf))).collect();
            let mut merged = Postings::from_pairs(pairs.clone());
            let mut counted = vec![];
            merged.merge(&edits, |s, by| counted.push((s, by)));
            let mut one = Postings::from_pairs(pairs);
            let mut expected = vec![];
            for &(s, tf) in &edits {
                let changed = match tf {
                    Some(tf) => one.put(s, tf).then_some((s, 1)),
                    None => one.remove(s).then_some((s, -1)),
                };
                expected.extend(changed);
            }
            proptest::prop_assert_eq!(merged.iter().collect::<Vec<_>>(), one.iter().collect::<Vec<_>>());
            proptest::prop_assert_eq!(&merged.wide, &one.wide);
            proptest::prop_assert_eq!(counted, expected);
        }
    }

    #[test]
    fn merging_keeps_the_buffer_while_it_has_room() {
        let mut list = Postings::from_pairs((0..4_000).map(|s| (s * 2, 1.0)).collect());
        list.make_room(100);
        let at = list.slots.as_ptr();
        let edits: Vec<(u32, Option<f32>)> = (0..50).map(|s| (s * 62 + 1, Some(2.0))).collect();
        list.merge(&edits, |_, _| {});
        assert_eq!(list.slots.as_ptr(), at);
        assert_eq!(list.len(), 4_050);
        assert!(list.slots.is_sorted());
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
