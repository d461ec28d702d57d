//! The MCP server (rmcp, stdio). In project mode the six read-only bundle
//! tools and the `okf://index` and `okf://concept/<id>` resources; with a
//! connection the knowledge tools. `okf://manifest` is served in every mode
//! and `--tools` picks any set from the catalogue.

pub mod framing;
pub mod knowledge;
pub mod live;
mod scan;
pub mod tools;
pub mod transport;

use crate::error::Error;
use crate::kb::Knowledge;
use live::Live;
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
use std::sync::{Arc, Mutex, OnceLock};

/// What the server tells a client at the start of a session.
pub const INSTRUCTIONS: &str = "okfit serves this project's Open Knowledge Format (OKF) bundle: Markdown concepts with YAML frontmatter. Every tool is read-only. Start with describe_vocabulary to learn the declared types and tags, then list_concepts to find ids, then get_concept for content. Ids are bundle-relative paths without .md (metrics/revenue); a short id (revenue) works when it is unambiguous. Every successful call returns structuredContent plus the same JSON as text in content[0]; a failure is isError: true with the message and what to do next in content[0].text. After writing or editing a concept file, call validate_bundle.";

/// What the server tells a client when it serves a connection.
pub const KNOWLEDGE_INSTRUCTIONS: &str = "okfit serves Open Knowledge Format (OKF) knowledge. Read the manifest (the okf://manifest resource or the manifest tool) to see what exists, pick ids from its rows, then fetch them with one batched get (with section, find, or offset: pos from a search hit). On a large tenant use search, or manifest with bundle. Never guess an id; ids come from paths, so re-read the manifest after any write.";

/// The protocol revisions served, oldest first.
pub const PROTOCOLS: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

/// `/changes/0/replaces` as `changes[0].replaces`.
fn instance_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').filter(|s| !s.is_empty()) {
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(seg);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg.replace("~1", "/").replace("~0", "~"));
        }
    }
    out
}

/// `s` shortened to its first 80 and last 120 characters when longer.
fn elide_middle(s: &str) -> String {
    let n = s.chars().count();
    if n <= 240 {
        return s.to_string();
    }
    let head: String = s.chars().take(80).collect();
    let tail: String = s.chars().skip(n - 120).collect();
    format!("{head} … {tail}")
}

/// Checks a tool's arguments against its schema before the handler runs:
/// `Err` is the -32602 message in the seed's wording.
pub fn check_args(
    name: &str,
    schema: &Value,
    validator: &jsonschema::Validator,
    args: &Value,
) -> Result<(), String> {
    let mut problems: Vec<String> = vec![];
    if let (Value::Object(given), Some(Value::Object(props))) = (args, schema.get("properties")) {
        let unknown: Vec<&str> = given
            .keys()
            .filter(|k| !props.contains_key(*k))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let accepted: Vec<&str> = props.keys().map(String::as_str).collect();
            problems.push(format!(
                "Unrecognized parameter(s): {} (accepted: {})",
                unknown.join(", "),
                if accepted.is_empty() {
                    "none".to_string()
                } else {
                    accepted.join(", ")
                }
            ));
        }
    }
    for e in validator.iter_errors(args) {
        let msg = e.to_string();
        if msg.contains("Additional properties are not allowed") && !problems.is_empty() {
            continue;
        }
        let msg = match e.kind() {
            jsonschema::error::ValidationErrorKind::Pattern { pattern } => {
                format!("Invalid string: must match pattern /{pattern}/")
            }
            // The message quotes the instance, which may be megabytes:
            // keep its start and its end, where the reason is.
            _ => elide_middle(&msg),
        };
        let at = instance_path(&e.instance_path().to_string());
        problems.push(if at.is_empty() {
            msg
        } else {
            format!("{msg} at {at}")
        });
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Input validation error: Invalid arguments for tool {}: {}",
            name,
            problems.join("; ")
        ))
    }
}

