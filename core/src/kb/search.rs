//! Full-text search over the knowledge manifest: a tokenizer, weighted
//! per-document terms, an Okapi BM25 index keyed by caller-chosen `u32`
//! slots, one-hop link expansion and the "best window" finder used to pick
//! a read position inside a document.
//!
//! Everything here is deterministic: equal scores break on the document id,
//! and scores are accumulated in query-term order.

mod maxscore;

pub use super::analyze::{query_terms, tokenize, tokens};
use super::postings::Postings;
use rustc_hash::{FxHashMap, FxHashSet};

/// Weight of a token of the names text (see [`doc_terms`]).
pub const NAME_WEIGHT: f32 = 4.0;
/// Weight of a token of the fields text (see [`doc_terms`]).
pub const FIELD_WEIGHT: f32 = 2.0;
/// BM25 term-frequency saturation.
pub const K1: f64 = 1.2;
/// BM25 length normalisation.
pub const B: f64 = 0.75;
/// Default number of results.
pub const DEFAULT_K: usize = 8;
/// Largest number of results a caller may ask for.
pub const MAX_K: usize = 50;
/// Width, in UTF-16 code units, of the window chosen by [`best_window_start`].
pub const FIND_WINDOW: usize = 2000;

// ---------------------------------------------------------------------------
// Per-document terms
// ---------------------------------------------------------------------------

/// The weighted terms of one document, as fed to [`Index::insert`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct DocTerms {
    /// Weighted length: body tokens + 2 × field tokens + 4 × name tokens.
    pub len: f32,
    /// `(term, weighted frequency)`, sorted by term, unique.
    pub terms: Vec<(String, f32)>,
}

/// Weighted terms of a document from its names, fields and body texts
/// (see [`super::analyze`]).
pub fn doc_terms(names: &str, fields: &str, body: &str) -> DocTerms {
    let mut tf: FxHashMap<String, f32> = FxHashMap::default();
    let mut len = 0f32;
    let mut counts = FxHashMap::default();
    for (text, weight) in [(names, NAME_WEIGHT), (fields, FIELD_WEIGHT), (body, 1.0)] {
        counts.clear();
        len += weight * super::analyze::term_counts(text, &mut counts) as f32;
        for (t, n) in counts.drain() {
            *tf.entry(t).or_insert(0.0) += weight * n as f32;
        }
    }
    let mut terms: Vec<(String, f32)> = tf.into_iter().collect();
    terms.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    DocTerms { len, terms }
}

impl DocTerms {
    /// Compact binary form: `len` f32 LE, term count u32 LE, then per term
    /// its UTF-8 byte length u32 LE, the bytes and its frequency f32 LE.
    pub fn encode(&self) -> Vec<u8> {
        let size = 8 + self.terms.iter().map(|(t, _)| 8 + t.len()).sum::<usize>();
        let mut out = Vec::with_capacity(size);
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&(self.terms.len() as u32).to_le_bytes());
        for (term, tf) in &self.terms {
            out.extend_from_slice(&(term.len() as u32).to_le_bytes());
            out.extend_from_slice(term.as_bytes());
            out.extend_from_slice(&tf.to_le_bytes());
        }
        out
    }

    /// Parses [`DocTerms::encode`] output; `None` for anything malformed
    /// (truncated, trailing bytes, invalid UTF-8, unsorted or repeated terms).
    pub fn decode(bytes: &[u8]) -> Option<DocTerms> {
        let mut r = Reader(bytes);
        let len = f32::from_le_bytes(r.take4()?);
        let count = u32::from_le_bytes(r.take4()?) as usize;
        // Every term needs at least 8 bytes: refuse counts the input cannot
        // hold before reserving memory for them.
        if count > r.0.len() / 8 {
            return None;
        }
        let mut terms: Vec<(String, f32)> = Vec::with_capacity(count);
        for _ in 0..count {
            let n = u32::from_le_bytes(r.take4()?) as usize;
            let term = std::str::from_utf8(r.take(n)?).ok()?;
            let tf = f32::from_le_bytes(r.take4()?);
            if terms.last().is_some_and(|(prev, _)| prev.as_str() >= term) {
                return None;
            }
            terms.push((term.to_owned(), tf));
        }
        r.0.is_empty().then_some(DocTerms { len, terms })
    }
}

/// A bounds-checked cursor over a byte slice.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if n > self.0.len() {
            return None;
        }
        let (head, tail) = self.0.split_at(n);
        self.0 = tail;
        Some(head)
    }

    fn take4(&mut self) -> Option<[u8; 4]> {
        self.take(4)?.try_into().ok()
    }
}

// ---------------------------------------------------------------------------
// BM25 index
// ---------------------------------------------------------------------------

/// An Okapi BM25 index over documents identified by caller-chosen slots.
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Whether every term of every document is held (see [`Index::new`]).
    complete: bool,
    /// term → postings `(slot, tf)`, in slot order: a document's posting
    /// is found by binary search, so taking a changed document out costs
    /// a few probes per term however long the lists grow.
    postings: FxHashMap<Box<str>, Postings>,
    /// Postings of each slot in the loaded lists, so that taking a
    /// document out by its terms can tell whether it left none behind.
    held: Vec<u32>,
    /// Weighted length per slot (meaningful where `present`).
    lens: Vec<f32>,
    /// Whether a document occupies the slot.
    present: Vec<bool>,
    /// Number of documents.
    n: usize,
    /// Sum of the lengths of all documents.
    total_len: f64,
}

impl Index {
    /// An empty index. `complete = true`: the index holds every term of
    /// every document. `complete = false`: a cache in front of an external
    /// posting store holding only terms loaded with [`Index::load_term`];
    /// insert/remove then only touch loaded terms and every query term must
    /// be loaded before ranking (see [`Index::missing_terms`]).
    pub fn new(complete: bool) -> Index {
        Index {
            complete,
            ..Index::default()
        }
    }

    /// The same documents and lengths with no postings loaded, as a cache
    /// in front of a posting store (`complete = false`): what a model that
    /// commits, and never searches, keeps beside one that reads.
    pub fn lengths_only(&self) -> Index {
        Index {
            complete: false,
            postings: FxHashMap::default(),
            held: vec![],
            lens: self.lens.clone(),
            present: self.present.clone(),
            n: self.n,
            total_len: self.total_len,
        }
    }

    /// Adds a document (when replacing, remove the old version first).
    pub fn insert(&mut self, slot: u32, doc: &DocTerms) {
        self.set_doc_len(slot, doc.len);
        self.put_terms(slot, doc);
    }

    /// Puts `slot`'s posting of each of `doc`'s terms into the lists (a
    /// cache: the loaded ones); how many lists hold it now.
    fn put_terms(&mut self, slot: u32, doc: &DocTerms) -> u32 {
        let mut listed = 0;
        for (term, tf) in &doc.terms {
            let added = if let Some(list) = self.postings.get_mut(term.as_str()) {
                list.put(slot, *tf)
            } else if self.complete {
                let mut list = Postings::default();
                list.put(slot, *tf);
                self.postings.insert(term.as_str().into(), list);
                true
            } else {
                continue;
            };
            listed += 1;
            if added {
                self.count(slot, 1);
            }
        }
        listed
    }

    /// Adds `by` to the postings counted for `slot`.
    fn count(&mut self, slot: u32, by: i64) {
        let i = slot as usize;
        if i >= self.held.len() {
            self.held.resize(i + 1, 0);
        }
        self.held[i] = (i64::from(self.held[i]) + by).max(0) as u32;
    }

    /// Takes `slot`'s postings out of the lists of `doc`'s terms (what it
    /// was indexed with), leaving its stats; true when none of its postings
    /// is left in any list. A few binary searches per term, where
    /// [`Index::drop_postings_of`] probes every list.
    pub fn remove_postings(&mut self, slot: u32, doc: &DocTerms) -> bool {
        self.take_out(slot, doc.terms.iter().map(|(t, _)| t.as_str()));
        self.held.get(slot as usize).is_none_or(|&n| n == 0)
    }

