//! The MCP server (rmcp, stdio). In project mode the six read-only bundle
//! tools and the `okf://index` and `okf://concept/<id>` resources; with a
//! connection the knowledge tools. `okf://manifest` is served in every mode
//! and `--tools` picks any set from the catalogue.

pub mod framing;
pub mod http;
mod scan;
pub mod transport;

use okfit_store::error::Error;
use okfit_tools::{Options, Outcome, ReadError, ToolInfo, Toolbox};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ErrorData,
    Implementation, ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, Tool, ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::Arc;

/// What the server tells a client at the start of a session.
pub const INSTRUCTIONS: &str = "okfit serves this project's Open Knowledge Format (OKF) bundle: Markdown concepts with YAML frontmatter. Every tool is read-only. Start with describe_vocabulary to learn the declared types and tags, then list_concepts to find ids, then get_concept for content. Ids are bundle-relative paths without .md (metrics/revenue); a short id (revenue) works when it is unambiguous. Every successful call returns structuredContent plus the same JSON as text in content[0]; a failure is isError: true with the message and what to do next in content[0].text. After writing or editing a concept file, call validate_bundle.";

/// What the server tells a client when it serves a connection.
/// Resources per `resources/list` page (MCP cursor pagination).
pub const RESOURCES_PAGE: usize = 500;

pub const KNOWLEDGE_INSTRUCTIONS: &str = "okfit serves Open Knowledge Format (OKF) knowledge. Read the manifest (the okf://manifest resource or the manifest tool) to see what exists, pick ids from its rows, then fetch them with one batched get (with section, find, or offset: pos from a search hit). On a large tenant use search, or manifest with bundle. Never guess an id; ids come from paths, so re-read the manifest after any write.";

/// The protocol revisions served, oldest first.
pub const PROTOCOLS: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// The okfit MCP server: the toolbox behind rmcp's types.
#[derive(Clone)]
pub struct Server {
    tools: Toolbox,
    activity: Arc<Activity>,
}

/// How long the client must have asked nothing before work is done ahead
/// of its calls.
const QUIET: std::time::Duration = std::time::Duration::from_millis(20);

/// The requests being answered, so work done ahead of them (parsing the
/// bundle) waits until the client asks nothing: beside a call, that work
/// slows the call (a first `validate_bundle` at 10,000 concepts took
/// 250 ms instead of the CLI's 150), while a client that calls at once
/// gains nothing from it.
#[derive(Default)]
struct Activity {
    /// Requests being answered now.
    busy: std::sync::atomic::AtomicUsize,
    /// Requests begun since the start.
    begun: std::sync::atomic::AtomicU64,
}

/// A request being answered; it ends when dropped.
struct Busy<'a>(&'a Activity);

impl Drop for Busy<'_> {
    fn drop(&mut self) {
        self.0
            .busy
            .fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }
}

impl Activity {
    /// Notes a request until the guard drops.
    fn begin(&self) -> Busy<'_> {
        use std::sync::atomic::Ordering::Relaxed;
        self.begun.fetch_add(1, Relaxed);
        self.busy.fetch_add(1, Relaxed);
        Busy(self)
    }

    /// Returns once no request has begun or been running for [`QUIET`].
    fn wait_quiet(&self) {
        use std::sync::atomic::Ordering::Relaxed;
        let mut seen = self.begun.load(Relaxed);
        loop {
            std::thread::sleep(QUIET);
            let now = self.begun.load(Relaxed);
            if now == seen && self.busy.load(Relaxed) == 0 {
                return;
            }
            seen = now;
        }
    }
}

impl Server {
    /// A project-mode server whose config discovery starts at `start`.
    pub fn new(start: PathBuf) -> Result<Server, String> {
        Server::with_options(start, &Options::default()).map_err(|e| e.to_string())
    }

    /// A server for `opts`; config discovery (project mode) starts at `start`.
    pub fn with_options(start: PathBuf, opts: &Options) -> Result<Server, Error> {
        Ok(Server {
            tools: Toolbox::new(start, opts)?,
            activity: Arc::default(),
        })
    }

    /// The protocol-free tools behind this server.
    pub fn toolbox(&self) -> &Toolbox {
        &self.tools
    }

