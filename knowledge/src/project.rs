//! Loading a project's bundle from disk (in parallel) and validating it.

use okfit_core::bundle::{self, Bundle, Report};
use okfit_core::diag::{Diagnostic, Tier};
use okfit_core::doc::{self, ParseOptions};
use okfit_core::time::Instant;
use okfit_store::discover::Project;
use okfit_store::error::Error;
use okfit_store::walk;
use rayon::prelude::*;
use std::sync::OnceLock;

pub use okfit_store::live::Stamp;

/// What to load.
#[derive(Clone, Debug, Default)]
pub struct LoadOptions {
    /// `now` for the `stale` lint.
    pub now: Option<Instant>,
    /// Keep each concept's frontmatter mapping.
    pub keep_frontmatter: bool,
    /// Unsaved `(path, text)` documents that shadow files on disk.
    pub documents: Vec<(String, String)>,
    /// Look up the bundle's git repository while parsing (for the git tier
    /// of `generated-at-drift`).
    pub git: bool,
    /// Skip lint findings, ranges and body scans: the bundle only answers
    /// queries and fills bodies in on demand ([`okfit_core::doc::body_links`]).
    pub no_diagnostics: bool,
    /// Record each Markdown file's [`walk::Stamp`] as it is read (for a
    /// later run to tell which files moved).
    pub stamps: bool,
}

/// A loaded bundle and the findings the walk made.
pub struct Loaded {
    /// The bundle.
    pub bundle: Bundle,
    /// Walk findings (`walk-unreadable`).
    pub extra: Vec<Diagnostic>,
    /// `Some(repository or none)` when [`LoadOptions::git`] asked for it
    /// and a concept on disk needs git's history.
    pub repo: Option<Option<okfit_store::git::Repo>>,
    /// `(path, stamp)` of each Markdown file read from disk, when
    /// [`LoadOptions::stamps`] asked for them.
    pub stamps: Vec<(String, walk::Stamp)>,
}

/// Walks and parses the project's bundle.
pub fn load(project: &Project, opts: &LoadOptions) -> Result<Loaded, Error> {
    load_walked(project, &walk::walk(&project.bundle_root)?, opts)
}

