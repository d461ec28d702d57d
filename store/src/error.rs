//! The errors a front end reports: each is one line, with a stable tag and
//! the exit code the CLI maps it to.

use std::path::PathBuf;

/// Why a command could not run.
#[derive(Debug)]
pub enum Error {
    /// `--config` names a file that does not exist.
    ConfigPathNotFound(PathBuf),
    /// A config file could not be read or parsed.
    ConfigMalformed {
        /// The file.
        path: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// The bundle root is missing or not a directory.
    BundleNotDirectory(PathBuf),
    /// The bundle root exists but could not be read.
    BundleUnreadable(PathBuf, std::io::Error),
    /// A file in the bundle could not be read.
    FileUnreadable {
        /// Bundle-relative path.
        rel: String,
        /// Bundle root.
        root: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The bundle nests deeper than the walk allows.
    DepthExceeded {
        /// Bundle root.
        root: PathBuf,
        /// The directory where the limit was hit.
        at: String,
    },
    /// An unsaved document's path was refused.
    Overlay(okfit_core::overlay::OverlayError),
    /// A command-line argument is wrong.
    Usage(String),
    /// A concept id that is not in the bundle.
    ConceptNotFound(String),
    /// Any other I/O failure (writing output, spawning).
    Io(String),
    /// A knowledge request was refused (bad name, failed precondition,
    /// unknown bundle): the message says what to do.
    Refused(String),
    /// Another writer committed first; re-read and retry.
    Conflict(String),
    /// The store could not be read or written.
    Store(String),
    /// The tenant does not exist yet (its first write creates it).
    NoTenant(String),
    /// A write whose path passes through a symbolic link: refused, since
    /// okfit never writes through one.
    Symlink {
        /// The path being written, as the caller named it.
        path: String,
        /// The part of it that is a link.
        link: String,
    },
}

impl Error {
    /// A stable tag for JSON error envelopes.
    pub fn tag(&self) -> &'static str {
        match self {
            Error::ConfigPathNotFound(_) => "ConfigPathNotFound",
            Error::ConfigMalformed { .. } => "ConfigMalformed",
            Error::BundleNotDirectory(_) => "BundleNotFound",
            Error::BundleUnreadable(..) => "BundleUnreadable",
            Error::FileUnreadable { .. } => "BundleFileUnreadable",
            Error::DepthExceeded { .. } => "BundleDepthExceeded",
            Error::Overlay(_) => "DocumentPathError",
            Error::Usage(_) => "UsageError",
            Error::ConceptNotFound(_) => "ConceptNotFound",
            Error::Io(_) => "IoError",
            Error::Refused(_) => "Refused",
            Error::Conflict(_) => "Conflict",
            Error::Store(_) => "StoreError",
            Error::Symlink { .. } => "ThroughSymlink",
            Error::NoTenant(_) => "TenantNotFound",
        }
    }

    /// 64 for usage errors, 3 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) | Error::Overlay(_) => 64,
            Error::Refused(_) | Error::Conflict(_) | Error::Symlink { .. } | Error::NoTenant(_) => {
                1
            }
            _ => 3,
        }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::ConfigPathNotFound(p) => write!(f, "config path not found: {}", p.display()),
            Error::ConfigMalformed { path, detail } => {
                write!(f, "malformed config {}: {detail}", path.display())
            }
            Error::BundleNotDirectory(p) => {
                write!(f, "bundle root \"{}\" is not a directory", p.display())
            }
            Error::BundleUnreadable(p, e) => {
                write!(f, "bundle root \"{}\" could not be read ({e})", p.display())
            }
            Error::FileUnreadable { rel, root, source } => write!(
                f,
                "bundle file \"{rel}\" under \"{}\" could not be read ({source})",
                root.display()
            ),
            Error::DepthExceeded { root, at } => write!(
                f,
                "bundle \"{}\" descends past {} levels at \"{at}\"",
                root.display(),
                crate::walk::MAX_DEPTH
            ),
            Error::Overlay(e) => write!(f, "{e}"),
            Error::Usage(m) => write!(f, "{m}"),
            Error::ConceptNotFound(id) => {
                write!(f, "no concept \"{}\" in this bundle", truncate(id))
            }
            Error::Io(m)
            | Error::Refused(m)
            | Error::Conflict(m)
            | Error::Store(m)
            | Error::NoTenant(m) => {
                write!(f, "{m}")
            }
            Error::Symlink { path, link } => write!(
                f,
                "refused to write \"{}\": \"{}\" is a symbolic link, and okfit does not write through symlinks",
                truncate(path),
                truncate(link)
            ),
        }
    }
}

impl std::error::Error for Error {}

/// Caller-supplied text echoed into a message: at most 200 characters.
pub fn truncate(s: &str) -> String {
    if s.chars().count() > 200 {
        let t: String = s.chars().take(200).collect();
        format!("{t}…")
    } else {
        s.to_string()
    }
}

impl From<rusqlite::Error> for Error {
    fn from(e: rusqlite::Error) -> Self {
        match e.sqlite_error_code() {
            Some(rusqlite::ErrorCode::DatabaseBusy) | Some(rusqlite::ErrorCode::DatabaseLocked) => {
                Error::Conflict("database busy: another process holds the lock".into())
            }
            _ => Error::Store(format!("store error: {e}")),
        }
    }
}