    /// The tool definitions as MCP `Tool`s.
    pub fn tool_list(&self) -> Vec<Tool> {
        self.tools.tool_list().into_iter().map(tool).collect()
    }

    /// Runs a tool call to completion (shared with the Node addon).
    pub fn call(
        &self,
        name: &str,
        args: Option<serde_json::Map<String, Value>>,
    ) -> Result<CallToolResult, ErrorData> {
        Ok(match self.tools.call(name, args) {
            Outcome::Structured(v) => CallToolResult::structured(v),
            Outcome::Text(t) => CallToolResult::success(vec![ContentBlock::text(t)]),
            Outcome::Refused(m) => CallToolResult::error(vec![ContentBlock::text(m)]),
            Outcome::Invalid(m) => return Err(ErrorData::invalid_params(m, None)),
        })
    }

    /// One page of `resources/list`: [`RESOURCES_PAGE`] resources from the
    /// offset the cursor names (none: the start), and the cursor of the
    /// next page when there is one.
    fn resources(&self, cursor: Option<&str>) -> Result<ListResourcesResult, ErrorData> {
        let all = self.tools.resources();
        let start = match cursor {
            None => 0,
            Some(c) => c
                .parse::<usize>()
                .ok()
                .filter(|&n| n <= all.len())
                .ok_or_else(|| {
                    ErrorData::invalid_params(
                        format!(
                            "unknown cursor \"{}\"; list again from the start",
                            okfit_store::error::truncate(c)
                        ),
                        None,
                    )
                })?,
        };
        let end = (start + RESOURCES_PAGE).min(all.len());
        let next = (end < all.len()).then(|| end.to_string());
        let page = all
            .into_iter()
            .skip(start)
            .take(end - start)
            .map(|r| {
                let mut out = Resource::new(r.uri, r.name);
                out.description = Some(r.description);
                out.mime_type = Some(r.mime_type.into());
                out
            })
            .collect();
        let mut result = ListResourcesResult::with_all_items(page);
        result.next_cursor = next;
        Ok(result)
    }

    fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        let (text, mime) = self.tools.read(uri).map_err(|e| match e {
            ReadError::NotFound(m) => ErrorData::resource_not_found(m, None),
            ReadError::Failed(m) => ErrorData::internal_error(m, None),
        })?;
        let mut c = ResourceContents::text(text, uri);
        if let ResourceContents::TextResourceContents { mime_type, .. } = &mut c {
            *mime_type = Some(mime.into());
        }
        Ok(ReadResourceResult::new(vec![c]))
    }
}

/// One catalogue entry as an MCP `Tool`.
fn tool(t: ToolInfo) -> Tool {
    let mut out = Tool::new(t.name, t.description, Arc::new(t.schema));
    out.title = Some(t.title.to_string());
    out.annotations = Some(
        ToolAnnotations::with_title(t.title)
            .read_only(t.read_only)
            .destructive(t.destructive)
            .idempotent(t.idempotent)
            .open_world(false),
    );
    out
}
/// Runs blocking work in place on a multi-threaded runtime (this
/// worker's other tasks move to another thread: no hand-over to the
/// blocking pool and back, which on an idle machine costs more than a warm
/// call); elsewhere, directly.
pub(crate) fn in_place<T>(work: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    match Handle::try_current().map(|h| h.runtime_flavor()) {
        Ok(RuntimeFlavor::MultiThread) => tokio::task::block_in_place(work),
        _ => work(),
    }
}

/// Runs blocking work (file reads, parsing) off the async workers, then
/// announces a changed set of concepts when the work found one.
async fn off_thread<T: Send + 'static>(
    server: &Server,
    context: &RequestContext<RoleServer>,
    work: impl FnOnce(&Server) -> T + Send + 'static,
) -> Result<T, ErrorData> {
    let _busy = server.activity.begin();
    let this = server.clone();
    let run = move || {
        let value = work(&this);
        let changed = this.tools.live().take_change();
        (value, changed)
    };
    use tokio::runtime::{Handle, RuntimeFlavor};
    let (value, changed) = if Handle::current().runtime_flavor() == RuntimeFlavor::MultiThread {
        tokio::task::block_in_place(run)
    } else {
        tokio::task::spawn_blocking(run)
            .await
            .map_err(|e| ErrorData::internal_error(e.to_string(), None))?
    };
    if changed {
        let _ = context.peer.notify_resource_list_changed().await;
    }
    Ok(value)
}

