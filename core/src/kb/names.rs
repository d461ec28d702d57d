//! Names a store accepts (reference langonrock §1.1, §3.1): tenants,
//! bundles and document paths. A refusal is one sentence naming the input;
//! nothing is written when a name is refused.

/// Longest document path, in characters.
pub const MAX_PATH_CHARS: usize = 200;

fn is_name(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b[1..]
            .iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'-')
}

/// Checks a tenant id: 1–64 characters of `[a-z0-9_-]` (either case), not
/// starting with `_` or `-`.
pub fn check_tenant(t: &str) -> Result<(), String> {
    check_name("tenant id", t)
}

/// Checks a bundle name (same alphabet as tenants).
pub fn check_bundle(b: &str) -> Result<(), String> {
    check_name("bundle name", b)
}

/// Checks a tenant id or bundle name; the refusal calls it `what`.
fn check_name(what: &str, s: &str) -> Result<(), String> {
    if is_name(s) {
        Ok(())
    } else {
        Err(format!(
            "invalid {what} \"{}\": expected 1-64 chars of [a-z0-9_-]",
            shown(s)
        ))
    }
}

/// Checks a document path inside a bundle: relative, forward slashes,
/// at most 200 characters, ending in `.md`, every segment
/// `[a-z0-9][a-z0-9._-]*` (either case), never leaving the bundle.
pub fn check_path(p: &str) -> Result<(), String> {
    let err = |why: &str| Err(format!("invalid path \"{}\": {why}", shown(p)));
    if p.chars().count() > MAX_PATH_CHARS {
        return err("longer than 200 characters");
    }
    if p.contains('\0') {
        return err("contains a NUL character");
    }
    if p.contains('\\') {
        return err("use forward slashes only");
    }
    if p.starts_with('/') {
        return err("must be relative to the bundle");
    }
    if p.split('/').any(|s| s == "..") {
        return err("resolves outside the bundle");
    }
    let ext_ok = p.len() >= 3
        && p.is_char_boundary(p.len() - 3)
        && p[p.len() - 3..].eq_ignore_ascii_case(".md");
    if !ext_ok {
        return err("a concept must be a .md file");
    }
    for seg in p.split('/') {
        let b = seg.as_bytes();
        let ok = !b.is_empty()
            && b[0].is_ascii_alphanumeric()
            && b.iter()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'));
        if !ok {
            return Err(format!(
                "invalid path \"{}\": segment \"{}\" is empty, starts with a dot, or has a character outside [a-z0-9._-]",
                shown(p),
                shown(seg)
            ));
        }
    }
    Ok(())
}

/// A name as shown inside quotes: control characters escaped, long input
/// cut, so a refusal stays one readable line.
fn shown(s: &str) -> String {
    let mut out = String::new();
    for (n, c) in s.chars().enumerate() {
        if n >= 240 {
            out.push('…');
            break;
        }
        match c {
            '\0' => out.push_str("\\0"),
            '"' => out.push_str("\\\""),
            c if c.is_control() => out.push_str(&c.escape_default().to_string()),
            c => out.push(c),
        }
    }
    out
}

/// True for the reserved navigation documents (`index.md`, `log.md`,
/// case-sensitive): stored and exported, never concepts.
pub fn is_navigation(path: &str) -> bool {
    crate::doc::is_reserved(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tenants_and_bundles() {
        assert!(check_tenant("acme").is_ok());
        assert!(check_tenant("Acme_1-x").is_ok());
        assert!(check_tenant(&"a".repeat(64)).is_ok());
        assert_eq!(
            check_tenant(&"a".repeat(65)).unwrap_err(),
            format!(
                "invalid tenant id \"{}\": expected 1-64 chars of [a-z0-9_-]",
                "a".repeat(65)
            )
        );
        for bad in ["", "-a", "_a", "a b", "a/b", "ä", ".."] {
            assert!(check_tenant(bad).is_err(), "{bad}");
            assert!(check_bundle(bad).is_err(), "{bad}");
        }
        assert_eq!(
            check_bundle("no way").unwrap_err(),
            "invalid bundle name \"no way\": expected 1-64 chars of [a-z0-9_-]"
        );
    }

    #[test]
    fn paths() {
        for ok in [
            "a.md",
            "tables/orders.md",
            "v1.2.md",
            "A/B.MD",
            "x/y-z_1.md",
        ] {
            assert!(check_path(ok).is_ok(), "{ok}");
        }
        let cases = [
            ("notes.txt", "invalid path \"notes.txt\": a concept must be a .md file"),
            ("/a.md", "invalid path \"/a.md\": must be relative to the bundle"),
            ("a\\b.md", "invalid path \"a\\b.md\": use forward slashes only"),
            ("../a.md", "invalid path \"../a.md\": resolves outside the bundle"),
            ("a/../../b.md", "invalid path \"a/../../b.md\": resolves outside the bundle"),
            ("a\0.md", "invalid path \"a\\0.md\": contains a NUL character"),
            (
                ".hidden/a.md",
                "invalid path \".hidden/a.md\": segment \".hidden\" is empty, starts with a dot, or has a character outside [a-z0-9._-]",
            ),
            (
                "a//b.md",
                "invalid path \"a//b.md\": segment \"\" is empty, starts with a dot, or has a character outside [a-z0-9._-]",
            ),
            (
                "my note.md",
                "invalid path \"my note.md\": segment \"my note.md\" is empty, starts with a dot, or has a character outside [a-z0-9._-]",
            ),
        ];
        for (p, msg) in cases {
            assert_eq!(check_path(p).unwrap_err(), msg);
        }
        let long = format!("{}.md", "a".repeat(197));
        assert!(check_path(&long).is_ok());
        let long = format!("{}.md", "a".repeat(198));
        assert!(check_path(&long)
            .unwrap_err()
            .ends_with("longer than 200 characters"));
        assert!(check_path("é.md").is_err());
        assert!(check_path("ab.mé").is_err());
    }
}