/// [`load`] over a walk already made.
pub fn load_walked(
    project: &Project,
    walked: &walk::Walked,
    opts: &LoadOptions,
) -> Result<Loaded, Error> {
    let root = &project.bundle_root;
    // The repository is looked up (two short git calls) only once a parsed
    // concept needs git's history, and then while the other files are
    // still parsed; a bundle whose concepts need none spawns no git.
    let repo: OnceLock<std::thread::JoinHandle<Option<okfit_store::git::Repo>>> = OnceLock::new();
    let look_up_repo = |d: &doc::Document| {
        if opts.git && d.concept.as_ref().is_some_and(needs_git_history) {
            repo.get_or_init(|| {
                let r = root.clone();
                std::thread::spawn(move || okfit_store::git::Repo::discover(&r))
            });
        }
    };
    let cfg = &project.config;
    let popts = ParseOptions {
        keep_frontmatter: opts.keep_frontmatter,
        diagnostics: !opts.no_diagnostics,
        skip_body: opts.no_diagnostics,
        ..ParseOptions::validation(cfg, opts.now)
    };
    // Overlay paths are checked against the directories on disk.
    let overlay = if opts.documents.is_empty() {
        vec![]
    } else {
        let paths = okfit_core::overlay::check_paths(
            opts.documents.iter().map(|(p, _)| p.as_str()),
            |dir| root.join(dir).is_dir(),
        )
        .map_err(Error::Overlay)?;
        paths
            .into_iter()
            .zip(opts.documents.iter().map(|(_, t)| t.as_str()))
            .collect::<Vec<_>>()
    };
    let (md, assets): (Vec<_>, Vec<_>) = walked
        .files
        .iter()
        .partition(|(p, _)| bundle::is_document(p));
    let opener = walk::Opener::new(md.iter().map(|(_, abs)| abs.as_path()));
    let read = |rel: &String, abs: &std::path::PathBuf| -> Result<_, Error> {
        let unreadable = |e| Error::FileUnreadable {
            rel: rel.clone(),
            root: root.clone(),
            source: e,
        };
        if opts.stamps {
            let (bytes, stamp) = opener.read_stamped(abs).map_err(unreadable)?;
            Ok((bytes, Some(stamp)))
        } else {
            Ok((opener.read(abs).map_err(unreadable)?, None))
        }
    };
    let to_read: Vec<&(String, std::path::PathBuf)> = md
        .iter()
        .copied()
        .filter(|(rel, _)| !overlay.iter().any(|(p, _)| p == rel))
        .collect();
    // Each document is written in place in its final position (no
    // gathering and moving of 10,000 documents on one core afterwards);
    // a file that cannot be read fails the load once all are done. Small
    // jobs (at most 16 files): a large job still being read by one core at
    // the end would leave the other idle.
    let failed = OnceLock::new();
    let (mut docs, mut stamps) = (vec![], vec![]);
    to_read
        .par_iter()
        .with_max_len(16)
        .map(|(rel, abs)| match read(rel, abs) {
            Ok((bytes, stamp)) => {
                let d = doc::parse(rel, &bytes, &popts);
                look_up_repo(&d);
                (d, stamp.map(|s| (rel.clone(), s)))
            }
            Err(e) => {
                let _ = failed.set(e);
                (doc::parse(rel, b"", &popts), None)
            }
        })
        .unzip_into_vecs(&mut docs, &mut stamps);
    if let Some(e) = failed.into_inner() {
        return Err(e);
    }
    for (p, text) in &overlay {
        docs.push(doc::parse(p, text.as_bytes(), &popts));
    }
    let extra = walk_findings(cfg, walked.unreadable.clone());
    let assets = assets.into_iter().map(|(p, _)| p.clone()).collect();
    let bundle = Bundle::assemble(docs, assets, |path| {
        match overlay.iter().find(|(p, _)| p == path) {
            Some((_, t)) => Ok(t.to_string()),
            None => read_text(root, path),
        }
    })?;
    // Not looked up: `git_drift` looks for itself if an unsaved document
    // needs it.
    let repo = repo.into_inner().map(|h| h.join().ok().flatten());
    Ok(Loaded {
        bundle,
        extra,
        repo,
        stamps: stamps.into_iter().flatten().collect(),
    })
}

/// The text of the bundle file `rel` (invalid UTF-8 replaced).
pub(crate) fn read_text(root: &std::path::Path, rel: &str) -> Result<String, Error> {
    okfit_store::walk::read_file(&root.join(rel))
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|e| Error::FileUnreadable {
            rel: rel.to_string(),
            root: root.to_path_buf(),
            source: e,
        })
}

/// [`load_walked`] for a validation at `now` (with the git tier unless
/// `skip_provenance`; each Markdown file's stamp when `stamps`).
pub(crate) fn load_for_validation(
    project: &Project,
    walked: &walk::Walked,
    now: Instant,
    skip_provenance: bool,
    stamps: bool,
) -> Result<Loaded, Error> {
    load_walked(
        project,
        walked,
        &LoadOptions {
            now: Some(now),
            git: !skip_provenance,
            stamps,
            ..LoadOptions::default()
        },
    )
}

/// The `walk-unreadable` findings of the directories a walk could not read.
pub(crate) fn walk_findings(
    cfg: &okfit_core::config::Config,
    unreadable: Vec<String>,
) -> Vec<Diagnostic> {
    unreadable
        .into_iter()
        .filter_map(|d| {
            cfg.severity("walk-unreadable").map(|severity| Diagnostic {
                source: Tier::Lint,
                file: d.clone(),
                code: "walk-unreadable",
                severity,
                message: format!(
                    "directory \"{d}\" could not be read; its files are not part of the bundle"
                ),
                range: None,
            })
        })
        .collect()
}

