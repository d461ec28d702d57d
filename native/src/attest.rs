//! `okfit verify`: two meanings under one name, told apart by the
//! arguments. With a concept id, `--all` or `--type`, a person attests the
//! concepts: `{by: human:<git identity>, at}` is appended to `verified`.
//! Otherwise (a connection, `--data`/`--tenant`, or nothing) it re-checks
//! a store's retained revisions, as it always has.

use crate::kbcli::ConnArgs;
use crate::shared::{bundle_project, envelope_head, print_json, shown, Common};
use clap::{Args, ValueEnum};
use okfit_core::actor;
use okfit_core::bundle::Bundle;
use okfit_core::doc::Kind;
use okfit_core::query;
use okfit_core::splice;
use okfit_core::time::{self, Instant};
use okfit_knowledge::project::{self, LoadOptions};
use okfit_store::beneath::Root;
use okfit_store::clock::resolve_now;
use okfit_store::error::Error;
use serde_json::json;
use std::path::PathBuf;

/// `okfit verify --help`.
pub const LONG_ABOUT: &str = "Two jobs, chosen by the arguments.

Attest concepts (give a concept id, --all or --type): appends {by: human:<you>, at} to each \
concept's `verified` list, where <you> comes from git's user.email or user.name (or a matching \
actors.humans entry). Example: okfit verify decisions/pure-core

Check a store (give -c DSN, --data/--tenant, or no concept): re-checks every retained revision's \
documents and digests and prints a JSON report; exit 1 when something is wrong. Example: \
okfit verify -c okf:///srv/okfit?tenant=acme";

/// Output format.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// Lines for a person.
    Human,
    /// The `VerifyEnvelope`.
    Json,
}

/// `okfit verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The concept to attest, then optionally the project root (with --all or
    /// --type: only the project root).
    #[arg(value_name = "ID [PATH]", num_args = 0..=2)]
    pub args: Vec<String>,
    /// Attest every concept.
    #[arg(long)]
    pub all: bool,
    /// Attest every concept of this declared type.
    #[arg(long = "type", value_name = "TYPE")]
    pub type_name: Option<String>,
    /// The attestation instant (ISO 8601 with offset); default: now.
    #[arg(long, value_name = "ISO")]
    pub at: Option<String>,
    /// Say what would be written; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Use this okfit.toml instead of discovering one.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Take DIR itself as the bundle root.
    #[arg(long, value_name = "DIR")]
    pub bundle: Option<PathBuf>,
    /// Output format of an attestation.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
    /// The store to check (when attesting nothing).
    #[command(flatten)]
    pub conn: ConnArgs,
}

impl VerifyArgs {
    /// Whether this is an attestation (an id, `--all` or `--type`).
    pub fn attests(&self) -> bool {
        self.all || self.type_name.is_some() || !self.args.is_empty()
    }
}

