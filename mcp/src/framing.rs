//! What a JSON-RPC message from a client becomes before the MCP server
//! sees it: a typed message, or the error answer to send back at once
//! (carrying the request's id whenever one can be recovered). Every
//! transport (stdio, the Node addon's sessions) decides through here, so
//! every request gets exactly one answer.

use super::scan;
use rmcp::model::{
    CallToolRequestParams, ClientRequest, InitializeRequestParams, JsonRpcMessage,
    PaginatedRequestParams, ReadResourceRequestParams,
};
use rmcp::service::RxJsonRpcMessage;
use rmcp::RoleServer;
use serde_json::{json, Value};

/// The largest message accepted, in bytes: a 16 MiB transaction plus its
/// JSON framing (the daemon's request body limit is the same).
pub const MAX_MESSAGE_BYTES: usize = okfit_store::change::MAX_REQUEST_BYTES;

/// How deeply JSON may nest (serde_json's own limit).
pub const MAX_DEPTH: usize = 128;

/// What to do with one incoming message.
#[derive(Debug)]
pub enum Inbound {
    /// Hand it to the server.
    Message(Box<RxJsonRpcMessage<RoleServer>>),
    /// Answer it with this JSON-RPC error response; the server never sees it.
    Reply(Value),
    /// Nothing to answer (an invalid notification or response).
    Ignore,
}

/// A JSON-RPC error response.
pub fn error_reply(id: Option<Value>, code: i64, message: &str) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": {"code": code, "message": message},
    })
}

/// The answer to a message of `size` bytes that was over the limit, whose
/// id (if any) the scanner found.
pub fn oversize_reply(id: Option<Value>, size: u64) -> Value {
    error_reply(
        id,
        -32600,
        &format!(
            "Invalid Request: the message is {} bytes; okfit accepts messages of at most {} bytes (16 MiB of documents plus JSON framing)",
            okfit_core::kb::model::with_commas(size),
            okfit_core::kb::model::with_commas(MAX_MESSAGE_BYTES as u64)
        ),
    )
}

/// Decides what one whole message (without its line end) becomes.
pub fn decode(bytes: &[u8]) -> Inbound {
    if bytes.len() > MAX_MESSAGE_BYTES {
        return Inbound::Reply(oversize_reply(scan::scan(bytes).id(), bytes.len() as u64));
    }
    match serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(bytes) {
        Ok(JsonRpcMessage::Request(r)) => match malformed_standard(&r.request) {
            Some(why) => {
                Inbound::Reply(error_reply(serde_json::to_value(&r.id).ok(), -32602, &why))
            }
            None => Inbound::Message(Box::new(JsonRpcMessage::Request(r))),
        },
        Ok(m) => Inbound::Message(Box::new(m)),
        Err(typed) => explain(bytes, typed),
    }
}

/// A request for a method MCP defines whose params do not have its shape
/// reaches rmcp as a custom request (and would be answered "method not
/// found"): say what is wrong with the params instead.
fn malformed_standard(request: &ClientRequest) -> Option<String> {
    let ClientRequest::CustomRequest(c) = request else {
        return None;
    };
    let params = c.params.clone().unwrap_or(Value::Null);
    let err = match c.method.as_str() {
        "tools/call" => serde_json::from_value::<CallToolRequestParams>(params).err(),
        "resources/read" => serde_json::from_value::<ReadResourceRequestParams>(params).err(),
        "initialize" => serde_json::from_value::<InitializeRequestParams>(params).err(),
        "tools/list" | "resources/list" | "resources/templates/list" | "prompts/list" => {
            serde_json::from_value::<Option<PaginatedRequestParams>>(params).err()
        }
        _ => return None,
    };
    let detail = err.map_or_else(
        || "they do not have the shape MCP defines".to_string(),
        |e| okfit_store::error::truncate(&e.to_string()),
    );
    Some(format!("Invalid params for {}: {detail}", c.method))
}

/// Why a message that is not a valid MCP message was refused.
fn explain(bytes: &[u8], typed: serde_json::Error) -> Inbound {
    let value = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => v,
        Err(e) => {
            let s = scan::scan(bytes);
            let id = s.id();
            if let Some(at) = s.lone_surrogate() {
                let what = match at.strip_prefix("params.arguments.") {
                    Some(arg) => format!("argument {arg}"),
                    None => at.to_string(),
                };
                return Inbound::Reply(error_reply(
                    id,
                    -32602,
                    &format!(
                        "Invalid params: {what} is not valid Unicode (a lone UTF-16 surrogate escape such as \\ud800); send well-formed text"
                    ),
                ));
            }
            if e.to_string().contains("recursion limit") {
                return Inbound::Reply(error_reply(
                    id,
                    -32600,
                    &format!("Invalid Request: JSON nested deeper than {MAX_DEPTH} levels"),
                ));
            }
            return Inbound::Reply(error_reply(id, -32700, &format!("Parse error: {e}")));
        }
    };
    let Value::Object(obj) = &value else {
        return Inbound::Reply(error_reply(
            None,
            -32600,
            "Invalid Request: a JSON-RPC message must be an object",
        ));
    };
    let id = obj
        .get("id")
        .filter(|v| v.is_string() || v.is_number())
        .cloned();
    let Some(id) = id else {
        // A notification or a response we cannot read: nothing to answer.
        return Inbound::Ignore;
    };
    match obj.get("method").and_then(Value::as_str) {
        Some(method) => Inbound::Reply(error_reply(
            Some(id),
            -32602,
            &format!(
                "Invalid params for {}: {}",
                okfit_store::error::truncate(method),
                okfit_store::error::truncate(&typed.to_string())
            ),
        )),
        None if obj.contains_key("result") || obj.contains_key("error") => Inbound::Ignore,
        None => Inbound::Reply(error_reply(
            Some(id),
            -32600,
            "Invalid Request: a request needs a \"method\" string",
        )),
    }
}