    /// Takes `slot`'s posting out of the lists of `terms`.
    fn take_out<'a>(&mut self, slot: u32, terms: impl Iterator<Item = &'a str>) {
        let mut removed = 0i64;
        for term in terms {
            let Some(list) = self.postings.get_mut(term) else {
                continue;
            };
            if list.remove(slot) {
                removed += 1;
            }
            // A cache keeps the empty list: the term is loaded and known
            // to have no postings.
            if list.is_empty() && self.complete {
                self.postings.remove(term);
            }
        }
        self.count(slot, -removed);
    }

    /// Moves `slot`'s postings from `old` (the terms it was indexed with)
    /// to `new` (`None`: it is gone), leaving its stats: a term in both
    /// keeps its place and
    /// takes the new tf, so a rewritten document costs no shifting of the
    /// long lists of the common words it still holds. False when postings
    /// of `slot` outside `old` were left behind (then drop them with
    /// [`Index::drop_postings_of`] and insert `new` again).
    pub fn repost(&mut self, slot: u32, old: &DocTerms, new: Option<&DocTerms>) -> bool {
        self.take_out(slot, gone_terms(old, new));
        let listed = new.map_or(0, |d| self.put_terms(slot, d));
        self.held.get(slot as usize).copied().unwrap_or(0) == listed
    }

    /// [`Index::repost`] of many documents at once, `(slot, old, new)`
    /// with `new` `None` for a document gone: each list they touch is
    /// copied once with all their changes, where moving them one by one
    /// would shift a common word's long list once per document. The slots
    /// (sorted) that left postings behind outside their `old` terms.
    pub fn repost_many(&mut self, docs: &[(u32, &DocTerms, Option<&DocTerms>)]) -> Vec<u32> {
        if docs.len() <= REPOSTED_ONE_BY_ONE {
            let mut left: Vec<u32> = docs
                .iter()
                .filter(|&&(slot, old, new)| !self.repost(slot, old, new))
                .map(|&(slot, _, _)| slot)
                .collect();
            left.sort_unstable();
            return left;
        }
        let mut edits: FxHashMap<&str, Vec<(u32, Option<f32>)>> = FxHashMap::default();
        for &(slot, old, new) in docs {
            for t in gone_terms(old, new) {
                edits.entry(t).or_default().push((slot, None));
            }
            for (t, tf) in new.map_or(&[][..], |d| d.terms.as_slice()) {
                edits.entry(t.as_str()).or_default().push((slot, Some(*tf)));
            }
        }
        let mut counts: Vec<(u32, i64)> = Vec::new();
        for (term, mut list_edits) in edits {
            list_edits.sort_unstable_by_key(|&(s, _)| s);
            let counted = |slot, by| counts.push((slot, by));
            match self.postings.get_mut(term) {
                Some(list) => {
                    list.merge(&list_edits, counted);
                    if list.is_empty() && self.complete {
                        self.postings.remove(term);
                    }
                }
                None if self.complete => {
                    let mut list = Postings::default();
                    list.merge(&list_edits, counted);
                    if !list.is_empty() {
                        self.postings.insert(term.into(), list);
                    }
                }
                None => {}
            }
        }
        for (slot, by) in counts {
            self.count(slot, by);
        }
        let mut left: Vec<u32> = docs
            .iter()
            .filter(|(slot, _, new)| {
                let listed = new.map_or(0, |d| {
                    d.terms
                        .iter()
                        .filter(|(t, _)| self.postings.contains_key(t.as_str()))
                        .count()
                });
                self.held.get(*slot as usize).copied().unwrap_or(0) as usize != listed
            })
            .map(|(slot, _, _)| *slot)
            .collect();
        left.sort_unstable();
        left
    }

    /// Removes a document's postings and stats; `doc` is what it was
    /// inserted with.
    pub fn remove(&mut self, slot: u32, doc: &DocTerms) {
        self.remove_postings(slot, doc);
        self.forget(slot);
    }

    /// Registers (or updates) a document's length without its postings, for
    /// `complete = false` where the store loads every length at open.
    pub fn set_doc_len(&mut self, slot: u32, len: f32) {
        let i = slot as usize;
        if i >= self.lens.len() {
            self.lens.resize(i + 1, 0.0);
            self.present.resize(i + 1, false);
        }
        if self.present[i] {
            self.total_len -= f64::from(self.lens[i]);
        } else {
            self.present[i] = true;
            self.n += 1;
        }
        self.lens[i] = len;
        self.total_len += f64::from(len);
    }

    /// Drops a document's stats without its postings (a cache whose
    /// posting store changed underneath; see [`Index::clear_terms`]).
    pub fn forget(&mut self, slot: u32) {
        let i = slot as usize;
        if self.present.get(i).copied().unwrap_or(false) {
            self.present[i] = false;
            self.n -= 1;
            self.total_len -= f64::from(self.lens[i]);
            self.lens[i] = 0.0;
            if self.n == 0 {
                self.total_len = 0.0; // no rounding residue
            }
        }
    }

    /// Drops every term: the index becomes a cache (`complete = false`)
    /// whose terms are loaded again from the store as queries need them.
    pub fn clear_terms(&mut self) {
        self.postings.clear();
        self.held.clear();
        self.complete = false;
    }

    /// Marks a cache into which every term of the store was loaded as
    /// complete: a word it lacks has no postings (no query waits for the
    /// store to say so), and a document patched in starts the lists of its
    /// new words.
    pub fn hold_every_term(&mut self) {
        self.complete = true;
    }

    /// Drops the postings of `slots` (sorted) from every loaded term, so
    /// a cache can take their new versions with [`Index::insert`] instead
    /// of loading every term again.
    pub fn drop_postings_of(&mut self, slots: &[u32]) {
        if slots.is_empty() {
            return;
        }
        // A few documents: probe each list for each; many: one pass over
        // each list.
        if slots.len() <= PROBED_SLOTS {
            for list in self.postings.values_mut() {
                for &slot in slots {
                    list.remove(slot);
                }
            }
        } else {
            for list in self.postings.values_mut() {
                list.retain(|s| slots.binary_search(&s).is_err());
            }
        }
        for &slot in slots {
            if let Some(n) = self.held.get_mut(slot as usize) {
                *n = 0;
            }
        }
    }

    /// Query terms (tokenized, de-duplicated) not loaded yet; always empty
    /// for a complete index.
    pub fn missing_terms(&self, query: &str) -> Vec<String> {
        if self.complete {
            return Vec::new();
        }
        let mut terms = query_terms(query);
        terms.retain(|t| !self.postings.contains_key(t.as_str()));
        terms
    }

    /// Loads (replaces) a term's postings `(slot, tf)` from the external
    /// store.
    pub fn load_term(&mut self, term: &str, postings: Vec<(u32, f32)>) {
        self.hold_term(term, Postings::from_pairs(postings));
    }

    /// [`Index::load_term`] for postings already in their compact form.
    pub fn hold_term(&mut self, term: &str, postings: Postings) {
        for &slot in postings.slots() {
            self.count(slot, 1);
        }
        if let Some(old) = self.postings.insert(term.into(), postings) {
            for &slot in old.slots() {
                self.count(slot, -1);
            }
        }
    }

    /// Postings held in memory, over every loaded term.
    pub fn loaded_postings(&self) -> usize {
        self.postings.values().map(Postings::len).sum()
    }

    /// Number of documents.
    pub fn docs(&self) -> usize {
        self.n
    }

    /// BM25's length norm k1(1 − b + b·len/avg) as `c0 + c1·len`, so that a
    /// posting's score needs a single division.
    fn norm_parts(&self) -> (f64, f64) {
        let avg = if self.n == 0 {
            0.0
        } else {
            self.total_len / self.n as f64
        };
        if avg > 0.0 {
            (K1 * (1.0 - B), K1 * B / avg)
        } else {
            (K1, 0.0)
        }
    }

    /// The inverse document frequency of a term held by `df` documents.
    fn idf(&self, df: usize) -> f64 {
        let (n, df) = (self.n as f64, df as f64);
        (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
    }

    /// Why `slot` scores what it does for `query`: one part per query term
    /// the document holds, with the term's idf, the document's weighted
    /// frequency of it and that part of the BM25 score, split over the
    /// fields in proportion to each field's weighted count. `fields` are
    /// the document's names, fields and body texts (see [`doc_terms`]);
    /// the parts add up to the score [`Index::rank`] gives.
    pub fn explain(&self, query: &str, slot: u32, fields: [&str; 3]) -> Vec<TermPart> {
        let Some(&len) = self.lens.get(slot as usize) else {
            return Vec::new();
        };
        if self.n == 0 {
            return Vec::new();
        }
        let (c0, c1) = self.norm_parts();
        let norm = c0 + c1 * f64::from(len);
        let mut counts: [FxHashMap<String, u32>; 3] = Default::default();
        for (text, c) in fields.iter().zip(counts.iter_mut()) {
            super::analyze::term_counts(text, c);
        }
        let mut out = Vec::new();
        for term in query_terms(query) {
            let Some(list) = self.postings.get(term.as_str()).filter(|l| !l.is_empty()) else {
                continue;
            };
            let Some(tf) = list.tf_of(slot) else {
                continue;
            };
            let idf = self.idf(list.len());
            let score = bm25(idf, tf, norm);
            let weighted: Vec<f64> = [NAME_WEIGHT, FIELD_WEIGHT, 1.0]
                .iter()
                .zip(&counts)
                .map(|(w, c)| f64::from(*w) * f64::from(c.get(&term).copied().unwrap_or(0)))
                .collect();
            let total: f64 = weighted.iter().sum();
            let share = |i: usize| {
                if total > 0.0 {
                    score * weighted[i] / total
                } else {
                    0.0
                }
            };
            out.push(TermPart {
                fields: [share(0), share(1), share(2)],
                term,
                idf,
                tf,
                score,
            });
        }
        out
    }

    /// The top `k` documents for `query` by BM25 as `(slot, score)`, in rank
    /// order (score descending, then `id_of` ascending). `keep` filters
    /// documents before the cut to `k`.
    pub fn rank<'a>(
        &self,
        query: &str,
        k: usize,
        keep: &dyn Fn(u32) -> bool,
        id_of: &dyn Fn(u32) -> &'a str,
    ) -> Vec<(u32, f64)> {
        self.rank_terms(&query_terms(query), k, keep, id_of)
    }

    /// [`Index::rank`] for a query's terms (see [`query_terms`]).
    pub fn rank_terms<'a>(
        &self,
        terms: &[String],
        k: usize,
        keep: &dyn Fn(u32) -> bool,
        id_of: &dyn Fn(u32) -> &'a str,
    ) -> Vec<(u32, f64)> {
        self.rank_scoring(terms, k, keep, id_of).0
    }

    /// [`Index::rank_terms`], and how many documents it scored in full.
    fn rank_scoring<'a>(
        &self,
        terms: &[String],
        k: usize,
        keep: &dyn Fn(u32) -> bool,
        id_of: &dyn Fn(u32) -> &'a str,
    ) -> (Vec<(u32, f64)>, usize) {
        self.rank_choosing(terms, k, keep, id_of, maxscore::dense)
    }

    /// [`Index::rank_scoring`], ranking with one array of scores where
    /// `dense(lists, slots)` says so and by MaxScore otherwise.
    fn rank_choosing<'a>(
        &self,
        terms: &[String],
        k: usize,
        keep: &dyn Fn(u32) -> bool,
        id_of: &dyn Fn(u32) -> &'a str,
        dense: fn(&[&Postings], usize) -> bool,
    ) -> (Vec<(u32, f64)>, usize) {
        if k == 0 || self.n == 0 {
            return (Vec::new(), 0);
        }
        let lists: Vec<&Postings> = terms
            .iter()
            .filter_map(|t| self.postings.get(t.as_str()))
            .filter(|l| !l.is_empty())
            .collect();
        if lists.is_empty() {
            return (Vec::new(), 0);
        }
        let (c0, c1) = self.norm_parts();
        let idfs: Vec<f64> = lists.iter().map(|l| self.idf(l.len())).collect();
        let mut top = TopK::new(k, keep, id_of);
        let lens = maxscore::Lengths {
            of: &self.lens,
            present: &self.present,
            norm: (c0, c1),
        };
        let scored = if dense(&lists, self.lens.len()) {
            maxscore::rank_dense(&lists, &idfs, &lens, &mut top)
        } else {
            maxscore::rank(&lists, &idfs, &lens, &mut top)
        };
        (top.finish(), scored)
    }
}

