//! The bundle walk: every file under the root, skipping dot-entries,
//! `node_modules` and `.git`; symlinked files are followed only inside the
//! root and symlinked directories never, so the walk cannot loop or escape.

use crate::error::Error;
use std::path::{Path, PathBuf};

/// How deep below the root the walk goes before it fails.
pub const MAX_DEPTH: usize = 256;

/// What the walk found.
#[derive(Debug, Default)]
pub struct Walked {
    /// `(bundle-relative posix path, absolute path)`, sorted by path.
    pub files: Vec<(String, PathBuf)>,
    /// Bundle-relative directories that could not be read.
    pub unreadable: Vec<String>,
    /// Every directory walked, the root first.
    pub dirs: Vec<PathBuf>,
}

/// Where the link at `path` leads when the walk follows it: a regular
/// file inside `canon_root` (the canonical bundle root). A directory link
/// is never followed: inside the root its files are already walked under
/// their real path (or hidden on purpose), outside it they are not part of
/// the bundle.
pub fn linked_file(canon_root: &Path, path: &Path) -> Option<PathBuf> {
    let target = std::fs::canonicalize(path).ok()?;
    let inside = target.starts_with(canon_root);
    (inside && std::fs::metadata(&target).ok()?.is_file()).then_some(target)
}

/// Reads a walked file whole. Unlike `std::fs::read` it asks the kernel
/// for no size first: bundle files are small, and one `statx` per file is
/// a measurable share of reading a large bundle.
pub fn read_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let file = std::fs::File::open(path)?;
    let mut bytes = Vec::with_capacity(16 * 1024);
    file.take(u64::MAX).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// Walks `root`.
pub fn walk(root: &Path) -> Result<Walked, Error> {
    let meta = std::fs::metadata(root).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Error::BundleNotDirectory(root.to_path_buf())
        } else {
            Error::BundleUnreadable(root.to_path_buf(), e)
        }
    })?;
    if !meta.is_dir() {
        return Err(Error::BundleNotDirectory(root.to_path_buf()));
    }
    let canon_root =
        std::fs::canonicalize(root).map_err(|e| Error::BundleUnreadable(root.to_path_buf(), e))?;
    let mut out = Walked::default();
    // (absolute dir, relative prefix, depth)
    let mut stack: Vec<(PathBuf, String, usize)> = vec![(root.to_path_buf(), String::new(), 0)];
    while let Some((dir, rel, depth)) = stack.pop() {
        out.dirs.push(dir.clone());
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) => {
                if rel.is_empty() {
                    return Err(Error::BundleUnreadable(root.to_path_buf(), e));
                }
                out.unreadable.push(rel);
                continue;
            }
        };
        for entry in entries {
            let Ok(entry) = entry else {
                if !rel.is_empty() {
                    out.unreadable.push(rel.clone());
                }
                continue;
            };
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with('.') || name == "node_modules" {
                continue;
            }
            let child_rel = if rel.is_empty() {
                name.to_string()
            } else {
                format!("{rel}/{name}")
            };
            let path = entry.path();
            let Ok(ft) = entry.file_type() else {
                continue;
            };
            let (is_dir, is_file) = if ft.is_symlink() {
                (false, linked_file(&canon_root, &path).is_some())
            } else {
                (ft.is_dir(), ft.is_file())
            };
            if is_dir {
                if depth + 1 > MAX_DEPTH {
                    return Err(Error::DepthExceeded {
                        root: root.to_path_buf(),
                        at: child_rel,
                    });
                }
                stack.push((path, child_rel, depth + 1));
            } else if is_file {
                out.files.push((child_rel, path));
            }
        }
    }
    out.files.sort_by(|a, b| a.0.cmp(&b.0));
    out.unreadable.sort();
    out.unreadable.dedup();
    Ok(out)
}
