//! Change notification for folders read live. One [`Watch`] type serves
//! every reader of a folder: project mode, folder connections and the
//! daemon's sources.json imports.
//!
//! A reader asks [`Watch::changes`] before each answer and re-checks file
//! metadata only when something happened, and where the events say
//! exactly which directories' files changed, only in those. Directories
//! are watched one by one (the walk decides which count), and
//! [`Watch::cover`] adds the directories a new walk found. The new-directory race is handled here,
//! once: a file written into a new directory before its watch exists sends
//! no event, so covering a new directory itself counts as a change and the
//! next look re-checks.
//!
//! Two backends:
//! - Linux: inotify, read in place. The kernel queues the event inside the
//!   writing syscall, so a non-blocking read before each answer sees every
//!   change made before the request: a quiet `changed` is the truth.
//!   (`notify`'s inotify backend hands events over from a thread of its
//!   own; a change made just before a request was then missed about once
//!   in thirty tries, so it is not used for this.)
//! - Elsewhere: the `notify` crate (FSEvents, ReadDirectoryChangesW).
//!   Events arrive late there, so `changed` always says yes and readers
//!   re-check metadata; the events still drive [`Watch::wait`].

use std::collections::{BTreeSet, HashSet};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// What changed under a watched folder since the last look.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub enum Changes {
    /// Nothing.
    #[default]
    Nothing,
    /// Only files directly inside these watched directories came, went or
    /// changed; no directory came or went.
    In(BTreeSet<PathBuf>),
    /// Anything may have changed: look at the whole folder.
    Anything,
}

impl Changes {
    /// [`Changes::Anything`] when `any`, else [`Changes::Nothing`].
    pub fn of(any: bool) -> Changes {
        if any {
            Changes::Anything
        } else {
            Changes::Nothing
        }
    }

    /// True unless nothing changed.
    pub fn any(&self) -> bool {
        !matches!(self, Changes::Nothing)
    }

    /// Adds `other` to these changes.
    pub fn merge(&mut self, other: Changes) {
        match (&mut *self, other) {
            (_, Changes::Nothing) | (Changes::Anything, _) => {}
            (Changes::In(mine), Changes::In(theirs)) => mine.extend(theirs),
            (me, other) => *me = other,
        }
    }
}

#[cfg(target_os = "linux")]
use linux::Backend;
#[cfg(not(target_os = "linux"))]
use portable::Backend;

/// Whether anything under a folder changed since the last look.
pub struct Watch {
    backend: Backend,
    dirs: HashSet<PathBuf>,
    /// A directory was covered since the last look.
    grew: bool,
    /// Events read (by [`Watch::wait`]) and not yet looked at.
    pending: Changes,
}

impl Watch {
    /// Watches `dirs` (each on its own, not recursively); `None` when
    /// watching is not possible here (then callers re-check metadata on
    /// every look).
    pub fn new(dirs: &[PathBuf]) -> Option<Watch> {
        let mut w = Watch {
            backend: Backend::new()?,
            dirs: HashSet::new(),
            grew: false,
            pending: Changes::Nothing,
        };
        w.cover(dirs).then_some(())?;
        w.grew = false;
        Some(w)
    }

    /// Watches every directory of `dirs` not yet watched and stops watching
    /// those no longer listed. False when a watch could not be added (past
    /// the system's watch limit, say): the caller should stop trusting this
    /// watch and re-check metadata instead.
    pub fn cover(&mut self, dirs: &[PathBuf]) -> bool {
        let wanted: HashSet<&Path> = dirs.iter().map(PathBuf::as_path).collect();
        let gone: Vec<PathBuf> = self
            .dirs
            .iter()
            .filter(|d| !wanted.contains(d.as_path()))
            .cloned()
            .collect();
        for d in gone {
            self.backend.remove(&d);
            self.dirs.remove(&d);
        }
        for d in dirs {
            if self.dirs.contains(d) {
                continue;
            }
            if !self.backend.add(d) {
                return false;
            }
            self.dirs.insert(d.clone());
            self.grew = true;
        }
        true
    }

    /// True when `dir` is watched.
    pub fn covers(&self, dir: &Path) -> bool {
        self.dirs.contains(dir)
    }

