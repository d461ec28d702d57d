//! okfit-daemon: `okfit serve`, the store shared by many agents over
//! HTTP (`/v1` routes, bearer tokens, TLS, a Unix socket), the routes a
//! load balancer and monitoring call (`/healthz`, `/readyz`, `/metrics`),
//! MCP over Streamable HTTP (`/mcp`), and the sources.json imports it
//! keeps current.

#![warn(missing_docs)]

mod auth;
mod body;
mod mcp;
mod metrics;
mod oauth;
mod observe;
mod ops;
mod reply;
mod routes;
pub mod serve;
pub mod sources;
mod state;
mod tokens;
