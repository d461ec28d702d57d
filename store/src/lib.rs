//! okfit-store: the native ground floor. Typed errors, files reached
//! without following links, the bundle walk, config discovery, connection
//! strings, git provenance, the folder watcher and the live view of a
//! folder, the SQLite and PostgreSQL stores, the roots TLS clients trust,
//! progress of long work, and the domain of a write. Nothing here knows about knowledge views, tools,
//! MCP or HTTP.

#![warn(missing_docs)]

pub mod backend;
pub mod background;
pub mod beneath;
pub mod change;
pub mod clock;
pub mod discover;
pub mod dsn;
pub mod error;
pub mod git;
pub mod live;
pub mod postgres;
pub mod progress;
pub mod sqlite;
pub mod tls;
pub mod walk;
pub mod watch;

/// okfit's version (one for every crate of the workspace).
pub const VERSION: &str = env!("CARGO_PKG_VERSION");
