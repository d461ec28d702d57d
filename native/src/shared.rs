//! What every project command shares: the `[path]`/`--config`/`--bundle`
//! arguments and their resolution, the distribution a launcher names, and
//! the head of every JSON envelope.

use clap::Args;
use okfit_core::report::{self, Distribution, Meta};
use okfit_store::discover::{self, Project};
use okfit_store::error::Error;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;

static DISTRIBUTION: OnceLock<Distribution> = OnceLock::new();

/// Records the package that launched this process (`@okfit/plugin`), for
/// `okfit --version` and every envelope's `distribution`. Set once.
pub fn set_distribution(d: Distribution) {
    let _ = DISTRIBUTION.set(d);
}

/// The launching package, when one was named.
pub fn distribution() -> Option<&'static Distribution> {
    DISTRIBUTION.get()
}

/// The `okfit --version` line, with `via <package> <version>` after the
/// CLI's version when a package launched it.
pub fn version_line() -> String {
    let line = okfit_store::clock::version_line();
    match distribution() {
        Some(d) => {
            let head = format!("okfit {}", okfit_store::VERSION);
            line.replacen(&head, &format!("{head} via {} {}", d.name, d.version), 1)
        }
        None => line,
    }
}

/// Where a project command works.
#[derive(Args, Debug, Default)]
pub struct Common {
    /// Project root (where config discovery starts); default: the working directory.
    pub path: Option<PathBuf>,
    /// Use this okfit.toml instead of discovering one.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Take DIR itself as the bundle root (a bare OKF bundle; profile
    /// `none` unless a config found from DIR says otherwise).
    #[arg(long, value_name = "DIR", conflicts_with = "path")]
    pub bundle: Option<PathBuf>,
}

/// Resolves the project (printing config warnings), without requiring the bundle.
pub fn project(common: &Common) -> Result<Project, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Io(format!("cannot read the working directory ({e})")))?;
    let p = match &common.bundle {
        Some(dir) => discover::resolve_bundle(dir, common.config.as_deref())?,
        None => discover::resolve(common.path.as_deref(), &cwd, common.config.as_deref())?,
    };
    for w in &p.config.warnings {
        eprintln!("warning: {w}");
    }
    Ok(p)
}

/// Resolves the project and checks that its bundle root is a directory.
pub fn bundle_project(common: &Common) -> Result<Project, Error> {
    let p = project(common)?;
    discover::require_bundle(&p)?;
    Ok(p)
}

/// The bundle-relative path of `file` (absolute, or relative to the
/// working directory) when it is under the project's bundle root,
/// compared lexically, then with links resolved.
pub fn bundle_relative(p: &Project, file: &Path) -> Option<String> {
    let file = discover::absolute(file);
    let rel = file
        .strip_prefix(&p.bundle_root)
        .ok()
        .map(Path::to_path_buf)
        .or_else(|| {
            let f = std::fs::canonicalize(&file).ok()?;
            let r = std::fs::canonicalize(&p.bundle_root).ok()?;
            f.strip_prefix(&r).ok().map(Path::to_path_buf)
        })?;
    let rel = rel.to_str()?.replace('\\', "/");
    (!rel.is_empty()).then_some(rel)
}

/// A path shown relative to the working directory when under it.
pub fn shown(p: &Path) -> String {
    let cwd = std::env::current_dir().ok();
    match cwd.as_deref().and_then(|c| p.strip_prefix(c).ok()) {
        Some(r) if r.as_os_str().is_empty() => ".".into(),
        Some(r) => r.display().to_string(),
        None => p.display().to_string(),
    }
}

/// The report metadata of the CLI on `p`.
pub fn meta(p: &Project) -> Meta {
    let mut m = okfit_knowledge::project::meta(p, "okfit");
    m.distribution = distribution().cloned();
    m
}

/// Set once stdout's reader has gone away (`okfit validate | head`).
static READER_GONE: AtomicBool = AtomicBool::new(false);
/// Why writing to stdout failed otherwise (a full disk), first time only.
static STDOUT_FAILED: OnceLock<String> = OnceLock::new();

/// Whether stdout's reader went away. A command whose output nobody reads
/// any more has nothing left to say: it ends quietly with code 0, as Unix
/// tools do, rather than reporting the closed pipe.
pub fn reader_gone() -> bool {
    READER_GONE.load(Ordering::Relaxed)
}

/// Why some output was lost, when it was for another reason than a reader
/// that went away.
pub fn stdout_failed() -> Option<&'static str> {
    STDOUT_FAILED.get().map(String::as_str)
}

/// A failure to write the report (noting a reader that went away).
pub fn out_err(e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::BrokenPipe {
        READER_GONE.store(true, Ordering::Relaxed);
    }
    Error::Io(format!("could not write the report ({e})"))
}

/// Writes to stdout, what `print!` does, without its panic: after a
/// failure the rest of the output is dropped, and the failure is noted
/// for the exit code ([`reader_gone`], [`stdout_failed`]).
pub fn print(args: std::fmt::Arguments<'_>) {
    if reader_gone() || stdout_failed().is_some() {
        return;
    }
    let mut o = std::io::stdout().lock();
    if let Err(e) = o.write_fmt(args).and_then(|()| o.flush()) {
        if e.kind() == std::io::ErrorKind::BrokenPipe {
            READER_GONE.store(true, Ordering::Relaxed);
        } else {
            let _ = STDOUT_FAILED.set(e.to_string());
        }
    }
}

/// `print!` through [`print`].
#[macro_export]
macro_rules! out {
    ($($t:tt)*) => { $crate::shared::print(format_args!($($t)*)) };
}

/// `println!` through [`print`].
#[macro_export]
macro_rules! outln {
    () => { $crate::shared::print(format_args!("\n")) };
    ($($t:tt)*) => { $crate::shared::print(format_args!("{}\n", format_args!($($t)*))) };
}

/// Prints one JSON value as a line on stdout.
pub fn print_json(v: &serde_json::Value) -> Result<(), Error> {
    let stdout = std::io::stdout();
    let mut w = stdout.lock();
    serde_json::to_writer(&mut w, v).map_err(|e| out_err(e.into()))?;
    writeln!(w).map_err(out_err)
}

fn distribution_json() -> serde_json::Value {
    match distribution() {
        Some(d) => serde_json::json!({"name": d.name, "version": d.version}),
        None => serde_json::Value::Null,
    }
}

fn extend(mut v: serde_json::Value, extra: serde_json::Value) -> serde_json::Value {
    if let (Some(o), serde_json::Value::Object(e)) = (v.as_object_mut(), extra) {
        o.extend(e);
    }
    v
}

/// The envelope's head with the project's metadata, then `extra`.
pub fn meta_envelope(m: &Meta, extra: serde_json::Value) -> serde_json::Value {
    extend(
        serde_json::json!({
            "schema": 1,
            "okfit_version": m.okfit_version,
            "engine_version": report::ENGINE_VERSION,
            "producer": m.producer,
            "distribution": distribution_json(),
            "okf_version": m.okf_version,
            "root": m.root,
            "profile": m.profile,
        }),
        extra,
    )
}

/// The plain envelope head (`schema`, versions, `distribution`), then `extra`.
pub fn envelope_head(extra: serde_json::Value) -> serde_json::Value {
    extend(
        serde_json::json!({
            "schema": 1,
            "okfit_version": okfit_store::VERSION,
            "engine_version": report::ENGINE_VERSION,
            "distribution": distribution_json(),
        }),
        extra,
    )
}