/// The envelope's metadata for a report on `project` made by `producer`
/// (`okfit` for the CLI and the Node addon's `validate()`, `@okfit/mcp` for
/// the MCP tool).
pub fn meta(project: &Project, producer: &str) -> okfit_core::report::Meta {
    okfit_core::report::Meta::new(
        okfit_store::VERSION,
        producer,
        &project.config,
        project.bundle_root.display().to_string(),
    )
}

/// Validates a loaded bundle, adding the git tier of `generated-at-drift`
/// unless `skip_provenance`.
pub fn validate(project: &Project, loaded: &Loaded, skip_provenance: bool) -> Report {
    let extra = extra_findings(project, loaded, skip_provenance);
    bundle::validate_with(&loaded.bundle, &project.config, extra, |docs, check| {
        docs.par_iter().with_max_len(64).map(check).collect()
    })
}

/// The findings made outside the core: the walk's, and the git tier of
/// `generated-at-drift` unless `skip_provenance`.
pub(crate) fn extra_findings(
    project: &Project,
    loaded: &Loaded,
    skip_provenance: bool,
) -> Vec<Diagnostic> {
    let mut extra = loaded.extra.clone();
    if !skip_provenance {
        extra.extend(git_drift(
            project,
            &loaded.bundle,
            loaded.repo.as_ref(),
            None,
        ));
    }
    extra
}

/// True for a concept the git tier of `generated-at-drift` reads the
/// history of: it records `generated` without a digest (and not as a
/// legacy timestamp).
fn needs_git_history(c: &doc::Concept) -> bool {
    c.generated
        .as_ref()
        .is_some_and(|g| g.body_sha256.is_none() && g.by != "process:legacy-timestamp")
}

/// The git tier of `generated-at-drift` over the bundle's concepts that
/// record `generated` without a digest (of those, `only` the one path when
/// given); `repo` is the repository the load found, when it looked.
fn git_drift(
    project: &Project,
    b: &Bundle,
    repo: Option<&Option<okfit_store::git::Repo>>,
    only: Option<&str>,
) -> Vec<Diagnostic> {
    let Some(sev) = project.config.severity("generated-at-drift") else {
        return vec![];
    };
    let candidates = drift_candidates(b, only);
    let discovered;
    let repo = match repo {
        Some(r) => r.as_ref(),
        None if candidates.is_empty() => None,
        None => {
            discovered = match only {
                Some(p) => okfit_store::git::Repo::discover_paths(&project.bundle_root, &[p]),
                None => okfit_store::git::Repo::discover(&project.bundle_root),
            };
            discovered.as_ref()
        }
    };
    okfit_store::git::drift(repo, &project.bundle_root, &candidates, sev)
}

/// The concepts of `b` the git tier looks at (of those, `only` the one
/// path when given).
fn drift_candidates(b: &Bundle, only: Option<&str>) -> Vec<okfit_store::git::Candidate> {
    b.concepts()
        .filter(|(d, _)| only.is_none_or(|p| d.path == p))
        .filter(|(_, c)| needs_git_history(c))
        .filter_map(|(d, c)| {
            let g = c.generated.as_ref()?;
            Some(okfit_store::git::Candidate {
                path: d.path.clone(),
                at: g.at,
            })
        })
        .collect()
}

/// [`extra_findings`] for a run that keeps what the git tier found for
/// the next one: `memo` is what the last run kept (if any), `touched` says
/// which files may have changed since it (`None`: any). Takes the
/// repository out of `loaded` when the tier must start afresh. Returns the
/// findings and what the next run may reuse (`None` when the git tier did
/// not run).
pub(crate) fn extra_findings_kept(
    project: &Project,
    loaded: &mut Loaded,
    skip_provenance: bool,
    memo: Option<okfit_store::git::Memo>,
    touched: Option<&dyn Fn(&str) -> bool>,
) -> (Vec<Diagnostic>, Option<okfit_store::git::Memo>) {
    let mut extra = loaded.extra.clone();
    let Some(sev) = project.config.severity("generated-at-drift") else {
        return (extra, None);
    };
    let candidates = drift_candidates(&loaded.bundle, None);
    if skip_provenance || candidates.is_empty() {
        return (extra, None);
    }
    let root = &project.bundle_root;
    let memo = match (memo, touched) {
        (Some(m), Some(touched)) => m.again(root, &candidates, touched),
        _ => {
            let repo = match loaded.repo.take() {
                Some(r) => r,
                None => okfit_store::git::Repo::discover(root),
            };
            repo.map(|r| okfit_store::git::Memo::first(r, root, &candidates))
        }
    };
    if let Some(m) = &memo {
        extra.extend(m.findings(&candidates, sev));
    }
    (extra, memo)
}

