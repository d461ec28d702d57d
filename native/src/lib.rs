//! okfit: the native side of okfit. Files, config discovery, the bundle
//! walk, git provenance and the `okfit` CLI, over the pure `okfit-core`.

#![warn(missing_docs)]

pub mod beneath;
pub mod cli;
pub mod discover;
pub mod dsn;
pub mod error;
pub mod git;
pub mod kb;
pub mod kbcli;
pub mod mcp;
pub mod project;
pub mod remote;
pub mod serve;
pub mod sources;
pub mod store;
pub mod walk;
pub mod watch;

/// This front end's version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
