//! The git tier of `generated-at-drift`: for concepts that record
//! `generated` but no `body_sha256`, derive when the body last changed
//! from git history and compare it with `generated.at`. Read-only: it runs
//! `git rev-parse`, `git ls-tree`, `git diff`, `git log` and one
//! `git cat-file --batch`. A server validating the same bundle again keeps
//! a [`Memo`]: while `HEAD` stays, a run asks git only for `HEAD`.

use okfit_core::diag::{Diagnostic, Tier};
use okfit_core::doc::file_body_digest;
use okfit_core::time::{self, Instant};
use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Write};
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

/// The body digests of the blobs `oids`, read by `git cat-file --batch`:
/// one process per core, each given its share of the requests all at once
/// (written from a second thread while its answers are read), so no blob
/// waits for a round trip. Each text is digested as it arrives and not
/// kept. A blob git does not have is absent.
fn blob_digests(top: &Path, oids: &[&str]) -> HashMap<String, String> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    // Below a few hundred blobs a second process costs more than it saves.
    let share = oids.len().div_ceil(cores).max(256);
    if oids.len() <= share {
        return batch(top, oids);
    }
    std::thread::scope(|s| {
        let parts: Vec<_> = oids
            .chunks(share)
            .map(|part| s.spawn(move || batch(top, part)))
            .collect();
        let mut out = HashMap::new();
        for p in parts {
            out.extend(p.join().unwrap_or_default());
        }
        out
    })
}

/// [`blob_digests`] through one `git cat-file --batch`.
fn batch(top: &Path, oids: &[&str]) -> HashMap<String, String> {
    let mut out = HashMap::new();
    if oids.is_empty() {
        return out;
    }
    let Ok(mut child) = Command::new("git")
        .arg("-C")
        .arg(top)
        .args(["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
    else {
        return out;
    };
    let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return out;
    };
    let mut reader = BufReader::new(stdout);
    std::thread::scope(|s| {
        s.spawn(move || {
            let mut w = std::io::BufWriter::new(&mut stdin);
            for oid in oids {
                if writeln!(w, "{oid}").is_err() {
                    return;
                }
            }
            let _ = w.flush();
            // Dropping stdin ends the batch.
        });
        for oid in oids {
            match read_blob(&mut reader) {
                Some(Some(text)) => {
                    out.insert(oid.to_string(), file_body_digest(&text));
                }
                Some(None) => {}
                None => break,
            }
        }
    });
    drop(reader);
    let _ = child.wait();
    out
}

/// One answer of `git cat-file --batch`: `Some(None)` for a missing
/// object, `None` when the stream ends or cannot be read.
fn read_blob(r: &mut impl BufRead) -> Option<Option<String>> {
    let mut header = String::new();
    if r.read_line(&mut header).ok()? == 0 {
        return None;
    }
    let mut parts = header.split_whitespace();
    let _oid = parts.next()?;
    let kind = parts.next()?;
    if kind == "missing" || kind == "ambiguous" {
        return Some(None);
    }
    let size: usize = parts.next()?.parse().ok()?;
    let mut buf = vec![0u8; size + 1];
    r.read_exact(&mut buf).ok()?;
    buf.pop();
    Some(Some(String::from_utf8_lossy(&buf).into_owned()))
}

/// Most files [`provenance`] names to git one by one; past it, git is
/// given the bundle's directory.
const FEW_PATHS: usize = 64;

/// `path` as a git pathspec that means exactly that path (no glob).
fn literal_path(path: &str) -> String {
    format!(":(literal){path}")
}

/// Whether git could find a work tree around `dir`: a `.git` in it or a
/// folder above, or git's own variables naming one. Without either, no git
/// process is started (a few milliseconds each).
fn may_be_in_a_work_tree(dir: &Path) -> bool {
    if std::env::var_os("GIT_DIR").is_some() || std::env::var_os("GIT_WORK_TREE").is_some() {
        return true;
    }
    let dir = std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf());
    dir.ancestors()
        .any(|d| std::fs::symlink_metadata(d.join(".git")).is_ok())
}