    /// True when an event arrived (or a directory was covered, or the
    /// watch failed) since the last look; always true where events are
    /// not exact (see the module's documentation).
    pub fn changed(&mut self) -> bool {
        self.changes().any()
    }

    /// What changed since the last look: [`Changes::Anything`] when a
    /// directory was covered, came or went, when the events overflowed or
    /// could not be read, and always where events are not exact.
    pub fn changes(&mut self) -> Changes {
        let mut seen = std::mem::take(&mut self.pending);
        seen.merge(self.backend.drain());
        if std::mem::take(&mut self.grew) || !Backend::EXACT {
            return Changes::Anything;
        }
        seen
    }

    /// Blocks until an event arrives or `timeout` passes (forever when
    /// `None`); true when one arrived. The events are kept for the next
    /// look.
    pub fn wait(&mut self, timeout: Option<Duration>) -> bool {
        let seen = self.backend.wait(timeout);
        let any = seen.any();
        self.pending.merge(seen);
        any
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use super::Changes;
    use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask};
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    /// inotify, read in place.
    pub struct Backend {
        ino: Inotify,
        wds: HashMap<PathBuf, WatchDescriptor>,
        /// The directory of each watch.
        dirs: HashMap<WatchDescriptor, PathBuf>,
    }

    /// Events that say more than "a file in this directory changed": a
    /// directory came or went (or was moved), a watch ended, or events
    /// were lost.
    const WIDE: EventMask = EventMask::ISDIR
        .union(EventMask::Q_OVERFLOW)
        .union(EventMask::IGNORED)
        .union(EventMask::DELETE_SELF)
        .union(EventMask::MOVE_SELF)
        .union(EventMask::UNMOUNT);

    impl Backend {
        pub const EXACT: bool = true;

        pub fn new() -> Option<Backend> {
            Some(Backend {
                ino: Inotify::init().ok()?,
                wds: HashMap::new(),
                dirs: HashMap::new(),
            })
        }

        pub fn add(&mut self, d: &Path) -> bool {
            let mask = WatchMask::MODIFY
                | WatchMask::ATTRIB
                | WatchMask::CLOSE_WRITE
                | WatchMask::CREATE
                | WatchMask::DELETE
                | WatchMask::MOVED_FROM
                | WatchMask::MOVED_TO
                | WatchMask::DELETE_SELF
                | WatchMask::MOVE_SELF;
            match self.ino.watches().add(d, mask) {
                Ok(wd) => {
                    self.wds.insert(d.to_path_buf(), wd.clone());
                    self.dirs.insert(wd, d.to_path_buf());
                    true
                }
                Err(_) => false,
            }
        }

        pub fn remove(&mut self, d: &Path) {
            if let Some(wd) = self.wds.remove(d) {
                self.dirs.remove(&wd);
                let _ = self.ino.watches().remove(wd);
            }
        }

        /// Reads every queued event without blocking: the directories
        /// whose files changed, or [`Changes::Anything`] (see [`WIDE`];
        /// also when reading failed).
        pub fn drain(&mut self) -> Changes {
            let mut buf = [0u8; 4096];
            let mut seen = Changes::Nothing;
            loop {
                match self.ino.read_events(&mut buf) {
                    Ok(events) => {
                        let mut read = false;
                        for e in events {
                            read = true;
                            let dir = self.dirs.get(&e.wd).filter(|_| !e.mask.intersects(WIDE));
                            seen.merge(match dir {
                                Some(d) => Changes::In([d.clone()].into()),
                                None => Changes::Anything,
                            });
                        }
                        if !read {
                            return seen;
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return seen,
                    Err(_) => return Changes::Anything,
                }
            }
        }

        pub fn wait(&mut self, timeout: Option<Duration>) -> Changes {
            let seen = self.drain();
            if seen.any() {
                return seen;
            }
            let limit = timeout.map(|t| Timespec {
                tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
                tv_nsec: t.subsec_nanos().into(),
            });
            let mut fds = [PollFd::new(&self.ino, PollFlags::IN)];
            match poll(&mut fds, limit.as_ref()) {
                Ok(0) => Changes::Nothing,
                Ok(_) => self.drain(),
                Err(_) => Changes::Anything,
            }
        }
    }
}

/// The `notify` backend: the only one off Linux, and compiled (and
/// tested) everywhere so it keeps building.
#[cfg_attr(target_os = "linux", allow(dead_code))]
mod portable {
    use super::Changes;
    use notify::event::{AccessKind, AccessMode};
    use notify::{EventKind, RecursiveMode, Watcher};
    use std::path::Path;
    use std::sync::{Arc, Condvar, Mutex};
    use std::time::Duration;

