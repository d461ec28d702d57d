//! Access tokens from an OAuth authorization server (MCP authorization):
//! JWTs checked against the issuer's signing keys (a JWKS file or URL),
//! the issuer, this server's resource URL as audience, and expiry; their
//! scopes become a grant. And the protected-resource metadata document
//! (RFC 9728) that tells a client which server issues them.
//!
//! A token names its tenant in the `okfit_tenant` claim; the scopes
//! `okfit:read`, `okfit:write` (reads too) and `okfit:database` say what
//! it may do.

use crate::tokens::Grant;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{decode, decode_header, DecodingKey, Validation};
use okfit_core::kb::names;
use okfit_store::error::Error;
use serde::Deserialize;
use serde_json::{json, Value};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The scope that lets a token read.
pub const SCOPE_READ: &str = "okfit:read";
/// The scope that lets a token write (and read).
pub const SCOPE_WRITE: &str = "okfit:write";
/// The scope that adds the database tools.
pub const SCOPE_DATABASE: &str = "okfit:database";

/// How often at most the keys are fetched again for a token signed by a
/// key the server does not know (the issuer rotated its keys).
const REFETCH_AFTER: Duration = Duration::from_secs(300);

/// `--oauth-issuer`, `--jwks` and `--audience`.
#[derive(Clone, Debug, Default)]
pub struct OAuthOptions {
    /// The authorization server's issuer identifier (the `iss` claim).
    pub issuer: String,
    /// Its signing keys: a JWKS file, or an `https://` (or loopback
    /// `http://`) URL.
    pub jwks: String,
    /// This server's resource URL (the `aud` claim), e.g.
    /// `https://kb.example.com/mcp`.
    pub audience: String,
}

/// Why a token was not accepted.
#[derive(Debug)]
pub enum Refused {
    /// Not a valid token for this server (401, `invalid_token`).
    Invalid(String),
    /// Valid, without a scope that allows anything (403,
    /// `insufficient_scope`).
    Scope,
}

/// The configured authorization server and its keys.
pub struct OAuth {
    opts: OAuthOptions,
    keys: Mutex<(JwkSet, Instant)>,
}

#[derive(Deserialize)]
struct Claims {
    #[serde(default)]
    scope: Option<String>,
    #[serde(default)]
    scp: Option<Vec<String>>,
    #[serde(default)]
    okfit_tenant: Option<String>,
}

impl OAuth {
    /// Reads the keys; an unreadable or empty key set is a usage error at
    /// start, not a refusal of every request later.
    pub fn load(opts: OAuthOptions) -> Result<OAuth, Error> {
        for (flag, v) in [
            ("--oauth-issuer", &opts.issuer),
            ("--audience", &opts.audience),
        ] {
            if !(v.starts_with("https://") || v.starts_with("http://")) {
                return Err(Error::Usage(format!("{flag} must be a URL, got {v:?}")));
            }
        }
        let keys = fetch(&opts.jwks)?;
        if keys.keys.is_empty() {
            return Err(Error::Usage(format!("--jwks {}: no keys", opts.jwks)));
        }
        Ok(OAuth {
            opts,
            keys: Mutex::new((keys, Instant::now())),
        })
    }

    /// The grant of a JWT access token.
    pub fn grant(&self, token: &str) -> Result<Grant, Refused> {
        let bad = |why: &str| Refused::Invalid(why.to_string());
        let header = decode_header(token).map_err(|_| bad("not a JWT"))?;
        let key = self.key(header.kid.as_deref())?;
        let mut v = Validation::new(header.alg);
        v.set_issuer(&[&self.opts.issuer]);
        v.set_audience(&[&self.opts.audience]);
        v.set_required_spec_claims(&["exp", "iss", "aud"]);
        let claims = decode::<Claims>(token, &key, &v)
            .map_err(|e| Refused::Invalid(format!("the token was refused ({e})")))?
            .claims;
        let scopes: Vec<String> = match (claims.scope, claims.scp) {
            (Some(s), _) => s.split_whitespace().map(str::to_string).collect(),
            (None, Some(v)) => v,
            (None, None) => vec![],
        };
        let has = |s: &str| scopes.iter().any(|x| x == s);
        let write = has(SCOPE_WRITE);
        if !(write || has(SCOPE_READ)) {
            return Err(Refused::Scope);
        }
        let tenant = claims
            .okfit_tenant
            .ok_or_else(|| bad("the token names no tenant (okfit_tenant)"))?;
        names::check_tenant(&tenant).map_err(|e| Refused::Invalid(e.to_string()))?;
        Ok(Grant {
            tenant,
            write,
            database: has(SCOPE_DATABASE),
        })
    }

