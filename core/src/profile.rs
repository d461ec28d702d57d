//! Named profiles. Only `software-project` ships: its vocabulary is merged
//! under the project's okfit.toml and it checks the Project concept.

use crate::diag::{Diagnostic, Severity, Tier};

/// The profile used when the config names none.
pub const DEFAULT: &str = "software-project";

/// The canonical name of a known profile.
pub fn lookup(name: &str) -> Option<&'static str> {
    (name == DEFAULT).then_some(DEFAULT)
}

/// The profile's partial config, merged under the project's file.
pub fn config_text(name: &str) -> Option<&'static str> {
    (name == DEFAULT).then_some(SOFTWARE_PROJECT)
}

const SOFTWARE_PROJECT: &str = r#"
[concepts]
required = ["title", "description"]

[lint]
status_missing = "warn"

[types.Project]
description = "The project itself: what it is, who it is for, and where to start."
guidance = "Exactly one, at the bundle root (project.md), beside index.md."

[types.Module]
description = "A unit of code with an owner and a boundary: a package, a crate, a website, a plugin."
required = ["resource", "kind"]
[types.Module.fields.kind]
description = "What sort of unit the module is."
values = { workspace = "The repository's workspace root.", package = "A published or internal package.", website = "A website.", plugin = "A plugin for another tool.", action = "A CI action.", harness = "A test or benchmark harness.", config-dependency = "A shared configuration package.", worker = "A background worker." }
[types.Module.fields.resource]
description = "Path to the module's source, relative to the bundle."
kind = "path"

[types.Decision]
description = "A choice that was made, with the alternatives that were rejected and why."
guidance = "Never edit a stable Decision; deprecate it and write a new one that supersedes it."
require_verified = true
[types.Decision.fields.supersedes]
description = "The decision this one replaces."
kind = "path"

[types.Convention]
description = "A rule contributors follow."

[types.Interface]
description = "A contract other code or people depend on: an API, a CLI, a config file, a wire format."
required = ["kind"]
[types.Interface.fields.kind]
description = "What sort of contract this is."
values = { api = "A programming interface.", cli = "A command-line interface.", config = "A configuration file format.", wire = "A data or wire format.", mcp = "A Model Context Protocol surface.", runtime = "A runtime contract." }
[types.Interface.fields.resource]
description = "Path to the interface's definition."
kind = "path"

[types.Reference]
description = "Mirrored external material the bundle relies on."
required = ["sources"]

[types.Runbook]
description = "Step-by-step instructions for an operational task."

[types.Glossary]
description = "Definitions of the project's terms."

[types.Limitation]
description = "Something the project knowingly does not do, and why."

[types.DataModel]
description = "The shape of data the project stores or exchanges."

[types.Gotcha]
description = "A surprise that costs time unless someone warns you."

[types.Consumer]
description = "A downstream project that depends on this one."
required = ["repository"]

[types.Roadmap]
description = "Planned work and the conditions that gate it."

[types.Measurement]
description = "A measured figure and how it was measured."
[types.Measurement.fields.justifies]
description = "The concept the measurement supports."
kind = "path"

[types.Invariant]
description = "A property that must always hold."
[types.Invariant.fields.resource]
description = "Where the invariant is enforced."
kind = "path"

[types.Incident]
description = "Something that went wrong, what it cost, and what now guards against it."
required = ["occurred"]
[types.Incident.fields.guard]
description = "The concept or file that guards against a repeat."
kind = "path"

[types.Surface]
description = "A documentation surface (README, docs folder, site) rendered from the bundle."

[types.Publication]
description = "A rendering of concepts onto a documentation surface."

[tags.architecture]
description = "How the parts fit together."
[tags.testing]
description = "Tests and how to run them."
[tags.release]
description = "Versioning, packaging and publishing."
[tags.security]
description = "Threats, trust boundaries and safe handling of input."
[tags.performance]
description = "Speed, memory and the benchmarks that measure them."
[tags.dx]
description = "Developer experience."
[tags.ci]
description = "Continuous integration."
[tags.compat]
description = "Compatibility with other tools and versions."
[tags.bundle]
description = "The OKF bundle itself."
[tags.observability]
description = "Logs, metrics and diagnostics."
[tags.deps]
description = "Dependencies and why they were chosen."
[tags.github]
description = "GitHub-specific behaviour."
[tags.docs]
description = "Documentation."
"#;

/// Runs a profile's checks over `(path, type)` of every decoded concept.
pub fn check(profile: &str, concepts: &[(&str, &str)]) -> Vec<Diagnostic> {
    if profile != DEFAULT {
        return vec![];
    }
    let mut projects: Vec<&str> = concepts
        .iter()
        .filter(|(_, t)| *t == "Project")
        .map(|(p, _)| *p)
        .collect();
    projects.sort_unstable();
    let diag = |file: &str, code: &'static str, message: String| Diagnostic {
        source: Tier::Profile,
        file: file.to_string(),
        code,
        severity: Severity::Error,
        message,
        range: None,
    };
    let mut out = vec![];
    if projects.is_empty() {
        out.push(diag(
            "",
            "project-missing",
            "No Project concept in the bundle; software-project expects exactly one at the bundle root (project.md)".into(),
        ));
    }
    if projects.len() > 1 {
        for p in &projects {
            let others: Vec<&str> = projects.iter().filter(|o| *o != p).copied().collect();
            out.push(diag(
                p,
                "project-multiple",
                format!(
                    "Project concept \"{p}\" is one of {}; software-project expects exactly one (others: {})",
                    projects.len(),
                    others.join(", ")
                ),
            ));
        }
    }
    for p in &projects {
        if p.contains('/') {
            out.push(diag(
                p,
                "project-not-at-root",
                format!("Project concept \"{p}\" is below the bundle root; software-project expects it beside index.md"),
            ));
        }
    }
    out.sort_by(|a, b| a.file.cmp(&b.file).then(a.code.cmp(b.code)));
    out
}
