//! `<data>/sources.json` (`{"<tenant>": "/abs/folder"}`): folders a running
//! daemon imports at start and keeps in sync with a debounced watcher.
//! Every immediate non-hidden subfolder of a folder is a bundle. The last
//! imported hash of each file is remembered, so an unchanged folder file
//! never overwrites an edit made through the store, a change on both sides
//! is reported and nothing is imported, and documents that exist only in
//! the store stay.

use crate::state::Daemon;
use okfit_knowledge::kb::Knowledge;
use okfit_store::change::{sha256_hex, Change, Pre};
use okfit_store::error::Error;
use okfit_store::live::LiveFolder;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

type Key = (String, String);

fn baseline_path(data: &Path, tenant: &str) -> PathBuf {
    okfit_store::sqlite::tenant_dir(data, tenant).join("imports.json")
}

fn read_baseline(data: &Path, tenant: &str) -> BTreeMap<Key, String> {
    let Ok(text) = std::fs::read_to_string(baseline_path(data, tenant)) else {
        return BTreeMap::new();
    };
    let v: Vec<(String, String, String)> = serde_json::from_str(&text).unwrap_or_default();
    v.into_iter().map(|(b, p, h)| ((b, p), h)).collect()
}

fn write_baseline(data: &Path, tenant: &str, base: &BTreeMap<Key, String>) {
    let path = baseline_path(data, tenant);
    let v: Vec<(&str, &str, &str)> = base
        .iter()
        .map(|((b, p), h)| (b.as_str(), p.as_str(), h.as_str()))
        .collect();
    let rel = format!("tenants/{tenant}/imports.json");
    let text = serde_json::to_string(&v).unwrap_or_default();
    if let Err(e) =
        okfit_store::beneath::Root::open(data).and_then(|r| r.write(&rel, text.as_bytes(), &rel))
    {
        eprintln!("okfit serve: cannot record {}: {e}", path.display());
    }
}

/// The `(bundle, path)` a file of a sources folder stands for: a Markdown
/// document in an immediate subfolder named like a bundle.
fn key(rel: &str) -> Option<Key> {
    let (bundle, path) = rel.split_once('/')?;
    let ok = okfit_core::kb::names::check_bundle(bundle).is_ok()
        && path.to_ascii_lowercase().ends_with(".md")
        && okfit_core::kb::names::check_path(path).is_ok();
    ok.then(|| (bundle.to_string(), path.to_string()))
}

/// Reads the document `k` of the folder at `root` if it is UTF-8 text.
fn read_document(root: &Path, k: &Key) -> Option<Vec<u8>> {
    std::fs::read(root.join(&k.0).join(&k.1))
        .ok()
        .filter(|b| std::str::from_utf8(b).is_ok())
}

/// A sources folder, read live: the hash of every document as last read,
/// and the bytes of those the last refresh read. Its [`LiveFolder`] says
/// which files changed, so a sync reads only those, once.
struct Folder {
    live: LiveFolder,
    hashes: BTreeMap<Key, String>,
    fresh: BTreeMap<Key, Vec<u8>>,
}

impl Folder {
    fn new(root: &Path) -> Folder {
        Folder {
            live: LiveFolder::new(root.to_path_buf()),
            hashes: BTreeMap::new(),
            fresh: BTreeMap::new(),
        }
    }

    /// Reads the documents that changed since the last refresh.
    fn refresh(&mut self) -> Result<(), Error> {
        self.fresh.clear();
        let Some(delta) = self.live.refresh()? else {
            return Ok(());
        };
        for rel in &delta.gone {
            if let Some(k) = key(rel) {
                self.hashes.remove(&k);
            }
        }
        for (rel, abs) in &delta.changed {
            let Some(k) = key(rel) else { continue };
            match std::fs::read(abs) {
                Ok(b) if std::str::from_utf8(&b).is_ok() => {
                    self.hashes.insert(k.clone(), sha256_hex(&b));
                    self.fresh.insert(k, b);
                }
                Ok(_) => {
                    self.hashes.remove(&k);
                }
                Err(_) => {
                    self.hashes.remove(&k);
                    self.live.forget(rel);
                }
            }
        }
        Ok(())
    }
}

/// What one sync did.
#[derive(Debug, Default)]
pub struct Synced {
    /// Documents written.
    pub written: usize,
    /// Documents deleted.
    pub deleted: usize,
    /// `bundle/path` changed on both sides (nothing was imported).
    pub conflicts: Vec<String>,
}

