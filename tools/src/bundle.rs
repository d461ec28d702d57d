//! The MCP tools: names, titles, descriptions, input schemas and handlers,
//! defined once here (the Node addon reuses them).

use okfit_core::bundle::{Bundle, IdError};
use okfit_core::query::{self, ListFilter};
use okfit_core::report;
use okfit_core::time::{self, Instant};
use okfit_knowledge::live::Live;
use okfit_knowledge::project::{self, LoadOptions};
use okfit_store::discover::Project;
use serde_json::{json, Value};

/// A tool's static definition.
pub struct ToolDef {
    /// Name.
    pub name: &'static str,
    /// Display title.
    pub title: &'static str,
    /// What it does and when to call it.
    pub description: &'static str,
    /// JSON Schema of the arguments (closed objects).
    pub schema: fn() -> Value,
}

/// The bundle tools, in `tools/list` order.
pub const BUNDLE_TOOLS: [ToolDef; 6] = [
    ToolDef {
        name: "describe_vocabulary",
        title: "Describe okfit vocabulary",
        description: "Returns this project's resolved okfit configuration: the project root, bundle root, active profile, configured agent actor, and every concept type (with its required keys and fields) and tag the config declares, each with its description. Call this first, before filtering or writing any concept, to learn which type and tag names actually exist in this project.",
        schema: empty_schema,
    },
    ToolDef {
        name: "list_concepts",
        title: "List OKF concepts",
        description: "Lists concept summaries (id, type, title, description, status, tags, path) from the OKF bundle, optionally filtered by an exact type, by tags that must all be present (AND, not OR), and by status. Pages with limit (default 200, max 1000) and offset, and reports the total matching count. Call it to find the ids to pass to get_concept instead of guessing them; type and tag names must be ones describe_vocabulary lists.",
        schema: list_schema,
    },
    ToolDef {
        name: "get_concept",
        title: "Get one OKF concept",
        description: "Returns one concept by id: its whole decoded frontmatter, the file's raw markdown text, its bundle-relative path, and every outgoing link with where the link was written and whether the target is another concept, an existing file, or missing. Accepts a path id (metrics/revenue) or a short id (revenue), with or without a leading slash or a trailing .md. Call it when you need a concept's content; call list_concepts first if you do not know the id.",
        schema: id_schema,
    },
    ToolDef {
        name: "concept_neighbors",
        title: "Concept graph neighbors",
        description: "Returns a concept's graph neighbours: everything it links to and everything that links to it, each with its node kind (concept, file or missing) and, for concepts, its summary. Call it to find related knowledge or to check what depends on a concept before changing it.",
        schema: id_schema,
    },
    ToolDef {
        name: "stale_report",
        title: "Stale concepts",
        description: "Lists every concept whose stale_after instant has passed, with its summary and how many whole days past it is, as of now or of an explicit instant (ISO 8601 with an offset). Call it before relying on time-sensitive knowledge, and say so when you use a stale concept.",
        schema: now_schema,
    },
    ToolDef {
        name: "validate_bundle",
        title: "Validate the bundle",
        description: "Runs the same conformance and lint checks as `okfit validate --format json` and returns that report: every diagnostic's file, code, severity, message and range, the summary counts and the exit code the CLI would use. Pass documents: [{path, text}] to check unsaved text (bundle-relative .md paths, a new file only under an existing directory) without writing it. Call it after writing or editing any concept file, before moving on to the next one.",
        schema: validate_schema,
    },
];

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn list_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "type": {"type": "string", "description": "Exact type name, as describe_vocabulary lists it."},
            "tags": {"type": "array", "items": {"type": "string"}, "description": "Tags that must all be present."},
            "status": {"type": "string", "enum": ["draft", "stable", "deprecated"], "description": "Status (absent counts as stable)."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 200},
            "offset": {"type": "integer", "minimum": 0, "default": 0}
        },
        "additionalProperties": false
    })
}

fn id_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "id": {"type": "string", "description": "Concept id: path id (metrics/revenue) or short id (revenue), with or without a leading / or trailing .md."}
        },
        "required": ["id"],
        "additionalProperties": false
    })
}

fn now_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "now": {"type": "string", "description": "ISO 8601 instant with an explicit offset, e.g. 2026-09-06T00:00:00Z; default: the current time."}
        },
        "additionalProperties": false
    })
}

fn validate_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "now": {"type": "string", "description": "ISO 8601 instant with an explicit offset; enables the stale lint at that instant. Default: the current time."},
            "documents": {
                "type": "array",
                "description": "Unsaved documents to validate in place of the files on disk (never written).",
                "items": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "Bundle-relative path ending in .md."},
                        "text": {"type": "string", "description": "The document's full text."}
                    },
                    "required": ["path", "text"],
                    "additionalProperties": false
                }
            }
        },
        "additionalProperties": false
    })
}

