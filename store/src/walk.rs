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
    /// A listed file is a symbolic link (its target can change without
    /// an event in the link's directory).
    pub linked: bool,
}

/// One directory of a walked folder, listed again on its own.
#[derive(Debug, Default)]
pub struct Relisted {
    /// `(bundle-relative posix path, absolute path, stamp)`, sorted by
    /// path; the stamp is `None` where the file went before it was taken.
    pub files: Vec<(String, PathBuf, Option<Stamp>)>,
    /// Its subdirectories.
    pub dirs: Vec<PathBuf>,
    /// A file of it is a symbolic link.
    pub linked: bool,
}

/// Lists the directory `dir` of a walked folder again, on its own, with
/// the walk's rules and each file stamped: `rel` is its bundle-relative
/// path ("" for the root) and `canon_root` the folder's canonical path.
/// An entry that could not be read is an error (the caller then walks the
/// whole folder).
pub fn relist(canon_root: &Path, dir: &Path, rel: &str) -> std::io::Result<Relisted> {
    let listing = list(canon_root, dir, rel, Some(&|_| true))?;
    if listing.partial {
        return Err(std::io::Error::other("an entry could not be read"));
    }
    let mut files = listing.files;
    files.sort_unstable_by(|a, b| a.0.cmp(&b.0));
    Ok(Relisted {
        files,
        dirs: listing.dirs.into_iter().map(|(d, _)| d).collect(),
        linked: listing.linked,
    })
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
    read_all(std::fs::File::open(path)?)
}

/// [`read_file`], with the file's [`Stamp`] taken from the open file
/// before it is read (no second path lookup; a linked file's is its
/// target's). A write between the two makes the stamp older than the
/// text, which costs one more read later, never a missed change.
pub fn read_file_stamped(path: &Path) -> std::io::Result<(Vec<u8>, Stamp)> {
    read_all_stamped(std::fs::File::open(path)?)
}

/// The stamp of an open file, then its contents.
fn read_all_stamped(file: std::fs::File) -> std::io::Result<(Vec<u8>, Stamp)> {
    let meta = file.metadata()?;
    let len = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    Ok((read_known(file, len)?, Stamp::from_meta(&meta)))
}

/// The contents of a file whose length was `len` a moment ago. One read
/// of `len + 1` bytes that returns `len` reached the end (a read of a
/// regular file stops short only there), so no second read is needed to
/// see it; a file that grew or shrank meanwhile is read on to its end.
fn read_known(mut file: std::fs::File, len: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    if len > 64 * 1024 * 1024 {
        return read_all(file);
    }
    let mut bytes = vec![0; len + 1];
    let n = loop {
        match file.read(&mut bytes) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            r => break r?,
        }
    };
    bytes.truncate(n);
    if n != len {
        // On through `Take`, as `read_all`: no size is asked again.
        file.take(u64::MAX).read_to_end(&mut bytes)?;
    }
    Ok(bytes)
}

/// The parent directories of a set of walked files, held open so that
/// each file opens by its name alone: the kernel then looks up one path
/// component instead of every component of the whole path, which is a
/// measurable share of reading a large bundle. Directories and names are
/// taken from the files' absolute paths as the walk made them, so a file
/// opens exactly as by its path; where a directory cannot be held (or the
/// platform has no `openat`), its files open by path.
pub struct Opener {
    #[cfg(unix)]
    dirs: std::collections::HashMap<std::ffi::OsString, std::os::fd::OwnedFd>,
}

