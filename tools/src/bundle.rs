//! The MCP tools: names, titles, descriptions, input schemas and handlers,
//! defined once here (the Node addon reuses them).

use crate::args::{IdArgs, ListArgs, MinSeverity, NoArgs, StaleArgs, ValidateArgs};
use crate::schema::derived;
use crate::{parse, Access, Group, Run, ToolDef};
use okfit_core::bundle::{Bundle, IdError, Report};
use okfit_core::diag::Diagnostic;
use okfit_core::query::{self, ListFilter};
use okfit_core::report;
use okfit_core::time::{self, Instant};
use okfit_knowledge::documents::Bodies;
use okfit_knowledge::live::Live;
use okfit_knowledge::project::{self, LoadOptions};
use okfit_store::discover::Project;
use serde_json::{json, Value};

/// The bundle tools, in `tools/list` order.
pub const BUNDLE_TOOLS: [ToolDef; 6] = [
    ToolDef {
        name: "describe_vocabulary",
        title: "Describe okfit vocabulary",
        description: "Returns this project's resolved okfit configuration: the project root, bundle root, active profile, configured agent actor, and every concept type (with its required keys and fields) and tag the config declares, each with its description. Call this first, before filtering or writing any concept, to learn which type and tag names actually exist in this project.",
        schema: derived::<NoArgs>,
        group: Group::Bundle,
        access: Access::Read,
        run: Run::Bundle(describe_run),
    },
    ToolDef {
        name: "list_concepts",
        title: "List OKF concepts",
        description: "Lists concept summaries (id, type, title, description, status, tags, path) from the OKF bundle, optionally filtered by an exact type, by tags that must all be present (AND, not OR), and by status. Pages with limit (default 200, max 1000) and offset, and reports the total matching count. Call it to find the ids to pass to get_concept instead of guessing them; type and tag names must be ones describe_vocabulary lists.",
        schema: derived::<ListArgs>,
        group: Group::Bundle,
        access: Access::Read,
        run: Run::Bundle(list_run),
    },
    ToolDef {
        name: "get_concept",
        title: "Get one OKF concept",
        description: "Returns one concept by id: its whole decoded frontmatter, the file's raw markdown text, its bundle-relative path, and every outgoing link with where the link was written and whether the target is another concept, an existing file, or missing. Accepts a path id (metrics/revenue) or a short id (revenue), with or without a leading slash or a trailing .md. Call it when you need a concept's content; call list_concepts first if you do not know the id.",
        schema: derived::<IdArgs>,
        group: Group::Bundle,
        access: Access::Read,
        run: Run::Bundle(get_run),
    },
    ToolDef {
        name: "concept_neighbors",
        title: "Concept graph neighbors",
        description: "Returns a concept's graph neighbours: everything it links to and everything that links to it, each with its node kind (concept, file or missing) and, for concepts, its summary. Call it to find related knowledge or to check what depends on a concept before changing it.",
        schema: derived::<IdArgs>,
        group: Group::Bundle,
        access: Access::Read,
        run: Run::Bundle(neighbors_run),
    },
    ToolDef {
        name: "stale_report",
        title: "Stale concepts",
        description: "Lists the concepts whose stale_after instant has passed, as of now or of an explicit instant (ISO 8601 with an offset), with their summaries, whole days past, and the total. Call it before relying on time-sensitive knowledge, and say so when you use a stale concept.",
        schema: derived::<StaleArgs>,
        group: Group::Bundle,
        access: Access::Read,
        run: Run::Bundle(stale_run),
    },
    ToolDef {
        name: "validate_bundle",
        title: "Validate the bundle",
        description: "Runs the checks of `okfit validate --format json` and returns its report: the summary counts, the exit code the CLI would use, and the diagnostics (file, code, severity, message, range), 200 unless limit says otherwise; \"page\" says how many were left out. Pass documents to check unsaved text without writing it. Call it with the file you just wrote or edited, before moving on.",
        schema: derived::<ValidateArgs>,
        group: Group::Bundle,
        access: Access::Read,
        run: Run::Bundle(validate_run),
    },
];

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