/// Runs `okfit verify`.
pub fn verify(a: VerifyArgs) -> Result<i32, Error> {
    if !a.attests() {
        return crate::kbcli::verify(crate::kbcli::VerifyArgs { conn: a.conn });
    }
    if a.conn.connection.is_some() || a.conn.data.is_some() || a.conn.tenant.is_some() {
        return Err(Error::Usage(
            "verify attests concepts (an id, --all or --type) or checks a store (-c, --data/--tenant), not both".into(),
        ));
    }
    let batch = a.all || a.type_name.is_some();
    let (id, path) = match (batch, a.args.as_slice()) {
        (false, [id]) => (Some(id.clone()), None),
        (false, [id, path]) => (Some(id.clone()), Some(PathBuf::from(path))),
        (true, []) => (None, None),
        (true, [path]) if std::path::Path::new(path).is_dir() => (None, Some(PathBuf::from(path))),
        _ => {
            return Err(Error::Usage(
                "verify takes either a concept id or --all/--type, not both".into(),
            ))
        }
    };
    let p = bundle_project(&Common {
        path,
        config: a.config.clone(),
        bundle: a.bundle.clone(),
    })?;
    if let Some(t) = &a.type_name {
        if !p.config.types.contains_key(t) {
            return Err(Error::Usage(format!(
                "type \"{}\" is not declared in the config",
                okfit_store::error::truncate(t)
            )));
        }
    }
    let at = match &a.at {
        Some(v) => resolve_now(Some(v))?,
        None => resolve_now(None)?,
    };
    let at_instant = Instant(at.0 - at.0.rem_euclid(1000));
    let at = time::format_seconds(at_instant);
    let (name, email) = okfit_store::git::identity(&p.project_root);
    let by = actor::human_from_git(name.as_deref(), email.as_deref(), &p.config.humans)
        .ok_or_else(|| Error::Uneditable(actor::NO_HUMAN_MESSAGE.into()))?;
    let b = project::load(&p, &LoadOptions::default())?.bundle;
    let targets: Vec<(String, String)> = match &id {
        Some(id) => vec![find(&b, id)?],
        None => b
            .concepts()
            .filter(|(_, c)| a.type_name.as_ref().is_none_or(|t| &c.type_name == t))
            .map(|(d, c)| (c.id.clone(), d.path.clone()))
            .collect(),
    };
    // The same person at the same instant is one attestation, not two.
    let already = |cid: &str| {
        b.concept(cid).is_some_and(|(_, c)| {
            c.verified
                .iter()
                .any(|v| v.by == by && v.at == Some(at_instant))
        })
    };
    let root = Root::open(&p.bundle_root)?;
    let mut done = vec![];
    let mut skipped = vec![];
    for (cid, rel) in &targets {
        if already(cid) {
            done.push((cid.clone(), rel.clone()));
            continue;
        }
        let text = root
            .read(rel, rel)?
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .ok_or_else(|| Error::ConceptNotFound(cid.clone()))?;
        match splice::append_verified(&text, &by, &at) {
            Ok(new) => {
                if !a.dry_run {
                    root.write(rel, new.as_bytes(), rel)?;
                }
                done.push((cid.clone(), rel.clone()));
            }
            Err(shape) => {
                let msg = format!(
                    "\"{cid}\"'s verified value is a shape okfit verify cannot edit ({}); edit it by hand",
                    shape.as_str()
                );
                if !batch {
                    return Err(Error::Uneditable(msg));
                }
                skipped.push((cid.clone(), msg));
            }
        }
    }
    report(&a, &p.bundle_root, &by, &at, &done, &skipped, batch)?;
    Ok(0)
}

/// The concept `input` names, or the §11 failure saying why it is not one.
fn find(b: &Bundle, input: &str) -> Result<(String, String), Error> {
    if let Ok((d, c)) = b.find_concept(input) {
        return Ok((c.id.clone(), d.path.clone()));
    }
    let id = query::normalize_id(input);
    let why = b
        .docs
        .iter()
        .find(|d| d.path.trim_end_matches(".md") == id)
        .map(|d| match d.kind {
            Kind::Index | Kind::Log => "reserved".to_string(),
            Kind::Undecodable => match d.diagnostics.first() {
                Some(diag) => format!("undecodable: {}", diag.code),
                None => "undecodable".into(),
            },
            Kind::Concept => "not-a-concept".into(),
        })
        .unwrap_or_else(|| "not-a-concept".into());
    Err(Error::Uneditable(format!(
        "no concept \"{}\" in this bundle ({why})",
        okfit_store::error::truncate(input)
    )))
}

#[allow(clippy::too_many_arguments)]
fn report(
    a: &VerifyArgs,
    root: &std::path::Path,
    by: &str,
    at: &str,
    done: &[(String, String)],
    skipped: &[(String, String)],
    batch: bool,
) -> Result<(), Error> {
    match a.format {
        Format::Json if !batch => {
            let (id, path) = &done[0];
            print_json(&envelope_head(json!({
                "id": id, "path": path, "verified": {"by": by, "at": at},
                "dry_run": a.dry_run, "exit_code": 0,
            })))
        }
        Format::Json => print_json(&envelope_head(json!({
            "verified": {"by": by, "at": at},
            "items": done.iter().map(|(id, path)| json!({"id": id, "path": path})).collect::<Vec<_>>(),
            "skipped": skipped.iter().map(|(id, m)| json!({"id": id, "reason": m})).collect::<Vec<_>>(),
            "dry_run": a.dry_run, "exit_code": 0,
        }))),
        Format::Human => {
            let verb = if a.dry_run {
                "would verify"
            } else {
                "verified"
            };
            for (id, _) in done {
                crate::outln!("{verb} {id} as {by} at {at}");
            }
            for (_, m) in skipped {
                eprintln!("skipped: {m}");
            }
            eprintln!(
                "{} of {} concepts {verb} in {}",
                done.len(),
                done.len() + skipped.len(),
                shown(root)
            );
            Ok(())
        }
    }
}
