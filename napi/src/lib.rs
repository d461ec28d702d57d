//! okfit for Node (napi-rs): the MCP server behind any JS transport, the
//! native `okfit-mcp` command line, connections and the validator. Tool
//! names, descriptions, schemas and output text all come from the `okfit`
//! crate; this file only carries them across.

#![deny(clippy::all)]

use futures::{SinkExt, StreamExt};
use napi::bindgen_prelude::{Error, Result, Status};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use okfit_knowledge::kb::Knowledge;
use okfit_mcp::framing::Inbound;
use okfit_mcp::Server;
use okfit_tools::Options;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::{RoleServer, ServiceExt};
use serde_json::Value;
use std::sync::{Arc, Mutex};

fn err(e: impl std::fmt::Display) -> Error {
    Error::new(Status::GenericFailure, e.to_string())
}

/// Options of `createMcpServer`.
#[napi(object)]
#[derive(Default)]
pub struct ServerOptions {
    /// Add the database tools (transact, history, restore).
    pub database_tools: Option<bool>,
    /// Exactly these tools, from the catalogue.
    pub tools: Option<Vec<String>>,
    /// Drop every tool that writes.
    pub read_only: Option<bool>,
}

/// An MCP server: the same tools as `okfit-mcp`, behind any transport.
#[napi]
pub struct NativeServer {
    server: Server,
    options: Options,
}

/// Creates a server over `connection` (none: project mode), with an
/// optional advice sentence replacing the computed one.
#[napi]
pub fn create_native_server(
    connection: Option<String>,
    advice: Option<String>,
    options: Option<ServerOptions>,
) -> Result<NativeServer> {
    let o = options.unwrap_or_default();
    let opts = Options {
        connection: connection.filter(|c| !c.is_empty()),
        tools: o.tools,
        database_tools: o.database_tools.unwrap_or(false),
        read_only: o.read_only.unwrap_or(false),
        advice,
    };
    let start = okfit_store::discover::env_start();
    let server = Server::with_options(start, &opts).map_err(err)?;
    Ok(NativeServer {
        server,
        options: opts,
    })
}

/// One client session: JSON-RPC messages in through `send`, out through
/// the callback given to `NativeServer.open`.
#[napi]
pub struct NativeSession {
    input: Mutex<Option<futures::channel::mpsc::UnboundedSender<RxJsonRpcMessage<RoleServer>>>>,
    // Weak: the session's own tasks hold the callback, so that it (and the
    // Node event loop) is released when the session ends.
    reply: std::sync::Weak<ThreadsafeFunction<Option<String>, (), Option<String>, Status, false>>,
}

#[napi]
impl NativeServer {
    /// Starts a session; `on_message` receives every outgoing message as
    /// JSON text, and `null` when the session ends.
    #[napi]
    pub fn open(
        &self,
        on_message: ThreadsafeFunction<Option<String>, (), Option<String>, Status, false>,
    ) -> Result<NativeSession> {
        let (in_tx, in_rx) = futures::channel::mpsc::unbounded::<RxJsonRpcMessage<RoleServer>>();
        let (out_tx, mut out_rx) =
            futures::channel::mpsc::unbounded::<TxJsonRpcMessage<RoleServer>>();
        let server = self.server.clone();
        let cb = Arc::new(on_message);
        let forward = cb.clone();
        let reply_to = Arc::downgrade(&cb);
        napi::bindgen_prelude::spawn(async move {
            while let Some(m) = out_rx.next().await {
                if let Ok(text) = serde_json::to_string(&m) {
                    forward.call(Some(text), ThreadsafeFunctionCallMode::NonBlocking);
                }
            }
        });
        napi::bindgen_prelude::spawn(async move {
            let sink = out_tx.sink_map_err(std::io::Error::other);
            if let Ok(running) = server.serve((sink, in_rx)).await {
                let _ = running.waiting().await;
            }
            cb.call(None, ThreadsafeFunctionCallMode::NonBlocking);
        });
        Ok(NativeSession {
            input: Mutex::new(Some(in_tx)),
            reply: reply_to,
        })
    }

    /// Serves this process's stdin/stdout (as `okfit-mcp` does).
    #[napi]
    pub async fn serve_stdio(&self) -> Result<i32> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let opts = self.options.clone();
        // The server runs its own runtime: give it a thread of its own.
        std::thread::spawn(move || {
            let _ = tx.send(okfit_mcp::serve_stdio_with(&opts));
        });
        rx.await.map_err(err)?.map_err(err)
    }
}

