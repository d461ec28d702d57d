//! MCP over Streamable HTTP (rmcp's server transport): the server of
//! stdio, with the toolbox of each request resolved from that request by
//! the host that mounts it (a daemon: who calls, and which tenant).
//! Protocol revision 2026-07-28 is served without sessions, so any replica
//! answers any request; older revisions get sessions.

use crate::{info, Server};
use okfit_tools::Toolbox;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{RoleServer, ServerHandler};
use std::sync::Arc;

pub use http::request::Parts;

/// The toolbox that serves a request, from the request's HTTP parts (its
/// extensions hold what the host's authentication found). `Err` is the
/// JSON-RPC error the request gets.
pub type Resolve = Arc<dyn Fn(&Parts) -> Result<Toolbox, ErrorData> + Send + Sync>;

/// What the HTTP transport accepts.
#[derive(Clone, Debug)]
pub struct HttpOptions {
    /// `Host` values accepted (a name matches any port; `name:port` only
    /// that port). Others get 403: a page on another site that resolves
    /// its own name to this server cannot reach it (DNS rebinding).
    pub allowed_hosts: Vec<String>,
    /// Browser origins accepted (`scheme://host:port`, `:*` for any port).
    /// A request carrying any other `Origin` gets 403; requests without
    /// one (non-browser clients) pass.
    pub allowed_origins: Vec<String>,
    /// Largest request body, bytes (413 past it).
    pub max_body: usize,
}

/// The MCP server of one request: a [`Server`] over the toolbox the host
/// resolves for it.
#[derive(Clone)]
pub struct HttpServer {
    resolve: Resolve,
}

impl HttpServer {
    /// The server of the request `context` belongs to. Resolving may open
    /// a store: it runs in place, off the async workers' other tasks.
    fn server(&self, context: &RequestContext<RoleServer>) -> Result<Server, ErrorData> {
        let parts = context
            .extensions
            .get::<Parts>()
            .ok_or_else(|| ErrorData::internal_error("the request has no HTTP parts", None))?;
        crate::in_place(|| {
            (self.resolve)(parts).map(|tools| Server {
                tools,
                activity: Arc::default(),
            })
        })
    }
}

impl ServerHandler for HttpServer {
    fn get_info(&self) -> ServerConfig {
        info(false)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&crate::PROTOCOLS)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let server = self.server(&context)?;
        server.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let server = self.server(&context)?;
        server.call_tool(request, context).await
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let server = self.server(&context)?;
        server.list_resources(request, context).await
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let server = self.server(&context)?;
        server.read_resource(request, context).await
    }
}

/// The Streamable HTTP service to mount (at `/mcp`): JSON answers where
/// a call sends nothing before its result, sessions for revisions before
/// 2026-07-28 only.
pub fn service(
    resolve: Resolve,
    opts: &HttpOptions,
) -> StreamableHttpService<HttpServer, LocalSessionManager> {
    let config = StreamableHttpServerConfig::default()
        .with_json_response(true)
        .with_allowed_hosts(opts.allowed_hosts.clone())
        .with_allowed_origins(opts.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(opts.max_body);
    let server = HttpServer { resolve };
    StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    )
}
