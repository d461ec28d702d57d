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

/// The stamp of a file listed but not stamped yet: equal to no file's
/// real stamp, so the next refresh reports the file again.
const UNKNOWN: Stamp = Stamp {
    len: u64::MAX,
    modified: None,
};

/// A folder's files as last seen, and the watch that says when to look
/// again.
pub struct LiveFolder {
    root: PathBuf,
    stamps: BTreeMap<String, Stamp>,
    /// Folder-relative directories the last walk could not read.
    unreadable: Vec<String>,
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
            unreadable: vec![],
            watch: None,
            stale: false,
            looked: false,
        }
    }

    /// The folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// True once the folder has been walked.
    pub fn looked(&self) -> bool {
        self.looked
    }

    /// Every file the last refresh found (folder-relative, sorted).
    pub fn files(&self) -> impl Iterator<Item = &String> {
        self.stamps.keys()
    }

    /// Every file the last refresh found, with its stamp: a file left for
    /// a reader that has not read it yet (see
    /// [`LiveFolder::refresh_reading`]) is stamped through its path first,
    /// so a caller can compare these with stamps saved elsewhere.
    pub fn stamps(&mut self) -> &BTreeMap<String, Stamp> {
        self.settle();
        &self.stamps
    }

    /// The folder-relative directories the last walk could not read
    /// (their files are not listed).
    pub fn unreadable(&self) -> &[String] {
        &self.unreadable
    }

    /// Records the stamps a caller took of the files it read (see
    /// [`LiveFolder::refresh_reading`]), in path order, in one pass. Only
    /// stamps still unknown are filled: a known one may be older than what
    /// another reader holds, and replacing it could hide a change from
    /// that reader. A file not listed is ignored; one out of order is left
    /// unknown, so it is only read again later.
    pub fn record(&mut self, stamps: impl IntoIterator<Item = (String, Stamp)>) {
        let mut mine = self.stamps.iter_mut();
        let mut at = mine.next();
        for (rel, stamp) in stamps {
            while at.as_ref().is_some_and(|(k, _)| k.as_str() < rel.as_str()) {
                at = mine.next();
            }
            if let Some((k, s)) = at.as_mut() {
                if **k == rel && **s == UNKNOWN {
                    **s = stamp;
                }
            }
        }
    }

    /// Stamps, through their paths, the files still unknown.
    fn settle(&mut self) {
        use rayon::prelude::*;
        let root = &self.root;
        let mut unknown: Vec<(&String, &mut Stamp)> = self
            .stamps
            .iter_mut()
            .filter(|(_, s)| **s == UNKNOWN)
            .collect();
        unknown.par_iter_mut().for_each(|(rel, s)| {
            if let Some(st) = Stamp::of(&root.join(rel.as_str())) {
                **s = st;
            }
        });
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
        self.refresh_reading(&|_| false)
    }

    /// [`LiveFolder::refresh`] for a caller about to read every file
    /// `reads` picks: on the first look the walk leaves those unstamped,
    /// for the caller to [`LiveFolder::record`] each stamp from the open
    /// file as it reads it (much cheaper than a stamp taken by name). A
    /// file left unrecorded is reported again by the next refresh. Later
    /// refreshes stamp every file.
    pub fn refresh_reading(&mut self, reads: &walk::Picker<'_>) -> Result<Option<Delta>, Error> {
        let forced = std::mem::take(&mut self.stale);
        if self.looked && !forced && self.watch.as_mut().is_some_and(|w| !w.changed()) {
            return Ok(None);
        }
        let first = !self.looked;
        let (walked, stamps) = if first {
            walk::walk_stamped_where(&self.root, &|rel| !reads(rel))?
        } else {
            walk::walk_stamped(&self.root)?
        };
        // Every directory is watched before any caller reads: a change
        // made from here on is an event for the next refresh. The watches
        // are added while the stamps are compared (no file is touched).
        let watch = &mut self.watch;
        let dirs = &walked.dirs;
        let old = &self.stamps;
        let compare = || {
            let mut next = Vec::with_capacity(walked.files.len());
            let mut delta = Delta::default();
            for ((rel, abs), st) in walked.files.into_iter().zip(stamps) {
                let st = match st {
                    Some(st) => st,
                    None if first && reads(&rel) => UNKNOWN,
                    None => continue,
                };
                if old.get(&rel) != Some(&st) {
                    delta.changed.push((rel.clone(), abs));
                }
                next.push((rel, st));
            }
            // The walk lists the files in path order: the map is built in
            // one pass, not 10,000 searches.
            let next: BTreeMap<String, Stamp> = next.into_iter().collect();
            delta.gone = old
                .keys()
                .filter(|k| !next.contains_key(*k))
                .cloned()
                .collect();
            (next, delta)
        };
        let cover = || {
            if !watch.as_mut().is_some_and(|w| w.cover(dirs)) {
                *watch = Watch::new(dirs);
            }
        };
        let ((), (next, delta)) = rayon::join(cover, compare);
        self.looked = true;
        self.stamps = next;
        self.unreadable = walked.unreadable;
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

    #[test]
    fn files_a_reader_stamps_are_reported_again_until_recorded() {
        let tmp = tempfile::tempdir().unwrap();
        let mut f = LiveFolder::new(tmp.path().to_path_buf());
        let root = f.root().to_path_buf();
        for name in ["a.md", "b.md", "c.png"] {
            std::fs::write(root.join(name), name).unwrap();
        }
        let reads = |rel: &str| rel.ends_with(".md");
        let d = f.refresh_reading(&reads).unwrap().unwrap();
        assert_eq!(d.changed.len(), 3);
        let (_, stamp) = crate::walk::read_file_stamped(&root.join("a.md")).unwrap();
        f.record([("a.md".to_string(), stamp), ("gone.md".to_string(), stamp)]);
        f.touch();
        let d = f.refresh_reading(&reads).unwrap().unwrap();
        let changed: Vec<&str> = d.changed.iter().map(|(r, _)| r.as_str()).collect();
        assert_eq!(changed, ["b.md"], "only the file left unrecorded");
        assert_eq!(f.files().count(), 3);
        f.touch();
        assert!(f.refresh().unwrap().unwrap().is_empty());
        // Settled, the stamps are the files' own.
        let mut g = LiveFolder::new(root.clone());
        g.refresh_reading(&reads).unwrap();
        for (rel, st) in g.stamps() {
            assert_eq!(Some(*st), Stamp::of(&root.join(rel)), "{rel}");
        }
    }
}
