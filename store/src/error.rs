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
    /// The bundle root is missing, but the project root holds concept
    /// files itself: it is a bare bundle, checked with `--bundle`.
    BareBundle {
        /// The missing bundle root.
        bundle_root: PathBuf,
        /// The directory that holds the concepts.
        dir: PathBuf,
    },
    /// `okfit init` would overwrite these files (project-relative).
    WouldOverwrite(Vec<String>),
    /// A concept's frontmatter cannot be edited as asked (`okfit verify`).
    Uneditable(String),
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

/// What kind of failure an error is. Every edge maps the kind, never the
/// message: to CLI exit codes ([`Error::exit_code`]), HTTP statuses
/// ([`Kind::http_status`], and back with [`Kind::from_wire`]) and MCP
/// (a tool's `isError` answer, or -32602 for [`Kind::Usage`] arguments).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// The command line or the arguments are malformed.
    Usage,
    /// The request is well-formed but refused: a bad name, a failed
    /// precondition, a path through a symlink.
    Invalid,
    /// What was asked for does not exist (a concept, a tenant).
    NotFound,
    /// Another writer changed it first: re-read and retry.
    Conflict,
    /// No valid credentials, or not enough rights.
    Unauthorised,
    /// The bundle, config, files or store could not be read or written.
    Unavailable,
    /// A bug or an unexpected state.
    Internal,
}

impl Kind {
    /// Every kind, for tests and the wire.
    pub const ALL: [Kind; 7] = [
        Kind::Usage,
        Kind::Invalid,
        Kind::NotFound,
        Kind::Conflict,
        Kind::Unauthorised,
        Kind::Unavailable,
        Kind::Internal,
    ];

    /// The name sent in the daemon's `okfit-error` header.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Usage => "usage",
            Kind::Invalid => "invalid",
            Kind::NotFound => "not-found",
            Kind::Conflict => "conflict",
            Kind::Unauthorised => "unauthorised",
            Kind::Unavailable => "unavailable",
            Kind::Internal => "internal",
        }
    }

    /// The kind an `okfit-error` header names.
    pub fn from_wire(name: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The HTTP status the daemon answers with (reference §1.4).
    pub fn http_status(self) -> u16 {
        match self {
            Kind::Usage | Kind::Invalid => 400,
            Kind::NotFound => 404,
            Kind::Conflict => 409,
            Kind::Unauthorised => 401,
            Kind::Unavailable | Kind::Internal => 500,
        }
    }
}

impl Error {
    /// What kind of failure this is.
    pub fn kind(&self) -> Kind {
        match self {
            Error::Usage(_) | Error::Overlay(_) => Kind::Usage,
            Error::Refused(_) | Error::Symlink { .. } => Kind::Invalid,
            Error::ConceptNotFound(_) | Error::NoTenant(_) => Kind::NotFound,
            Error::Conflict(_) => Kind::Conflict,
            Error::ConfigPathNotFound(_)
            | Error::ConfigMalformed { .. }
            | Error::BundleNotDirectory(_)
            | Error::BareBundle { .. }
            | Error::WouldOverwrite(_)
            | Error::Uneditable(_)
            | Error::BundleUnreadable(..)
            | Error::FileUnreadable { .. }
            | Error::DepthExceeded { .. }
            | Error::Io(_)
            | Error::Store(_) => Kind::Unavailable,
        }
    }

    /// An error of `kind` received from a daemon, with its message.
    pub fn from_wire(kind: Kind, message: String) -> Error {
        match kind {
            Kind::Usage => Error::Usage(message),
            Kind::NotFound => Error::NoTenant(message),
            Kind::Conflict => Error::Conflict(message),
            Kind::Unavailable | Kind::Internal => Error::Store(message),
            Kind::Invalid | Kind::Unauthorised => Error::Refused(message),
        }
    }

    /// A stable tag for JSON error envelopes.
    pub fn tag(&self) -> &'static str {
        match self {
            Error::ConfigPathNotFound(_) => "ConfigPathNotFound",
            Error::ConfigMalformed { .. } => "ConfigMalformed",
            Error::BundleNotDirectory(_) | Error::BareBundle { .. } => "BundleNotFound",
            Error::WouldOverwrite(_) => "WouldOverwrite",
            Error::Uneditable(_) => "Uneditable",
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

    /// The CLI's exit code: 64 for usage, 1 for a refused, missing or
    /// conflicting knowledge request, 3 when the bundle, config or store
    /// could not be read. A concept missing from the project's bundle
    /// keeps the project commands' 3 (seed 002's exit codes).
    pub fn exit_code(&self) -> i32 {
        match (self.kind(), self) {
            (Kind::Usage, _) => 64,
            (Kind::NotFound, Error::ConceptNotFound(_)) => 3,
            (Kind::Invalid | Kind::NotFound | Kind::Conflict | Kind::Unauthorised, _) => 1,
            (Kind::Unavailable | Kind::Internal, _) => 3,
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
            Error::BareBundle { bundle_root, dir } => write!(
                f,
                "bundle root \"{}\" is not a directory, but \"{}\" holds concept files itself: to check it as a bundle, pass --bundle {}",
                bundle_root.display(),
                dir.display(),
                dir.display()
            ),
            Error::WouldOverwrite(paths) => {
                write!(f, "refusing to overwrite existing files:")?;
                for p in paths {
                    write!(f, "\n  {p}")?;
                }
                write!(f, "\nNothing was written.")
            }
            Error::Uneditable(m) => write!(f, "{m}"),
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