/// Which group of the catalogue a tool belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Read-only tools over the project's bundle (seed 002).
    Bundle,
    /// manifest, search, get, snapshot (seed 000).
    Knowledge,
    /// write, delete (seed 000).
    Write,
    /// transact, history, restore (`--database-tools`).
    Database,
}

/// Every tool the server can offer, with its group.
pub fn catalogue() -> Vec<(&'static tools::ToolDef, Group)> {
    let mut v: Vec<(&'static tools::ToolDef, Group)> = vec![];
    v.extend(knowledge::READ_TOOLS.iter().map(|d| (d, Group::Knowledge)));
    v.extend(knowledge::WRITE_TOOLS.iter().map(|d| (d, Group::Write)));
    v.extend(
        knowledge::DATABASE_TOOLS
            .iter()
            .map(|d| (d, Group::Database)),
    );
    v.extend(tools::BUNDLE_TOOLS.iter().map(|d| (d, Group::Bundle)));
    v
}

/// How a server is started.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The connection string; `None` is project mode.
    pub connection: Option<String>,
    /// `--tools`: exactly these tools.
    pub tools: Option<Vec<String>>,
    /// `--database-tools`.
    pub database_tools: bool,
    /// `--read-only`: no tool that writes.
    pub read_only: bool,
    /// Overrides the computed manifest advice.
    pub advice: Option<String>,
}

/// The tool names a server offers for `opts`.
pub fn select_tools(opts: &Options) -> Result<Vec<&'static str>, Error> {
    let cat = catalogue();
    let names: Vec<&'static str> = match &opts.tools {
        Some(list) => {
            let mut out = vec![];
            for n in list.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
                match cat.iter().find(|(d, _)| d.name == n) {
                    Some((d, _)) => {
                        if !out.contains(&d.name) {
                            out.push(d.name)
                        }
                    }
                    None => {
                        let all: Vec<&str> = cat.iter().map(|(d, _)| d.name).collect();
                        return Err(Error::Usage(format!(
                            "unknown tool \"{}\": expected one of {}",
                            crate::error::truncate(n),
                            all.join(", ")
                        )));
                    }
                }
            }
            out
        }
        None => {
            let groups: &[Group] = match (opts.connection.is_some(), opts.database_tools) {
                (true, true) => &[Group::Knowledge, Group::Write, Group::Database],
                (true, false) => &[Group::Knowledge, Group::Write],
                (false, true) => &[Group::Bundle, Group::Database],
                (false, false) => &[Group::Bundle],
            };
            cat.iter()
                .filter(|(_, g)| groups.contains(g))
                .map(|(d, _)| d.name)
                .collect()
        }
    };
    let names = if opts.read_only {
        names
            .into_iter()
            .filter(|n| {
                !cat.iter().any(|(d, g)| {
                    d.name == *n
                        && (*g == Group::Write || (*g == Group::Database && d.name != "history"))
                })
            })
            .collect()
    } else {
        names
    };
    Ok(names)
}

struct Compiled {
    def: &'static tools::ToolDef,
    group: Group,
    schema: Value,
    validator: jsonschema::Validator,
}

/// Knowledge for `okf://manifest` and the knowledge tools: fixed by the
/// connection, or in project mode opened over the bundle root on first use.
struct KbSlot {
    fixed: Option<Arc<Knowledge>>,
    project: Mutex<Option<Arc<Knowledge>>>,
}

/// The okfit MCP server.
#[derive(Clone)]
pub struct Server {
    live: Arc<Mutex<Live>>,
    kb: Arc<KbSlot>,
    tools: Arc<Vec<Compiled>>,
    advice: Arc<OnceLock<Option<String>>>,
    advice_override: Option<String>,
    project_mode: bool,
}

impl Server {
    /// A project-mode server whose config discovery starts at `start`.
    pub fn new(start: PathBuf) -> Result<Server, String> {
        Server::with_options(start, &Options::default()).map_err(|e| e.to_string())
    }

