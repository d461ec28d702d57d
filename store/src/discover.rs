//! Config discovery and project-root anchoring (reference §10.1–10.4).

use crate::error::Error;
use okfit_core::config::{self, Config};
use std::path::{Path, PathBuf};

/// Which tier found the config.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resolver {
    /// `--config`.
    Explicit,
    /// `.okfit.toml`, `okfit.toml` or `.config/okfit.toml` in the start directory or above.
    Project,
    /// `$XDG_CONFIG_HOME/okfit/config.toml` or `$XDG_CONFIG_DIRS`.
    Xdg,
    /// The platform config directory.
    Native,
    /// `/etc/okfit/config.toml`.
    System,
    /// No file: defaults.
    None,
}

/// A resolved project: where it is, where its bundle is, and its config.
#[derive(Clone, Debug)]
pub struct Project {
    /// The anchored project root (absolute).
    pub project_root: PathBuf,
    /// `<project_root>/<bundle.path>` (absolute).
    pub bundle_root: PathBuf,
    /// The winning config file.
    pub config_path: Option<PathBuf>,
    /// Which tier found it.
    pub resolver: Resolver,
    /// The resolved configuration.
    pub config: Config,
}

/// Makes `p` absolute against the current directory, lexically normalised.
pub fn absolute(p: &Path) -> PathBuf {
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        std::env::current_dir()
            .unwrap_or_else(|_| PathBuf::from("/"))
            .join(p)
    };
    let mut out = PathBuf::new();
    for c in joined.components() {
        match c {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

fn is_file(p: &Path) -> bool {
    std::fs::metadata(p).map(|m| m.is_file()).unwrap_or(false)
}

/// Finds the config file for a discovery start directory.
pub fn find(start: &Path) -> (Option<PathBuf>, Resolver) {
    let mut dir = Some(start);
    while let Some(d) = dir {
        for name in [".okfit.toml", "okfit.toml", ".config/okfit.toml"] {
            let p = d.join(name);
            if is_file(&p) {
                return (Some(p), Resolver::Project);
            }
        }
        dir = d.parent();
    }
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let mut xdg: Vec<PathBuf> = vec![];
    if let Some(x) = std::env::var_os("XDG_CONFIG_HOME").filter(|v| !v.is_empty()) {
        xdg.push(PathBuf::from(x));
    }
    if let Some(dirs) = std::env::var_os("XDG_CONFIG_DIRS") {
        for d in std::env::split_paths(&dirs) {
            if !d.as_os_str().is_empty() {
                xdg.push(d);
            }
        }
    }
    for base in xdg {
        let p = base.join("okfit/config.toml");
        if is_file(&p) {
            return (Some(p), Resolver::Xdg);
        }
    }
    if let Some(h) = &home {
        let native = if cfg!(target_os = "macos") {
            h.join("Library/Application Support/okfit/config.toml")
        } else {
            h.join(".config/okfit/config.toml")
        };
        if is_file(&native) {
            return (Some(native), Resolver::Native);
        }
    }
    if cfg!(unix) {
        let p = PathBuf::from("/etc/okfit/config.toml");
        if is_file(&p) {
            return (Some(p), Resolver::System);
        }
    }
    (None, Resolver::None)
}

/// Reads and resolves a config file.
pub fn read_config(path: &Path) -> Result<Config, Error> {
    let bytes = std::fs::read(path).map_err(|e| Error::ConfigMalformed {
        path: path.to_path_buf(),
        detail: format!("could not be read ({e})"),
    })?;
    let text = String::from_utf8(bytes).map_err(|_| Error::ConfigMalformed {
        path: path.to_path_buf(),
        detail: "not valid UTF-8".into(),
    })?;
    config::resolve(Some(&text)).map_err(|detail| Error::ConfigMalformed {
        path: path.to_path_buf(),
        detail,
    })
}

/// Resolves a project: `path` is the CLI's `[path]` (also the discovery
/// start), `start` the start when no path is given, `explicit` the `--config`.
pub fn resolve(
    path: Option<&Path>,
    start: &Path,
    explicit: Option<&Path>,
) -> Result<Project, Error> {
    let start = absolute(path.unwrap_or(start));
    let (config_path, resolver) = match explicit {
        Some(c) => {
            let c = absolute(c);
            if !c.exists() {
                return Err(Error::ConfigPathNotFound(c));
            }
            (Some(c), Resolver::Explicit)
        }
        None => find(&start),
    };
    let config = match &config_path {
        Some(p) => read_config(p)?,
        None => config::resolve(None).map_err(|detail| Error::ConfigMalformed {
            path: PathBuf::from("(defaults)"),
            detail,
        })?,
    };
    let project_root = if let Some(p) = path {
        absolute(p)
    } else if let (Resolver::Explicit | Resolver::Project, Some(c)) = (resolver, &config_path) {
        let dir = c.parent().unwrap_or(Path::new("/"));
        if dir.file_name().is_some_and(|n| n == ".config") {
            dir.parent().unwrap_or(dir).to_path_buf()
        } else {
            dir.to_path_buf()
        }
    } else {
        start.clone()
    };
    let bundle_root = absolute(&project_root.join(&config.bundle_path));
    Ok(Project {
        project_root,
        bundle_root,
        config_path,
        resolver,
        config,
    })
}

/// Resolves a bare bundle: `dir` itself is the bundle root (and the
/// project root). A config found from `dir` (or `explicit`) still applies,
/// but its `bundle.path` does not; with none, the profile is `none`.
pub fn resolve_bundle(dir: &Path, explicit: Option<&Path>) -> Result<Project, Error> {
    let dir = absolute(dir);
    let mut p = resolve(Some(&dir), &dir, explicit)?;
    if p.config_path.is_none() {
        p.config = config::resolve(Some("[bundle]\nprofile = \"none\"\n")).map_err(|detail| {
            Error::ConfigMalformed {
                path: PathBuf::from("(defaults)"),
                detail,
            }
        })?;
    }
    p.bundle_root = dir;
    Ok(p)
}

/// Checks that the bundle root is a directory; when it is missing and
/// the project root holds concept files itself, says to use `--bundle`.
pub fn require_bundle(p: &Project) -> Result<(), Error> {
    if p.bundle_root.is_dir() {
        return Ok(());
    }
    let holds_concepts = std::fs::read_dir(&p.project_root)
        .map(|rd| {
            rd.flatten().any(|e| {
                let name = e.file_name();
                let name = name.to_string_lossy();
                name.ends_with(".md")
                    && std::fs::read(e.path())
                        .map(|b| b.starts_with(b"---") || b.starts_with("\u{feff}---".as_bytes()))
                        .unwrap_or(false)
            })
        })
        .unwrap_or(false);
    if holds_concepts {
        Err(Error::BareBundle {
            bundle_root: p.bundle_root.clone(),
            dir: p.project_root.clone(),
        })
    } else {
        Err(Error::BundleNotDirectory(p.bundle_root.clone()))
    }
}

/// The MCP server's discovery start: `OKFIT_PROJECT_DIR`, else
/// `CLAUDE_PROJECT_DIR`, else the working directory. Empty, blank and
/// unexpanded `${CLAUDE_PROJECT_DIR}` values are skipped.
pub fn env_start() -> PathBuf {
    env_dir().unwrap_or_else(|| std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")))
}

/// The project directory the environment names: `OKFIT_PROJECT_DIR`,
/// else `CLAUDE_PROJECT_DIR` (empty, blank and unexpanded values skipped).
pub fn env_dir() -> Option<PathBuf> {
    ["OKFIT_PROJECT_DIR", "CLAUDE_PROJECT_DIR"]
        .into_iter()
        .filter_map(|var| std::env::var(var).ok())
        .map(|v| v.trim().to_string())
        .find(|t| !t.is_empty() && t != "${CLAUDE_PROJECT_DIR}")
        .map(PathBuf::from)
}
