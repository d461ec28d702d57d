//! What `okfit init` writes: the config and the bundle skeleton of a
//! profile (reference §11), as `(path, text)` pairs. Every file is built
//! here and validates clean as written.

use crate::config::OKF_VERSION;
use crate::derive::{render_index, IndexEntry};

/// The directories a `software-project` bundle starts with, one per
/// type that usually has many concepts.
pub const LAYOUT: [&str; 5] = [
    "modules",
    "decisions",
    "conventions",
    "interfaces",
    "references",
];

fn log(today: &str, what: &str) -> String {
    format!("# Log\n\n## {today}\n\n* {what}\n")
}

fn config(profile: &str, bundle_path: &str) -> String {
    format!(
        "# okfit configuration (see `okfit context` for what it resolves to).\n\
         okf_version = \"{OKF_VERSION}\"\n\n\
         [bundle]\n\
         path = \"{bundle_path}\"\n\
         profile = \"{profile}\"\n\n\
         # What an agent writes as generated.by when it creates or stamps a concept:\n\
         # [actors]\n\
         # agent = \"okfit/claude-code\"\n"
    )
}

fn project_md(name: &str) -> String {
    format!(
        "---\n\
         type: Project\n\
         title: {title}\n\
         description: {description}\n\
         status: draft\n\
         ---\n\n\
         # {name}\n\n\
         Say in a paragraph what this project is and who uses it. Link the\n\
         modules, decisions and conventions an agent should read first.\n",
        title = yaml_plain(name),
        description = yaml_plain(&format!(
            "What {name} is, who it is for, and where to start reading."
        )),
    )
}

/// `name` as a YAML scalar: plain when safe, else double-quoted.
fn yaml_plain(name: &str) -> String {
    let safe = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, ' ' | '-' | '_' | '.' | ','))
        && !name.starts_with([' ', '-'])
        && !name.ends_with(' ');
    if safe {
        name.to_string()
    } else {
        serde_json::to_string(name).unwrap_or_else(|_| "\"project\"".into())
    }
}

/// The files of a project set up with `profile` (`None`: no profile),
/// paths relative to the project root: the config, the bundle's root
/// `index.md` and `log.md`, and for `software-project` the Project
/// concept and one directory (with its `index.md`) per [`LAYOUT`] entry.
pub fn project(
    name: &str,
    profile: Option<&str>,
    bundle_path: &str,
    today: &str,
) -> Vec<(String, String)> {
    let b = bundle_path.trim_end_matches('/');
    let mut files = vec![(
        ".config/okfit.toml".to_string(),
        config(profile.unwrap_or("none"), b),
    )];
    let mut entries = vec![];
    let mut dirs = vec![];
    if profile == Some(crate::profile::DEFAULT) {
        entries.push(IndexEntry {
            type_name: "Project".into(),
            title: name.to_string(),
            target: "project.md".into(),
            description: Some(format!(
                "What {name} is, who it is for, and where to start reading."
            )),
        });
        files.push((format!("{b}/project.md"), project_md(name)));
        for d in LAYOUT {
            files.push((format!("{b}/{d}/index.md"), String::new()));
            dirs.push(d.to_string());
        }
    }
    files.push((
        format!("{b}/index.md"),
        render_index(Some(OKF_VERSION), &entries, &dirs),
    ));
    files.push((
        format!("{b}/log.md"),
        log(today, "Set up the bundle with `okfit init`."),
    ));
    files.sort();
    files
}

/// The files of a bare OKF bundle (no config, no profile), relative to
/// the bundle root.
pub fn bundle(today: &str) -> Vec<(String, String)> {
    vec![
        ("index.md".into(), render_index(Some(OKF_VERSION), &[], &[])),
        (
            "log.md".into(),
            log(today, "Set up the bundle with `okfit init --bundle-only`."),
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{resolve, Config};
    use crate::time::Instant;

    fn check(files: &[(String, String)], prefix: &str, cfg: &Config) {
        let texts: Vec<(String, String)> = files
            .iter()
            .filter_map(|(p, t)| Some((p.strip_prefix(prefix)?.to_string(), t.clone())))
            .collect();
        let r = crate::bundle::validate_texts(&texts, cfg, Instant(0));
        assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    }

    #[test]
    fn software_project_validates_clean() {
        let files = project(
            "My App: the \"best\"",
            Some("software-project"),
            "okf",
            "2026-12-01",
        );
        let cfg_text = &files
            .iter()
            .find(|(p, _)| p == ".config/okfit.toml")
            .unwrap()
            .1;
        let cfg = resolve(Some(cfg_text)).unwrap();
        assert_eq!(cfg.profile, Some("software-project"));
        check(&files, "okf/", &cfg);
        assert!(files.iter().any(|(p, _)| p == "okf/decisions/index.md"));
    }

    #[test]
    fn bare_bundles_validate_clean() {
        let cfg = resolve(Some("[bundle]\nprofile = \"none\"\n")).unwrap();
        check(&bundle("2026-12-01"), "", &cfg);
        let files = project("x", None, "docs/okf/", "2026-12-01");
        assert!(files.iter().any(|(p, _)| p == "docs/okf/index.md"));
        check(&files, "docs/okf/", &cfg);
    }
}
