//! The git tier of `generated-at-drift`: for concepts that record
//! `generated` but no `body_sha256`, derive when the body last changed
//! from git history and compare it with `generated.at`. Read-only: it runs
//! `git rev-parse`, `git ls-tree`, `git diff`, `git log` and one
//! `git cat-file --batch`.

use okfit_core::diag::{Diagnostic, Tier};
use okfit_core::doc::file_body_digest;
use okfit_core::time::{self, Instant};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A concept the git tier looks at.
pub struct Candidate {
    /// Bundle-relative path.
    pub path: String,
    /// Recorded `generated.at`.
    pub at: Option<Instant>,
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "core.quotepath=off"])
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

struct Blobs {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Blobs {
    fn open(top: &Path) -> Option<Blobs> {
        let mut child = Command::new("git")
            .arg("-C")
            .arg(top)
            .args(["cat-file", "--batch"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let out = BufReader::new(child.stdout.take()?);
        Some(Blobs { child, out })
    }

    /// The text of `<rev>:<path>`, or `None` when absent.
    fn get(&mut self, rev: &str, path: &str) -> Option<String> {
        let stdin = self.child.stdin.as_mut()?;
        writeln!(stdin, "{rev}:{path}").ok()?;
        stdin.flush().ok()?;
        let mut header = String::new();
        self.out.read_line(&mut header).ok()?;
        let mut parts = header.split_whitespace();
        let _oid = parts.next()?;
        let kind = parts.next()?;
        if kind == "missing" || kind == "ambiguous" {
            return None;
        }
        let size: usize = parts.next()?.parse().ok()?;
        let mut buf = vec![0u8; size + 1];
        self.out.read_exact(&mut buf).ok()?;
        buf.pop();
        Some(String::from_utf8_lossy(&buf).into_owned())
    }
}

impl Drop for Blobs {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.wait();
    }
}

/// The repository a bundle lives in, as far as the git tier needs it.
#[derive(Debug)]
pub struct Repo {
    top: PathBuf,
    prefix: String,
    tracked: HashSet<String>,
}

impl Repo {
    /// Finds the repository around `bundle_root` and the files committed
    /// under it. `None` when it is not a repository or has no commit: then
    /// nothing is committed to compare with. Cheap enough to run beside
    /// parsing (two short git calls).
    pub fn discover(bundle_root: &Path) -> Option<Repo> {
        // One call answers "is this a repository" and "has it a commit".
        let head = git(
            bundle_root,
            &["rev-parse", "--show-toplevel", "--verify", "-q", "HEAD"],
        )?;
        let mut repo = Repo::at(head.lines().next()?, bundle_root)?;
        repo.tracked = git(
            &repo.top,
            &["ls-tree", "-r", "--name-only", "HEAD", "--", repo.scope()],
        )
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
        Some(repo)
    }

    /// The repository around `bundle_root` when it has no commit yet.
    fn unborn(bundle_root: &Path) -> Option<Repo> {
        let top = git(bundle_root, &["rev-parse", "--show-toplevel"])?;
        Repo::at(top.lines().next()?, bundle_root)
    }

    /// The repository whose work tree is `top`, seen from `bundle_root`
    /// inside it (nothing tracked yet).
    fn at(top: &str, bundle_root: &Path) -> Option<Repo> {
        let top = PathBuf::from(top.trim());
        let canon_root =
            std::fs::canonicalize(bundle_root).unwrap_or_else(|_| bundle_root.to_path_buf());
        let canon_top = std::fs::canonicalize(&top).unwrap_or(top.clone());
        let prefix = canon_root
            .strip_prefix(&canon_top)
            .ok()?
            .to_string_lossy()
            .replace('\\', "/");
        Some(Repo {
            top,
            prefix,
            tracked: HashSet::new(),
        })
    }

    /// The bundle's directory as a git pathspec.
    fn scope(&self) -> &str {
        if self.prefix.is_empty() {
            "."
        } else {
            &self.prefix
        }
    }

