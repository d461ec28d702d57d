//! Every request, observed once: it gets a request id (the client's
//! `x-request-id` when it sent a sane one, else a new UUID) echoed on the
//! answer, a `tracing` span carrying that id, its route template and
//! method, and its place in the metrics. The log is structured: one line
//! per event with its fields, or JSON with `OKFIT_LOG_FORMAT=json`;
//! `OKFIT_LOG` filters it (`info` by default; `debug` logs every request).

use crate::state::Daemon;
use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;
use tracing::Instrument;

/// The header a request id travels in, both ways.
pub const REQUEST_ID: &str = "x-request-id";

/// Starts the structured log on stderr (once per process).
pub fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("OKFIT_LOG").unwrap_or_else(|_| EnvFilter::new("info"));
    let fmt = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false);
    // Already started (a second daemon in one process): keep that one.
    let _ = if std::env::var("OKFIT_LOG_FORMAT").is_ok_and(|v| v == "json") {
        fmt.json().try_init()
    } else {
        fmt.try_init()
    };
}

/// A client's request id, if it is one we can log and echo: up to 128
/// visible ASCII characters.
fn sane(id: &str) -> bool {
    !id.is_empty() && id.len() <= 128 && id.bytes().all(|b| b.is_ascii_graphic())
}

/// Whether a request to `route` by `method` asks to change knowledge.
fn changes_knowledge(route: &str, method: &Method) -> bool {
    match *method {
        Method::POST => route.ends_with("/transact") || route.ends_with("/restore"),
        Method::PUT => route.contains("/source/"),
        Method::DELETE => route.contains("/source/") || route.contains("/bundles/"),
        _ => false,
    }
}

/// How a change ended, by its status.
fn outcome(status: u16) -> &'static str {
    match status {
        200..=299 => "committed",
        409 => "conflict",
        500..=599 => "failed",
        _ => "refused",
    }
}

/// The middleware: id, span, log line, metrics.
pub async fn observe(State(daemon): State<Arc<Daemon>>, req: Request, next: Next) -> Response {
    let id = req
        .headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| sane(v))
        .map(str::to_string)
        .unwrap_or_else(|| uuid::Uuid::new_v4().to_string());
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or("other", MatchedPath::as_str)
        .to_string();
    let method = req.method().clone();
    let span = tracing::info_span!("request", id = %id, method = %method, route = %route);
    let started = std::time::Instant::now();
    let mut answer = next.run(req).instrument(span.clone()).await;
    let took = started.elapsed();
    let status = answer.status().as_u16();
    daemon
        .metrics
        .request(&route, method.as_str(), status, took);
    if changes_knowledge(&route, &method) {
        daemon.metrics.commit(outcome(status));
    }
    span.in_scope(|| {
        let ms = took.as_secs_f64() * 1000.0;
        // A replica not ready yet is no fault.
        if status >= 500 && route != "/readyz" {
            tracing::warn!(status, ms, "answered");
        } else {
            tracing::debug!(status, ms, "answered");
        }
    });
    if let Ok(v) = HeaderValue::from_str(&id) {
        answer.headers_mut().insert(REQUEST_ID, v);
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_ids_and_outcomes() {
        assert!(sane("abc-123"));
        assert!(!sane(""));
        assert!(!sane("a b"));
        assert!(!sane(&"x".repeat(129)));
        assert!(changes_knowledge("/v1/{tenant}/transact", &Method::POST));
        assert!(changes_knowledge(
            "/v1/source/{bundle}/{*path}",
            &Method::DELETE
        ));
        assert!(!changes_knowledge(
            "/v1/source/{bundle}/{*path}",
            &Method::GET
        ));
        assert!(!changes_knowledge("/v1/search", &Method::POST));
        assert_eq!(outcome(201), "committed");
        assert_eq!(outcome(409), "conflict");
        assert_eq!(outcome(403), "refused");
    }
}
