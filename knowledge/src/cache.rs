//! A large folder's read model kept on disk between processes, so that a
//! new process answers its first search without reading every file.
//!
//! The cache of a folder is a store tenant (SQLite) in okfit's cache root
//! holding the folder's Markdown documents as last read, beside the stamps
//! (length and mtime) those files had and the store head they were saved
//! at. A process compares the folder's stamps with the saved ones and
//! reads only the files that differ; when the saved head is not the
//! store's head (another writer, or a sync cut short), every file is read
//! and compared by hash instead. Syncs of one folder take turns across
//! processes (a file lock), and a stamp is only ever older than the text
//! the store holds, so a mismatch costs a read, never a stale answer.

use crate::documents::Read;
use crate::tenant::StoreKb;
use okfit_core::bundle;
use okfit_core::kb::compile;
use okfit_core::kb::names;
use okfit_store::backend::Location;
use okfit_store::change::{sha256_hex, Change, CommitError, Pre};
use okfit_store::error::Error;
use okfit_store::live::LiveFolder;
use okfit_store::walk::Stamp;
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Folders with fewer Markdown documents are read into memory: reading
/// them takes less than opening a cache would save.
pub(crate) const MIN_DOCUMENTS: usize = 1_000;
/// Documents read and committed together by a sync.
const RUN: usize = 1_000;
/// A file modified this close to the save may change again within its
/// mtime's tick: its stamp is saved as unknown, so the next process reads
/// it.
const RACY: Duration = Duration::from_secs(2);
const STAMPS: &str = "stamps";
const STAMPS_HEADER: &str = "okfit folder stamps 1";
const LOCK: &str = "lock";

/// The stamps saved after a sync, and the store head they go with.
struct Saved {
    head: String,
    /// `None`: the file was modified too close to the save to trust.
    stamps: HashMap<String, Option<Stamp>>,
}

/// A folder's cache: its store tenant and where its stamps live.
pub(crate) struct Cache {
    dir: PathBuf,
    tenant: String,
    pub(crate) kb: StoreKb,
}

/// The cache folder of the bundle folder `root` (one per absolute path).
fn dir_of(root: &Path) -> Option<PathBuf> {
    let cache = okfit_store::dsn::default_cache_root()?;
    let canon = std::fs::canonicalize(root).ok()?;
    let key = sha256_hex(canon.to_string_lossy().as_bytes());
    Some(cache.join("folders").join(&key[..32]))
}

fn io(what: &str, path: &Path, e: std::io::Error) -> Error {
    Error::Io(format!("cannot {what} {} ({e})", path.display()))
}

/// Nanoseconds since the epoch of a stamp's mtime.
fn nanos(t: SystemTime) -> Option<i128> {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => Some(d.as_nanos() as i128),
        Err(e) => Some(-(e.duration().as_nanos() as i128)),
    }
}

fn time_of(n: i128) -> Option<SystemTime> {
    let d = Duration::from_nanos(u64::try_from(n.unsigned_abs()).ok()?);
    if n >= 0 {
        UNIX_EPOCH.checked_add(d)
    } else {
        UNIX_EPOCH.checked_sub(d)
    }
}

/// One stamp as saved: `len\tmtime-ns`, `-` for unknown parts.
fn render(st: Option<&Stamp>) -> String {
    match st {
        Some(Stamp {
            len,
            modified: Some(m),
        }) => match nanos(*m) {
            Some(n) => format!("{len}\t{n}"),
            None => "-\t-".into(),
        },
        Some(Stamp {
            len,
            modified: None,
        }) => format!("{len}\t-"),
        None => "-\t-".into(),
    }
}

fn parse_stamp(len: &str, mtime: &str) -> Option<Stamp> {
    let len = len.parse().ok()?;
    let modified = match mtime {
        "-" => None,
        n => Some(time_of(n.parse().ok()?)?),
    };
    Some(Stamp { len, modified })
}

