//! A folder read live: the one view of a folder's files that project mode,
//! folder connections and the daemon's sources.json imports all keep.
//!
//! A [`LiveFolder`] remembers each file's [`Stamp`] (length and mtime) and
//! holds the folder's [`Watch`]. [`LiveFolder::refresh`] walks the folder
//! only when the watch saw something (or where watching is not exact), and
//! answers with the files whose stamp changed and the files that went, so
//! a reader parses only what changed. Where the watch says exactly which
//! directories' files changed, only those directories are listed again.
//! New directories are covered by the watch as the walk finds them (the
//! watch handles the race of a file written into a directory before its
//! watch exists).

use crate::error::Error;
use crate::walk;
use crate::watch::{Changes, Watch};
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
    /// What to look at again at the next refresh, besides what the watch
    /// says.
    pending: Changes,
    /// The last walk listed a file that is a symbolic link: its target
    /// can change without an event in its directory, so every refresh
    /// walks the whole folder.
    linked: bool,
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
            pending: Changes::Nothing,
            linked: false,
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
    /// changed since. The watch's events are kept for the next refresh.
    pub fn poll(&mut self) -> bool {
        let seen = self
            .watch
            .as_mut()
            .map_or(Changes::Anything, Watch::changes);
        self.pending.merge(seen);
        self.looked && self.pending.any()
    }

    /// Our own write changed files: the next refresh walks without waiting
    /// for the watch's event.
    pub fn touch(&mut self) {
        self.pending = Changes::Anything;
    }

    /// Forgets the stamp of `rel` (it could not be read): the next refresh
    /// reports it again if it is still there.
    pub fn forget(&mut self, rel: &str) {
        self.stamps.remove(rel);
        self.pending = Changes::Anything;
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
        let mut seen = std::mem::take(&mut self.pending);
        if self.looked {
            seen.merge(
                self.watch
                    .as_mut()
                    .map_or(Changes::Anything, Watch::changes),
            );
            match &seen {
                Changes::Nothing => return Ok(None),
                Changes::In(dirs) if !self.linked && self.unreadable.is_empty() => {
                    if let Some(delta) = self.refresh_in(dirs) {
                        return Ok(Some(delta));
                    }
                }
                _ => {}
            }
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
        self.linked = walked.linked;
        Ok(Some(delta))
    }

    /// A refresh that lists again only `dirs`, the watched directories
    /// whose files changed; `None` when that cannot be trusted (a
    /// directory could not be listed in full, holds a link, or has a
    /// subdirectory the watch does not cover), and the whole folder must
    /// be walked instead.
    fn refresh_in(&mut self, dirs: &std::collections::BTreeSet<PathBuf>) -> Option<Delta> {
        let watch = self.watch.as_ref()?;
        let canon_root = std::fs::canonicalize(&self.root).ok()?;
        let mut listed = Vec::with_capacity(dirs.len());
        for dir in dirs {
            let rel = posix_rel(&self.root, dir)?;
            let again = walk::relist(&canon_root, dir, &rel).ok()?;
            if again.linked || !again.dirs.iter().all(|d| watch.covers(d)) {
                return None;
            }
            listed.push((rel, again.files));
        }
        let mut delta = Delta::default();
        for (rel, files) in listed {
            let prefix = if rel.is_empty() {
                String::new()
            } else {
                format!("{rel}/")
            };
            let mut old: std::collections::BTreeSet<String> = self
                .stamps
                .range(prefix.clone()..)
                .take_while(|(k, _)| k.starts_with(&prefix))
                .filter(|(k, _)| !k[prefix.len()..].contains('/'))
                .map(|(k, _)| k.clone())
                .collect();
            for (file, abs, stamp) in files {
                let Some(stamp) = stamp else {
                    continue;
                };
                old.remove(&file);
                if self.stamps.get(&file) != Some(&stamp) {
                    self.stamps.insert(file.clone(), stamp);
                    delta.changed.push((file, abs));
                }
            }
            for gone in old {
                self.stamps.remove(&gone);
                delta.gone.push(gone);
            }
        }
        delta.changed.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        delta.gone.sort_unstable();
        Some(delta)
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

/// `dir`'s path below `root` as the walk names it ("" for the root);
/// `None` when it is not below `root` or not UTF-8.
fn posix_rel(root: &Path, dir: &Path) -> Option<String> {
    let below = dir.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = below.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
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

    /// The changed and gone files of a refresh.
    fn seen(f: &mut LiveFolder) -> (Vec<String>, Vec<String>) {
        let d = f.refresh().unwrap().unwrap_or_default();
        (d.changed.into_iter().map(|(r, _)| r).collect(), d.gone)
    }

    /// Waits for the watch's first event (it is kept for the refresh).
    fn settle_events(f: &mut LiveFolder) {
        if cfg!(target_os = "linux") {
            assert!(f.wait(Some(Duration::from_secs(5))));
        }
    }

    #[test]
    fn files_changed_in_one_directory_are_found_by_listing_it_alone() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        for d in ["a", "b"] {
            std::fs::create_dir(root.join(d)).unwrap();
        }
        for (name, text) in [
            ("a/1.md", "1"),
            ("a/2.md", "2"),
            ("b/3.md", "3"),
            ("top.md", "t"),
        ] {
            std::fs::write(root.join(name), text).unwrap();
        }
        let mut f = LiveFolder::new(root.clone());
        assert_eq!(seen(&mut f).0.len(), 4);
        std::fs::write(root.join("a/1.md"), "one, longer").unwrap();
        std::fs::remove_file(root.join("a/2.md")).unwrap();
        std::fs::write(root.join("a/4.md"), "4").unwrap();
        settle_events(&mut f);
        // A stamp the walk would find wrong, in a directory with no event:
        // only a refresh that lists the whole folder reports it.
        f.stamps.insert("b/3.md".into(), UNKNOWN);
        let (changed, gone) = seen(&mut f);
        if cfg!(target_os = "linux") {
            assert_eq!(changed, ["a/1.md", "a/4.md"]);
        } else {
            assert_eq!(changed, ["a/1.md", "a/4.md", "b/3.md"]);
        }
        assert_eq!(gone, ["a/2.md"]);
        assert_eq!(
            f.files().collect::<Vec<_>>(),
            ["a/1.md", "a/4.md", "b/3.md", "top.md"]
        );
        // A change at the root is found the same way.
        std::fs::write(root.join("top.md"), "top, longer").unwrap();
        settle_events(&mut f);
        assert_eq!(seen(&mut f).0, ["top.md"]);
        // Stamps taken this way are the files' own.
        f.touch();
        let _ = seen(&mut f);
        for (rel, st) in f.stamps() {
            assert_eq!(Some(*st), Stamp::of(&root.join(rel)), "{rel}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_with_a_linked_file_is_walked_whole_on_every_change() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().to_path_buf();
        std::fs::create_dir(root.join("a")).unwrap();
        std::fs::write(root.join("a/1.md"), "1").unwrap();
        let mut f = LiveFolder::new(root.clone());
        let _ = seen(&mut f);
        std::os::unix::fs::symlink(root.join("a/1.md"), root.join("link.md")).unwrap();
        settle_events(&mut f);
        assert_eq!(seen(&mut f).0, ["link.md"]);
        // The target changes: its link, in another directory, changed too.
        std::fs::write(root.join("a/1.md"), "one, longer").unwrap();
        settle_events(&mut f);
        assert_eq!(seen(&mut f).0, ["a/1.md", "link.md"]);
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
