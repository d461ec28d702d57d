//! Content derived from the concepts: each directory's `index.md`
//! (reference §6.1) and dated groups added to the root `log.md` (§6.2).
//! `okfit sync` and `okfit init` write what these render.

/// One concept as its directory's index lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    /// The concept's `type`.
    pub type_name: String,
    /// Its title.
    pub title: String,
    /// The link target, relative to the index's directory.
    pub target: String,
    /// Its description, when it has one.
    pub description: Option<String>,
}

/// Backslash-escapes the characters Markdown would read as markup.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if matches!(c, '\\' | '<' | '>' | '*' | '_' | '`' | '[' | ']') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// A relative link target as Markdown reads it: spaces, parentheses,
/// angle brackets and `%` percent-encoded (okfit decodes them again when
/// it resolves the link).
pub fn link_target(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    for c in path.chars() {
        match c {
            ' ' => out.push_str("%20"),
            '%' => out.push_str("%25"),
            '(' => out.push_str("%28"),
            ')' => out.push_str("%29"),
            '<' => out.push_str("%3C"),
            '>' => out.push_str("%3E"),
            c => out.push(c),
        }
    }
    out
}

/// Renders an `index.md`: the root's `okf_version` header when
/// `okf_version` is given, one `# <Type>` section per type (types and
/// entries sorted by code unit), then `# Subdirectories`. Nothing to list
/// renders the header alone, or `""`.
pub fn render_index(
    okf_version: Option<&str>,
    entries: &[IndexEntry],
    subdirs: &[String],
) -> String {
    let mut sections: Vec<String> = vec![];
    let mut sorted: Vec<&IndexEntry> = entries.iter().collect();
    sorted.sort_by(|a, b| {
        (a.type_name.as_str(), a.title.as_str(), a.target.as_str()).cmp(&(
            b.type_name.as_str(),
            b.title.as_str(),
            b.target.as_str(),
        ))
    });
    for group in sorted.chunk_by(|a, b| a.type_name == b.type_name) {
        let mut s = format!("# {}\n\n", group[0].type_name);
        for e in group {
            s.push_str(&format!(
                "* [{}]({})",
                escape(&e.title),
                link_target(&e.target)
            ));
            if let Some(d) = e.description.as_deref() {
                let folded = d.split_whitespace().collect::<Vec<_>>().join(" ");
                if !folded.is_empty() {
                    s.push_str(&format!(" - {}", escape(&folded)));
                }
            }
            s.push('\n');
        }
        sections.push(s);
    }
    if !subdirs.is_empty() {
        let mut dirs: Vec<&String> = subdirs.iter().collect();
        dirs.sort();
        dirs.dedup();
        let mut s = "# Subdirectories\n\n".to_string();
        for d in dirs {
            s.push_str(&format!("* [{}]({}/index.md)\n", escape(d), link_target(d)));
        }
        sections.push(s);
    }
    let header = okf_version.map(|v| format!("---\nokf_version: \"{v}\"\n---\n"));
    match (header, sections.is_empty()) {
        (None, true) => String::new(),
        (Some(h), true) => h,
        (None, false) => sections.join("\n"),
        (Some(h), false) => format!("{h}\n{}", sections.join("\n")),
    }
}

/// The date headings (`## YYYY-MM-DD`) of a log's text, in order.
pub fn log_dates(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix("## "))
        .map(str::trim)
        .filter(|d| crate::time::is_date_shape(d))
        .map(str::to_string)
        .collect()
}