/// Most documents [`Index::repost_many`] moves one by one; past it, each
/// list they touch is copied once with all their changes.
const REPOSTED_ONE_BY_ONE: usize = 8;

/// The terms of `old` that `new` (`None`: nothing) does not hold; both
/// sorted by term.
fn gone_terms<'a>(old: &'a DocTerms, new: Option<&'a DocTerms>) -> impl Iterator<Item = &'a str> {
    let new_terms = new.map_or(&[][..], |d| d.terms.as_slice());
    old.terms.iter().map(|(t, _)| t.as_str()).filter(move |t| {
        new_terms
            .binary_search_by(|(n, _)| n.as_str().cmp(t))
            .is_err()
    })
}

/// Slots [`Index::drop_postings_of`] finds by binary search in each list
/// rather than by a pass over every posting.
const PROBED_SLOTS: usize = 16;

/// A posting's BM25 score: idf·tf(k1+1) / (tf + norm).
fn bm25(idf: f64, tf: f32, norm: f64) -> f64 {
    let tf = f64::from(tf);
    idf * (K1 + 1.0) * tf / (tf + norm)
}

/// One query term's part of a document's score (see [`Index::explain`]).
#[derive(Clone, Debug, PartialEq)]
pub struct TermPart {
    /// The term (a stem).
    pub term: String,
    /// Its inverse document frequency.
    pub idf: f64,
    /// The document's weighted frequency of it.
    pub tf: f32,
    /// Its part of the score.
    pub score: f64,
    /// That part split over names, fields and body.
    pub fields: [f64; 3],
}

/// Largest `k` kept by sorted insertion; above it candidates are collected
/// and selected at the end.
const BOUNDED_K: usize = 64;

/// A ranked candidate: slot, score and id.
type Ranked<'a> = (u32, f64, &'a str);

/// Rank order: score descending, id ascending, slot ascending.
fn rank_order(a: &Ranked<'_>, b: &Ranked<'_>) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1)
        .then_with(|| a.2.cmp(b.2))
        .then(a.0.cmp(&b.0))
}

/// Top-k selection in rank order. `keep` is consulted only for candidates
/// that would enter the current top k, which is equivalent to filtering
/// first.
struct TopK<'f, 'a> {
    k: usize,
    keep: &'f dyn Fn(u32) -> bool,
    id_of: &'f dyn Fn(u32) -> &'a str,
    /// Sorted best-first when `k <= BOUNDED_K`, unordered otherwise.
    items: Vec<Ranked<'a>>,
    /// Scores below this cannot enter (the k-th score once full).
    floor: f64,
}

impl<'f, 'a> TopK<'f, 'a> {
    fn new(k: usize, keep: &'f dyn Fn(u32) -> bool, id_of: &'f dyn Fn(u32) -> &'a str) -> Self {
        let cap = if k <= BOUNDED_K { k + 1 } else { 0 };
        TopK {
            k,
            keep,
            id_of,
            items: Vec::with_capacity(cap),
            floor: 0.0,
        }
    }

    /// Offers a candidate; callers skip scores below `floor` beforehand.
    fn offer(&mut self, slot: u32, score: f64) {
        let cand = (slot, score, (self.id_of)(slot));
        if self.k > BOUNDED_K {
            if (self.keep)(slot) {
                self.items.push(cand);
            }
            return;
        }
        if self.items.len() == self.k
            && self
                .items
                .last()
                .is_some_and(|worst| rank_order(&cand, worst).is_ge())
        {
            return;
        }
        if !(self.keep)(slot) {
            return;
        }
        let at = self.items.partition_point(|x| rank_order(x, &cand).is_lt());
        self.items.insert(at, cand);
        self.items.truncate(self.k);
        if self.items.len() == self.k {
            self.floor = self.items[self.k - 1].1;
        }
    }

    fn finish(self) -> Vec<(u32, f64)> {
        let mut items = self.items;
        if self.k > BOUNDED_K {
            if items.len() > self.k {
                items.select_nth_unstable_by(self.k - 1, rank_order);
                items.truncate(self.k);
            }
            items.sort_unstable_by(rank_order);
        }
        items.into_iter().map(|(slot, s, _)| (slot, s)).collect()
    }
}

// ---------------------------------------------------------------------------
// One-hop expansion
// ---------------------------------------------------------------------------

