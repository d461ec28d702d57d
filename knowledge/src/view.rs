//! The read model one connection answers from: the compiled documents, the
//! search index, and the manifest texts already rendered.

use okfit_core::kb::model::Model;
use okfit_core::kb::search::{self, DocTerms, Index};
use okfit_core::time::Instant;
use okfit_store::error::Error;
use std::sync::{Arc, Mutex};

struct Cached {
    generation: u64,
    bundle: Option<String>,
    text: Arc<str>,
    until: Option<i64>,
}

/// The state of one connection's knowledge. Reads take it shared; the
/// manifest texts rendered from it are kept behind a lock of their own, so
/// that concurrent reads can fill the cache.
pub(crate) struct View {
    pub(crate) model: Model,
    pub(crate) index: Index,
    manifest: Mutex<Vec<Cached>>,
}

impl View {
    /// An empty view of `tenant`; `complete` when every posting is in
    /// memory (a folder) rather than read on demand (a store).
    pub(crate) fn new(tenant: &str, complete: bool) -> View {
        View {
            model: Model::new(tenant),
            index: Index::new(complete),
            manifest: Mutex::new(vec![]),
        }
    }

    /// A view for commits beside this one: the same documents (shared
    /// with this view until either changes them) and lengths, no postings.
    pub(crate) fn for_commits(&self) -> View {
        View {
            model: self.model.clone(),
            index: self.index.lengths_only(),
            manifest: Mutex::new(vec![]),
        }
    }

    /// The manifest TSV, rendered once per model generation and bundle
    /// (and again when a `stale_after` passes).
    pub(crate) fn manifest(&self, bundle: Option<&str>, now: Instant) -> Result<Arc<str>, Error> {
        let gen = self.model.generation();
        let lock = || self.manifest.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(c) = lock().iter().find(|c| {
            c.generation == gen
                && c.bundle.as_deref() == bundle
                && c.until.is_none_or(|u| now.0 < u)
        }) {
            return Ok(c.text.clone());
        }
        let (text, until) = self.model.manifest(bundle, now).map_err(Error::Refused)?;
        let text: Arc<str> = Arc::from(text);
        let mut cache = lock();
        cache.retain(|c| c.generation == gen && c.bundle.as_deref() != bundle);
        cache.push(Cached {
            generation: gen,
            bundle: bundle.map(str::to_string),
            text: text.clone(),
            until,
        });
        Ok(text)
    }

    /// Puts stored rows into the model, with the search length of each
    /// concept (a store keeps postings on disk, lengths in memory).
    pub(crate) fn upsert_rows(&mut self, rows: Vec<okfit_store::sqlite::DocRow>) {
        let mut docs = Vec::with_capacity(rows.len());
        for r in rows {
            if !r.compiled.nav {
                self.index.set_doc_len(r.slot, r.len);
            }
            docs.push((r.slot, r.bundle, r.path, r.hash, r.compiled));
        }
        self.model.fill(docs);
    }

    /// The search terms of the document in `slot` whose source is `text`.
    pub(crate) fn terms(&self, slot: u32, text: &str) -> Option<DocTerms> {
        terms_in(&self.model, slot, text)
    }
}

/// The search terms of the document in `model`'s `slot` whose source is
/// `text` (none for a navigation document).
pub(crate) fn terms_in(model: &Model, slot: u32, text: &str) -> Option<DocTerms> {
    let (names, fields) = model.search_fields(slot)?;
    let e = model.entry(slot)?;
    let body = text.get(e.compiled.body_start as usize..).unwrap_or("");
    Some(search::doc_terms(&names, &fields, body))
}