    /// The key `kid` names (the only key when the token names none),
    /// fetching the keys again, at most every [`REFETCH_AFTER`], when it
    /// is unknown.
    fn key(&self, kid: Option<&str>) -> Result<DecodingKey, Refused> {
        let mut keys = self.keys.lock().unwrap_or_else(|p| p.into_inner());
        if find(&keys.0, kid).is_none() && keys.1.elapsed() >= REFETCH_AFTER {
            keys.1 = Instant::now();
            match fetch(&self.opts.jwks) {
                Ok(fresh) => keys.0 = fresh,
                Err(e) => tracing::warn!(error = %e, "cannot fetch the issuer's keys again"),
            }
        }
        let jwk = find(&keys.0, kid).ok_or_else(|| {
            Refused::Invalid("signed by a key the issuer does not publish".into())
        })?;
        DecodingKey::from_jwk(jwk).map_err(|e| Refused::Invalid(format!("unusable key ({e})")))
    }

    /// The protected-resource metadata document.
    pub fn metadata(&self) -> Value {
        json!({
            "resource": self.opts.audience,
            "authorization_servers": [self.opts.issuer],
            "scopes_supported": [SCOPE_READ, SCOPE_WRITE, SCOPE_DATABASE],
            "bearer_methods_supported": ["header"],
        })
    }

    /// Where the metadata document is: the resource's origin, then
    /// `/.well-known/oauth-protected-resource`, then the resource's path.
    pub fn metadata_url(&self) -> String {
        let a = &self.opts.audience;
        let after_scheme = a.find("://").map_or(0, |i| i + 3);
        let (origin, path) = match a[after_scheme..].find('/') {
            Some(i) => a.split_at(after_scheme + i),
            None => (a.as_str(), ""),
        };
        format!(
            "{origin}/.well-known/oauth-protected-resource{}",
            path.trim_end_matches('/')
        )
    }
}

/// The key of `kid` in `set`; with no `kid`, the set's only key.
fn find<'a>(set: &'a JwkSet, kid: Option<&str>) -> Option<&'a jsonwebtoken::jwk::Jwk> {
    match kid {
        Some(k) => set.find(k),
        None if set.keys.len() == 1 => set.keys.first(),
        None => None,
    }
}

/// The key set at `source`: a file, or a URL fetched with the trusted
/// roots of every okfit TLS client.
fn fetch(source: &str) -> Result<JwkSet, Error> {
    let text = if source.starts_with("https://") || source.starts_with("http://") {
        get(source)?
    } else {
        std::fs::read_to_string(source)
            .map_err(|e| Error::Usage(format!("cannot read --jwks {source} ({e})")))?
    };
    serde_json::from_str(&text)
        .map_err(|e| Error::Usage(format!("--jwks {source} is not a JSON Web Key Set ({e})")))
}

/// The body of `GET url`.
fn get(url: &str) -> Result<String, Error> {
    use std::sync::Arc;
    let roots: Vec<ureq::tls::Certificate<'static>> = okfit_store::tls::trusted_roots()?
        .iter()
        .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
        .collect();
    let tls = ureq::tls::TlsConfig::builder()
        .provider(ureq::tls::TlsProvider::Rustls)
        .root_certs(ureq::tls::RootCerts::Specific(Arc::new(roots)))
        .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .build();
    let agent: ureq::Agent = ureq::config::Config::builder()
        .tls_config(tls)
        .timeout_global(Some(Duration::from_secs(10)))
        .max_redirects(3)
        .build()
        .into();
    agent
        .get(url)
        .call()
        .and_then(|mut r| r.body_mut().with_config().limit(1 << 20).read_to_string())
        .map_err(|e| Error::Io(format!("cannot fetch --jwks {url} ({e})")))
}
