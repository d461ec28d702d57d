//! Who may call the daemon: [`Caller`], the extractor every `/v1` route
//! starts with, which authenticates a request once against the daemon's
//! tokens and names the tenant it acts on.

use crate::oauth::{Refused, SCOPE_READ, SCOPE_WRITE};
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
        let (tenant, may_write, database) = if !daemon.has_credentials() {
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
            let grant = daemon
                .authenticate(bearer(&parts.headers))
                .map_err(|r| refusal(daemon, r))?;
            if path_tenant.as_ref().is_some_and(|t| *t != grant.tenant) {
                return Err(text(
                    StatusCode::FORBIDDEN,
                    "token does not grant access to that tenant",
                ));
            }
            (grant.tenant, grant.write, grant.database)
        };
        names::check_tenant(&tenant).map_err(|e| text(StatusCode::BAD_REQUEST, e))?;
        Ok(Caller {
            tenant,
            may_write,
            database,
        })
    }
}

/// The answer to a refused credential: `401` with `WWW-Authenticate:
/// Bearer` (naming the protected-resource metadata when an authorization
/// server is configured, so a client can get a token), or `403` when an
/// access token lacks every okfit scope.
fn refusal(daemon: &Daemon, why: Refused) -> Response {
    let meta = daemon
        .oauth()
        .map(|o| format!(" resource_metadata=\"{}\",", o.metadata_url()))
        .unwrap_or_default();
    let (status, body, challenge) = match why {
        Refused::Invalid(m) => {
            let challenge = if daemon.oauth().is_some() {
                format!("Bearer{meta} error=\"invalid_token\"")
            } else {
                "Bearer".to_string()
            };
            (StatusCode::UNAUTHORIZED, m, challenge)
        }
        Refused::Scope => (
            StatusCode::FORBIDDEN,
            format!("the token has none of the scopes {SCOPE_READ}, {SCOPE_WRITE}"),
            format!("Bearer{meta} error=\"insufficient_scope\", scope=\"{SCOPE_READ}\""),
        ),
    };
    let mut r = text(status, body);
    if let Ok(v) = axum::http::HeaderValue::from_str(&challenge) {
        r.headers_mut()
            .insert(axum::http::header::WWW_AUTHENTICATE, v);
    }
    r
}

/// Authenticates an MCP request as every `/v1` route does, holds it to
/// its credential's rate limit (429 with `Retry-After` past it), then
/// hands the [`Caller`] to the MCP service in the request's extensions.
pub async fn mcp_caller(
    axum::extract::State(daemon): axum::extract::State<Arc<Daemon>>,
    req: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let (mut parts, body) = req.into_parts();
    let caller = match Caller::from_request_parts(&mut parts, &daemon).await {
        Ok(c) => c,
        Err(refusal) => return refusal,
    };
    // The credential's own budget; without credentials (a unix socket),
    // the tenant's.
    let key = crate::tokens::token_digest(bearer(&parts.headers).unwrap_or(&caller.tenant));
    if let Err(wait) = daemon.admit(&key) {
        let mut r = text(
            StatusCode::TOO_MANY_REQUESTS,
            "too many requests with this credential; retry after the time in Retry-After",
        );
        let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
        r.headers_mut().insert(
            axum::http::header::RETRY_AFTER,
            axum::http::HeaderValue::from(secs.max(1)),
        );
        return r;
    }
    parts.extensions.insert(caller);
    next.run(axum::extract::Request::from_parts(parts, body))
        .await
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
