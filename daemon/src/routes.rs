//! The `/v1` routes of reference langonrock §1.4, each its own axum route
//! in two forms: `/v1/{verb}`, where the token names the tenant, and
//! `/v1/{tenant}/{verb}`. A handler authenticates through [`Caller`],
//! takes its typed path, query and body, and does its store work on the
//! blocking pool through [`on_store`]. Requests and answers are the types
//! of [`okfit_knowledge::wire`], which the client shares.

use crate::auth::Caller;
use crate::body::{Body, Malformed};
use crate::reply::{commit_reply, error_reply, etag_of, json_reply, read_only, text};
use crate::state::{Daemon, MAX_BODY};
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{DefaultBodyLimit, Path, Query, Request, State};
use axum::handler::Handler;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{any, MethodRouter};
use axum::Router;
use okfit_knowledge::wire::{
    Batch, DiagnosticsAnswer, DiagnosticsRequest, GetAnswer, GetRequest, HistoryQuery,
    ManifestQuery, RestoreRequest, RevisionAnswer, SearchRequest, SnapshotAnswer,
    SourceCommitAnswer, SourceEntry,
};
use okfit_knowledge::Knowledge;
use okfit_store::change::{Change, Pre, MAX_DOCUMENT_BYTES};
use okfit_tools::knowledge::revision_answer;
use okfit_tools::Access;
use serde::Deserialize;
use std::sync::Arc;
use tower::Layer;

/// The router's state: the running daemon.
type Shared = Arc<Daemon>;

const GET_SHAPE: &str = r#"body must be {"ids": [...], "section"?, "offset"?, "limit"?, "find"?}"#;
const SEARCH_SHAPE: &str = r#"body must be {"q": "...", "k"?: n}"#;
const DIAGNOSTICS_SHAPE: &str =
    r#"body must be {"bundle": "...", "path": "...", "content": "..."}"#;
const RESTORE_SHAPE: &str = "restore needs revision and expectedRevision in the connected tenant";
const NOT_JSON: &str = "body must be valid JSON";
const HISTORY_LIMIT: &str = "history limit must be an integer from 1 to 100";
const NO_ROUTE: &str = "no such route";
const TSV: &str = "text/tab-separated-values; charset=utf-8";

/// What a route does to the tenant's knowledge: which of its connections
/// the work runs on, and whether a read-only token may call it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Effect {
    /// Reads, on the tenant's reader.
    Read,
    /// Changes knowledge, on the writer; refused to a read-only token.
    Write,
    /// Reads the head as the last commit left it, on the writer; open to
    /// a read-only token (`sync`).
    Head,
}

/// The effect of the route named after the tool `name`, from the tool
/// catalogue's access: anything but a read writes. A name the catalogue
/// lacks counts as a write, so a mistake refuses rather than allows.
fn tool(name: &str) -> Effect {
    use std::sync::OnceLock;
    // Read once: routes ask on every request.
    static READS: OnceLock<Vec<&'static str>> = OnceLock::new();
    let reads = READS.get_or_init(|| {
        okfit_tools::catalogue()
            .into_iter()
            .filter(|t| t.access == Access::Read)
            .map(|t| t.name)
            .collect()
    });
    if reads.contains(&name) {
        Effect::Read
    } else {
        Effect::Write
    }
}

