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
        let top = PathBuf::from(head.lines().next()?.trim());
        let canon_root =
            std::fs::canonicalize(bundle_root).unwrap_or_else(|_| bundle_root.to_path_buf());
        let canon_top = std::fs::canonicalize(&top).unwrap_or(top.clone());
        let prefix = canon_root
            .strip_prefix(&canon_top)
            .ok()?
            .to_string_lossy()
            .replace('\\', "/");
        let mut repo = Repo {
            top,
            prefix,
            tracked: HashSet::new(),
        };
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
    if !candidates
        .iter()
        .any(|c| repo.tracked.contains(&repo.path(&c.path)))
    {
        return vec![]; // nothing committed to compare with
    }
    let top = &repo.top;
    let tracked = &repo.tracked;
    let repo_path = |rel: &str| repo.path(rel);
    let scope = repo.scope();
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
        return vec![];
    };
    let mut out = vec![];
    for c in candidates {
        let rp = repo_path(&c.path);
        if !tracked.contains(&rp) {
            continue; // untracked
        }
        if changed.contains(&rp) {
            let head_digest = blobs.get("HEAD", &rp).map(|t| file_body_digest(&t));
            let now_digest = std::fs::read(bundle_root.join(&c.path))
                .ok()
                .map(|b| file_body_digest(&String::from_utf8_lossy(&b)));
            if head_digest.is_none() || head_digest != now_digest {
                continue; // dirty body
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
        let Ok(time::Parsed::Instant(derived)) = time::parse(date) else {
            continue;
        };
        let state = match c.at {
            None => "missing",
            Some(at) if at != derived => "recorded",
            Some(_) => continue,
        };
        out.push(Diagnostic {
            source: Tier::Lint,
            file: c.path.clone(),
            code: "generated-at-drift",
            severity,
            message: format!(
                "generated.at is {state}; the last body change was {} ({})",
                time::format_millis(derived).replace(".000Z", "Z"),
                &sha[..sha.len().min(7)]
            ),
            range: None,
        });
    }
    out
}
