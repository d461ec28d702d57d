//! Unsaved documents (`documents: [{path, text}]`) shadowing files on disk
//! for one validation: the path rules of reference §9.

use crate::paths::{dirname, normalize};

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

/// Checks each path in order and returns the normalised bundle-relative
/// paths. `dir_exists` answers for a bundle-relative directory (`""` = root).
pub fn check_paths<'a>(
    paths: impl IntoIterator<Item = &'a str>,
    dir_exists: impl Fn(&str) -> bool,
) -> Result<Vec<String>, OverlayError> {
    let mut out: Vec<String> = vec![];
    for p in paths {
        let err = |reason| OverlayError {
            path: p.to_string(),
            reason,
        };
        if p.is_empty()
            || p.contains('\\')
            || p.starts_with('/')
            || p.contains('\0')
            || looks_absolute(p)
        {
            return Err(err("must be a bundle-relative posix path"));
        }
        if !p.ends_with(".md") {
            return Err(err("must name a .md file"));
        }
        let n = match normalize(p) {
            Some(n) if !n.is_empty() => n,
            _ => return Err(err("resolves outside the bundle root")),
        };
        if out.contains(&n) {
            return Err(err("was given more than once"));
        }
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
}
