//! `okfit hook`: Claude Code's hooks, answered in-process so the plugin's
//! scripts need nothing but `sh` (no `jq`). Each reads the hook's JSON on
//! stdin, prints its answer as JSON on stdout, and always exits 0: a hook
//! that fails must never stop the agent's session.
//!
//! - `session-start`: orientation as `additionalContext` (the resolved
//!   context, the vocabulary, the root `index.md` up to 12,000 bytes).
//! - `post-tool-use`: after a `Write` or `Edit` of a file in the bundle,
//!   validates that file as `okfit validate --file` does (without the git
//!   tier); conformance errors block with a reason listing each, and a
//!   clean file gets no answer at all.

use clap::Subcommand;
use okfit_core::diag::{Severity, Tier};
use okfit_core::time;
use okfit_store::discover::{self, Project};
use serde_json::{json, Value};
use std::io::Read;
use std::path::{Path, PathBuf};

/// The most of the root `index.md` the session-start context carries.
pub const INDEX_BUDGET: usize = 12_000;

/// A Claude Code hook.
#[derive(Subcommand, Debug)]
pub enum HookCommand {
    /// SessionStart: print the bundle's orientation as additionalContext.
    SessionStart,
    /// PostToolUse (Write|Edit): block when the written concept has conformance errors.
    PostToolUse,
}

/// One declared field of a type: its allowed values, or that it holds a path.
fn field_line(f: &Value) -> String {
    let name = f["name"].as_str().unwrap_or("");
    if let Some(values) = f["values"].as_array().filter(|v| !v.is_empty()) {
        let names: Vec<&str> = values.iter().filter_map(|v| v["name"].as_str()).collect();
        return format!("  - {name}: one of {}\n", names.join(", "));
    }
    if f["kind"] == "path" {
        return format!("  - {name}: a concept id or a path relative to the concept\n");
    }
    String::new()
}

/// Runs a hook; the exit code is always 0.
pub fn run(h: HookCommand) -> i32 {
    let mut input = String::new();
    let _ = std::io::stdin().read_to_string(&mut input);
    let event: Value = serde_json::from_str(&input).unwrap_or(Value::Null);
    let answer = match h {
        HookCommand::SessionStart => Some(session_start(&event)),
        HookCommand::PostToolUse => post_tool_use(&event),
    };
    if let Some(a) = answer {
        crate::outln!("{a}");
    }
    0
}

/// The project directory of a hook event: `OKFIT_PROJECT_DIR`, else
/// `CLAUDE_PROJECT_DIR`, else the event's `cwd`, else the working directory.
fn start_dir(event: &Value) -> PathBuf {
    if let Some(dir) = discover::env_dir() {
        return dir;
    }
    match event["cwd"].as_str() {
        Some(c) if !c.is_empty() => PathBuf::from(c),
        _ => std::env::current_dir().unwrap_or_else(|_| PathBuf::from(".")),
    }
}

fn resolve(event: &Value) -> Result<Project, String> {
    let start = start_dir(event);
    discover::resolve(None, &start, None).map_err(|e| e.to_string())
}

fn context_answer(event: &str, text: String) -> Value {
    json!({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}})
}

fn session_start(event: &Value) -> Value {
    let text = match resolve(event) {
        Ok(p) => orientation(&p),
        Err(e) => format!(
            "okfit: the project's okfit config could not be read ({e}). Fix it, then run `okfit context` to check."
        ),
    };
    context_answer("SessionStart", text)
}