/// The work tree around `dir` and the commit `HEAD` names, in one git
/// call; `None` outside a repository or before its first commit.
fn head_of(dir: &Path) -> Option<(String, String)> {
    let out = git(
        dir,
        &["rev-parse", "--show-toplevel", "--verify", "-q", "HEAD"],
    )?;
    let mut lines = out.lines();
    let top = lines.next()?.to_string();
    let head = lines.next()?.trim().to_string();
    (!head.is_empty()).then_some((top, head))
}

/// The repository a bundle lives in, as far as the git tier needs it.
#[derive(Debug)]
pub struct Repo {
    top: PathBuf,
    prefix: String,
    /// The commit `HEAD` named when the repository was looked up (empty
    /// while it has none).
    head: String,
    /// The files committed under the bundle in `HEAD` (repository paths),
    /// with their blob ids.
    tracked: HashMap<String, String>,
}

impl Repo {
    /// Finds the repository around `bundle_root` and the files committed
    /// under it. `None` when it is not a repository or has no commit: then
    /// nothing is committed to compare with. Cheap enough to run beside
    /// parsing (two short git calls).
    pub fn discover(bundle_root: &Path) -> Option<Repo> {
        Repo::discover_listing(bundle_root, &[".".to_string()])
    }

    /// [`Repo::discover`], listing only the committed files among the
    /// bundle-relative `paths` (for a check of a few files).
    pub fn discover_paths(bundle_root: &Path, paths: &[&str]) -> Option<Repo> {
        let paths: Vec<String> = paths.iter().map(|p| p.to_string()).collect();
        Repo::discover_listing(bundle_root, &paths)
    }

    /// [`Repo::discover`], listing the committed files under `paths`
    /// (relative to the bundle; `ls-tree` matches them as literal paths).
    fn discover_listing(bundle_root: &Path, paths: &[String]) -> Option<Repo> {
        if !may_be_in_a_work_tree(bundle_root) {
            return None;
        }
        // One call answers "is this a repository" and "has it a commit";
        // the files under the bundle are asked for meanwhile (from the
        // bundle, by repository path), so the two calls take the time of one.
        let (head, listed) = std::thread::scope(|s| {
            let listed = s.spawn(|| {
                let mut args = vec!["ls-tree", "-r", "--full-name", "HEAD", "--"];
                args.extend(paths.iter().map(String::as_str));
                git(bundle_root, &args)
            });
            (head_of(bundle_root), listed.join().ok().flatten())
        });
        let (top, head) = head?;
        let mut repo = Repo::at(&top, bundle_root)?;
        repo.head = head;
        repo.tracked = listed
            .unwrap_or_default()
            .lines()
            .filter_map(|l| {
                // `<mode> <type> <oid>\t<path>`
                let (head, path) = l.split_once('\t')?;
                let oid = head.split(' ').nth(2)?;
                Some((path.to_string(), oid.to_string()))
            })
            .collect();
        Some(repo)
    }

    /// Whether `top` and `head` (from [`head_of`]) are this repository's
    /// work tree and the commit it was looked up at.
    fn same(&self, (top, head): &(String, String)) -> bool {
        !self.head.is_empty() && self.head == *head && self.top == Path::new(top.trim())
    }

