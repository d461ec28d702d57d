//! The router driven in process (`tower::ServiceExt::oneshot`): the edges
//! typed routes bring, kept to the answers `okfit serve` has always given.

use super::{router, tool, Effect};
use crate::serve::{Daemon, Grant};
use axum::body::Body;
use axum::http::{Request, StatusCode};
use axum::Router;
use okfit_store::backend::Location;
use std::collections::HashMap;
use std::sync::Arc;
use tower::ServiceExt;

/// A status, the headers that matter here, and the body as text.
#[derive(Debug)]
struct Answer {
    status: StatusCode,
    allow: Option<String>,
    kind: Option<String>,
    body: String,
}

async fn send(app: &Router, method: &str, uri: &str, auth: Option<&str>, body: &[u8]) -> Answer {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(token) = auth {
        req = req.header("authorization", format!("Bearer {token}"));
    }
    if method == "PUT" {
        req = req.header("if-none-match", "*");
    }
    let resp = app
        .clone()
        .oneshot(req.body(Body::from(body.to_vec())).unwrap())
        .await
        .unwrap();
    let header = |n: &str| {
        resp.headers()
            .get(n)
            .map(|v| v.to_str().unwrap().to_string())
    };
    let (status, allow, kind) = (resp.status(), header("allow"), header("okfit-error"));
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    Answer {
        status,
        allow,
        kind,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

/// A daemon over a fresh data root whose tenant `acme` holds one note,
/// served without tokens and with a reader's and a writer's token.
struct Fixture {
    _dir: tempfile::TempDir,
    open: Router,
    tokens: Router,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let at = Location::Sqlite(dir.path().to_path_buf());
    let open = router(Arc::new(Daemon::new(at.clone(), HashMap::new(), 8)));
    let grant = |write| Grant {
        tenant: "acme".into(),
        write,
        database: false,
    };
    let tokens: HashMap<String, Grant> =
        [("r".to_string(), grant(false)), ("w".into(), grant(true))]
            .into_iter()
            .collect();
    let tokens = router(Arc::new(Daemon::new(at, tokens, 8)));
    let note = "---\ntype: Note\ndescription: Deploy note.\n---\n# Deploy\n\nShip it.\n";
    let put = send(
        &open,
        "PUT",
        "/v1/acme/source/ops/deploy.md",
        None,
        note.as_bytes(),
    )
    .await;
    assert_eq!(put.status, StatusCode::OK, "{put:?}");
    Fixture {
        _dir: dir,
        open,
        tokens,
    }
}

#[track_caller]
fn expect(a: &Answer, status: u16, body: &str) {
    assert_eq!(
        (a.status.as_u16(), a.body.as_str()),
        (status, body),
        "{a:?}"
    );
}

#[tokio::test]
async fn malformed_bodies_get_each_route_s_own_400_text() {
    let f = fixture().await;
    let get = r#"body must be {"ids": [...], "section"?, "offset"?, "limit"?, "find"?}"#;
    let search = r#"body must be {"q": "...", "k"?: n}"#;
    let diagnostics = r#"body must be {"bundle": "...", "path": "...", "content": "..."}"#;
    let restore = "restore needs revision and expectedRevision in the connected tenant";
    let cases: &[(&str, &[u8], u16, &str)] = &[
        ("get", b"{nope", 400, get),
        ("get", br#"[["ops/deploy"]]"#, 400, get),
        ("get", br#"{"ids":["a",1]}"#, 400, get),
        ("search", b"", 400, search),
        ("search", br#"["orders"]"#, 400, search),
        ("search", br#"{"q":" "}"#, 400, search),
        ("diagnostics", b"{nope", 400, diagnostics),
        (
            "diagnostics",
            br#"{"bundle":"b","path":"p.md"}"#,
            400,
            diagnostics,
        ),
        ("restore", b"{nope", 400, "body must be valid JSON"),
        ("restore", b"[]", 400, restore),
        (
            "restore",
            br#"{"revision":"a","expectedRevision":"b","tenant":null}"#,
            400,
            restore,
        ),
        ("transact", b"{nope", 400, "body must be valid JSON"),
        (
            "transact",
            b"[]",
            400,
            "transaction must be an object scoped to the connected tenant",
        ),
        (
            "transact",
            br#"{"changes":[{"operation":"move","bundle":"b","path":"p"}]}"#,
            400,
            "invalid document operation",
        ),
    ];
    for (verb, body, status, text) in cases {
        let a = send(&f.open, "POST", &format!("/v1/acme/{verb}"), None, body).await;
        expect(&a, *status, text);
    }
    // A refusal of the batch's own keeps its kind in the header.
    let a = send(&f.open, "POST", "/v1/acme/transact", None, b"[]").await;
    assert_eq!(a.kind.as_deref(), Some("invalid"), "{a:?}");
    // A well-formed get still answers.
    let a = send(
        &f.open,
        "POST",
        "/v1/acme/get",
        None,
        br#"{"ids":["ops/deploy"]}"#,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK, "{a:?}");
    assert!(a.body.starts_with(r#"{"ops/deploy":{"text":"#), "{a:?}");
}

#[tokio::test]
async fn wrong_methods_are_refused_after_auth_without_an_allow_header() {
    let f = fixture().await;
    for (method, verb, text) in [
        ("GET", "get", "get requires POST"),
        ("PUT", "sync", "sync requires POST"),
        ("GET", "diagnostics", "diagnostics requires POST"),
        ("POST", "manifest", "manifest requires GET"),
        ("HEAD", "manifest", ""),
        ("DELETE", "history", "history requires GET"),
    ] {
        let a = send(&f.open, method, &format!("/v1/acme/{verb}"), None, b"").await;
        expect(&a, 405, text);
        assert_eq!(a.allow, None, "{a:?}");
    }
    // Authentication comes first: no token, 401 whatever the method.
    let a = send(&f.tokens, "GET", "/v1/get", None, b"").await;
    expect(&a, 401, "invalid or missing bearer token");
    let a = send(&f.tokens, "GET", "/v1/get", Some("r"), b"").await;
    expect(&a, 405, "get requires POST");
    // Source and bundles answer theirs once the tenant is open.
    let a = send(&f.open, "POST", "/v1/acme/source", None, b"").await;
    expect(&a, 405, "source requires GET");
    let a = send(&f.open, "PATCH", "/v1/acme/source/ops/deploy.md", None, b"").await;
    expect(&a, 405, "source supports GET, PUT and DELETE");
    let a = send(&f.open, "GET", "/v1/acme/bundles/ops", None, b"").await;
    expect(&a, 404, "no such route");
}

#[tokio::test]
async fn a_read_only_token_reads_and_syncs_but_writes_nothing() {
    let f = fixture().await;
    // The write is refused before its body is read.
    let ro = "this token may read but not write";
    for (method, uri, body) in [
        ("POST", "/v1/transact", &br#"{"changes":[]}"#[..]),
        ("POST", "/v1/restore", b"{nope"),
        ("PUT", "/v1/source/ops/new.md", b"x"),
        ("DELETE", "/v1/bundles/ops", b""),
    ] {
        let a = send(&f.tokens, method, uri, Some("r"), body).await;
        expect(&a, 403, ro);
    }
    for (method, uri, body) in [
        ("POST", "/v1/sync", &b"{}"[..]),
        ("GET", "/v1/snapshot", b""),
        ("GET", "/v1/history?limit=1", b""),
        ("POST", "/v1/search", br#"{"q":"deploy"}"#),
        (
            "POST",
            "/v1/diagnostics",
            br##"{"bundle":"ops","path":"x.md","content":"# X\n"}"##,
        ),
    ] {
        let a = send(&f.tokens, method, uri, Some("r"), body).await;
        assert_eq!(a.status, StatusCode::OK, "{uri}: {a:?}");
    }
    let a = send(&f.tokens, "POST", "/v1/transact", Some("w"), b"{nope").await;
    expect(&a, 400, "body must be valid JSON");
}

#[tokio::test]
async fn empty_segments_are_dropped_and_unknown_paths_have_no_route() {
    let f = fixture().await;
    let plain = send(&f.open, "GET", "/v1/acme/snapshot", None, b"").await;
    assert_eq!(plain.status, StatusCode::OK, "{plain:?}");
    for uri in [
        "//v1//acme/snapshot",
        "/v1/acme/snapshot/",
        "/v1/acme//snapshot//",
    ] {
        let a = send(&f.open, "GET", uri, None, b"").await;
        expect(&a, 200, &plain.body);
    }
    let a = send(
        &f.open,
        "GET",
        "/v1/acme//source//ops//deploy.md",
        None,
        b"",
    )
    .await;
    assert!(a.body.contains("Ship it."), "{a:?}");
    for uri in [
        "/",
        "/v1",
        "/v1/acme",
        "/v1/acme/nosuch",
        "/v2/acme/manifest",
        "/v1/acme/x/y",
    ] {
        let a = send(&f.open, "GET", uri, None, b"").await;
        expect(&a, 404, "no such route");
    }
    // The tenant segment is decoded once, lossily, and then checked.
    let a = send(&f.open, "GET", "/v1/%61cme/snapshot", None, b"").await;
    expect(&a, 200, &plain.body);
    let a = send(&f.open, "GET", "/v1/%2561cme/snapshot", None, b"").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{a:?}");
    let a = send(&f.open, "GET", "/v1/%FF/snapshot", None, b"").await;
    assert_eq!(a.status, StatusCode::BAD_REQUEST, "{a:?}");
    assert!(a.body.starts_with("invalid tenant id"), "{a:?}");
    // A tenant named like a verb still takes the tenant form.
    let a = send(&f.open, "GET", "/v1/source/snapshot", None, b"").await;
    assert!(a.body.starts_with("no tenant \"source\""), "{a:?}");
}

#[tokio::test]
async fn a_body_over_the_limit_is_refused() {
    let f = fixture().await;
    let big = vec![b' '; crate::serve::MAX_BODY + 1];
    let a = send(&f.open, "POST", "/v1/acme/get", None, &big).await;
    assert_eq!(a.status, StatusCode::PAYLOAD_TOO_LARGE, "{a:?}");
}

#[test]
fn routes_named_after_tools_take_their_access_from_the_catalogue() {
    for name in ["manifest", "snapshot", "get", "search", "history"] {
        assert_eq!(tool(name), Effect::Read, "{name}");
    }
    for name in ["transact", "restore"] {
        assert_eq!(tool(name), Effect::Write, "{name}");
    }
    for name in [
        "manifest", "snapshot", "get", "search", "history", "transact", "restore",
    ] {
        assert!(
            okfit_tools::catalogue().iter().any(|t| t.name == name),
            "no tool {name}"
        );
    }
    assert_eq!(tool("no such tool"), Effect::Write);
}
