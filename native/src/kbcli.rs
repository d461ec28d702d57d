//! The knowledge commands of the `okfit` CLI: `put`, `import`, `export`,
//! `manifest`, `search`, `get`, `snapshot`. Output meant for machines goes
//! to stdout; counts and notes to stderr.

use clap::Args;
use okfit_core::kb::names;
use okfit_core::kb::search;
use okfit_core::kb::slice::SliceOptions;
use okfit_knowledge::{GetOptions, Knowledge};
use okfit_store::change::{Change, Pre};
use okfit_store::dsn::{self, Dsn};
use okfit_store::error::Error;
use okfit_store::progress::Task;
use okfit_tools::knowledge::commit_error;
use std::io::Write;
use std::path::{Path, PathBuf};

/// Which knowledge a command works on.
#[derive(Args, Debug, Clone, Default)]
pub struct ConnArgs {
    /// Connection string (okf:///abs/bundle, okf:///abs/data?tenant=t, okf://?tenant=t,
    /// okf+unix:///path.sock?tenant=t, okf+https://host:port?token=...).
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
                Some(d) => okfit_store::discover::absolute(d),
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
        let start = okfit_store::discover::env_start();
        let p = okfit_store::discover::resolve(None, &start, None)?;
        let root = std::fs::canonicalize(&p.bundle_root).unwrap_or(p.bundle_root);
        Ok(Dsn::Folder { path: root })
    }

    fn store(&self) -> Result<Dsn, Error> {
        match self.dsn()? {
            d @ (Dsn::Store { .. } | Dsn::Postgres { .. }) => Ok(d),
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
    /// Instead of the hits, print why each ranks where it does: its score
    /// broken down by query term (a stem) and by field (names: id and
    /// title; fields: kind, description, tags, aliases, headings; body).
    #[arg(long)]
    pub explain: bool,
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
        .map_err(crate::shared::out_err)
}

/// Reads a bundle folder: `(path, bytes)` of every `.md` file, names
/// checked; other files are counted and skipped.
/// `(path, bytes)` pairs of a bundle read from disk.
type Docs = Vec<(String, Vec<u8>)>;

fn read_bundle(dir: &Path) -> Result<(Docs, usize), Error> {
    let walked = okfit_store::walk::walk(dir)?;
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
        Err(Error::NoTenant(_)) => Default::default(),
        Err(e) => return Err(e),
    };
    let mut changes = vec![];
    let mut unchanged = 0;
    let mut keep = std::collections::HashSet::new();
    for (path, bytes) in docs {
        keep.insert(path.clone());
        if existing.get(&path) == Some(&okfit_store::change::sha256_hex(&bytes)) {
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
    let dir = okfit_store::discover::absolute(&a.dir);
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
    let dir = okfit_store::discover::absolute(&a.dir);
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
    let reading = Task::begin("reading", None);
    for (name, path) in &subdirs {
        let (docs, s) = read_bundle(path)?;
        reading.advance(docs.len() as u64);
        skipped += s;
        let (c, u) = bundle_changes(&kb, name, docs)?;
        all.extend(c);
        unchanged += u;
    }
    drop(reading);
    if skipped > 0 {
        eprintln!("skipped {skipped} file(s) that are not .md");
    }
    let names: Vec<&str> = subdirs.iter().map(|(n, _)| n.as_str()).collect();
    report_commit(&kb, all, unchanged, &format!("import {}", names.join(" ")))
}

/// `okfit export`: the exact bytes of every document into a new directory.
pub fn export(a: ExportArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    let dir = okfit_store::discover::absolute(&a.dir);
    if dir.exists() {
        return Err(Error::Refused(format!(
            "export target {} already exists; choose a new directory",
            dir.display()
        )));
    }
    let sources = kb.list_sources()?;
    if let Some(parent) = dir.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::Io(format!("cannot create {} ({e})", parent.display())))?;
    }
    // A new directory, claimed atomically; everything below it is written
    // without following links.
    std::fs::create_dir(&dir)
        .map_err(|e| Error::Io(format!("cannot create {} ({e})", dir.display())))?;
    let root = okfit_store::beneath::Root::open(&dir)?;
    let mut n = 0;
    let task = Task::begin("exporting", Some(sources.len() as u64));
    for (b, p, _) in &sources {
        task.advance(1);
        let Some((bytes, _)) = kb.read_source(b, p)? else {
            continue;
        };
        let rel = format!("{b}/{p}");
        root.write(&rel, &bytes, &rel)?;
        n += 1;
    }
    drop(task);
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
    if a.explain {
        let hits = kb.explain(&q, a.k, a.bundle.as_deref())?;
        out(&render_explained(&q, &hits))?;
    } else {
        out(&kb.search(&q, a.k, a.bundle.as_deref())?)?;
    }
    Ok(0)
}

