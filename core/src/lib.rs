//! okfit-core: the Open Knowledge Format model and validator.
//!
//! Pure: no files, clocks, sockets or threads. Callers hand in `(path,
//! bytes)` pairs, the okfit.toml text and a `now`; everything else (the
//! walk, config discovery, git, parallelism) lives in the `okfit` crate.
//! It builds for `wasm32-unknown-unknown`.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod actor;
pub mod bundle;
pub mod config;
pub mod derive;
pub mod diag;
pub mod doc;
pub mod frontmatter;
pub mod kb;
pub mod markdown;
pub mod node;
pub mod overlay;
pub mod paths;
pub mod profile;
pub mod query;
pub mod report;
pub mod scaffold;
mod scan_map;
pub mod splice;
pub mod text;
pub mod time;
pub mod yaml;