    fn path(&self, rel: &str) -> String {
        if self.prefix.is_empty() {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.prefix)
        }
    }
}

/// Where a concept's body stands against git.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Provenance {
    /// The file is not in `HEAD`.
    Untracked,
    /// The body on disk differs from the body in `HEAD`.
    Dirty,
    /// Committed: the commit that last changed the body, and its author date.
    Changed {
        /// The commit.
        sha: String,
        /// Its author date.
        at: Instant,
    },
}

/// What git knows about a bundle's directory.
#[derive(Debug)]
pub enum RepoState {
    /// Not inside a git work tree (or git is missing).
    NotARepo,
    /// A repository with no commit yet (nothing tracked; files can be staged).
    Unborn(Repo),
    /// A repository with a `HEAD`.
    Ready(Repo),
}

/// Finds the repository around `bundle_root`, telling an unborn one from none.
pub fn state(bundle_root: &Path) -> RepoState {
    if let Some(r) = Repo::discover(bundle_root) {
        return RepoState::Ready(r);
    }
    match Repo::unborn(bundle_root) {
        Some(r) => RepoState::Unborn(r),
        None => RepoState::NotARepo,
    }
}

/// For each bundle-relative path, where its body stands: untracked, dirty,
/// or the commit (first-parent history, so conflict-resolving merges count)
/// that last changed it. Paths with no history are left out.
pub fn provenance(repo: &Repo, bundle_root: &Path, paths: &[&str]) -> HashMap<String, Provenance> {
    let mut out = HashMap::new();
    let top = &repo.top;
    let scope = repo.scope();
    let mut tracked_any = false;
    for p in paths {
        if repo.tracked.contains(&repo.path(p)) {
            tracked_any = true;
        } else {
            out.insert(p.to_string(), Provenance::Untracked);
        }
    }
    if !tracked_any {
        return out; // nothing committed to compare with
    }
    let changed: HashSet<String> = git(top, &["diff", "--name-only", "HEAD", "--", scope])
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    // History: file -> commits (newest first) with author dates.
    let log = git(
        top,
        &[
            "log",
            "--first-parent",
            "--diff-merges=first-parent",
            "--name-only",
            "--format=%x01%H %aI",
            "--",
            scope,
        ],
    )
    .unwrap_or_default();
    let mut history: HashMap<&str, Vec<(&str, &str)>> = HashMap::new();
    let mut current: Option<(&str, &str)> = None;
    for line in log.lines() {
        if let Some(h) = line.strip_prefix('\u{1}') {
            current = h.split_once(' ');
        } else if !line.is_empty() {
            if let Some(c) = current {
                history.entry(line).or_default().push(c);
            }
        }
    }
    let Some(mut blobs) = Blobs::open(top) else {
        return out;
    };
    for p in paths {
        let rp = repo.path(p);
        if !repo.tracked.contains(&rp) {
            continue;
        }
        if changed.contains(&rp) {
            let head_digest = blobs.get("HEAD", &rp).map(|t| file_body_digest(&t));
            let now_digest = std::fs::read(bundle_root.join(p))
                .ok()
                .map(|b| file_body_digest(&String::from_utf8_lossy(&b)));
            if head_digest.is_none() || head_digest != now_digest {
                out.insert(p.to_string(), Provenance::Dirty);
                continue;
            }
        }
        let Some(commits) = history.get(rp.as_str()) else {
            continue;
        };
        let mut last: Option<(&str, &str)> = None;
        let mut prev_digest: Option<String> = None;
        for (sha, date) in commits {
            let d = blobs.get(sha, &rp).map(|t| file_body_digest(&t));
            match (&prev_digest, &d) {
                (Some(p), Some(dd)) if p != dd => break,
                (Some(_), None) => break,
                _ => {}
            }
            last = Some((sha, date));
            prev_digest = d;
        }
        let Some((sha, date)) = last else {
            continue;
        };
        if let Ok(time::Parsed::Instant(at)) = time::parse(date) {
            out.insert(
                p.to_string(),
                Provenance::Changed {
                    sha: sha.to_string(),
                    at,
                },
            );
        }
    }
    out
}