    /// The repository around `bundle_root` when it has no commit yet.
    fn unborn(bundle_root: &Path) -> Option<Repo> {
        if !may_be_in_a_work_tree(bundle_root) {
            return None;
        }
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
            head: String::new(),
            tracked: HashMap::new(),
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
///
/// Four git processes whatever the number of paths: `diff` (what differs
/// from `HEAD`), one `log --raw` (each commit's blob of each file), and
/// `cat-file --batch` for the blobs whose bodies must be compared, in
/// rounds: a file's newest two versions first, an older one only while the
/// body stayed the same. A file with one version reads no blob.
pub fn provenance(repo: &Repo, bundle_root: &Path, paths: &[&str]) -> HashMap<String, Provenance> {
    provenance_with(repo, bundle_root, paths, &mut Digests::default())
}

/// [`provenance`], reading blobs into (and reusing those in) `digests`.
fn provenance_with(
    repo: &Repo,
    bundle_root: &Path,
    paths: &[&str],
    digests: &mut Digests,
) -> HashMap<String, Provenance> {
    let mut out = HashMap::new();
    let top = &repo.top;
    let scope = repo.scope();
    let mut tracked = vec![];
    for p in paths {
        let rp = repo.path(p);
        match repo.tracked.get(&rp) {
            Some(oid) => tracked.push((*p, rp, oid.as_str())),
            None => {
                out.insert(p.to_string(), Provenance::Untracked);
            }
        }
    }
    if tracked.is_empty() {
        return out; // nothing committed to compare with
    }
    // What differs from HEAD, and the history, asked at the same time.
    // A few files: git looks at their paths alone (a hook checks one file
    // after each write, and the bundle's whole history would cost it more
    // than its own check); more: the bundle's directory.
    let literal: Vec<String> = if tracked.len() <= FEW_PATHS {
        tracked.iter().map(|(_, rp, _)| literal_path(rp)).collect()
    } else {
        vec![scope.to_string()]
    };
    let with_spec = |args: &[&'static str]| -> Vec<&str> {
        let mut v: Vec<&str> = args.to_vec();
        v.push("--");
        v.extend(literal.iter().map(String::as_str));
        v
    };
    let (diff, log) = std::thread::scope(|s| {
        let diff = s.spawn(|| git(top, &with_spec(&["diff", "--name-only", "HEAD"])));
        let log = git(
            top,
            &with_spec(&[
                "log",
                "--first-parent",
                "--diff-merges=first-parent",
                "--raw",
                "--no-abbrev",
                "--format=%x01%H %aI",
            ]),
        );
        (diff.join().ok().flatten(), log)
    });
    let changed: HashSet<String> = diff
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect();
    let log = log.unwrap_or_default();
    let history = versions(&log);
    // A body that differs from HEAD's is dirty: its last change is not
    // committed.
    let head_blobs = tracked.iter().filter(|(_, rp, _)| changed.contains(rp));
    digests.fill(top, head_blobs.map(|(_, _, oid)| *oid));
    let mut walks = vec![];
    for (p, rp, oid) in &tracked {
        if changed.contains(rp) && body_differs(bundle_root, p, digests.get(Some(oid))) {
            out.insert(p.to_string(), Provenance::Dirty);
            continue;
        }
        if let Some(commits) = history.get(rp.as_str()) {
            walks.push(Walk {
                path: p,
                commits,
                last: 0,
                clean_head: (!changed.contains(rp)).then_some(*oid),
            });
        }
    }
    let seeded = digests.seed_from_disk(bundle_root, &walks);
    // Each round reads the next older version of every walk still going;
    // a file with one version reads none.
    let mut going: Vec<&mut Walk> = walks.iter_mut().filter(|w| w.commits.len() > 1).collect();
    while !going.is_empty() {
        let wanted = going.iter().flat_map(|w| {
            let c = w.commits;
            [c[w.last].blob, c.get(w.last + 1).and_then(|v| v.blob)]
        });
        digests.fill(top, wanted.flatten());
        going.retain_mut(|w| {
            let Some(older) = w.commits.get(w.last + 1) else {
                return false;
            };
            let (newer, older) = (digests.get(w.commits[w.last].blob), digests.get(older.blob));
            if older.is_none() || newer != older {
                return false;
            }
            w.last += 1;
            true
        });
    }
    digests.forget(&seeded);
    for w in walks {
        let v = &w.commits[w.last];
        if let Ok(time::Parsed::Instant(at)) = time::parse(v.date) {
            out.insert(
                w.path.to_string(),
                Provenance::Changed {
                    sha: v.sha.to_string(),
                    at,
                },
            );
        }
    }
    out
}

/// One commit's version of a file: the commit, its author date, and the
/// file's blob after it (`None` when the commit deleted the file).
struct Version<'a> {
    sha: &'a str,
    date: &'a str,
    blob: Option<&'a str>,
}

/// A file's history being walked back: its versions, newest first, and the
/// oldest one reached whose body equals the newest's.
struct Walk<'a> {
    path: &'a str,
    commits: &'a [Version<'a>],
    last: usize,
    /// `HEAD`'s blob of the file, when git found the file on disk the same.
    clean_head: Option<&'a str>,
}

