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

/// CORS for the allowed browser origins (none: no CORS headers, so a
/// browser keeps every other page's script from reading an answer). A
/// preflight is answered before authentication, as browsers send it
/// without credentials.
pub fn cors(origins: &[String]) -> tower_http::cors::CorsLayer {
    use axum::http::{header, HeaderName, HeaderValue, Method};
    use tower_http::cors::{AllowOrigin, CorsLayer};
    let allowed: Vec<String> = origins.to_vec();
    let allow = AllowOrigin::predicate(move |origin: &HeaderValue, _| {
        origin
            .to_str()
            .is_ok_and(|o| allowed.iter().any(|a| origin_matches(a, o)))
    });
    let mcp = |name: &'static str| HeaderName::from_static(name);
    CorsLayer::new()
        .allow_origin(allow)
        .allow_methods([Method::GET, Method::POST, Method::DELETE])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            header::ACCEPT,
            mcp("mcp-protocol-version"),
            mcp("mcp-session-id"),
            mcp("mcp-method"),
            mcp("mcp-name"),
            mcp("last-event-id"),
        ])
        .expose_headers([mcp("mcp-session-id"), header::WWW_AUTHENTICATE])
}

/// Whether the browser's `origin` is the allowed `entry`, with the rules
/// MCP's own Origin check applies: `:*` is any port, and an origin without
/// a port has its scheme's default (443 for https, 80 for http).
fn origin_matches(entry: &str, origin: &str) -> bool {
    /// (scheme, host, port): the port follows the last `:` unless that
    /// `:` is inside an IPv6 literal.
    fn split(o: &str) -> Option<(&str, &str, Option<&str>)> {
        let (scheme, rest) = o.split_once("://")?;
        Some(match rest.rfind(':') {
            Some(i) if !rest[i..].contains(']') => (scheme, &rest[..i], Some(&rest[i + 1..])),
            _ => (scheme, rest, None),
        })
    }
    let default = |scheme: &str| match scheme {
        "https" => Some("443"),
        "http" => Some("80"),
        _ => None,
    };
    let (Some((es, eh, ep)), Some((os, oh, op))) = (split(entry), split(origin)) else {
        return entry == origin;
    };
    if !es.eq_ignore_ascii_case(os) || !eh.eq_ignore_ascii_case(oh) {
        return false;
    }
    match ep {
        Some("*") | None => true,
        Some(p) => op.or_else(|| default(os)) == Some(p),
    }
}

#[cfg(test)]
mod tests {
    use super::origin_matches;

    #[test]
    fn origins_match_as_the_mcp_origin_check_does() {
        assert!(origin_matches(
            "https://app.example:443",
            "https://app.example"
        ));
        assert!(origin_matches(
            "https://app.example",
            "https://app.example:8443"
        ));
        assert!(origin_matches(
            "http://localhost:*",
            "http://localhost:5173"
        ));
        assert!(origin_matches("http://[::1]:3000", "http://[::1]:3000"));
        assert!(!origin_matches(
            "https://app.example:443",
            "http://app.example"
        ));
        assert!(!origin_matches(
            "https://app.example:443",
            "https://app.example:8443"
        ));
        assert!(!origin_matches(
            "https://app.example",
            "https://evil.example"
        ));
        assert!(!origin_matches("http://[::1]:3000", "http://[::1]:4000"));
        assert!(origin_matches("null", "null"));
    }
}
