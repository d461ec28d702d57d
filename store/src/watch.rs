//! Change notification for folders read live. One [`Watch`] type serves
//! every reader of a folder: project mode, folder connections and the
//! daemon's sources.json imports.
//!
//! A reader asks [`Watch::changed`] before each answer and re-checks file
//! metadata only when something happened. Directories are watched one by
//! one (the walk decides which count), and [`Watch::cover`] adds the
//! directories a new walk found. The new-directory race is handled here,
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

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::time::Duration;

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

    /// True when an event arrived (or a directory was covered, or the
    /// watch failed) since the last look; always true where events are
    /// not exact (see the module's documentation).
    pub fn changed(&mut self) -> bool {
        let events = self.backend.drain();
        std::mem::take(&mut self.grew) || events || !Backend::EXACT
    }

    /// Blocks until an event arrives or `timeout` passes (forever when
    /// `None`); true when one arrived.
    pub fn wait(&mut self, timeout: Option<Duration>) -> bool {
        self.backend.wait(timeout)
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use inotify::{Inotify, WatchDescriptor, WatchMask};
    use rustix::event::{poll, PollFd, PollFlags, Timespec};
    use std::collections::HashMap;
    use std::path::{Path, PathBuf};
    use std::time::Duration;

    /// inotify, read in place.
    pub struct Backend {
        ino: Inotify,
        wds: HashMap<PathBuf, WatchDescriptor>,
    }

    impl Backend {
        pub const EXACT: bool = true;

        pub fn new() -> Option<Backend> {
            Some(Backend {
                ino: Inotify::init().ok()?,
                wds: HashMap::new(),
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
                    self.wds.insert(d.to_path_buf(), wd);
                    true
                }
                Err(_) => false,
            }
        }

        pub fn remove(&mut self, d: &Path) {
            if let Some(wd) = self.wds.remove(d) {
                let _ = self.ino.watches().remove(wd);
            }
        }

        /// Reads every queued event without blocking; true when there were
        /// any (or reading failed).
        pub fn drain(&mut self) -> bool {
            let mut buf = [0u8; 4096];
            let mut any = false;
            loop {
                match self.ino.read_events(&mut buf) {
                    Ok(mut events) => {
                        if events.next().is_none() {
                            return any;
                        }
                        any = true;
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return any,
                    Err(_) => return true,
                }
            }
        }

        pub fn wait(&mut self, timeout: Option<Duration>) -> bool {
            if self.drain() {
                return true;
            }
            let limit = timeout.map(|t| Timespec {
                tv_sec: t.as_secs().min(i64::MAX as u64) as i64,
                tv_nsec: t.subsec_nanos().into(),
            });
            let mut fds = [PollFd::new(&self.ino, PollFlags::IN)];
            match poll(&mut fds, limit.as_ref()) {
                Ok(0) => false,
                Ok(_) => self.drain(),
                Err(_) => true,
            }
        }
    }
}

/// The `notify` backend: the only one off Linux, and compiled (and
/// tested) everywhere so it keeps building.
#[cfg_attr(target_os = "linux", allow(dead_code))]
mod portable {
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

        pub fn drain(&mut self) -> bool {
            let now = *self.seen.count.lock().unwrap_or_else(|p| p.into_inner());
            std::mem::replace(&mut self.looked, now) != now
        }

        pub fn wait(&mut self, timeout: Option<Duration>) -> bool {
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
            *guard != looked
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
            assert!(!b.drain());
            std::fs::write(dir.path().join("a.md"), "x").unwrap();
            assert!(b.wait(Some(Duration::from_secs(5))), "no event for a write");
            // Quiet again: the wait times out.
            while b.wait(Some(Duration::from_millis(100))) {}
            assert!(!b.wait(Some(Duration::from_millis(50))));
            // Reading is not a change.
            let _ = std::fs::read(dir.path().join("a.md")).unwrap();
            assert!(!b.wait(Some(Duration::from_millis(200))));
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