    /// A server for `opts`; config discovery (project mode) starts at `start`.
    pub fn with_options(start: PathBuf, opts: &Options) -> Result<Server, Error> {
        let names = select_tools(opts)?;
        let fixed = match &opts.connection {
            Some(c) => Some(Arc::new(Knowledge::open(c)?)),
            None => None,
        };
        let live_start = match fixed.as_ref().map(|k| k.dsn()) {
            Some(crate::dsn::Dsn::Folder { path }) => path.clone(),
            _ => start,
        };
        let cat = catalogue();
        let mut compiled = vec![];
        for name in names {
            let Some((def, group)) = cat.iter().find(|(d, _)| d.name == name) else {
                continue;
            };
            if *group == Group::Database
                && !fixed.as_ref().is_some_and(|k| {
                    matches!(
                        k.dsn(),
                        crate::dsn::Dsn::Store { .. }
                            | crate::dsn::Dsn::Unix { .. }
                            | crate::dsn::Dsn::Http { .. }
                    )
                })
            {
                return Err(Error::Usage(format!(
                    "tool {name} needs a store connection (okf:///abs/data?tenant=t); a folder has no revisions"
                )));
            }
            if *group == Group::Bundle
                && fixed
                    .as_ref()
                    .is_some_and(|k| !matches!(k.dsn(), crate::dsn::Dsn::Folder { .. }))
            {
                return Err(Error::Usage(format!(
                    "tool {name} reads a project's bundle folder; use it without a connection or with an okf:///folder connection"
                )));
            }
            let schema = (def.schema)();
            let validator = jsonschema::validator_for(&schema)
                .map_err(|e| Error::Io(format!("tool {} has an invalid schema: {e}", def.name)))?;
            compiled.push(Compiled {
                def,
                group: *group,
                schema,
                validator,
            });
        }
        Ok(Server {
            live: Arc::new(Mutex::new(Live::new(live_start))),
            kb: Arc::new(KbSlot {
                fixed,
                project: Mutex::new(None),
            }),
            tools: Arc::new(compiled),
            advice: Arc::new(OnceLock::new()),
            advice_override: opts.advice.clone(),
            project_mode: opts.connection.is_none(),
        })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The knowledge behind the knowledge tools and `okf://manifest`.
    pub fn knowledge(&self) -> Result<Arc<Knowledge>, Error> {
        if let Some(k) = &self.kb.fixed {
            return Ok(k.clone());
        }
        let mut slot = self.kb.project.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = slot.as_ref() {
            return Ok(k.clone());
        }
        let root = self.live().project()?.bundle_root;
        let root = std::fs::canonicalize(&root).unwrap_or(root);
        let k = Arc::new(Knowledge::from_dsn(crate::dsn::Dsn::Folder { path: root })?);
        *slot = Some(k.clone());
        Ok(k)
    }

    /// The advice sentence, computed once per server from the manifest.
    pub fn advice(&self) -> Option<String> {
        if let Some(a) = &self.advice_override {
            return Some(a.clone());
        }
        self.advice
            .get_or_init(|| {
                let kb = self.knowledge().ok()?;
                let m = kb.manifest(None).ok()?;
                Some(okfit_core::kb::model::advice(&m))
            })
            .clone()
    }

    fn manifest_description(&self) -> String {
        knowledge::manifest_description(self.advice().as_deref())
    }

    /// The tool definitions as MCP `Tool`s.
    pub fn tool_list(&self) -> Vec<Tool> {
        self.tools
            .iter()
            .map(|c| {
                let schema = match &c.schema {
                    Value::Object(m) => m.clone(),
                    _ => serde_json::Map::new(),
                };
                let description = if c.def.name == "manifest" {
                    self.manifest_description()
                } else {
                    c.def.description.to_string()
                };
                let mut t = Tool::new(c.def.name, description, Arc::new(schema));
                t.title = Some(c.def.title.to_string());
                let writes = c.group == Group::Write
                    || (c.group == Group::Database && c.def.name != "history");
                t.annotations = Some(
                    ToolAnnotations::with_title(c.def.title)
                        .read_only(!writes)
                        .destructive(writes && c.def.name == "delete")
                        .idempotent(!writes)
                        .open_world(false),
                );
                t
            })
            .collect()
    }

    /// Runs a tool call to completion (shared with the Node addon).
    pub fn call(
        &self,
        name: &str,
        args: Option<serde_json::Map<String, Value>>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(c) = self.tools.iter().find(|c| c.def.name == name) else {
            return Err(ErrorData::invalid_params(
                format!("tool not found: {}", crate::error::truncate(name)),
                None,
            ));
        };
        let args = Value::Object(args.unwrap_or_default());
        check_args(c.def.name, &c.schema, &c.validator, &args)
            .map_err(|m| ErrorData::invalid_params(m, None))?;
        if matches!(c.group, Group::Knowledge | Group::Write | Group::Database) {
            let out = self
                .knowledge()
                .map_err(|e| e.to_string())
                .and_then(|kb| knowledge::call(&kb, name, &args));
            return Ok(match out {
                Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
                Err(m) => CallToolResult::error(vec![ContentBlock::text(m)]),
            });
        }
        let mut live = self.live();
        Ok(match tools::call(&mut live, name, &args) {
            Ok(v) => CallToolResult::structured(v),
            Err(r) => CallToolResult::error(vec![ContentBlock::text(r.text())]),
        })
    }

    fn manifest_resource(&self) -> Resource {
        let mut r = Resource::new(knowledge::MANIFEST_URI, "manifest");
        r.description = Some(self.manifest_description());
        r.mime_type = Some("text/tab-separated-values".into());
        r
    }

    /// The index resource and one resource per concept.
    fn resources(&self) -> Vec<Resource> {
        // The manifest's description needs the advice, which may open the
        // project: compute it before taking the bundle's lock.
        let manifest = self.manifest_resource();
        if !self.project_mode {
            return vec![manifest];
        }
        let mut out = vec![];
        let mut live = self.live();
        let mut index = Resource::new("okf://index", "OKF bundle index");
        index.description = Some(
            "The bundle's root index.md — the entry point for orienting on this OKF bundle.".into(),
        );
        index.mime_type = Some("text/markdown".into());
        out.push(index);
        if let Ok((_, b)) = live.fresh() {
            for (_, c) in b.concepts() {
                let mut r = Resource::new(format!("okf://concept/{}", c.id), c.id.clone());
                r.description = Some(c.title.clone());
                r.mime_type = Some("text/markdown".into());
                out.push(r);
            }
        }
        drop(live);
        out.push(manifest);
        out
    }

    fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
        if uri == knowledge::MANIFEST_URI {
            let text = self
                .knowledge()
                .and_then(|kb| kb.manifest(None))
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            let mut c = ResourceContents::text(text.to_string(), uri);
            if let ResourceContents::TextResourceContents { mime_type, .. } = &mut c {
                *mime_type = Some("text/tab-separated-values".into());
            }
            return Ok(ReadResourceResult::new(vec![c]));
        }
        if !self.project_mode {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", crate::error::truncate(uri)),
                None,
            ));
        }
        let mut live = self.live();
        let text_of = |path: PathBuf, what: &str| {
            std::fs::read(&path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|_| {
                    ErrorData::internal_error(
                        format!("no readable {what} at {}", path.display()),
                        None,
                    )
                })
        };
        let text = if uri == "okf://index" {
            let p = live
                .project()
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            text_of(p.bundle_root.join("index.md"), "index.md")?
        } else if let Some(id) = uri.strip_prefix("okf://concept/") {
            let (p, b) = live
                .fresh()
                .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
            let (d, _) = b.find_concept(id).map_err(|_| {
                ErrorData::resource_not_found(
                    format!(
                        "no concept \"{}\" in this bundle",
                        crate::error::truncate(id)
                    ),
                    None,
                )
            })?;
            text_of(p.bundle_root.join(&d.path), "concept file")?
        } else {
            return Err(ErrorData::resource_not_found(
                format!("no resource {}", crate::error::truncate(uri)),
                None,
            ));
        };
        let mut c = ResourceContents::text(text, uri);
        if let ResourceContents::TextResourceContents { mime_type, .. } = &mut c {
            *mime_type = Some("text/markdown".into());
        }
        Ok(ReadResourceResult::new(vec![c]))
    }

    /// Refreshes the bundle; true when the set of concepts changed since
    /// the last announcement.
    fn concepts_changed(&self) -> bool {
        let mut live = self.live();
        let _ = live.fresh();
        live.take_change()
    }
}