fn parse_saved(text: &str) -> Option<Saved> {
    let mut lines = text.lines();
    if lines.next()? != STAMPS_HEADER {
        return None;
    }
    let head = lines.next()?.strip_prefix("head\t")?.to_string();
    let mut stamps = HashMap::new();
    for line in lines {
        let mut f = line.splitn(3, '\t');
        let (len, mtime, path) = (f.next()?, f.next()?, f.next()?);
        stamps.insert(path.to_string(), parse_stamp(len, mtime));
    }
    Some(Saved { head, stamps })
}

/// A document path a stamps line can hold (one line, tab-separated).
fn savable(rel: &str) -> bool {
    !rel.contains(['\t', '\n', '\r'])
}

/// Fills the cache of the folder at `root` (tenant `name`) on a thread of
/// its own: the next process that opens the folder reads it. A process
/// that exits first leaves what it committed; the next fill compares it by
/// hash and goes on.
pub(crate) fn fill(root: &Path, name: &str) {
    let (root, name) = (root.to_path_buf(), name.to_string());
    let run = move || {
        let Some(c) = Cache::open(&root, &name) else {
            return;
        };
        let mut folder = LiveFolder::new(root);
        if folder.refresh().is_ok() {
            let _ = c.reconcile(&mut folder);
        }
    };
    let _ = std::thread::Builder::new()
        .name("okfit-folder-cache".into())
        .spawn(run);
}

impl Cache {
    /// The cache of the folder at `root` served as tenant `name`, made if
    /// missing; `None` where there is no cache root (`OKFIT_CACHE=off`) or
    /// it cannot be written.
    pub(crate) fn open(root: &Path, name: &str) -> Option<Cache> {
        names::check_tenant(name).ok()?;
        let dir = dir_of(root)?;
        std::fs::create_dir_all(&dir).ok()?;
        // For people looking into the cache: which folder this is.
        let label = dir.join("folder");
        if !label.exists() {
            let _ = std::fs::write(label, root.to_string_lossy().as_bytes());
        }
        Some(Cache {
            kb: StoreKb::new(Location::Sqlite(dir.clone()), name.to_string()),
            tenant: name.to_string(),
            dir,
        })
    }

    /// Whether a cache was saved for the folder at `root`.
    pub(crate) fn exists(root: &Path) -> bool {
        dir_of(root).is_some_and(|d| d.join(STAMPS).is_file())
    }