#[napi]
impl NativeSession {
    /// Delivers one JSON-RPC message from the client. A message the
    /// server cannot take is answered at once through the session's
    /// callback, with its id, as on stdio.
    #[napi]
    pub fn send(&self, json: String) -> Result<()> {
        let msg = match okfit_mcp::framing::decode(json.as_bytes()) {
            Inbound::Message(m) => *m,
            Inbound::Reply(v) => {
                return match self.reply.upgrade() {
                    Some(cb) => {
                        cb.call(Some(v.to_string()), ThreadsafeFunctionCallMode::NonBlocking);
                        Ok(())
                    }
                    None => Err(err("the MCP session is closed")),
                };
            }
            Inbound::Ignore => return Ok(()),
        };
        let guard = self.input.lock().map_err(err)?;
        match guard.as_ref() {
            Some(tx) => tx
                .unbounded_send(msg)
                .map_err(|_| err("the MCP session is closed")),
            None => Err(err("the MCP session is closed")),
        }
    }

    /// Ends the session.
    #[napi]
    pub fn close(&self) {
        if let Ok(mut g) = self.input.lock() {
            g.take();
        }
    }
}

/// Runs the `okfit-mcp` command line in this process (arguments after the
/// program name) and resolves with its exit code.
#[napi]
pub async fn run_mcp_cli(args: Vec<String>) -> Result<i32> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut argv = vec!["okfit-mcp".to_string()];
        argv.extend(args);
        let _ = tx.send(okfit_mcp::main_with_args(argv));
    });
    rx.await.map_err(err)
}

/// Knowledge behind a connection string, answering with the MCP tools'
/// own text.
#[napi]
pub struct NativeConnection {
    kb: Option<Arc<Knowledge>>,
    dsn: String,
}

/// Opens a connection (`okf:///abs/bundle`, `okf:///abs/data?tenant=t`,
/// `okf+unix://…`, `okf+https://…`).
#[napi]
pub fn open_native(dsn: String) -> Result<NativeConnection> {
    let kb = Knowledge::open(&dsn).map_err(err)?;
    Ok(NativeConnection {
        kb: Some(Arc::new(kb)),
        dsn,
    })
}

/// A tool's answer: its text and whether it is an error.
#[napi(object)]
pub struct ToolAnswer {
    /// The text the MCP tool would answer with.
    pub text: String,
    /// True for a refusal or failure.
    pub is_error: bool,
}

#[napi]
impl NativeConnection {
    /// The connection string.
    #[napi(getter)]
    pub fn dsn(&self) -> String {
        self.dsn.clone()
    }

    /// Runs one knowledge tool (`manifest`, `search`, `get`, `snapshot`,
    /// `write`, `delete`, `transact`, `history`, `restore`) with JSON
    /// arguments, checked against the tool's schema.
    #[napi]
    pub async fn call(&self, tool: String, args: Value) -> Result<ToolAnswer> {
        let kb = self
            .kb
            .clone()
            .ok_or_else(|| err("database connection is closed"))?;
        tokio::task::spawn_blocking(move || okfit_tools::knowledge::call_checked(&kb, &tool, &args))
            .await
            .map_err(err)?
            .map(|r| match r {
                Ok(text) => ToolAnswer {
                    text,
                    is_error: false,
                },
                Err(text) => ToolAnswer {
                    text,
                    is_error: true,
                },
            })
            .map_err(|m| Error::new(Status::InvalidArg, m))
    }

    /// Releases the connection.
    #[napi]
    pub fn close(&mut self) {
        self.kb = None;
    }
}

/// `validate({root?, documents?, now?})`: the JSON envelope of
/// `okfit validate --format json` (unsaved documents overlaid, never
/// written). `root` is where config discovery starts (default: cwd).
#[napi]
pub async fn validate_native(root: Option<String>, args: Value) -> Result<Value> {
    tokio::task::spawn_blocking(move || {
        let start = match root {
            Some(r) => okfit_store::discover::absolute(std::path::Path::new(&r)),
            None => std::env::current_dir().map_err(err)?,
        };
        let mut live = okfit_knowledge::live::Live::new(start);
        okfit_tools::bundle::validate(&mut live, &args, "okfit")
            .map_err(|r| Error::new(Status::GenericFailure, r.text()))
    })
    .await
    .map_err(err)?
}