    /// Events seen, shared with the watcher's thread.
    #[derive(Default)]
    struct Seen {
        count: Mutex<u64>,
        wake: Condvar,
    }

    /// Reading a file is not a change (our own reads would otherwise
    /// always look like one); closing it after writing is.
    fn is_read(kind: &EventKind) -> bool {
        matches!(kind, EventKind::Access(a) if *a != AccessKind::Close(AccessMode::Write))
    }

    /// `notify`'s recommended watcher, counting events.
    pub struct Backend {
        watcher: notify::RecommendedWatcher,
        seen: Arc<Seen>,
        looked: u64,
    }

    impl Backend {
        pub const EXACT: bool = false;

        pub fn new() -> Option<Backend> {
            let seen = Arc::new(Seen::default());
            let tx = seen.clone();
            let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
                if res.as_ref().is_ok_and(|e| is_read(&e.kind)) {
                    return;
                }
                let mut n = tx.count.lock().unwrap_or_else(|p| p.into_inner());
                *n += 1;
                tx.wake.notify_all();
            })
            .ok()?;
            Some(Backend {
                watcher,
                seen,
                looked: 0,
            })
        }

        pub fn add(&mut self, d: &Path) -> bool {
            self.watcher.watch(d, RecursiveMode::NonRecursive).is_ok()
        }

        pub fn remove(&mut self, d: &Path) {
            let _ = self.watcher.unwatch(d);
        }

        pub fn drain(&mut self) -> Changes {
            let now = *self.seen.count.lock().unwrap_or_else(|p| p.into_inner());
            Changes::of(std::mem::replace(&mut self.looked, now) != now)
        }

        pub fn wait(&mut self, timeout: Option<Duration>) -> Changes {
            let seen = self.seen.clone();
            let guard = seen.count.lock().unwrap_or_else(|p| p.into_inner());
            let looked = self.looked;
            let guard = match timeout {
                None => seen
                    .wake
                    .wait_while(guard, |n| *n == looked)
                    .unwrap_or_else(|p| p.into_inner()),
                Some(t) => {
                    seen.wake
                        .wait_timeout_while(guard, t, |n| *n == looked)
                        .unwrap_or_else(|p| p.into_inner())
                        .0
                }
            };
            self.looked = *guard;
            Changes::of(*guard != looked)
        }
    }

    #[cfg(test)]
    mod tests {
        use super::Backend;
        use std::time::Duration;

        #[test]
        fn counts_writes_and_wakes_a_waiter() {
            let dir = tempfile::tempdir().unwrap();
            let mut b = Backend::new().unwrap();
            assert!(b.add(dir.path()));
            assert!(!b.drain().any());
            std::fs::write(dir.path().join("a.md"), "x").unwrap();
            assert!(
                b.wait(Some(Duration::from_secs(5))).any(),
                "no event for a write"
            );
            // Quiet again: the wait times out.
            while b.wait(Some(Duration::from_millis(100))).any() {}
            assert!(!b.wait(Some(Duration::from_millis(50))).any());
            // Reading is not a change.
            let _ = std::fs::read(dir.path().join("a.md")).unwrap();
            assert!(!b.wait(Some(Duration::from_millis(200))).any());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Watch;
    use std::time::Duration;

    #[test]
    fn a_new_directory_counts_as_a_change_once() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let mut w = Watch::new(std::slice::from_ref(&root)).unwrap();
        assert!(!w.changed() || cfg!(not(target_os = "linux")));
        let sub = root.join("new");
        std::fs::create_dir(&sub).unwrap();
        std::fs::write(sub.join("early.md"), "written before the watch").unwrap();
        assert!(w.changed(), "creating a directory is an event");
        assert!(w.cover(&[root.clone(), sub.clone()]));
        assert!(w.changed(), "covering a new directory counts as a change");
        if cfg!(target_os = "linux") {
            assert!(!w.changed());
        }
        std::fs::write(sub.join("late.md"), "x").unwrap();
        assert!(w.wait(Some(Duration::from_secs(5))));
    }
}
