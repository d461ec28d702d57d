//! okfit for Node (napi-rs): the MCP server behind any JS transport, the
//! native `okfit-mcp` command line, connections and the validator. Tool
//! names, descriptions, schemas and output text all come from the `okfit`
//! crate; this file only carries them across.
//!
//! `napi build` generates the package's `index.js` (the loader of this
//! addon) and `index.d.ts` (its types) from the `#[napi]` items here, so
//! every shape a caller passes or gets back is declared as a Rust type:
//! option objects and answers are `#[napi(object)]` structs, and the JSON
//! the tools answer with is read into them. The package's API (`mcp.js`)
//! adds what JavaScript has to do itself: the `OkfitError` class and the
//! glue between a session and an MCP SDK `Transport`.

#![deny(clippy::all)]

use futures::{SinkExt, StreamExt};
use napi::bindgen_prelude::{Either, Error, Result, Status};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi_derive::napi;
use okfit_knowledge::kb::Knowledge;
use okfit_mcp::framing::Inbound;
use okfit_mcp::Server;
use okfit_tools::Options;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::{RoleServer, ServiceExt};
use serde_json::{json, Map, Value};
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
    /// Serve exactly these tools from the catalogue.
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

/// The callback of a session: every outgoing JSON-RPC message as JSON
/// text, then `null` when the session ends.
type Outbox = ThreadsafeFunction<Option<String>, (), Option<String>, Status, false>;

/// One client session: JSON-RPC messages in through `send`, out through
/// the callback given to `NativeServer.open`.
#[napi]
pub struct NativeSession {
    input: Mutex<Option<futures::channel::mpsc::UnboundedSender<RxJsonRpcMessage<RoleServer>>>>,
    // Weak: the session's own tasks hold the callback, so that it (and the
    // Node event loop) is released when the session ends.
    reply: std::sync::Weak<Outbox>,
}

