//! The parsed documents of a bundle folder, kept in project mode beside the
//! folder's read model (see [`crate::kb`]): the bundle tools (list, get,
//! neighbours, stale) read them, the knowledge tools read the model, and
//! both come from the same read and parse of each changed file.

use okfit_core::bundle::Bundle;
use okfit_core::doc::{self, Document};
use okfit_core::kb::compile::{self, Compiled};
use okfit_store::error::Error;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::sync::Arc;

/// A bundle folder's documents as the last refresh of its read model left
/// them (frontmatter mappings not kept: `get_concept` re-reads its file).
pub struct Documents {
    bundle: Bundle,
    generation: u64,
    loaded: bool,
    /// Markdown files the walk found but that could not be read, with the
    /// error (the bundle tools refuse while one is left).
    unreadable: BTreeMap<String, (std::io::ErrorKind, String)>,
}

impl Documents {
    /// None yet: the first refresh of the folder parses them all.
    pub(crate) fn new() -> Documents {
        Documents {
            bundle: Bundle::from_parts(vec![], vec![]),
            generation: 0,
            loaded: false,
            unreadable: BTreeMap::new(),
        }
    }

    /// The bundle.
    pub fn bundle(&self) -> &Bundle {
        &self.bundle
    }

    /// Counts the changes to the set of concept ids since the first load
    /// (then `notifications/resources/list_changed` is due).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The first Markdown file that could not be read, as the error a load
    /// of the bundle reports.
    pub(crate) fn check(&self, root: &Path) -> Result<(), Error> {
        match self.unreadable.iter().next() {
            None => Ok(()),
            Some((rel, (kind, message))) => Err(Error::FileUnreadable {
                rel: rel.clone(),
                root: root.to_path_buf(),
                source: std::io::Error::new(*kind, message.clone()),
            }),
        }
    }

    /// True when an [`Documents::apply`] is due even if no Markdown file
    /// changed: before the first load, or when the walk's non-Markdown
    /// files (`assets`, sorted) are not the bundle's. Forgets unreadable
    /// files the walk no longer lists (`present`).
    pub(crate) fn outdated(&mut self, assets: &[String], present: &HashSet<&str>) -> bool {
        self.unreadable.retain(|p, _| present.contains(p.as_str()));
        !self.loaded || self.bundle.assets != assets
    }

    /// Applies one refresh: documents removed, documents (re)parsed, files
    /// that could not be read, and the walk's non-Markdown files.
    pub(crate) fn apply(
        &mut self,
        gone: &[String],
        parsed: Vec<Document>,
        failed: Vec<(String, std::io::Error)>,
        assets: Vec<String>,
    ) {
        let before = self.loaded.then(|| ids(&self.bundle));
        let (docs, _) =
            std::mem::replace(&mut self.bundle, Bundle::from_parts(vec![], vec![])).into_parts();
        let mut by_path: HashMap<String, Document> =
            docs.into_iter().map(|d| (d.path.clone(), d)).collect();
        for p in gone {
            by_path.remove(p);
            self.unreadable.remove(p);
        }
        for d in parsed {
            self.unreadable.remove(&d.path);
            by_path.insert(d.path.clone(), d);
        }
        for (p, e) in failed {
            self.unreadable.insert(p, (e.kind(), e.to_string()));
        }
        self.bundle = Bundle::from_parts(by_path.into_values().collect(), assets);
        self.loaded = true;
        if before.is_some_and(|b| b != ids(&self.bundle)) {
            self.generation += 1;
        }
    }
}

fn ids(b: &Bundle) -> Vec<String> {
    b.concepts().map(|(_, c)| c.id.clone()).collect()
}

/// One Markdown file read once: its text, its compiled form and, when
/// asked for, its parsed document, all from a single parse.
pub(crate) struct Parsed {
    /// The text (invalid UTF-8 replaced).
    pub text: Arc<str>,
    /// The read model's form.
    pub compiled: Compiled,
    /// The document the bundle tools read.
    pub document: Option<Document>,
}

/// Reads and parses the Markdown file `rel` at `abs`.
pub(crate) fn read(rel: &str, abs: &Path, document: bool) -> std::io::Result<Parsed> {
    let bytes = std::fs::read(abs)?;
    let text: Arc<str> = Arc::from(String::from_utf8_lossy(&bytes).into_owned());
    if !document {
        let compiled = compile::compile(rel, &text);
        return Ok(Parsed {
            text,
            compiled,
            document: None,
        });
    }
    // The document is parsed from the bytes (invalid UTF-8 makes it
    // undecodable at once); the compiled form from the same parse when the
    // bytes are text.
    let mut d = doc::parse(rel, &bytes, &compile::parse_options());
    let compiled = if std::str::from_utf8(&bytes).is_ok() {
        compile::compile_parsed(rel, &text, &d)
    } else {
        compile::compile(rel, &text)
    };
    if let Some(c) = d.concept.as_mut() {
        c.frontmatter = None;
    }
    Ok(Parsed {
        text,
        compiled,
        document: Some(d),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use okfit_core::config::Config;
    use okfit_core::doc::ParseOptions;

    /// What the bundle tools read is what a load without bodies, then
    /// filled in, gives; the compiled form is what `compile` gives.
    #[test]
    fn one_parse_gives_the_document_and_the_compiled_form() {
        let dir = std::env::temp_dir().join(format!("okfit-documents-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temporary directory");
        let cases: [(&str, &[u8]); 6] = [
            (
                "metrics/revenue.md",
                b"---\ntype: Metric\ntitle: Revenue\ndescription: Money in.\nstatus: draft\nsources:\n  - resource: ../tables/orders.md\n---\n\n# Revenue\n\nFrom [orders](../tables/orders.md) and [x](https://example.com).\n\n## How\n\nSum.\n",
            ),
            ("notes/plain.md", b"# Plain\n\nNo frontmatter, a [link](a.md).\n"),
            ("index.md", b"# Index\n\n* [Revenue](metrics/revenue.md)\n"),
            ("log.md", b"# Log\n\n## 2026-01-01\n\n* Started.\n"),
            ("bad.md", b"---\ntype: [unclosed\n---\n\nBody.\n"),
            ("latin1.md", b"---\ntype: Metric\ntitle: Caf\xe9\n---\n"),
        ];
        let cfg = Config::default();
        let live = ParseOptions {
            config: &cfg,
            now: None,
            keep_frontmatter: false,
            digests: false,
            diagnostics: false,
            skip_body: true,
        };
        for (rel, bytes) in cases {
            let abs = dir.join(rel.replace('/', "-"));
            std::fs::write(&abs, bytes).expect("write");
            let p = read(rel, &abs, true).expect("read");
            let text = String::from_utf8_lossy(bytes);
            assert_eq!(p.compiled, compile::compile(rel, &text), "{rel}");
            let mut b = Bundle::from_parts(vec![doc::parse(rel, bytes, &live)], vec![]);
            if b.bodies_pending().contains(&rel.to_string()) {
                let (links, slugs) = doc::body_links(&text);
                b.fill_body(rel, links, slugs);
            }
            let (mut expected, _) = b.into_parts();
            assert_eq!(p.document, expected.pop(), "{rel}");
            let plain = read(rel, &abs, false).expect("read");
            assert_eq!(plain.compiled, p.compiled, "{rel}");
            assert!(plain.document.is_none());
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
}
