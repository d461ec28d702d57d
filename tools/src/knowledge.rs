//! The knowledge tools (`manifest`, `search`, `get`, `snapshot`) and the
//! `okf://manifest` resource: names, descriptions, schemas and output text,
//! defined once here (the Node addon reuses them).

use crate::bundle::ToolDef;
use okfit_core::kb::search;
use okfit_core::kb::slice::{SliceOptions, GET_LIMIT};
use okfit_knowledge::kb::{GetOptions, Knowledge};
use okfit_store::change::{Change, CommitError, Pre};
use okfit_store::error::Error;
use serde_json::{json, Value};

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
        schema: manifest_schema,
    },
    ToolDef {
        name: "search",
        title: "Find concepts by relevance",
        description: "Ranks concepts by relevance to a query and returns their manifest rows, not bodies. Use it instead of reading the whole manifest on a large tenant, or when you do not know which concept holds the answer. Same columns plus pos: the character offset in the concept's body where the query's words cluster densest, or - when only its manifest row matched; to read that passage call get with {offset: pos, limit: 2000}. Results also include concepts one link away from the top matches (a join partner, parent dataset or metric definition). Pass bundle to rank within one bundle.",
        schema: search_schema,
    },
    ToolDef {
        name: "get",
        title: "Fetch concepts by id",
        description: "Returns concepts' Markdown bodies by id. Pass every id you need in one call rather than calling repeatedly; the batch costs one round trip regardless of size. section returns one named section instead (names are lowercased headings with underscores, e.g. schema, joins). Each concept returns at most limit characters (default 15000); a partial slice is framed @@ id [start..end of total] and offset continues it. For \"where does the text say X\", pass find: a small window around the first case-insensitive occurrence plus the offset of every match. Ids not found are listed after @@ missing.",
        schema: get_schema,
    },
    ToolDef {
        name: "snapshot",
        title: "Check the current snapshot",
        description: "Returns the current snapshot digest and concept count. Call it to check whether the knowledge changed since you last read the manifest; an unchanged digest means your manifest is still current.",
        schema: empty_schema,
    },
];

/// The write side of the knowledge tools.
pub const WRITE_TOOLS: [ToolDef; 2] = [
    ToolDef {
        name: "write",
        title: "Create or replace a concept",
        description: "Creates or replaces one concept's Markdown source; manifest, search and get see it on the very next call. Send the whole document, frontmatter included (at least type), not a patch. A new bundle name creates the bundle. Omit replaces to create, which asserts the concept is new. Replacing needs replaces, the hash of the version being replaced; you are not expected to know it: write without it and the refusal names the hash to retry with. The answer carries the validator's findings for the file. Ids come from paths and a new file can rename another concept, so re-read the manifest after writing.",
        schema: write_schema,
    },
    ToolDef {
        name: "delete",
        title: "Delete a concept",
        description: "Removes one concept; it leaves manifest, search and get on the very next call. Needs replaces, the hash of the version being removed; without it the refusal names the hash to retry with. Removing a bundle's last concept removes the bundle.",
        schema: delete_schema,
    },
];

/// The opt-in database tools (`--database-tools`).
pub const DATABASE_TOOLS: [ToolDef; 3] = [
    ToolDef {
        name: "transact",
        title: "Commit document changes atomically",
        description: "Create, replace, or delete up to 1000 source documents in one durable revision. Each replacement or deletion needs its source hash. No changes commit if any precondition fails.",
        schema: transact_schema,
    },
    ToolDef {
        name: "history",
        title: "Read retained revisions",
        description: "Return a bounded page of committed revisions, newest first. Pass the next cursor as before to continue.",
        schema: history_schema,
    },
    ToolDef {
        name: "restore",
        title: "Restore a retained revision",
        description: "Create a new revision from a retained revision. expectedRevision must match the current head; restore never rewrites existing history.",
        schema: restore_schema,
    },
];

const DIGEST: &str = "^[a-f0-9]{64}$";

