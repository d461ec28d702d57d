//! The knowledge commands of the `okfit` CLI: `put`, `import`, `export`,
//! `manifest`, `search`, `get`, `snapshot`. Output meant for machines goes
//! to stdout; counts and notes to stderr.

use crate::dsn::{self, Dsn};
use crate::error::Error;
use crate::kb::{Change, CommitError, GetOptions, Knowledge, Pre};
use clap::Args;
use okfit_core::kb::names;
use okfit_core::kb::search;
use okfit_core::kb::slice::SliceOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Which knowledge a command works on.
#[derive(Args, Debug, Clone, Default)]
pub struct ConnArgs {
    /// Connection string (okf:///abs/bundle, okf:///abs/data?tenant=t, okf://?tenant=t).
    #[arg(long, short = 'c', value_name = "DSN")]
    pub connection: Option<String>,
    /// Data root of the embedded store (default: OKFIT_DATA, else the platform data directory).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Tenant of the embedded store.
    #[arg(long, value_name = "TENANT")]
    pub tenant: Option<String>,
}

impl ConnArgs {
    /// The connection: `--connection`, else `--tenant` (with `--data`),
    /// else the project's bundle folder.
    pub fn dsn(&self) -> Result<Dsn, Error> {
        if let Some(c) = &self.connection {
            if self.tenant.is_some() || self.data.is_some() {
                return Err(Error::Usage(
                    "give either --connection or --data/--tenant, not both".into(),
                ));
            }
            return dsn::parse(c).map_err(Error::Usage);
        }
        if let Some(t) = &self.tenant {
            names::check_tenant(t).map_err(Error::Usage)?;
            let root = match &self.data {
                Some(d) => crate::discover::absolute(d),
                None => dsn::default_data_root().map_err(Error::Usage)?,
            };
            return Ok(Dsn::Store {
                root,
                tenant: t.clone(),
            });
        }
        if self.data.is_some() {
            return Err(Error::Usage("--data needs --tenant".into()));
        }
        let start = crate::discover::env_start();
        let p = crate::discover::resolve(None, &start, None)?;
        let root = std::fs::canonicalize(&p.bundle_root).unwrap_or(p.bundle_root);
        Ok(Dsn::Folder { path: root })
    }

    fn store(&self) -> Result<Dsn, Error> {
        match self.dsn()? {
            d @ Dsn::Store { .. } => Ok(d),
            other => Err(Error::Usage(format!(
                "this command writes into a store: give --tenant (and --data) or a connection with ?tenant= (got {other})"
            ))),
        }
    }
}

/// `okfit put DIR`.
#[derive(Args, Debug)]
pub struct PutArgs {
    /// The bundle folder to store.
    pub dir: PathBuf,
    /// Bundle name (default: the folder's name).
    #[arg(long)]
    pub bundle: Option<String>,
    #[command(flatten)]
    /// Which knowledge.
    pub conn: ConnArgs,
}

/// `okfit import DIR`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// A folder whose immediate non-hidden subfolders are bundles.
    pub dir: PathBuf,
    #[command(flatten)]
    /// Which knowledge.
    pub conn: ConnArgs,
}

/// `okfit export DIR`.
#[derive(Args, Debug)]
pub struct ExportArgs {
    /// A new directory to write every bundle into (refused if it exists).
    pub dir: PathBuf,
    #[command(flatten)]
    /// Which knowledge.
    pub conn: ConnArgs,
}

/// `okfit manifest`.
#[derive(Args, Debug)]
pub struct ManifestArgs {
    /// Only this bundle's rows.
    #[arg(long)]
    pub bundle: Option<String>,
    #[command(flatten)]
    /// Which knowledge.
    pub conn: ConnArgs,
}

/// `okfit search WORDS…`.
#[derive(Args, Debug)]
pub struct SearchArgs {
    /// The query.
    #[arg(required = true)]
    pub words: Vec<String>,
    /// Ranked matches before link expansion (1-50).
    #[arg(long, short = 'k', default_value_t = search::DEFAULT_K)]
    pub k: usize,
    /// Rank within this bundle.
    #[arg(long)]
    pub bundle: Option<String>,
    #[command(flatten)]
    /// Which knowledge.
    pub conn: ConnArgs,
}

/// `okfit get IDS…`.
#[derive(Args, Debug)]
pub struct GetArgs {
    /// Concept ids.
    #[arg(required = true)]
    pub ids: Vec<String>,
    /// One named section.
    #[arg(long)]
    pub section: Option<String>,
    /// Character offset to start from.
    #[arg(long)]
    pub offset: Option<u64>,
    /// Maximum characters per concept.
    #[arg(long)]
    pub limit: Option<u64>,
    /// Literal case-insensitive phrase to locate.
    #[arg(long)]
    pub find: Option<String>,
    #[command(flatten)]
    /// Which knowledge.
    pub conn: ConnArgs,
}

