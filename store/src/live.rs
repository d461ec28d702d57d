//! A folder read live: the one view of a folder's files that project mode,
//! folder connections and the daemon's sources.json imports all keep.
//!
//! A [`LiveFolder`] remembers each file's [`Stamp`] (length and mtime) and
//! holds the folder's [`Watch`]. [`LiveFolder::refresh`] walks the folder
//! only when the watch saw something (or where watching is not exact), and
//! answers with the files whose stamp changed and the files that went, so
//! a reader parses only what changed. New directories are covered by the
//! watch as the walk finds them (the watch handles the race of a file
//! written into a directory before its watch exists).

use crate::error::Error;
use crate::walk;
use crate::watch::Watch;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

pub use crate::walk::Stamp;

/// What changed in a folder since the last refresh.
#[derive(Debug, Default)]
pub struct Delta {
    /// Files new or changed: `(folder-relative posix path, absolute path)`,
    /// sorted by path.
    pub changed: Vec<(String, PathBuf)>,
    /// Files that are gone, sorted.
    pub gone: Vec<String>,
}

impl Delta {
    /// True when nothing changed.
    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.gone.is_empty()
    }
}

/// A folder's files as last seen, and the watch that says when to look
/// again.
pub struct LiveFolder {
    root: PathBuf,
    stamps: BTreeMap<String, Stamp>,
    watch: Option<Watch>,
    /// Look again at the next refresh, whatever the watch says.
    stale: bool,
    /// The folder was walked at least once.
    looked: bool,
}

impl LiveFolder {
    /// A folder not yet looked at: the first refresh reports every file.
    pub fn new(root: PathBuf) -> LiveFolder {
        LiveFolder {
            root,
            stamps: BTreeMap::new(),
            watch: None,
            stale: false,
            looked: false,
        }
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Every file the last refresh found (folder-relative, sorted).
    pub fn files(&self) -> impl Iterator<Item = &String> {
        self.stamps.keys()
    }

    /// Every file the last refresh found, with its stamp.
    pub fn stamps(&self) -> &BTreeMap<String, Stamp> {
        &self.stamps
    }

    /// True when the folder has been looked at and something may have
    /// changed since. Consumes the watch's events (the next refresh walks).
    pub fn poll(&mut self) -> bool {
        self.stale |= self.watch.as_mut().is_none_or(Watch::changed);
        self.looked && self.stale
    }

    /// Our own write changed files: the next refresh walks without waiting
    /// for the watch's event.
    pub fn touch(&mut self) {
        self.stale = true;
    }

    /// Forgets the stamp of `rel` (it could not be read): the next refresh
    /// reports it again if it is still there.
    pub fn forget(&mut self, rel: &str) {
        self.stamps.remove(rel);
        self.stale = true;
    }

    /// Brings the stamps up to date; `None` when the watch says nothing
    /// happened since the last refresh.
    pub fn refresh(&mut self) -> Result<Option<Delta>, Error> {
        let forced = std::mem::take(&mut self.stale);
        if self.looked && !forced && self.watch.as_mut().is_some_and(|w| !w.changed()) {
            return Ok(None);
        }
        let (walked, stamps) = walk::walk_stamped(&self.root)?;
        // Watch every directory before stamping: a change made while the
        // files are stamped is an event for the next refresh.
        if !self.watch.as_mut().is_some_and(|w| w.cover(&walked.dirs)) {
            self.watch = Watch::new(&walked.dirs);
        }
        self.looked = true;
        let mut next = BTreeMap::new();
        let mut delta = Delta::default();
        for ((rel, abs), st) in walked.files.into_iter().zip(stamps) {
            let Some(st) = st else { continue };
            if self.stamps.get(&rel) != Some(&st) {
                delta.changed.push((rel.clone(), abs));
            }
            next.insert(rel, st);
        }
        delta.gone = self
            .stamps
            .keys()
            .filter(|k| !next.contains_key(*k))
            .cloned()
            .collect();
        self.stamps = next;
        Ok(Some(delta))
    }

    /// True when the folder is watched (after the first refresh, where
    /// the platform allows it); otherwise every refresh walks.
    pub fn watching(&self) -> bool {
        self.watch.is_some()
    }

    /// Blocks until the watch sees an event or `timeout` passes; true when
    /// one arrived. Without a watch it sleeps `timeout` (a second when
    /// `None`) and says no.
    pub fn wait(&mut self, timeout: Option<Duration>) -> bool {
        match self.watch.as_mut() {
            Some(w) => w.wait(timeout),
            None => {
                std::thread::sleep(timeout.unwrap_or(Duration::from_secs(1)));
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reports_each_change_once() {
        let tmp = tempfile::tempdir().unwrap();
        let mut f = LiveFolder::new(tmp.path().to_path_buf());
        let root = f.root().to_path_buf();
        std::fs::write(root.join("a.md"), "a").unwrap();
        assert!(!f.poll(), "nothing to say before the first look");
        let d = f.refresh().unwrap().unwrap();
        assert_eq!(d.changed.len(), 1);
        assert!(f.refresh().unwrap().is_none_or(|d| d.is_empty()));
        // A file written into a new directory is found.
        std::fs::create_dir(root.join("sub")).unwrap();
        std::fs::write(root.join("sub/b.md"), "b").unwrap();
        assert!(f.poll());
        let d = f.refresh().unwrap().unwrap();
        let changed: Vec<&str> = d.changed.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(changed, ["sub/b.md"]);
        std::fs::remove_file(root.join("a.md")).unwrap();
        assert!(f.wait(Some(Duration::from_secs(5))));
        let d = f.refresh().unwrap().unwrap();
        assert_eq!(d.gone, ["a.md"]);
        assert_eq!(f.files().collect::<Vec<_>>(), ["sub/b.md"]);
        // A forgotten file is reported again.
        f.forget("sub/b.md");
        let d = f.refresh().unwrap().unwrap();
        assert_eq!(d.changed.len(), 1);
    }
}