    /// Holds the folder's sync turn until dropped (across processes).
    fn turn(&self) -> Result<File, Error> {
        let path = self.dir.join(LOCK);
        let f = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| io("open", &path, e))?;
        f.lock().map_err(|e| io("lock", &path, e))?;
        Ok(f)
    }

    fn saved(&self) -> Option<Saved> {
        parse_saved(&std::fs::read_to_string(self.dir.join(STAMPS)).ok()?)
    }

    /// The store's head now (`None`: no tenant yet).
    fn head(&self) -> Result<Option<String>, Error> {
        match Location::Sqlite(self.dir.clone()).open(&self.tenant, false) {
            Ok(s) => Ok(s.head()?.map(|h| h.revision)),
            Err(Error::NoTenant(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Saves the stamps of the folder's documents (as `folder` last saw
    /// them) with the store head they go with.
    fn save(&self, folder: &mut LiveFolder, head: &str) -> Result<(), Error> {
        let recent = SystemTime::now().checked_sub(RACY).unwrap_or(UNIX_EPOCH);
        let mut out = format!("{STAMPS_HEADER}\nhead\t{head}\n");
        for (rel, st) in folder.stamps() {
            if !bundle::is_document(rel) || !savable(rel) {
                continue;
            }
            let trusted = st.modified.is_some_and(|m| m < recent);
            out.push_str(&render(trusted.then_some(st)));
            out.push('\t');
            out.push_str(rel);
            out.push('\n');
        }
        let tmp = self
            .dir
            .join(format!("{STAMPS}.{}.tmp", std::process::id()));
        let target = self.dir.join(STAMPS);
        let write = || -> std::io::Result<()> {
            let mut f = File::create(&tmp)?;
            f.write_all(out.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &target)
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io("write", &target, e)
        })
    }

    /// Brings the store up to date with the folder as `folder` last saw
    /// it: the documents whose stamps differ from the saved ones are read
    /// (all of them when the saved stamps are not the store's), those whose
    /// text differs from the store's are committed, and documents the
    /// folder no longer has are deleted. The number of files read.
    pub(crate) fn reconcile(&self, folder: &mut LiveFolder) -> Result<u64, Error> {
        let _turn = self.turn()?;
        let docs: Vec<(String, Stamp)> = folder
            .stamps()
            .iter()
            .filter(|(rel, _)| bundle::is_document(rel))
            .map(|(rel, st)| (rel.clone(), *st))
            .collect();
        let mut lower = HashSet::new();
        for (rel, _) in &docs {
            names::check_path(rel).map_err(Error::Refused)?;
            if !lower.insert(rel.to_lowercase()) {
                return Err(Error::Refused(format!(
                    "{rel}: another document differs from it only in case"
                )));
            }
        }
        let mut head = self.head()?;
        let saved = self
            .saved()
            .filter(|s| head.as_deref() == Some(s.head.as_str()));
        let stale: Vec<(String, PathBuf)> = docs
            .iter()
            .filter(|(rel, st)| {
                let known = saved.as_ref().and_then(|s| s.stamps.get(rel.as_str()));
                known.is_none_or(|k| k.as_ref() != Some(st))
            })
            .map(|(rel, _)| (rel.clone(), folder.root().join(rel)))
            .collect();
        let present: HashSet<&str> = docs.iter().map(|(rel, _)| rel.as_str()).collect();
        let gone = match &saved {
            Some(s) => s.stamps.keys().any(|k| !present.contains(k.as_str())),
            // Not known: the store may hold any document.
            None => head.is_some(),
        };
        if stale.is_empty() && !gone && head.is_some() {
            return Ok(0);
        }
        let mut reads = 0;
        let runs: Vec<&[(String, PathBuf)]> = if stale.is_empty() {
            vec![&[]]
        } else {
            stale.chunks(RUN).collect()
        };
        for (i, run) in runs.into_iter().enumerate() {
            let read: Vec<Read> = run
                .par_iter()
                .map(|(rel, abs)| {
                    let r = okfit_store::walk::read_file(abs).map(Arc::from);
                    (rel.clone(), r)
                })
                .collect();
            let mut texts = vec![];
            // A file that cannot be read now is not shown (as a first read
            // into memory would not), and read again next time.
            let mut unreadable = vec![];
            for (rel, r) in &read {
                match r {
                    Ok(b) => {
                        reads += 1;
                        texts.push((rel.as_str(), &b[..]));
                    }
                    Err(_) => {
                        folder.forget(rel);
                        unreadable.push(rel.clone());
                    }
                }
            }
            let absent = (i == 0).then_some(&present);
            if let Some(h) = self.commit(&texts, &unreadable, absent)? {
                head = Some(h);
            }
        }
        if let Some(h) = head {
            self.save(folder, &h)?;
        }
        Ok(reads)
    }

    /// Commits a refresh: the files `read` again and the files `gone`.
    pub(crate) fn apply(
        &self,
        folder: &mut LiveFolder,
        gone: &[String],
        read: &[Read],
    ) -> Result<(), Error> {
        let _turn = self.turn()?;
        let mut docs = vec![];
        for (rel, r) in read {
            if !bundle::is_document(rel) {
                continue;
            }
            names::check_path(rel).map_err(Error::Refused)?;
            if let Ok(b) = r {
                docs.push((rel.as_str(), &b[..]));
            }
        }
        let mut head = None;
        let runs: Vec<&[(&str, &[u8])]> = if docs.is_empty() {
            vec![&[]]
        } else {
            docs.chunks(RUN).collect()
        };
        for (i, run) in runs.into_iter().enumerate() {
            let gone = if i == 0 { gone } else { &[] };
            if let Some(h) = self.commit(run, gone, None)? {
                head = Some(h);
            }
        }
        let head = match head {
            Some(h) => Some(h),
            None => self.head()?,
        };
        if let Some(h) = head {
            self.save(folder, &h)?;
        }
        Ok(())
    }

    /// Commits the documents `read` whose text differs from the store's,
    /// and deletes the documents `gone` and, with `present`, every stored
    /// document not in it. The store's head afterwards (`None`: no
    /// tenant, nothing to commit).
    fn commit(
        &self,
        read: &[(&str, &[u8])],
        gone: &[String],
        present: Option<&HashSet<&str>>,
    ) -> Result<Option<String>, Error> {
        let name = &self.tenant;
        let now = okfit_store::clock::wall_clock();
        // As a folder read into memory shows it: invalid UTF-8 replaced.
        let texts: Vec<(&str, String)> = read
            .par_iter()
            .map(|(rel, bytes)| (*rel, String::from_utf8_lossy(bytes).into_owned()))
            .collect();
        let r = self.kb.exclusive(true, |store, st| {
            let view = st
                .view
                .as_ref()
                .ok_or_else(|| Error::Store("store not loaded".into()))?;
            let model = &view.model;
            let stored = |rel: &str| {
                model
                    .slot_of(name, rel)
                    .and_then(|s| model.entry(s))
                    .map(|e| e.hash.as_str())
            };
            let mut changes: Vec<Change> = texts
                .iter()
                .filter(|(rel, text)| stored(rel) != Some(sha256_hex(text.as_bytes())).as_deref())
                .map(|(rel, text)| Change {
                    bundle: name.clone(),
                    path: rel.to_string(),
                    content: Some(text.clone().into_bytes()),
                    pre: Pre::Any,
                })
                .collect();
            let mut drop: BTreeMap<(String, String), ()> = BTreeMap::new();
            for rel in gone {
                if stored(rel).is_some() {
                    drop.insert((name.clone(), rel.clone()), ());
                }
            }
            if let Some(present) = present {
                for b in model.bundles() {
                    for (p, _) in model.bundle_docs(b) {
                        if b != name || !present.contains(p) {
                            drop.insert((b.to_string(), p.to_string()), ());
                        }
                    }
                }
            }
            changes.extend(drop.into_keys().map(|(bundle, path)| Change {
                bundle,
                path,
                content: None,
                pre: Pre::Any,
            }));
            if changes.is_empty() {
                return Ok(st.head.as_ref().map(|h| h.revision.clone()));
            }
            let compiled = changes
                .par_iter()
                .map(|c| {
                    let text = c.content.as_deref().map(String::from_utf8_lossy);
                    text.map(|t| compile::compile(&c.path, &t))
                })
                .collect();
            st.commit(store, name, &changes, compiled, None, now)?;
            // A cache keeps no history: only the newest revision and the
            // contents it uses (the head stays).
            let _ = store.gc(1);
            Ok(st.head.as_ref().map(|h| h.revision.clone()))
        });
        r.map_err(|e| match e {
            CommitError::Other(e) => e,
            CommitError::Precondition { failure, .. } => Error::Conflict(failure.message),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stamps_read_back_as_saved() {
        let t = UNIX_EPOCH + Duration::new(1_700_000_000, 123_456_789);
        let st = Stamp {
            len: 42,
            modified: Some(t),
        };
        let text = format!(
            "{STAMPS_HEADER}\nhead\tabc\n{}\ta/b.md\n{}\tc d.md\n",
            render(Some(&st)),
            render(None)
        );
        let saved = parse_saved(&text).expect("parses");
        assert_eq!(saved.head, "abc");
        assert_eq!(saved.stamps.get("a/b.md"), Some(&Some(st)));
        assert_eq!(saved.stamps.get("c d.md"), Some(&None));
        let before = UNIX_EPOCH - Duration::new(5, 7);
        let old = Stamp {
            len: 0,
            modified: Some(before),
        };
        let line = render(Some(&old));
        let (len, mtime) = line.split_once('\t').expect("two fields");
        assert_eq!(parse_stamp(len, mtime), Some(old));
    }

    #[test]
    fn other_saved_text_is_not_trusted() {
        assert!(parse_saved("").is_none());
        assert!(parse_saved("okfit folder stamps 0\nhead\tx\n").is_none());
        assert!(parse_saved(&format!("{STAMPS_HEADER}\nhead\tx\n1\t2\n")).is_none());
    }
}
