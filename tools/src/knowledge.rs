//! The knowledge tools (`manifest`, `search`, `get`, `snapshot`) and the
//! `okf://manifest` resource: names, descriptions, schemas and output text,
//! defined once here (the Node addon reuses them).

use crate::args::{
    Batch, DeleteArgs, GetArgs, HistoryArgs, ManifestArgs, NoArgs, RestoreArgs, SearchArgs,
    WriteArgs,
};
use crate::schema::derived;
use crate::{parse, Access, Group, Run, ToolDef};
use okfit_core::kb::search;
use okfit_core::kb::slice::{SliceOptions, GET_LIMIT};
use okfit_knowledge::wire::{Finding, RevisionAnswer};
use okfit_knowledge::{GetOptions, Knowledge};
use okfit_store::change::{Change, CommitError, Pre};
use okfit_store::error::Error;
use serde_json::Value;

/// The manifest resource URI.
pub const MANIFEST_URI: &str = "okf://manifest";

/// The manifest tool's description before the advice sentence; the
/// resource shares it.
pub const MANIFEST_DESCRIPTION: &str = "The knowledge manifest: one TSV row per concept (id, bundle, kind, status, grain, one-line summary, outgoing links). Call this before anything else whenever you need to know what knowledge exists: it is the index. Pick ids from its rows and fetch them with get; never guess an id. A status other than - means the concept is not current (deprecated, draft, or stale: past its stale_after date); prefer current concepts and say so when you use one that is not. Pass bundle to read one bundle; on a large tenant narrow with bundle or use search.";

/// The read side of the knowledge tools, in `tools/list` order.
pub const READ_TOOLS: [ToolDef; 4] = [
    ToolDef {
        name: "manifest",
        title: "Read the knowledge manifest",
        description: MANIFEST_DESCRIPTION,
        schema: derived::<ManifestArgs>,
        group: Group::Knowledge,
        access: Access::Read,
        run: Run::Knowledge(manifest),
    },
    ToolDef {
        name: "search",
        title: "Find concepts by relevance",
        description: "Ranks concepts by relevance to a query and returns their manifest rows, not bodies. Use it instead of reading the whole manifest on a large tenant, or when you do not know which concept holds the answer. Same columns plus pos: the character offset in the concept's body where the query's words cluster densest, or - when only its manifest row matched; to read that passage call get with {offset: pos, limit: 2000}. Results also include concepts one link away from the top matches (a join partner, parent dataset or metric definition). Pass bundle to rank within one bundle.",
        schema: derived::<SearchArgs>,
        group: Group::Knowledge,
        access: Access::Read,
        run: Run::Knowledge(search),
    },
    ToolDef {
        name: "get",
        title: "Fetch concepts by id",
        description: "Returns concepts' Markdown bodies by id. Pass every id you need in one call rather than calling repeatedly; the batch costs one round trip regardless of size. section returns one named section instead (names are lowercased headings with underscores, e.g. schema, joins). Each concept returns at most limit characters (default 15000); a partial slice is framed @@ id [start..end of total] and offset continues it. For \"where does the text say X\", pass find: a small window around the first case-insensitive occurrence plus the offset of every match. Ids not found are listed after @@ missing.",
        schema: derived::<GetArgs>,
        group: Group::Knowledge,
        access: Access::Read,
        run: Run::Knowledge(get),
    },
    ToolDef {
        name: "snapshot",
        title: "Check the current snapshot",
        description: "Returns the current snapshot digest and concept count. Call it to check whether the knowledge changed since you last read the manifest; an unchanged digest means your manifest is still current.",
        schema: derived::<NoArgs>,
        group: Group::Knowledge,
        access: Access::Read,
        run: Run::Knowledge(snapshot),
    },
];

/// The write side of the knowledge tools.
pub const WRITE_TOOLS: [ToolDef; 2] = [
    ToolDef {
        name: "write",
        title: "Create or replace a concept",
        description: "Creates or replaces one concept's Markdown source; manifest, search and get see it on the very next call. Send the whole document, frontmatter included (at least type), not a patch. A new bundle name creates the bundle. Omit replaces to create, which asserts the concept is new. Replacing needs replaces, the hash of the version being replaced; you are not expected to know it: write without it and the refusal names the hash to retry with. The answer carries the validator's findings for the file. Ids come from paths and a new file can rename another concept, so re-read the manifest after writing.",
        schema: derived::<WriteArgs>,
        group: Group::Write,
        access: Access::Write,
        run: Run::Knowledge(write),
    },
    ToolDef {
        name: "delete",
        title: "Delete a concept",
        description: "Removes one concept; it leaves manifest, search and get on the very next call. Needs replaces, the hash of the version being removed; without it the refusal names the hash to retry with. Removing a bundle's last concept removes the bundle.",
        schema: derived::<DeleteArgs>,
        group: Group::Write,
        access: Access::Destructive,
        run: Run::Knowledge(delete),
    },
];