/// Documents linked from the direct hits (in rank order), excluding direct
/// hits and documents failing `keep`: most distinct pointing hits first,
/// then the rank of the first hit pointing at it, then id; at most `k`.
pub fn expand<'a>(
    direct: &[u32],
    links_of: &dyn Fn(u32) -> Vec<u32>,
    keep: &dyn Fn(u32) -> bool,
    k: usize,
    id_of: &dyn Fn(u32) -> &'a str,
) -> Vec<u32> {
    /// A linked candidate: pointing-hit count, first and last pointing rank.
    struct Cand {
        slot: u32,
        count: u32,
        first: usize,
        last: usize,
    }
    const REJECTED: usize = usize::MAX;
    if k == 0 {
        return Vec::new();
    }
    let direct_set: FxHashSet<u32> = direct.iter().copied().collect();
    let mut cands: Vec<Cand> = Vec::new();
    // slot → index in `cands`, or REJECTED when `keep` said no.
    let mut seen: FxHashMap<u32, usize> = FxHashMap::default();
    for (rank, &hit) in direct.iter().enumerate() {
        for target in links_of(hit) {
            if direct_set.contains(&target) {
                continue;
            }
            match seen.get(&target) {
                Some(&REJECTED) => {}
                Some(&i) => {
                    let c = &mut cands[i];
                    if c.last != rank {
                        c.count += 1;
                        c.last = rank;
                    }
                }
                None if keep(target) => {
                    seen.insert(target, cands.len());
                    cands.push(Cand {
                        slot: target,
                        count: 1,
                        first: rank,
                        last: rank,
                    });
                }
                None => {
                    seen.insert(target, REJECTED);
                }
            }
        }
    }
    cands.sort_unstable_by(|a, b| {
        b.count
            .cmp(&a.count)
            .then(a.first.cmp(&b.first))
            .then_with(|| id_of(a.slot).cmp(id_of(b.slot)))
            .then(a.slot.cmp(&b.slot))
    });
    cands.into_iter().take(k).map(|c| c.slot).collect()
}

// ---------------------------------------------------------------------------
// Best window ("pos")
// ---------------------------------------------------------------------------

/// Length of `s` in UTF-16 code units.
fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
}

/// A query's terms, ready to be found in texts: each with the start a word
/// must have to stem to it (all but its last character: a stem keeps its
/// word's start but for the last letter, bar a handful of irregular words
/// such as "dying", which only move `pos`), and the stems of the words
/// already met.
pub struct Query {
    terms: Vec<String>,
    heads: Vec<String>,
    memo: std::cell::RefCell<FxHashMap<String, Option<usize>>>,
}

impl Query {
    /// The terms of `query` (see [`query_terms`]).
    pub fn new(query: &str) -> Query {
        let terms = query_terms(query);
        let heads = terms
            .iter()
            .map(|t| {
                let keep = t.char_indices().last().map_or(0, |(i, _)| i).max(1);
                t.get(..keep).unwrap_or(t).to_owned()
            })
            .collect();
        Query {
            terms,
            heads,
            memo: Default::default(),
        }
    }

    /// The terms, in query order.
    pub fn terms(&self) -> &[String] {
        &self.terms
    }

    /// The index of the term `word` (folded) stems to, if any.
    fn term_of(&self, word: &str) -> Option<usize> {
        if let Some(hit) = self.memo.borrow().get(word) {
            return *hit;
        }
        let hit = if self.heads.iter().any(|h| word.starts_with(h.as_str())) {
            let st = super::analyze::stem(word);
            self.terms.iter().position(|q| *q == st)
        } else {
            None
        };
        self.memo.borrow_mut().insert(word.to_owned(), hit);
        hit
    }

    /// Occurrences of the terms in `text` as (UTF-16 start, UTF-16 end,
    /// term index), in text order: the alphanumeric runs of the text that,
    /// folded and stemmed like the index's tokens, are one of the terms.
    /// ASCII text is lowercased once and searched for each term's start.
    fn occurrences(&self, text: &str) -> Vec<(usize, usize, usize)> {
        let mut occ = Vec::new();
        if text.is_ascii() {
            let lowered = text.to_ascii_lowercase();
            let bytes = lowered.as_bytes();
            for head in &self.heads {
                let finder = memchr::memmem::Finder::new(head.as_bytes());
                for at in finder.find_iter(bytes) {
                    if at > 0 && bytes[at - 1].is_ascii_alphanumeric() {
                        continue;
                    }
                    let len = bytes[at..]
                        .iter()
                        .position(|b| !b.is_ascii_alphanumeric())
                        .unwrap_or(bytes.len() - at);
                    if let Some(ti) = self.term_of(&lowered[at..at + len]) {
                        occ.push((at, at + len, ti));
                    }
                }
            }
            // A word found through two heads counts once.
            occ.sort_unstable();
            occ.dedup();
            return occ;
        }
        let mut toks = Vec::with_capacity(1);
        let (mut unit, mut run) = (0usize, None::<(usize, usize)>);
        for (i, c) in text
            .char_indices()
            .chain(std::iter::once((text.len(), ' ')))
        {
            let alnum = i < text.len() && c.is_alphanumeric();
            match (alnum, run) {
                (true, None) => run = Some((i, unit)),
                (false, Some((st, st_unit))) => {
                    run = None;
                    toks.clear();
                    super::analyze::tokenize(&text[st..i], &mut toks);
                    if let [t] = toks.as_slice() {
                        if let Some(ti) = self.term_of(t) {
                            occ.push((st_unit, unit, ti));
                        }
                    }
                }
                _ => {}
            }
            unit += c.len_utf16();
        }
        occ
    }
}

/// Start offset (UTF-16 code units) of the [`FIND_WINDOW`]-wide window of
/// `text` that best covers the query's terms: the cluster of occurrences
/// (whole words, compared as the index compares them: folded and stemmed)
/// with the most distinct terms (earliest on ties), centred and clamped to
/// the text. `None` when no query term occurs.
pub fn best_window_start(text: &str, query: &str) -> Option<usize> {
    Query::new(query).window_start(text)
}

