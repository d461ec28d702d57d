//! okfit: the `okfit` command line over the layers below it (store,
//! knowledge, tools, the MCP server and the daemon).

#![warn(missing_docs)]

pub mod cli;
pub mod kbcli;
pub mod progress;
