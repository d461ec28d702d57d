//! Who may call the daemon: the bearer tokens of `<data>/tokens.json`
//! (each a tenant, read-only or writing) and [`Caller`], the extractor
//! every `/v1` route starts with, which authenticates a request once and
//! names the tenant it acts on.

use crate::reply::text;
use crate::serve::Daemon;
use axum::extract::{FromRequestParts, MatchedPath};
use axum::http::request::Parts;
use axum::http::StatusCode;
use axum::response::Response;
use okfit_core::kb::names;
use okfit_store::error::Error;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// What a token may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The tenant it reads (and maybe writes).
    pub tenant: String,
    /// Whether it may write.
    pub write: bool,
}

/// Reads `<data>/tokens.json`: `{"<token>": "<tenant>"}` is a read-only
/// grant, `{"<token>": {"tenant": "<t>", "write": true}}` a writer.
pub fn read_tokens(data: &Path) -> Result<HashMap<String, Grant>, Error> {
    let path = data.join("tokens.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(Error::Io(format!("cannot read {} ({e})", path.display()))),
    };
    let bad = |why: &str| Error::Refused(format!("{}: {why}", path.display()));
    let v: Value = serde_json::from_str(&text).map_err(|_| bad("must be a JSON object"))?;
    let Value::Object(map) = v else {
        return Err(bad("must be a JSON object"));
    };
    let mut out = HashMap::new();
    for (token, grant) in map {
        if token.is_empty() {
            return Err(bad("has an empty token"));
        }
        let g = match grant {
            Value::String(t) => Grant {
                tenant: t,
                write: false,
            },
            Value::Object(o) => Grant {
                tenant: o
                    .get("tenant")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("invalid grant"))?
                    .to_string(),
                write: o.get("write") == Some(&Value::Bool(true)),
            },
            _ => return Err(bad("invalid grant")),
        };
        names::check_tenant(&g.tenant).map_err(|e| bad(&e))?;
        out.insert(token, g);
    }
    Ok(out)
}

/// Mints a token for `tenant`, records it in `<data>/tokens.json` (mode
/// 600) and returns it.
pub fn mint_token(data: &Path, tenant: &str, write: bool) -> Result<String, Error> {
    names::check_tenant(tenant).map_err(Error::Usage)?;
    let path = data.join("tokens.json");
    let mut map: serde_json::Map<String, Value> = match std::fs::read_to_string(&path) {
        Ok(t) => match serde_json::from_str(&t) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(Error::Refused(format!(
                    "{}: must be a JSON object",
                    path.display()
                )))
            }
        },
        Err(_) => serde_json::Map::new(),
    };
    let mut raw = [0u8; 32];
    getrandom(&mut raw)?;
    let token = okfit_core::doc::hex(&raw);
    map.insert(
        token.clone(),
        if write {
            json!({"tenant": tenant, "write": true})
        } else {
            json!(tenant)
        },
    );
    let text = serde_json::to_string_pretty(&map).unwrap_or_default();
    okfit_store::beneath::Root::create(data)?.write_mode(
        "tokens.json",
        text.as_bytes(),
        "tokens.json",
        0o600,
    )?;
    Ok(token)
}

fn getrandom(buf: &mut [u8]) -> Result<(), Error> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .map_err(|e| Error::Io(format!("no randomness for a token ({e})")))
}

/// A token's sha256: what the daemon keeps and compares.
pub(crate) fn token_digest(token: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(token.as_bytes()).into()
}

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
            .is_ok_and(|m| m.as_str().starts_with("/v1/{tenant}/"));
        let path_tenant = tenant_form
            .then(|| parts.uri.path().split('/').filter(|s| !s.is_empty()).nth(1))
            .flatten()
            .map(decode);
        let (tenant, may_write) = if daemon.token_count() == 0 {
            match path_tenant {
                Some(t) => (t, true),
                None => {
                    return Err(text(
                        StatusCode::UNAUTHORIZED,
                        "tenant required in path when no tokens exist",
                    ))
                }
            }
        } else {
            let bearer = parts
                .headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.strip_prefix("Bearer "))
                .map(str::trim);
            let Some(grant) = bearer.and_then(|b| daemon.grant(b)) else {
                return Err(text(
                    StatusCode::UNAUTHORIZED,
                    "invalid or missing bearer token",
                ));
            };
            if path_tenant.as_ref().is_some_and(|t| *t != grant.tenant) {
                return Err(text(
                    StatusCode::FORBIDDEN,
                    "token does not grant access to that tenant",
                ));
            }
            (grant.tenant.clone(), grant.write)
        };
        names::check_tenant(&tenant).map_err(|e| text(StatusCode::BAD_REQUEST, e))?;
        Ok(Caller { tenant, may_write })
    }
}

fn decode(seg: &str) -> String {
    percent_encoding::percent_decode_str(seg)
        .decode_utf8_lossy()
        .into_owned()
}
