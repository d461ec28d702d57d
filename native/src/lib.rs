//! okfit: the `okfit` command line over the layers below it (store,
//! knowledge, tools, the MCP server and the daemon).

#![warn(missing_docs)]

pub mod attest;
pub mod cli;
pub mod context;
pub mod hook;
pub mod init;
pub mod kbcli;
pub mod memory;
pub mod progress;
pub mod shared;
pub mod sync;
