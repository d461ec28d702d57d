//! `okfit sync`: regenerates what is derived from the concepts, in a fixed
//! order: `generated` stamps (`at` + `body_sha256`), each concept
//! directory's `index.md`, then the root `log.md`. Every write is atomic
//! and never passes through a symbolic link.

use crate::shared::{bundle_project, envelope_head, print_json, shown, Common};
use clap::{Args, ValueEnum};
use okfit_core::bundle::Bundle;
use okfit_core::derive::{self, IndexEntry};
use okfit_core::doc::{self, file_body_digest, Kind};
use okfit_core::splice::{self, StampError};
use okfit_core::time::{self, Instant};
use okfit_knowledge::project::{self, LoadOptions};
use okfit_store::beneath::Root;
use okfit_store::clock::resolve_now;
use okfit_store::discover::Project;
use okfit_store::error::Error;
use okfit_store::git::{self, Provenance, RepoState};
use serde_json::{json, Value};
use std::collections::{BTreeMap, BTreeSet};

/// A part of `okfit sync`.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq, PartialOrd, Ord)]
pub enum Mode {
    /// `generated.at` and `generated.body_sha256` of each concept.
    Generated,
    /// Each concept directory's `index.md`.
    Index,
    /// Dated groups appended to the root `log.md` from git history.
    Log,
}

/// Output format.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// Lines for a person.
    Human,
    /// The `SyncEnvelope`.
    Json,
}

/// `okfit sync`.
#[derive(Args, Debug)]
pub struct SyncArgs {
    /// Where.
    #[command(flatten)]
    pub common: Common,
    /// Run only this part (repeatable); default: all three, in order.
    #[arg(long, value_enum, value_name = "MODE")]
    pub only: Vec<Mode>,
    /// Report what would change; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Pre-commit: stamp the staged concepts with the current time, and stage them again.
    #[arg(long)]
    pub staged: bool,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

/// What one mode did.
#[derive(Default, Debug)]
struct Outcome {
    selected: bool,
    written: Vec<String>,
    unchanged: Vec<String>,
    skipped: Vec<(String, String, Option<String>)>,
}

impl Outcome {
    fn json(&self) -> Value {
        json!({
            "selected": self.selected,
            "written": self.written,
            "unchanged": self.unchanged,
            "skipped": self.skipped.iter().map(|(id, reason, detail)| {
                let mut v = json!({"id": id, "reason": reason});
                if let Some(d) = detail {
                    v["detail"] = d.clone().into();
                }
                v
            }).collect::<Vec<_>>(),
        })
    }

    fn skip(&mut self, id: &str, reason: &str) {
        self.skipped
            .push((id.to_string(), reason.to_string(), None));
    }
}

struct Ctx<'a> {
    p: &'a Project,
    root: Root,
    dry_run: bool,
}

impl Ctx<'_> {
    fn read(&self, rel: &str) -> Result<Option<String>, Error> {
        Ok(self
            .root
            .read(rel, rel)?
            .map(|b| String::from_utf8_lossy(&b).into_owned()))
    }

    fn write(&self, rel: &str, text: &str) -> Result<(), Error> {
        if !self.dry_run {
            self.root.write(rel, text.as_bytes(), rel)?;
        }
        Ok(())
    }
}

/// Runs `okfit sync`.
pub fn sync(a: SyncArgs) -> Result<i32, Error> {
    let modes: BTreeSet<Mode> = if a.only.is_empty() {
        [Mode::Generated, Mode::Index, Mode::Log].into()
    } else {
        a.only.iter().copied().collect()
    };
    if a.staged && modes.contains(&Mode::Log) {
        return Err(Error::Usage(
            "--staged cannot run log mode: a log group's date must come from a commit, not from the stamp time; use --only generated and/or --only index".into(),
        ));
    }
    let now = resolve_now(None)?;
    let p = bundle_project(&a.common)?;
    let cx = Ctx {
        p: &p,
        root: Root::open(&p.bundle_root)?,
        dry_run: a.dry_run,
    };
    let repo = git::state(&p.bundle_root);
    // One load serves every mode: stamping changes no title, type or
    // description, which is all the index and the log read.
    let b = load(&p)?;
    let mut out: BTreeMap<Mode, Outcome> = BTreeMap::new();
    if modes.contains(&Mode::Generated) {
        out.insert(Mode::Generated, generated(&cx, &b, &repo, a.staged, now)?);
    }
    if modes.contains(&Mode::Index) {
        out.insert(Mode::Index, index(&cx, &b)?);
    }
    if modes.contains(&Mode::Log) {
        out.insert(Mode::Log, log(&cx, &b, &repo)?);
    }
    if a.staged && !a.dry_run {
        if let RepoState::Ready(r) | RepoState::Unborn(r) = &repo {
            let mut paths: Vec<String> = vec![];
            for o in out.values() {
                paths.extend(o.written.iter().map(|id| written_path(id)));
            }
            if !r.add(&paths) {
                return Err(Error::Io("git add failed for the stamped files".into()));
            }
        }
    }
    let part = |m: Mode| {
        out.get(&m)
            .map(Outcome::json)
            .unwrap_or_else(|| Outcome::default().json())
    };
    match a.format {
        Format::Json => print_json(&envelope_head(json!({
            "root": p.bundle_root.display().to_string(),
            "dry_run": a.dry_run,
            "exit_code": 0,
            "generated": part(Mode::Generated),
            "index": part(Mode::Index),
            "log": part(Mode::Log),
        })))?,
        Format::Human => human(&out, a.dry_run, &shown(&p.bundle_root)),
    }
    Ok(0)
}

