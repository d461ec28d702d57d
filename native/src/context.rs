//! `okfit context`: the resolved configuration (roots, profile, agent
//! actor, declared vocabulary) without loading the bundle, so hooks and
//! editors can call it on every session start.

use crate::shared::{envelope_head, print_json, project, Common};
use clap::{Args, ValueEnum};
use okfit_store::discover::Project;
use okfit_store::error::Error;
use serde_json::{json, Value};

/// Output format.
#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// Lines for a person.
    Human,
    /// The `ContextEnvelope`.
    Json,
}

/// `okfit context`.
#[derive(Args, Debug)]
pub struct ContextArgs {
    /// Where.
    #[command(flatten)]
    pub common: Common,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    pub format: Format,
}

/// The `ContextEnvelope` of a project (reference §11): every key always
/// present, nulls kept.
pub fn envelope(p: &Project) -> Value {
    let described = okfit_tools::bundle::describe(p);
    let index = p.bundle_root.join("index.md");
    envelope_head(json!({
        "config_schema_version": "1.0",
        "project_root": p.project_root.display().to_string(),
        "bundle_root": p.bundle_root.display().to_string(),
        "config_path": p.config_path.as_ref().map(|c| c.display().to_string()),
        "profile": p.config.profile,
        "profile_requested": p.config_path.as_ref().map(|_| p.config.profile_requested.clone()),
        "index_path": index.display().to_string(),
        "index_exists": index.is_file(),
        "actors": { "agent": p.config.agent },
        "types": described["types"],
        "tags": described["tags"],
    }))
}

/// Runs `okfit context`.
pub fn context(a: ContextArgs) -> Result<i32, Error> {
    let p = project(&a.common)?;
    let env = envelope(&p);
    match a.format {
        Format::Json => print_json(&env)?,
        Format::Human => crate::out!("{}", human(&env)),
    }
    Ok(0)
}

/// The envelope as lines for a person.
pub fn human(env: &Value) -> String {
    let s = |k: &str| env[k].as_str().unwrap_or("(none)").to_string();
    let mut out = String::new();
    out.push_str(&format!("project root: {}\n", s("project_root")));
    out.push_str(&format!("bundle root:  {}\n", s("bundle_root")));
    out.push_str(&format!("config:       {}\n", s("config_path")));
    out.push_str(&format!("profile:      {}\n", s("profile")));
    out.push_str(&format!(
        "agent actor:  {}\n",
        env["actors"]["agent"].as_str().unwrap_or("(not set)")
    ));
    let names = |k: &str| {
        env[k]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|t| t["name"].as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .unwrap_or_default()
    };
    out.push_str(&format!("types:        {}\n", names("types")));
    out.push_str(&format!("tags:         {}\n", names("tags")));
    out
}