/// Each file's versions, newest first, from `git log --raw --no-abbrev`
/// with the format `%x01%H %aI`.
fn versions(log: &str) -> HashMap<&str, Vec<Version<'_>>> {
    let mut history: HashMap<&str, Vec<Version>> = HashMap::new();
    let mut current: Option<(&str, &str)> = None;
    for line in log.lines() {
        if let Some(h) = line.strip_prefix('\u{1}') {
            current = h.split_once(' ');
            continue;
        }
        // `:<mode> <mode> <oid> <oid> <status>\t<path>[\t<new path>]`
        let (Some(raw), Some((sha, date))) = (line.strip_prefix(':'), current) else {
            continue;
        };
        let Some((fields, paths)) = raw.split_once('\t') else {
            continue;
        };
        let path = paths.rsplit('\t').next().unwrap_or(paths);
        let mut f = fields.split(' ');
        let (Some(new), Some(status)) = (f.nth(3), f.next()) else {
            continue;
        };
        let deleted = status.starts_with('D') || new.bytes().all(|b| b == b'0');
        history.entry(path).or_default().push(Version {
            sha,
            date,
            blob: (!deleted).then_some(new),
        });
    }
    history
}

/// Whether the body of the bundle file `rel` on disk differs from the body
/// whose digest is `head` (`None`: `HEAD`'s blob could not be read, which
/// counts as a difference, as does a file that cannot be read).
fn body_differs(bundle_root: &Path, rel: &str, head: Option<String>) -> bool {
    let now = std::fs::read(bundle_root.join(rel))
        .ok()
        .map(|b| file_body_digest(&String::from_utf8_lossy(&b)));
    head.is_none() || head != now
}

/// Body digests of blobs, by blob id, read as they are needed.
#[derive(Default)]
struct Digests {
    known: HashMap<String, Option<String>>,
}

impl Digests {
    /// Reads the blobs of `oids` not read yet, in one batch.
    fn fill<'a>(&mut self, top: &Path, oids: impl Iterator<Item = &'a str>) {
        let mut new: Vec<&str> = oids.filter(|o| !self.known.contains_key(*o)).collect();
        new.sort_unstable();
        new.dedup();
        let mut found = blob_digests(top, &new);
        for oid in new {
            self.known.insert(oid.to_string(), found.remove(oid));
        }
    }

    /// Takes the body digest of `HEAD`'s blob of each file whose history
    /// must be compared from the file on disk where git found no
    /// difference ([`Walk::clean_head`]): its text is the blob's, so
    /// reading the file (and digesting it, CRLF normalised as the digest
    /// always is) spares git inflating the blob, the dearest read of a
    /// history walk. Returns the blobs so seeded, to be forgotten after
    /// the walk: a digest taken from a file is only as good as the moment
    /// it was read, and what is kept for later runs comes from git.
    fn seed_from_disk<'a>(&mut self, bundle_root: &Path, walks: &[Walk<'a>]) -> Vec<&'a str> {
        use rayon::prelude::*;
        let wanted: Vec<(&str, &str)> = walks
            .iter()
            .filter(|w| w.commits.len() > 1 && w.clean_head == w.commits[0].blob)
            .filter_map(|w| Some((w.path, w.clean_head?)))
            .filter(|(_, oid)| !self.known.contains_key(*oid))
            .collect();
        let read: Vec<(&str, String)> = wanted
            .par_iter()
            .filter_map(|(p, oid)| {
                let bytes = std::fs::read(bundle_root.join(p)).ok()?;
                Some((*oid, file_body_digest(&String::from_utf8_lossy(&bytes))))
            })
            .collect();
        let mut seeded = vec![];
        for (oid, digest) in read {
            self.known.insert(oid.to_string(), Some(digest));
            seeded.push(oid);
        }
        seeded
    }

    /// Forgets the digests of `oids`.
    fn forget(&mut self, oids: &[&str]) {
        for oid in oids {
            self.known.remove(*oid);
        }
    }

    /// The body digest of a blob read before.
    fn get(&self, oid: Option<&str>) -> Option<String> {
        self.known.get(oid?).cloned().flatten()
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
    let paths: Vec<&str> = candidates.iter().map(|c| c.path.as_str()).collect();
    let found = provenance(repo, bundle_root, &paths);
    findings(candidates, |p| found.get(p), severity)
}