#[napi]
impl NativeServer {
    /// Starts a session; `onMessage` receives every outgoing message as
    /// JSON text, and `null` when the session ends.
    #[napi(ts_args_type = "onMessage: (message: string | null) => void")]
    pub fn open(&self, on_message: Outbox) -> Result<NativeSession> {
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

    /// Serves this process's stdin/stdout (as `okfit-mcp` does) and
    /// resolves with its exit code.
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
    /// Delivers one JSON-RPC message (JSON text) from the client. A
    /// message the server cannot take is answered at once through the
    /// session's callback, with its id, as on stdio.
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

/// The package that launches the `okfit` command line (`@okfit/plugin`).
#[napi(object)]
pub struct Launcher {
    /// Package name.
    pub name: String,
    /// Package version.
    pub version: String,
}

/// Runs the `okfit` command line in this process (arguments after the
/// program name) and resolves with its exit code; `launcher` names the
/// package that ran it, for `okfit --version` and the envelopes.
#[napi]
pub async fn run_cli(args: Vec<String>, launcher: Option<Launcher>) -> Result<i32> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::spawn(move || {
        let mut argv = vec!["okfit".to_string()];
        argv.extend(args);
        let code = match launcher {
            Some(l) => okfit::cli::run_as(
                argv,
                okfit_core::report::Distribution {
                    name: l.name,
                    version: l.version,
                },
            ),
            None => okfit::cli::run(argv),
        };
        let _ = tx.send(code);
    });
    rx.await.map_err(err)
}

// ---------------------------------------------------------------------------
// Connections.

/// Options of `Connection.search`.
#[napi(object)]
pub struct SearchOptions {
    /// How many direct hits to return.
    pub k: Option<f64>,
    /// Search this bundle only.
    pub bundle: Option<String>,
}

/// Options of `Connection.get`.
#[napi(object)]
pub struct GetOptions {
    /// Only this section (by heading).
    pub section: Option<String>,
    /// The first line to return.
    pub offset: Option<f64>,
    /// How many lines to return.
    pub limit: Option<f64>,
    /// Only the lines around this text.
    pub find: Option<String>,
}

/// Options of `Connection.history`.
#[napi(object)]
pub struct HistoryOptions {
    /// The cursor of the page to read (`next` of the page before).
    pub before: Option<String>,
    /// Page size (1-100, default 20).
    pub limit: Option<f64>,
}

/// One change of `Connection.transact`.
#[napi(object)]
pub struct DocumentChange {
    /// What to do with the document.
    #[napi(ts_type = "'write' | 'delete'")]
    pub operation: String,
    /// The bundle it is in.
    pub bundle: String,
    /// Its path inside the bundle.
    pub path: String,
    /// The new text (`write`).
    pub content: Option<String>,
    /// The sha256 of the text it replaces; needed to change or delete an
    /// existing document.
    pub replaces: Option<String>,
}

/// A finding of the validator on a document a change wrote.
#[napi(object, object_from_js = false)]
pub struct ChangeDiagnostic {
    /// `error`, `warning` or `info`.
    pub level: String,
    /// `bundle/path` of the document.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

/// The revision a `transact` or `restore` published.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct RevisionResult {
    /// The new revision's digest (`null` for a folder, which keeps none).
    pub revision: Option<String>,
    /// The snapshot digest of the knowledge after the change.
    pub snapshot: String,
    /// How many concepts there are now.
    pub concepts: u32,
    /// The bundles there are now.
    pub bundles: Vec<String>,
    /// The validator's findings on the written documents.
    pub diagnostics: Vec<ChangeDiagnostic>,
}

/// One retained revision.
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct RevisionInfo {
    /// Its digest.
    pub revision: String,
    /// The revision it followed (`null` for the first).
    pub parent: Option<String>,
    /// The snapshot digest it published.
    pub snapshot: String,
    /// When it was committed (RFC 3339).
    pub created: String,
    /// How many concepts it had.
    pub concepts: u32,
    /// Its bundles.
    pub bundles: Vec<String>,
}

/// A page of `Connection.history`, newest first.
#[napi(object, object_from_js = false)]
pub struct History {
    /// The revisions on this page.
    pub revisions: Vec<RevisionInfo>,
    /// The cursor of the next page, when there is one.
    pub next: Option<String>,
}

/// A knowledge tool's refusal (a stale or missing `replaces`, an unknown
/// bundle, …): the text the MCP tool answers with. `Connection` throws it
/// as an `OkfitError`.
#[napi]
pub struct Refusal {
    message: String,
}

#[napi]
impl Refusal {
    /// The tool's text.
    #[napi(getter)]
    pub fn message(&self) -> String {
        self.message.clone()
    }
}

/// A tool's answer: its value, or its refusal. (Spelled out in the
/// `#[napi]` signatures, which the generated types are read from.)
type Answer<T> = Result<Either<T, Refusal>>;

/// Knowledge behind a connection string, answering with the MCP tools'
/// own text. Arguments are checked against the tools' schemas: a
/// violation rejects with code `InvalidArg`.
#[napi]
pub struct NativeConnection {
    kb: Option<Arc<Knowledge>>,
    dsn: String,
}

/// Opens a connection (`okf:///abs/bundle`, `okf:///abs/data?tenant=t`,
/// `okf+unix://…`, `okf+https://…`).
#[napi]
pub async fn open_native(dsn: String) -> Result<NativeConnection> {
    let opened = dsn.clone();
    let kb = tokio::task::spawn_blocking(move || Knowledge::open(&opened))
        .await
        .map_err(err)?
        .map_err(err)?;
    Ok(NativeConnection {
        kb: Some(Arc::new(kb)),
        dsn,
    })
}

/// A JSON number for a JS one: integral values as integers, as the
/// tools' schemas and argument readers expect.
fn number(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9.0e15 {
        Value::from(x as i64)
    } else {
        Value::from(x)
    }
}

/// The tool arguments `pairs` name, without the absent ones.
fn args<const N: usize>(pairs: [(&str, Option<Value>); N]) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        if let Some(v) = v {
            m.insert(k.to_string(), v);
        }
    }
    Value::Object(m)
}

/// An optional string argument.
fn opt(s: Option<String>) -> Option<Value> {
    s.map(Value::from)
}

impl NativeConnection {
    /// Runs one knowledge tool: `Ok(Ok(text))` on success, `Ok(Err(text))`
    /// for a refusal.
    async fn call(
        &self,
        tool: &'static str,
        args: Value,
    ) -> Result<std::result::Result<String, String>> {
        let kb = self
            .kb
            .clone()
            .ok_or_else(|| err("database connection is closed"))?;
        tokio::task::spawn_blocking(move || okfit_tools::knowledge::call_checked(&kb, tool, &args))
            .await
            .map_err(err)?
            .map(|answer| answer.map_err(|e| e.to_string()))
            .map_err(|m| Error::new(Status::InvalidArg, m))
    }

    async fn text(&self, tool: &'static str, args: Value) -> Answer<String> {
        Ok(match self.call(tool, args).await? {
            Ok(text) => Either::A(text),
            Err(message) => Either::B(Refusal { message }),
        })
    }

