//! Files below a root directory, opened one component at a time from a
//! held directory handle with `O_NOFOLLOW`: no symbolic link is ever
//! followed below the root, so no read or write can leave it, even when a
//! directory is swapped for a link while an operation runs. Every writer
//! of okfit's own files (folder connections, `okfit export`, the store's
//! tenant folders, the daemon's state files) goes through here.

use crate::error::Error;
use rustix::fs::{AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

/// The refusal for a path that passes through a symbolic link.
pub fn symlink_refusal(path: &str, link: &str) -> Error {
    Error::Symlink {
        path: path.to_string(),
        link: link.to_string(),
    }
}

fn io_err(what: &str, path: &Path, e: impl std::fmt::Display) -> Error {
    Error::Io(format!("cannot {what} {} ({e})", path.display()))
}

/// A directory okfit may write below.
#[derive(Debug)]
pub struct Root {
    fd: OwnedFd,
    path: PathBuf,
}

/// A directory below a [`Root`], reached without following any link.
#[derive(Debug)]
pub struct Dir {
    fd: OwnedFd,
    /// The directory's absolute path, for messages.
    path: PathBuf,
    /// Root-relative path of this directory (`""` for the root).
    rel: String,
}

fn dir_flags() -> OFlags {
    OFlags::DIRECTORY | OFlags::RDONLY | OFlags::CLOEXEC
}

impl Root {
    /// Opens `path` (which must be a directory; links in `path` itself are
    /// the caller's choice and are followed).
    pub fn open(path: &Path) -> Result<Root, Error> {
        let fd = rustix::fs::open(path, dir_flags(), Mode::empty()).map_err(|e| match e {
            Errno::NOENT | Errno::NOTDIR => Error::BundleNotDirectory(path.to_path_buf()),
            e => io_err("open", path, e),
        })?;
        Ok(Root {
            fd,
            path: path.to_path_buf(),
        })
    }

    /// Creates `path` and its parents when missing, then opens it.
    pub fn create(path: &Path) -> Result<Root, Error> {
        std::fs::create_dir_all(path).map_err(|e| io_err("create", path, e))?;
        Root::open(path)
    }

    /// The root itself as a [`Dir`].
    fn as_dir(&self) -> Result<Dir, Error> {
        let fd = self
            .fd
            .try_clone()
            .map_err(|e| io_err("open", &self.path, e))?;
        Ok(Dir {
            fd,
            path: self.path.clone(),
            rel: String::new(),
        })
    }

    /// The directory at root-relative `rel` (`a/b`; `""` is the root),
    /// created when `create` is set. `Ok(None)`: it does not exist. A link
    /// anywhere on the way is refused, naming `shown` (the path the caller
    /// is writing).
    pub fn dir(&self, rel: &str, create: bool, shown: &str) -> Result<Option<Dir>, Error> {
        let mut dir = self.as_dir()?;
        for seg in rel.split('/').filter(|s| !s.is_empty()) {
            match dir.child_dir(seg, create, shown)? {
                Some(d) => dir = d,
                None => return Ok(None),
            }
        }
        Ok(Some(dir))
    }

    /// Splits a root-relative file path into its directory and file name.
    pub fn split(rel: &str) -> (&str, &str) {
        match rel.rfind('/') {
            Some(i) => (&rel[..i], &rel[i + 1..]),
            None => ("", rel),
        }
    }

    /// The bytes of the regular file at `rel`, `None` when it (or a
    /// directory on the way) does not exist. A link on the way, or at the
    /// file itself, is refused.
    pub fn read(&self, rel: &str, shown: &str) -> Result<Option<Vec<u8>>, Error> {
        let (d, name) = Root::split(rel);
        match self.dir(d, false, shown)? {
            Some(dir) => dir.read(name, shown),
            None => Ok(None),
        }
    }

    /// Writes `bytes` to `rel` atomically (a staged file renamed over the
    /// target), creating directories on the way.
    pub fn write(&self, rel: &str, bytes: &[u8], shown: &str) -> Result<(), Error> {
        self.write_mode(rel, bytes, shown, 0o644)
    }

    /// [`Root::write`] with the new file's permission bits.
    pub fn write_mode(&self, rel: &str, bytes: &[u8], shown: &str, mode: u32) -> Result<(), Error> {
        let (d, name) = Root::split(rel);
        let dir = self
            .dir(d, true, shown)?
            .ok_or_else(|| io_err("create", &self.path.join(d), "missing"))?;
        let tmp = dir.stage_mode(name, 0, bytes, mode)?;
        if let Err(e) = dir.replace(&tmp, name, shown) {
            dir.remove_quiet(&tmp);
            return Err(e);
        }
        dir.sync();
        Ok(())
    }
}

impl Dir {
    fn shown_child(&self, name: &str) -> String {
        if self.rel.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.rel)
        }
    }

    /// What `name` is in this directory, without following it.
    pub fn kind(&self, name: &str) -> Result<Option<FileType>, Error> {
        match rustix::fs::statat(&self.fd, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some(FileType::from_raw_mode(st.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(e) => Err(io_err("inspect", &self.path.join(name), e)),
        }
    }

    fn refuse_if_link(&self, name: &str, shown: &str) -> Result<(), Error> {
        if self.kind(name)? == Some(FileType::Symlink) {
            return Err(symlink_refusal(shown, &self.shown_child(name)));
        }
        Ok(())
    }

    fn child_dir(&self, name: &str, create: bool, shown: &str) -> Result<Option<Dir>, Error> {
        let flags = dir_flags() | OFlags::NOFOLLOW;
        let opened = match rustix::fs::openat(&self.fd, name, flags, Mode::empty()) {
            Err(Errno::NOENT) if create => {
                match rustix::fs::mkdirat(&self.fd, name, Mode::from_raw_mode(0o777)) {
                    Ok(()) | Err(Errno::EXIST) => {}
                    Err(e) => return Err(io_err("create", &self.path.join(name), e)),
                }
                rustix::fs::openat(&self.fd, name, flags, Mode::empty())
            }
            r => r,
        };
        match opened {
            Ok(fd) => Ok(Some(Dir {
                fd,
                path: self.path.join(name),
                rel: self.shown_child(name),
            })),
            Err(Errno::NOENT) => Ok(None),
            Err(Errno::LOOP | Errno::NOTDIR | Errno::MLINK) => {
                self.refuse_if_link(name, shown)?;
                Err(Error::Refused(format!(
                    "cannot write \"{shown}\": \"{}\" is not a directory",
                    self.shown_child(name)
                )))
            }
            Err(e) => Err(io_err("open", &self.path.join(name), e)),
        }
    }

    /// The regular file `name` opened with `flags` (and `mode` when it is
    /// created), never through a link; `None` when missing. `what` names
    /// the operation in errors.
    fn open_regular(
        &self,
        name: &str,
        flags: OFlags,
        mode: Mode,
        what: &str,
        shown: &str,
    ) -> Result<Option<std::fs::File>, Error> {
        let fd = match rustix::fs::openat(&self.fd, name, flags | OFlags::NOFOLLOW, mode) {
            Ok(fd) => fd,
            Err(Errno::NOENT) => return Ok(None),
            Err(Errno::LOOP | Errno::MLINK) => {
                self.refuse_if_link(name, shown)?;
                return Err(io_err(what, &self.path.join(name), Errno::LOOP));
            }
            Err(e) => return Err(io_err(what, &self.path.join(name), e)),
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| io_err(what, &self.path.join(name), e))?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            return Err(Error::Refused(format!(
                "cannot use \"{shown}\": \"{}\" is not a regular file",
                self.shown_child(name)
            )));
        }
        Ok(Some(std::fs::File::from(fd)))
    }

    /// The bytes of the regular file `name`; `None` when missing.
    pub fn read(&self, name: &str, shown: &str) -> Result<Option<Vec<u8>>, Error> {
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let Some(mut file) = self.open_regular(name, flags, Mode::empty(), "read", shown)? else {
            return Ok(None);
        };
        let mut out = vec![];
        file.read_to_end(&mut out)
            .map_err(|e| io_err("read", &self.path.join(name), e))?;
        Ok(Some(out))
    }

    /// The regular file `name` opened for reading and writing, created
    /// empty when missing (never through a link): a file to lock.
    pub fn lock_file(&self, name: &str, shown: &str) -> Result<std::fs::File, Error> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::CLOEXEC;
        self.open_regular(name, flags, Mode::from_raw_mode(0o644), "open", shown)?
            .ok_or_else(|| io_err("open", &self.path.join(name), Errno::NOENT))
    }

    /// Writes `bytes` to a new staging file beside `name` (never an
    /// existing file, never through a link) and flushes it to disk;
    /// returns the staging file's name.
    pub fn stage(&self, name: &str, n: usize, bytes: &[u8]) -> Result<String, Error> {
        self.stage_mode(name, n, bytes, 0o644)
    }

    /// [`Dir::stage`] with the staged file's permission bits.
    pub fn stage_mode(
        &self,
        name: &str,
        n: usize,
        bytes: &[u8],
        mode: u32,
    ) -> Result<String, Error> {
        let tmp = format!(".okfit-write-{}-{n}-{name}.tmp", std::process::id());
        let flags =
            OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = match rustix::fs::openat(&self.fd, &tmp, flags, Mode::from_raw_mode(mode)) {
            Ok(fd) => fd,
            Err(Errno::EXIST) => {
                // A staging file left by a crashed writer with our pid.
                self.remove_quiet(&tmp);
                rustix::fs::openat(&self.fd, &tmp, flags, Mode::from_raw_mode(mode))
                    .map_err(|e| io_err("write", &self.path.join(name), e))?
            }
            Err(e) => return Err(io_err("write", &self.path.join(name), e)),
        };
        let mut f = std::fs::File::from(fd);
        if let Err(e) = f.write_all(bytes).and_then(|_| f.sync_all()) {
            self.remove_quiet(&tmp);
            return Err(io_err("write", &self.path.join(name), e));
        }
        Ok(tmp)
    }

    /// Renames the staged file `tmp` over `name`. A link at `name` is
    /// refused; one that appears after the check is replaced, never
    /// followed.
    pub fn replace(&self, tmp: &str, name: &str, shown: &str) -> Result<(), Error> {
        self.refuse_if_link(name, shown)?;
        rustix::fs::renameat(&self.fd, tmp, &self.fd, name)
            .map_err(|e| io_err("write", &self.path.join(name), e))
    }

    /// Removes the file `name` (a link at `name` is refused).
    pub fn remove(&self, name: &str, shown: &str) -> Result<(), Error> {
        self.refuse_if_link(name, shown)?;
        rustix::fs::unlinkat(&self.fd, name, AtFlags::empty())
            .map_err(|e| io_err("remove", &self.path.join(name), e))
    }

    /// Removes `name` if it is there, ignoring errors (cleanup).
    pub fn remove_quiet(&self, name: &str) {
        let _ = rustix::fs::unlinkat(&self.fd, name, AtFlags::empty());
    }

    /// Flushes the directory entry changes to disk.
    pub fn sync(&self) {
        let _ = rustix::fs::fsync(&self.fd);
    }
}