/// Brings a tenant up to date with its folder.
fn sync(kb: &Knowledge, data: &Path, tenant: &str, folder: &mut Folder) -> Result<Synced, Error> {
    folder.refresh()?;
    let db: BTreeMap<Key, String> = match kb.list_sources() {
        Ok(v) => v.into_iter().map(|(b, p, h)| ((b, p), h)).collect(),
        Err(Error::NoTenant(_)) => BTreeMap::new(),
        Err(e) => return Err(e),
    };
    let mut base = read_baseline(data, tenant);
    let mut changes = vec![];
    let mut conflicts = vec![];
    let mut next = base.clone();
    for (k, h) in &folder.hashes {
        let dbh = db.get(k);
        let old = base.get(k);
        if dbh == Some(h) {
            next.insert(k.clone(), h.clone());
            continue;
        }
        if old == Some(h) {
            continue; // the folder did not change: the store's edit stays
        }
        // The bytes this refresh read; a file read by an earlier one (its
        // import was held back) is read again.
        let again;
        let bytes = match folder.fresh.get(k) {
            Some(b) => b,
            None => match read_document(folder.live.root(), k) {
                Some(b) => {
                    again = b;
                    &again
                }
                None => continue,
            },
        };
        let h = sha256_hex(bytes);
        match (dbh, old) {
            (None, None) => changes.push(Change {
                bundle: k.0.clone(),
                path: k.1.clone(),
                content: Some(bytes.clone()),
                pre: Pre::Create,
            }),
            (Some(d), Some(o)) if d == o => changes.push(Change {
                bundle: k.0.clone(),
                path: k.1.clone(),
                content: Some(bytes.clone()),
                pre: Pre::Hash(d.clone()),
            }),
            (Some(d), None) => {
                // Never imported, yet present in both with other bytes.
                let _ = d;
                conflicts.push(format!("{}/{}", k.0, k.1));
                continue;
            }
            _ => {
                conflicts.push(format!("{}/{}", k.0, k.1));
                continue;
            }
        }
        next.insert(k.clone(), h);
    }
    for (k, old) in &base {
        if folder.hashes.contains_key(k) {
            continue;
        }
        match db.get(k) {
            Some(d) if d == old => {
                changes.push(Change {
                    bundle: k.0.clone(),
                    path: k.1.clone(),
                    content: None,
                    pre: Pre::Hash(d.clone()),
                });
                next.remove(k);
            }
            Some(_) => conflicts.push(format!("{}/{}", k.0, k.1)),
            None => {
                next.remove(k);
            }
        }
    }
    if !conflicts.is_empty() {
        return Ok(Synced {
            conflicts,
            ..Synced::default()
        });
    }
    let written = changes.iter().filter(|c| c.content.is_some()).count();
    let deleted = changes.len() - written;
    if !changes.is_empty() {
        kb.commit(changes, None).map_err(|e| match e {
            okfit_store::change::CommitError::Precondition { failure, .. } => {
                Error::Conflict(failure.message)
            }
            okfit_store::change::CommitError::Other(e) => e,
        })?;
    }
    base = next;
    write_baseline(data, tenant, &base);
    Ok(Synced {
        written,
        deleted,
        conflicts: vec![],
    })
}

fn report(tenant: &str, folder: &Path, r: &Result<Synced, Error>) {
    match r {
        Ok(s) if !s.conflicts.is_empty() => eprintln!(
            "{tenant}: conflict: {} changed both in {} and in the store since the last import; nothing was imported (resolve one side, then save again)",
            s.conflicts.join(", "),
            folder.display()
        ),
        Ok(s) if s.written + s.deleted > 0 => eprintln!(
            "{tenant}: imported {} written, {} deleted from {}",
            s.written,
            s.deleted,
            folder.display()
        ),
        Ok(_) => {}
        Err(e) => eprintln!("{tenant}: import from {} failed: {e}", folder.display()),
    }
}

/// Reads sources.json, imports each folder and starts its watcher;
/// returns how many tenants are watched.
pub fn start(daemon: &Arc<Daemon>, data: &Path, debounce_ms: u64) -> Result<usize, Error> {
    let path = data.join("sources.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(_) => return Ok(0),
    };
    let map: BTreeMap<String, String> = serde_json::from_str(&text).map_err(|_| {
        Error::Refused(format!(
            "{}: must be a JSON object of tenant to absolute folder",
            path.display()
        ))
    })?;
    let mut n = 0;
    for (tenant, folder) in map {
        okfit_core::kb::names::check_tenant(&tenant)
            .map_err(|e| Error::Refused(format!("{}: {e}", path.display())))?;
        let folder = PathBuf::from(folder);
        if !folder.is_absolute() || !folder.is_dir() {
            return Err(Error::Refused(format!(
                "{}: tenant {tenant} names {}, which is not an absolute folder",
                path.display(),
                folder.display()
            )));
        }
        let kb = daemon.tenant(&tenant)?.writer().clone();
        let mut live = Folder::new(&folder);
        let r = sync(&kb, data, &tenant, &mut live);
        report(&tenant, &folder, &r);
        if !live.live.watching() {
            return Err(Error::Io(format!("cannot watch {}", folder.display())));
        }
        eprintln!("watching {} for tenant {tenant}", folder.display());
        watch(kb, data.to_path_buf(), tenant, live, debounce_ms);
        n += 1;
    }
    Ok(n)
}

fn watch(kb: Arc<Knowledge>, data: PathBuf, tenant: String, mut folder: Folder, debounce_ms: u64) {
    std::thread::spawn(move || loop {
        if !folder.live.poll() {
            folder.live.wait(None);
        }
        // Debounce: wait until the folder is quiet.
        while folder.live.wait(Some(Duration::from_millis(debounce_ms))) {}
        // The waits consumed the events: look at the folder regardless.
        // New directories are covered by the walk, and covering one counts
        // as a change, so the loop syncs again.
        folder.live.touch();
        let r = sync(&kb, &data, &tenant, &mut folder);
        report(&tenant, folder.live.root(), &r);
    });
}