/// What the server says of itself at initialize: project mode (the
/// bundle tools) or knowledge behind a connection.
pub(crate) fn info(project_mode: bool) -> ServerConfig {
    ServerConfig::new(
        ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_resources_list_changed()
            .build(),
    )
    .with_server_info(Implementation::new("okfit", okfit_store::VERSION))
    .with_instructions(if project_mode {
        INSTRUCTIONS
    } else {
        KNOWLEDGE_INSTRUCTIONS
    })
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        info(self.tools.project_mode)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&PROTOCOLS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        // The manifest tool's description measures the manifest: the first
        // list may read every document of the tenant.
        let tools = off_thread(self, &context, |s| s.tool_list()).await?;
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        // Over a daemon a call is one short round trip, and a read of a
        // loaded store tenant is answered from memory: answer in place
        // rather than handing the worker's core to another thread (that
        // hand-over cost more than the search itself).
        if self.tools.remote() || self.tools.answers_from_memory(&name) {
            let _busy = self.activity.begin();
            return self.call(&name, request.arguments).map(Into::into);
        }
        let r = off_thread(self, &context, move |s| s.call(&name, request.arguments)).await?;
        r.map(Into::into)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let cursor = request.and_then(|r| r.cursor);
        off_thread(self, &context, move |s| s.resources(cursor.as_deref())).await?
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        let r = off_thread(self, &context, move |s| s.read(&request.uri)).await?;
        Ok(r?.into())
    }
}

/// Arguments of `okfit mcp` and `okfit-mcp`.
#[derive(clap::Args, Debug)]
pub struct McpArgs {
    /// Connection string (okf:///abs/bundle, okf:///abs/data?tenant=t, okf://?tenant=t,
    /// okf+unix:///path.sock?tenant=t, okf+https://host:port?token=...);
    /// without one the server serves the project's bundle (OKFIT_PROJECT_DIR,
    /// else CLAUDE_PROJECT_DIR, else the working directory).
    pub connection: Option<String>,
    /// Add the database tools (transact, history, restore).
    #[arg(long)]
    pub database_tools: bool,
    /// Serve exactly these tools (comma-separated names from the catalogue).
    #[arg(long, value_delimiter = ',', value_name = "NAME,...")]
    pub tools: Option<Vec<String>>,
    /// Remove every tool that writes.
    #[arg(long)]
    pub read_only: bool,
}

impl McpArgs {
    /// The server options these arguments ask for.
    pub fn options(&self) -> okfit_tools::Options {
        okfit_tools::Options {
            connection: self.connection.clone(),
            tools: self.tools.clone(),
            database_tools: self.database_tools,
            read_only: self.read_only,
            advice: None,
        }
    }
}

/// `okfit mcp [CONNECTION] [--database-tools] [--tools A,B] [--read-only]`.
pub fn run(opts: &Options) -> Result<i32, Error> {
    serve_stdio_with(opts)
}

/// The `okfit-mcp` command line (the same arguments as `okfit mcp`).
pub fn main_with_args(args: Vec<String>) -> i32 {
    use clap::Parser;
    #[derive(Parser, Debug)]
    #[command(
        name = "okfit-mcp",
        about = "Serve OKF knowledge to AI agents over MCP (stdio)",
        disable_version_flag = true
    )]
    struct Cli {
        /// Print the version and exit.
        #[arg(long, short = 'V')]
        version: bool,
        #[command(flatten)]
        mcp: McpArgs,
    }
    let cli = match Cli::try_parse_from(&args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp) {
                print!("{e}");
                return 0;
            }
            let msg = e.to_string();
            let first = msg
                .lines()
                .find(|l| !l.trim().is_empty())
                .unwrap_or("invalid arguments");
            eprintln!("{}", first.trim());
            return 64;
        }
    };
    if cli.version {
        println!(
            "{}",
            okfit_store::clock::version_line().replacen("okfit ", "okfit-mcp ", 1)
        );
        return 0;
    }
    match run(&cli.mcp.options()) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