fn transact_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "changes": {
                "type": "array",
                "minItems": 1,
                "maxItems": 1000,
                "items": {
                    "type": "object",
                    "properties": {
                        "operation": {"type": "string", "enum": ["write", "delete"]},
                        "bundle": {"type": "string", "minLength": 1},
                        "path": {"type": "string", "minLength": 1},
                        "content": {"type": "string"},
                        "replaces": {"type": "string", "pattern": DIGEST}
                    },
                    "required": ["operation", "bundle", "path"],
                    "additionalProperties": false,
                    "allOf": [
                        {"if": {"properties": {"operation": {"const": "write"}}}, "then": {"required": ["content"]}},
                        {"if": {"properties": {"operation": {"const": "delete"}}}, "then": {"required": ["replaces"], "not": {"required": ["content"]}}}
                    ]
                }
            },
            "expectedRevision": {"type": "string", "pattern": DIGEST}
        },
        "required": ["changes"],
        "additionalProperties": false
    })
}

fn history_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "before": {"type": "string", "maxLength": 512},
            "limit": {"type": "integer", "minimum": 1, "maximum": 100}
        },
        "additionalProperties": false
    })
}

fn restore_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "revision": {"type": "string", "pattern": DIGEST},
            "expectedRevision": {"type": "string", "pattern": DIGEST}
        },
        "required": ["revision", "expectedRevision"],
        "additionalProperties": false
    })
}

fn write_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "bundle": {"type": "string", "minLength": 1, "description": "Bundle to write into, from the bundle column. A new name creates it."},
            "path": {"type": "string", "minLength": 1, "description": "Path within the bundle, ending in .md, for example \"tables/orders.md\"."},
            "content": {"type": "string", "description": "The concept's entire Markdown, frontmatter included."},
            "replaces": {"type": "string", "description": "Hash of the version being replaced. Omit to create; a refusal names the hash to use."}
        },
        "required": ["bundle", "path", "content"],
        "additionalProperties": false
    })
}

fn delete_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "bundle": {"type": "string", "minLength": 1, "description": "Bundle the concept sits in."},
            "path": {"type": "string", "minLength": 1, "description": "Path within the bundle, for example \"tables/orders.md\"."},
            "replaces": {"type": "string", "description": "Hash of the version being removed. A refusal names the hash to use."}
        },
        "required": ["bundle", "path"],
        "additionalProperties": false
    })
}

fn empty_schema() -> Value {
    json!({"type": "object", "properties": {}, "additionalProperties": false})
}

fn manifest_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "bundle": {"type": "string", "description": "Optional bundle name, from the bundle column, to read only that bundle."}
        },
        "additionalProperties": false
    })
}

fn search_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {"type": "string", "minLength": 1, "description": "What to look for, in words."},
            "k": {"type": "integer", "minimum": 1, "maximum": search::MAX_K, "description": "How many ranked matches to return before link expansion (default 8)."},
            "bundle": {"type": "string", "description": "Optional bundle name to rank within."}
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

fn get_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "ids": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": okfit_store::change::MAX_GET_IDS, "description": "Concept ids taken from the manifest."},
            "section": {"type": "string", "description": "Optional section name to return instead of the whole concept."},
            "offset": {"type": "integer", "minimum": 0, "description": "Character offset to start from, for continuing a partial slice."},
            "limit": {"type": "integer", "minimum": 1, "description": "Maximum characters per concept, default 15000. With find, sizes the window instead."},
            "find": {"type": "string", "minLength": 1, "description": "Literal case-insensitive phrase to locate."}
        },
        "required": ["ids"],
        "additionalProperties": false
    })
}

/// The manifest description with the advice sentence appended.
pub fn manifest_description(advice: Option<&str>) -> String {
    match advice {
        Some(a) if !a.is_empty() => format!("{MANIFEST_DESCRIPTION}\n\n{a}"),
        _ => MANIFEST_DESCRIPTION.to_string(),
    }
}

fn str_arg<'a>(args: &'a Value, key: &str) -> Option<&'a str> {
    args.get(key).and_then(Value::as_str)
}