/// A refusal: message, hint and the tool to try next.
#[derive(Debug)]
pub struct Refusal {
    message: String,
    hint: String,
    suggest: Option<&'static str>,
}

impl Refusal {
    fn new(
        message: impl Into<String>,
        hint: impl Into<String>,
        suggest: Option<&'static str>,
    ) -> Self {
        Refusal {
            message: message.into(),
            hint: hint.into(),
            suggest,
        }
    }

    /// `<message> <hint>` plus ` Try <tool>.` when a tool is suggested.
    pub fn text(&self) -> String {
        match self.suggest {
            Some(t) => format!("{} {} Try {t}.", self.message, self.hint),
            None => format!("{} {}", self.message, self.hint),
        }
    }
}

impl From<okfit_store::error::Error> for Refusal {
    fn from(e: okfit_store::error::Error) -> Self {
        use okfit_store::error::Error as E;
        match &e {
            E::ConfigPathNotFound(_) | E::ConfigMalformed { .. } => Refusal::new(
                e.to_string(),
                "Check the project's .okfit.toml, okfit.toml, or .config/okfit.toml for a syntax or schema error; remove it to fall back to defaults.",
                Some("describe_vocabulary"),
            ),
            E::BundleNotDirectory(p) | E::BundleUnreadable(p, _) => Refusal::new(
                e.to_string(),
                format!(
                    "The bundle root \"{}\" does not exist or could not be read; check the config's [bundle].path, or run `okfit init`.",
                    p.display()
                ),
                None,
            ),
            E::Overlay(_) => Refusal::new(
                e.to_string(),
                "Pass bundle-relative .md paths under existing directories, each once.",
                None,
            ),
            _ => Refusal::new(e.to_string(), "", None),
        }
    }
}

fn truncate(s: &str) -> String {
    okfit_store::error::truncate(s)
}

fn id_arg(args: &Value) -> Result<String, Refusal> {
    let id = args.get("id").and_then(Value::as_str).unwrap_or("");
    if query::normalize_id(id).is_empty() {
        return Err(Refusal::new(
            "id must not be empty",
            "Pass a bundle-relative concept id such as decisions/cli-exit-codes.",
            Some("list_concepts"),
        ));
    }
    Ok(id.to_string())
}

fn find<'b>(
    b: &'b Bundle,
    id: &str,
) -> Result<(&'b okfit_core::doc::Document, &'b okfit_core::doc::Concept), Refusal> {
    b.find_concept(id).map_err(|e| match e {
        IdError::NotFound => Refusal::new(
            format!("no concept \"{}\" in this bundle", truncate(id)),
            "Call list_concepts to see the ids this bundle contains.",
            Some("list_concepts"),
        ),
        IdError::Ambiguous(c) => Refusal::new(
            format!("id \"{}\" is ambiguous: {}", truncate(id), c.join(", ")),
            "Pass one of these path ids.",
            Some("list_concepts"),
        ),
    })
}

fn now_arg(args: &Value) -> Result<Instant, Refusal> {
    match args.get("now").and_then(Value::as_str) {
        None => Ok(okfit_store::clock::wall_clock()),
        Some(s) => time::parse_now(s).map_err(|_| {
            Refusal::new(
                format!("now \"{}\": {}", truncate(s), time::OFFSET_MESSAGE),
                "now must be an ISO-8601 instant with an explicit offset, for example 2026-09-06T00:00:00Z.",
                None,
            )
        }),
    }
}

/// Runs one tool. `Ok` is the structured result; `Err` a refusal.
pub fn call(live: &mut Live, name: &str, args: &Value) -> Result<Value, Refusal> {
    match name {
        "describe_vocabulary" => Ok(describe(&live.project()?)),
        "list_concepts" => list(live, args),
        "get_concept" => {
            let id = id_arg(args)?;
            let path = {
                let (_, b) = live.fresh()?;
                find(b, &id)?.0.path.clone()
            };
            live.fill_bodies(Some(&path))?;
            let (p, b) = live.current()?;
            get(p, b, &id)
        }
        "concept_neighbors" => {
            let id = id_arg(args)?;
            live.fresh()?;
            live.fill_bodies(None)?;
            let (_, b) = live.current()?;
            let (_, c) = find(b, &id)?;
            let (outgoing, incoming) = query::neighbors(b, &c.id).unwrap_or_default();
            Ok(json!({"outgoing": outgoing, "incoming": incoming}))
        }
        "stale_report" => {
            let now = now_arg(args)?;
            let (_, b) = live.fresh()?;
            Ok(json!({"as_of": time::format_millis(now), "items": query::stale(b, now)}))
        }
        "validate_bundle" => validate(live, args, "@okfit/mcp"),
        other => Err(Refusal::new(
            format!("unknown tool \"{}\"", truncate(other)),
            "",
            None,
        )),
    }
}

