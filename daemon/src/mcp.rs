//! MCP at `/mcp` and `/mcp/{tenant}`: the knowledge tools of stdio over
//! Streamable HTTP, each request served by the tools its credential grants
//! on the tenant it names (read tools; write and delete when it may
//! write; the database tools when granted).

use crate::auth::Caller;
use crate::state::Daemon;
use okfit_mcp::http::{HttpServer, Parts, Resolve};
use okfit_tools::{Options, Toolbox};
use rmcp::model::ErrorData;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::StreamableHttpService;
use std::sync::Arc;

/// The MCP service of `daemon`, for requests [`crate::auth::mcp_caller`]
/// authenticated.
pub fn service(daemon: Arc<Daemon>) -> StreamableHttpService<HttpServer, LocalSessionManager> {
    let opts = daemon.mcp_options().clone();
    let resolve: Resolve = Arc::new(move |parts: &Parts| {
        let caller = parts
            .extensions
            .get::<Caller>()
            .ok_or_else(|| ErrorData::internal_error("the request was not authenticated", None))?;
        let tenant = daemon
            .tenant(&caller.tenant)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
        let tools = Options {
            read_only: !caller.may_write,
            database_tools: caller.database,
            ..Options::default()
        };
        Toolbox::over(tenant.writer().clone(), tenant.reader().clone(), &tools)
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))
    });
    okfit_mcp::http::service(resolve, &opts)
}