fn id_arg(args: IdArgs) -> Result<String, Refusal> {
    if query::normalize_id(&args.id).is_empty() {
        return Err(Refusal::new(
            "id must not be empty",
            "Pass a bundle-relative concept id such as decisions/cli-exit-codes.",
            Some("list_concepts"),
        ));
    }
    Ok(args.id)
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

fn now_arg(now: Option<&str>) -> Result<Instant, Refusal> {
    match now {
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

fn describe_run(live: &Live, args: &Value) -> Result<Value, Refusal> {
    let NoArgs {} = parse(args)?;
    Ok(describe(&live.project()?))
}

fn get_run(live: &Live, args: &Value) -> Result<Value, Refusal> {
    let id = id_arg(parse(args)?)?;
    live.read(Bodies::Of(&id), |p, b| get(p, b, &id))?
}

fn neighbors_run(live: &Live, args: &Value) -> Result<Value, Refusal> {
    let id = id_arg(parse(args)?)?;
    live.read(Bodies::All, |_, b| {
        let (_, c) = find(b, &id)?;
        let (outgoing, incoming) = query::neighbors(b, &c.id).unwrap_or_default();
        Ok(json!({"outgoing": outgoing, "incoming": incoming}))
    })?
}

fn stale_run(live: &Live, args: &Value) -> Result<Value, Refusal> {
    let StaleArgs { now, limit, offset } = parse(args)?;
    let now = now_arg(now.as_deref())?;
    live.read(Bodies::None, |_, b| {
        let items = query::stale(b, now);
        let total = items.len();
        let page: Vec<_> = items
            .into_iter()
            .skip(offset as usize)
            .take(limit as usize)
            .collect();
        json!({"as_of": time::format_millis(now), "items": page, "total": total})
    })
    .map_err(Refusal::from)
}

/// Diagnostics `validate_bundle` returns when no limit is given.
pub const VALIDATE_PAGE: usize = 200;

fn validate_run(live: &Live, args: &Value) -> Result<Value, Refusal> {
    let a: ValidateArgs = parse(args)?;
    let offset = a.offset.unwrap_or(0) as usize;
    let limit = a.limit.map_or(VALIDATE_PAGE, |l| l as usize);
    let file = a
        .file
        .as_deref()
        .map(|f| f.trim_start_matches("./").trim_start_matches('/'));
    let (p, report, file) = match (file, &a.documents) {
        (Some(rel), None) => {
            // One file on disk: only what its findings depend on is read.
            let now = now_arg(a.now.as_deref())?;
            let p = live.project()?;
            let report = project::validate_file(&p, rel, now, false)?;
            (p, report, None)
        }
        _ => {
            let (p, report) = validate_report(live, args)?;
            (p, report, file)
        }
    };
    let (report, page) = page_diagnostics(report, file, a.severity, offset, limit);
    let mut envelope = report::to_value(&report, &project::meta(&p, "@okfit/mcp"));
    if let Some(page) = page {
        envelope["page"] = page;
    }
    Ok(envelope)
}

/// Narrows the report's diagnostics to `file` and `min` severity, then to
/// one page of `limit` from `offset` (in the CLI's order). The summary
/// still counts the whole run; when anything is left out, the `page`
/// field says how much and where to continue. With nothing left out the
/// envelope is the CLI's, unchanged.
fn page_diagnostics(
    report: Report,
    file: Option<&str>,
    min: Option<MinSeverity>,
    offset: usize,
    limit: usize,
) -> (Report, Option<Value>) {
    let total = report.diagnostics.len();
    let matching: Vec<Diagnostic> = report
        .diagnostics
        .into_iter()
        .filter(|d| file.is_none_or(|f| d.file == f))
        .filter(|d| min.is_none_or(|m| m.keeps(d.severity.as_str())))
        .collect();
    let count = matching.len();
    let page: Vec<Diagnostic> = matching.into_iter().skip(offset).take(limit).collect();
    let returned = page.len();
    let info = (returned < total).then(|| {
        let next = (offset + returned < count).then_some(offset + returned);
        let mut note =
            format!("{returned} of {count} matching diagnostics returned ({total} in all).");
        if let Some(n) = next {
            note.push_str(&format!(
                " Call validate_bundle again with offset: {n} for more, or narrow with file or severity."
            ));
        }
        json!({
            "offset": offset,
            "limit": limit,
            "returned": returned,
            "matching": count,
            "total": total,
            "next_offset": next,
            "note": note,
        })
    });
    let trimmed = Report {
        diagnostics: page,
        summary: report.summary,
    };
    (trimmed, info)
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

fn list_run(live: &Live, args: &Value) -> Result<Value, Refusal> {
    let ListArgs {
        ty,
        tags,
        status,
        limit,
        offset,
    } = parse(args)?;
    let tags = tags.unwrap_or_default();
    let status = status.map(|s| s.name().to_string());
    let (limit, offset) = (limit as usize, offset as usize);
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
    live.read(Bodies::None, |p, b| {
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
    })?
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
pub fn validate(live: &Live, args: &Value, producer: &str) -> Result<Value, Refusal> {
    let (p, report) = validate_report(live, args)?;
    Ok(report::to_value(&report, &project::meta(&p, producer)))
}

/// The report of [`validate`], with the project it was made on.
fn validate_report(live: &Live, args: &Value) -> Result<(Project, Report), Refusal> {
    let ValidateArgs { now, documents, .. } = parse(args)?;
    let now = now_arg(now.as_deref())?;
    let documents: Vec<(String, String)> = documents
        .unwrap_or_default()
        .into_iter()
        .map(|d| (d.path, d.text))
        .collect();
    if documents.is_empty() {
        // Files on disk only: the warm run re-checks what changed.
        return Ok(live.validate(now, false)?);
    }
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
    Ok((p, report))
}
