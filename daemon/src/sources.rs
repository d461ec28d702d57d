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
use okfit_store::walk::walk;
use okfit_store::watch::Watch;
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

/// The documents of a sources folder: `(bundle, path) → bytes`.
fn read_folder(dir: &Path) -> Result<BTreeMap<Key, Vec<u8>>, Error> {
    let mut out = BTreeMap::new();
    let rd = std::fs::read_dir(dir)
        .map_err(|e| Error::Io(format!("cannot read {} ({e})", dir.display())))?;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.')
            || name == "node_modules"
            || !e.file_type().is_ok_and(|t| t.is_dir())
        {
            continue;
        }
        if okfit_core::kb::names::check_bundle(&name).is_err() {
            continue;
        }
        let walked = okfit_store::walk::walk(&e.path())?;
        for (rel, abs) in walked.files {
            if !rel.to_ascii_lowercase().ends_with(".md")
                || okfit_core::kb::names::check_path(&rel).is_err()
            {
                continue;
            }
            if let Ok(b) = std::fs::read(&abs) {
                if std::str::from_utf8(&b).is_ok() {
                    out.insert((name.clone(), rel), b);
                }
            }
        }
    }
    Ok(out)
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
pub fn sync(kb: &Knowledge, data: &Path, tenant: &str, folder: &Path) -> Result<Synced, Error> {
    let files = read_folder(folder)?;
    let db: BTreeMap<Key, String> = match kb.list_sources() {
        Ok(v) => v.into_iter().map(|(b, p, h)| ((b, p), h)).collect(),
        Err(Error::NoTenant(_)) => BTreeMap::new(),
        Err(e) => return Err(e),
    };
    let mut base = read_baseline(data, tenant);
    let mut changes = vec![];
    let mut conflicts = vec![];
    let mut next = base.clone();
    for (k, bytes) in &files {
        let h = sha256_hex(bytes);
        let dbh = db.get(k);
        let old = base.get(k);
        if dbh == Some(&h) {
            next.insert(k.clone(), h);
            continue;
        }
        if old == Some(&h) {
            continue; // the folder did not change: the store's edit stays
        }
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
        if files.contains_key(k) {
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
        let r = sync(&kb, data, &tenant, &folder);
        report(&tenant, &folder, &r);
        eprintln!("watching {} for tenant {tenant}", folder.display());
        watch(kb, data.to_path_buf(), tenant, folder, debounce_ms)?;
        n += 1;
    }
    Ok(n)
}

fn watch(
    kb: Arc<Knowledge>,
    data: PathBuf,
    tenant: String,
    folder: PathBuf,
    debounce_ms: u64,
) -> Result<(), Error> {
    let cannot = || Error::Io(format!("cannot watch {}", folder.display()));
    let mut w = Watch::new(&walk(&folder)?.dirs).ok_or_else(cannot)?;
    std::thread::spawn(move || loop {
        if !w.changed() {
            w.wait(None);
        }
        // Debounce: wait until the folder is quiet.
        while w.wait(Some(Duration::from_millis(debounce_ms))) {}
        let r = sync(&kb, &data, &tenant, &folder);
        report(&tenant, &folder, &r);
        // Directories made since the last walk get watches of their own;
        // covering one counts as a change, so the loop syncs again.
        if let Ok(walked) = walk(&folder) {
            w.cover(&walked.dirs);
        }
    });
    Ok(())
}
