//! The tenant read model: every document of every bundle with its id,
//! manifest row and links, kept current one change at a time.
//!
//! Ids are the shortest unambiguous form of a path within its bundle
//! (reference langonrock §3.3); ids that collide across bundles are
//! prefixed with the bundle name. A change re-derives the ids of its own
//! bundle and of the ids it makes (or stops making) collide, nothing more.

use super::compile::Compiled;
use super::search::{self, Index};
use super::slice::{self, Slice, SliceOptions};
use crate::bundle::{short_ids, IdError};
use crate::doc::hex;
use crate::query::normalize_id;
use crate::time::Instant;
use rustc_hash::FxHashMap;
use sha2::{Digest, Sha256};
use std::cmp::Ordering;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

/// What [`Model::get`] found: `(requested id, slice)` in request order,
/// and the requested ids that name nothing.
pub type Fetched = (Vec<(String, Slice)>, Vec<String>);

/// One search hit explained (see [`Model::explain`]).
#[derive(Clone, Debug)]
pub struct Explained {
    /// The concept's id.
    pub id: String,
    /// Its score.
    pub score: f64,
    /// The score's parts per query term.
    pub parts: Vec<search::TermPart>,
}

/// The manifest's column line.
pub const COLUMNS: &str = "id\tbundle\tkind\tstatus\tgrain\tsummary\tlinks";

/// One stored document.
#[derive(Clone, Debug)]
pub struct Entry {
    /// Its bundle.
    pub bundle: String,
    /// Its path inside the bundle.
    pub path: String,
    /// sha256 of its exact bytes, lowercase hex.
    pub hash: String,
    /// What the compiler made of it.
    pub compiled: Compiled,
    /// Its tenant-wide id (empty for navigation documents).
    pub id: String,
    local: String,
}

/// Where a model reads its documents' source texts from.
pub trait Sources {
    /// The whole source text of `e`, if it can be read.
    fn text(&mut self, e: &Entry) -> Option<std::sync::Arc<str>>;
    /// Readies the texts of `entries`, about to be read one by one (a
    /// store on a server reads them in one round trip); by default,
    /// nothing.
    fn prefetch(&mut self, _entries: &[&Entry]) {}
}

impl<F: FnMut(&Entry) -> Option<std::sync::Arc<str>> + ?Sized> Sources for F {
    fn text(&mut self, e: &Entry) -> Option<std::sync::Arc<str>> {
        self(e)
    }
}

impl Entry {
    /// True for a concept (every non-navigation document).
    pub fn is_concept(&self) -> bool {
        !self.compiled.nav
    }
}

#[derive(Clone, Debug, Default)]
struct BundleState {
    docs: BTreeMap<String, u32>,
    digest: [u8; 32],
}

/// The read model of one tenant.
#[derive(Clone, Debug, Default)]
pub struct Model {
    tenant: String,
    /// Entries by slot, shared with the models cloned from this one until
    /// either changes them (a clone costs a pointer per document).
    entries: Vec<Option<Arc<Entry>>>,
    free: Vec<u32>,
    bundles: BTreeMap<String, BundleState>,
    by_id: FxHashMap<String, u32>,
    by_local: FxHashMap<String, Vec<u32>>,
    dirty: BTreeSet<String>,
    touched_locals: BTreeSet<String>,
    concepts: usize,
    generation: u64,
}

/// The digest of one bundle: sha256 over its `path NUL hash LF` lines in
/// path order.
pub fn bundle_digest<'a>(docs: impl IntoIterator<Item = (&'a str, &'a str)>) -> [u8; 32] {
    let mut h = Sha256::new();
    for (p, hash) in docs {
        h.update(p.as_bytes());
        h.update([0]);
        h.update(hash.as_bytes());
        h.update(b"\n");
    }
    h.finalize().into()
}

/// The snapshot digest over bundles in name order: sha256 over each
/// bundle's `name NUL hex(bundle digest) LF`. Identical documents give the
/// identical digest.
pub fn snapshot_digest<'a>(bundles: impl IntoIterator<Item = (&'a str, [u8; 32])>) -> String {
    let mut h = Sha256::new();
    for (name, d) in bundles {
        h.update(name.as_bytes());
        h.update([0]);
        h.update(hex(&d).as_bytes());
        h.update(b"\n");
    }
    hex(&h.finalize())
}

/// A path without its `.md` extension (any case).
pub fn strip_md(path: &str) -> &str {
    let n = path.len();
    if n >= 3 && path.is_char_boundary(n - 3) && path[n - 3..].eq_ignore_ascii_case(".md") {
        &path[..n - 3]
    } else {
        path
    }
}