impl Opener {
    /// Holds the parent directories of `files` (absolute paths).
    pub fn new<'a>(files: impl Iterator<Item = &'a Path>) -> Opener {
        #[cfg(unix)]
        {
            use rayon::prelude::*;
            use rustix::fs::{Mode, OFlags};
            // Paths compared and hashed as bytes (a `Path` goes component
            // by component); a walk's files come grouped by directory.
            let mut wanted: Vec<&std::ffi::OsStr> = vec![];
            for dir in files.filter_map(Path::parent).map(Path::as_os_str) {
                if wanted.last() != Some(&dir) {
                    wanted.push(dir);
                }
            }
            wanted.sort_unstable();
            wanted.dedup();
            let dirs = wanted
                .into_par_iter()
                .filter_map(|dir| {
                    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
                    let fd = rustix::fs::open(dir, flags, Mode::empty()).ok()?;
                    Some((dir.to_os_string(), fd))
                })
                .collect();
            Opener { dirs }
        }
        #[cfg(not(unix))]
        {
            let _ = files;
            Opener {}
        }
    }

    /// Opens the file at `path`, through its held directory.
    fn open(&self, path: &Path) -> std::io::Result<std::fs::File> {
        #[cfg(unix)]
        if let (Some(dir), Some(name)) = (path.parent(), path.file_name()) {
            use rustix::fs::{Mode, OFlags};
            if let Some(fd) = self.dirs.get(dir.as_os_str()) {
                let flags = OFlags::RDONLY | OFlags::CLOEXEC;
                let file = rustix::fs::openat(fd, name, flags, Mode::empty())?;
                return Ok(std::fs::File::from(file));
            }
        }
        std::fs::File::open(path)
    }

    /// [`read_file`] through the held directory.
    pub fn read(&self, path: &Path) -> std::io::Result<Vec<u8>> {
        read_all(self.open(path)?)
    }

    /// [`read_file_stamped`] through the held directory.
    pub fn read_stamped(&self, path: &Path) -> std::io::Result<(Vec<u8>, Stamp)> {
        read_all_stamped(self.open(path)?)
    }
}

/// The rest of an open file (through `Take`, so no size is asked first).
fn read_all(file: std::fs::File) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
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
    walk_with(root, None).map(|(w, _)| w)
}

/// [`walk`], with each file's [`Stamp`] (`None` when it could not be
/// read), in the order of `files`. A file's stamp is read relative to its
/// directory as the walk lists it, which is much cheaper than looking its
/// whole path up again; a linked file's is its target's.
pub fn walk_stamped(root: &Path) -> Result<(Walked, Vec<Option<Stamp>>), Error> {
    walk_with(root, Some(&|_| true))
}

/// [`walk_stamped`], stamping only the files `which` picks (by
/// bundle-relative path); the others' stamps are `None`.
pub fn walk_stamped_where(
    root: &Path,
    which: &Picker<'_>,
) -> Result<(Walked, Vec<Option<Stamp>>), Error> {
    walk_with(root, Some(which))
}

/// Picks files by bundle-relative path.
pub type Picker<'a> = dyn Fn(&str) -> bool + Sync + 'a;

/// One directory's listing: its files (with their stamps when asked) and
/// the directories below it.
#[derive(Default)]
struct Listing {
    files: Vec<(String, PathBuf, Option<Stamp>)>,
    dirs: Vec<(PathBuf, String)>,
    /// An entry could not be read: the directory is listed in part.
    partial: bool,
    /// A listed file is a symbolic link.
    linked: bool,
}

/// Lists the directory `dir` (bundle-relative `rel`).
fn list(
    canon_root: &Path,
    dir: &Path,
    rel: &str,
    stamped: Option<&Picker<'_>>,
) -> std::io::Result<Listing> {
    let mut out = Listing::default();
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else {
            out.partial = true;
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
            let followed = linked_file(canon_root, &path).is_some();
            out.linked |= followed;
            (false, followed)
        } else {
            (ft.is_dir(), ft.is_file())
        };
        if is_dir {
            out.dirs.push((path, child_rel));
        } else if is_file {
            // Linked files are stamped through their path (the target's
            // stamp), the rest through their entry.
            let stamp = stamped
                .is_some_and(|pick| pick(&child_rel))
                .then(|| {
                    let meta = if ft.is_symlink() {
                        std::fs::metadata(&path)
                    } else {
                        entry.metadata()
                    };
                    meta.ok().map(|m| Stamp::from_meta(&m))
                })
                .flatten();
            out.files.push((child_rel, path, stamp));
        }
    }
    Ok(out)
}

