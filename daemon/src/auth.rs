//! Who may call the daemon: [`Caller`], the extractor every `/v1` route
//! starts with, which authenticates a request once against the daemon's
//! tokens and names the tenant it acts on.

use crate::reply::text;
use crate::state::Daemon;
use axum::extract::{FromRequestParts, MatchedPath};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use okfit_core::kb::names;
use std::sync::Arc;

/// An authenticated request: the tenant it acts on and whether its token
/// may write. Without tokens (a unix socket) the tenant comes from the
/// path and may be written; with tokens the token names the tenant, and a
/// tenant in the path must be that one.
#[derive(Clone, Debug)]
pub struct Caller {
    /// The tenant, a valid name.
    pub tenant: String,
    /// Whether writes are allowed.
    pub may_write: bool,
    /// Whether MCP offers the database tools.
    pub database: bool,
}

impl FromRequestParts<Arc<Daemon>> for Caller {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        daemon: &Arc<Daemon>,
    ) -> Result<Caller, Response> {
        // The tenant form's second segment, decoded once and lossily as
        // before typed routes (invalid UTF-8 becomes U+FFFD, which the
        // name check below refuses); axum's own decoding would reject it.
        let tenant_form = MatchedPath::from_request_parts(parts, daemon)
            .await
            .is_ok_and(|m| {
                m.as_str().starts_with("/v1/{tenant}/") || m.as_str() == "/mcp/{tenant}"
            });
        let path_tenant = tenant_form
            .then(|| parts.uri.path().split('/').filter(|s| !s.is_empty()).nth(1))
            .flatten()
            .map(decode);
        let (tenant, may_write, database) = if daemon.token_count() == 0 {
            match path_tenant {
                Some(t) => (t, true, true),
                None => {
                    return Err(text(
                        StatusCode::UNAUTHORIZED,
                        "tenant required in path when no tokens exist",
                    ))
                }
            }
        } else {
            let Some(grant) = bearer(&parts.headers).and_then(|b| daemon.grant(b)) else {
                return Err(unauthorised("invalid or missing bearer token"));
            };
            if path_tenant.as_ref().is_some_and(|t| *t != grant.tenant) {
                return Err(text(
                    StatusCode::FORBIDDEN,
                    "token does not grant access to that tenant",
                ));
            }
            (grant.tenant.clone(), grant.write, grant.database)
        };
        names::check_tenant(&tenant).map_err(|e| text(StatusCode::BAD_REQUEST, e))?;
        Ok(Caller {
            tenant,
            may_write,
            database,
        })
    }
}

/// `401` with `WWW-Authenticate: Bearer`, the scheme a client must use.
fn unauthorised(why: &'static str) -> Response {
    let mut r = text(StatusCode::UNAUTHORIZED, why);
    r.headers_mut().insert(
        axum::http::header::WWW_AUTHENTICATE,
        axum::http::HeaderValue::from_static("Bearer"),
    );
    r
}

/// Authenticates an MCP request as every `/v1` route does, then hands the
/// [`Caller`] to the MCP service in the request's extensions.
pub async fn mcp_caller(
    axum::extract::State(daemon): axum::extract::State<Arc<Daemon>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (mut parts, body) = req.into_parts();
    match Caller::from_request_parts(&mut parts, &daemon).await {
        Ok(caller) => {
            parts.extensions.insert(caller);
            next.run(axum::extract::Request::from_parts(parts, body))
                .await
        }
        Err(refusal) => refusal,
    }
}

/// The bearer token of a request's `Authorization` header.
pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim)
}

fn decode(seg: &str) -> String {
    percent_encoding::percent_decode_str(seg)
        .decode_utf8_lossy()
        .into_owned()
}