/// `okfit snapshot`.
#[derive(Args, Debug)]
pub struct SnapshotArgs {
    #[command(flatten)]
    /// Which knowledge.
    pub conn: ConnArgs,
}

fn out(text: &str) -> Result<(), Error> {
    let mut o = std::io::stdout().lock();
    o.write_all(text.as_bytes())
        .and_then(|_| o.flush())
        .map_err(|e| Error::Io(format!("cannot write output ({e})")))
}

fn commit_error(e: CommitError, changes: &[Change]) -> Error {
    match e {
        CommitError::Precondition { index, failure } => {
            let c = &changes[index];
            let mut m = format!("{}/{}: {}", c.bundle, c.path, failure.message);
            if let Some(h) = failure.current {
                m.push_str(&format!("\nretry with replaces: \"{h}\""));
            }
            Error::Refused(m)
        }
        CommitError::Other(e) => e,
    }
}

/// Reads a bundle folder: `(path, bytes)` of every `.md` file, names
/// checked; other files are counted and skipped.
/// `(path, bytes)` pairs of a bundle read from disk.
type Docs = Vec<(String, Vec<u8>)>;

fn read_bundle(dir: &Path) -> Result<(Docs, usize), Error> {
    let walked = crate::walk::walk(dir)?;
    let mut docs = vec![];
    let mut skipped = 0;
    for (rel, abs) in walked.files {
        if !rel.to_ascii_lowercase().ends_with(".md") {
            skipped += 1;
            continue;
        }
        names::check_path(&rel).map_err(Error::Refused)?;
        let bytes = std::fs::read(&abs).map_err(|e| Error::FileUnreadable {
            rel: rel.clone(),
            root: dir.to_path_buf(),
            source: e,
        })?;
        if std::str::from_utf8(&bytes).is_err() {
            return Err(Error::Refused(format!(
                "{}: not valid UTF-8; nothing was stored",
                abs.display()
            )));
        }
        docs.push((rel, bytes));
    }
    Ok((docs, skipped))
}

/// The changes that make `bundle` hold exactly `docs`.
fn bundle_changes(kb: &Knowledge, bundle: &str, docs: Docs) -> Result<(Vec<Change>, usize), Error> {
    let existing: std::collections::HashMap<String, String> = match kb.list_sources() {
        Ok(v) => v
            .into_iter()
            .filter(|(b, _, _)| b == bundle)
            .map(|(_, p, h)| (p, h))
            .collect(),
        Err(Error::Refused(_)) => Default::default(),
        Err(e) => return Err(e),
    };
    let mut changes = vec![];
    let mut unchanged = 0;
    let mut keep = std::collections::HashSet::new();
    for (path, bytes) in docs {
        keep.insert(path.clone());
        if existing.get(&path) == Some(&crate::kb::sha256_hex(&bytes)) {
            unchanged += 1;
            continue;
        }
        changes.push(Change {
            bundle: bundle.to_string(),
            path,
            content: Some(bytes),
            pre: Pre::Any,
        });
    }
    let mut gone: Vec<&String> = existing.keys().filter(|p| !keep.contains(*p)).collect();
    gone.sort();
    for p in gone {
        changes.push(Change {
            bundle: bundle.to_string(),
            path: p.clone(),
            content: None,
            pre: Pre::Any,
        });
    }
    Ok((changes, unchanged))
}

fn report_commit(
    kb: &Knowledge,
    changes: Vec<Change>,
    unchanged: usize,
    what: &str,
) -> Result<i32, Error> {
    let written = changes.iter().filter(|c| c.content.is_some()).count();
    let deleted = changes.len() - written;
    if changes.is_empty() {
        let (s, n) = kb.snapshot()?;
        eprintln!(
            "{what}: nothing changed ({unchanged} unchanged); snapshot {}, {n} concepts",
            &s[..12]
        );
        return Ok(0);
    }
    let c = kb
        .commit(changes.clone(), None)
        .map_err(|e| commit_error(e, &changes))?;
    eprintln!(
        "{what}: {written} written, {deleted} deleted, {unchanged} unchanged; snapshot {}, {} concepts",
        &c.snapshot[..12],
        c.concepts
    );
    Ok(0)
}

