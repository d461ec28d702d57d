//! The JSON of `okfit serve`'s `/v1` routes (reference langonrock §1.4):
//! one type per request and per answer. The daemon reads requests into
//! them and writes answers from them; the client in [`crate::remote`]
//! writes requests from them and reads answers into them, so the two
//! sides cannot drift apart. Field names and order are the wire's.

use crate::options::GetOptions;
use okfit_core::kb::slice::{Slice, SliceOptions};
use okfit_store::change::{Change, Pre, MAX_CHANGES};
use okfit_store::error::Error;
use schemars::JsonSchema;
use serde::de::{MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

pub use okfit_store::change::{Finding, RevisionPage};

/// The `code` of a conflict (a stale `expectedRevision`, a commit raced).
pub const CONFLICT: &str = "CONFLICT";

/// The `code` of a change whose precondition failed.
pub const PRECONDITION: &str = "PRECONDITION";

/// `GET manifest?bundle=`: the query of a manifest read.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct ManifestQuery {
    /// Only this bundle's rows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
}

/// `GET history?limit=&before=`: the query of a history page.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct HistoryQuery {
    /// Revisions per page (1 to 100; 20 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The cursor a previous page named in `next`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
}

/// `GET snapshot`: the read model's digest and size.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotAnswer {
    /// Snapshot digest.
    pub snapshot: String,
    /// Concept count.
    pub concepts: usize,
}

/// `POST search`: ranked matches, answered as the manifest's TSV.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct SearchRequest {
    /// What to look for (not blank).
    pub q: String,
    /// How many ranked matches before link expansion (8 when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub k: Option<u64>,
    /// Whether linked concepts are added (true when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expand: Option<bool>,
    /// Rank within this bundle only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
}

/// `POST get`: slices of concepts by id.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct GetRequest {
    /// Concept ids from the manifest.
    pub ids: Vec<String>,
    /// One named section instead of the whole body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub section: Option<String>,
    /// First UTF-16 unit to return.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offset: Option<u64>,
    /// Most UTF-16 units to return (the window, with `find`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<u64>,
    /// A literal phrase to locate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub find: Option<String>,
}

impl GetRequest {
    /// The request for `ids` read with `opts`.
    pub fn new(ids: &[String], opts: &GetOptions) -> GetRequest {
        GetRequest {
            ids: ids.to_vec(),
            section: opts.section.clone(),
            offset: opts.slice.offset,
            limit: opts.slice.limit,
            find: opts.slice.find.clone(),
        }
    }

    /// The read options it asks for.
    pub fn options(&self) -> GetOptions {
        GetOptions {
            section: self.section.clone(),
            slice: SliceOptions {
                offset: self.offset,
                limit: self.limit,
                find: self.find.clone(),
            },
        }
    }
}

/// One concept's slice in a `get` answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SliceAnswer {
    /// The text of the window.
    pub text: String,
    /// Start of the window, in UTF-16 units.
    pub start: usize,
    /// End of the window (exclusive), in UTF-16 units.
    pub end: usize,
    /// UTF-16 length of the whole addressed text.
    pub total: usize,
    /// With `find`: the first match offsets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<usize>>,
    /// With `find`: how many matches there are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_count: Option<usize>,
}

impl From<Slice> for SliceAnswer {
    /// Match information travels only when both halves of it are known.
    fn from(s: Slice) -> SliceAnswer {
        let (matches, match_count) = match (s.matches, s.match_count) {
            (Some(m), Some(c)) => (Some(m), Some(c)),
            _ => (None, None),
        };
        SliceAnswer {
            text: s.text,
            start: s.start,
            end: s.end,
            total: s.total,
            matches,
            match_count,
        }
    }
}

impl From<SliceAnswer> for Slice {
    fn from(s: SliceAnswer) -> Slice {
        Slice {
            text: s.text,
            start: s.start,
            end: s.end,
            total: s.total,
            matches: s.matches,
            match_count: s.match_count,
        }
    }
}

/// The `get` answer: an object from each id found to its slice, in the
/// order found; ids not found are absent.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GetAnswer(pub Vec<(String, SliceAnswer)>);

impl GetAnswer {
    /// The answer for these slices; an id found twice keeps its first
    /// place and its last slice, as a JSON object would.
    pub fn new(found: Vec<(String, Slice)>) -> GetAnswer {
        let mut out: Vec<(String, SliceAnswer)> = Vec::with_capacity(found.len());
        let mut at: std::collections::HashMap<String, usize> = std::collections::HashMap::new();
        for (id, s) in found {
            match at.get(&id) {
                Some(&i) => out[i].1 = s.into(),
                None => {
                    at.insert(id.clone(), out.len());
                    out.push((id, s.into()));
                }
            }
        }
        GetAnswer(out)
    }
}