/// The session-start orientation: where the bundle is, the vocabulary an
/// agent may use, who it writes as, and the root index.
pub fn orientation(p: &Project) -> String {
    let env = crate::context::envelope(p);
    let rel = |path: &Path| {
        path.strip_prefix(&p.project_root)
            .ok()
            .map(|r| r.display().to_string())
            .filter(|r| !r.is_empty())
            .unwrap_or_else(|| path.display().to_string())
    };
    let bundle = rel(&p.bundle_root);
    let mut s = String::new();
    if !p.bundle_root.is_dir() {
        s.push_str(&format!(
            "okfit: this project has no OKF bundle yet (expected at {bundle}/). Run `okfit init` to set one up with the software-project profile.\n"
        ));
        return s;
    }
    s.push_str(&format!(
        "okfit: this project keeps its knowledge as an OKF bundle (Markdown concepts with YAML frontmatter) in {bundle}/"
    ));
    match (&p.config_path, p.config.profile) {
        (Some(c), Some(prof)) => s.push_str(&format!(", profile {prof}, config {}.\n", rel(c))),
        (Some(c), None) => s.push_str(&format!(", no profile, config {}.\n", rel(c))),
        (None, _) => s.push_str(
            ", with the software-project defaults (no okfit config: `okfit init` writes one).\n",
        ),
    }
    s.push_str("Read it with the okfit MCP tools (list_concepts, get_concept, concept_neighbors, describe_vocabulary) before guessing. Each concept you write is validated when you save it.\n");
    let concepts_required = p.config.concepts_required.join(", ");
    if !concepts_required.is_empty() {
        s.push_str(&format!(
            "Every concept needs: type, {concepts_required}.\n"
        ));
    }
    if let Some(types) = env["types"].as_array().filter(|t| !t.is_empty()) {
        s.push_str("\nTypes (use exactly these names):\n");
        for t in types {
            let mut line = format!("- {}", t["name"].as_str().unwrap_or(""));
            if let Some(d) = t["description"].as_str() {
                line.push_str(&format!(": {d}"));
            }
            if let Some(r) = t["required"].as_array().filter(|r| !r.is_empty()) {
                let keys: Vec<&str> = r.iter().filter_map(Value::as_str).collect();
                line.push_str(&format!(" (requires {})", keys.join(", ")));
            }
            s.push_str(&line);
            s.push('\n');
            for f in t["fields"].as_array().into_iter().flatten() {
                s.push_str(&field_line(f));
            }
        }
    }
    if let Some(tags) = env["tags"].as_array().filter(|t| !t.is_empty()) {
        let names: Vec<&str> = tags.iter().filter_map(|t| t["name"].as_str()).collect();
        s.push_str(&format!("\nTags: {}.\n", names.join(", ")));
    }
    match &p.config.agent {
        Some(agent) => s.push_str(&format!(
            "\nWhen you write or rewrite a concept, record it as yours:\n  generated:\n    by: {agent}\n    at: <now, ISO 8601 UTC>\n"
        )),
        None => s.push_str(
            "\nactors.agent is not set: add `[actors]` with `agent = \"okfit/claude-code\"` to the okfit config so concepts you write record who wrote them (generated.by).\n",
        ),
    }
    if let Ok(index) = std::fs::read(p.bundle_root.join("index.md")) {
        let text = String::from_utf8_lossy(&index);
        let mut cut = text.len().min(INDEX_BUDGET);
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        s.push_str(&format!(
            "\nThe bundle's root index ({bundle}/index.md):\n\n"
        ));
        s.push_str(&text[..cut]);
        if cut < text.len() {
            s.push_str(&format!(
                "\n[… truncated at {INDEX_BUDGET} bytes of {}; read the rest with get_concept or the okf://index resource]\n",
                text.len()
            ));
        }
    }
    s
}

fn post_tool_use(event: &Value) -> Option<Value> {
    let tool = event["tool_name"].as_str().unwrap_or("");
    if !matches!(tool, "Write" | "Edit" | "MultiEdit") {
        return None;
    }
    let file = event["tool_input"]["file_path"].as_str()?;
    let p = match resolve(event) {
        Ok(p) => p,
        Err(e) => return Some(could_not_run(file, &e)),
    };
    let file = discover::absolute(&start_dir(event).join(file));
    let rel = crate::shared::bundle_relative(&p, &file).filter(|r| r.ends_with(".md"))?;
    let bytes = match std::fs::read(&file) {
        Ok(b) => b,
        Err(e) => return Some(could_not_run(&rel, &format!("cannot read it ({e})"))),
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let now =
        okfit_store::clock::resolve_now(None).unwrap_or_else(|_| okfit_store::clock::wall_clock());
    // What `okfit validate --file` reports for it, without the git tier.
    let report = match okfit_knowledge::project::validate_file(&p, &rel, now, true) {
        Ok(r) => r,
        Err(e) => return Some(could_not_run(&rel, &e.to_string())),
    };
    let errors: Vec<String> = report
        .diagnostics
        .iter()
        .filter(|d| d.source == Tier::Conformance && d.file == rel && d.severity == Severity::Error)
        .map(|d| format!("  {}: {}", d.code, d.message))
        .collect();
    if !errors.is_empty() {
        return Some(json!({
            "decision": "block",
            "reason": format!(
                "{rel}: {} conformance error(s) — fix before continuing:\n{}",
                errors.len(),
                errors.join("\n")
            ),
        }));
    }
    agent_guard(&p, &rel, &text, tool)
}

/// With `actors.agent` set, a concept written without `generated.by`
/// blocks on `Write` and warns on `Edit`, naming the exact value.
fn agent_guard(p: &Project, rel: &str, text: &str, tool: &str) -> Option<Value> {
    let agent = p.config.agent.as_deref()?;
    if okfit_core::doc::is_reserved(rel) {
        return None;
    }
    let fm = okfit_core::doc::frontmatter_of(text)?;
    if fm.get("generated").and_then(|g| g.get("by")).is_some() {
        return None;
    }
    let now = time::format_seconds(okfit_store::clock::wall_clock());
    let msg = format!(
        "{rel}: generated.by is missing; this project's agent actor is {agent}. Add to the frontmatter:\n  generated:\n    by: {agent}\n    at: {now}"
    );
    if tool == "Write" {
        Some(json!({"decision": "block", "reason": msg}))
    } else {
        Some(context_answer("PostToolUse", msg))
    }
}

fn could_not_run(rel: &str, message: &str) -> Value {
    context_answer(
        "PostToolUse",
        format!("okfit validate could not run for {rel}: {message}. The file was not checked this time."),
    )
}