/// A written id's file: concept ids get `.md`; index and log ids are paths.
fn written_path(id: &str) -> String {
    if id.ends_with(".md") {
        id.to_string()
    } else {
        format!("{id}.md")
    }
}

fn human(out: &BTreeMap<Mode, Outcome>, dry_run: bool, root: &str) {
    let verb = if dry_run { "would write" } else { "wrote" };
    for (mode, o) in out {
        let name = format!("{mode:?}").to_lowercase();
        for w in &o.written {
            crate::outln!("{name}: {verb} {w}");
        }
        for (id, reason, detail) in &o.skipped {
            match detail {
                Some(d) => crate::outln!("{name}: skipped {id} ({reason}: {d})"),
                None => crate::outln!("{name}: skipped {id} ({reason})"),
            }
        }
        eprintln!(
            "{name}: {} {verb}, {} unchanged, {} skipped in {root}",
            o.written.len(),
            o.unchanged.len(),
            o.skipped.len()
        );
    }
}

fn load(p: &Project) -> Result<Bundle, Error> {
    Ok(project::load(
        p,
        &LoadOptions {
            no_diagnostics: true,
            ..LoadOptions::default()
        },
    )?
    .bundle)
}

/// Generated mode (reference §8.2): a concept whose recorded digest
/// matches is unchanged; else its `at` is the author date of the commit
/// that last changed its body (or now, with `--staged`), and an
/// uncommitted body is skipped rather than stamped with a guess.
fn generated(
    cx: &Ctx,
    b: &Bundle,
    repo: &RepoState,
    staged: bool,
    now: Instant,
) -> Result<Outcome, Error> {
    let mut o = Outcome {
        selected: true,
        ..Outcome::default()
    };
    let scope: Option<BTreeSet<String>> = match (staged, repo) {
        (false, _) => None,
        (true, RepoState::Ready(r) | RepoState::Unborn(r)) => {
            Some(r.staged().into_iter().collect())
        }
        (true, RepoState::NotARepo) => Some(BTreeSet::new()),
    };
    let mut todo: Vec<(&str, &str, String)> = vec![]; // (id, path, text)
    for (d, c) in b.concepts() {
        if scope.as_ref().is_some_and(|s| !s.contains(&d.path)) {
            continue;
        }
        let Some(text) = cx.read(&d.path)? else {
            continue;
        };
        let digest = file_body_digest(&text);
        let recorded = c.generated.as_ref().and_then(|g| g.body_sha256.as_deref());
        if recorded == Some(digest.as_str()) {
            o.unchanged.push(c.id.clone());
            continue;
        }
        todo.push((c.id.as_str(), d.path.as_str(), text));
    }
    let found = match (staged, repo) {
        (false, RepoState::Ready(r)) => {
            let paths: Vec<&str> = todo.iter().map(|t| t.1).collect();
            git::provenance(r, &cx.p.bundle_root, &paths)
        }
        _ => Default::default(),
    };
    for (id, path, text) in todo {
        let at = if staged {
            now
        } else {
            match (repo, found.get(path)) {
                (RepoState::NotARepo, _) => {
                    o.skip(id, "not-a-repository");
                    continue;
                }
                (RepoState::Unborn(_), _) => {
                    o.skip(id, "unborn");
                    continue;
                }
                (_, Some(Provenance::Changed { at, .. })) => *at,
                (_, Some(Provenance::Dirty)) => {
                    o.skip(id, "dirty");
                    continue;
                }
                (_, Some(Provenance::Untracked) | None) => {
                    o.skip(id, "untracked");
                    continue;
                }
            }
        };
        let digest = file_body_digest(&text);
        match splice::stamp_generated(
            &text,
            &time::format_seconds(at),
            &digest,
            cx.p.config.agent.as_deref(),
        ) {
            Ok(new) if new == text => o.unchanged.push(id.to_string()),
            Ok(new) => {
                cx.write(path, &new)?;
                o.written.push(id.to_string());
            }
            Err(StampError::Missing) => o.skip(id, "generated-missing"),
            Err(StampError::Unsupported(shape)) => o.skipped.push((
                id.to_string(),
                "generated-unsupported".into(),
                Some(shape.as_str().into()),
            )),
        }
    }
    Ok(o)
}