/// The daemon's HTTP application: the `/v1` routes, the operations routes
/// of [`crate::ops`], bodies limited to [`MAX_BODY`], any other path `404
/// no such route`; every request observed by [`crate::observe`]. Empty path segments
/// are dropped first (`//v1/t/manifest/` is `/v1/t/manifest`).
pub fn router(daemon: Arc<Daemon>) -> Router {
    let mut routes = Router::new();
    for v1 in ["/v1", "/v1/{tenant}"] {
        routes = routes
            .route(&format!("{v1}/manifest"), get_only("manifest", manifest))
            .route(&format!("{v1}/snapshot"), get_only("snapshot", snapshot))
            .route(&format!("{v1}/history"), get_only("history", history))
            .route(&format!("{v1}/get"), post_only("get", get))
            .route(&format!("{v1}/search"), post_only("search", search))
            .route(&format!("{v1}/transact"), post_only("transact", transact))
            .route(&format!("{v1}/restore"), post_only("restore", restore))
            .route(&format!("{v1}/sync"), post_only("sync", sync))
            .route(
                &format!("{v1}/diagnostics"),
                post_only("diagnostics", diagnostics),
            )
            .route(
                &format!("{v1}/source"),
                any(source_list_refused)
                    .get(list_sources)
                    .head(source_list_refused),
            )
            .route(
                &format!("{v1}/source/{{bundle}}/{{*path}}"),
                any(source_refused)
                    .get(read_source)
                    .head(source_refused)
                    .put(write_source)
                    .delete(delete_source),
            )
            .route(
                &format!("{v1}/bundles/{{bundle}}"),
                any(no_route_here).delete(delete_bundle),
            );
    }
    let mcp = axum::routing::any_service(crate::mcp::service(daemon.clone()))
        .layer::<_, std::convert::Infallible>(axum::middleware::from_fn_with_state(
            daemon.clone(),
            crate::auth::mcp_caller,
        ))
        .layer(crate::mcp::cors(&daemon.mcp_options().allowed_origins));
    let app = routes
        .route("/mcp", mcp.clone())
        .route("/mcp/{tenant}", mcp)
        .route(
            "/.well-known/oauth-protected-resource",
            axum::routing::get(crate::ops::resource_metadata),
        )
        .route(
            "/.well-known/oauth-protected-resource/{*resource}",
            axum::routing::get(crate::ops::resource_metadata),
        )
        .route("/healthz", axum::routing::get(crate::ops::healthz))
        .route("/readyz", axum::routing::get(crate::ops::readyz))
        .route("/metrics", axum::routing::get(crate::ops::metrics))
        .fallback(|| async { text(StatusCode::NOT_FOUND, NO_ROUTE) })
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .layer(axum::middleware::from_fn_with_state(
            daemon.clone(),
            crate::observe::observe,
        ))
        .with_state(daemon);
    Router::new().fallback_service(tower::util::MapRequestLayer::new(tidy_path).layer(app))
}

/// The request with empty path segments dropped, as clients that join a
/// base URL ending in `/` send them.
fn tidy_path(mut req: Request) -> Request {
    let path = req.uri().path();
    let untidy = path.contains("//") || (path.len() > 1 && path.ends_with('/'));
    if !untidy {
        return req;
    }
    let mut tidy = String::with_capacity(path.len());
    for seg in path.split('/').filter(|s| !s.is_empty()) {
        tidy.push('/');
        tidy.push_str(seg);
    }
    if tidy.is_empty() {
        tidy.push('/');
    }
    if let Some(q) = req.uri().query() {
        tidy = format!("{tidy}?{q}");
    }
    let mut parts = req.uri().clone().into_parts();
    if let Ok(pq) = tidy.parse() {
        parts.path_and_query = Some(pq);
        if let Ok(uri) = Uri::from_parts(parts) {
            *req.uri_mut() = uri;
        }
    }
    req
}

/// A route for POST alone; any other method is `405 {verb} requires
/// POST`, once the caller is authenticated.
fn post_only<H, T>(verb: &'static str, h: H) -> MethodRouter<Shared>
where
    H: Handler<T, Shared>,
    T: 'static,
{
    let refuse = move |_: Caller| async move {
        text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{verb} requires POST"),
        )
    };
    any(refuse).post(h)
}

/// A route for GET alone (HEAD included in the refusal): any other
/// method is `405 {verb} requires GET`, once the caller is authenticated.
fn get_only<H, T>(verb: &'static str, h: H) -> MethodRouter<Shared>
where
    H: Handler<T, Shared>,
    T: 'static,
{
    let refuse = move |_: Caller| async move {
        text(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{verb} requires GET"),
        )
    };
    any(refuse).get(h).head(refuse)
}

/// Runs a route's store work as blocking work (SQLite reads and a
/// commit's fsync never hold up an async worker): opens the tenant,
/// refuses a write to a read-only token, and hands `work` the connection
/// the effect calls for.
async fn on_store<F>(daemon: Shared, caller: Caller, effect: Effect, work: F) -> Response
where
    F: FnOnce(&Knowledge) -> Response + Send + 'static,
{
    // A read of a loaded embedded tenant is answered from memory and a
    // local file in a fraction of a millisecond: in place on this worker,
    // with no thread to hand over to and back.
    let quick = effect == Effect::Read && daemon.reads_from_memory(&caller.tenant);
    let run = move || {
        let tenant = match daemon.tenant(&caller.tenant) {
            Ok(t) => t,
            Err(e) => return error_reply(e),
        };
        if effect == Effect::Write && !caller.may_write {
            return read_only();
        }
        let kb = match effect {
            Effect::Read => tenant.reader(),
            Effect::Write | Effect::Head => tenant.writer(),
        };
        work(kb)
    };
    if quick {
        return run();
    }
    blocking(run).await
}

/// Runs `f`, which blocks, without holding up the async workers. On the
/// daemon's multi-threaded runtime it runs in place, on this worker's
/// thread, while the worker's other tasks move to another thread: no hand
/// over to the blocking pool and back, which on an idle machine costs more
/// than a warm search. Elsewhere it goes to the blocking pool.
async fn blocking<F>(f: F) -> Response
where
    F: FnOnce() -> Response + Send + 'static,
{
    use tokio::runtime::{Handle, RuntimeFlavor};
    if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
        return tokio::task::block_in_place(f);
    }
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))
}