fn u64_arg(args: &Value, key: &str) -> Option<u64> {
    args.get(key).and_then(Value::as_u64)
}

/// Runs a knowledge read tool; `Err` is the text of an error result.
pub fn call(kb: &Knowledge, name: &str, args: &Value) -> Result<String, String> {
    let r: Result<String, Error> = match name {
        "manifest" => kb.manifest(str_arg(args, "bundle")).map(|t| t.to_string()),
        "search" => {
            let q = str_arg(args, "query").unwrap_or("");
            let k = u64_arg(args, "k").unwrap_or(search::DEFAULT_K as u64) as usize;
            kb.search(q, k, str_arg(args, "bundle"))
        }
        "get" => {
            let ids: Vec<String> = args
                .get("ids")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_string)
                        .collect()
                })
                .unwrap_or_default();
            let find = str_arg(args, "find").map(str::to_string);
            let limit =
                u64_arg(args, "limit").or_else(|| find.is_none().then_some(GET_LIMIT as u64));
            let opts = GetOptions {
                section: str_arg(args, "section").map(str::to_string),
                slice: SliceOptions {
                    offset: u64_arg(args, "offset"),
                    limit,
                    find,
                },
            };
            kb.get(&ids, &opts)
        }
        "snapshot" => kb
            .snapshot()
            .map(|(s, n)| format!("snapshot {s}, {n} concepts")),
        "write" | "delete" => return write_or_delete(kb, name, args),
        "transact" | "history" | "restore" => return database(kb, name, args),
        other => Err(Error::Usage(format!("tool not found: {other}"))),
    };
    r.map_err(|e| e.to_string())
}

/// The refusal text of a failed write: the reason, then the hash a retry
/// needs when the document exists.
pub fn refusal(kb: &Knowledge, e: CommitError, bundle: &str, path: &str) -> String {
    match e {
        CommitError::Precondition { failure, .. } => match failure.current {
            Some(h) => format!("{}\nretry with replaces: \"{h}\"", failure.message),
            None => failure.message,
        },
        CommitError::Other(e @ (Error::Conflict(_) | Error::Refused(_))) => {
            let current = kb.read_source(bundle, path).ok().flatten().map(|(_, h)| h);
            match current {
                Some(h) => format!("{e}\nretry with replaces: \"{h}\""),
                None => e.to_string(),
            }
        }
        CommitError::Other(e) => e.to_string(),
    }
}

