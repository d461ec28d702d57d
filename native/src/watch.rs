//! Change notification for folders read live: on Linux an inotify watch on
//! every directory; the kernel queues the event inside the writing syscall,
//! so a non-blocking read before each answer sees every change made before
//! the request. Elsewhere every look reports a possible change and callers
//! re-check file metadata.

use std::path::PathBuf;

/// Whether anything under a folder changed since the last look.
#[cfg(target_os = "linux")]
pub struct Watch {
    ino: inotify::Inotify,
}

#[cfg(target_os = "linux")]
impl Watch {
    /// Watches `dirs`; `None` when watching is not possible.
    pub fn new(dirs: &[PathBuf]) -> Option<Watch> {
        use inotify::WatchMask as M;
        let ino = inotify::Inotify::init().ok()?;
        let mask = M::MODIFY
            | M::ATTRIB
            | M::CLOSE_WRITE
            | M::CREATE
            | M::DELETE
            | M::MOVED_FROM
            | M::MOVED_TO
            | M::DELETE_SELF
            | M::MOVE_SELF;
        for d in dirs {
            // Past the kernel's watch limit, fall back to metadata checks.
            ino.watches().add(d, mask).ok()?;
        }
        Some(Watch { ino })
    }

    /// Drains pending events; true when there were any (or reading failed).
    pub fn changed(&mut self) -> bool {
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
}

/// Whether anything under a folder changed since the last look.
#[cfg(not(target_os = "linux"))]
pub struct Watch;

#[cfg(not(target_os = "linux"))]
impl Watch {
    /// Watching is not available here.
    pub fn new(_dirs: &[PathBuf]) -> Option<Watch> {
        None
    }

    /// Always true: callers re-check metadata.
    pub fn changed(&mut self) -> bool {
        true
    }
}