/// The opt-in database tools (`--database-tools`).
pub const DATABASE_TOOLS: [ToolDef; 3] = [
    ToolDef {
        name: "transact",
        title: "Commit document changes atomically",
        description: "Create, replace, or delete up to 1000 source documents in one durable revision. Each replacement or deletion needs its source hash. No changes commit if any precondition fails.",
        schema: derived::<Batch>,
        group: Group::Database,
        access: Access::Write,
        run: Run::Knowledge(transact),
    },
    ToolDef {
        name: "history",
        title: "Read retained revisions",
        description: "Return a bounded page of committed revisions, newest first. Pass the next cursor as before to continue.",
        schema: derived::<HistoryArgs>,
        group: Group::Database,
        access: Access::Read,
        run: Run::Knowledge(history),
    },
    ToolDef {
        name: "restore",
        title: "Restore a retained revision",
        description: "Create a new revision from a retained revision. expectedRevision must match the current head; restore never rewrites existing history.",
        schema: derived::<RestoreArgs>,
        group: Group::Database,
        access: Access::Write,
        run: Run::Knowledge(restore),
    },
];

/// The manifest description with the advice sentence appended.
pub fn manifest_description(advice: Option<&str>) -> String {
    match advice {
        Some(a) if !a.is_empty() => format!("{MANIFEST_DESCRIPTION}\n\n{a}"),
        _ => MANIFEST_DESCRIPTION.to_string(),
    }
}

/// Runs a knowledge tool by name, unchecked against its schema (the CLI,
/// whose arguments are typed already, and the checked callers below).
pub fn call(kb: &Knowledge, name: &str, args: &Value) -> Result<String, Error> {
    match crate::catalogue()
        .into_iter()
        .find(|d| d.name == name)
        .map(|d| d.run)
    {
        Some(Run::Knowledge(run)) => run(kb, args),
        _ => Err(Error::Usage(format!(
            "tool not found: {}",
            okfit_store::error::truncate(name)
        ))),
    }
}

fn manifest(kb: &Knowledge, args: &Value) -> Result<String, Error> {
    let a: ManifestArgs = parse(args)?;
    kb.manifest(a.bundle.as_deref()).map(|t| t.to_string())
}

fn search(kb: &Knowledge, args: &Value) -> Result<String, Error> {
    let a: SearchArgs = parse(args)?;
    let k = a.k.unwrap_or(search::DEFAULT_K as u64) as usize;
    kb.search(&a.query, k, a.bundle.as_deref())
}

fn get(kb: &Knowledge, args: &Value) -> Result<String, Error> {
    let a: GetArgs = parse(args)?;
    let limit = a
        .limit
        .or_else(|| a.find.is_none().then_some(GET_LIMIT as u64));
    let opts = GetOptions {
        section: a.section,
        slice: SliceOptions {
            offset: a.offset,
            limit,
            find: a.find,
        },
    };
    kb.get(&a.ids, &opts)
}

fn snapshot(kb: &Knowledge, args: &Value) -> Result<String, Error> {
    let NoArgs {} = parse(args)?;
    kb.snapshot()
        .map(|(s, n)| format!("snapshot {s}, {n} concepts"))
}

/// The refusal of a failed write: the reason, then the hash a retry
/// needs when the document exists. The error keeps its kind.
pub fn refusal(kb: &Knowledge, e: CommitError, bundle: &str, path: &str) -> Error {
    match e {
        CommitError::Precondition { failure, .. } => Error::Refused(match failure.current {
            Some(h) => format!("{}\nretry with replaces: \"{h}\"", failure.message),
            None => failure.message,
        }),
        CommitError::Other(e @ (Error::Conflict(_) | Error::Refused(_))) => {
            let current = kb.read_source(bundle, path).ok().flatten().map(|(_, h)| h);
            match current {
                Some(h) => {
                    let m = format!("{e}\nretry with replaces: \"{h}\"");
                    match e {
                        Error::Conflict(_) => Error::Conflict(m),
                        _ => Error::Refused(m),
                    }
                }
                None => e,
            }
        }
        CommitError::Other(e) => e,
    }
}

fn write(kb: &Knowledge, args: &Value) -> Result<String, Error> {
    let a: WriteArgs = parse(args)?;
    write_or_delete(kb, a.bundle, a.path, Some(a.content), a.replaces)
}

fn delete(kb: &Knowledge, args: &Value) -> Result<String, Error> {
    let a: DeleteArgs = parse(args)?;
    write_or_delete(kb, a.bundle, a.path, None, a.replaces)
}