impl Serialize for GetAnswer {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (id, slice) in &self.0 {
            map.serialize_entry(id, slice)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for GetAnswer {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<GetAnswer, D::Error> {
        struct Entries;
        impl<'de> Visitor<'de> for Entries {
            type Value = GetAnswer;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object from concept id to slice")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<GetAnswer, A::Error> {
                let mut out = vec![];
                while let Some(entry) = m.next_entry()? {
                    out.push(entry);
                }
                Ok(GetAnswer(out))
            }
        }
        d.deserialize_map(Entries)
    }
}

/// One document in the `GET source` list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceEntry {
    /// Its bundle.
    pub bundle: String,
    /// Its path inside the bundle.
    pub path: String,
    /// The sha256 of its bytes.
    pub hash: String,
}

/// What a commit answers (`transact`, `restore`, a bundle's removal, and
/// `sync`, which names the head as the last commit left it).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevisionAnswer {
    /// The head revision (none before the first commit).
    pub revision: Option<String>,
    /// Snapshot digest.
    pub snapshot: String,
    /// Concept count.
    pub concepts: usize,
    /// Bundle names.
    pub bundles: Vec<String>,
    /// Validator findings for the documents written; `path` is
    /// `bundle/path`.
    #[serde(default)]
    pub diagnostics: Vec<Finding>,
}

/// What `PUT` or `DELETE source/{bundle}/{path}` answers: the commit, and
/// the document's new hash (`null` once deleted).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceCommitAnswer {
    /// The commit.
    #[serde(flatten)]
    pub commit: RevisionAnswer,
    /// The document's hash after the commit.
    pub hash: Option<String>,
}

/// `POST sync`: asks for the head; the body carries nothing.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SyncRequest {}

/// `POST restore`: makes an earlier revision's documents current.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RestoreRequest {
    /// The revision to restore.
    pub revision: String,
    /// The head the restore was decided against.
    pub expected_revision: String,
    /// Whether the body named a tenant: it may not, as a restore is
    /// scoped to the connected tenant. Never sent.
    #[serde(
        default,
        rename = "tenant",
        skip_serializing,
        deserialize_with = "present"
    )]
    pub names_tenant: bool,
}

/// True whenever the field is there, whatever its value (`null` too).
fn present<'de, D: Deserializer<'de>>(d: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(d).map(|_| true)
}

/// `POST diagnostics`: the validator's findings for a document as it would
/// be stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct DiagnosticsRequest {
    /// Its bundle.
    pub bundle: String,
    /// Its path inside the bundle.
    pub path: String,
    /// Its text.
    pub content: String,
}

/// The `diagnostics` answer.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct DiagnosticsAnswer {
    /// The findings, most severe first.
    pub findings: Vec<Finding>,
}

/// The JSON body of a refused commit: a conflict (`{code, message}`) or a
/// failed precondition, which also names the change and the current hash.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// [`CONFLICT`] or [`PRECONDITION`].
    #[serde(default)]
    pub code: String,
    /// What went wrong, for a person.
    pub message: String,
    /// With a failed precondition: the change it belongs to.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub change: Option<FailedChange>,
}

/// The change whose precondition failed, in an [`ErrorBody`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailedChange {
    /// Its place in the request's changes.
    pub index: usize,
    /// Its bundle.
    pub bundle: String,
    /// Its path.
    pub path: String,
    /// The document's current hash (`null` when it does not exist).
    pub current: Option<String>,
}

/// A sha256 digest in lowercase hex.
const DIGEST: &str = "^[a-f0-9]{64}$";

/// A transaction: the `POST transact` body, the `transact` tool's
/// arguments and the CLI's `okfit transact` file, one type for all three.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Batch {
    /// The changes, committed together or not at all.
    #[schemars(length(min = 1, max = MAX_CHANGES), description = "")]
    pub changes: Vec<BatchChange>,
    /// The revision the batch was prepared against, when it must still
    /// be the head.
    #[schemars(regex(pattern = DIGEST), description = "")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expected_revision: Option<String>,
}

/// What one change of a [`Batch`] does.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(description = "")]
pub enum Operation {
    /// Create or replace the document.
    Write,
    /// Remove the document.
    Delete,
}

/// One change of a [`Batch`].
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(description = "")]
#[schemars(extend("allOf" = [
    {"if": {"properties": {"operation": {"const": "write"}}}, "then": {"required": ["content"]}},
    {"if": {"properties": {"operation": {"const": "delete"}}}, "then": {"required": ["replaces"], "not": {"required": ["content"]}}}
]))]
pub struct BatchChange {
    /// Write or delete.
    #[schemars(description = "")]
    pub operation: Operation,
    /// The bundle.
    #[schemars(length(min = 1), description = "")]
    pub bundle: String,
    /// The path inside the bundle.
    #[schemars(length(min = 1), description = "")]
    pub path: String,
    /// The new text (writes only).
    #[schemars(description = "")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// The hash of the version replaced or removed.
    #[schemars(regex(pattern = DIGEST), description = "")]
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
}