/// `okfit search --explain`'s table: per hit a total row (term `*`), then
/// one row per query term it holds, each score split over the fields.
fn render_explained(query: &str, hits: &[okfit_core::kb::model::Explained]) -> String {
    let terms = search::query_terms(query).join(" ");
    let mut s = format!(
        "# query: {}\n# terms: {terms}\n# hits: {}\nrank\tid\tterm\tidf\ttf\tscore\tnames\tfields\tbody\n",
        okfit_core::kb::text::flatten(query),
        hits.len()
    );
    for (rank, h) in hits.iter().enumerate() {
        let sum = |i: usize| h.parts.iter().map(|p| p.fields[i]).sum::<f64>();
        s.push_str(&format!(
            "{}\t{}\t*\t-\t-\t{:.4}\t{:.4}\t{:.4}\t{:.4}\n",
            rank + 1,
            h.id,
            h.score,
            sum(0),
            sum(1),
            sum(2)
        ));
        for p in &h.parts {
            s.push_str(&format!(
                "{}\t{}\t{}\t{:.4}\t{}\t{:.4}\t{:.4}\t{:.4}\t{:.4}\n",
                rank + 1,
                h.id,
                p.term,
                p.idf,
                p.tf,
                p.score,
                p.fields[0],
                p.fields[1],
                p.fields[2]
            ));
        }
    }
    s
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
    if a.ids.is_empty() {
        return Err(Error::Usage("get needs at least one id".into()));
    }
    // One read: the slices, then the same framing the get tool answers with.
    let (found, missing) = kb.get_slices(&a.ids, &opts)?;
    let f: Vec<(&str, &okfit_core::kb::slice::Slice)> =
        found.iter().map(|(i, s)| (i.as_str(), s)).collect();
    let m: Vec<&str> = missing.iter().map(String::as_str).collect();
    let mut text = okfit_core::kb::slice::render(&f, &m);
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

/// `okfit write BUNDLE PATH`.
#[derive(Args, Debug)]
pub struct WriteArgs {
    /// Bundle.
    pub bundle: String,
    /// Path inside the bundle (ends in .md).
    pub path: String,
    /// Read the content from this file (default: stdin).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// The concept must not exist yet.
    #[arg(long)]
    pub create: bool,
    /// What may be replaced.
    #[command(flatten)]
    pub guard: Guard,
}

/// `okfit delete BUNDLE PATH`.
#[derive(Args, Debug)]
pub struct DeleteArgs {
    /// Bundle.
    pub bundle: String,
    /// Path inside the bundle.
    pub path: String,
    /// What may be removed.
    #[command(flatten)]
    pub guard: Guard,
}

/// The precondition of `okfit write` and `okfit delete`, and the
/// connection they change.
#[derive(Args, Debug)]
pub struct Guard {
    /// The hash of the version this replaces or removes.
    #[arg(long, value_name = "HASH")]
    pub replaces: Option<String>,
    /// Overwrite or remove whatever is there.
    #[arg(long)]
    pub force: bool,
    /// Which knowledge.
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `okfit transact`.
#[derive(Args, Debug)]
pub struct TransactArgs {
    /// Read the JSON batch `{changes: [...], expectedRevision?}` from this file (default: stdin).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Which knowledge.
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `okfit history`.
#[derive(Args, Debug)]
pub struct HistoryArgs {
    /// Page size (1-100).
    #[arg(long, default_value_t = 20)]
    pub limit: usize,
    /// The cursor of the next page.
    #[arg(long, value_name = "CURSOR")]
    pub before: Option<String>,
    /// Which knowledge.
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `okfit restore REV --expected-revision CUR`.
#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The retained revision to publish again.
    pub revision: Option<String>,
    /// The current head revision.
    #[arg(long, value_name = "REV")]
    pub expected_revision: Option<String>,
    /// Which knowledge.
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `okfit gc`.
#[derive(Args, Debug)]
pub struct GcArgs {
    /// Revisions to keep.
    #[arg(long, default_value_t = 10)]
    pub keep: usize,
    /// Which knowledge.
    #[command(flatten)]
    pub conn: ConnArgs,
}

/// `okfit verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Which knowledge.
    #[command(flatten)]
    pub conn: ConnArgs,
}

fn read_input(from: Option<&Path>) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    match from {
        Some(p) => {
            std::fs::read(p).map_err(|e| Error::Io(format!("cannot read {} ({e})", p.display())))
        }
        None => {
            let mut b = vec![];
            std::io::stdin()
                .read_to_end(&mut b)
                .map_err(|e| Error::Io(format!("cannot read stdin ({e})")))?;
            Ok(b)
        }
    }
}

fn current_hash(kb: &Knowledge, bundle: &str, path: &str) -> Result<Option<String>, Error> {
    match kb.read_source(bundle, path) {
        Ok(v) => Ok(v.map(|(_, h)| h)),
        Err(Error::NoTenant(_) | Error::Refused(_)) => Ok(None),
        Err(e) => Err(e),
    }
}

/// `okfit write`.
pub fn write(a: WriteArgs) -> Result<i32, Error> {
    let given = [a.create, a.guard.replaces.is_some(), a.guard.force]
        .iter()
        .filter(|b| **b)
        .count();
    if given != 1 {
        return Err(Error::Usage(
            "a write needs --replaces <hash> to update, --create for a new concept, or --force to overwrite whatever is there".into(),
        ));
    }
    let kb = Knowledge::from_dsn(a.guard.conn.dsn()?)?;
    let content = read_input(a.from.as_deref())?;
    if content.len() > okfit_store::change::MAX_DOCUMENT_BYTES {
        return Err(Error::Refused("a document may be at most 16 MiB".into()));
    }
    let pre = if a.create {
        Pre::Create
    } else if let Some(h) = &a.guard.replaces {
        Pre::Hash(h.clone())
    } else {
        match current_hash(&kb, &a.bundle, &a.path)? {
            Some(h) => Pre::Hash(h),
            None => Pre::Create,
        }
    };
    let changes = vec![Change {
        bundle: a.bundle.clone(),
        path: a.path.clone(),
        content: Some(content.clone()),
        pre,
    }];
    let c = kb
        .commit(changes.clone(), None)
        .map_err(|e| commit_error(e, &changes))?;
    let hash = c.hashes.first().cloned().flatten().unwrap_or_default();
    eprintln!("wrote {}/{} {hash}", a.bundle, a.path);
    let text = String::from_utf8_lossy(&content);
    for f in kb
        .diagnostics_for(&a.bundle, &a.path, &text)
        .unwrap_or_default()
    {
        eprintln!("{f}");
    }
    Ok(0)
}

/// `okfit delete`.
pub fn delete(a: DeleteArgs) -> Result<i32, Error> {
    if a.guard.replaces.is_some() == a.guard.force {
        return Err(Error::Usage(
            "delete needs --replaces <hash> or --force".into(),
        ));
    }
    let kb = Knowledge::from_dsn(a.guard.conn.dsn()?)?;
    let pre = match &a.guard.replaces {
        Some(h) => Pre::Hash(h.clone()),
        None => match current_hash(&kb, &a.bundle, &a.path)? {
            Some(h) => Pre::Hash(h),
            None => {
                return Err(Error::Refused(format!(
                    "{}/{}: concept does not exist",
                    a.bundle, a.path
                )))
            }
        },
    };
    let changes = vec![Change {
        bundle: a.bundle.clone(),
        path: a.path.clone(),
        content: None,
        pre,
    }];
    kb.commit(changes.clone(), None)
        .map_err(|e| commit_error(e, &changes))?;
    eprintln!("deleted {}/{}", a.bundle, a.path);
    Ok(0)
}

/// Runs a catalogue tool and prints its answer as one line.
fn tool_line(kb: &Knowledge, tool: &str, args: &serde_json::Value) -> Result<i32, Error> {
    let answer = okfit_tools::knowledge::call(kb, tool, args)?;
    out(&format!("{answer}\n"))?;
    Ok(0)
}

/// `okfit transact`: one JSON line on stdout.
pub fn transact(a: TransactArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    let input = read_input(a.from.as_deref())?;
    let v: serde_json::Value = serde_json::from_slice(&input)
        .map_err(|e| Error::Refused(format!("the batch is not valid JSON ({e})")))?;
    tool_line(&kb, "transact", &v)
}

/// `okfit history`: one JSON line.
pub fn history(a: HistoryArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    tool_line(
        &kb,
        "history",
        &serde_json::json!({"before": a.before, "limit": a.limit}),
    )
}

/// `okfit restore`: one JSON line.
pub fn restore(a: RestoreArgs) -> Result<i32, Error> {
    let (Some(rev), Some(exp)) = (&a.revision, &a.expected_revision) else {
        return Err(Error::Usage(
            "restore requires a revision and --expected-revision <current revision>".into(),
        ));
    };
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    tool_line(
        &kb,
        "restore",
        &serde_json::json!({"revision": rev, "expectedRevision": exp}),
    )
}

/// `okfit gc`.
pub fn gc(a: GcArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    let (revisions, contents) = kb.gc(a.keep)?;
    eprintln!(
        "{}: removed {revisions} revision(s) and {contents} unreferenced content(s), kept up to {}",
        kb.name(),
        a.keep
    );
    out(&format!(
        "{}\n",
        serde_json::json!({"removedRevisions": revisions, "removedContents": contents, "keep": a.keep})
    ))?;
    Ok(0)
}

/// `okfit verify`: one JSON line; exit 1 when anything is wrong.
pub fn verify(a: VerifyArgs) -> Result<i32, Error> {
    let kb = Knowledge::from_dsn(a.conn.dsn()?)?;
    let v = kb.verify()?;
    out(&format!(
        "{}\n",
        serde_json::to_string(&v).unwrap_or_default()
    ))?;
    Ok(if v.ok { 0 } else { 1 })
}

/// `okfit serve`.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Data root (default: OKFIT_DATA, else the platform data directory).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// Keep the tenants in this PostgreSQL database (postgres://user@host:5432/db)
    /// instead of SQLite files under the data root.
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
    /// Listen on this unix socket (default: <data>/okfit.sock).
    #[arg(long, value_name = "PATH")]
    pub socket: Option<PathBuf>,
    /// Listen on TCP instead (needs tokens; off loopback, TLS too).
    #[arg(long, value_name = "HOST:PORT")]
    pub listen: Option<String>,
    /// PEM certificate chain for TLS.
    #[arg(long, value_name = "FILE")]
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for TLS.
    #[arg(long, value_name = "FILE")]
    pub tls_key: Option<PathBuf>,
    /// Quiet time before a watched sources folder is imported, in ms.
    #[arg(long, default_value_t = 200, value_name = "MS")]
    pub debounce: u64,
    /// Connections served at once; more wait until one closes.
    #[arg(long, default_value_t = okfit_daemon::serve::MAX_CONNECTIONS, value_name = "N",
          value_parser = clap::value_parser!(usize))]
    pub max_connections: usize,
    /// Idle tenants kept open, most recently used first; others are closed
    /// and opened again on their next request.
    #[arg(long, default_value_t = okfit_daemon::serve::WARM_TENANTS, value_name = "N",
          value_parser = clap::value_parser!(usize))]
    pub warm_tenants: usize,
    /// Search postings the warm-up at start holds in memory at most, over
    /// the tenants it warms (about 5 bytes each); a tenant whose postings
    /// fit is searched without reading the store, the others read each
    /// word's postings on its first search. 0 holds none.
    #[arg(long, default_value_t = okfit_daemon::serve::WARM_POSTINGS, value_name = "N",
          value_parser = clap::value_parser!(usize))]
    pub warm_postings: usize,
    /// A `Host` MCP accepts besides this machine's names and --listen's
    /// host (repeatable): the name clients reach the server by.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// A browser origin MCP accepts, as scheme://host:port (repeatable);
    /// a request from any other page gets 403.
    #[arg(long = "allowed-origin", value_name = "ORIGIN")]
    pub allowed_origins: Vec<String>,
    /// MCP requests per second each credential may make (twice as many in
    /// a burst); past it, 429 with Retry-After. 0: no limit.
    #[arg(long, default_value_t = okfit_daemon::serve::RATE_LIMIT, value_name = "N")]
    pub rate_limit: u32,
    /// Accept access tokens (JWTs) from this OAuth authorization server
    /// too (its issuer identifier); needs --jwks and --audience.
    #[arg(long, value_name = "URL", requires_all = ["jwks", "audience"])]
    pub oauth_issuer: Option<String>,
    /// The issuer's signing keys: a JWKS file or URL.
    #[arg(long, value_name = "FILE|URL", requires = "oauth_issuer")]
    pub jwks: Option<String>,
    /// This server's resource URL, the audience its tokens must name
    /// (e.g. https://kb.example.com/mcp).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    pub audience: Option<String>,
}