    async fn json<T>(
        &self,
        tool: &'static str,
        args: Value,
        read: fn(&Value) -> Option<T>,
    ) -> Answer<T> {
        Ok(match self.call(tool, args).await? {
            Ok(text) => {
                let v: Value = serde_json::from_str(&text).map_err(err)?;
                Either::A(read(&v).ok_or_else(|| err(format!("unexpected {tool} answer: {text}")))?)
            }
            Err(message) => Either::B(Refusal { message }),
        })
    }
}

#[napi]
impl NativeConnection {
    /// The connection string.
    #[napi(getter)]
    pub fn dsn(&self) -> String {
        self.dsn.clone()
    }

    /// `manifest`: one line per concept of `bundle` (default: all).
    #[napi]
    pub async fn manifest(&self, bundle: Option<String>) -> Result<Either<String, Refusal>> {
        self.text("manifest", args([("bundle", opt(bundle))])).await
    }

    /// `search`: the concepts matching `query`.
    #[napi]
    pub async fn search(
        &self,
        query: String,
        options: Option<SearchOptions>,
    ) -> Result<Either<String, Refusal>> {
        let (k, bundle) = options.map_or((None, None), |o| (o.k, o.bundle));
        let a = args([
            ("query", Some(Value::from(query))),
            ("k", k.map(number)),
            ("bundle", opt(bundle)),
        ]);
        self.text("search", a).await
    }

    /// `get`: the text of concepts by id.
    #[napi]
    pub async fn get(
        &self,
        ids: Either<String, Vec<String>>,
        options: Option<GetOptions>,
    ) -> Result<Either<String, Refusal>> {
        let ids = match ids {
            Either::A(id) => vec![id],
            Either::B(ids) => ids,
        };
        let o = options.unwrap_or(GetOptions {
            section: None,
            offset: None,
            limit: None,
            find: None,
        });
        let a = args([
            ("ids", Some(Value::from(ids))),
            ("section", opt(o.section)),
            ("offset", o.offset.map(number)),
            ("limit", o.limit.map(number)),
            ("find", opt(o.find)),
        ]);
        self.text("get", a).await
    }

    /// `snapshot`: the snapshot digest and concept count.
    #[napi]
    pub async fn snapshot(&self) -> Result<Either<String, Refusal>> {
        self.text("snapshot", json!({})).await
    }

    /// `write`: creates or (with the old text's sha256 in `replaces`)
    /// replaces one document.
    #[napi]
    pub async fn write(
        &self,
        bundle: String,
        path: String,
        content: String,
        replaces: Option<String>,
    ) -> Result<Either<String, Refusal>> {
        let a = args([
            ("bundle", Some(Value::from(bundle))),
            ("path", Some(Value::from(path))),
            ("content", Some(Value::from(content))),
            ("replaces", opt(replaces)),
        ]);
        self.text("write", a).await
    }

    /// `delete`: removes one document whose sha256 is `replaces`.
    #[napi]
    pub async fn delete(
        &self,
        bundle: String,
        path: String,
        replaces: Option<String>,
    ) -> Result<Either<String, Refusal>> {
        let a = args([
            ("bundle", Some(Value::from(bundle))),
            ("path", Some(Value::from(path))),
            ("replaces", opt(replaces)),
        ]);
        self.text("delete", a).await
    }

    /// `transact`: all `changes` as one revision, or none of them;
    /// `expectedRevision` refuses it unless the head is that revision.
    #[napi]
    pub async fn transact(
        &self,
        changes: Vec<DocumentChange>,
        expected_revision: Option<String>,
    ) -> Result<Either<RevisionResult, Refusal>> {
        let changes: Vec<Value> = changes
            .into_iter()
            .map(|c| {
                args([
                    ("operation", Some(Value::from(c.operation))),
                    ("bundle", Some(Value::from(c.bundle))),
                    ("path", Some(Value::from(c.path))),
                    ("content", opt(c.content)),
                    ("replaces", opt(c.replaces)),
                ])
            })
            .collect();
        let a = args([
            ("changes", Some(Value::from(changes))),
            ("expectedRevision", opt(expected_revision)),
        ]);
        self.json("transact", a, revision_result).await
    }

    /// `history`: a page of retained revisions, newest first.
    #[napi]
    pub async fn history(
        &self,
        options: Option<HistoryOptions>,
    ) -> Result<Either<History, Refusal>> {
        let (before, limit) = options.map_or((None, None), |o| (o.before, o.limit));
        let a = args([("before", opt(before)), ("limit", limit.map(number))]);
        self.json("history", a, history).await
    }