/// `describe_vocabulary`'s shape (reference §1.4).
pub fn describe(p: &Project) -> Value {
    let cfg = &p.config;
    let types: Vec<Value> = cfg
        .types
        .iter()
        .map(|(name, t)| {
            let fields: Vec<Value> = t
                .fields
                .iter()
                .map(|(fname, f)| {
                    json!({
                        "name": fname,
                        "description": f.description,
                        "kind": f.kind,
                        "values": f.values.as_ref().map(|vs| vs.iter().map(|(n, d)| json!({"name": n, "description": d})).collect::<Vec<_>>()),
                    })
                })
                .collect();
            json!({
                "name": name,
                "description": t.description,
                "guidance": t.guidance,
                "required": t.required,
                "require_verified": t.require_verified,
                "fields": fields,
            })
        })
        .collect();
    let tags: Vec<Value> = cfg
        .tags
        .iter()
        .map(|(n, d)| json!({"name": n, "description": d}))
        .collect();
    json!({
        "project_root": p.project_root.display().to_string(),
        "bundle_root": p.bundle_root.display().to_string(),
        "config_path": p.config_path.as_ref().map(|c| c.display().to_string()),
        "profile": cfg.profile,
        "profile_requested": cfg.profile_requested,
        "agent": cfg.agent,
        "types": types,
        "tags": tags,
        "docs_presets": [],
    })
}

fn list(live: &mut Live, args: &Value) -> Result<Value, Refusal> {
    let ty = args.get("type").and_then(Value::as_str).map(str::to_string);
    let tags: Vec<String> = args
        .get("tags")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|t| t.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let status = args
        .get("status")
        .and_then(Value::as_str)
        .map(str::to_string);
    let limit = args.get("limit").and_then(Value::as_u64).unwrap_or(200) as usize;
    let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
    let (p, b) = live.fresh()?;
    let vocab = |kind: &str, requested: &str, declared: Vec<&String>| {
        let names: Vec<&str> = declared.iter().map(|s| s.as_str()).collect();
        Refusal::new(
            format!(
                "\"{}\" is not a {kind} declared by this project's okfit config. Valid {kind}s: {}.",
                truncate(requested),
                names.join(", ")
            ),
            format!("Use one of the listed {kind} names, or call describe_vocabulary."),
            Some("describe_vocabulary"),
        )
    };
    if let Some(t) = &ty {
        if !p.config.types.contains_key(t) {
            return Err(vocab("type", t, p.config.types.keys().collect()));
        }
    }
    for t in &tags {
        if !p.config.tags.contains_key(t) {
            return Err(vocab("tag", t, p.config.tags.keys().collect()));
        }
    }
    let filter = ListFilter {
        types: ty.into_iter().collect(),
        tags,
        statuses: status.into_iter().collect(),
        verified: None,
    };
    let (items, total) = query::list(b, &filter, offset, limit);
    Ok(json!({"items": items, "total": total}))
}

fn get(p: &Project, b: &Bundle, id: &str) -> Result<Value, Refusal> {
    let (d, c) = find(b, id)?;
    let abs = p.bundle_root.join(&d.path);
    let raw = std::fs::read(&abs)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|e| {
            Refusal::new(
                format!("concept \"{}\" could not be read ({e})", c.id),
                "",
                None,
            )
        })?;
    let frontmatter = okfit_core::doc::frontmatter_of(&raw).unwrap_or_default();
    Ok(query::concept_json(b, d, c, frontmatter, Some(raw)))
}

/// The `okfit validate --format json` envelope for the project `live`
/// serves, with `args`' unsaved documents overlaid and `producer` named
/// in it (the Node addon's `validate()` calls this directly).
pub fn validate(live: &mut Live, args: &Value, producer: &str) -> Result<Value, Refusal> {
    let now = now_arg(args)?;
    let documents: Vec<(String, String)> = args
        .get("documents")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|d| {
                    Some((
                        d.get("path")?.as_str()?.to_string(),
                        d.get("text")?.as_str()?.to_string(),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let p = live.project()?;
    let loaded = project::load(
        &p,
        &LoadOptions {
            now: Some(now),
            documents,
            git: true,
            ..LoadOptions::default()
        },
    )?;
    let report = project::validate(&p, &loaded, false);
    Ok(report::to_value(&report, &project::meta(&p, producer)))
}
