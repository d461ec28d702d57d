//! JSON request bodies as wire types. [`Body`] reads the bytes whatever
//! the content type (clients send none) and parses them, but leaves a
//! malformed body for the route to answer: each route has its own 400
//! text, and answers it only after authentication and opening the tenant,
//! as it always has.

use crate::reply::{error_reply, text};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{FromRequest, Request};
use axum::http::StatusCode;
use axum::response::Response;
use okfit_knowledge::wire::{Batch, DiagnosticsRequest, GetRequest, RestoreRequest, SearchRequest};
use okfit_store::error::Error;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A request body the daemon reads from JSON.
pub trait FromJson: Sized {
    /// The body's value as this type: `Err(None)` when it is not of this
    /// shape, `Err(Some(e))` with the type's own refusal.
    fn from_json(v: Value) -> Result<Self, Option<Error>>;
}

/// An object of `T`'s fields; any other JSON is not its shape.
fn object<T: DeserializeOwned>(v: Value) -> Result<T, Option<Error>> {
    match v {
        Value::Object(_) => T::deserialize(v).map_err(|_| None),
        _ => Err(None),
    }
}

/// Request bodies that are plain objects of their fields.
macro_rules! object_bodies {
    ($($t:ty),*) => {$(
        impl FromJson for $t {
            fn from_json(v: Value) -> Result<Self, Option<Error>> {
                object(v)
            }
        }
    )*};
}

object_bodies!(
    GetRequest,
    SearchRequest,
    RestoreRequest,
    DiagnosticsRequest
);

impl FromJson for Batch {
    /// With the reference's refusals for a transaction (langonrock §5.1).
    fn from_json(v: Value) -> Result<Self, Option<Error>> {
        Batch::from_json(&v).map_err(Some)
    }
}

/// Why a body is not a route's request.
#[derive(Debug)]
pub enum Malformed {
    /// It is not JSON.
    NotJson,
    /// It is JSON of another shape; with the type's own refusal when it
    /// has one.
    Shape(Option<Error>),
}

impl Malformed {
    /// The 400 for this body: `not_json` or `shape` as the route words
    /// them, or the type's own refusal.
    pub fn answer(self, not_json: &str, shape: &str) -> Response {
        match self {
            Malformed::NotJson => text(StatusCode::BAD_REQUEST, not_json),
            Malformed::Shape(None) => text(StatusCode::BAD_REQUEST, shape),
            Malformed::Shape(Some(e)) => error_reply(e),
        }
    }
}

/// A JSON body read as `T`, or why it is not one. Only a body that could
/// not be read at all (too large, cut short) is rejected outright, with
/// axum's own answer.
#[derive(Debug)]
pub struct Body<T>(pub Result<T, Malformed>);

impl<T: FromJson, S: Send + Sync> FromRequest<S> for Body<T> {
    type Rejection = BytesRejection;

    async fn from_request(req: Request, state: &S) -> Result<Self, BytesRejection> {
        let bytes = Bytes::from_request(req, state).await?;
        Ok(Body(match serde_json::from_slice::<Value>(&bytes) {
            Ok(v) => T::from_json(v).map_err(Malformed::Shape),
            Err(_) => Err(Malformed::NotJson),
        }))
    }
}