/// The findings a full run reports for the one bundle-relative file
/// `rel`, parsing only what they depend on: the file itself, the paths of
/// the others (for its links), and the concepts its body links to with a
/// `#fragment` (for their headings). A Project concept (whose profile
/// checks count every Project) and a Publication (whose renders are
/// digested) take the full run, filtered. The summary counts this file's
/// findings, and it as the one concept when it is one.
pub fn validate_file(
    project: &Project,
    rel: &str,
    now: Instant,
    skip_provenance: bool,
) -> Result<Report, Error> {
    let root = &project.bundle_root;
    let walked = walk::walk(root)?;
    if !walked.files.iter().any(|(p, _)| p == rel) || !bundle::is_document(rel) {
        return Err(Error::Usage(format!(
            "\"{}\" is not a Markdown file of the bundle at {}",
            okfit_store::error::truncate(rel),
            root.display()
        )));
    }
    let cfg = &project.config;
    let popts = ParseOptions::validation(cfg, Some(now));
    let read = |path: &str| {
        okfit_store::walk::read_file(&root.join(path)).map_err(|e| Error::FileUnreadable {
            rel: path.to_string(),
            root: root.clone(),
            source: e,
        })
    };
    let target = doc::parse(rel, &read(rel)?, &popts);
    let needs_all = target.concept.as_ref().is_some_and(|c| {
        cfg.profile.is_some() && (c.type_name == "Project" || c.publication.is_some())
    });
    if needs_all {
        let loaded = load_for_validation(project, &walked, now, skip_provenance, false)?;
        let full = validate(project, &loaded, skip_provenance);
        return Ok(only(full, rel, 1));
    }
    let assets: Vec<String> = walked
        .files
        .into_iter()
        .map(|(p, _)| p)
        .filter(|p| p != rel)
        .collect();
    // Targets whose headings a `#fragment` link is checked against.
    let mut b = Bundle::from_parts(vec![target], assets);
    let mut linked: Vec<String> = vec![];
    if let Some(t) = b.doc(rel) {
        for link in &t.links {
            if let bundle::Resolution::Node {
                kind: bundle::NodeKind::File,
                id,
                fragment: Some(_),
            } = b.resolve(rel, &link.raw, link.field)
            {
                if bundle::is_document(&id) && !linked.contains(&id) {
                    linked.push(id);
                }
            }
        }
    }
    if !linked.is_empty() {
        let (mut docs, mut assets) = b.into_parts();
        for path in &linked {
            docs.push(doc::parse(path, &read(path)?, &popts));
        }
        assets.retain(|a| !linked.contains(a));
        b = Bundle::from_parts(docs, assets);
    }
    let is_concept = usize::from(b.doc(rel).is_some_and(|d| d.concept.is_some()));
    let extra = if skip_provenance {
        vec![]
    } else {
        // Only the file's own drift: the linked targets are not reported.
        git_drift(project, &b, None, Some(rel))
    };
    Ok(only(bundle::validate(&b, cfg, extra), rel, is_concept))
}

/// `report` narrowed to the findings of `rel`, counting `concepts`.
fn only(report: Report, rel: &str, concepts: usize) -> Report {
    let mine = report
        .diagnostics
        .into_iter()
        .filter(|d| d.file == rel)
        .collect();
    Report::new(mine, concepts)
}
