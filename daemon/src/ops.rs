//! The routes a load balancer and a monitoring system call:
//!
//! - `GET /healthz`: `200 ok` while the process answers at all;
//! - `GET /readyz`: `200 ready` once the most recently used tenants' read
//!   models are warm and while the store answers; `503` with the reason
//!   otherwise, so a balancer sends no traffic to a replica still starting
//!   or cut off from its database;
//! - `GET /metrics`: the OpenMetrics text of [`crate::metrics`]; when the
//!   daemon has tokens, any valid token may read it (no tenant is named
//!   in it).
//!
//! None of them names or opens a tenant.

use crate::auth::bearer;
use crate::metrics::CONTENT_TYPE;
use crate::reply::text;
use crate::state::Daemon;
use axum::extract::State;
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use std::sync::Arc;
use std::time::Duration;

/// How long `/readyz` waits for the store to answer.
const READY_WITHIN: Duration = Duration::from_secs(3);

/// `GET /healthz`.
pub async fn healthz() -> Response {
    text(StatusCode::OK, "ok")
}

/// `GET /readyz`.
pub async fn readyz(State(d): State<Arc<Daemon>>) -> Response {
    let check = tokio::task::spawn_blocking(move || d.readiness());
    match tokio::time::timeout(READY_WITHIN, check).await {
        Ok(Ok(Ok(()))) => text(StatusCode::OK, "ready"),
        Ok(Ok(Err(why))) => text(StatusCode::SERVICE_UNAVAILABLE, why),
        Ok(Err(e)) => text(StatusCode::SERVICE_UNAVAILABLE, format!("not ready: {e}")),
        Err(_) => text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!(
                "the store did not answer within {} s",
                READY_WITHIN.as_secs()
            ),
        ),
    }
}

/// `GET /.well-known/oauth-protected-resource`: where this server's
/// access tokens come from (RFC 9728); 404 when no authorization server
/// is configured, so clients use a static token.
pub async fn resource_metadata(State(d): State<Arc<Daemon>>) -> Response {
    match d.oauth() {
        Some(o) => crate::reply::json_reply(StatusCode::OK, &o.metadata()),
        None => text(
            StatusCode::NOT_FOUND,
            "no authorization server is configured",
        ),
    }
}

/// `GET /metrics`.
pub async fn metrics(State(d): State<Arc<Daemon>>, headers: HeaderMap) -> Response {
    if d.has_credentials() && d.authenticate(bearer(&headers)).is_err() {
        return text(StatusCode::UNAUTHORIZED, "invalid or missing bearer token");
    }
    let body = tokio::task::spawn_blocking(move || d.metrics.render(d.scrape()))
        .await
        .unwrap_or_default();
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response()
}
