//! The tools and resources one server offers, protocol-free: the MCP
//! server, the Node addon and the fuzzers drive it, each converting its
//! results to their own types.

use crate::{catalogue, check_args, knowledge, select, select_tools, Access, Group, Options, Run};
use okfit_knowledge::documents::Bodies;
use okfit_knowledge::live::Live;
use okfit_knowledge::Knowledge;
use okfit_store::error::{truncate, Error};
use serde_json::Value;
use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

struct Compiled {
    def: &'static crate::ToolDef,
    schema: Value,
    validator: jsonschema::Validator,
}

/// Every catalogue entry with its schema and compiled validator, built
/// once per process: a daemon builds a toolbox per request.
fn compiled() -> Result<&'static [Compiled], Error> {
    static COMPILED: OnceLock<Result<Vec<Compiled>, String>> = OnceLock::new();
    COMPILED
        .get_or_init(|| {
            catalogue()
                .into_iter()
                .map(|def| {
                    let schema = (def.schema)();
                    let validator = jsonschema::validator_for(&schema)
                        .map_err(|e| format!("tool {} has an invalid schema: {e}", def.name))?;
                    Ok(Compiled {
                        def,
                        schema,
                        validator,
                    })
                })
                .collect()
        })
        .as_deref()
        .map_err(|e| Error::Io(e.clone()))
}

/// The tools and resources one server offers, with no protocol attached:
/// the selected catalogue entries with their compiled schemas, the
/// knowledge behind them and, in project mode, the live bundle. Cheap to
/// clone (shared state).
#[derive(Clone)]
pub struct Toolbox {
    /// The project's bundle: in project mode also the knowledge behind
    /// `okf://manifest` and the knowledge tools (one view of the folder).
    live: Arc<Live>,
    /// The knowledge fixed by a connection.
    fixed: Option<Arc<Knowledge>>,
    /// Where read tools run, when not on `fixed` (a daemon's tenant reads
    /// on connections of their own, so a commit never stalls them).
    reads: Option<Arc<Knowledge>>,
    tools: Arc<Vec<&'static Compiled>>,
    advice: Arc<OnceLock<Option<String>>>,
    advice_override: Option<String>,
    /// Serving the project's own bundle (no connection).
    pub project_mode: bool,
}

impl Toolbox {
    /// The toolbox for `opts`; config discovery (project mode) starts at
    /// `start`.
    pub fn new(start: PathBuf, opts: &Options) -> Result<Toolbox, Error> {
        let fixed = match &opts.connection {
            Some(c) => Some(Arc::new(Knowledge::open(c)?)),
            None => None,
        };
        // A server lives long: reads learn of commits from the store's
        // announcements instead of asking for the head each time.
        if let Some((at, _)) = fixed.as_ref().and_then(|k| k.dsn().store()) {
            at.follow_commits();
        }
        let live_start = match fixed.as_ref().map(|k| k.dsn()) {
            Some(okfit_store::dsn::Dsn::Folder { path }) => path.clone(),
            _ => start,
        };
        let names = select_tools(opts)?;
        Toolbox::build(fixed, names, live_start, opts)
    }

    /// The knowledge tools of `opts` (its connection is ignored) over a
    /// store tenant already open: `writer` for commits, `reader` for the
    /// read tools. A daemon serving MCP builds one per request.
    pub fn over(
        writer: Arc<Knowledge>,
        reader: Arc<Knowledge>,
        opts: &Options,
    ) -> Result<Toolbox, Error> {
        let names = select(opts, true)?;
        let mut t = Toolbox::build(Some(writer), names, PathBuf::new(), opts)?;
        t.reads = Some(reader);
        t.project_mode = false;
        Ok(t)
    }

    fn build(
        fixed: Option<Arc<Knowledge>>,
        names: Vec<&'static str>,
        live_start: PathBuf,
        opts: &Options,
    ) -> Result<Toolbox, Error> {
        let all = compiled()?;
        let mut tools = vec![];
        for name in names {
            let Some(c) = all.iter().find(|c| c.def.name == name) else {
                continue;
            };
            if c.def.group == Group::Database
                && !fixed.as_ref().is_some_and(|k| k.dsn().has_revisions())
            {
                return Err(Error::Usage(format!(
                    "tool {name} needs a store connection (okf:///abs/data?tenant=t); a folder has no revisions"
                )));
            }
            if c.def.group == Group::Bundle
                && fixed
                    .as_ref()
                    .is_some_and(|k| !matches!(k.dsn(), okfit_store::dsn::Dsn::Folder { .. }))
            {
                return Err(Error::Usage(format!(
                    "tool {name} reads a project's bundle folder; use it without a connection or with an okf:///folder connection"
                )));
            }
            tools.push(c);
        }
        // A folder connection's bundle tools read through the connection
        // when the project's bundle is that folder.
        let live = match &fixed {
            Some(k) if matches!(k.dsn(), okfit_store::dsn::Dsn::Folder { .. }) => {
                Live::new(live_start).sharing(k.clone())
            }
            _ => Live::new(live_start),
        };
        Ok(Toolbox {
            live: Arc::new(live),
            project_mode: fixed.is_none(),
            fixed,
            reads: None,
            tools: Arc::new(tools),
            advice: Arc::new(OnceLock::new()),
            advice_override: opts.advice.clone(),
        })
    }