/// Adds dated groups to a log: newest first, after the title and before
/// the first existing `## ` heading (so the log keeps newest-first order).
/// An empty or missing log starts as `# Log`.
pub fn add_log_groups(existing: &str, groups: &[(String, Vec<String>)]) -> String {
    if groups.is_empty() {
        return existing.to_string();
    }
    let eol = if existing.contains("\r\n") {
        "\r\n"
    } else {
        "\n"
    };
    let mut sorted: Vec<&(String, Vec<String>)> = groups.iter().collect();
    sorted.sort_by(|a, b| b.0.cmp(&a.0));
    let mut block = String::new();
    for (date, items) in sorted {
        block.push_str(&format!("## {date}{eol}{eol}"));
        for i in items {
            block.push_str(&format!("* {i}{eol}"));
        }
        block.push_str(eol);
    }
    let text = if existing.trim().is_empty() {
        format!("# Log{eol}{eol}")
    } else {
        existing.to_string()
    };
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.starts_with("## ") {
            let mut out = text[..offset].to_string();
            out.push_str(&block);
            out.push_str(&text[offset..]);
            return out;
        }
        offset += line.len();
    }
    let mut out = text;
    if !out.ends_with('\n') {
        out.push_str(eol);
    }
    if !out.ends_with(&format!("{eol}{eol}")) {
        out.push_str(eol);
    }
    out.push_str(block.trim_end_matches(eol));
    out.push_str(eol);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(t: &str, title: &str, target: &str, d: Option<&str>) -> IndexEntry {
        IndexEntry {
            type_name: t.into(),
            title: title.into(),
            target: target.into(),
            description: d.map(str::to_string),
        }
    }

    #[test]
    fn renders_the_reference_example() {
        let out = render_index(
            None,
            &[
                e(
                    "Module",
                    "Web",
                    "web.md",
                    Some("The website, served from\n packages/web."),
                ),
                e("Module", "Core", "core.md", Some("The core package.")),
            ],
            &[],
        );
        assert_eq!(
            out,
            "# Module\n\n* [Core](core.md) - The core package.\n* [Web](web.md) - The website, served from packages/web.\n"
        );
    }

    #[test]
    fn renders_root_header_types_and_subdirectories() {
        let out = render_index(
            Some("0.2"),
            &[
                e("Project", "p_x", "project.md", None),
                e("Decision", "D", "d.md", Some("a *b*")),
            ],
            &["b".into(), "a".into()],
        );
        assert_eq!(
            out,
            "---\nokf_version: \"0.2\"\n---\n\n# Decision\n\n* [D](d.md) - a \\*b\\*\n\n# Project\n\n* [p\\_x](project.md)\n\n# Subdirectories\n\n* [a](a/index.md)\n* [b](b/index.md)\n"
        );
        assert_eq!(render_index(None, &[], &[]), "");
        assert_eq!(
            render_index(Some("0.2"), &[], &[]),
            "---\nokf_version: \"0.2\"\n---\n"
        );
    }

    #[test]
    fn targets_with_spaces_stay_links() {
        let out = render_index(
            None,
            &[e("Note", "A", "my note (v2).md", None)],
            &["old docs".into()],
        );
        assert_eq!(
            out,
            "# Note\n\n* [A](my%20note%20%28v2%29.md)\n\n# Subdirectories\n\n* [old docs](old%20docs/index.md)\n"
        );
    }

    #[test]
    fn log_groups_go_newest_first_before_older_ones() {
        let log = "# Log\n\n## 2026-01-01\n\n* old\n";
        let out = add_log_groups(
            log,
            &[
                ("2026-01-02".into(), vec!["b".into()]),
                ("2026-01-03".into(), vec!["c".into()]),
            ],
        );
        assert_eq!(
            out,
            "# Log\n\n## 2026-01-03\n\n* c\n\n## 2026-01-02\n\n* b\n\n## 2026-01-01\n\n* old\n"
        );
        assert_eq!(log_dates(&out), ["2026-01-03", "2026-01-02", "2026-01-01"]);
        assert_eq!(
            add_log_groups("", &[("2026-01-02".into(), vec!["b".into()])]),
            "# Log\n\n## 2026-01-02\n\n* b\n"
        );
        assert_eq!(
            add_log_groups("# Log\n", &[("2026-01-02".into(), vec!["b".into()])]),
            "# Log\n\n## 2026-01-02\n\n* b\n"
        );
    }
}