/// [`on_store`] for a route with a JSON body: a malformed body is
/// answered with `not_json` (not JSON at all) or `shape` (JSON of another
/// shape) before any store work.
async fn with_body<T, F>(
    daemon: Shared,
    caller: Caller,
    effect: Effect,
    body: Result<T, Malformed>,
    (not_json, shape): (&'static str, &'static str),
    work: F,
) -> Response
where
    T: Send + 'static,
    F: FnOnce(&Knowledge, T) -> Response + Send + 'static,
{
    on_store(daemon, caller, effect, move |kb| match body {
        Ok(req) => work(kb, req),
        Err(m) => m.answer(not_json, shape),
    })
    .await
}

/// `GET manifest?bundle=`: the TSV manifest, tagged by snapshot (and
/// bundle) so that a client revalidates with `If-None-Match`.
async fn manifest(
    State(d): State<Shared>,
    caller: Caller,
    query: Result<Query<ManifestQuery>, QueryRejection>,
    headers: HeaderMap,
) -> Response {
    on_store(d, caller, tool("manifest"), move |kb| {
        let bundle = match query {
            Ok(Query(q)) => q.bundle,
            Err(e) => return text(StatusCode::BAD_REQUEST, e.body_text()),
        };
        let (snap, _) = match kb.snapshot() {
            Ok(s) => s,
            Err(e) => return error_reply(e),
        };
        let tag = match &bundle {
            Some(b) => format!("{snap}:{b}"),
            None => snap,
        };
        if etag_of(&headers, "if-none-match").as_deref() == Some(tag.as_str()) {
            return (StatusCode::NOT_MODIFIED, [("etag", format!("\"{tag}\""))]).into_response();
        }
        match kb.manifest(bundle.as_deref()) {
            Ok(m) => (
                StatusCode::OK,
                [
                    ("content-type", TSV.to_string()),
                    ("etag", format!("\"{tag}\"")),
                ],
                m.to_string(),
            )
                .into_response(),
            Err(e) => error_reply(e),
        }
    })
    .await
}

/// `GET snapshot`.
async fn snapshot(State(d): State<Shared>, caller: Caller) -> Response {
    on_store(d, caller, tool("snapshot"), |kb| match kb.snapshot() {
        Ok((snapshot, concepts)) => {
            json_reply(StatusCode::OK, &SnapshotAnswer { snapshot, concepts })
        }
        Err(e) => error_reply(e),
    })
    .await
}

/// `GET history?limit=&before=`: a page of revisions, newest first.
async fn history(
    State(d): State<Shared>,
    caller: Caller,
    query: Result<Query<HistoryQuery>, QueryRejection>,
) -> Response {
    on_store(d, caller, tool("history"), move |kb| {
        let q = match query {
            Ok(Query(q)) => q,
            Err(_) => return text(StatusCode::BAD_REQUEST, HISTORY_LIMIT),
        };
        let limit = match q.limit {
            None => 20,
            Some(n) if (1..=100).contains(&n) => n,
            Some(_) => return text(StatusCode::BAD_REQUEST, HISTORY_LIMIT),
        };
        match kb.history(q.before.as_deref(), limit) {
            Ok(page) => json_reply(StatusCode::OK, &page),
            Err(e) => error_reply(e),
        }
    })
    .await
}

/// `POST get`: slices of concepts by id.
async fn get(State(d): State<Shared>, caller: Caller, Body(body): Body<GetRequest>) -> Response {
    let shapes = (GET_SHAPE, GET_SHAPE);
    with_body(d, caller, tool("get"), body, shapes, |kb, req| {
        match kb.get_slices(&req.ids, &req.options()) {
            Ok((found, _)) => json_reply(StatusCode::OK, &GetAnswer::new(found)),
            Err(e) => error_reply(e),
        }
    })
    .await
}