    /// The project's live bundle.
    pub fn live(&self) -> &Live {
        &self.live
    }

    /// The knowledge behind the knowledge tools and `okf://manifest`: the
    /// connection's, or in project mode the live bundle's folder.
    pub fn knowledge(&self) -> Result<Arc<Knowledge>, Error> {
        match &self.fixed {
            Some(k) => Ok(k.clone()),
            None => self.live.knowledge(),
        }
    }

    /// The knowledge a tool of `access` runs on.
    fn knowledge_for(&self, access: Access) -> Result<Arc<Knowledge>, String> {
        match (&self.reads, access) {
            (Some(r), Access::Read) => Ok(r.clone()),
            _ => self.knowledge().map_err(|e| e.to_string()),
        }
    }

    /// True when the server offers the tool `name`.
    pub fn offers(&self, name: &str) -> bool {
        self.tools.iter().any(|c| c.def.name == name)
    }

    /// The advice sentence, computed once per server from the manifest.
    pub fn advice(&self) -> Option<String> {
        if let Some(a) = &self.advice_override {
            return Some(a.clone());
        }
        self.advice
            .get_or_init(|| {
                let kb = self.knowledge_for(Access::Read).ok()?;
                let m = kb.manifest(None).ok()?;
                Some(okfit_core::kb::model::advice(&m))
            })
            .clone()
    }

    /// The manifest's description, with the advice for this knowledge.
    pub fn manifest_description(&self) -> String {
        knowledge::manifest_description(self.advice().as_deref())
    }

    /// The selected tools, as a protocol lists them.
    pub fn tool_list(&self) -> Vec<ToolInfo> {
        self.tools
            .iter()
            .map(|c| {
                let description = if c.def.name == "manifest" {
                    self.manifest_description()
                } else {
                    c.def.description.to_string()
                };
                let writes = c.def.access != Access::Read;
                ToolInfo {
                    name: c.def.name,
                    title: c.def.title,
                    description,
                    schema: match &c.schema {
                        Value::Object(m) => m.clone(),
                        _ => serde_json::Map::new(),
                    },
                    read_only: !writes,
                    destructive: c.def.access == Access::Destructive,
                    idempotent: !writes,
                }
            })
            .collect()
    }

    /// Runs a tool call to completion: its arguments are checked against
    /// the tool's schema first.
    pub fn call(&self, name: &str, args: Option<serde_json::Map<String, Value>>) -> Outcome {
        let Some(c) = self.tools.iter().find(|c| c.def.name == name) else {
            return Outcome::Invalid(format!("tool not found: {}", truncate(name)));
        };
        let args = Value::Object(args.unwrap_or_default());
        if let Err(m) = check_args(c.def.name, &c.schema, &c.validator, &args) {
            return Outcome::Invalid(m);
        }
        match c.def.run {
            Run::Knowledge(run) => match self.knowledge_for(c.def.access) {
                Ok(kb) => match run(&kb, &args) {
                    Ok(text) => Outcome::Text(text),
                    Err(e) => Outcome::Refused(e.to_string()),
                },
                Err(m) => Outcome::Refused(m),
            },
            Run::Bundle(run) => match run(&self.live, &args) {
                Ok(v) => Outcome::Structured(v),
                Err(r) => Outcome::Refused(r.text()),
            },
        }
    }

    /// True when a call of `name` reads an embedded store tenant whose
    /// read model is loaded already: it is answered from memory and a
    /// local file in well under a millisecond, too little to be worth
    /// handing to another thread. (A PostgreSQL tenant's reads wait on
    /// the network, and on the runtime that drives its connections.)
    pub fn answers_from_memory(&self, name: &str) -> bool {
        let Some(c) = self.tools.iter().find(|c| c.def.name == name) else {
            return false;
        };
        c.def.access == Access::Read
            && matches!(c.def.run, Run::Knowledge(_))
            && self.knowledge_for(Access::Read).is_ok_and(|k| {
                matches!(k.dsn(), okfit_store::dsn::Dsn::Store { .. })
                    && k.warm_documents().is_some()
            })
    }

    /// True when the tools answer from a daemon: a call is then one short
    /// round trip, not work for a blocking pool.
    pub fn remote(&self) -> bool {
        self.fixed.as_ref().is_some_and(|k| {
            matches!(
                k.dsn(),
                okfit_store::dsn::Dsn::Unix { .. } | okfit_store::dsn::Dsn::Http { .. }
            )
        })
    }