/// Runs blocking work (file reads, parsing) off the async workers, then
/// announces a changed set of concepts when the work found one.
async fn off_thread<T: Send + 'static>(
    server: &Server,
    context: &RequestContext<RoleServer>,
    work: impl FnOnce(&Server) -> T + Send + 'static,
) -> Result<T, ErrorData> {
    let this = server.clone();
    let (value, changed) = tokio::task::spawn_blocking(move || {
        let value = work(&this);
        let changed = this.live().take_change();
        (value, changed)
    })
    .await
    .map_err(|e| ErrorData::internal_error(e.to_string(), None))?;
    if changed {
        let _ = context.peer.notify_resource_list_changed().await;
    }
    Ok(value)
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_resources_list_changed()
                .build(),
        )
        .with_server_info(Implementation::new("okfit", crate::VERSION))
        .with_instructions(if self.project_mode {
            INSTRUCTIONS
        } else {
            KNOWLEDGE_INSTRUCTIONS
        })
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        std::borrow::Cow::Borrowed(&PROTOCOLS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tool_list()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        // Over a daemon a call is one short round trip: answer in place
        // rather than hopping to the blocking pool.
        let remote = self.kb.fixed.as_ref().is_some_and(|k| {
            matches!(
                k.dsn(),
                crate::dsn::Dsn::Unix { .. } | crate::dsn::Dsn::Http { .. }
            )
        });
        if remote {
            return self.call(&name, request.arguments).map(Into::into);
        }
        let r = off_thread(self, &context, move |s| s.call(&name, request.arguments)).await?;
        r.map(Into::into)
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        let r = off_thread(self, &context, |s| s.resources()).await?;
        Ok(ListResourcesResult::with_all_items(r))
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
        mcp: crate::cli::McpArgs,
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
            crate::cli::version_line().replacen("okfit ", "okfit-mcp ", 1)
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
    let start = crate::discover::env_start();
    let server = Server::with_options(start, opts)?;
    let shown = match &opts.connection {
        Some(c) => crate::dsn::masked(c),
        None => match server.live().project() {
            Ok(p) => p.bundle_root.display().to_string(),
            Err(e) => {
                eprintln!("okfit-mcp: {e}");
                crate::discover::env_start().display().to_string()
            }
        },
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            return Err(Error::Io(format!("cannot start the runtime: {e}")));
        }
    };
    eprintln!("okfit-mcp serving {shown} over stdio");
    // Parse the bundle while the client is still shaking hands; the first
    // call waits for it instead of starting it.
    let warm = server.clone();
    std::thread::spawn(move || {
        if warm.project_mode {
            let _ = warm.live().fresh();
        }
        let _ = warm.advice();
    });
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
                        if !watcher_side.project_mode {
                            continue;
                        }
                        let dirty = match watcher_side.live.try_lock() {
                            Ok(mut l) => l.poll(),
                            Err(_) => false,
                        };
                        if !dirty {
                            continue;
                        }
                        let s = watcher_side.clone();
                        let changed = tokio::task::spawn_blocking(move || s.concepts_changed())
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
        // Let the last responses reach stdout, but never hang on exit.
        let _ = tokio::time::timeout(std::time::Duration::from_millis(300), pump).await;
    });
    rt.shutdown_timeout(std::time::Duration::from_millis(100));
    Ok(0)
}
