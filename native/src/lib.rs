//! okfit: the native side of okfit. Files, config discovery, the bundle
//! walk, git provenance and the `okfit` CLI, over the pure `okfit-core`.

#![warn(missing_docs)]

pub mod cli;
pub mod discover;
pub mod error;
pub mod git;
pub mod mcp;
pub mod project;
pub mod walk;

/// This front end's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