    fn manifest_resource(&self) -> ResourceInfo {
        ResourceInfo {
            uri: knowledge::MANIFEST_URI.into(),
            name: "manifest".into(),
            description: self.manifest_description(),
            mime_type: TSV,
        }
    }

    /// The manifest resource and, in project mode, the index and one
    /// resource per concept.
    pub fn resources(&self) -> Vec<ResourceInfo> {
        // The manifest's description needs the advice, which may open the
        // project: compute it before taking the bundle's lock.
        let manifest = self.manifest_resource();
        if !self.project_mode {
            return vec![manifest];
        }
        let mut out = vec![ResourceInfo {
            uri: "okf://index".into(),
            name: "OKF bundle index".into(),
            description:
                "The bundle's root index.md — the entry point for orienting on this OKF bundle."
                    .into(),
            mime_type: MARKDOWN,
        }];
        let _ = self.live.read(Bodies::None, |_, b| {
            for (_, c) in b.concepts() {
                out.push(ResourceInfo {
                    uri: format!("okf://concept/{}", c.id),
                    name: c.id.clone(),
                    description: c.title.clone(),
                    mime_type: MARKDOWN,
                });
            }
        });
        out.push(manifest);
        out
    }

    /// Reads a resource: its text and MIME type.
    pub fn read(&self, uri: &str) -> Result<(String, &'static str), ReadError> {
        if uri == knowledge::MANIFEST_URI {
            let text = self
                .knowledge_for(Access::Read)
                .map_err(ReadError::Failed)?
                .manifest(None)
                .map_err(|e| ReadError::Failed(e.to_string()))?;
            return Ok((text.to_string(), TSV));
        }
        let missing = || ReadError::NotFound(format!("no resource {}", truncate(uri)));
        if !self.project_mode {
            return Err(missing());
        }
        let live = &self.live;
        let text_of = |path: PathBuf, what: &str| {
            std::fs::read(&path)
                .map(|b| String::from_utf8_lossy(&b).into_owned())
                .map_err(|_| ReadError::Failed(format!("no readable {what} at {}", path.display())))
        };
        let text = if uri == "okf://index" {
            let p = live
                .project()
                .map_err(|e| ReadError::Failed(e.to_string()))?;
            text_of(p.bundle_root.join("index.md"), "index.md")?
        } else if let Some(id) = uri.strip_prefix("okf://concept/") {
            let path = live
                .read(Bodies::None, |p, b| {
                    b.find_concept(id).map(|(d, _)| p.bundle_root.join(&d.path))
                })
                .map_err(|e| ReadError::Failed(e.to_string()))?
                .map_err(|_| {
                    ReadError::NotFound(format!("no concept \"{}\" in this bundle", truncate(id)))
                })?;
            text_of(path, "concept file")?
        } else {
            return Err(missing());
        };
        Ok((text, MARKDOWN))
    }

    /// Refreshes the bundle; true when the set of concepts changed since
    /// the last announcement.
    pub fn concepts_changed(&self) -> bool {
        let _ = self.live.read(Bodies::None, |_, _| ());
        self.live.take_change()
    }

    /// Whether files changed since the last refresh, without waiting for
    /// the bundle's lock (false when a call holds it: that call refreshes).
    pub fn poll(&self) -> bool {
        self.live.poll()
    }
}

/// One tool as a protocol lists it.
#[derive(Clone, Debug)]
pub struct ToolInfo {
    /// The tool's name.
    pub name: &'static str,
    /// Its human title.
    pub title: &'static str,
    /// What it does, for the agent.
    pub description: String,
    /// The JSON Schema of its arguments.
    pub schema: serde_json::Map<String, Value>,
    /// It changes nothing.
    pub read_only: bool,
    /// It may remove data.
    pub destructive: bool,
    /// Calling it twice is calling it once.
    pub idempotent: bool,
}

/// A tool call's outcome.
#[derive(Clone, Debug)]
pub enum Outcome {
    /// A JSON result (the bundle tools).
    Structured(Value),
    /// A text result (the knowledge tools).
    Text(String),
    /// The tool ran and refused: the message says what to do next.
    Refused(String),
    /// The call itself is wrong (unknown tool, arguments off the schema):
    /// a protocol error (-32602 in MCP).
    Invalid(String),
}

/// One resource as a protocol lists it.
#[derive(Clone, Debug)]
pub struct ResourceInfo {
    /// Its URI.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// What it holds.
    pub description: String,
    /// Its MIME type.
    pub mime_type: &'static str,
}

/// Why a resource could not be read.
#[derive(Clone, Debug)]
pub enum ReadError {
    /// No such resource.
    NotFound(String),
    /// It exists but could not be read.
    Failed(String),
}

const TSV: &str = "text/tab-separated-values";
const MARKDOWN: &str = "text/markdown";