    /// `restore`: publishes `revision` again as a new revision, if the
    /// head is still `expectedRevision`.
    #[napi]
    pub async fn restore(
        &self,
        revision: String,
        expected_revision: String,
    ) -> Result<Either<RevisionResult, Refusal>> {
        let a = json!({"revision": revision, "expectedRevision": expected_revision});
        self.json("restore", a, revision_result).await
    }

    /// Releases the connection.
    #[napi]
    pub fn close(&mut self) {
        self.kb = None;
    }
}

fn string(v: &Value, key: &str) -> Option<String> {
    v.get(key)?.as_str().map(str::to_string)
}

fn nullable_string(v: &Value, key: &str) -> Option<Option<String>> {
    match v.get(key)? {
        Value::Null => Some(None),
        s => s.as_str().map(|s| Some(s.to_string())),
    }
}

fn count(v: &Value, key: &str) -> Option<u32> {
    v.get(key)?.as_u64()?.try_into().ok()
}

fn list<T>(v: &Value, key: &str, item: fn(&Value) -> Option<T>) -> Option<Vec<T>> {
    v.get(key)?.as_array()?.iter().map(item).collect()
}

fn revision_result(v: &Value) -> Option<RevisionResult> {
    Some(RevisionResult {
        revision: nullable_string(v, "revision")?,
        snapshot: string(v, "snapshot")?,
        concepts: count(v, "concepts")?,
        bundles: list(v, "bundles", |b| b.as_str().map(str::to_string))?,
        diagnostics: list(v, "diagnostics", |d| {
            Some(ChangeDiagnostic {
                level: string(d, "level")?,
                path: string(d, "path")?,
                message: string(d, "message")?,
            })
        })?,
    })
}

fn revision_info(v: &Value) -> Option<RevisionInfo> {
    Some(RevisionInfo {
        revision: string(v, "revision")?,
        parent: nullable_string(v, "parent")?,
        snapshot: string(v, "snapshot")?,
        created: string(v, "created")?,
        concepts: count(v, "concepts")?,
        bundles: list(v, "bundles", |b| b.as_str().map(str::to_string))?,
    })
}

fn history(v: &Value) -> Option<History> {
    Some(History {
        revisions: list(v, "revisions", revision_info)?,
        next: string(v, "next"),
    })
}

// ---------------------------------------------------------------------------
// The validator.

/// A document that is not saved (or differs from the file): validated in
/// its place, never written.
#[napi(object)]
pub struct UnsavedDocument {
    /// Its path inside the bundle.
    pub path: String,
    /// Its text.
    pub text: String,
}

/// Options of `validate`.
#[napi(object)]
pub struct ValidateOptions {
    /// Where config discovery starts (default: the working directory).
    pub root: Option<String>,
    /// Documents validated in place of the files, never written.
    pub documents: Option<Vec<UnsavedDocument>>,
    /// The time staleness is measured at (RFC 3339; default: now).
    pub now: Option<String>,
}

/// Where a finding is in its file (UTF-16 units, zero-based).
#[napi(object, object_from_js = false)]
pub struct DiagnosticRange {
    /// Offset of the first unit from the start of the file.
    pub offset: u32,
    /// Length in UTF-16 code units.
    pub length: u32,
    /// Line of `offset`.
    pub line: u32,
    /// Column of `offset` within its line.
    pub character: u32,
}

/// One finding of the validator.
#[napi(object, object_from_js = false)]
pub struct Diagnostic {
    /// The tier that found it.
    #[napi(ts_type = "'core.conformance' | 'core.lint' | 'profile'")]
    pub source: String,
    /// Bundle-relative path; `""` for bundle-level findings.
    pub file: String,
    /// Stable code.
    pub code: String,
    /// Severity after configuration.
    #[napi(ts_type = "'error' | 'warning' | 'info'")]
    pub severity: String,
    /// What is wrong.
    pub message: String,
    /// Where, when known.
    pub range: Option<DiagnosticRange>,
}

/// Counts per tier and severity.
#[napi(object, object_from_js = false)]
pub struct Summary {
    /// Conformance errors.
    #[napi(js_name = "conformance_errors")]
    pub conformance_errors: u32,
    /// Lint errors.
    #[napi(js_name = "lint_errors")]
    pub lint_errors: u32,
    /// Lint warnings.
    #[napi(js_name = "lint_warnings")]
    pub lint_warnings: u32,
    /// Lint info.
    #[napi(js_name = "lint_info")]
    pub lint_info: u32,
    /// Profile errors.
    #[napi(js_name = "profile_errors")]
    pub profile_errors: u32,
    /// Decoded concepts.
    pub concepts: u32,
}