/// Runs the git tier over `repo` (from [`Repo::discover`]).
pub fn drift(
    repo: Option<&Repo>,
    bundle_root: &Path,
    candidates: &[Candidate],
    severity: okfit_core::diag::Severity,
) -> Vec<Diagnostic> {
    let Some(repo) = repo else {
        return vec![];
    };
    let paths: Vec<&str> = candidates.iter().map(|c| c.path.as_str()).collect();
    let found = provenance(repo, bundle_root, &paths);
    let mut out = vec![];
    for c in candidates {
        let Some(Provenance::Changed { sha, at: derived }) = found.get(&c.path) else {
            continue;
        };
        let state = match c.at {
            None => "missing",
            Some(at) if at != *derived => "recorded",
            Some(_) => continue,
        };
        out.push(Diagnostic {
            source: Tier::Lint,
            file: c.path.clone(),
            code: "generated-at-drift",
            severity,
            message: format!(
                "generated.at is {state}; the last body change was {} ({})",
                time::format_seconds(*derived),
                &sha[..sha.len().min(7)]
            ),
            range: None,
        });
    }
    out
}

/// The git identity (`user.name`, `user.email`) configured for `dir`.
pub fn identity(dir: &Path) -> (Option<String>, Option<String>) {
    let get = |k: &str| {
        git(dir, &["config", "--get", k])
            .map(|v| v.trim().to_string())
            .filter(|v| !v.is_empty())
    };
    (get("user.name"), get("user.email"))
}

impl Repo {
    /// Bundle-relative paths of the files staged under the bundle.
    pub fn staged(&self) -> Vec<String> {
        git(
            &self.top,
            &[
                "diff",
                "--cached",
                "--name-only",
                "--diff-filter=ACMR",
                "--",
                self.scope(),
            ],
        )
        .unwrap_or_default()
        .lines()
        .filter_map(|l| self.rel(l))
        .collect()
    }

    /// Stages bundle-relative `paths` again (after `sync --staged` edits them).
    pub fn add(&self, paths: &[String]) -> bool {
        if paths.is_empty() {
            return true;
        }
        let full: Vec<String> = paths.iter().map(|p| self.path(p)).collect();
        let mut args = vec!["add", "--"];
        args.extend(full.iter().map(String::as_str));
        git(&self.top, &args).is_some()
    }

    /// The bundle's first-parent history, newest first: each commit's
    /// author date and its `(status letter, bundle-relative path)` changes.
    pub fn history(&self) -> Vec<(Instant, Vec<(char, String)>)> {
        let log = git(
            &self.top,
            &[
                "log",
                "--first-parent",
                "--diff-merges=first-parent",
                "--name-status",
                "--no-renames",
                "--format=%x01%aI",
                "--",
                self.scope(),
            ],
        )
        .unwrap_or_default();
        let mut out: Vec<(Instant, Vec<(char, String)>)> = vec![];
        for line in log.lines() {
            if let Some(date) = line.strip_prefix('\u{1}') {
                if let Ok(time::Parsed::Instant(at)) = time::parse(date.trim()) {
                    out.push((at, vec![]));
                }
            } else if let Some((st, path)) = line.split_once('\t') {
                if let (Some(c), Some(last), Some(rel)) =
                    (st.chars().next(), out.last_mut(), self.rel(path))
                {
                    last.1.push((c, rel));
                }
            }
        }
        out
    }

    /// A repository path as bundle-relative, when it is under the bundle.
    fn rel(&self, repo_path: &str) -> Option<String> {
        if self.prefix.is_empty() {
            return Some(repo_path.to_string());
        }
        repo_path
            .strip_prefix(&self.prefix)
            .and_then(|r| r.strip_prefix('/'))
            .map(str::to_string)
    }
}
