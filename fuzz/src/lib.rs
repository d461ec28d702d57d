//! Shared pieces of the okfit fuzz targets: fixture documents, scratch
//! directories that do not outlive their process, and small selectors that
//! turn fuzz bytes into names the product knows.

use std::path::{Path, PathBuf};

/// Documents of `tests/fixtures/clean/okf` (bundle-relative path, text).
pub const FIXTURE_DOCS: [(&str, &str); 5] = [
    (
        "metrics/revenue.md",
        include_str!("../../tests/fixtures/clean/okf/metrics/revenue.md"),
    ),
    (
        "metrics/margin.md",
        include_str!("../../tests/fixtures/clean/okf/metrics/margin.md"),
    ),
    (
        "metrics/index.md",
        include_str!("../../tests/fixtures/clean/okf/metrics/index.md"),
    ),
    (
        "orders.md",
        include_str!("../../tests/fixtures/clean/okf/orders.md"),
    ),
    (
        "index.md",
        include_str!("../../tests/fixtures/clean/okf/index.md"),
    ),
];

/// The okfit.toml of `tests/fixtures/clean`.
pub const FIXTURE_CONFIG: &str = include_str!("../../tests/fixtures/clean/okfit.toml");

/// The fixture project `tests/fixtures/clean`, for project-mode servers.
pub fn fixture_project() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/clean")
}

/// Bundle names the targets pick from, so changes collide with each other.
pub const BUNDLES: [&str; 4] = ["docs", "ops", "sales", "x"];

/// Paths the targets pick from (the fixture's, plus navigation files).
pub const PATHS: [&str; 8] = [
    "metrics/revenue.md",
    "metrics/margin.md",
    "orders.md",
    "index.md",
    "log.md",
    "a.md",
    "A.md",
    "deep/er/b.md",
];

/// The parent of every scratch directory: `$TMPDIR/okfit-fuzz`.
fn scratch_parent() -> PathBuf {
    std::env::temp_dir().join("okfit-fuzz")
}

/// Removes scratch directories left by fuzz processes that have exited
/// (libFuzzer leaves through `exit`, so statics are never dropped).
fn sweep() {
    let Ok(rd) = std::fs::read_dir(scratch_parent()) else {
        return;
    };
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let pid = name.split('-').nth(1).and_then(|p| p.parse::<u32>().ok());
        if let Some(pid) = pid {
            if pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// A scratch directory removed on drop (and by the next process's sweep
/// when this one exits first).
pub struct Scratch(tempfile::TempDir);

impl Scratch {
    /// A new empty directory named after `tag`.
    pub fn new(tag: &str) -> Scratch {
        static SWEPT: std::sync::Once = std::sync::Once::new();
        SWEPT.call_once(sweep);
        let parent = scratch_parent();
        std::fs::create_dir_all(&parent).expect("create the scratch parent");
        let dir = tempfile::Builder::new()
            .prefix(&format!("p-{}-{tag}-", std::process::id()))
            .tempdir_in(parent)
            .expect("create a scratch directory");
        Scratch(dir)
    }

    /// Its absolute path.
    pub fn path(&self) -> &Path {
        self.0.path()
    }
}

/// Copies a directory tree.
pub fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create the copy");
    for e in std::fs::read_dir(from).expect("read the fixture").flatten() {
        let target = to.join(e.file_name());
        if e.file_type().map(|t| t.is_dir()).unwrap_or(false) {
            copy_tree(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), &target).expect("copy a fixture file");
        }
    }
}

/// Replaces a change's `"replaces": "@current"` placeholder with the hash
/// `lookup(bundle, path)` finds, so that replaces and deletes get past their
/// preconditions.
pub fn resolve_current(
    change: &mut serde_json::Map<String, serde_json::Value>,
    lookup: impl Fn(&str, &str) -> Option<String>,
) {
    use serde_json::Value;
    if change.get("replaces").and_then(Value::as_str) != Some("@current") {
        return;
    }
    let (Some(b), Some(p)) = (
        change.get("bundle").and_then(Value::as_str),
        change.get("path").and_then(Value::as_str),
    ) else {
        return;
    };
    if let Some(h) = lookup(b, p) {
        change.insert("replaces".into(), Value::String(h));
    }
}

/// `bytes` as text: lossy, so every input reaches the text APIs.
pub fn lossy(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(bytes)
}