impl Batch {
    /// A batch sent to `okfit transact` or the daemon's `/transact`,
    /// checked with the reference's messages (langonrock §5.1). Top-level
    /// keys other than `changes` and `expectedRevision` are ignored, as
    /// there; each change is strict.
    pub fn from_json(v: &serde_json::Value) -> Result<Batch, Error> {
        check_shape(v)?;
        let mut known = serde_json::Map::new();
        for key in ["changes", "expectedRevision"] {
            if let Some(x) = v.get(key) {
                known.insert(key.into(), x.clone());
            }
        }
        Batch::deserialize(serde_json::Value::Object(known))
            .map_err(|e| Error::Refused(format!("invalid transaction: {e}")))
    }

    /// The changes as the store commits them.
    pub fn changes(&self) -> Vec<Change> {
        self.changes.iter().map(BatchChange::change).collect()
    }
}

impl BatchChange {
    /// This change as the store commits it.
    pub fn change(&self) -> Change {
        Change {
            bundle: self.bundle.clone(),
            path: self.path.clone(),
            content: (self.operation == Operation::Write)
                .then(|| self.content.clone().unwrap_or_default().into_bytes()),
            pre: match &self.replaces {
                Some(h) => Pre::Hash(h.clone()),
                None => Pre::Create,
            },
        }
    }
}

/// The reference's refusals for a transaction's shape, before its types.
fn check_shape(v: &serde_json::Value) -> Result<(), Error> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_precondition_body_names_the_change_and_a_conflict_does_not() {
        let pre = ErrorBody {
            code: PRECONDITION.into(),
            message: "m".into(),
            change: Some(FailedChange {
                index: 2,
                bundle: "b".into(),
                path: "p.md".into(),
                current: None,
            }),
        };
        let text = serde_json::to_string(&pre).unwrap();
        assert_eq!(
            text,
            r#"{"code":"PRECONDITION","message":"m","index":2,"bundle":"b","path":"p.md","current":null}"#
        );
        assert_eq!(serde_json::from_str::<ErrorBody>(&text).unwrap(), pre);
        let conflict = r#"{"code":"CONFLICT","message":"database changed"}"#;
        let back: ErrorBody = serde_json::from_str(conflict).unwrap();
        assert_eq!(back.change, None);
        assert_eq!(serde_json::to_string(&back).unwrap(), conflict);
    }

    #[test]
    fn a_get_answer_keeps_the_order_found_and_match_information_only_when_whole() {
        let slice = |text: &str, matches: Option<Vec<usize>>, count: Option<usize>| Slice {
            text: text.into(),
            start: 0,
            end: 1,
            total: 1,
            matches,
            match_count: count,
        };
        let a = GetAnswer::new(vec![
            ("z".into(), slice("1", Some(vec![0]), Some(1))),
            ("a".into(), slice("2", Some(vec![0]), None)),
            ("z".into(), slice("3", None, None)),
        ]);
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(
            text,
            r#"{"z":{"text":"3","start":0,"end":1,"total":1},"a":{"text":"2","start":0,"end":1,"total":1}}"#
        );
        assert_eq!(serde_json::from_str::<GetAnswer>(&text).unwrap(), a);
        let found = GetAnswer::new(vec![("x".into(), slice("t", Some(vec![4]), Some(9)))]);
        assert_eq!(
            serde_json::to_string(&found).unwrap(),
            r#"{"x":{"text":"t","start":0,"end":1,"total":1,"matches":[4],"matchCount":9}}"#
        );
    }

    #[test]
    fn a_restore_naming_a_tenant_is_told_apart_even_when_null() {
        let r: RestoreRequest =
            serde_json::from_str(r#"{"revision":"a","expectedRevision":"b","tenant":null}"#)
                .unwrap();
        assert!(r.names_tenant);
        let r: RestoreRequest =
            serde_json::from_str(r#"{"revision":"a","expectedRevision":"b"}"#).unwrap();
        assert!(!r.names_tenant);
        assert_eq!(
            serde_json::to_string(&r).unwrap(),
            r#"{"revision":"a","expectedRevision":"b"}"#
        );
    }

    #[test]
    fn a_source_commit_adds_the_hash_after_the_revision_fields() {
        let a = SourceCommitAnswer {
            commit: RevisionAnswer {
                revision: Some("r".into()),
                snapshot: "s".into(),
                concepts: 1,
                bundles: vec!["b".into()],
                diagnostics: vec![],
            },
            hash: None,
        };
        let text = serde_json::to_string(&a).unwrap();
        assert_eq!(
            text,
            r#"{"revision":"r","snapshot":"s","concepts":1,"bundles":["b"],"diagnostics":[],"hash":null}"#
        );
        assert_eq!(
            serde_json::from_str::<SourceCommitAnswer>(&text).unwrap(),
            a
        );
    }
}