impl Query {
    /// [`best_window_start`] of these terms.
    pub fn window_start(&self, text: &str) -> Option<usize> {
        const W: usize = FIND_WINDOW;
        if text.is_empty() || self.terms.is_empty() {
            return None;
        }
        let text_len = utf16_len(text);
        let occ = self.occurrences(text);
        if occ.is_empty() {
            return None;
        }

        // Two-pointer sweep: the window of anchor i holds occ[i..j].
        let mut counts = vec![0u32; self.terms.len()];
        let mut distinct = 0usize;
        let mut best: Option<(usize, usize, usize)> = None; // (distinct, start, end)
        let mut j = 0;
        for i in 0..occ.len() {
            j = j.max(i);
            let limit = occ[i].0 + W;
            while j < occ.len() && occ[j].1 <= limit {
                let c = &mut counts[occ[j].2];
                if *c == 0 {
                    distinct += 1;
                }
                *c += 1;
                j += 1;
            }
            if j > i {
                if best.is_none_or(|b| distinct > b.0) {
                    best = Some((distinct, occ[i].0, occ[j - 1].1));
                }
                let c = &mut counts[occ[i].2];
                *c -= 1;
                if *c == 0 {
                    distinct -= 1;
                }
            }
        }
        // Only occurrences wider than the window: fall back to the first one.
        let (start, end) = best.map_or((occ[0].0, occ[0].1), |b| (b.1, b.2));
        let slack = W.saturating_sub(end - start) / 2;
        Some(start.saturating_sub(slack).min(text_len.saturating_sub(W)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Deterministic xorshift generator.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    fn all(_: u32) -> bool {
        true
    }

    /// Builds a complete index from `(names, fields, body)` docs on slots
    /// 0.., with ids `ids`.
    fn build(docs: &[(&str, &str, &str)]) -> Index {
        let mut ix = Index::new(true);
        for (i, (n, f, b)) in docs.iter().enumerate() {
            ix.insert(i as u32, &doc_terms(n, f, b));
        }
        ix
    }

    fn ranked(ix: &Index, ids: &[String], q: &str, k: usize) -> Vec<(u32, f64)> {
        ix.rank(q, k, &all, &|s| ids[s as usize].as_str())
    }

    fn slots(r: &[(u32, f64)]) -> Vec<u32> {
        r.iter().map(|x| x.0).collect()
    }

    fn seq_ids(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("d{i:04}")).collect()
    }

    #[test]
    fn accents_match_both_ways() {
        let ids = seq_ids(3);
        let ix = build(&[
            ("", "", "relatório de operacoes"),
            ("", "", "nothing here"),
            ("", "", "operações financeiras"),
        ]);
        let r = ranked(&ix, &ids, "operações", 8);
        assert_eq!(slots(&r).len(), 2);
        assert!(slots(&r).contains(&0) && slots(&r).contains(&2));
        let r = ranked(&ix, &ids, "OPERACOES", 8);
        assert_eq!(slots(&r).len(), 2);
        let r = ranked(&ix, &ids, "relatorio", 8);
        assert_eq!(slots(&r), [0]);
    }

    // -- doc terms ---------------------------------------------------------

    #[test]
    fn doc_terms_weights() {
        let d = doc_terms("Order Report", "order status", "the order was shipped");
        assert_eq!(d.len, 4.0 * 2.0 + 2.0 * 2.0 + 4.0);
        let get = |t: &str| d.terms.iter().find(|x| x.0 == t).map(|x| x.1);
        assert_eq!(get("order"), Some(4.0 + 2.0 + 1.0));
        assert_eq!(get("report"), Some(4.0));
        assert_eq!(get("status"), Some(2.0));
        // Stemmed: "shipped" is found as "ship".
        assert_eq!(get("ship"), Some(1.0));
        assert!(d.terms.windows(2).all(|w| w[0].0 < w[1].0));
    }

    #[test]
    fn doc_terms_roundtrip() {
        let d = doc_terms("Título", "a b", "売上高 and more text, more");
        let bytes = d.encode();
        assert_eq!(DocTerms::decode(&bytes), Some(d.clone()));
        let empty = DocTerms::default();
        assert_eq!(DocTerms::decode(&empty.encode()), Some(empty));
        // Every truncation fails, as do trailing bytes.
        for n in 0..bytes.len() {
            assert_eq!(DocTerms::decode(&bytes[..n]), None, "prefix {n}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert_eq!(DocTerms::decode(&longer), None);
    }

    #[test]
    fn decode_garbage_is_none() {
        // Huge count, huge term length, invalid UTF-8, unsorted terms.
        assert_eq!(DocTerms::decode(&[0, 0, 0, 0, 255, 255, 255, 255]), None);
        let mut b = vec![0u8; 8];
        b[4] = 1;
        b.extend_from_slice(&[255, 255, 255, 255, 0, 0, 0, 0]);
        assert_eq!(DocTerms::decode(&b), None);
        let mut b = vec![0u8; 8];
        b[4] = 1;
        b.extend_from_slice(&[1, 0, 0, 0, 0xff, 0, 0, 0, 0]);
        assert_eq!(DocTerms::decode(&b), None);
        let unsorted = DocTerms {
            len: 2.0,
            terms: vec![("b".into(), 1.0), ("a".into(), 1.0)],
        };
        assert_eq!(DocTerms::decode(&unsorted.encode()), None);
        // Random bytes never panic.
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for _ in 0..2000 {
            let n = rng.below(64) as usize;
            let mut v: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
            if n >= 8 && rng.below(2) == 0 {
                v[4..8].copy_from_slice(&(rng.below(4) as u32).to_le_bytes());
            }
            let _ = DocTerms::decode(&v);
        }
    }

    // -- BM25 --------------------------------------------------------------

    #[test]
    fn rarer_term_ranks_first() {
        let ids = seq_ids(6);
        let ix = build(&[
            ("", "", "common alpha"),
            ("", "", "rare beta"),
            ("", "", "common gamma"),
            ("", "", "common delta"),
            ("", "", "common epsilon"),
            ("", "", "zeta eta"),
        ]);
        let r = ranked(&ix, &ids, "common rare", 8);
        assert_eq!(r.len(), 5);
        assert_eq!(r[0].0, 1);
        assert!(r[0].1 > r[1].1);
    }

    #[test]
    fn shorter_document_wins() {
        let ids = seq_ids(3);
        let ix = build(&[
            ("", "", "alpha beta gamma delta epsilon"),
            ("", "", "alpha beta"),
            ("", "", "other words"),
        ]);
        let r = ranked(&ix, &ids, "alpha", 8);
        assert_eq!(slots(&r), [1, 0]);
        assert!(r[0].1 > r[1].1);
    }

    #[test]
    fn tf_saturates() {
        let ids = seq_ids(3);
        let many = ["term"; 10].join(" ");
        let ix = build(&[
            ("", "", "term a b c d e f g h i"),
            ("", "", &many),
            ("", "", "unrelated"),
        ]);
        let r = ranked(&ix, &ids, "term", 8);
        assert_eq!(slots(&r), [1, 0]);
        assert!(r[0].1 < 3.0 * r[1].1, "{r:?}");
    }

    #[test]
    fn ties_break_by_id() {
        let ids: Vec<String> = vec!["zeta".into(), "alpha".into(), "mid".into()];
        let ix = build(&[
            ("", "", "same words"),
            ("", "", "same words"),
            ("", "", "same words"),
        ]);
        let r = ranked(&ix, &ids, "same", 8);
        assert_eq!(slots(&r), [1, 2, 0]);
        assert_eq!(r[0].1, r[2].1);
        assert_eq!(slots(&ranked(&ix, &ids, "same", 1)), [1]);
    }

    #[test]
    fn multi_term_scores_add() {
        // Small index: dense accumulator; with 200 fillers: hash map.
        for fillers in [0usize, 200] {
            let mut docs = vec![
                ("", "", "alpha beta"),
                ("", "", "alpha gamma"),
                ("", "", "beta gamma"),
            ];
            docs.extend(std::iter::repeat_n(("", "", "gamma delta"), fillers));
            let ids = seq_ids(docs.len());
            let ix = build(&docs);
            let r = ranked(&ix, &ids, "alpha beta", 8);
            assert_eq!(slots(&r), [0, 1, 2], "fillers={fillers}");
            assert!((r[0].1 - (r[1].1 + r[2].1)).abs() < 1e-12, "{r:?}");
        }
    }

    #[test]
    fn query_terms_are_deduplicated() {
        let ids = seq_ids(3);
        let ix = build(&[("", "", "alpha beta"), ("", "", "alpha"), ("", "", "beta")]);
        let once = ranked(&ix, &ids, "alpha beta", 8);
        assert_eq!(ranked(&ix, &ids, "alpha ALPHA beta alpha", 8), once);
    }

    #[test]
    fn empty_and_unknown() {
        let ids = seq_ids(2);
        let ix = Index::new(true);
        assert!(ranked(&ix, &ids, "x", 8).is_empty());
        let ix = build(&[("", "", "a b"), ("", "", "c")]);
        assert!(ranked(&ix, &ids, "nothing", 8).is_empty());
        assert!(ranked(&ix, &ids, "", 8).is_empty());
        assert!(ranked(&ix, &ids, "a", 0).is_empty());
        assert_eq!(ix.docs(), 2);
    }

    /// ~100 docs over a small vocabulary, many equal scores.
    fn random_docs(seed: u64, n: usize) -> Vec<DocTerms> {
        let vocab = [
            "alpha", "beta", "gamma", "delta", "eps", "zeta", "eta", "theta", "iota", "kappa",
        ];
        let mut rng = Rng(seed);
        (0..n)
            .map(|_| {
                let pick = |rng: &mut Rng, max: u64| {
                    let len = rng.below(max) as usize;
                    (0..len)
                        .map(|_| vocab[rng.below(vocab.len() as u64) as usize])
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                let names = pick(&mut rng, 2);
                let fields = pick(&mut rng, 3);
                let body = pick(&mut rng, 12);
                doc_terms(&names, &fields, &body)
            })
            .collect()
    }

    /// Documents of Zipf-distributed words (word `r` about `1/r` as often
    /// as the commonest), the shape of real prose.
    fn zipf_docs(seed: u64, n: usize, vocab: usize) -> Vec<DocTerms> {
        let mut rng = Rng(seed);
        let harmonic: f64 = (1..=vocab).map(|r| 1.0 / r as f64).sum();
        let word = move |rng: &mut Rng| {
            let mut u = rng.below(1 << 30) as f64 / f64::from(1u32 << 30) * harmonic;
            for r in 1..=vocab {
                u -= 1.0 / r as f64;
                if u <= 0.0 {
                    return format!("w{r}");
                }
            }
            format!("w{vocab}")
        };
        (0..n)
            .map(|_| {
                let len = 5 + rng.below(120) as usize;
                let body: Vec<String> = (0..len).map(|_| word(&mut rng)).collect();
                let name = word(&mut rng);
                doc_terms(&name, "", &body.join(" "))
            })
            .collect()
    }

    /// Every document holding a query term, scored by a full pass (each
    /// term's parts added in query order) and sorted in rank order.
    fn naive_rank<'a>(
        ix: &Index,
        q: &str,
        keep: &dyn Fn(u32) -> bool,
        id_of: &dyn Fn(u32) -> &'a str,
    ) -> Vec<(u32, f64)> {
        let (c0, c1) = ix.norm_parts();
        let mut acc: FxHashMap<u32, f64> = FxHashMap::default();
        for t in query_terms(q) {
            let Some(list) = ix.postings.get(t.as_str()).filter(|l| !l.is_empty()) else {
                continue;
            };
            let idf = ix.idf(list.len());
            for (slot, tf) in list.iter() {
                let len = ix.lens[slot as usize];
                *acc.entry(slot).or_insert(0.0) += bm25(idf, tf, c0 + c1 * f64::from(len));
            }
        }
        let mut all: Vec<(u32, f64, &str)> = acc
            .into_iter()
            .filter(|&(slot, s)| s > 0.0 && ix.present[slot as usize] && keep(slot))
            .map(|(slot, s)| (slot, s, id_of(slot)))
            .collect();
        all.sort_by(rank_order);
        all.into_iter().map(|(slot, s, _)| (slot, s)).collect()
    }

    #[test]
    fn skipping_common_terms_keeps_the_exact_top_k() {
        let docs = zipf_docs(7, 3000, 3000);
        let ids: Vec<String> = (0..docs.len())
            .map(|i| format!("d{:05}", (i * 7919) % 3000))
            .collect();
        let mut ix = Index::new(true);
        for (i, d) in docs.iter().enumerate() {
            ix.insert(i as u32, d);
        }
        let mut rng = Rng(11);
        let (mut asked, mut skipped) = (0, 0);
        for _ in 0..300 {
            let words = 2 + rng.below(7);
            // Mostly common words, with now and then a rare one.
            let q: Vec<String> = (0..words)
                .map(|_| {
                    let range = if rng.below(3) == 0 { 3000 } else { 40 };
                    format!("w{}", 1 + rng.below(range))
                })
                .collect();
            let q = q.join(" ");
            let odd = |s: u32| s % 2 == 1;
            let id_of = |s: u32| ids[s as usize].as_str();
            let terms = query_terms(&q);
            let maxscore = |_: &[&Postings], _: usize| false;
            let array = |_: &[&Postings], _: usize| true;
            for keep in [&all as &dyn Fn(u32) -> bool, &odd] {
                let full = naive_rank(&ix, &q, keep, &id_of);
                assert_eq!(ix.rank(&q, usize::MAX, keep, &id_of), full, "{q:?}");
                for k in [1, 3, 8, 20, 50] {
                    let want = &full[..k.min(full.len())];
                    // Bit-identical scores: the same sums in the same
                    // order, whichever way the documents are ranked.
                    assert_eq!(ix.rank(&q, k, keep, &id_of), want, "{q:?} k={k}");
                    for dense in [maxscore, array] {
                        let got = ix.rank_choosing(&terms, k, keep, &id_of, dense).0;
                        assert_eq!(got, want, "{q:?} k={k}");
                    }
                }
                // Documents holding any of the query's terms, and those
                // MaxScore scored in full for the top 8.
                let holding = ix
                    .rank_choosing(&terms, usize::MAX, keep, &id_of, maxscore)
                    .1;
                let scored = ix.rank_choosing(&terms, 8, keep, &id_of, maxscore).1;
                assert!(scored <= holding, "{q:?}");
                asked += 1;
                if scored < holding / 2 {
                    skipped += 1;
                }
            }
        }
        // The data must exercise the skipping, and not only it.
        assert!(
            skipped > asked / 4 && skipped < asked,
            "{skipped} of {asked}"
        );
    }

    #[test]
    fn bounded_top_k_equals_full_sort() {
        let docs = random_docs(42, 100);
        let ids: Vec<String> = (0..100)
            .map(|i| format!("d{:03}", (i * 37) % 100))
            .collect();
        let mut ix = Index::new(true);
        for (i, d) in docs.iter().enumerate() {
            ix.insert(i as u32, d);
        }
        let mut ties = 0;
        let mut cut_70 = false;
        for q in [
            "alpha",
            "beta gamma",
            "eta theta iota kappa",
            "zeta alpha zeta",
        ] {
            let full = ranked(&ix, &ids, q, usize::MAX);
            assert!(full.len() > 40, "{q}: {}", full.len());
            // k = 70 uses the collect-and-select path when it cuts.
            cut_70 |= full.len() > 70;
            // Independent check of the full order.
            for w in full.windows(2) {
                let (a, b) = (w[0], w[1]);
                assert!(
                    a.1 > b.1 || (a.1 == b.1 && ids[a.0 as usize] < ids[b.0 as usize]),
                    "{q}: {a:?} {b:?}"
                );
            }
            ties += full.windows(2).filter(|w| w[0].1 == w[1].1).count();
            for k in [1, 3, 8, 17, 40, 70] {
                let want = &full[..k.min(full.len())];
                assert_eq!(ranked(&ix, &ids, q, k), want, "{q} k={k}");
            }
        }
        // The data must exercise the id tie-break and both selections.
        assert!(ties > 10, "{ties}");
        assert!(cut_70);
    }

    #[test]
    fn keep_applies_before_k() {
        let ids = seq_ids(5);
        let ix = build(&[
            ("x", "", "x"),
            ("x", "", ""),
            ("", "", "x"),
            ("", "", "x y z"),
            ("", "", "nothing"),
        ]);
        let full = ranked(&ix, &ids, "x", 8);
        assert_eq!(full.len(), 4);
        let (a, b) = (full[0].0, full[1].0);
        let keep = |s: u32| s != a && s != b;
        let r = ix.rank("x", 2, &keep, &|s| ids[s as usize].as_str());
        assert_eq!(r, full[2..4]);
    }

    #[test]
    fn field_weighting() {
        let ids = seq_ids(4);
        let ix = build(&[
            // All four have weighted length 4; ties would go to slot 0.
            ("", "", "widget x y z"),
            ("", "widget", "x y"),
            ("widget", "", ""),
            ("", "", "x y z w"),
        ]);
        let r = ranked(&ix, &ids, "widget", 8);
        assert_eq!(slots(&r), [2, 1, 0]);
        assert!(r[0].1 > r[1].1 && r[1].1 > r[2].1);
    }

    #[test]
    fn incremental_equals_rebuild() {
        let docs = random_docs(7, 100);
        let ids: Vec<String> = (0..100)
            .map(|i| format!("d{:03}", (i * 53) % 100))
            .collect();
        let mut inc = Index::new(true);
        for (i, d) in docs.iter().enumerate() {
            inc.insert(i as u32, d);
        }
        let removed = |i: usize| i.is_multiple_of(3) || i % 7 == 2;
        for (i, d) in docs.iter().enumerate().rev() {
            if removed(i) {
                inc.remove(i as u32, d);
            }
        }
        let mut fresh = Index::new(true);
        for (i, d) in docs.iter().enumerate() {
            if !removed(i) {
                fresh.insert(i as u32, d);
            }
        }
        assert_eq!(inc.docs(), fresh.docs());
        assert_eq!(inc.postings.len(), fresh.postings.len());
        for q in ["alpha", "beta gamma", "eta theta iota kappa", "kappa"] {
            let a = ranked(&inc, &ids, q, 40);
            assert!(!a.is_empty());
            assert!(a.iter().all(|&(s, _)| !removed(s as usize)));
            assert_eq!(a, ranked(&fresh, &ids, q, 40), "{q}");
        }
        // Re-inserting a removed doc into a reused slot works too.
        inc.insert(0, &docs[0]);
        fresh.insert(0, &docs[0]);
        assert_eq!(
            ranked(&inc, &ids, "alpha beta", 50),
            ranked(&fresh, &ids, "alpha beta", 50)
        );
    }

    #[test]
    fn cache_mode_equals_complete() {
        let docs = random_docs(99, 100);
        let ids = seq_ids(101);
        let mut full = Index::new(true);
        for (i, d) in docs.iter().enumerate() {
            full.insert(i as u32, d);
        }
        let mut cache = Index::new(false);
        for (i, d) in docs.iter().enumerate() {
            cache.set_doc_len(i as u32, d.len);
        }
        assert_eq!(cache.docs(), 100);
        let q = "beta Gamma beta nosuchterm";
        assert!(full.missing_terms(q).is_empty());
        let missing = cache.missing_terms(q);
        assert_eq!(missing, ["beta", "gamma", "nosuchterm"]);
        for t in &missing {
            let p = full.postings.get(t.as_str()).cloned().unwrap_or_default();
            cache.load_term(t, p.iter().collect());
        }
        assert!(cache.missing_terms(q).is_empty());
        assert_eq!(ranked(&cache, &ids, q, 50), ranked(&full, &ids, q, 50));

        // Insert/remove touch only loaded terms, and stay equivalent.
        let extra = doc_terms("beta", "", "gamma unloaded");
        cache.insert(100, &extra);
        full.insert(100, &extra);
        assert_eq!(cache.missing_terms("unloaded"), ["unload"]);
        assert_eq!(ranked(&cache, &ids, q, 50), ranked(&full, &ids, q, 50));
        cache.remove(5, &docs[5]);
        full.remove(5, &docs[5]);
        assert_eq!(ranked(&cache, &ids, q, 50), ranked(&full, &ids, q, 50));
    }

    #[test]
    fn postings_stay_in_slot_order_and_dropping_them_equals_a_rebuild() {
        let docs = random_docs(7, 120);
        let ids = seq_ids(120);
        // Inserted out of slot order, one slot inserted twice.
        let mut ix = Index::new(true);
        for i in (0..120).rev().step_by(2).chain((0..120).step_by(2)) {
            ix.insert(i as u32, &docs[i]);
        }
        ix.insert(40, &docs[40]);
        for list in ix.postings.values() {
            assert!(list.slots().windows(2).all(|w| w[0] < w[1]), "{list:?}");
        }
        let loaded = ix.loaded_postings();
        assert_eq!(loaded, docs.iter().map(|d| d.terms.len()).sum::<usize>());
        let q = "alpha beta gamma delta";
        // A few slots (probed) and many (one pass): each equals an index
        // built without those documents' postings.
        for dropped in [vec![3u32, 50, 119], (0..120).step_by(5).collect()] {
            let mut cut = ix.clone();
            cut.drop_postings_of(&dropped);
            let mut rebuilt = Index::new(true);
            for (i, d) in docs.iter().enumerate() {
                let i = i as u32;
                if dropped.binary_search(&i).is_ok() {
                    rebuilt.set_doc_len(i, d.len);
                } else {
                    rebuilt.insert(i, d);
                }
            }
            assert_eq!(ranked(&cut, &ids, q, 50), ranked(&rebuilt, &ids, q, 50));
        }
        // Taken out by the terms it was indexed with, a document leaves no
        // posting behind and ranks as if dropped; taken out by fewer
        // terms, it says some are left.
        let mut cut = ix.clone();
        assert!(cut.remove_postings(3, &docs[3]));
        let mut dropped = ix.clone();
        dropped.drop_postings_of(&[3]);
        assert_eq!(ranked(&cut, &ids, q, 50), ranked(&dropped, &ids, q, 50));
        let i = (4..120)
            .find(|&i| docs[i].terms.len() >= 2)
            .expect("a doc of two terms");
        let mut fewer = docs[i].clone();
        fewer.terms.pop();
        assert!(!cut.remove_postings(i as u32, &fewer));
        // Lists loaded out of order are put in order.
        let mut cache = Index::new(false);
        cache.load_term("alpha", vec![(9, 1.0), (2, 2.0), (5, 1.0)]);
        assert_eq!(
            cache.postings["alpha"].iter().collect::<Vec<_>>(),
            [(2, 2.0), (5, 1.0), (9, 1.0)]
        );
    }

    /// Each term's postings, terms in order.
    fn every_posting(ix: &Index) -> Vec<(String, Vec<(u32, f32)>)> {
        let mut all: Vec<(String, Vec<(u32, f32)>)> = ix
            .postings
            .iter()
            .map(|(t, p)| (t.to_string(), p.iter().collect()))
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    #[test]
    fn reposting_a_document_equals_a_rebuild() {
        let docs = random_docs(11, 80);
        let next = random_docs(12, 80);
        let ids = seq_ids(80);
        let q = "alpha beta gamma delta";
        let mut ix = Index::new(true);
        for (i, d) in docs.iter().enumerate() {
            ix.insert(i as u32, d);
        }
        let mut rebuilt = Index::new(true);
        for i in 0..80usize {
            let d = if i % 3 == 0 { &next[i] } else { &docs[i] };
            rebuilt.insert(i as u32, d);
        }
        for i in (0..80usize).step_by(3) {
            assert!(ix.repost(i as u32, &docs[i], Some(&next[i])), "slot {i}");
            ix.set_doc_len(i as u32, next[i].len);
        }
        assert_eq!(every_posting(&ix), every_posting(&rebuilt));
        assert_eq!(ix.loaded_postings(), rebuilt.loaded_postings());
        assert_eq!(ranked(&ix, &ids, q, 50), ranked(&rebuilt, &ids, q, 50));
        // Told fewer terms than it was indexed with, it says some postings
        // were left behind.
        let i = (1..80)
            .find(|&i| i % 3 != 0 && docs[i].terms.len() >= 2)
            .expect("a doc of two terms");
        let mut fewer = docs[i].clone();
        let lost = fewer.terms.remove(0);
        let mut other = next[i].clone();
        other.terms.retain(|(t, _)| *t != lost.0);
        assert!(!ix.repost(i as u32, &fewer, Some(&other)));
    }

    #[test]
    fn reposting_many_documents_at_once_equals_a_rebuild() {
        let docs = random_docs(21, 90);
        let next = random_docs(22, 90);
        let ids = seq_ids(90);
        // Every third document rewritten, every seventh (not rewritten)
        // gone, in a complete index and in a cache holding some terms.
        let fate = |i: usize| match (i % 3, i % 7) {
            (0, _) => Some(&next[i]),
            (_, 0) => None,
            _ => Some(&docs[i]),
        };
        for complete in [true, false] {
            let mut ix = Index::new(complete);
            let mut rebuilt = Index::new(complete);
            if !complete {
                for t in ["alpha", "beta", "gamma", "delta"] {
                    ix.load_term(t, vec![]);
                    rebuilt.load_term(t, vec![]);
                }
            }
            for (i, d) in docs.iter().enumerate() {
                ix.insert(i as u32, d);
                match fate(i) {
                    Some(d) => rebuilt.insert(i as u32, d),
                    None => rebuilt.set_doc_len(i as u32, 0.0),
                }
            }
            let moves: Vec<(u32, &DocTerms, Option<&DocTerms>)> = (0..90)
                .filter(|i| i % 3 == 0 || i % 7 == 0)
                .map(|i| (i as u32, &docs[i], fate(i)))
                .collect();
            assert_eq!(ix.repost_many(&moves), Vec::<u32>::new());
            for (i, _, new) in &moves {
                ix.set_doc_len(*i, new.map_or(0.0, |d| d.len));
            }
            assert_eq!(
                every_posting(&ix),
                every_posting(&rebuilt),
                "complete {complete}"
            );
            assert_eq!(ix.loaded_postings(), rebuilt.loaded_postings());
            let q = "alpha beta gamma delta";
            assert_eq!(ranked(&ix, &ids, q, 50), ranked(&rebuilt, &ids, q, 50));
        }
        // Told fewer terms than it was indexed with, a document is named
        // as having left postings behind.
        let mut ix = Index::new(true);
        for (i, d) in docs.iter().enumerate() {
            ix.insert(i as u32, d);
        }
        let i = (1..90)
            .find(|&i| docs[i].terms.len() >= 2)
            .expect("a doc of two terms");
        let mut fewer = docs[i].clone();
        let lost = fewer.terms.remove(0);
        let mut other = next[i].clone();
        other.terms.retain(|(t, _)| *t != lost.0);
        // Alone (moved by itself) and among others (merged).
        let mut alone = ix.clone();
        assert_eq!(
            alone.repost_many(&[(i as u32, &fewer, Some(&other))]),
            vec![i as u32]
        );
        let mut moves: Vec<(u32, &DocTerms, Option<&DocTerms>)> = (0..90usize)
            .filter(|&j| j != i)
            .take(12)
            .map(|j| (j as u32, &docs[j], Some(&next[j])))
            .collect();
        moves.push((i as u32, &fewer, Some(&other)));
        assert_eq!(ix.repost_many(&moves), vec![i as u32]);
    }

    #[test]
    fn dense_and_sparse_paths_agree() {
        // A rare term (hash-map accumulator) and a term in every document
        // (dense accumulator) both give the hand-computed BM25 scores.
        let mut ix = Index::new(true);
        for i in 0..200u32 {
            let body = if i == 150 { "needle hay" } else { "hay" };
            ix.insert(i, &doc_terms("", "", body));
        }
        let ids = seq_ids(200);
        let r = ranked(&ix, &ids, "needle", 8);
        assert_eq!(slots(&r), [150]);
        let n = 200.0f64;
        let idf = (1.0 + (n - 1.0 + 0.5) / 1.5).ln();
        let avg = (199.0 + 2.0) / n;
        let norm = 1.0 - B + B * 2.0 / avg;
        let want = idf * (K1 + 1.0) / (1.0 + K1 * norm);
        assert!((r[0].1 - want).abs() < 1e-12, "{} vs {want}", r[0].1);
        let r = ranked(&ix, &ids, "hay", 300);
        assert_eq!(r.len(), 200);
        let idf = (1.0 + 0.5 / (n + 0.5)).ln();
        let bm25 = |len: f64| idf * (K1 + 1.0) / (1.0 + K1 * (1.0 - B + B * len / avg));
        // The longer document (slot 150) comes last.
        assert_eq!(r[199].0, 150);
        assert!((r[199].1 - bm25(2.0)).abs() < 1e-12);
        assert!((r[0].1 - bm25(1.0)).abs() < 1e-12);
        assert_eq!(r[0].0, 0);
    }

    #[test]
    fn a_dense_pass_cut_short_leaves_no_scores_behind() {
        // The array of scores is zero between passes; a pass that stops
        // half-way (here a panicking filter) must not leak its sums into
        // the next one on the same thread.
        let mut ix = Index::new(true);
        for i in 0..200u32 {
            let body = if i % 3 == 0 { "hay needle" } else { "hay" };
            ix.insert(i, &doc_terms("", "", body));
        }
        let ids = seq_ids(200);
        let id_of = |s: u32| ids[s as usize].as_str();
        let array = |_: &[&Postings], _: usize| true;
        let boom = |_: u32| -> bool { panic!("filter failed") };
        let cut = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            ix.rank_choosing(&query_terms("hay"), 8, &boom, &id_of, array)
        }));
        assert!(cut.is_err());
        let got = ix
            .rank_choosing(&query_terms("needle"), 300, &all, &id_of, array)
            .0;
        assert_eq!(got.len(), 67);
        assert_eq!(got, naive_rank(&ix, "needle", &all, &id_of));
    }

    // -- expansion ---------------------------------------------------------

    fn links<'a>(map: &'a [(u32, &'a [u32])]) -> impl Fn(u32) -> Vec<u32> + 'a {
        move |s| {
            map.iter()
                .find(|(k, _)| *k == s)
                .map(|(_, v)| v.to_vec())
                .unwrap_or_default()
        }
    }

    #[test]
    fn expand_hub_limited_to_k() {
        let ids = seq_ids(10);
        let map: &[(u32, &[u32])] = &[(0, &[5, 4, 3, 2, 1])];
        let r = expand(&[0], &links(map), &all, 2, &|s| ids[s as usize].as_str());
        // Equal count and first rank: id order.
        assert_eq!(r, [1, 2]);
    }

    #[test]
    fn expand_shared_target_first() {
        let ids = seq_ids(10);
        let map: &[(u32, &[u32])] = &[(0, &[5, 6]), (1, &[7, 6, 6]), (2, &[6, 8])];
        let r = expand(&[0, 1, 2], &links(map), &all, 10, &|s| {
            ids[s as usize].as_str()
        });
        assert_eq!(r, [6, 5, 7, 8]);
        // Repeated links from one hit count once.
        let map2: &[(u32, &[u32])] = &[(0, &[5, 5, 5]), (1, &[6]), (2, &[6])];
        let r = expand(&[0, 1, 2], &links(map2), &all, 10, &|s| {
            ids[s as usize].as_str()
        });
        assert_eq!(r, [6, 5]);
        // keep filters before k.
        let keep = |s: u32| s != 6;
        let r = expand(&[0, 1, 2], &links(map), &keep, 2, &|s| {
            ids[s as usize].as_str()
        });
        assert_eq!(r, [5, 7]);
        assert!(expand(&[0], &links(map), &all, 0, &|s| ids[s as usize].as_str()).is_empty());
    }

    #[test]
    fn expand_skips_direct_hits() {
        let ids = seq_ids(10);
        let map: &[(u32, &[u32])] = &[(0, &[1, 2, 0]), (1, &[0, 3])];
        let r = expand(&[0, 1], &links(map), &all, 10, &|s| {
            ids[s as usize].as_str()
        });
        assert_eq!(r, [2, 3]);
    }

    // -- best window -------------------------------------------------------

    fn spaces(n: usize) -> String {
        " ".repeat(n)
    }

    #[test]
    fn pos_lone_word_is_centred() {
        let text = format!("{}needle{}", spaces(3000), spaces(3000));
        assert_eq!(
            best_window_start(&text, "needle"),
            Some(3000 - (2000 - 6) / 2)
        );
        // Odd slack floors.
        let text = format!("{}needles{}", spaces(3000), spaces(3000));
        assert_eq!(
            best_window_start(&text, "needles"),
            Some(3000 - (2000 - 7) / 2)
        );
    }

    #[test]
    fn pos_more_distinct_words_win() {
        let text = format!(
            "{}alpha{}alpha beta{}",
            spaces(100),
            spaces(4895),
            spaces(5000)
        );
        // "alpha beta" starts at 5000, spans 10.
        assert_eq!(best_window_start(&text, "alpha beta"), Some(5000 - 995));
        // Distinct, not total: repeated alphas do not beat alpha+beta.
        let text = format!(
            "{}alpha alpha alpha{}alpha beta{}",
            spaces(3000),
            spaces(4983),
            spaces(5000)
        );
        assert_eq!(best_window_start(&text, "beta alpha"), Some(8000 - 995));
    }

    #[test]
    fn pos_tie_goes_to_earliest() {
        let text = format!("{}alpha{}alpha{}", spaces(3000), spaces(3995), spaces(5000));
        assert_eq!(best_window_start(&text, "alpha"), Some(3000 - 997));
    }

    #[test]
    fn pos_clamped_and_short() {
        let text = format!("{}needle{}", spaces(4900), spaces(94));
        assert_eq!(utf16_len(&text), 5000);
        assert_eq!(best_window_start(&text, "needle"), Some(3000));
        assert_eq!(best_window_start("hello world", "world"), Some(0));
        let text = format!("{}needle", spaces(1000));
        assert_eq!(best_window_start(&text, "needle"), Some(0));
    }

    #[test]
    fn pos_whole_words_only() {
        assert_eq!(best_window_start("concatenate things", "cat"), None);
        assert_eq!(best_window_start("a tomcat", "cat"), None);
        assert_eq!(best_window_start("a tomcat", "tomcat"), Some(0));
        let text = format!(
            "{}concatenate {}cat{}",
            spaces(10),
            spaces(3000),
            spaces(3000)
        );
        // "cat" at 10 + 12 + 3000.
        assert_eq!(best_window_start(&text, "cat"), Some(3022 - 998));
        assert_eq!(best_window_start("", "cat"), None);
        assert_eq!(best_window_start("cat", ""), None);
        assert_eq!(best_window_start("cat", " -- "), None);
    }

    #[test]
    fn pos_counts_utf16_units() {
        let text = format!("{} needle{}", "😀".repeat(1500), spaces(3000));
        // 1500 emoji = 3000 units, then a space.
        assert_eq!(best_window_start(&text, "needle"), Some(3001 - 997));
        let text = format!("{} needle{}", "é".repeat(3000), spaces(3000));
        assert_eq!(best_window_start(&text, "needle"), Some(3001 - 997));
    }

    #[test]
    fn pos_case_folding() {
        let text = format!("{}NeedLe{}", spaces(3000), spaces(3000));
        assert_eq!(best_window_start(&text, "nEEDLE"), Some(3000 - 997));
        // "İ" lowercases to two UTF-16 units: offsets stay the text's own.
        let text = format!("İ{}NeedLe{}", spaces(3000), spaces(3000));
        assert_eq!(best_window_start(&text, "needle"), Some(3001 - 997));
        assert_eq!(best_window_start(&text, "NeedLe"), Some(3001 - 997));
        // Accents fold both ways, as in the index.
        assert_eq!(best_window_start("café", "cafe"), Some(0));
        assert_eq!(best_window_start("café au lait", "CAFÉ"), Some(0));
    }

    #[test]
    fn pos_matches_stems_and_skips_stopwords() {
        let text = format!("{}persisting{}", spaces(3000), spaces(3000));
        assert_eq!(best_window_start(&text, "persisted"), Some(3000 - 995));
        // "the" is dropped from a query that has other words; "tables"
        // finds "table".
        let text = format!("the{}table{}", spaces(3000), spaces(3000));
        assert_eq!(best_window_start(&text, "the tables"), Some(3003 - 997));
        assert_eq!(best_window_start(&text, "the"), Some(0));
    }

    #[test]
    fn pos_overlong_word_falls_back() {
        let long = "a".repeat(2500);
        let text = format!("{}{long}{}", spaces(3000), spaces(3000));
        assert_eq!(best_window_start(&text, &long), Some(3000));
    }
}
