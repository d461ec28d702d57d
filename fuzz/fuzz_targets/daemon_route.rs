//! The daemon's HTTP surface: the Router `okfit serve` serves
//! (`okfit_daemon::serve::router`), driven with `tower::ServiceExt::oneshot` on a
//! current-thread runtime.
//!
//! Input: an HTTP/1.1 request as text (request line, headers, blank line,
//! body; parsed with httparse; inputs that do not parse are skipped). A
//! request with an `Authorization` header goes to a daemon with tokens
//! (`r-token` reads tenant fuzz, `w-token` writes it, `o-token` writes
//! tenant other); one without goes to a daemon with no tokens (the tenant
//! comes from the path). Both serve one scratch data root, seeded with the
//! clean fixture's documents in tenant fuzz, bundles docs and ops, and
//! replaced by a fresh one every `ROTATE` requests that may write.
//!
//! So that replaces and deletes get past their preconditions, an
//! `If-Match: "@current"` on `/source/{bundle}/{path}` becomes the current
//! hash of that document, and in a JSON body "@current" as a change's
//! `replaces` and "@head" as `expectedRevision` the current hash and head
//! (read through the public `Daemon::tenant`).
#![no_main]

use axum::body::{Body, Bytes};
use axum::http::{HeaderName, HeaderValue, Method, Request, StatusCode, Uri};
use libfuzzer_sys::fuzz_target;
use okfit_daemon::serve::{router, Daemon, Grant};
use okfit_fuzz::{resolve_current, Scratch, FIXTURE_DOCS};
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};
use tower::ServiceExt;

const ROTATE: usize = 1000;

struct Daemons {
    daemon: Arc<Daemon>,
    open: axum::Router,
    tokens: axum::Router,
    writes: usize,
    _dir: Scratch,
}

fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime")
    })
}

async fn send(app: &axum::Router, req: Request<Body>) -> (StatusCode, Bytes) {
    let resp = match app.clone().oneshot(req).await {
        Ok(r) => r,
        Err(e) => match e {},
    };
    let status = resp.status();
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .expect("a response body");
    (status, body)
}

fn build() -> Daemons {
    let dir = Scratch::new("daemon");
    let grant = |tenant: &str, write: bool| Grant {
        tenant: tenant.to_string(),
        write,
        database: false,
    };
    let tokens: HashMap<String, Grant> = [
        ("r-token".to_string(), grant("fuzz", false)),
        ("w-token".to_string(), grant("fuzz", true)),
        ("o-token".to_string(), grant("other", true)),
    ]
    .into_iter()
    .collect();
    let at = okfit_store::backend::Location::Sqlite(dir.path().to_path_buf());
    let daemon = Arc::new(Daemon::new(at.clone(), HashMap::new(), 8));
    let open = router(daemon.clone());
    let with_tokens = router(Arc::new(Daemon::new(at, tokens, 8)));
    runtime().block_on(async {
        for (i, (path, text)) in FIXTURE_DOCS.iter().enumerate() {
            let bundle = if i % 2 == 0 { "docs" } else { "ops" };
            let req = Request::builder()
                .method(Method::PUT)
                .uri(format!("/v1/fuzz/source/{bundle}/{path}"))
                .header("if-none-match", "*")
                .body(Body::from(text.as_bytes().to_vec()))
                .expect("a seed request");
            let (status, body) = send(&open, req).await;
            assert_eq!(
                status,
                StatusCode::OK,
                "seed {bundle}/{path}: {}",
                String::from_utf8_lossy(&body)
            );
        }
    });
    Daemons {
        daemon,
        open,
        tokens: with_tokens,
        writes: 0,
        _dir: dir,
    }
}

static STATE: Mutex<Option<Daemons>> = Mutex::new(None);

/// Distinct 500 answers, shown once each (they are findings to read, not
/// crashes).
fn note_500(line: &str, body: &[u8]) {
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);
    let mut seen = SEEN.lock().unwrap_or_else(|p| p.into_inner());
    let seen = seen.get_or_insert_with(HashSet::new);
    let msg: String = String::from_utf8_lossy(body).chars().take(200).collect();
    if seen.len() < 20 && seen.insert(msg.clone()) {
        eprintln!("daemon_route: 500 for {line:?}: {msg}");
    }
}