/// Compares two strings by UTF-16 code units, as JavaScript sorts.
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    if a.is_ascii() && b.is_ascii() {
        return a.cmp(b);
    }
    a.encode_utf16().cmp(b.encode_utf16())
}

fn utf16_len(s: &str) -> usize {
    if s.is_ascii() {
        s.len()
    } else {
        s.encode_utf16().count()
    }
}

impl Model {
    /// An empty model for `tenant`.
    pub fn new(tenant: &str) -> Model {
        let mut m = Model {
            tenant: tenant.to_string(),
            ..Model::default()
        };
        m.generation = 1;
        m
    }

    /// The tenant name shown in the manifest header.
    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// Bumped by every [`Model::settle`] that changed something: a cache
    /// key for rendered text.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Number of concepts (non-navigation documents).
    pub fn concepts(&self) -> usize {
        self.concepts
    }

    /// Bundle names, sorted.
    pub fn bundles(&self) -> Vec<&str> {
        self.bundles.keys().map(String::as_str).collect()
    }

    /// The entry in `slot`.
    pub fn entry(&self, slot: u32) -> Option<&Entry> {
        self.entries.get(slot as usize).and_then(Option::as_deref)
    }

    /// Every live slot.
    pub fn slots(&self) -> impl Iterator<Item = u32> + '_ {
        self.entries
            .iter()
            .enumerate()
            .filter(|(_, e)| e.is_some())
            .map(|(i, _)| i as u32)
    }

    /// The slot of `bundle/path`.
    pub fn slot_of(&self, bundle: &str, path: &str) -> Option<u32> {
        self.bundles.get(bundle)?.docs.get(path).copied()
    }

    /// Documents of a bundle in path order.
    pub fn bundle_docs(&self, bundle: &str) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.bundles
            .get(bundle)
            .into_iter()
            .flat_map(|b| b.docs.iter().map(|(p, s)| (p.as_str(), *s)))
    }

    /// Adds or replaces a document; returns its slot and the entry it
    /// replaced. Ids are settled by [`Model::settle`].
    pub fn upsert(
        &mut self,
        bundle: &str,
        path: &str,
        hash: &str,
        compiled: Compiled,
    ) -> (u32, Option<Arc<Entry>>) {
        self.mark_dirty(bundle);
        if let Some(slot) = self.slot_of(bundle, path) {
            if let Some(old) = self.entries[slot as usize].take() {
                if old.compiled.nav != compiled.nav {
                    if compiled.nav {
                        self.concepts -= 1;
                    } else {
                        self.concepts += 1;
                    }
                }
                self.entries[slot as usize] = Some(Arc::new(Entry {
                    bundle: old.bundle.clone(),
                    path: old.path.clone(),
                    hash: hash.to_string(),
                    compiled,
                    id: old.id.clone(),
                    local: old.local.clone(),
                }));
                return (slot, Some(old));
            }
        }
        let slot = match self.free.pop() {
            Some(s) => s,
            None => {
                self.entries.push(None);
                (self.entries.len() - 1) as u32
            }
        };
        self.place(slot, bundle, path, hash, compiled);
        (slot, None)
    }

    /// Puts a new document in `slot` (in range and empty) and lists it
    /// under its bundle.
    fn place(&mut self, slot: u32, bundle: &str, path: &str, hash: &str, compiled: Compiled) {
        if !compiled.nav {
            self.concepts += 1;
        }
        self.entries[slot as usize] = Some(Arc::new(Entry {
            bundle: bundle.to_string(),
            path: path.to_string(),
            hash: hash.to_string(),
            compiled,
            id: String::new(),
            local: String::new(),
        }));
        self.bundles
            .entry(bundle.to_string())
            .or_default()
            .docs
            .insert(path.to_string(), slot);
    }

    /// Adds a document at a slot the caller chose (a store loading its
    /// rows keeps the slots its postings use). Replaces whatever was at
    /// `bundle/path` or in `slot`.
    pub fn upsert_at(
        &mut self,
        slot: u32,
        bundle: &str,
        path: &str,
        hash: &str,
        compiled: Compiled,
    ) -> u32 {
        if let Some(cur) = self.slot_of(bundle, path) {
            if cur == slot {
                self.upsert(bundle, path, hash, compiled);
                return slot;
            }
            self.remove(bundle, path);
        }
        if let Some(Some(e)) = self.entries.get(slot as usize) {
            let (b, p) = (e.bundle.clone(), e.path.clone());
            self.remove(&b, &p);
        }
        let i = slot as usize;
        if self.entries.len() <= i {
            while self.entries.len() < i {
                self.free.push(self.entries.len() as u32);
                self.entries.push(None);
            }
            self.entries.push(None);
        } else {
            self.free.retain(|s| *s != slot);
        }
        self.mark_dirty(bundle);
        self.place(slot, bundle, path, hash, compiled);
        slot
    }

    /// Adds stored documents `(slot, bundle, path, hash, compiled)` at
    /// their slots, as [`Model::upsert_at`] one by one would, without
    /// copying their strings: what a store's first load does. An empty
    /// model is filled in bulk (a bundle's paths sorted once, not
    /// inserted one by one); a slot or path given twice, or a model that
    /// holds documents already, takes the one-by-one way.
    pub fn fill(&mut self, docs: Vec<(u32, String, String, String, Compiled)>) {
        if !self.entries.is_empty() {
            self.upsert_each(docs);
            return;
        }
        let order: Vec<u32> = docs.iter().map(|d| d.0).collect();
        let unique = {
            let mut slots = order.clone();
            slots.sort_unstable();
            slots.windows(2).all(|w| w[0] != w[1])
        };
        if !unique {
            self.upsert_each(docs);
            return;
        }
        let len = order.iter().map(|&s| s as usize + 1).max().unwrap_or(0);
        let mut entries: Vec<Option<Arc<Entry>>> = Vec::with_capacity(len);
        entries.resize_with(len, || None);
        let mut by_bundle: BTreeMap<String, Vec<(String, u32)>> = BTreeMap::new();
        for (slot, bundle, path, hash, compiled) in docs {
            let paths = match by_bundle.get_mut(&bundle) {
                Some(p) => p,
                None => by_bundle.entry(bundle.clone()).or_default(),
            };
            paths.push((path.clone(), slot));
            entries[slot as usize] = Some(Arc::new(Entry {
                bundle,
                path,
                hash,
                compiled,
                id: String::new(),
                local: String::new(),
            }));
        }
        let mut bundles = BTreeMap::new();
        for (name, paths) in by_bundle {
            let n = paths.len();
            let docs: BTreeMap<String, u32> = paths.into_iter().collect();
            if docs.len() != n {
                // A path given twice: one by one, in the order given (the
                // last wins).
                let docs = order
                    .iter()
                    .filter_map(|&s| {
                        let e = Arc::unwrap_or_clone(entries[s as usize].take()?);
                        Some((s, e.bundle, e.path, e.hash, e.compiled))
                    })
                    .collect();
                self.upsert_each(docs);
                return;
            }
            bundles.insert(
                name,
                BundleState {
                    docs,
                    digest: [0; 32],
                },
            );
        }
        self.dirty.extend(bundles.keys().cloned());
        self.bundles = bundles;
        self.concepts = entries.iter().flatten().filter(|e| e.is_concept()).count();
        self.free = (0..len as u32)
            .filter(|&s| entries[s as usize].is_none())
            .collect();
        self.entries = entries;
    }

    fn upsert_each(&mut self, docs: Vec<(u32, String, String, String, Compiled)>) {
        for (slot, bundle, path, hash, compiled) in docs {
            self.upsert_at(slot, &bundle, &path, &hash, compiled);
        }
    }

    /// Removes a document; returns its slot and entry.
    pub fn remove(&mut self, bundle: &str, path: &str) -> Option<(u32, Arc<Entry>)> {
        let slot = self.bundles.get_mut(bundle)?.docs.remove(path)?;
        self.mark_dirty(bundle);
        let e = self.entries[slot as usize].take()?;
        self.free.push(slot);
        if e.is_concept() {
            self.concepts -= 1;
        }
        if !e.local.is_empty() {
            self.unlink_local(&e.local, slot);
        }
        if !e.id.is_empty() && self.by_id.get(&e.id) == Some(&slot) {
            self.by_id.remove(&e.id);
        }
        Some((slot, e))
    }

    fn mark_dirty(&mut self, bundle: &str) {
        if !self.dirty.contains(bundle) {
            self.dirty.insert(bundle.to_string());
        }
    }

    fn unlink_local(&mut self, local: &str, slot: u32) {
        if let Some(v) = self.by_local.get_mut(local) {
            v.retain(|s| *s != slot);
            if v.is_empty() {
                self.by_local.remove(local);
            }
        }
        self.touched_locals.insert(local.to_string());
    }

    /// Re-derives ids and digests after [`Model::upsert`]/[`Model::remove`].
    /// Returns the slots whose id changed (new documents included), which a
    /// search index must re-read (the id is a searched field).
    pub fn settle(&mut self) -> Vec<u32> {
        if self.dirty.is_empty() && self.touched_locals.is_empty() {
            return vec![];
        }
        self.generation += 1;
        let dirty = std::mem::take(&mut self.dirty);
        for name in &dirty {
            let Some(b) = self.bundles.get(name) else {
                continue;
            };
            if b.docs.is_empty() {
                self.bundles.remove(name);
                continue;
            }
            let entries = &self.entries;
            let slots_where = |concept: bool| -> Vec<u32> {
                b.docs
                    .values()
                    .copied()
                    .filter(|s| {
                        entries[*s as usize]
                            .as_ref()
                            .is_some_and(|e| e.is_concept() == concept)
                    })
                    .collect()
            };
            let concept_slots = slots_where(true);
            let paths: Vec<&str> = concept_slots
                .iter()
                .map(|s| {
                    self.entries[*s as usize]
                        .as_ref()
                        .map_or("", |e| e.path.as_str())
                })
                .collect();
            let locals = short_ids(&paths);
            let nav_slots = slots_where(false);
            let digest = bundle_digest(b.docs.iter().filter_map(|(p, s)| {
                self.entries[*s as usize]
                    .as_ref()
                    .map(|e| (p.as_str(), e.hash.as_str()))
            }));
            if let Some(b) = self.bundles.get_mut(name) {
                b.digest = digest;
            }
            for (slot, local) in concept_slots.into_iter().zip(locals) {
                let old = self.entries[slot as usize]
                    .as_ref()
                    .map(|e| e.local.clone())
                    .unwrap_or_default();
                if old != local {
                    if !old.is_empty() {
                        self.unlink_local(&old, slot);
                    }
                    self.by_local.entry(local.clone()).or_default().push(slot);
                    self.touched_locals.insert(local.clone());
                    if let Some(e) = self.entries[slot as usize].as_mut().map(Arc::make_mut) {
                        e.local = local;
                    }
                }
            }
            // A concept that became a navigation document loses its ids.
            for slot in nav_slots {
                let (local, id) = match self.entries[slot as usize].as_mut().map(Arc::make_mut) {
                    Some(e) => (std::mem::take(&mut e.local), std::mem::take(&mut e.id)),
                    None => continue,
                };
                if !local.is_empty() {
                    self.unlink_local(&local, slot);
                }
                if !id.is_empty() && self.by_id.get(&id) == Some(&slot) {
                    self.by_id.remove(&id);
                }
            }
        }
        let touched = std::mem::take(&mut self.touched_locals);
        // Slots whose id may change: every holder of a touched local id `l`,
        // and every holder of a local id `b/l` (for any bundle `b`), whose
        // id clashes with the prefixed form of `l` while `l` collides.
        let mut recompute: BTreeSet<u32> = BTreeSet::new();
        for local in &touched {
            if let Some(v) = self.by_local.get(local) {
                recompute.extend(v.iter().copied());
            }
        }
        // The `b/l` holders: looked up per bundle for a few touched ids,
        // found in one pass over the local ids when many were touched (a
        // whole tenant loading), whichever is less work.
        if touched.len().saturating_mul(self.bundles.len()) <= self.by_local.len() {
            for local in &touched {
                for b in self.bundles.keys() {
                    if let Some(v) = self.by_local.get(&format!("{b}/{local}")) {
                        recompute.extend(v.iter().copied());
                    }
                }
            }
        } else {
            for (id, v) in &self.by_local {
                let held = id.match_indices('/').any(|(i, _)| {
                    touched.contains(&id[i + 1..]) && self.bundles.contains_key(&id[..i])
                });
                if held {
                    recompute.extend(v.iter().copied());
                }
            }
        }
        let mut changed = vec![];
        for slot in recompute {
            let Some(id) = self.final_id(slot) else {
                continue;
            };
            let Some(e) = self.entries[slot as usize].as_mut().map(Arc::make_mut) else {
                continue;
            };
            if id != e.id {
                let old = std::mem::replace(&mut e.id, id.clone());
                if !old.is_empty() && self.by_id.get(&old) == Some(&slot) {
                    self.by_id.remove(&old);
                }
                self.by_id.insert(id, slot);
                changed.push(slot);
            }
        }
        changed.sort_unstable();
        changed.dedup();
        changed
    }

    /// A concept's tenant-wide id: its local id, prefixed with its bundle
    /// when another bundle has the same local id, or when the local id
    /// `b/l` is the prefixed id of a colliding `l` in bundle `b`.
    fn final_id(&self, slot: u32) -> Option<String> {
        let e = self.entries[slot as usize].as_ref()?;
        let holders = self.by_local.get(&e.local).map_or(0, Vec::len);
        let clashes = || {
            let Some((b, l)) = e.local.split_once('/') else {
                return false;
            };
            self.by_local.get(l).is_some_and(|v| {
                v.len() > 1
                    && v.iter().any(|s| {
                        self.entries[*s as usize]
                            .as_ref()
                            .is_some_and(|o| o.bundle == b)
                    })
            })
        };
        if holders <= 1 && !clashes() {
            return Some(e.local.clone());
        }
        Some(format!("{}/{}", e.bundle, e.local))
    }

    /// The snapshot digest: sha256 over each bundle's name and the sha256 of
    /// its sorted `path NUL hash LF` lines. Identical documents give the
    /// identical digest; a change re-hashes only its own bundle.
    pub fn snapshot(&self) -> String {
        snapshot_digest(self.bundles.iter().map(|(n, b)| (n.as_str(), b.digest)))
    }

    /// Resolves an id argument: the tenant id, or the path id (with or
    /// without a leading `/` or trailing `.md`, optionally prefixed by its
    /// bundle), or a bare name when it names one concept.
    pub fn resolve(&self, input: &str) -> Result<u32, IdError> {
        if let Some(s) = self.by_id.get(input) {
            return Ok(*s);
        }
        let n = normalize_id(input);
        if n.is_empty() {
            return Err(IdError::NotFound);
        }
        if let Some(s) = self.by_id.get(&n) {
            return Ok(*s);
        }
        let file = format!("{n}.md");
        if let Some((b, rest)) = n.split_once('/') {
            if let Some(s) = self.slot_of(b, &format!("{rest}.md")) {
                if self.entry(s).is_some_and(Entry::is_concept) {
                    return Ok(s);
                }
            }
        }
        let hits: Vec<u32> = self
            .bundles
            .values()
            .filter_map(|b| b.docs.get(&file).copied())
            .filter(|s| self.entry(*s).is_some_and(Entry::is_concept))
            .collect();
        match hits.len() {
            1 => return Ok(hits[0]),
            0 => {}
            _ => return Err(self.ambiguous(hits)),
        }
        match self.by_local.get(&n) {
            Some(v) if v.len() == 1 => return Ok(v[0]),
            Some(v) if v.len() > 1 => return Err(self.ambiguous(v.clone())),
            _ => {}
        }
        // A bare name several concepts end in (`orders` for tables/orders
        // and staging/orders): ambiguous, with the candidates.
        if !n.contains('/') {
            let hits: Vec<u32> = self
                .slots()
                .filter(|s| {
                    self.entry(*s).is_some_and(|e| {
                        e.is_concept() && strip_md(&e.path).rsplit('/').next() == Some(n.as_str())
                    })
                })
                .collect();
            match hits.len() {
                0 => {}
                1 => return Ok(hits[0]),
                _ => return Err(self.ambiguous(hits)),
            }
        }
        Err(IdError::NotFound)
    }

    fn ambiguous(&self, slots: Vec<u32>) -> IdError {
        let mut ids: Vec<String> = slots
            .iter()
            .filter_map(|s| self.entry(*s).map(|e| e.id.clone()))
            .collect();
        ids.sort_by(|a, b| cmp_utf16(a, b));
        IdError::Ambiguous(ids)
    }

    /// The slots a concept links to (same bundle, first existing candidate
    /// of each link; navigation documents and itself excluded), deduplicated.
    pub fn links_of(&self, slot: u32) -> Vec<u32> {
        let Some(e) = self.entry(slot) else {
            return vec![];
        };
        let Some(b) = self.bundles.get(&e.bundle) else {
            return vec![];
        };
        let mut out: Vec<u32> = vec![];
        for cands in &e.compiled.links {
            for c in cands {
                if let Some(&t) = b.docs.get(c) {
                    if t != slot
                        && self.entry(t).is_some_and(Entry::is_concept)
                        && !out.contains(&t)
                    {
                        out.push(t);
                    }
                    break;
                }
            }
        }
        out
    }

    fn links_cell(&self, slot: u32) -> String {
        let mut ids: Vec<&str> = self
            .links_of(slot)
            .into_iter()
            .filter_map(|s| self.entry(s).map(|e| e.id.as_str()))
            .collect();
        if ids.is_empty() {
            return "-".into();
        }
        ids.sort_by(|a, b| cmp_utf16(a, b));
        ids.dedup();
        ids.join(" ")
    }

    /// The status cell at `now`: a current concept past its `stale_after`
    /// reads `stale`; an explicit status wins.
    pub fn status_at(&self, e: &Entry, now: Instant) -> String {
        match e.compiled.stale_after {
            Some(s) if e.compiled.status == "-" && now.0 >= s => "stale".into(),
            _ => e.compiled.status.clone(),
        }
    }

    /// Appends the manifest row of `slot` (no line feed).
    pub fn row(&self, slot: u32, now: Instant, out: &mut String) {
        let Some(e) = self.entry(slot) else {
            return;
        };
        for (i, cell) in [
            e.id.as_str(),
            e.bundle.as_str(),
            e.compiled.kind.as_str(),
            self.status_at(e, now).as_str(),
            e.compiled.grain.as_str(),
            e.compiled.summary.as_str(),
            self.links_cell(slot).as_str(),
        ]
        .iter()
        .enumerate()
        {
            if i > 0 {
                out.push('\t');
            }
            out.push_str(if cell.is_empty() { "-" } else { cell });
        }
    }

    fn preamble(&self, out: &mut String) {
        out.push_str("# tenant: ");
        out.push_str(&self.tenant);
        out.push_str("\n# bundles:");
        for b in self.bundles.keys() {
            out.push(' ');
            out.push_str(b);
        }
        out.push('\n');
    }

    fn check_bundle(&self, bundle: Option<&str>) -> Result<(), String> {
        match bundle {
            Some(b) if !self.bundles.contains_key(b) => Err(format!(
                "no bundle \"{b}\" in this tenant: found {}",
                if self.bundles.is_empty() {
                    "none".to_string()
                } else {
                    self.bundles().join(", ")
                }
            )),
            _ => Ok(()),
        }
    }

    fn sorted_concepts(&self, bundle: &str) -> Vec<u32> {
        let mut v: Vec<u32> = self
            .bundle_docs(bundle)
            .map(|(_, s)| s)
            .filter(|s| self.entry(*s).is_some_and(Entry::is_concept))
            .collect();
        v.sort_by(|a, b| {
            let (ea, eb) = (self.entry(*a), self.entry(*b));
            cmp_utf16(
                ea.map_or("", |e| e.id.as_str()),
                eb.map_or("", |e| e.id.as_str()),
            )
        });
        v
    }

    /// The manifest TSV (reference langonrock §3.6), whole or for one
    /// bundle, and the next instant at which a `stale_after` passes (when
    /// the text would change without any document changing).
    pub fn manifest(
        &self,
        bundle: Option<&str>,
        now: Instant,
    ) -> Result<(String, Option<i64>), String> {
        self.check_bundle(bundle)?;
        let mut out = String::with_capacity(64 + self.concepts * 160);
        self.preamble(&mut out);
        out.push_str(COLUMNS);
        out.push('\n');
        let mut next: Option<i64> = None;
        for name in self.bundles.keys() {
            if bundle.is_some_and(|b| b != name) {
                continue;
            }
            for slot in self.sorted_concepts(name) {
                self.row(slot, now, &mut out);
                out.push('\n');
                if let Some(e) = self.entry(slot) {
                    if let Some(s) = e.compiled.stale_after {
                        if s > now.0 && e.compiled.status == "-" {
                            next = Some(next.map_or(s, |n| n.min(s)));
                        }
                    }
                }
            }
        }
        Ok((out, next))
    }

    /// The words a concept is found by: (names, fields). Names: id and
    /// title. Fields: bundle, kind, status, grain and summary (reference
    /// langonrock §6.1), then the keywords (aliases, tags, the whole
    /// description) and the words of the section headings.
    pub fn search_fields(&self, slot: u32) -> Option<(String, String)> {
        let e = self.entry(slot)?;
        if !e.is_concept() {
            return None;
        }
        let c = &e.compiled;
        let mut fields = format!(
            "{} {} {} {} {} {}",
            e.bundle, c.kind, c.status, c.grain, c.summary, c.keywords
        );
        for s in &c.sections {
            if s.name != "body" {
                fields.push(' ');
                fields.push_str(&s.name);
            }
        }
        Some((format!("{} {}", e.id, c.title), fields))
    }

    /// Runs a search (reference langonrock §4.2, §6): BM25 over `index`,
    /// `pos` from each direct hit's body, one-hop expansion capped at `k`.
    /// `body` returns a document's whole source text.
    pub fn search(
        &self,
        index: &Index,
        query: &str,
        k: usize,
        bundle: Option<&str>,
        now: Instant,
        body: &mut dyn Sources,
    ) -> Result<String, String> {
        self.search_with(index, query, k, bundle, true, now, body)
    }

    /// Why each direct hit of a search ranks where it does: its id, score
    /// and the parts of that score per query term and field (see
    /// [`Index::explain`]), in rank order.
    pub fn explain(
        &self,
        index: &Index,
        query: &str,
        k: usize,
        bundle: Option<&str>,
        body: &mut dyn Sources,
    ) -> Result<Vec<Explained>, String> {
        self.check_bundle(bundle)?;
        let keep = |s: u32| {
            self.entry(s)
                .is_some_and(|e| e.is_concept() && bundle.is_none_or(|b| b == e.bundle))
        };
        let id_of = |s: u32| self.entry(s).map_or("", |e| e.id.as_str());
        let ranked = index.rank(query, k, &keep, &id_of);
        let mut out = Vec::with_capacity(ranked.len());
        for (slot, score) in ranked {
            let (Some(e), Some((names, fields))) = (self.entry(slot), self.search_fields(slot))
            else {
                continue;
            };
            let text = body.text(e);
            let doc_body = text
                .as_deref()
                .and_then(|t| t.get(e.compiled.body_start as usize..))
                .unwrap_or("");
            out.push(Explained {
                id: e.id.clone(),
                score,
                parts: index.explain(query, slot, [&names, &fields, doc_body]),
            });
        }
        Ok(out)
    }

    /// [`Model::search`], with the one-hop expansion optional.
    #[allow(clippy::too_many_arguments)]
    pub fn search_with(
        &self,
        index: &Index,
        query: &str,
        k: usize,
        bundle: Option<&str>,
        expand: bool,
        now: Instant,
        body: &mut dyn Sources,
    ) -> Result<String, String> {
        self.check_bundle(bundle)?;
        let keep = |s: u32| {
            self.entry(s)
                .is_some_and(|e| e.is_concept() && bundle.is_none_or(|b| b == e.bundle))
        };
        let id_of = |s: u32| self.entry(s).map_or("", |e| e.id.as_str());
        let q = search::Query::new(query);
        let direct: Vec<u32> = index
            .rank_terms(q.terms(), k, &keep, &id_of)
            .into_iter()
            .map(|(s, _)| s)
            .collect();
        let links_of = |s: u32| self.links_of(s);
        let linked = if expand {
            search::expand(&direct, &links_of, &keep, k, &id_of)
        } else {
            vec![]
        };
        let mut out = String::new();
        self.preamble(&mut out);
        if let Some(b) = bundle {
            out.push_str("# bundle: ");
            out.push_str(b);
            out.push('\n');
        }
        out.push_str("# query: ");
        out.push_str(&super::text::flatten(query));
        out.push_str(&format!(
            "\n# hits: {} direct, {} linked\n{COLUMNS}\tpos\n",
            direct.len(),
            linked.len()
        ));
        let hits: Vec<&Entry> = direct.iter().filter_map(|s| self.entry(*s)).collect();
        body.prefetch(&hits);
        for s in &direct {
            self.row(*s, now, &mut out);
            out.push('\t');
            let text = self.entry(*s).and_then(|e| Some((e, body.text(e)?)));
            let pos =
                text.and_then(|(e, t)| q.window_start(t.get(e.compiled.body_start as usize..)?));
            match pos {
                Some(p) => out.push_str(&p.to_string()),
                None => out.push('-'),
            }
            out.push('\n');
        }
        for s in &linked {
            self.row(*s, now, &mut out);
            out.push_str("\t-\n");
        }
        Ok(out)
    }

    /// Slices of the requested concepts (reference langonrock §4.3): ids in
    /// request order without repeats; the ones not found (or without the
    /// section) listed as missing. An ambiguous id is an error naming the
    /// candidates.
    pub fn get(
        &self,
        ids: &[String],
        section: Option<&str>,
        opts: &SliceOptions,
        body: &mut dyn Sources,
    ) -> Result<Fetched, String> {
        // Each id resolved once, in request order without repeats; the
        // texts of those found are read together before any is sliced.
        let mut seen = BTreeSet::new();
        let mut asked: Vec<(&String, Option<&Entry>)> = vec![];
        for id in ids {
            if !seen.insert(id.as_str()) {
                continue;
            }
            let entry = match self.resolve(id) {
                Ok(s) => self.entry(s).filter(|e| e.is_concept()),
                Err(IdError::NotFound) => None,
                Err(IdError::Ambiguous(c)) => {
                    return Err(format!(
                        "ambiguous id \"{id}\": it could be {}; pass one of those ids",
                        c.join(", ")
                    ))
                }
            };
            asked.push((id, entry));
        }
        let wanted: Vec<&Entry> = asked.iter().filter_map(|(_, e)| *e).collect();
        body.prefetch(&wanted);
        let mut found: Vec<(String, Slice)> = vec![];
        let mut missing: Vec<String> = vec![];
        for (id, entry) in asked {
            let Some(e) = entry else {
                missing.push(id.clone());
                continue;
            };
            let Some(source) = body.text(e) else {
                missing.push(id.clone());
                continue;
            };
            let text = source.get(e.compiled.body_start as usize..).unwrap_or("");
            let addressed = match section {
                None => text,
                Some(name) => match e.compiled.sections.iter().find(|s| s.name == name) {
                    Some(sec) => {
                        let a = super::text::utf16_to_byte(text, sec.start as usize);
                        let b = super::text::utf16_to_byte(text, sec.end as usize);
                        &text[a..b.max(a)]
                    }
                    None => {
                        missing.push(id.clone());
                        continue;
                    }
                },
            };
            found.push((id.clone(), slice::slice(addressed, opts)));
        }
        Ok((found, missing))
    }

    /// [`Model::get`] rendered with the `@@` framing.
    pub fn get_text(
        &self,
        ids: &[String],
        section: Option<&str>,
        opts: &SliceOptions,
        body: &mut dyn Sources,
    ) -> Result<String, String> {
        let (found, missing) = self.get(ids, section, opts, body)?;
        let f: Vec<(&str, &Slice)> = found.iter().map(|(i, s)| (i.as_str(), s)).collect();
        let m: Vec<&str> = missing.iter().map(String::as_str).collect();
        Ok(slice::render(&f, &m))
    }
}

