//! The daemon's answers: plain text, JSON from the wire types, and errors
//! mapped to their status by kind (reference langonrock §1.4), the kind
//! also named in the `okfit-error` header so a client rebuilds it without
//! reading the message.

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use okfit_knowledge::wire::{ErrorBody, FailedChange, CONFLICT, PRECONDITION};
use okfit_store::change::{Change, CommitError};
use okfit_store::error::{Error, Kind};
use serde::Serialize;

/// The header that names an error reply's [`Kind`].
pub const ERROR_KIND_HEADER: &str = "okfit-error";

/// A reply with a status and a plain-text body.
pub fn text(status: StatusCode, body: impl Into<String>) -> Response {
    (
        status,
        [("content-type", "text/plain; charset=utf-8")],
        body.into(),
    )
        .into_response()
}

/// A reply with a status and `v` as compact JSON.
pub fn json_reply<T: Serialize>(status: StatusCode, v: &T) -> Response {
    match serde_json::to_string(v) {
        Ok(body) => (status, [("content-type", "application/json")], body).into_response(),
        Err(e) => text(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
    }
}

/// 409 with a conflict's JSON body.
fn conflict(message: String) -> Response {
    json_reply(
        StatusCode::CONFLICT,
        &ErrorBody {
            code: CONFLICT.into(),
            message,
            change: None,
        },
    )
}

/// An error's reply: its kind picks the status and travels in
/// [`ERROR_KIND_HEADER`].
pub fn error_reply(e: Error) -> Response {
    let kind = e.kind();
    let mut r = match kind {
        Kind::Conflict => conflict(e.to_string()),
        k => text(
            StatusCode::from_u16(k.http_status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR),
            e.to_string(),
        ),
    };
    r.headers_mut()
        .insert(ERROR_KIND_HEADER, HeaderValue::from_static(kind.name()));
    r
}

/// A refused commit: a failed precondition (with `status`) names the
/// change of `changes` it belongs to and the document's current hash.
pub fn commit_reply(e: CommitError, changes: &[Change], status: StatusCode) -> Response {
    match e {
        CommitError::Precondition { index, failure } => {
            let (bundle, path) = changes
                .get(index)
                .map(|c| (c.bundle.clone(), c.path.clone()))
                .unwrap_or_default();
            json_reply(
                status,
                &ErrorBody {
                    code: PRECONDITION.into(),
                    message: failure.message,
                    change: Some(FailedChange {
                        index,
                        bundle,
                        path,
                        current: failure.current,
                    }),
                },
            )
        }
        CommitError::Other(e) => error_reply(e),
    }
}

/// 403 for a write with a read-only token.
pub fn read_only() -> Response {
    text(StatusCode::FORBIDDEN, "this token may read but not write")
}

/// The entity tag in header `name`, without `W/` and quotes.
pub fn etag_of(h: &HeaderMap, name: &str) -> Option<String> {
    h.get(name).and_then(|v| v.to_str().ok()).map(|v| {
        v.trim()
            .trim_start_matches("W/")
            .trim_matches('"')
            .to_string()
    })
}