/// `okfit token`.
#[derive(Args, Debug)]
pub struct TokenArgs {
    /// Data root (default: OKFIT_DATA, else the platform data directory).
    #[arg(long, value_name = "DIR")]
    pub data: Option<PathBuf>,
    /// The tenant the token reads.
    #[arg(long)]
    pub tenant: String,
    /// Let the token write too.
    #[arg(long)]
    pub write: bool,
    /// Offer the token the database tools over MCP (history; transact and
    /// restore with --write).
    #[arg(long)]
    pub database: bool,
}

fn data_root(d: &Option<PathBuf>) -> Result<PathBuf, Error> {
    match d {
        Some(d) => Ok(okfit_store::discover::absolute(d)),
        None => dsn::default_data_root().map_err(Error::Usage),
    }
}

/// `okfit serve`.
pub fn serve(a: ServeArgs) -> Result<i32, Error> {
    crate::memory::return_freed_memory_promptly();
    okfit_daemon::serve::run(okfit_daemon::serve::ServeOptions {
        data: data_root(&a.data)?,
        store: a.store,
        socket: a.socket,
        listen: a.listen,
        tls_cert: a.tls_cert,
        tls_key: a.tls_key,
        debounce_ms: a.debounce,
        max_connections: a.max_connections,
        warm_tenants: a.warm_tenants,
        warm_postings: a.warm_postings,
        allowed_hosts: a.allowed_hosts,
        allowed_origins: a.allowed_origins,
        rate_limit: a.rate_limit,
        oauth: match (a.oauth_issuer, a.jwks, a.audience) {
            (Some(issuer), Some(jwks), Some(audience)) => Some(okfit_daemon::serve::OAuthOptions {
                issuer,
                jwks,
                audience,
            }),
            _ => None,
        },
    })
}

/// `okfit token`: the token alone on stdout.
pub fn token(a: TokenArgs) -> Result<i32, Error> {
    let data = data_root(&a.data)?;
    let t = okfit_daemon::serve::mint_token(&data, &a.tenant, a.write, a.database)?;
    out(&format!("{t}\n"))?;
    eprintln!(
        "recorded a {}{} grant for {} in {}. A running server reads that file only at startup, so restart it before the token works",
        if a.write { "read-write" } else { "read-only" },
        if a.database { " (with the database tools)" } else { "" },
        a.tenant,
        data.join("tokens.json").display()
    );
    Ok(0)
}