fn walk_with(
    root: &Path,
    stamped: Option<&Picker<'_>>,
) -> Result<(Walked, Vec<Option<Stamp>>), Error> {
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
    let mut listings = vec![];
    // The directories of one depth are listed together, on every core: a
    // large bundle is mostly directory reading (and, stamped, one stat per
    // file).
    let mut level: Vec<(PathBuf, String)> = vec![(root.to_path_buf(), String::new())];
    let mut depth = 0;
    while !level.is_empty() {
        let lister = |(dir, rel): (PathBuf, String)| {
            let listing = list(&canon_root, &dir, &rel, stamped);
            (dir, rel, listing)
        };
        let listed: Vec<_> = if level.len() == 1 {
            level.into_iter().map(lister).collect()
        } else {
            use rayon::prelude::*;
            level.into_par_iter().map(lister).collect()
        };
        let mut next = vec![];
        for (dir, rel, listing) in listed {
            out.dirs.push(dir);
            let listing = match listing {
                Ok(l) => l,
                Err(e) if rel.is_empty() => {
                    return Err(Error::BundleUnreadable(root.to_path_buf(), e))
                }
                Err(_) => {
                    out.unreadable.push(rel);
                    continue;
                }
            };
            if listing.partial && !rel.is_empty() {
                out.unreadable.push(rel);
            }
            if let Some((_, at)) = listing.dirs.first().filter(|_| depth + 1 > MAX_DEPTH) {
                return Err(Error::DepthExceeded {
                    root: root.to_path_buf(),
                    at: at.clone(),
                });
            }
            out.linked |= listing.linked;
            next.extend(listing.dirs);
            listings.push(listing.files);
        }
        level = next;
        depth += 1;
    }
    let mut files = Vec::with_capacity(listings.iter().map(Vec::len).sum());
    for l in listings {
        files.extend(l);
    }
    // Paths are unique: the order of equal keys cannot show.
    use rayon::slice::ParallelSliceMut;
    files.par_sort_unstable_by(|a, b| a.0.cmp(&b.0));
    let mut stamps = Vec::with_capacity(if stamped.is_some() { files.len() } else { 0 });
    out.files = files
        .into_iter()
        .map(|(rel, path, stamp)| {
            if stamped.is_some() {
                stamps.push(stamp);
            }
            (rel, path)
        })
        .collect();
    out.unreadable.sort();
    out.unreadable.dedup();
    Ok((out, stamps))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_is_read_whole_whatever_length_was_taken() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("a.md");
        for size in [0usize, 1, 4095, 4096, 70_000] {
            let text: Vec<u8> = (0..size).map(|i| b'a' + (i % 26) as u8).collect();
            std::fs::write(&p, &text).unwrap();
            let (bytes, stamp) = read_file_stamped(&p).unwrap();
            assert_eq!(bytes, text);
            assert_eq!(stamp.len, size as u64);
            // A length taken before the file grew or shrank.
            for taken in [0, size / 2, size + 10] {
                let got = read_known(std::fs::File::open(&p).unwrap(), taken).unwrap();
                assert_eq!(got, text, "size {size}, length taken {taken}");
            }
        }
    }

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

    #[test]
    fn the_opener_reads_each_file_as_its_path_does() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        for (i, f) in ["a.md", "x/b.md", "x/y/c.md"].iter().enumerate() {
            let p = root.join(f);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, "x".repeat(i + 1)).unwrap();
        }
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(root.join("x/b.md"), root.join("x/y/link.md")).unwrap();
            // A name that is no UTF-8 opens by its real bytes.
            use std::os::unix::ffi::OsStrExt;
            let odd = std::ffi::OsStr::from_bytes(b"x/odd\xff.md");
            std::fs::write(root.join(odd), "odd").unwrap();
        }
        let walked = walk(root).unwrap();
        let opener = Opener::new(walked.files.iter().map(|(_, abs)| abs.as_path()));
        for (rel, abs) in &walked.files {
            let (bytes, stamp) = opener.read_stamped(abs).unwrap();
            assert_eq!(bytes, std::fs::read(abs).unwrap(), "{rel}");
            assert_eq!(Some(stamp), Stamp::of(abs), "{rel}");
        }
        // A file whose directory is not held opens by its path.
        let gone = root.join("z/none.md");
        let e = opener.read(&gone).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(opener.read(&root.join("a.md")).unwrap(), b"x");
    }
}