fn write_or_delete(
    kb: &Knowledge,
    bundle: String,
    path: String,
    content: Option<String>,
    replaces: Option<String>,
) -> Result<String, Error> {
    let pre = match replaces {
        Some(h) => Pre::Hash(h),
        None => Pre::Create,
    };
    let change = Change {
        bundle: bundle.clone(),
        path: path.clone(),
        content: content.as_ref().map(|c| c.as_bytes().to_vec()),
        pre,
    };
    let c = kb
        .commit(vec![change], None)
        .map_err(|e| refusal(kb, e, &bundle, &path))?;
    let mut out = match &content {
        Some(text) => format!(
            "wrote {bundle}/{path} (hash {}), snapshot {}, {} concepts",
            okfit_store::change::sha256_hex(text.as_bytes()),
            c.snapshot,
            c.concepts
        ),
        None => format!(
            "deleted {bundle}/{path}, snapshot {}, {} concepts",
            c.snapshot, c.concepts
        ),
    };
    if let Some(text) = &content {
        if let Ok(findings) = kb.diagnostics_for(&bundle, &path, text) {
            for f in findings {
                out.push('\n');
                out.push_str(&f.to_string());
            }
        }
    }
    Ok(out)
}

/// A commit's answer, with the validator's findings for every written
/// document: what the daemon sends and the tools and CLI print.
pub fn revision_answer(
    kb: &Knowledge,
    c: &okfit_store::change::Committed,
    changes: &[Change],
) -> RevisionAnswer {
    let mut diagnostics = vec![];
    for ch in changes {
        if let Some(bytes) = &ch.content {
            let text = String::from_utf8_lossy(bytes);
            if let Ok(findings) = kb.diagnostics_for(&ch.bundle, &ch.path, &text) {
                for f in findings {
                    diagnostics.push(Finding {
                        level: f.level,
                        path: format!("{}/{}", ch.bundle, ch.path),
                        message: f.message,
                    });
                }
            }
        }
    }
    RevisionAnswer {
        revision: c.revision.as_ref().map(|r| r.revision.clone()),
        snapshot: c.snapshot.clone(),
        concepts: c.concepts,
        bundles: c.bundles.clone(),
        diagnostics,
    }
}

/// [`revision_answer`] as one compact JSON line.
pub fn revision_json(
    kb: &Knowledge,
    c: &okfit_store::change::Committed,
    changes: &[Change],
) -> String {
    serde_json::to_string(&revision_answer(kb, c, changes)).unwrap_or_default()
}

fn transact(kb: &Knowledge, args: &Value) -> Result<String, Error> {
    let batch = Batch::from_json(args)?;
    let changes = batch.changes();
    kb.transact(changes.clone(), batch.expected_revision.as_deref())
        .map(|c| revision_json(kb, &c, &changes))
        .map_err(|e| commit_error(e, &changes))
}

/// A failed commit as one error: a failed precondition names the document
/// it failed on and the hash a retry needs.
pub fn commit_error(e: CommitError, changes: &[Change]) -> Error {
    match e {
        CommitError::Precondition { index, failure } => {
            let mut m = match changes.get(index) {
                Some(c) => format!("{}/{}: {}", c.bundle, c.path, failure.message),
                None => failure.message,
            };
            if let Some(h) = failure.current {
                m.push_str(&format!("\nretry with replaces: \"{h}\""));
            }
            Error::Refused(m)
        }
        CommitError::Other(e) => e,
    }
}

fn history(kb: &Knowledge, args: &Value) -> Result<String, Error> {
    let a: HistoryArgs = parse(args)?;
    let limit = a.limit.unwrap_or(20) as usize;
    let page = kb.history(a.before.as_deref(), limit)?;
    serde_json::to_string(&page).map_err(|e| Error::Store(format!("history page: {e}")))
}

fn restore(kb: &Knowledge, args: &Value) -> Result<String, Error> {
    let a: RestoreArgs = parse(args)?;
    kb.restore(&a.revision, &a.expected_revision)
        .map(|c| revision_json(kb, &c, &[]))
        .map_err(|e| commit_error(e, &[]))
}

/// [`call`] for callers without an MCP server in front (the Node
/// `Connection`): the arguments are checked against the tool's schema
/// first; `Err` is the -32602 message.
pub fn call_checked(
    kb: &Knowledge,
    name: &str,
    args: &Value,
) -> Result<Result<String, Error>, String> {
    use std::sync::OnceLock;
    type Checks = Vec<(&'static str, Value, jsonschema::Validator)>;
    static CHECKS: OnceLock<Checks> = OnceLock::new();
    let checks = CHECKS.get_or_init(|| {
        crate::catalogue()
            .into_iter()
            .filter(|d| matches!(d.run, Run::Knowledge(_)))
            .filter_map(|d| {
                let schema = (d.schema)();
                let v = jsonschema::validator_for(&schema).ok()?;
                Some((d.name, schema, v))
            })
            .collect()
    });
    let Some((_, schema, validator)) = checks.iter().find(|(n, _, _)| *n == name) else {
        return Err(format!(
            "tool not found: {}",
            okfit_store::error::truncate(name)
        ));
    };
    super::check_args(name, schema, validator, args)?;
    Ok(call(kb, name, args))
}