fn parent(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

fn join(dir: &str, name: &str) -> String {
    if dir.is_empty() {
        name.to_string()
    } else {
        format!("{dir}/{name}")
    }
}

/// Index mode (reference §6.1): every directory holding concepts, and each
/// of its ancestors, gets its `index.md` rendered from the concepts in it
/// and the child directories that have (or get) an index.
fn index(cx: &Ctx, b: &Bundle) -> Result<Outcome, Error> {
    let mut o = Outcome {
        selected: true,
        ..Outcome::default()
    };
    let mut entries: BTreeMap<String, Vec<IndexEntry>> = BTreeMap::new();
    let mut rendered: BTreeSet<String> = BTreeSet::new();
    let mut listed: BTreeSet<String> = BTreeSet::new();
    for (d, c) in b.concepts() {
        let dir = parent(&d.path).to_string();
        entries.entry(dir.clone()).or_default().push(IndexEntry {
            type_name: c.type_name.clone(),
            title: c.title.clone(),
            target: d.path[dir.len()..].trim_start_matches('/').to_string(),
            description: c.description.clone(),
        });
        let mut up = Some(dir.as_str());
        while let Some(dd) = up {
            rendered.insert(dd.to_string());
            up = (!dd.is_empty()).then(|| parent(dd));
        }
    }
    rendered.insert(String::new());
    for d in &b.docs {
        if d.kind == Kind::Index {
            listed.insert(parent(&d.path).to_string());
        }
    }
    listed.extend(rendered.iter().cloned());
    for dir in &rendered {
        let subdirs: Vec<String> = listed
            .iter()
            .filter(|l| !l.is_empty() && parent(l) == dir.as_str())
            .map(|l| l[dir.len()..].trim_start_matches('/').to_string())
            .collect();
        let rel = join(dir, "index.md");
        let existing = cx.read(&rel)?;
        let version = if dir.is_empty() {
            Some(
                existing
                    .as_deref()
                    .and_then(doc::frontmatter_of)
                    .and_then(|m| m.get("okf_version")?.as_str().map(str::to_string))
                    .unwrap_or_else(|| cx.p.config.okf_version.clone()),
            )
        } else {
            None
        };
        let no_entries = vec![];
        let text = derive::render_index(
            version.as_deref(),
            entries.get(dir).unwrap_or(&no_entries),
            &subdirs,
        );
        if existing.as_deref() == Some(text.as_str()) {
            o.unchanged.push(rel);
        } else {
            cx.write(&rel, &text)?;
            o.written.push(rel);
        }
    }
    Ok(o)
}

/// Log mode (reference §6.2): for each date after the log's newest date
/// heading, one group listing the concepts that commits on that date
/// (author date, UTC) added, updated or removed.
fn log(cx: &Ctx, b: &Bundle, repo: &RepoState) -> Result<Outcome, Error> {
    let mut o = Outcome {
        selected: true,
        ..Outcome::default()
    };
    let r = match repo {
        RepoState::Ready(r) => r,
        RepoState::Unborn(_) => {
            o.skip("log.md", "unborn");
            return Ok(o);
        }
        RepoState::NotARepo => {
            o.skip("log.md", "not-a-repository");
            return Ok(o);
        }
    };
    let existing = cx.read("log.md")?.unwrap_or_default();
    let newest = derive::log_dates(&existing).into_iter().max();
    let mut by_date: BTreeMap<String, BTreeMap<String, char>> = BTreeMap::new();
    for (at, changes) in r.history().into_iter().rev() {
        let date = time::format_millis(at)[..10].to_string();
        if newest.as_deref().is_some_and(|n| date.as_str() <= n) {
            continue;
        }
        for (status, path) in changes {
            if !path.ends_with(".md") || doc::is_reserved(&path) {
                continue;
            }
            let day = by_date.entry(date.clone()).or_default();
            match (day.get(&path).copied(), status) {
                (None, s) => {
                    day.insert(path, s);
                }
                (Some('D'), 'A') => {
                    day.insert(path, 'M');
                }
                (Some(_), 'D') => {
                    day.insert(path, 'D');
                }
                _ => {}
            }
        }
    }
    let titles: BTreeMap<&str, &str> = b
        .concepts()
        .map(|(d, c)| (d.path.as_str(), c.title.as_str()))
        .collect();
    let groups: Vec<(String, Vec<String>)> = by_date
        .into_iter()
        .map(|(date, day)| {
            let items = day
                .into_iter()
                .filter_map(|(path, s)| {
                    let title = titles.get(path.as_str()).map(|t| derive::escape(t));
                    match (s, title) {
                        ('D', _) => Some(format!("Removed `{path}`")),
                        ('A', Some(t)) => {
                            Some(format!("Added [{t}]({})", derive::link_target(&path)))
                        }
                        (_, Some(t)) => {
                            Some(format!("Updated [{t}]({})", derive::link_target(&path)))
                        }
                        (_, None) => None, // changed then removed since
                    }
                })
                .collect::<Vec<_>>();
            (date, items)
        })
        .filter(|(_, items)| !items.is_empty())
        .collect();
    if groups.is_empty() {
        o.unchanged.push("log.md".into());
        return Ok(o);
    }
    let text = derive::add_log_groups(&existing, &groups);
    cx.write("log.md", &text)?;
    o.written.push("log.md".into());
    Ok(o)
}