/// The hash of `tenant`'s `bundle/path`, when it exists.
fn current(d: &Daemon, tenant: &str, bundle: &str, path: &str) -> Option<String> {
    let kb = d.tenant(tenant).ok()?;
    kb.reader()
        .read_source(bundle, path)
        .ok()
        .flatten()
        .map(|(_, h)| h)
}

/// Replaces the "@current"/"@head" placeholders (see the module comment).
fn resolve(d: &Daemon, uri: &Uri, headers: &mut [(HeaderName, HeaderValue)], body: &mut Vec<u8>) {
    let segs: Vec<&str> = uri.path().split('/').filter(|s| !s.is_empty()).collect();
    let tenant = match segs.iter().position(|s| *s == "source") {
        Some(2) => segs[1],
        _ => "fuzz",
    };
    if let Some(i) = segs.iter().position(|s| *s == "source") {
        if segs.len() > i + 2 {
            let (bundle, path) = (segs[i + 1], segs[i + 2..].join("/"));
            for (n, v) in headers.iter_mut() {
                if *n == axum::http::header::IF_MATCH && v.as_bytes() == b"\"@current\"" {
                    if let Some(h) = current(d, tenant, bundle, &path) {
                        if let Ok(nv) = HeaderValue::from_str(&format!("\"{h}\"")) {
                            *v = nv;
                        }
                    }
                }
            }
        }
    }
    let placeholder = |b: &[u8]| b.windows(5).any(|w| w == b"@curr" || w == b"@head");
    if !placeholder(body) {
        return;
    }
    let Ok(Value::Object(mut top)) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    let tenant = segs
        .get(1)
        .copied()
        .filter(|t| *t != "transact" && *t != "restore");
    let tenant = tenant.unwrap_or("fuzz");
    if let Some(Value::Array(changes)) = top.get_mut("changes") {
        for c in changes.iter_mut() {
            if let Value::Object(o) = c {
                resolve_current(o, |b, p| current(d, tenant, b, p));
            }
        }
    }
    if top.get("expectedRevision").and_then(Value::as_str) == Some("@head") {
        if let Some(h) = d
            .tenant(tenant)
            .ok()
            .and_then(|k| k.reader().head().ok().flatten())
        {
            top.insert("expectedRevision".into(), Value::String(h));
        }
    }
    *body = Value::Object(top).to_string().into_bytes();
}

fuzz_target!(|data: &[u8]| {
    let mut raw_headers = [httparse::EMPTY_HEADER; 32];
    let mut parsed = httparse::Request::new(&mut raw_headers);
    let Ok(httparse::Status::Complete(head_len)) = parsed.parse(data) else {
        return;
    };
    let (Some(method), Some(path)) = (parsed.method, parsed.path) else {
        return;
    };
    let Ok(method) = Method::from_bytes(method.as_bytes()) else {
        return;
    };
    let Ok(uri) = path.parse::<Uri>() else {
        return;
    };
    let mut headers: Vec<(HeaderName, HeaderValue)> = parsed
        .headers
        .iter()
        .filter_map(|h| {
            Some((
                HeaderName::from_bytes(h.name.as_bytes()).ok()?,
                HeaderValue::from_bytes(h.value).ok()?,
            ))
        })
        .collect();
    let mut body = data[head_len..].to_vec();
    let authorised = headers
        .iter()
        .any(|(n, _)| n == axum::http::header::AUTHORIZATION);
    let line = format!("{method} {uri}");

    let mut guard = STATE.lock().unwrap_or_else(|p| p.into_inner());
    if method != Method::GET && method != Method::HEAD {
        let st = guard.get_or_insert_with(build);
        st.writes += 1;
        if st.writes > ROTATE {
            *guard = None;
        }
    }
    let st = guard.get_or_insert_with(build);
    resolve(&st.daemon, &uri, &mut headers, &mut body);
    let mut builder = Request::builder().method(method).uri(uri);
    for (n, v) in headers {
        builder = builder.header(n, v);
    }
    let Ok(req) = builder.body(Body::from(body)) else {
        return;
    };
    let app = if authorised { &st.tokens } else { &st.open };
    let (status, body) = runtime().block_on(send(app, req));
    if status == StatusCode::INTERNAL_SERVER_ERROR {
        note_500(&line, &body);
    }
});
