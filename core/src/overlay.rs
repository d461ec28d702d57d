//! Unsaved documents (`documents: [{path, text}]`) shadowing files on disk
//! for one validation, or making up a whole bundle in memory: the path
//! rules of reference §9.

use crate::paths::{dirname, normalize};
use rustc_hash::FxHashSet as HashSet;

/// Why a given path was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// It contains a NUL character.
    Nul,
    /// It contains a backslash.
    Backslash,
    /// It starts with `/` or a drive letter.
    Absolute,
    /// It is empty.
    Empty,
    /// It does not end in `.md` where only documents are given.
    NotMarkdown,
    /// It climbs above the bundle root.
    Outside,
    /// It names the bundle root, not a file.
    NoFile,
    /// An earlier path named the same file.
    Repeated,
}

impl Refusal {
    /// The reason, as the sentence's end after the quoted path.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Nul => "contains a NUL character",
            Refusal::Backslash => "must use forward slashes only",
            Refusal::Absolute => "must be relative to the bundle root",
            Refusal::Empty | Refusal::NoFile => "names no file",
            Refusal::NotMarkdown => "must name a .md file",
            Refusal::Outside => "must be a relative path inside the bundle",
            Refusal::Repeated => "was given more than once",
        }
    }
}

/// Paths given from outside, checked one at a time in the order given:
/// each must be a bundle-relative posix path inside the root, named once.
#[derive(Debug, Default)]
pub struct Given {
    documents_only: bool,
    seen: HashSet<(String, String)>,
}

impl Given {
    /// Paths of documents only (`.md`): the rest of the bundle is on disk.
    pub fn documents() -> Given {
        Given {
            documents_only: true,
            ..Given::default()
        }
    }

    /// Paths of any file: documents and assets make up the whole bundle.
    pub fn files() -> Given {
        Given::default()
    }

    /// Checks `p` and returns it normalised.
    pub fn check(&mut self, p: &str) -> Result<String, Refusal> {
        self.check_in("", p)
    }

    /// [`Given::check`] where the same path may be given once per `scope`
    /// (a bundle name).
    pub fn check_in(&mut self, scope: &str, p: &str) -> Result<String, Refusal> {
        if p.contains('\0') {
            return Err(Refusal::Nul);
        }
        if p.contains('\\') {
            return Err(Refusal::Backslash);
        }
        if p.starts_with('/') || looks_absolute(p) {
            return Err(Refusal::Absolute);
        }
        if p.is_empty() {
            return Err(Refusal::Empty);
        }
        if self.documents_only && !p.ends_with(".md") {
            return Err(Refusal::NotMarkdown);
        }
        let n = match normalize(p) {
            None => return Err(Refusal::Outside),
            Some(n) if n.is_empty() => return Err(Refusal::NoFile),
            Some(n) => n,
        };
        if !self.seen.insert((scope.to_string(), n.clone())) {
            return Err(Refusal::Repeated);
        }
        Ok(n)
    }
}

/// Why an unsaved document's path was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverlayError {
    /// The path as given.
    pub path: String,
    /// The reason text.
    pub reason: &'static str,
}

impl std::fmt::Display for OverlayError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "document path \"{}\" {}", self.path, self.reason)
    }
}

impl std::error::Error for OverlayError {}

/// Checks each path in order ([`Given::documents`], then the directory
/// rule) and returns the normalised bundle-relative paths. `dir_exists`
/// answers for a bundle-relative directory (`""` = root).
pub fn check_paths<'a>(
    paths: impl IntoIterator<Item = &'a str>,
    dir_exists: impl Fn(&str) -> bool,
) -> Result<Vec<String>, OverlayError> {
    let mut given = Given::documents();
    let mut out: Vec<String> = vec![];
    for p in paths {
        let err = |reason| OverlayError {
            path: p.to_string(),
            reason,
        };
        let n = given.check(p).map_err(|r| {
            err(match r {
                Refusal::Nul | Refusal::Backslash | Refusal::Absolute | Refusal::Empty => {
                    "must be a bundle-relative posix path"
                }
                Refusal::NotMarkdown => "must name a .md file",
                Refusal::Outside | Refusal::NoFile => "resolves outside the bundle root",
                Refusal::Repeated => "was given more than once",
            })
        })?;
        if !dir_exists(dirname(&n)) {
            return Err(err("names a directory that does not exist in the bundle"));
        }
        out.push(n);
    }
    Ok(out)
}

fn looks_absolute(p: &str) -> bool {
    let b = p.as_bytes();
    b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules() {
        let dirs = |d: &str| d.is_empty() || d == "sub";
        assert_eq!(
            check_paths(["sub/./a.md", "./x/../b.md"], dirs).unwrap(),
            vec!["sub/a.md", "b.md"]
        );
        let e = |p: &'static str| check_paths([p], dirs).unwrap_err().to_string();
        assert_eq!(
            e("../x.md"),
            "document path \"../x.md\" resolves outside the bundle root"
        );
        assert_eq!(
            e("newdir/x.md"),
            "document path \"newdir/x.md\" names a directory that does not exist in the bundle"
        );
        assert_eq!(
            e("/abs.md"),
            "document path \"/abs.md\" must be a bundle-relative posix path"
        );
        assert_eq!(
            e("a\\b.md"),
            "document path \"a\\b.md\" must be a bundle-relative posix path"
        );
        assert_eq!(e("a.txt"), "document path \"a.txt\" must name a .md file");
        assert_eq!(
            check_paths(["a.md", "./a.md"], dirs)
                .unwrap_err()
                .to_string(),
            "document path \"./a.md\" was given more than once"
        );
    }

    #[test]
    fn given_files() {
        let mut g = Given::files();
        assert_eq!(g.check("./data/t.csv"), Ok("data/t.csv".into()));
        assert_eq!(g.check("x/../a.md"), Ok("a.md".into()));
        assert_eq!(g.check("a.md"), Err(Refusal::Repeated));
        assert_eq!(g.check_in("other", "a.md"), Ok("a.md".into()));
        for (p, r) in [
            ("a\0.md", Refusal::Nul),
            ("a\\b.md", Refusal::Backslash),
            ("/abs.md", Refusal::Absolute),
            ("C:/x.md", Refusal::Absolute),
            ("", Refusal::Empty),
            (".", Refusal::NoFile),
            ("a/..", Refusal::NoFile),
            ("../x.md", Refusal::Outside),
        ] {
            assert_eq!(Given::files().check(p), Err(r), "{p:?}");
        }
        assert_eq!(Given::documents().check("."), Err(Refusal::NotMarkdown));
        assert_eq!(
            Refusal::Outside.as_str(),
            "must be a relative path inside the bundle"
        );
    }
}