/// The package that launched the validator, when one did.
#[napi(object, object_from_js = false)]
pub struct Distribution {
    /// Package name.
    pub name: String,
    /// Package version.
    pub version: String,
}

/// The envelope of `okfit validate --format json` (schema 1).
#[napi(object, object_from_js = false, use_nullable = true)]
pub struct Report {
    /// Envelope schema version (1).
    pub schema: u32,
    /// okfit's version.
    #[napi(js_name = "okfit_version")]
    pub okfit_version: String,
    /// The validation engine's version.
    #[napi(js_name = "engine_version")]
    pub engine_version: String,
    /// Who produced the report: `okfit`.
    pub producer: String,
    /// The package that launched it, when one did.
    pub distribution: Option<Distribution>,
    /// The OKF version of the configuration.
    #[napi(js_name = "okf_version")]
    pub okf_version: String,
    /// The absolute bundle root.
    pub root: String,
    /// The resolved profile name.
    pub profile: Option<String>,
    /// 0 clean, 1 lint errors, 2 conformance or profile errors.
    #[napi(js_name = "exit_code")]
    pub exit_code: i32,
    /// Counts per tier and severity.
    pub summary: Summary,
    /// Every finding.
    pub diagnostics: Vec<Diagnostic>,
}

fn report(v: &Value) -> Option<Report> {
    let s = v.get("summary")?;
    Some(Report {
        schema: count(v, "schema")?,
        okfit_version: string(v, "okfit_version")?,
        engine_version: string(v, "engine_version")?,
        producer: string(v, "producer")?,
        distribution: match v.get("distribution")? {
            Value::Null => None,
            d => Some(Distribution {
                name: string(d, "name")?,
                version: string(d, "version")?,
            }),
        },
        okf_version: string(v, "okf_version")?,
        root: string(v, "root")?,
        profile: nullable_string(v, "profile")?,
        exit_code: v.get("exit_code")?.as_i64()?.try_into().ok()?,
        summary: Summary {
            conformance_errors: count(s, "conformance_errors")?,
            lint_errors: count(s, "lint_errors")?,
            lint_warnings: count(s, "lint_warnings")?,
            lint_info: count(s, "lint_info")?,
            profile_errors: count(s, "profile_errors")?,
            concepts: count(s, "concepts")?,
        },
        diagnostics: list(v, "diagnostics", diagnostic)?,
    })
}

fn diagnostic(d: &Value) -> Option<Diagnostic> {
    Some(Diagnostic {
        source: string(d, "source")?,
        file: string(d, "file")?,
        code: string(d, "code")?,
        severity: string(d, "severity")?,
        message: string(d, "message")?,
        range: match d.get("range") {
            None | Some(Value::Null) => None,
            Some(r) => Some(DiagnosticRange {
                offset: count(r, "offset")?,
                length: count(r, "length")?,
                line: count(r, "line")?,
                character: count(r, "character")?,
            }),
        },
    })
}

/// The report of `okfit validate --format json` for the project found
/// from `options.root`, with `options.documents` overlaid (never
/// written).
#[napi]
pub async fn validate(options: Option<ValidateOptions>) -> Result<Report> {
    let (root, documents, now) =
        options.map_or((None, None, None), |o| (o.root, o.documents, o.now));
    let mut a = Map::new();
    if let Some(docs) = documents {
        let docs: Vec<Value> = docs
            .into_iter()
            .map(|d| json!({"path": d.path, "text": d.text}))
            .collect();
        a.insert("documents".into(), Value::from(docs));
    }
    if let Some(now) = now.filter(|n| !n.is_empty()) {
        a.insert("now".into(), Value::from(now));
    }
    let a = Value::Object(a);
    tokio::task::spawn_blocking(move || {
        let start = match root {
            Some(r) => okfit_store::discover::absolute(std::path::Path::new(&r)),
            None => std::env::current_dir().map_err(err)?,
        };
        let live = okfit_knowledge::live::Live::new(start);
        let v = okfit_tools::bundle::validate(&live, &a, "okfit")
            .map_err(|r| Error::new(Status::GenericFailure, r.text()))?;
        report(&v).ok_or_else(|| err(format!("unexpected validate answer: {v}")))
    })
    .await
    .map_err(err)?
}
