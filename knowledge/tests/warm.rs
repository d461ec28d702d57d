//! Warm re-validation (the validation layer of the project's live view,
//! behind the MCP server's `validate_bundle`) against cold runs: after
//! every kind of change, the warm report equals a fresh `okfit validate`
//! of the same files, whichever other layers read the folder meanwhile.

use okfit_core::time::Instant;
use okfit_knowledge::documents::Bodies;
use okfit_knowledge::live::Live;
use okfit_knowledge::project::{self, LoadOptions};
use okfit_knowledge::warm::Work;
use okfit_store::discover::{self, Project};
use std::path::{Path, PathBuf};

const DAY: i64 = 86_400_000;
/// 2026-09-01T00:00:00Z.
const NOW: Instant = Instant(1_788_220_800_000);

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let t = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &t);
        } else {
            std::fs::copy(e.path(), &t).unwrap();
        }
    }
}

fn cold(p: &Project, now: Instant) -> String {
    let loaded = project::load(
        p,
        &LoadOptions {
            now: Some(now),
            git: true,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let r = project::validate(p, &loaded, false);
    format!("{:#?}\n{:?}", r.diagnostics, r.summary)
}

fn warm(w: &Live, now: Instant) -> String {
    let (_, r) = w.validate(now, false).unwrap();
    format!("{:#?}\n{:?}", r.diagnostics, r.summary)
}

/// What a warm run that read `parsed` files and checked `checked`
/// documents did.
fn warm_work(parsed: usize, checked: usize) -> Work {
    Work {
        cold: false,
        parsed,
        checked,
        history: false,
    }
}

/// A Skill concept titled `title`, its heading and then `rest`.
fn skill(title: &str, rest: &str) -> String {
    format!("---\ntype: Skill\ntitle: {title}\n---\n\n# {title}\n\n{rest}")
}

struct Case {
    _dir: tempfile::TempDir,
    project: PathBuf,
}

impl Case {
    fn bundle(&self, rel: &str) -> PathBuf {
        self.project.join("bundle").join(rel)
    }

    /// Writes `text` so that the new stamp differs even within one tick of
    /// the file system's clock (the length changes, or time moves on).
    fn write(&self, rel: &str, text: &str) {
        let p = self.bundle(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        let before = std::fs::metadata(&p).ok();
        std::fs::write(&p, text).unwrap();
        if let Some(b) = before {
            let after = std::fs::metadata(&p).unwrap();
            if b.len() == after.len() && b.modified().ok() == after.modified().ok() {
                std::thread::sleep(std::time::Duration::from_millis(20));
                std::fs::write(&p, text).unwrap();
            }
        }
    }

    fn project(&self) -> Project {
        discover::resolve(Some(&self.project), &self.project, None).unwrap()
    }
}

fn case() -> Case {
    let dir = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(dir.path()).unwrap().join("project");
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/mcp/project"),
        &project,
    );
    Case { _dir: dir, project }
}

#[test]
fn warm_reports_equal_cold_runs_after_every_kind_of_change() {
    let c = case();
    let w = Live::new(c.project.clone());
    let check = |w: &Live, what: &str, now: Instant| {
        let p = c.project();
        assert_eq!(warm(w, now), cold(&p, now), "after {what}");
    };
    let work = |w: &Live| w.validation_work().expect("a validation ran");
    check(&w, "the first run", NOW);
    assert!(work(&w).cold);
    check(&w, "nothing", NOW);
    let nothing = warm_work(0, 0);
    assert_eq!(work(&w), nothing);
    // A concept other concepts link to with #fragments: its headings change.
    c.write("notes/target.md", &skill("Target", "## Usage\n\nText.\n"));
    c.write(
        "notes/linker.md",
        &skill(
            "Linker",
            "[ok](target.md#usage) [bad](target.md#nope) [gone](missing.md)\n",
        ),
    );
    check(&w, "adding two files", NOW);
    c.write(
        "notes/target.md",
        &skill("Target", "## Nope\n\nRenamed heading.\n"),
    );
    check(&w, "renaming a heading the linker points at", NOW);
    // Only the target is read again; it and its linker are checked again.
    let one = warm_work(1, 2);
    assert_eq!(work(&w), one);
    c.write("notes/target.md", "---\ntype: [\n---\n\n# Target\n");
    check(&w, "breaking the target's frontmatter", NOW);
    c.write(
        "notes/missing.md",
        "---\ntype: Skill\ntitle: Missing\n---\n# Missing\n",
    );
    check(&w, "creating a broken link's target", NOW);
    std::fs::remove_file(c.bundle("notes/missing.md")).unwrap();
    check(&w, "removing it again", NOW);
    std::fs::write(c.bundle("notes/diagram.png"), b"png").unwrap();
    c.write(
        "notes/linker.md",
        &skill("Linker", "![d](diagram.png) [self](#linker) [bad](#none)\n"),
    );
    check(&w, "an asset and self links", NOW);
    // stale_after between two runs' now: the same files, another finding.
    c.write(
        "notes/aging.md",
        "---\ntype: Skill\ntitle: Aging\nstale_after: 2026-09-10T00:00:00Z\n---\n# Aging\n",
    );
    check(&w, "a concept going stale later", NOW);
    check(
        &w,
        "time passing its stale_after",
        Instant(NOW.0 + 30 * DAY),
    );
    // Re-timed in place: the file is not read again.
    assert_eq!(work(&w).parsed, 0);
    assert!(work(&w).checked >= 1);
    check(&w, "time going back before it", NOW);
    assert_eq!(work(&w).parsed, 0);
    // The bundle tools read the folder between two validations: the
    // change they saw first is still checked again, from their read.
    let listed = |w: &Live| w.read(Bodies::None, |_, b| b.docs.len()).unwrap();
    assert!(listed(&w) > 0);
    c.write("notes/target.md", &skill("Target", "## Usage\n\nBack.\n"));
    assert!(listed(&w) > 0);
    let kb = w.knowledge().unwrap();
    let before = kb.reads();
    check(&w, "a change the bundle tools saw first", NOW);
    assert_eq!(
        work(&w),
        warm_work(1, 1),
        "no #fragment link leads there now"
    );
    assert_eq!(kb.reads(), before, "the tools' read is the validation's");
    // The config changes: everything is parsed again.
    let cfg = c.project.join(".config/okfit.toml");
    let text = std::fs::read_to_string(&cfg).unwrap();
    std::fs::write(&cfg, format!("{text}\n[lint]\nbroken_links = \"error\"\n")).unwrap();
    check(&w, "a config change", NOW);
    assert!(work(&w).cold);
}

#[test]
fn a_rendered_concept_edited_in_place_drifts_as_in_a_cold_run() {
    // The default profile checks Publications: their renders' digests are
    // filled in again for a target read again in place.
    let dir = tempfile::tempdir().unwrap();
    let project = std::fs::canonicalize(dir.path()).unwrap();
    let bundle = project.join("bundle");
    std::fs::create_dir_all(&bundle).unwrap();
    std::fs::write(project.join("okfit.toml"), "[bundle]\npath = \"bundle\"\n").unwrap();
    let write = |rel: &str, text: &str| std::fs::write(bundle.join(rel), text).unwrap();
    write(
        "surf.md",
        "---\ntype: Surface\ntitle: Surf\ndescription: d\n---\n# Surf\n",
    );
    let a = skill("A", "Body one.\n");
    write("a.md", &a);
    let digest = okfit_core::doc::file_body_digest(&a);
    write(
        "pub.md",
        &format!(
            "---\ntype: Publication\ntitle: Pub\ndescription: d\nstatus: stable\nsurface: surf\nrenders:\n  - path: a.md\n    body_sha256: {digest}\n---\n# Pub\n"
        ),
    );
    let w = Live::new(project.clone());
    let p = discover::resolve(None, &project, None).unwrap();
    let drift = |text: &str| text.contains("publication-drift");
    let first = warm(&w, NOW);
    assert_eq!(first, cold(&p, NOW));
    assert!(!drift(&first), "{first}");
    write("a.md", &skill("A", "Body two, longer.\n"));
    let edited = warm(&w, NOW);
    assert_eq!(edited, cold(&p, NOW));
    assert!(drift(&edited), "{edited}");
    assert_eq!(
        w.validation_work().unwrap(),
        warm_work(1, 2),
        "a.md and pub.md"
    );
    write("a.md", &a);
    let back = warm(&w, NOW);
    assert_eq!(back, cold(&p, NOW));
    assert!(!drift(&back), "{back}");
}

/// Runs git in `dir` with a fixed identity, `date` as the author date,
/// and no configuration but its own.
fn git(dir: &Path, date: &str, args: &[&str]) -> Option<String> {
    let out = std::process::Command::new("git")
        .current_dir(dir)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test Author")
        .env("GIT_AUTHOR_EMAIL", "author@example.invalid")
        .env("GIT_COMMITTER_NAME", "Test Committer")
        .env("GIT_COMMITTER_EMAIL", "committer@example.invalid")
        .env("GIT_AUTHOR_DATE", date)
        .env("GIT_COMMITTER_DATE", "2026-08-30T12:00:00Z")
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A concept that records `generated` at `at` without a body digest, so
/// the git tier of `generated-at-drift` reads its history.
fn generated(at: &str, title: &str, body: &str) -> String {
    format!(
        "---\ntype: Note\ntitle: {title}\ndescription: A generated note.\ngenerated: {{by: okfit/test, at: {at}}}\n---\n\n# {title}\n\n{body}\n"
    )
}

/// A project whose bundle is `bundle/`, in a git repository of its own.
struct GitProject {
    _dir: tempfile::TempDir,
    project: PathBuf,
}

impl GitProject {
    /// The repository, made empty; `None` (said on stderr) without git.
    fn new(what: &str) -> Option<GitProject> {
        let dir = tempfile::tempdir().unwrap();
        let project = std::fs::canonicalize(dir.path()).unwrap().join("repo");
        std::fs::create_dir_all(project.join("bundle")).unwrap();
        std::fs::write(project.join("okfit.toml"), "[bundle]\npath = \"bundle\"\n").unwrap();
        if git(&project, "2026-01-01T00:00:00Z", &["init", "-q"]).is_none() {
            eprintln!("git not found: {what} is not tested");
            return None;
        }
        Some(GitProject { _dir: dir, project })
    }

    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.project.join("bundle").join(rel), text).unwrap();
    }

    /// Commits every file, authored at `date`.
    fn commit(&self, date: &str) {
        git(&self.project, date, &["add", "-A"]);
        git(&self.project, date, &["commit", "-q", "-m", "c"]);
    }
}

#[test]
fn the_git_tier_reads_history_again_only_when_head_moves_or_a_body_returns() {
    let Some(repo) = GitProject::new("the git tier's memo") else {
        return;
    };
    let write = |rel: &str, text: &str| repo.write(rel, text);
    let commit = |date: &str| repo.commit(date);
    let project = &repo.project;
    let gen = generated("2020-01-01T00:00:00Z", "Gen", "Body one.");
    write("gen.md", &gen);
    write(
        "other.md",
        &generated("2020-01-01T00:00:00Z", "Other", "Other body."),
    );
    commit("2026-03-04T05:06:07Z");
    let w = Live::new(project.clone());
    let p = discover::resolve(None, project, None).unwrap();
    let drifts = |r: &str| r.matches("generated-at-drift").count();
    // Each step: the warm report equals a cold run's, and the history was
    // read again or not.
    let step = |what: &str, history: bool| -> String {
        let r = warm(&w, NOW);
        assert_eq!(r, cold(&p, NOW), "after {what}");
        assert_eq!(w.validation_work().unwrap().history, history, "{what}");
        r
    };
    let first = step("the first run", true);
    assert_eq!(drifts(&first), 2, "{first}");
    step("nothing", false);
    // An edited body is not committed: no finding for it, no history read.
    write(
        "gen.md",
        &generated("2020-01-01T00:00:00Z", "Gen", "Body two, longer."),
    );
    let dirty = step("an edited body", false);
    assert_eq!(drifts(&dirty), 1, "{dirty}");
    // Frontmatter alone edited: the body is still the committed one.
    write(
        "other.md",
        &generated("2021-01-01T00:00:00Z", "Other", "Other body."),
    );
    step("an edited frontmatter", false);
    // The body edited back to its committed text: its last change is
    // known from the first run.
    write("gen.md", &gen);
    let back = step("a body edited back", false);
    assert_eq!(drifts(&back), 2, "{back}");
    // A new concept, not committed.
    write(
        "new.md",
        &generated("2020-01-01T00:00:00Z", "New", "New body."),
    );
    step("an untracked concept", false);
    // A commit moves HEAD: the history is read again.
    commit("2026-04-05T06:07:08Z");
    let moved = step("a commit", true);
    assert!(moved.contains("2026-04-05T06:07:08Z"), "{moved}");
    step("nothing after the commit", false);
}

#[test]
fn the_git_tier_finds_the_same_for_one_file_as_for_the_whole_bundle() {
    // More files than git is given one by one: the full run asks about the
    // bundle's directory, each one-file check about its own path.
    let Some(repo) = GitProject::new("the git tier's pathspecs") else {
        return;
    };
    let write = |rel: &str, text: &str| repo.write(rel, text);
    let commit = |date: &str| repo.commit(date);
    let name = |i: usize| format!("gen-{i:03}.md");
    let at = "2020-01-01T00:00:00Z";
    for i in 0..70 {
        write(&name(i), &generated(at, &format!("Gen {i}"), "Body one."));
    }
    commit("2026-03-04T05:06:07Z");
    // Every seventh body edited, every fifth frontmatter alone.
    for i in 0..70 {
        let title = format!("Gen {i}");
        if i % 7 == 0 {
            write(&name(i), &generated(at, &title, "Body two."));
        } else if i % 5 == 0 {
            write(
                &name(i),
                &generated("2021-01-01T00:00:00Z", &title, "Body one."),
            );
        }
    }
    commit("2026-04-05T06:07:08Z");
    // One body edited and not committed.
    write(&name(3), &generated(at, "Gen 3", "Body three."));
    let p = discover::resolve(None, &repo.project, None).unwrap();
    let drift = |r: &okfit_core::bundle::Report, file: &str| -> Vec<String> {
        r.diagnostics
            .iter()
            .filter(|d| d.code == "generated-at-drift" && d.file == file)
            .map(|d| d.message.clone())
            .collect()
    };
    let loaded = project::load(
        &p,
        &LoadOptions {
            now: Some(NOW),
            git: true,
            ..LoadOptions::default()
        },
    )
    .unwrap();
    let full = project::validate(&p, &loaded, false);
    for i in 0..70 {
        let f = name(i);
        let one = project::validate_file(&p, &f, NOW, false).unwrap();
        let expected = drift(&full, &f);
        assert_eq!(drift(&one, &f), expected, "{f}");
        let when = match i {
            3 => None,
            _ if i % 7 == 0 => Some("2026-04-05T06:07:08Z"),
            _ => Some("2026-03-04T05:06:07Z"),
        };
        match when {
            None => assert!(expected.is_empty(), "{f}: {expected:?}"),
            Some(w) => assert!(
                expected.len() == 1 && expected[0].contains(w),
                "{f}: {expected:?}"
            ),
        }
    }
}
