//! `okfit serve`: one warm process for many agents. HTTP/1.1 on a unix
//! socket, or on TCP with bearer tokens (and TLS off loopback), speaking
//! the routes of reference langonrock §1.4. Each tenant's read model stays
//! in memory and is updated by every commit, whoever made it.

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use okfit_core::kb::names;
use okfit_core::kb::slice::SliceOptions;
use okfit_knowledge::{GetOptions, Knowledge};
use okfit_store::change::{Change, CommitError, Pre};
use okfit_store::error::{Error, Kind};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Largest request body (a 16 MiB transaction plus JSON framing).
pub const MAX_BODY: usize = okfit_store::change::MAX_REQUEST_BYTES;

/// How long a client has to send a request's headers (and a TLS
/// handshake) before its connection is closed.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Connections served at once by default; past this, new connections wait in the
/// listen queue until one closes, and those already open are unaffected.
pub const MAX_CONNECTIONS: usize = 512;

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
fn token_digest(token: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(token.as_bytes()).into()
}

/// The shared state of a running daemon.
pub struct Daemon {
    data: PathBuf,
    /// The sha256 of each token with its grant (digested once, at start).
    tokens: Vec<([u8; 32], Grant)>,
    tenants: Mutex<HashMap<String, Arc<Tenant>>>,
}

/// One tenant's knowledge, split so that a commit never stalls a read: a
/// writer whose connection and view serialise commits, and a reader with
/// a SQLite connection of its own. WAL lets the reader's transactions run
/// beside a commit; before each answer the reader catches up with the
/// commits made since its last look (as it would with another process's).
pub struct Tenant {
    writer: Arc<Knowledge>,
    reader: Arc<Knowledge>,
}

impl Tenant {
    /// The knowledge commits go through.
    pub fn writer(&self) -> &Arc<Knowledge> {
        &self.writer
    }

    /// The knowledge reads go through.
    pub fn reader(&self) -> &Arc<Knowledge> {
        &self.reader
    }
}

impl Daemon {
    /// The grant of a bearer token. Every known token is compared, each in
    /// constant time over its sha256, so the time taken says nothing about
    /// how close a guess came.
    pub fn grant(&self, bearer: &str) -> Option<&Grant> {
        use subtle::ConstantTimeEq;
        let given = token_digest(bearer);
        let mut found = None;
        for (known, grant) in &self.tokens {
            if bool::from(known.ct_eq(&given)) {
                found = Some(grant);
            }
        }
        found
    }

    /// A daemon over `data` with these grants.
    pub fn new(data: PathBuf, tokens: HashMap<String, Grant>) -> Daemon {
        Daemon {
            data,
            tokens: tokens
                .into_iter()
                .map(|(t, g)| (token_digest(&t), g))
                .collect(),
            tenants: Mutex::new(HashMap::new()),
        }
    }

    /// The warm knowledge of a tenant (opened on first use).
    pub fn tenant(&self, tenant: &str) -> Result<Arc<Tenant>, Error> {
        let mut map = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = map.get(tenant) {
            return Ok(k.clone());
        }
        let open = || {
            Knowledge::from_dsn(okfit_store::dsn::Dsn::Store {
                root: self.data.clone(),
                tenant: tenant.to_string(),
            })
            .map(Arc::new)
        };
        let t = Arc::new(Tenant {
            writer: open()?,
            reader: open()?,
        });
        map.insert(tenant.to_string(), t.clone());
        Ok(t)
    }
}