impl Model {
    /// The validator's findings for one document as it would stand in its
    /// bundle: every per-file check, and links resolved against the
    /// bundle's other documents. What a write answers with.
    pub fn file_diagnostics(
        &self,
        bundle: &str,
        path: &str,
        text: &str,
        cfg: &crate::config::Config,
        now: Instant,
    ) -> Vec<crate::diag::Diagnostic> {
        let opts = crate::doc::ParseOptions {
            config: cfg,
            now: Some(now),
            keep_frontmatter: false,
            digests: true,
            diagnostics: true,
            skip_body: false,
        };
        let d = crate::doc::parse(path, text.as_bytes(), &opts);
        let others: Vec<String> = self
            .bundle_docs(bundle)
            .map(|(p, _)| p.to_string())
            .filter(|p| p != path)
            .collect();
        let b = crate::bundle::Bundle::from_parts(vec![d], others);
        let report = crate::bundle::validate(&b, cfg, vec![]);
        report
            .diagnostics
            .into_iter()
            .filter(|d| d.file == path)
            .collect()
    }
}

/// The advice sentence appended to the manifest's descriptions (reference
/// langonrock §4.1): deterministic for a given manifest text.
pub fn advice(manifest: &str) -> String {
    let len = utf16_len(manifest);
    let tokens = to_precision2(len.div_ceil(4) as u64);
    let mut columns = 0usize;
    let mut rows = 0usize;
    let mut row_chars = 0usize;
    for line in manifest.split('\n') {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if line.starts_with("id\t") {
            columns = utf16_len(line);
            continue;
        }
        rows += 1;
        row_chars += utf16_len(line) + 1;
    }
    let head = format!(
        "This tenant's manifest measures ~{} tokens; ",
        with_commas(tokens)
    );
    if rows == 0 {
        return head + "reading it whole is cheaper than searching.";
    }
    let mean = row_chars as f64 / rows as f64;
    let result = 120.0 + columns as f64 + mean * rows.min(16) as f64;
    if len as f64 > 20.0 * result {
        head + "prefer \"search\" over reading it whole."
    } else {
        head + "reading it whole is cheaper than searching."
    }
}

/// `Number(n.toPrecision(2))` for a non-negative integer.
fn to_precision2(n: u64) -> u64 {
    if n < 100 {
        return n;
    }
    let digits = n.to_string().len() as u32;
    let p = 10u64.pow(digits - 2);
    (n + p / 2) / p * p
}

/// `n` with a comma between each group of three digits (`20,000`), as the
/// advice sentence and the benchmark reports print counts.
pub fn with_commas(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn precision_and_commas() {
        assert_eq!(to_precision2(7), 7);
        assert_eq!(to_precision2(20550), 21000);
        assert_eq!(to_precision2(835_923), 840_000);
        assert_eq!(to_precision2(125), 130);
        assert_eq!(with_commas(21000), "21,000");
        assert_eq!(with_commas(840_000), "840,000");
        assert_eq!(with_commas(999), "999");
    }
}