fn write_or_delete(kb: &Knowledge, name: &str, args: &Value) -> Result<String, String> {
    let bundle = str_arg(args, "bundle").unwrap_or("").to_string();
    let path = str_arg(args, "path").unwrap_or("").to_string();
    let pre = match str_arg(args, "replaces") {
        Some(h) => Pre::Hash(h.to_string()),
        None => Pre::Create,
    };
    let content = (name == "write").then(|| str_arg(args, "content").unwrap_or("").to_string());
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

/// The changes of a `transact` request (already schema-checked).
pub fn changes_of(args: &Value) -> Vec<Change> {
    args.get("changes")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|c| Change {
                    bundle: str_arg(c, "bundle").unwrap_or("").to_string(),
                    path: str_arg(c, "path").unwrap_or("").to_string(),
                    content: (str_arg(c, "operation") == Some("write"))
                        .then(|| str_arg(c, "content").unwrap_or("").as_bytes().to_vec()),
                    pre: match str_arg(c, "replaces") {
                        Some(h) => Pre::Hash(h.to_string()),
                        None => Pre::Create,
                    },
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A revision result as one compact JSON line, with the validator's
/// findings for every written document.
pub fn revision_json(
    kb: &Knowledge,
    c: &okfit_store::change::Committed,
    changes: &[Change],
) -> String {
    let mut diagnostics = vec![];
    for ch in changes {
        if let Some(bytes) = &ch.content {
            let text = String::from_utf8_lossy(bytes);
            if let Ok(findings) = kb.diagnostics_for(&ch.bundle, &ch.path, &text) {
                for f in findings {
                    diagnostics.push(json!({
                        "level": f.level,
                        "path": format!("{}/{}", ch.bundle, ch.path),
                        "message": f.message
                    }));
                }
            }
        }
    }
    json!({
        "revision": c.revision.as_ref().map(|r| r.revision.clone()),
        "snapshot": c.snapshot,
        "concepts": c.concepts,
        "bundles": c.bundles,
        "diagnostics": diagnostics,
    })
    .to_string()
}

fn database(kb: &Knowledge, name: &str, args: &Value) -> Result<String, String> {
    match name {
        "transact" => {
            let changes = changes_of(args);
            let expected = str_arg(args, "expectedRevision");
            match kb.transact(changes.clone(), expected) {
                Ok(c) => Ok(revision_json(kb, &c, &changes)),
                Err(CommitError::Precondition { index, failure }) => {
                    let c = &changes[index];
                    let mut m = format!("{}/{}: {}", c.bundle, c.path, failure.message);
                    if let Some(h) = failure.current {
                        m.push_str(&format!("\nretry with replaces: \"{h}\""));
                    }
                    Err(m)
                }
                Err(CommitError::Other(e)) => Err(e.to_string()),
            }
        }
        "history" => {
            let limit = u64_arg(args, "limit").unwrap_or(20) as usize;
            kb.history(str_arg(args, "before"), limit)
                .map(|p| serde_json::to_string(&p).unwrap_or_default())
                .map_err(|e| e.to_string())
        }
        _ => {
            let revision = str_arg(args, "revision").unwrap_or("");
            let expected = str_arg(args, "expectedRevision").unwrap_or("");
            match kb.restore(revision, expected) {
                Ok(c) => Ok(revision_json(kb, &c, &[])),
                Err(CommitError::Precondition { failure, .. }) => Err(failure.message),
                Err(CommitError::Other(e)) => Err(e.to_string()),
            }
        }
    }
}

/// [`call`] for callers without an MCP server in front (the Node
/// `Connection`): the arguments are checked against the tool's schema
/// first; `Err` is the -32602 message.
pub fn call_checked(
    kb: &Knowledge,
    name: &str,
    args: &Value,
) -> Result<Result<String, String>, String> {
    use std::sync::OnceLock;
    type Checks = Vec<(&'static str, Value, jsonschema::Validator)>;
    static CHECKS: OnceLock<Checks> = OnceLock::new();
    let checks = CHECKS.get_or_init(|| {
        READ_TOOLS
            .iter()
            .chain(WRITE_TOOLS.iter())
            .chain(DATABASE_TOOLS.iter())
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

/// Checks the shape of a JSON batch `{changes: [...], expectedRevision?}`
/// with the reference's messages (shared by the CLI and the daemon).
pub fn check_batch(v: &serde_json::Value) -> Result<(), Error> {
    if !v.is_object() || v.get("tenant").is_some() {
        return Err(Error::Refused(
            "transaction must be an object scoped to the connected tenant".into(),
        ));
    }
    let Some(items) = v.get("changes").and_then(|c| c.as_array()) else {
        return Err(Error::Refused(
            "transaction needs between 1 and 1000 changes".into(),
        ));
    };
    for c in items {
        let ok_strings = c.get("bundle").is_some_and(|b| b.is_string())
            && c.get("path").is_some_and(|p| p.is_string())
            && c.get("tenant").is_none();
        if !ok_strings {
            return Err(Error::Refused(
                "document change must specify a bundle and path within the connected tenant".into(),
            ));
        }
        match c.get("operation").and_then(|o| o.as_str()) {
            Some("write") => {
                if !c.get("content").is_some_and(|x| x.is_string()) {
                    return Err(Error::Refused("document content must be a string".into()));
                }
            }
            Some("delete") => {
                if !c.get("replaces").is_some_and(|x| x.is_string()) {
                    return Err(Error::Refused(
                        "a delete needs replaces: the hash of the version being removed".into(),
                    ));
                }
            }
            _ => return Err(Error::Refused("invalid document operation".into())),
        }
    }
    Ok(())
}
