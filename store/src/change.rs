//! The domain of a write: changes with their preconditions, what a commit
//! returns, the findings a validator reports, and the limits every entry
//! point enforces. Shared by every backend, the daemon and its clients.

use crate::error::Error;
use crate::sqlite::RevisionInfo;
use okfit_core::doc::hex;
use sha2::{Digest, Sha256};

/// Largest document a write accepts.
pub const MAX_DOCUMENT_BYTES: usize = 16 * 1024 * 1024;

/// sha256 of bytes, lowercase hex.
pub fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// How a change asserts what it replaces.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pre {
    /// The document must not exist.
    Create,
    /// The document must exist with this hash.
    Hash(String),
    /// Whatever is there (put, import, `--force`).
    Any,
}

/// One document change.
#[derive(Clone, Debug)]
pub struct Change {
    /// Bundle.
    pub bundle: String,
    /// Path inside the bundle.
    pub path: String,
    /// New bytes; `None` deletes.
    pub content: Option<Vec<u8>>,
    /// The precondition.
    pub pre: Pre,
}

/// Why a change's precondition failed, with the hash a retry needs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Precondition {
    /// The refusal sentence.
    pub message: String,
    /// The current hash, when the document exists.
    pub current: Option<String>,
}

/// A commit's outcome.
#[derive(Clone, Debug)]
pub struct Committed {
    /// The revision (none for a folder connection).
    pub revision: Option<RevisionInfo>,
    /// Snapshot digest after the commit.
    pub snapshot: String,
    /// Concepts after the commit.
    pub concepts: usize,
    /// Bundles after the commit.
    pub bundles: Vec<String>,
    /// New hash of each written document (in change order; `None` for deletes).
    pub hashes: Vec<Option<String>>,
}

/// A commit failure.
#[derive(Debug)]
pub enum CommitError {
    /// A precondition failed (nothing was written).
    Precondition {
        /// Index of the failing change.
        index: usize,
        /// What failed.
        failure: Precondition,
    },
    /// Anything else.
    Other(Error),
}

impl From<Error> for CommitError {
    fn from(e: Error) -> Self {
        CommitError::Other(e)
    }
}

/// Checks one change against the document now stored.
pub fn check_precondition(c: &Change, current: Option<&str>) -> Result<(), Precondition> {
    const RETRY: &str = ": re-read the concept and retry with its new hash";
    let fail = |m: &str| Precondition {
        message: m.to_string(),
        current: current.map(str::to_string),
    };
    match (&c.pre, current, c.content.is_some()) {
        (Pre::Any, _, _) => Ok(()),
        (Pre::Create, None, true) => Ok(()),
        (Pre::Create, Some(_), true) => Err(fail(&format!("concept already exists{RETRY}"))),
        (Pre::Create, None, false) => Err(fail("concept does not exist")),
        (Pre::Create, Some(_), false) => {
            Err(fail("deleting needs the hash of the version being removed"))
        }
        (Pre::Hash(h), Some(cur), _) if h == cur => Ok(()),
        (Pre::Hash(_), Some(_), _) => {
            Err(fail(&format!("concept changed since it was read{RETRY}")))
        }
        (Pre::Hash(_), None, _) => Err(fail(&format!("concept does not exist{RETRY}"))),
    }
}

/// Largest total content of one transaction.
pub const MAX_TRANSACTION_BYTES: usize = 16 * 1024 * 1024;

/// One validator finding for a document, carried as data and rendered
/// only at the edge (`<level> <path>: <message>`, reference §4.4).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Finding {
    /// `error`, `warning` or `info`.
    pub level: String,
    /// The document's path inside its bundle.
    pub path: String,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.level, self.path, self.message)
    }
}

/// The largest request a client may send (an MCP message or a daemon
/// request body): a whole transaction plus its JSON framing.
pub const MAX_REQUEST_BYTES: usize = 17 * 1024 * 1024;
/// Most changes in one transaction.
pub const MAX_CHANGES: usize = 1000;

/// A page of history (reference langonrock §5.2).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RevisionPage {
    /// Newest first.
    pub revisions: Vec<RevisionInfo>,
    /// The cursor of the next page, when there is one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next: Option<String>,
}

/// Most ids one `get` takes.
pub const MAX_GET_IDS: usize = 1000;