/// `POST search`: ranked matches as manifest rows.
async fn search(
    State(d): State<Shared>,
    caller: Caller,
    Body(body): Body<SearchRequest>,
) -> Response {
    let shapes = (SEARCH_SHAPE, SEARCH_SHAPE);
    with_body(d, caller, tool("search"), body, shapes, |kb, req| {
        if req.q.trim().is_empty() {
            return text(StatusCode::BAD_REQUEST, SEARCH_SHAPE);
        }
        let k = usize::try_from(req.k.unwrap_or(8)).unwrap_or(usize::MAX);
        let expand = req.expand.unwrap_or(true);
        match kb.search_with(&req.q, k, req.bundle.as_deref(), expand) {
            Ok(t) => (StatusCode::OK, [("content-type", TSV)], t).into_response(),
            Err(e) => error_reply(e),
        }
    })
    .await
}

/// `POST transact`: a batch of writes and deletes, all or none.
async fn transact(State(d): State<Shared>, caller: Caller, Body(body): Body<Batch>) -> Response {
    let shapes = (NOT_JSON, NOT_JSON);
    with_body(d, caller, tool("transact"), body, shapes, |kb, batch| {
        let changes = batch.changes();
        match kb.transact(changes.clone(), batch.expected_revision.as_deref()) {
            Ok(c) => json_reply(StatusCode::OK, &revision_answer(kb, &c, &changes)),
            Err(e) => commit_reply(e, &changes, StatusCode::CONFLICT),
        }
    })
    .await
}

/// `POST restore`: an earlier revision's documents made current.
async fn restore(
    State(d): State<Shared>,
    caller: Caller,
    Body(body): Body<RestoreRequest>,
) -> Response {
    let shapes = (NOT_JSON, RESTORE_SHAPE);
    with_body(d, caller, tool("restore"), body, shapes, |kb, req| {
        if req.names_tenant {
            return text(StatusCode::BAD_REQUEST, RESTORE_SHAPE);
        }
        match kb.restore(&req.revision, &req.expected_revision) {
            Ok(c) => json_reply(StatusCode::OK, &revision_answer(kb, &c, &[])),
            Err(e) => commit_reply(e, &[], StatusCode::CONFLICT),
        }
    })
    .await
}

/// `POST sync`: the head as the last commit left it (the body carries
/// nothing and is not read).
async fn sync(State(d): State<Shared>, caller: Caller) -> Response {
    on_store(d, caller, Effect::Head, |kb| {
        match (kb.head(), kb.snapshot()) {
            (Ok(revision), Ok((snapshot, concepts))) => {
                let bundles: Vec<String> = kb
                    .list_sources()
                    .map(|d| {
                        let mut b: Vec<String> = d.into_iter().map(|(b, _, _)| b).collect();
                        b.dedup();
                        b
                    })
                    .unwrap_or_default();
                let answer = RevisionAnswer {
                    revision,
                    snapshot,
                    concepts,
                    bundles,
                    diagnostics: vec![],
                };
                json_reply(StatusCode::OK, &answer)
            }
            (Err(e), _) | (_, Err(e)) => error_reply(e),
        }
    })
    .await
}

/// `POST diagnostics`: the validator's findings for a document as it
/// would be stored; nothing is written.
async fn diagnostics(
    State(d): State<Shared>,
    caller: Caller,
    Body(body): Body<DiagnosticsRequest>,
) -> Response {
    let shapes = (DIAGNOSTICS_SHAPE, DIAGNOSTICS_SHAPE);
    with_body(d, caller, Effect::Read, body, shapes, |kb, req| {
        match kb.diagnostics_for(&req.bundle, &req.path, &req.content) {
            Ok(findings) => json_reply(StatusCode::OK, &DiagnosticsAnswer { findings }),
            Err(e) => error_reply(e),
        }
    })
    .await
}

/// `GET source`: every document with its hash.
async fn list_sources(State(d): State<Shared>, caller: Caller) -> Response {
    on_store(d, caller, Effect::Read, |kb| match kb.list_sources() {
        Ok(docs) => {
            let list: Vec<SourceEntry> = docs
                .into_iter()
                .map(|(bundle, path, hash)| SourceEntry { bundle, path, hash })
                .collect();
            json_reply(StatusCode::OK, &list)
        }
        Err(e) => error_reply(e),
    })
    .await
}

/// Any method but GET on `source`, once the tenant is open.
async fn source_list_refused(State(d): State<Shared>, caller: Caller) -> Response {
    on_store(d, caller, Effect::Read, |_| {
        text(StatusCode::METHOD_NOT_ALLOWED, "source requires GET")
    })
    .await
}

/// A document's place: `source/{bundle}/{*path}`.
#[derive(Debug, Deserialize)]
struct SourceKey {
    bundle: String,
    path: String,
}