/// The findings of the git tier for `candidates`, given where each one's
/// body stands (`found`).
fn findings<'a>(
    candidates: &[Candidate],
    found: impl Fn(&str) -> Option<&'a Provenance>,
    severity: okfit_core::diag::Severity,
) -> Vec<Diagnostic> {
    let mut out = vec![];
    for c in candidates {
        let Some(Provenance::Changed { sha, at: derived }) = found(&c.path) else {
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

/// What the git tier found over a bundle at one `HEAD`, for the next run
/// over the same bundle. While `HEAD` names the same commit, a file's
/// provenance changes only with its own text: the next run, told which
/// files may have changed since, asks git for `HEAD` alone (one short
/// call), compares only those files' bodies with `HEAD`'s, and reads no
/// history unless a body returned to its committed text.
pub struct Memo {
    repo: Repo,
    /// Each candidate looked at, and where its body stood (`None`: git
    /// has no history of it).
    found: HashMap<String, Option<Provenance>>,
    /// The last body change of each file found committed as it is, kept
    /// while the file is edited: a body edited back needs no history read.
    walked: HashMap<String, Provenance>,
    /// Body digests of the blobs read so far, by blob id.
    digests: Digests,
    /// Whether making this memo read the bundle's history.
    read_history: bool,
}

impl Memo {
    /// The git tier's first run over `candidates` in `repo` (from
    /// [`Repo::discover`]).
    pub fn first(repo: Repo, bundle_root: &Path, candidates: &[Candidate]) -> Memo {
        let mut memo = Memo {
            repo,
            found: HashMap::new(),
            walked: HashMap::new(),
            digests: Digests::default(),
            read_history: false,
        };
        let paths: Vec<&str> = candidates.iter().map(|c| c.path.as_str()).collect();
        memo.look_again(bundle_root, &paths);
        memo
    }

    /// The next run over `candidates`, where only the bundle files for
    /// which `touched` holds may have changed since this memo's run. `None`
    /// once the bundle is in no repository with a commit.
    pub fn again(
        mut self,
        bundle_root: &Path,
        candidates: &[Candidate],
        touched: impl Fn(&str) -> bool,
    ) -> Option<Memo> {
        let head = head_of(bundle_root)?;
        if !self.repo.same(&head) {
            return Some(Memo::first(
                Repo::discover(bundle_root)?,
                bundle_root,
                candidates,
            ));
        }
        self.read_history = false;
        // The files to look at again, each with its blob in `HEAD`.
        let again: Vec<(&str, Option<String>)> = candidates
            .iter()
            .map(|c| c.path.as_str())
            .filter(|p| touched(p) || !self.found.contains_key(*p))
            .map(|p| (p, self.repo.tracked.get(&self.repo.path(p)).cloned()))
            .collect();
        self.digests.fill(
            &self.repo.top,
            again.iter().filter_map(|(_, oid)| oid.as_deref()),
        );
        let mut history = vec![];
        for (p, oid) in &again {
            let Some(oid) = oid.as_deref() else {
                self.found
                    .insert(p.to_string(), Some(Provenance::Untracked));
                continue;
            };
            if body_differs(bundle_root, p, self.digests.get(Some(oid))) {
                self.found.insert(p.to_string(), Some(Provenance::Dirty));
            } else if let Some(v) = self.walked.get(*p) {
                self.found.insert(p.to_string(), Some(v.clone()));
            } else {
                history.push(*p);
            }
        }
        if !history.is_empty() {
            self.look_again(bundle_root, &history);
        }
        Some(self)
    }

    /// Looks `paths` up in the bundle's history, as [`provenance`] does.
    fn look_again(&mut self, bundle_root: &Path, paths: &[&str]) {
        let mut found = provenance_with(&self.repo, bundle_root, paths, &mut self.digests);
        for p in paths {
            let v = found.remove(*p);
            if let Some(changed @ Provenance::Changed { .. }) = &v {
                self.walked.insert(p.to_string(), changed.clone());
            }
            self.found.insert(p.to_string(), v);
        }
        self.read_history |= !paths.is_empty();
    }

    /// The findings for `candidates`, as [`drift`] makes them.
    pub fn findings(
        &self,
        candidates: &[Candidate],
        severity: okfit_core::diag::Severity,
    ) -> Vec<Diagnostic> {
        findings(
            candidates,
            |p| self.found.get(p).and_then(Option::as_ref),
            severity,
        )
    }

    /// Whether the run that made or last renewed this memo read the
    /// bundle's history (`git log`), rather than reusing it.
    pub fn read_history(&self) -> bool {
        self.read_history
    }
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
