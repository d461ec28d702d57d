//! The tools' argument types. Each tool's JSON Schema is derived from its
//! type ([`crate::schema::derived`]), limits included, and its handler
//! reads the typed value: nothing is read from untyped JSON.

use okfit_core::kb::search::MAX_K;
use okfit_store::change::MAX_GET_IDS;
use schemars::JsonSchema;
use serde::Deserialize;

/// A tool without arguments.
#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct NoArgs {}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ManifestArgs {
    #[schemars(
        description = "Optional bundle name, from the bundle column, to read only that bundle."
    )]
    #[serde(default)]
    pub bundle: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct SearchArgs {
    #[schemars(length(min = 1), description = "What to look for, in words.")]
    pub query: String,
    #[schemars(
        range(min = 1, max = MAX_K),
        description = "How many ranked matches to return before link expansion (default 8)."
    )]
    #[serde(default)]
    pub k: Option<u64>,
    #[schemars(description = "Optional bundle name to rank within.")]
    #[serde(default)]
    pub bundle: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct GetArgs {
    #[schemars(
        length(min = 1, max = MAX_GET_IDS),
        description = "Concept ids taken from the manifest."
    )]
    pub ids: Vec<String>,
    #[schemars(description = "Optional section name to return instead of the whole concept.")]
    #[serde(default)]
    pub section: Option<String>,
    #[schemars(
        range(min = 0),
        description = "Character offset to start from, for continuing a partial slice."
    )]
    #[serde(default)]
    pub offset: Option<u64>,
    #[schemars(
        range(min = 1),
        description = "Maximum characters per concept, default 15000. With find, sizes the window instead."
    )]
    #[serde(default)]
    pub limit: Option<u64>,
    #[schemars(
        length(min = 1),
        description = "Literal case-insensitive phrase to locate."
    )]
    #[serde(default)]
    pub find: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct WriteArgs {
    #[schemars(
        length(min = 1),
        description = "Bundle to write into, from the bundle column. A new name creates it."
    )]
    pub bundle: String,
    #[schemars(
        length(min = 1),
        description = "Path within the bundle, ending in .md, for example \"tables/orders.md\"."
    )]
    pub path: String,
    #[schemars(description = "The concept's entire Markdown, frontmatter included.")]
    pub content: String,
    #[schemars(
        description = "Hash of the version being replaced. Omit to create; a refusal names the hash to use."
    )]
    #[serde(default)]
    pub replaces: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct DeleteArgs {
    #[schemars(length(min = 1), description = "Bundle the concept sits in.")]
    pub bundle: String,
    #[schemars(
        length(min = 1),
        description = "Path within the bundle, for example \"tables/orders.md\"."
    )]
    pub path: String,
    #[schemars(
        description = "Hash of the version being removed. A refusal names the hash to use."
    )]
    #[serde(default)]
    pub replaces: Option<String>,
}

/// A sha256 digest in lowercase hex.
const DIGEST: &str = "^[a-f0-9]{64}$";

/// The transaction types live with the daemon's other wire types: the
/// `transact` tool, `okfit transact` and `POST /v1/transact` share them.
pub use okfit_knowledge::wire::{Batch, BatchChange, Operation};

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct HistoryArgs {
    #[schemars(length(max = 512))]
    #[serde(default)]
    pub before: Option<String>,
    #[schemars(range(min = 1, max = 100))]
    #[serde(default)]
    pub limit: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub(crate) struct RestoreArgs {
    #[schemars(regex(pattern = DIGEST))]
    pub revision: String,
    #[schemars(regex(pattern = DIGEST))]
    pub expected_revision: String,
}

/// A concept's status, as `list_concepts` filters it.
#[derive(Debug, Deserialize, JsonSchema)]
#[schemars(description = "")]
#[serde(rename_all = "lowercase")]
pub(crate) enum Status {
    Draft,
    Stable,
    Deprecated,
}

impl Status {
    pub fn name(&self) -> &'static str {
        match self {
            Status::Draft => "draft",
            Status::Stable => "stable",
            Status::Deprecated => "deprecated",
        }
    }
}

fn list_limit() -> u64 {
    200
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListArgs {
    #[schemars(description = "Exact type name, as describe_vocabulary lists it.")]
    #[serde(default, rename = "type")]
    pub ty: Option<String>,
    #[schemars(description = "Tags that must all be present.")]
    #[serde(default)]
    pub tags: Option<Vec<String>>,
    #[schemars(description = "Status (absent counts as stable).")]
    #[serde(default)]
    pub status: Option<Status>,
    #[schemars(range(min = 1, max = 1000))]
    #[serde(default = "list_limit")]
    pub limit: u64,
    #[schemars(range(min = 0))]
    #[serde(default)]
    pub offset: u64,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct IdArgs {
    #[schemars(
        description = "Concept id: path id (metrics/revenue) or short id (revenue), with or without a leading / or trailing .md."
    )]
    pub id: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct StaleArgs {
    #[schemars(
        description = "ISO 8601 instant with an explicit offset, e.g. 2026-09-06T00:00:00Z; default: the current time."
    )]
    #[serde(default)]
    pub now: Option<String>,
    #[schemars(range(min = 1, max = 1000))]
    #[serde(default = "list_limit")]
    pub limit: u64,
    #[schemars(range(min = 0))]
    #[serde(default)]
    pub offset: u64,
}

/// The least severe finding `validate_bundle` returns.
#[derive(Clone, Copy, Debug, Deserialize, JsonSchema, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub(crate) enum MinSeverity {
    Info,
    Warning,
    Error,
}

impl MinSeverity {
    /// Whether a diagnostic of `severity` (as the envelope spells it) is kept.
    pub fn keeps(self, severity: &str) -> bool {
        let level = match severity {
            "error" => MinSeverity::Error,
            "warning" => MinSeverity::Warning,
            _ => MinSeverity::Info,
        };
        level >= self
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct UnsavedDocument {
    #[schemars(
        description = "Bundle-relative path ending in .md (a new file only under an existing directory)."
    )]
    pub path: String,
    #[schemars(description = "Its full text.")]
    pub text: String,
}

#[derive(Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(crate) struct ValidateArgs {
    #[schemars(
        description = "ISO 8601 instant with an explicit offset at which the stale lint runs; default: now."
    )]
    #[serde(default)]
    pub now: Option<String>,
    #[schemars(
        description = "Unsaved documents checked in place of the files on disk, never written."
    )]
    #[serde(default)]
    pub documents: Option<Vec<UnsavedDocument>>,
    #[schemars(
        description = "Only this bundle-relative file's diagnostics; the summary then counts that file."
    )]
    #[serde(default)]
    pub file: Option<String>,
    #[schemars(description = "Only diagnostics at least this severe.")]
    #[serde(default)]
    pub severity: Option<MinSeverity>,
    #[schemars(
        range(min = 1, max = 5000),
        description = "Default 200, in the CLI's order."
    )]
    #[serde(default)]
    pub limit: Option<u64>,
    #[schemars(range(min = 0), description = "Diagnostics skipped first.")]
    #[serde(default)]
    pub offset: Option<u64>,
}