/// `GET source/{bundle}/{path}`: the document's exact bytes, tagged by
/// their hash.
async fn read_source(
    State(d): State<Shared>,
    caller: Caller,
    Path(key): Path<SourceKey>,
) -> Response {
    on_store(d, caller, Effect::Read, move |kb| {
        match kb.read_source(&key.bundle, &key.path) {
            Ok(Some((bytes, hash))) => (
                StatusCode::OK,
                [
                    ("content-type", "text/markdown; charset=utf-8".to_string()),
                    ("etag", format!("\"{hash}\"")),
                ],
                axum::body::Body::from(bytes),
            )
                .into_response(),
            Ok(None) => text(StatusCode::NOT_FOUND, "concept does not exist"),
            Err(e) => error_reply(e),
        }
    })
    .await
}

/// `PUT source/{bundle}/{path}`: writes a document, replacing the hash in
/// `If-Match` or creating it with `If-None-Match: *`.
async fn write_source(
    State(d): State<Shared>,
    caller: Caller,
    Path(key): Path<SourceKey>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    on_store(d, caller, Effect::Write, move |kb| {
        commit_source(kb, key, &headers, Some(body))
    })
    .await
}

/// `DELETE source/{bundle}/{path}`: removes the version in `If-Match`.
async fn delete_source(
    State(d): State<Shared>,
    caller: Caller,
    Path(key): Path<SourceKey>,
    headers: HeaderMap,
) -> Response {
    on_store(d, caller, Effect::Write, move |kb| {
        commit_source(kb, key, &headers, None)
    })
    .await
}

/// Commits one document's write (`content`) or delete, with the
/// precondition its headers give.
fn commit_source(
    kb: &Knowledge,
    key: SourceKey,
    headers: &HeaderMap,
    content: Option<Bytes>,
) -> Response {
    let put = content.is_some();
    let if_none = etag_of(headers, "if-none-match");
    let pre = match (etag_of(headers, "if-match"), if_none.as_deref()) {
        (Some(h), _) => Pre::Hash(h),
        (None, Some("*")) if put => Pre::Create,
        _ => {
            return text(
                StatusCode::PRECONDITION_REQUIRED,
                if put {
                    "a write needs If-Match: \"<hash>\" to replace or If-None-Match: * to create"
                } else {
                    "a delete needs If-Match: \"<hash>\""
                },
            )
        }
    };
    if content
        .as_ref()
        .is_some_and(|c| c.len() > MAX_DOCUMENT_BYTES)
    {
        return text(
            StatusCode::PAYLOAD_TOO_LARGE,
            "a document may be at most 16 MiB",
        );
    }
    let changes = vec![Change {
        bundle: key.bundle,
        path: key.path,
        content: content.map(|c| c.to_vec()),
        pre,
    }];
    match kb.commit(changes.clone(), None) {
        Ok(c) => {
            let hash = c.hashes.first().cloned().flatten();
            let answer = SourceCommitAnswer {
                commit: revision_answer(kb, &c, &changes),
                hash: hash.clone(),
            };
            let mut r = json_reply(StatusCode::OK, &answer);
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

/// Any other method on a document, once the tenant is open.
async fn source_refused(State(d): State<Shared>, caller: Caller) -> Response {
    on_store(d, caller, Effect::Read, |_| {
        text(
            StatusCode::METHOD_NOT_ALLOWED,
            "source supports GET, PUT and DELETE",
        )
    })
    .await
}

/// A bundle's name: `bundles/{bundle}`.
#[derive(Debug, Deserialize)]
struct BundleKey {
    bundle: String,
}

/// `DELETE bundles/{bundle}`: every document of the bundle, at once.
async fn delete_bundle(
    State(d): State<Shared>,
    caller: Caller,
    Path(BundleKey { bundle }): Path<BundleKey>,
) -> Response {
    on_store(d, caller, Effect::Write, move |kb| {
        let docs = match kb.list_sources() {
            Ok(d) => d,
            Err(e) => return error_reply(e),
        };
        let changes: Vec<Change> = docs
            .into_iter()
            .filter(|(b, _, _)| *b == bundle)
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
            Ok(c) => json_reply(StatusCode::OK, &revision_answer(kb, &c, &[])),
            Err(e) => commit_reply(e, &changes, StatusCode::CONFLICT),
        }
    })
    .await
}

/// Any method but DELETE on a bundle: no such route, once the tenant is
/// open.
async fn no_route_here(State(d): State<Shared>, caller: Caller) -> Response {
    on_store(d, caller, Effect::Read, |_| {
        text(StatusCode::NOT_FOUND, NO_ROUTE)
    })
    .await
}

#[cfg(test)]
mod tests;
