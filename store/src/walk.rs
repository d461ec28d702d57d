//! The bundle walk: every file under the root, skipping dot-entries,
//! `node_modules` and `.git`; symlinked files are followed only inside the
//! root and symlinked directories never, so the walk cannot loop or escape.

use crate::error::Error;
use std::path::{Path, PathBuf};

/// How deep below the root the walk goes before it fails.
pub const MAX_DEPTH: usize = 256;

/// What the walk found.
#[derive(Clone, Debug, Default)]
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

/// What identifies a file version without reading it: length and mtime.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stamp {
    /// Length in bytes.
    pub len: u64,
    /// Last modification time, where the platform has one.
    pub modified: Option<std::time::SystemTime>,
}

impl Stamp {
    /// The stamp of the file at `p` now.
    pub fn of(p: &Path) -> Option<Stamp> {
        std::fs::metadata(p).ok().map(|m| Stamp::from_meta(&m))
    }

    /// The stamp of a file from its metadata.
    pub fn from_meta(m: &std::fs::Metadata) -> Stamp {
        Stamp {
            len: m.len(),
            modified: m.modified().ok(),
        }
    }
}

/// Walks `root`.
pub fn walk(root: &Path) -> Result<Walked, Error> {
    walk_with(root, false).map(|(w, _)| w)
}

/// [`walk`], with each file's [`Stamp`] (`None` when it could not be
/// read), in the order of `files`. A file's stamp is read relative to its
/// directory as the walk lists it, which is much cheaper than looking its
/// whole path up again; a linked file's is its target's.
pub fn walk_stamped(root: &Path) -> Result<(Walked, Vec<Option<Stamp>>), Error> {
    walk_with(root, true)
}

fn walk_with(root: &Path, stamped: bool) -> Result<(Walked, Vec<Option<Stamp>>), Error> {
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
    let mut stamps = vec![];
    let mut to_stamp: Vec<Option<std::fs::DirEntry>> = vec![];
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
                if stamped {
                    // Linked files are stamped through their path (the
                    // target's stamp), the rest through their entry.
                    to_stamp.push((!ft.is_symlink()).then_some(entry));
                }
                out.files.push((child_rel, path));
            }
        }
    }
    if stamped {
        use rayon::prelude::*;
        stamps = to_stamp
            .into_par_iter()
            .zip(out.files.par_iter())
            .map(|(entry, (_, path))| {
                let meta = match entry {
                    Some(e) => e.metadata(),
                    None => std::fs::metadata(path),
                };
                meta.ok().map(|m| Stamp::from_meta(&m))
            })
            .collect();
        let mut both: Vec<_> = std::mem::take(&mut out.files)
            .into_iter()
            .zip(stamps)
            .collect();
        both.sort_by(|a, b| a.0 .0.cmp(&b.0 .0));
        (out.files, stamps) = both.into_iter().unzip();
    } else {
        out.files.sort_by(|a, b| a.0.cmp(&b.0));
    }
    out.unreadable.sort();
    out.unreadable.dedup();
    Ok((out, stamps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_follow_their_files_through_the_sort() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let files = [
            "b.md",
            "a/z.md",
            "a/b/c.md",
            "c.txt",
            "a/a.md",
            "d/e/f/g.md",
        ];
        for (i, f) in files.iter().enumerate() {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x".repeat(i + 1)).unwrap();
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(root.join("a/z.md"), root.join("link.md")).unwrap();
        let (walked, stamps) = walk_stamped(root).unwrap();
        assert_eq!(walked.files.len(), files.len() + 1);
        assert_eq!(walked.files.len(), stamps.len());
        for ((rel, abs), st) in walked.files.iter().zip(&stamps) {
            assert_eq!(Some(*st.as_ref().unwrap()), Stamp::of(abs), "{rel}");
        }
        let plain = walk(root).unwrap();
        assert_eq!(plain.files, walked.files);
    }
}
