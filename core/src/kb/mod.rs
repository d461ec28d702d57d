//! The knowledge read model (reference langonrock §3–§6, SPEC §2): every
//! non-reserved Markdown file of a tenant's bundles becomes a manifest row
//! with a short id, searchable with BM25 and readable by slices.
//!
//! Pure like the rest of the crate: callers hand in `(bundle, path, bytes)`
//! and a `now`; storage, files and threads live in the `okfit` crate.

pub mod analyze;
pub mod compile;
pub mod model;
pub mod names;
pub mod postings;
pub mod search;
pub mod slice;
pub mod text;
