//! The MCP server (rmcp, stdio): in project mode the six read-only bundle
//! tools and the `okf://index` and `okf://concept/<id>` resources.

pub mod live;
pub mod tools;
mod transport;

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
use std::sync::{Arc, Mutex};

/// What the server tells a client at the start of a session.
pub const INSTRUCTIONS: &str = "okfit serves this project's Open Knowledge Format (OKF) bundle: Markdown concepts with YAML frontmatter. Every tool is read-only. Start with describe_vocabulary to learn the declared types and tags, then list_concepts to find ids, then get_concept for content. Ids are bundle-relative paths without .md (metrics/revenue); a short id (revenue) works when it is unambiguous. Every successful call returns structuredContent plus the same JSON as text in content[0]; a failure is isError: true with the message and what to do next in content[0].text. After writing or editing a concept file, call validate_bundle.";

/// The protocol revisions served, oldest first.
pub const PROTOCOLS: [ProtocolVersion; 3] = [
    ProtocolVersion::V_2025_06_18,
    ProtocolVersion::V_2025_11_25,
    ProtocolVersion::V_2026_07_28,
];

struct Compiled {
    def: &'static tools::ToolDef,
    schema: Value,
    validator: jsonschema::Validator,
}

/// The okfit MCP server in project mode.
#[derive(Clone)]
pub struct Server {
    live: Arc<Mutex<Live>>,
    tools: Arc<Vec<Compiled>>,
}

impl Server {
    /// A server whose config discovery starts at `start`.
    pub fn new(start: PathBuf) -> Result<Server, String> {
        let mut compiled = vec![];
        for def in &tools::BUNDLE_TOOLS {
            let schema = (def.schema)();
            let validator = jsonschema::validator_for(&schema)
                .map_err(|e| format!("tool {} has an invalid schema: {e}", def.name))?;
            compiled.push(Compiled {
                def,
                schema,
                validator,
            });
        }
        Ok(Server {
            live: Arc::new(Mutex::new(Live::new(start))),
            tools: Arc::new(compiled),
        })
    }

    fn live(&self) -> std::sync::MutexGuard<'_, Live> {
        self.live.lock().unwrap_or_else(|p| p.into_inner())
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
                let mut t = Tool::new(c.def.name, c.def.description, Arc::new(schema));
                t.title = Some(c.def.title.to_string());
                t.annotations = Some(
                    ToolAnnotations::with_title(c.def.title)
                        .read_only(true)
                        .destructive(false)
                        .idempotent(true)
                        .open_world(false),
                );
                t
            })
            .collect()
    }

    /// Checks arguments against the tool's schema: `Err` is the -32602 message.
    fn check_args(&self, c: &Compiled, args: &Value) -> Result<(), String> {
        let mut problems: Vec<String> = vec![];
        if let (Value::Object(given), Some(Value::Object(props))) =
            (args, c.schema.get("properties"))
        {
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
        for e in c.validator.iter_errors(args) {
            let msg = e.to_string();
            if msg.contains("Additional properties are not allowed") && !problems.is_empty() {
                continue;
            }
            let at = e.instance_path().to_string();
            problems.push(if at.is_empty() {
                msg
            } else {
                format!("{msg} at {}", at.trim_start_matches('/').replace('/', "."))
            });
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "Input validation error: Invalid arguments for tool {}: {}",
                c.def.name,
                problems.join("; ")
            ))
        }
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
        self.check_args(c, &args)
            .map_err(|m| ErrorData::invalid_params(m, None))?;
        let mut live = self.live();
        Ok(match tools::call(&mut live, name, &args) {
            Ok(v) => CallToolResult::structured(v),
            Err(r) => CallToolResult::error(vec![ContentBlock::text(r.text())]),
        })
    }

    /// The index resource and one resource per concept.
    fn resources(&self) -> Vec<Resource> {
        let mut live = self.live();
        let mut out = vec![];
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
        out
    }

    fn read(&self, uri: &str) -> Result<ReadResourceResult, ErrorData> {
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
        .with_instructions(INSTRUCTIONS)
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

/// `okfit mcp [CONNECTION]`: project mode without a connection.
pub fn run(connection: Option<&str>) -> Result<i32, crate::error::Error> {
    match connection {
        None => Ok(serve_stdio()),
        Some(c) => Err(crate::error::Error::Usage(format!(
            "connection \"{}\" is not supported by this okfit; run without a connection to serve the project's bundle",
            crate::error::truncate(c)
        ))),
    }
}

/// The `okfit-mcp` command line: `[CONNECTION]`, `--help`, `--version`.
pub fn main_with_args(args: Vec<String>) -> i32 {
    match args.get(1).map(String::as_str) {
        Some("--help" | "-h") => {
            println!("okfit-mcp: serve an OKF bundle to AI agents over MCP (stdio)\n\nUsage: okfit-mcp [CONNECTION]\n\nWithout a connection it serves the project's bundle: config discovery starts at\nOKFIT_PROJECT_DIR, else CLAUDE_PROJECT_DIR, else the working directory.");
            0
        }
        Some("--version" | "-V") => {
            println!(
                "{}",
                crate::cli::version_line().replacen("okfit ", "okfit-mcp ", 1)
            );
            0
        }
        other => match run(other) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("error: {e}");
                e.exit_code()
            }
        },
    }
}

/// Serves project mode over this process's stdin/stdout until stdin closes.
pub fn serve_stdio() -> i32 {
    let start = crate::discover::env_start();
    let server = match Server::new(start) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("okfit-mcp: {e}");
            return 1;
        }
    };
    let shown = match server.live().project() {
        Ok(p) => p.bundle_root.display().to_string(),
        Err(e) => {
            eprintln!("okfit-mcp: {e}");
            crate::discover::env_start().display().to_string()
        }
    };
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("okfit-mcp: cannot start the runtime: {e}");
            return 1;
        }
    };
    eprintln!("okfit-mcp serving {shown} over stdio");
    // Parse the bundle while the client is still shaking hands; the first
    // call waits for it instead of starting it.
    let warm = server.clone();
    std::thread::spawn(move || {
        let _ = warm.live().fresh();
    });
    rt.block_on(async move {
        let (transport, pump) = transport::stdio();
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
    0
}
