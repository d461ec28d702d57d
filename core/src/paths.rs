//! Bundle-relative posix paths: normalisation, joining, the URL test and
//! percent-decoding used by link resolution.

/// Normalises `.` and `..` segments and repeated slashes. `None` when the
/// path climbs above the root. Borrows when there is nothing to change.
pub fn normalize_cow(path: &str) -> Option<std::borrow::Cow<'_, str>> {
    let clean = !path.starts_with('/')
        && !path.contains("//")
        && path.split('/').all(|seg| seg != "." && seg != "..");
    if clean {
        Some(std::borrow::Cow::Borrowed(path))
    } else {
        normalize(path).map(std::borrow::Cow::Owned)
    }
}

/// Normalises `.` and `..` segments and repeated slashes. `None` when the
/// path climbs above the root.
pub fn normalize(path: &str) -> Option<String> {
    normalize_join("", path)
}

/// [`normalize`] of `dir/rel` (`rel` alone when `dir` is empty), without
/// building the joined path first: link resolution does this for every
/// relative link of a bundle.
pub fn normalize_join(dir: &str, rel: &str) -> Option<String> {
    let mut out: Vec<&str> = Vec::with_capacity(8);
    for seg in dir.split('/').chain(rel.split('/')) {
        match seg {
            "" | "." => {}
            ".." => {
                out.pop()?;
            }
            s => out.push(s),
        }
    }
    let mut s = String::with_capacity(dir.len() + rel.len() + 1);
    for (i, seg) in out.iter().enumerate() {
        if i > 0 {
            s.push('/');
        }
        s.push_str(seg);
    }
    if rel.ends_with('/') && !s.is_empty() {
        s.push('/');
    }
    Some(s)
}

/// The directory part of a bundle-relative path (`""` at the root).
pub fn dirname(path: &str) -> &str {
    path.rfind('/').map_or("", |i| &path[..i])
}

/// True for an absolute URL: contains `://`, starts with `//`, or starts
/// with a scheme of two or more characters (`mailto:`, `https:`; not `C:`).
pub fn is_url(s: &str) -> bool {
    if s.contains("://") || s.starts_with("//") {
        return true;
    }
    let Some(colon) = s.find(':') else {
        return false;
    };
    let scheme = &s[..colon];
    scheme.len() >= 2
        && scheme.as_bytes()[0].is_ascii_alphabetic()
        && scheme
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-'))
}

/// Percent-decodes; on invalid UTF-8 the input is returned unchanged.
pub fn percent_decode(s: &str) -> String {
    percent_decode_cow(s).into_owned()
}

/// [`percent_decode`], borrowing when there is nothing to decode.
pub fn percent_decode_cow(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('%') {
        return std::borrow::Cow::Borrowed(s);
    }
    match percent_encoding::percent_decode_str(s).decode_utf8() {
        Ok(c) => c,
        Err(_) => std::borrow::Cow::Borrowed(s),
    }
}

/// Matches a glob (`*` within a segment, `**` across segments, `?`) against a path.
pub fn glob_match(pattern: &str, path: &str) -> bool {
    fn seg_match(p: &[u8], s: &[u8]) -> bool {
        match (p.first(), s.first()) {
            (None, None) => true,
            (Some(b'*'), _) => seg_match(&p[1..], s) || (!s.is_empty() && seg_match(p, &s[1..])),
            (Some(b'?'), Some(_)) => seg_match(&p[1..], &s[1..]),
            (Some(a), Some(b)) if a == b => seg_match(&p[1..], &s[1..]),
            _ => false,
        }
    }
    fn segs(p: &[&str], s: &[&str]) -> bool {
        match p.first() {
            None => s.is_empty(),
            Some(&"**") => segs(&p[1..], s) || (!s.is_empty() && segs(p, &s[1..])),
            Some(ps) => {
                !s.is_empty() && seg_match(ps.as_bytes(), s[0].as_bytes()) && segs(&p[1..], &s[1..])
            }
        }
    }
    let p: Vec<&str> = pattern.split('/').filter(|x| !x.is_empty()).collect();
    let s: Vec<&str> = path.split('/').filter(|x| !x.is_empty()).collect();
    segs(&p, &s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn joining_normalizes_as_the_joined_path_would() {
        let dirs = ["", "a", "a/b", "a/./b"];
        let rels = [
            "c.md",
            "./c.md",
            "../c.md",
            "../../c.md",
            "../../../c.md",
            "x/",
            "./",
            "..",
            "a//b",
            "/c.md",
        ];
        for dir in dirs {
            for rel in rels {
                let joined = if dir.is_empty() {
                    rel.to_string()
                } else {
                    format!("{dir}/{rel}")
                };
                assert_eq!(
                    normalize_join(dir, rel),
                    normalize(&joined),
                    "{dir} + {rel}"
                );
            }
        }
    }

    #[test]
    fn paths() {
        assert_eq!(normalize("a/./b/../c.md").as_deref(), Some("a/c.md"));
        assert_eq!(normalize("../x"), None);
        assert_eq!(normalize("a//b/").as_deref(), Some("a/b/"));
        assert_eq!(dirname("a/b/c.md"), "a/b");
        assert_eq!(dirname("c.md"), "");
        assert!(is_url("https://x.y"));
        assert!(is_url("mailto:a@b"));
        assert!(!is_url("C:/x"));
        assert!(!is_url("tables/orders.md"));
        assert_eq!(percent_decode("my%20notes.md"), "my notes.md");
        assert_eq!(percent_decode("%ff"), "%ff");
        assert!(glob_match("docs/**/*.md", "docs/a/b/c.md"));
        assert!(glob_match("docs/**/*.md", "docs/c.md"));
        assert!(!glob_match("docs/*.md", "docs/a/c.md"));
        assert!(glob_match("README.?d", "README.md"));
    }
}