/// Serves project mode over this process's stdin/stdout until stdin closes.
pub fn serve_stdio() -> i32 {
    match serve_stdio_with(&Options::default()) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

/// Serves `opts` over this process's stdin/stdout until stdin closes.
pub fn serve_stdio_with(opts: &Options) -> Result<i32, Error> {
    let start = okfit_store::discover::env_start();
    let server = Server::with_options(start, opts)?;
    // Walk and watch the bundle folder while the client shakes hands (a
    // few milliseconds, no file read), then parse and validate the bundle
    // once the client asks nothing (an agent's first call usually comes
    // seconds after the handshake), so that call finds it ready and a
    // first `validate_bundle` re-checks only what changed since. Both run
    // on the background pool without holding the folder: a call for the
    // documents arriving meanwhile keeps the cores and does not wait for
    // them; a `validate_bundle` waits for the validation under way rather
    // than doing the same work beside it.
    let warm = server.clone();
    std::thread::spawn(move || {
        if warm.tools.project_mode {
            let _ = warm.tools.live().look();
        }
        warm.activity.wait_quiet();
        okfit_store::background::run(|| {
            if warm.tools.project_mode {
                let _ = warm.tools.live().prepare();
            }
            // The advice is part of the manifest tool's description:
            // computed ahead only when that tool is offered (it reads every
            // document).
            if warm.tools.offers("manifest") {
                let _ = warm.tools.advice();
            }
            if warm.tools.project_mode && warm.tools.offers("validate_bundle") {
                let _ = warm.tools.live().prepare_validation();
            }
        })
    });
    let shown = match &opts.connection {
        Some(c) => okfit_store::dsn::masked(c),
        None => match server.tools.live().project() {
            Ok(p) => p.bundle_root.display().to_string(),
            Err(e) => {
                eprintln!("okfit-mcp: {e}");
                okfit_store::discover::env_start().display().to_string()
            }
        },
    };
    // One async thread: a request then crosses no thread but the stdio
    // helpers' (each hand-over cost more than a warm search). Store work
    // that may wait (a parse, PostgreSQL, whose client blocks on a runtime
    // of its own) runs on the blocking pool, never on this thread.
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return Err(Error::Io(format!("cannot start the runtime: {e}")));
        }
    };
    eprintln!("okfit-mcp serving {shown} over stdio");
    rt.block_on(async move {
        let ((out, inc), pump) = transport::stdio();
        let transport = (
            futures::SinkExt::sink_map_err(out, std::io::Error::other),
            inc,
        );
        let pump = tokio::spawn(pump);
        let watcher_side = server.clone();
        match server.serve(transport).await {
            Ok(running) => {
                // Announce concepts added or removed on disk without waiting
                // for the client's next call.
                let peer = running.peer().clone();
                let announcer = tokio::spawn(async move {
                    loop {
                        tokio::time::sleep(std::time::Duration::from_millis(250)).await;
                        // A busy server is answering a call, which refreshes anyway.
                        if !watcher_side.tools.project_mode {
                            continue;
                        }
                        if !watcher_side.tools.poll() {
                            continue;
                        }
                        let s = watcher_side.clone();
                        let changed = tokio::task::spawn_blocking(move || {
                            okfit_store::background::run(|| s.tools.concepts_changed())
                        })
                        .await
                        .unwrap_or(false);
                        if changed && peer.notify_resource_list_changed().await.is_err() {
                            break;
                        }
                    }
                });
                let _ = running.waiting().await;
                announcer.abort();
            }
            Err(e) => eprintln!("okfit-mcp: {e}"),
        }
        // Let every response reach stdout (a client may have written many
        // requests and closed its end), but never hang on a client that
        // stopped reading: a closed stdout ends the pump at once.
        let _ = tokio::time::timeout(std::time::Duration::from_secs(10), pump).await;
    });
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};

    #[test]
    fn work_ahead_waits_until_the_client_asks_nothing() {
        let activity = Arc::new(Activity::default());
        let call = activity.begin();
        let done = Arc::new(AtomicBool::new(false));
        let waiter = {
            let (activity, done) = (activity.clone(), done.clone());
            std::thread::spawn(move || {
                activity.wait_quiet();
                done.store(true, Ordering::SeqCst);
            })
        };
        // While a call runs, the work ahead never starts.
        std::thread::sleep(QUIET * 5);
        assert!(!done.load(Ordering::SeqCst));
        drop(call);
        waiter.join().unwrap();
        assert!(done.load(Ordering::SeqCst));
    }
}