/// `okfit put`.
pub fn put(a: PutArgs) -> Result<i32, Error> {
    let dsn = a.conn.store()?;
    let dir = crate::discover::absolute(&a.dir);
    let bundle = match &a.bundle {
        Some(b) => b.clone(),
        None => dir
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or("")
            .to_string(),
    };
    names::check_bundle(&bundle).map_err(|e| {
        Error::Refused(if a.bundle.is_none() {
            format!("{e}; name the bundle with --bundle")
        } else {
            e
        })
    })?;
    let (docs, skipped) = read_bundle(&dir)?;
    if skipped > 0 {
        eprintln!("skipped {skipped} file(s) that are not .md");
    }
    let kb = Knowledge::from_dsn(dsn)?;
    let (changes, unchanged) = bundle_changes(&kb, &bundle, docs)?;
    report_commit(&kb, changes, unchanged, &format!("put {bundle}"))
}

/// `okfit import`: every immediate non-hidden subfolder is a bundle; one
/// commit for all of them.
pub fn import(a: ImportArgs) -> Result<i32, Error> {
    let dsn = a.conn.store()?;
    let dir = crate::discover::absolute(&a.dir);
    let mut subdirs: Vec<(String, PathBuf)> = vec![];
    let rd = std::fs::read_dir(&dir).map_err(|_| Error::BundleNotDirectory(dir.clone()))?;
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') || name == "node_modules" {
            continue;
        }
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            names::check_bundle(&name).map_err(|m| {
                Error::Refused(format!(
                    "{m}; rename the folder {} or import it with okfit put --bundle",
                    e.path().display()
                ))
            })?;
            subdirs.push((name, e.path()));
        }
    }
    subdirs.sort();
    if subdirs.is_empty() {
        return Err(Error::Refused(format!(
            "{} has no bundle folders: import stores each immediate subfolder as a bundle",
            dir.display()
        )));
    }
    let kb = Knowledge::from_dsn(dsn)?;
    let mut all = vec![];
    let mut unchanged = 0;
    let mut skipped = 0;
    for (name, path) in &subdirs {
        let (docs, s) = read_bundle(path)?;
        skipped += s;
        let (c, u) = bundle_changes(&kb, name, docs)?;
        all.extend(c);
        unchanged += u;
    }
    if skipped > 0 {
        eprintln!("skipped {skipped} file(s) that are not .md");
    }
    let names: Vec<&str> = subdirs.iter().map(|(n, _)| n.as_str()).collect();
    report_commit(&kb, all, unchanged, &format!("import {}", names.join(" ")))
}

/// `okfit export`: the exact bytes of every document into a new directory.
pub fn export(a: ExportArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    let dir = crate::discover::absolute(&a.dir);
    if dir.exists() {
        return Err(Error::Refused(format!(
            "export target {} already exists; choose a new directory",
            dir.display()
        )));
    }
    let sources = kb.list_sources()?;
    std::fs::create_dir_all(&dir)
        .map_err(|e| Error::Io(format!("cannot create {} ({e})", dir.display())))?;
    let mut n = 0;
    for (b, p, _) in &sources {
        let Some((bytes, _)) = kb.read_source(b, p)? else {
            continue;
        };
        let target = dir.join(b).join(p);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent)
                .map_err(|e| Error::Io(format!("cannot create {} ({e})", parent.display())))?;
        }
        std::fs::write(&target, &bytes)
            .map_err(|e| Error::Io(format!("cannot write {} ({e})", target.display())))?;
        n += 1;
    }
    eprintln!("exported {n} documents to {}", dir.display());
    Ok(0)
}

/// `okfit manifest`.
pub fn manifest(a: ManifestArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    let m = kb.manifest(a.bundle.as_deref())?;
    out(&m)?;
    let (_, n) = kb.snapshot()?;
    let chars = m.encode_utf16().count();
    eprintln!(
        "{n} concepts, {} bytes, ~{} tokens",
        m.len(),
        chars.div_ceil(4)
    );
    Ok(0)
}

/// `okfit search`.
pub fn search_cmd(a: SearchArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    let q = a.words.join(" ");
    out(&kb.search(&q, a.k, a.bundle.as_deref())?)?;
    Ok(0)
}

/// `okfit get`: exit 1 when an id (or its section) is missing.
pub fn get(a: GetArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    let opts = GetOptions {
        section: a.section.clone(),
        slice: SliceOptions {
            offset: a.offset,
            limit: a.limit,
            find: a.find.clone(),
        },
    };
    let (_, missing) = kb.get_slices(&a.ids, &opts)?;
    let mut text = kb.get(&a.ids, &opts)?;
    text.push('\n');
    out(&text)?;
    for m in &missing {
        eprintln!("warn: no such concept or section: {m}");
    }
    Ok(if missing.is_empty() { 0 } else { 1 })
}

/// `okfit snapshot`.
pub fn snapshot(a: SnapshotArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    let (s, n) = kb.snapshot()?;
    out(&format!("{s}\t{n} concepts\n"))?;
    Ok(0)
}
