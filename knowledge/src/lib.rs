//! okfit-knowledge: knowledge behind a connection (a bundle folder, a
//! store tenant, or a daemon reached over HTTP), kept current and
//! answering manifest, search, get, history and commits; and the project
//! mode's live view of the project's own bundle.

#![warn(missing_docs)]

mod ahead;
mod cache;
pub mod documents;
mod folder;
pub mod kb;
pub mod live;
pub mod options;
pub mod project;
pub mod remote;
mod tenant;
mod view;
pub mod warm;
pub mod wire;

pub use kb::Knowledge;
pub use options::GetOptions;