/// A reply with a status and a plain-text body.
fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (
        status,
        [("content-type", "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

fn json_reply(status: StatusCode, v: Value) -> Response {
    (
        status,
        [("content-type", "application/json")],
        v.to_string(),
    )
        .into_response()
}

fn conflict(message: &str) -> Response {
    json_reply(
        StatusCode::CONFLICT,
        json!({"code": "CONFLICT", "message": message}),
    )
}

/// Maps an error to its status by its kind (reference §1.4); the kind
/// also travels in the `okfit-error` header, so a client rebuilds it
/// without reading the message.
fn error_reply(e: Error) -> Response {
    let kind = e.kind();
    let mut r = match kind {
        Kind::Conflict => conflict(&e.to_string()),
        k => text(
            StatusCode::from_u16(k.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            e.to_string(),
        ),
    };
    r.headers_mut().insert(
        ERROR_KIND_HEADER,
        axum::http::HeaderValue::from_static(kind.name()),
    );
    r
}

/// The header that names an error reply's [`Kind`].
pub const ERROR_KIND_HEADER: &str = "okfit-error";

fn commit_reply(e: CommitError, changes: &[Change], status: StatusCode) -> Response {
    match e {
        CommitError::Precondition { index, failure } => {
            let c = &changes[index];
            json_reply(
                status,
                json!({
                    "code": "PRECONDITION",
                    "message": failure.message,
                    "index": index,
                    "bundle": c.bundle,
                    "path": c.path,
                    "current": failure.current,
                }),
            )
        }
        CommitError::Other(e) => error_reply(e),
    }
}

const VERBS: [&str; 11] = [
    "manifest",
    "snapshot",
    "get",
    "search",
    "source",
    "bundles",
    "sync",
    "transact",
    "history",
    "restore",
    "diagnostics",
];

fn decode(seg: &str) -> String {
    percent_encoding::percent_decode_str(seg)
        .decode_utf8_lossy()
        .into_owned()
}

fn query_param(uri: &Uri, key: &str) -> Option<String> {
    let q = uri.query()?;
    url::form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
}

/// Everything a request needs once routed and authorised.
struct Req {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
    verb: String,
    rest: Vec<String>,
    may_write: bool,
}

/// The whole HTTP surface: one handler that routes by path.
pub async fn handle(
    daemon: Arc<Daemon>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let segs: Vec<String> = uri
        .path()
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    if segs.first().map(String::as_str) != Some("v1") || segs.len() < 2 {
        return text(StatusCode::NOT_FOUND, "no such route");
    }
    let (path_tenant, verb, rest) = if segs.len() >= 3 && VERBS.contains(&segs[2].as_str()) {
        (Some(segs[1].clone()), segs[2].clone(), segs[3..].to_vec())
    } else if VERBS.contains(&segs[1].as_str()) {
        (None, segs[1].clone(), segs[2..].to_vec())
    } else {
        return text(StatusCode::NOT_FOUND, "no such route");
    };
    // Authorisation.
    let bearer = headers
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::trim);
    let (tenant, may_write) = if daemon.tokens.is_empty() {
        match path_tenant {
            Some(t) => (t, true),
            None => {
                return text(
                    StatusCode::UNAUTHORIZED,
                    "tenant required in path when no tokens exist",
                )
            }
        }
    } else {
        let Some(grant) = bearer.and_then(|b| daemon.grant(b)) else {
            return text(StatusCode::UNAUTHORIZED, "invalid or missing bearer token");
        };
        if path_tenant.as_ref().is_some_and(|t| *t != grant.tenant) {
            return text(
                StatusCode::FORBIDDEN,
                "token does not grant access to that tenant",
            );
        }
        (grant.tenant.clone(), grant.write)
    };
    if let Err(e) = names::check_tenant(&tenant) {
        return text(StatusCode::BAD_REQUEST, e);
    }
    // Methods.
    let needs_post = [
        "get",
        "search",
        "transact",
        "restore",
        "sync",
        "diagnostics",
    ];
    if needs_post.contains(&verb.as_str()) && method != Method::POST {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{verb} requires POST"),
        );
    }
    if ["manifest", "snapshot", "history"].contains(&verb.as_str()) && method != Method::GET {
        return text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{verb} requires GET"),
        );
    }
    let kb = match daemon.tenant(&tenant) {
        Ok(k) => k,
        Err(e) => return error_reply(e),
    };
    let req = Req {
        method,
        uri,
        headers,
        body,
        verb,
        rest,
        may_write,
    };
    // Store work blocks (SQLite reads, a commit's fsync): it runs on the
    // blocking pool, never on an async worker. Reads go to the tenant's
    // reader, so a commit in progress on the writer does not stall them.
    let reads = [
        "manifest",
        "snapshot",
        "get",
        "search",
        "history",
        "diagnostics",
    ];
    let read =
        reads.contains(&req.verb.as_str()) || (req.verb == "source" && req.method == Method::GET);
    let kb = if read { kb.reader() } else { kb.writer() }.clone();
    tokio::task::spawn_blocking(move || answer(&kb, &tenant, req))
        .await
        .unwrap_or_else(|e| text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// The body as a JSON object; `Err` is the 400 text naming the shape.
fn body_json(req: &Req, shape: &str) -> Result<serde_json::Map<String, Value>, String> {
    match serde_json::from_slice::<Value>(&req.body) {
        Ok(Value::Object(m)) => Ok(m),
        _ => Err(shape.to_string()),
    }
}

fn read_only() -> Response {
    text(StatusCode::FORBIDDEN, "this token may read but not write")
}

fn etag_of(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name).and_then(|v| v.to_str().ok()).map(|v| {
        v.trim()
            .trim_start_matches("W/")
            .trim_matches('"')
            .to_string()
    })
}

fn revision_value(kb: &Knowledge, c: &okfit_store::change::Committed, changes: &[Change]) -> Value {
    serde_json::from_str(&okfit_tools::knowledge::revision_json(kb, c, changes))
        .unwrap_or(Value::Null)
}

/// Answers one routed request (blocking: runs on the blocking pool).
fn answer(kb: &Knowledge, tenant: &str, req: Req) -> Response {
    match req.verb.as_str() {
        "manifest" => {
            let bundle = query_param(&req.uri, "bundle");
            let (snap, _) = match kb.snapshot() {
                Ok(s) => s,
                Err(e) => return error_reply(e),
            };
            let tag = match &bundle {
                Some(b) => format!("{snap}:{b}"),
                None => snap,
            };
            if etag_of(&req.headers, "if-none-match").as_deref() == Some(tag.as_str()) {
                return (StatusCode::NOT_MODIFIED, [("etag", format!("\"{tag}\""))])
                    .into_response();
            }
            match kb.manifest(bundle.as_deref()) {
                Ok(m) => (
                    StatusCode::OK,
                    [
                        (
                            "content-type",
                            "text/tab-separated-values; charset=utf-8".to_string(),
                        ),
                        ("etag", format!("\"{tag}\"")),
                    ],
                    m.to_string(),
                )
                    .into_response(),
                Err(e) => error_reply(e),
            }
        }
        "snapshot" => match kb.snapshot() {
            Ok((s, n)) => json_reply(StatusCode::OK, json!({"snapshot": s, "concepts": n})),
            Err(e) => error_reply(e),
        },
        "get" => {
            let shape = r#"body must be {"ids": [...], "section"?, "offset"?, "limit"?, "find"?}"#;
            let b = match body_json(&req, shape) {
                Ok(b) => b,
                Err(m) => return text(StatusCode::BAD_REQUEST, m),
            };
            let Some(ids) = b.get("ids").and_then(Value::as_array) else {
                return text(StatusCode::BAD_REQUEST, shape);
            };
            let ids: Vec<String> = ids
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
            let opts = GetOptions {
                section: b.get("section").and_then(Value::as_str).map(str::to_string),
                slice: SliceOptions {
                    offset: b.get("offset").and_then(Value::as_u64),
                    limit: b.get("limit").and_then(Value::as_u64),
                    find: b.get("find").and_then(Value::as_str).map(str::to_string),
                },
            };
            match kb.get_slices(&ids, &opts) {
                Ok((found, _)) => {
                    let mut out = serde_json::Map::new();
                    for (id, s) in found {
                        let mut o = json!({"text": s.text, "start": s.start, "end": s.end, "total": s.total});
                        if let (Some(m), Some(c)) = (s.matches, s.match_count) {
                            o["matches"] = json!(m);
                            o["matchCount"] = json!(c);
                        }
                        out.insert(id, o);
                    }
                    json_reply(StatusCode::OK, Value::Object(out))
                }
                Err(e) => error_reply(e),
            }
        }
        "search" => {
            let shape = r#"body must be {"q": "...", "k"?: n}"#;
            let b = match body_json(&req, shape) {
                Ok(b) => b,
                Err(m) => return text(StatusCode::BAD_REQUEST, m),
            };
            let q = b.get("q").and_then(Value::as_str).unwrap_or("");
            if q.trim().is_empty() {
                return text(StatusCode::BAD_REQUEST, shape);
            }
            let k = b.get("k").and_then(Value::as_u64).unwrap_or(8) as usize;
            let expand = b.get("expand").and_then(Value::as_bool).unwrap_or(true);
            let bundle = b.get("bundle").and_then(Value::as_str);
            match kb.search_with(q, k, bundle, expand) {
                Ok(t) => (
                    StatusCode::OK,
                    [("content-type", "text/tab-separated-values; charset=utf-8")],
                    t,
                )
                    .into_response(),
                Err(e) => error_reply(e),
            }
        }
        "source" => source(kb, req),
        "bundles" => {
            if req.method != Method::DELETE || req.rest.len() != 1 {
                return text(StatusCode::NOT_FOUND, "no such route");
            }
            if !req.may_write {
                return read_only();
            }
            let bundle = &req.rest[0];
            let docs = match kb.list_sources() {
                Ok(d) => d,
                Err(e) => return error_reply(e),
            };
            let changes: Vec<Change> = docs
                .into_iter()
                .filter(|(b, _, _)| b == bundle)
                .map(|(b, p, h)| Change {
                    bundle: b,
                    path: p,
                    content: None,
                    pre: Pre::Hash(h),
                })
                .collect();
            if changes.is_empty() {
                return text(
                    StatusCode::NOT_FOUND,
                    format!("no bundle \"{bundle}\" in this tenant"),
                );
            }
            match kb.commit(changes.clone(), None) {
                Ok(c) => json_reply(StatusCode::OK, revision_value(kb, &c, &[])),
                Err(e) => commit_reply(e, &changes, StatusCode::CONFLICT),
            }
        }
        "sync" => match (kb.head(), kb.snapshot()) {
            (Ok(rev), Ok((s, n))) => {
                let bundles: Vec<String> = kb
                    .list_sources()
                    .map(|d| {
                        let mut b: Vec<String> = d.into_iter().map(|(b, _, _)| b).collect();
                        b.dedup();
                        b
                    })
                    .unwrap_or_default();
                json_reply(
                    StatusCode::OK,
                    json!({"revision": rev, "snapshot": s, "concepts": n, "bundles": bundles, "diagnostics": []}),
                )
            }
            (Err(e), _) | (_, Err(e)) => error_reply(e),
        },
        "transact" => {
            if !req.may_write {
                return read_only();
            }
            let v: Value = match serde_json::from_slice(&req.body) {
                Ok(v) => v,
                Err(_) => return text(StatusCode::BAD_REQUEST, "body must be valid JSON"),
            };
            let batch = match okfit_tools::args::Batch::from_json(&v) {
                Ok(b) => b,
                Err(e) => return error_reply(e),
            };
            let changes = batch.changes();
            match kb.transact(changes.clone(), batch.expected_revision.as_deref()) {
                Ok(c) => json_reply(StatusCode::OK, revision_value(kb, &c, &changes)),
                Err(e) => commit_reply(e, &changes, StatusCode::CONFLICT),
            }
        }
        "history" => {
            let limit = match query_param(&req.uri, "limit") {
                None => 20,
                Some(l) => match l.parse::<usize>() {
                    Ok(n) if (1..=100).contains(&n) => n,
                    _ => {
                        return text(
                            StatusCode::BAD_REQUEST,
                            "history limit must be an integer from 1 to 100",
                        )
                    }
                },
            };
            match kb.history(query_param(&req.uri, "before").as_deref(), limit) {
                Ok(p) => json_reply(
                    StatusCode::OK,
                    serde_json::to_value(p).unwrap_or(Value::Null),
                ),
                Err(e) => error_reply(e),
            }
        }
        "restore" => {
            if !req.may_write {
                return read_only();
            }
            let shape = "restore needs revision and expectedRevision in the connected tenant";
            let b = match serde_json::from_slice::<Value>(&req.body) {
                Ok(Value::Object(m)) => m,
                Ok(_) => return text(StatusCode::BAD_REQUEST, shape),
                Err(_) => return text(StatusCode::BAD_REQUEST, "body must be valid JSON"),
            };
            let (Some(rev), Some(exp), None) = (
                b.get("revision").and_then(Value::as_str),
                b.get("expectedRevision").and_then(Value::as_str),
                b.get("tenant"),
            ) else {
                return text(StatusCode::BAD_REQUEST, shape);
            };
            match kb.restore(rev, exp) {
                Ok(c) => json_reply(StatusCode::OK, revision_value(kb, &c, &[])),
                Err(e) => commit_reply(e, &[], StatusCode::CONFLICT),
            }
        }
        "diagnostics" => {
            let shape = r#"body must be {"bundle": "...", "path": "...", "content": "..."}"#;
            let b = match body_json(&req, shape) {
                Ok(b) => b,
                Err(m) => return text(StatusCode::BAD_REQUEST, m),
            };
            let (Some(bundle), Some(path), Some(content)) = (
                b.get("bundle").and_then(Value::as_str),
                b.get("path").and_then(Value::as_str),
                b.get("content").and_then(Value::as_str),
            ) else {
                return text(StatusCode::BAD_REQUEST, shape);
            };
            match kb.diagnostics_for(bundle, path, content) {
                Ok(findings) => json_reply(StatusCode::OK, json!({"findings": findings})),
                Err(e) => error_reply(e),
            }
        }
        _ => {
            let _ = tenant;
            text(StatusCode::NOT_FOUND, "no such route")
        }
    }
}

/// `/source`, `/source/{bundle}/{path}`: list, read, write, delete.
fn source(kb: &Knowledge, req: Req) -> Response {
    if req.rest.is_empty() {
        if req.method != Method::GET {
            return text(StatusCode::METHOD_NOT_ALLOWED, "source requires GET");
        }
        return match kb.list_sources() {
            Ok(docs) => json_reply(
                StatusCode::OK,
                Value::Array(
                    docs.into_iter()
                        .map(|(b, p, h)| json!({"bundle": b, "path": p, "hash": h}))
                        .collect(),
                ),
            ),
            Err(e) => error_reply(e),
        };
    }
    if req.rest.len() < 2 {
        return text(StatusCode::NOT_FOUND, "no such route");
    }
    let bundle = req.rest[0].clone();
    let path = req.rest[1..].join("/");
    match req.method {
        Method::GET => match kb.read_source(&bundle, &path) {
            Ok(Some((bytes, hash))) => (
                StatusCode::OK,
                [
                    ("content-type", "text/markdown; charset=utf-8".to_string()),
                    ("etag", format!("\"{hash}\"")),
                ],
                Body::from(bytes),
            )
                .into_response(),
            Ok(None) => text(StatusCode::NOT_FOUND, "concept does not exist"),
            Err(e) => error_reply(e),
        },
        Method::PUT | Method::DELETE => {
            if !req.may_write {
                return read_only();
            }
            let if_match = etag_of(&req.headers, "if-match");
            let if_none = etag_of(&req.headers, "if-none-match");
            let pre = match (if_match, if_none.as_deref()) {
                (Some(h), _) => Pre::Hash(h),
                (None, Some("*")) if req.method == Method::PUT => Pre::Create,
                _ => {
                    return text(
                        StatusCode::PRECONDITION_REQUIRED,
                        if req.method == Method::PUT {
                            "a write needs If-Match: \"<hash>\" to replace or If-None-Match: * to create"
                        } else {
                            "a delete needs If-Match: \"<hash>\""
                        },
                    )
                }
            };
            let content = (req.method == Method::PUT).then(|| req.body.to_vec());
            if content
                .as_ref()
                .is_some_and(|c| c.len() > okfit_store::change::MAX_DOCUMENT_BYTES)
            {
                return text(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    "a document may be at most 16 MiB",
                );
            }
            let changes = vec![Change {
                bundle,
                path,
                content,
                pre,
            }];
            match kb.commit(changes.clone(), None) {
                Ok(c) => {
                    let mut v = revision_value(kb, &c, &changes);
                    let hash = c.hashes.first().cloned().flatten();
                    v["hash"] = json!(hash);
                    let mut r = json_reply(StatusCode::OK, v);
                    if let Some(h) = hash {
                        if let Ok(val) = format!("\"{h}\"").parse() {
                            r.headers_mut().insert("etag", val);
                        }
                    }
                    r
                }
                Err(e) => commit_reply(e, &changes, StatusCode::PRECONDITION_FAILED),
            }
        }
        _ => text(
            StatusCode::METHOD_NOT_ALLOWED,
            "source supports GET, PUT and DELETE",
        ),
    }
}

/// How `okfit serve` was asked to listen.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// The data root.
    pub data: PathBuf,
    /// A unix socket path.
    pub socket: Option<PathBuf>,
    /// `HOST:PORT` for TCP.
    pub listen: Option<String>,
    /// PEM certificate chain for TLS.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for TLS.
    pub tls_key: Option<PathBuf>,
    /// Debounce of the sources.json folder watcher, milliseconds.
    pub debounce_ms: u64,
    /// Connections served at once (at least 1).
    pub max_connections: usize,
}

fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, Error> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| Error::Usage(format!("cannot read --tls-cert {} ({e})", cert.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Usage(format!("--tls-cert {} is not PEM ({e})", cert.display())))?;
    if certs.is_empty() {
        return Err(Error::Usage(format!(
            "--tls-cert {} holds no certificate",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| Error::Usage(format!("cannot read --tls-key {} ({e})", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Usage(format!("tls: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::Usage(format!("tls certificate and key do not match ({e})")))?;
    Ok(Arc::new(cfg))
}

/// The daemon's HTTP application: every request goes to [`handle`], with
/// bodies limited to [`MAX_BODY`].
pub fn router(daemon: Arc<Daemon>) -> axum::Router {
    axum::Router::new()
        .fallback(
            move |method: Method, uri: Uri, headers: HeaderMap, body: Bytes| {
                let d = daemon.clone();
                async move { handle(d, method, uri, headers, body).await }
            },
        )
        .layer(axum::extract::DefaultBodyLimit::max(MAX_BODY))
}

/// Serves one connection until it closes (or the daemon stops), holding
/// one of the daemon's connection slots meanwhile.
/// Waits for a free connection slot; `None` once the daemon is stopping.
async fn free_slot<F>(
    shutdown: &mut F,
    slots: &Arc<tokio::sync::Semaphore>,
) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Error>
where
    F: std::future::Future<Output = Result<(), Error>> + Unpin,
{
    tokio::select! {
        r = shutdown => r.map(|()| None),
        p = slots.clone().acquire_owned() => Ok(p.ok()),
    }
}

async fn serve_conn<S>(
    stream: S,
    app: axum::Router,
    mut stop: tokio::sync::watch::Receiver<bool>,
    _slot: tokio::sync::OwnedSemaphorePermit,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper_util::service::TowerToHyperService::new(app);
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// `okfit serve`: runs until SIGINT or SIGTERM; requests in flight finish
/// (a commit is never cut in half) before it exits.
pub fn run(opts: ServeOptions) -> Result<i32, Error> {
    if opts.tls_cert.is_some() != opts.tls_key.is_some() {
        return Err(Error::Usage(
            "--tls-cert and --tls-key must be given together".into(),
        ));
    }
    if opts.tls_cert.is_some() && opts.listen.is_none() {
        return Err(Error::Usage(
            "--tls-cert needs --listen: a unix socket has no tls".into(),
        ));
    }
    if opts.socket.is_some() && opts.listen.is_some() {
        return Err(Error::Usage("give --socket or --listen, not both".into()));
    }
    let data = okfit_store::discover::absolute(&opts.data);
    let tokens = read_tokens(&data)?;
    let tls = match (&opts.tls_cert, &opts.tls_key) {
        (Some(c), Some(k)) => Some(tls_config(c, k)?),
        _ => None,
    };
    let listen = match &opts.listen {
        Some(l) => {
            let (host, port) = l.rsplit_once(':').ok_or_else(|| {
                Error::Usage(format!(
                    "--listen {l}: expected HOST:PORT, for example 127.0.0.1:7777"
                ))
            })?;
            port.parse::<u16>().map_err(|_| {
                Error::Usage(format!(
                    "--listen {l}: the port must be a number from 0 to 65535"
                ))
            })?;
            if tokens.is_empty() {
                return Err(Error::Usage(
                    "refusing to listen on TCP without tokens: pass tokens or use a unix socket (mint one with okfit token --data DIR --tenant T)".into(),
                ));
            }
            if !is_loopback(host) && tls.is_none() {
                return Err(Error::Usage(format!(
                    "refusing to serve {host} without tls: every request would carry its token in cleartext. Pass tls, or bind 127.0.0.1 and terminate tls in a proxy in front"
                )));
            }
            Some(l.clone())
        }
        None => None,
    };
    let socket = if listen.is_none() {
        Some(
            opts.socket
                .clone()
                .unwrap_or_else(|| data.join("okfit.sock")),
        )
    } else {
        None
    };
    std::fs::create_dir_all(&data)
        .map_err(|e| Error::Io(format!("cannot create {} ({e})", data.display())))?;
    let daemon = Arc::new(Daemon::new(data.clone(), tokens));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Error::Io(format!("cannot start the runtime: {e}")))?;
    let sources = crate::sources::start(&daemon, &data, opts.debounce_ms.max(10))?;
    let app = router(daemon.clone());
    let token_count = daemon.tokens.len();
    let result: Result<(), Error> = rt.block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        let shutdown = async {
            #[cfg(unix)]
            {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                        .map_err(|e| Error::Io(format!("cannot watch SIGTERM ({e})")))?;
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            #[cfg(not(unix))]
            {
                let _ = tokio::signal::ctrl_c().await;
            }
            Ok::<(), Error>(())
        };
        tokio::pin!(shutdown);
        let where_ = match (&socket, &listen) {
            (Some(s), _) => s.display().to_string(),
            (_, Some(l)) => format!("{}{l}", if tls.is_some() { "https://" } else { "http://" }),
            _ => String::new(),
        };
        let slots = Arc::new(tokio::sync::Semaphore::new(opts.max_connections.max(1)));
        let line = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        if let Some(sock) = &socket {
            #[cfg(unix)]
            {
                if sock.exists() {
                    // A socket nobody answers on is left over from a crash.
                    if std::os::unix::net::UnixStream::connect(sock).is_ok() {
                        return Err(Error::Refused(format!(
                            "{} is in use by a running server",
                            sock.display()
                        )));
                    }
                    let _ = std::fs::remove_file(sock);
                }
                let listener = tokio::net::UnixListener::bind(sock)
                    .map_err(|e| Error::Io(format!("cannot listen on {} ({e})", sock.display())))?;
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(sock, std::fs::Permissions::from_mode(0o600));
                eprintln!(
                    "okfit serving {} on {where_} ({}, {})",
                    data.display(),
                    line(token_count, "token"),
                    line(sources, "watched tenant")
                );
                loop {
                    let Some(permit) = free_slot(&mut shutdown, &slots).await? else {
                        break;
                    };
                    tokio::select! {
                        r = &mut shutdown => { r?; break; }
                        a = listener.accept() => {
                            if let Ok((s, _)) = a {
                                tasks.spawn(serve_conn(s, app.clone(), stop_rx.clone(), permit));
                            }
                        }
                    }
                }
                let _ = std::fs::remove_file(sock);
            }
            #[cfg(not(unix))]
            {
                let _ = sock;
                return Err(Error::Usage(
                    "unix sockets are not available here: use --listen 127.0.0.1:PORT with a token"
                        .into(),
                ));
            }
        } else if let Some(l) = &listen {
            let listener = tokio::net::TcpListener::bind(l.as_str())
                .await
                .map_err(|e| Error::Io(format!("cannot listen on {l} ({e})")))?;
            let local = listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| l.clone());
            eprintln!(
                "okfit serving {} on {}{local} ({}, {})",
                data.display(),
                if tls.is_some() { "https://" } else { "http://" },
                line(token_count, "token"),
                line(sources, "watched tenant")
            );
            let acceptor = tls.clone().map(tokio_rustls::TlsAcceptor::from);
            loop {
                let Some(permit) = free_slot(&mut shutdown, &slots).await? else {
                    break;
                };
                tokio::select! {
                    r = &mut shutdown => { r?; break; }
                    a = listener.accept() => {
                        if let Ok((s, _)) = a {
                            let _ = s.set_nodelay(true);
                            let app = app.clone();
                            let stop = stop_rx.clone();
                            match acceptor.clone() {
                                Some(acc) => {
                                    tasks.spawn(async move {
                                        let shake = tokio::time::timeout(HEADER_TIMEOUT, acc.accept(s));
                                        if let Ok(Ok(t)) = shake.await {
                                            serve_conn(t, app, stop, permit).await;
                                        }
                                    });
                                }
                                None => {
                                    tasks.spawn(serve_conn(s, app, stop, permit));
                                }
                            }
                        }
                    }
                }
            }
        }
        eprintln!("okfit: shutting down; finishing requests in flight");
        let _ = stop_tx.send(true);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        Ok(())
    });
    // Blocking work (a commit) already running completes before exit.
    drop(rt);
    result.map(|_| 0)
}
