//! `okfit init`: writes the config and the bundle skeleton of a profile,
//! never over an existing file, then validates what it wrote.

use crate::shared::{shown, Common};
use clap::Args;
use okfit_core::{profile, report, scaffold, time};
use okfit_knowledge::project::{self, LoadOptions};
use okfit_store::beneath::Root;
use okfit_store::clock::resolve_now;
use okfit_store::discover::{self, absolute};
use okfit_store::error::Error;
use std::path::{Path, PathBuf};

/// `okfit init`.
#[derive(Args, Debug)]
pub struct InitArgs {
    /// Project root to set up (with --bundle-only: the bundle directory); default: the working directory.
    pub path: Option<PathBuf>,
    /// Profile: software-project (the default) or none.
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
    /// Write a bare OKF bundle (index.md and log.md, profile none, no config) into PATH itself.
    #[arg(long, conflicts_with = "profile")]
    pub bundle_only: bool,
}

/// The config names discovery looks for in a directory: any of them
/// already there would shadow, or be shadowed by, the one init writes.
const CONFIG_NAMES: [&str; 3] = [".okfit.toml", "okfit.toml", ".config/okfit.toml"];

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

/// Runs `okfit init`.
pub fn init(a: InitArgs) -> Result<i32, Error> {
    let cwd = std::env::current_dir()
        .map_err(|e| Error::Io(format!("cannot read the working directory ({e})")))?;
    let root = absolute(a.path.as_deref().unwrap_or(&cwd));
    let today = time::format_millis(resolve_now(None)?)[..10].to_string();
    let (files, profile_name) = if a.bundle_only {
        (scaffold::bundle(&today), None)
    } else {
        let requested = a.profile.as_deref().unwrap_or(profile::DEFAULT);
        let resolved = match requested {
            "none" => None,
            name => match profile::lookup(name) {
                Some(p) => Some(p),
                None => {
                    eprintln!("warning: unknown profile \"{name}\"; continuing with defaults");
                    None
                }
            },
        };
        let name = root
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "project".into());
        (scaffold::project(&name, resolved, "okf", &today), resolved)
    };
    let mut taken: Vec<String> = files
        .iter()
        .map(|(rel, _)| rel.clone())
        .filter(|rel| exists(&root.join(rel)))
        .collect();
    if !a.bundle_only {
        for n in CONFIG_NAMES {
            if exists(&root.join(n)) && !taken.iter().any(|t| t == n) {
                taken.push(n.to_string());
            }
        }
    }
    if !taken.is_empty() {
        taken.sort();
        return Err(Error::WouldOverwrite(taken));
    }
    let dir = Root::create(&root)?;
    for (rel, text) in &files {
        dir.write(rel, text.as_bytes(), rel)?;
    }
    for (rel, _) in &files {
        crate::outln!("wrote {}", shown(&root.join(rel)));
    }
    let common = Common {
        path: (!a.bundle_only).then(|| root.clone()),
        config: None,
        bundle: a.bundle_only.then(|| root.clone()),
    };
    let code = validate_written(&common)?;
    match (a.bundle_only, profile_name) {
        (true, _) => crate::outln!(
            "Initialized a bare OKF bundle in {}; check it with `okfit validate --bundle {}`",
            shown(&root),
            shown(&root)
        ),
        (false, Some(p)) => crate::outln!("Initialized okf with the {p} profile"),
        (false, None) => crate::outln!("Initialized okf with no profile"),
    }
    Ok(code)
}

/// Validates the new bundle; prints any finding (there should be none).
fn validate_written(common: &Common) -> Result<i32, Error> {
    let p = crate::shared::project(common)?;
    discover::require_bundle(&p)?;
    let now = resolve_now(None)?;
    let loaded = project::load(
        &p,
        &LoadOptions {
            now: Some(now),
            ..LoadOptions::default()
        },
    )?;
    let r = project::validate(&p, &loaded, true);
    for d in &r.diagnostics {
        eprintln!("{}", report::human_line(d));
    }
    Ok(r.exit_code())
}
