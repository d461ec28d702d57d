//! A generated bundle committed to its own git repository, so that the
//! git tier of `generated-at-drift` reads its history: a first commit of
//! every file, then a second that changes the body of every tenth concept
//! (fixed names and dates, so the history is the same on every machine).
//! The generator's concepts record `generated` without a body digest.

use crate::generator;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The file that says which bundle `dir` holds, committed how.
pub const STAMP_FILE: &str = ".okfit-gen-stamp";

/// Makes `dir` a git repository holding a copy of the generated project
/// `source` (whose generator stamp is `stamp`), unless it holds it already.
/// Returns how many concepts it walked to edit (0 when it was up to date).
pub fn make(source: &Path, dir: &Path, stamp: &str) -> Result<usize, String> {
    let stamp = format!("{stamp} committed 2\n");
    let stamp_path = dir.join(STAMP_FILE);
    let shown = dir.display();
    let fail = |what: &str, e: &dyn std::fmt::Display| format!("{shown}: {what}: {e}");
    if fs::read_to_string(&stamp_path).is_ok_and(|s| s == stamp) && dir.join(".git").is_dir() {
        return Ok(0);
    }
    if dir.exists() {
        fs::remove_dir_all(dir).map_err(|e| fail("cannot remove", &e))?;
    }
    copy_tree(source, dir).map_err(|e| fail("cannot copy", &e))?;
    let _ = fs::remove_file(&stamp_path);
    let git = |args: &[&str], date: &str| -> Result<(), String> {
        let out = Command::new("git")
            .args(["-c", "commit.gpgsign=false", "-c", "core.autocrlf=false"])
            .args(args)
            .current_dir(dir)
            .env("GIT_AUTHOR_NAME", "okfit-bench")
            .env("GIT_AUTHOR_EMAIL", "bench@okfit.invalid")
            .env("GIT_COMMITTER_NAME", "okfit-bench")
            .env("GIT_COMMITTER_EMAIL", "bench@okfit.invalid")
            .env("GIT_AUTHOR_DATE", date)
            .env("GIT_COMMITTER_DATE", date)
            .output()
            .map_err(|e| fail("cannot run git", &e))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(fail(
                &format!("git {}", args.join(" ")),
                &String::from_utf8_lossy(&out.stderr).trim(),
            ))
        }
    };
    let first = "2026-03-01T00:00:00Z";
    git(&["init", "-q"], first)?;
    git(&["add", "-A"], first)?;
    git(&["commit", "-q", "-m", "bundle"], first)?;
    let bundle = dir.join(generator::BUNDLE_DIR);
    let mut walked = 0;
    for area in sorted_entries(&bundle).map_err(|e| fail("cannot list", &e))? {
        if !area.is_dir() {
            continue;
        }
        for file in sorted_entries(&area).map_err(|e| fail("cannot list", &e))? {
            if !is_concept(&file) {
                continue;
            }
            if walked % 10 == 0 {
                let mut text = fs::read_to_string(&file).map_err(|e| fail("cannot read", &e))?;
                text.push_str("\nA paragraph added later.\n");
                fs::write(&file, text).map_err(|e| fail("cannot write", &e))?;
            }
            walked += 1;
        }
    }
    git(
        &["commit", "-q", "-a", "-m", "edit bodies"],
        "2026-04-01T00:00:00Z",
    )?;
    fs::write(&stamp_path, &stamp).map_err(|e| fail("cannot write the stamp", &e))?;
    Ok(walked)
}

/// Whether a file of a generated bundle's folder is a concept (Markdown,
/// not the folder's `index.md`).
pub fn is_concept(file: &Path) -> bool {
    file.extension().is_some_and(|e| e == "md") && file.file_name().is_some_and(|n| n != "index.md")
}

/// The entries of `dir`, sorted by name.
pub fn sorted_entries(dir: &Path) -> io::Result<Vec<PathBuf>> {
    let mut v = fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<io::Result<Vec<_>>>()?;
    v.sort();
    Ok(v)
}

/// Copies the files and folders under `from` to `to` (created).
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir_all(to)?;
    for entry in fs::read_dir(from)? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else {
            fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}
