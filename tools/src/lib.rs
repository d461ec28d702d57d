//! okfit-tools: the tool catalogue (names, titles, descriptions, argument
//! schemas, access) and the handlers behind it, with no protocol attached.
//! The MCP server, the CLI, the daemon and the Node addon all read it.

#![warn(missing_docs)]

pub mod args;
pub mod bundle;
pub mod knowledge;
pub mod schema;
pub mod toolbox;

pub use toolbox::{Outcome, ReadError, ResourceInfo, ToolInfo, Toolbox};

use bundle::Refusal;
use okfit_knowledge::live::Live;
use okfit_knowledge::Knowledge;
use okfit_store::error::Error;
use serde_json::Value;

/// What a tool may do to knowledge: MCP annotations and `--read-only`
/// are read from this, never from the tool's name.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// It changes nothing.
    Read,
    /// It creates or replaces knowledge.
    Write,
    /// It may remove knowledge.
    Destructive,
}

/// A tool's handler, over what it works on.
#[derive(Clone, Copy)]
pub enum Run {
    /// A bundle tool: the project's live bundle in, JSON out.
    Bundle(fn(&Live, &Value) -> Result<Value, Refusal>),
    /// A knowledge tool: a connection in, text out; the error's kind says
    /// how each surface answers (an MCP error result, an exit code).
    Knowledge(fn(&Knowledge, &Value) -> Result<String, Error>),
}

/// One tool, defined once: every surface (the MCP server, Node's
/// `open()`, the fuzzers) reads this entry.
pub struct ToolDef {
    /// Name.
    pub name: &'static str,
    /// Display title.
    pub title: &'static str,
    /// What it does and when to call it.
    pub description: &'static str,
    /// The JSON Schema of its arguments, derived from their type.
    pub schema: fn() -> Value,
    /// The catalogue group it is offered in.
    pub group: Group,
    /// What it may do.
    pub access: Access,
    /// Its handler.
    pub run: Run,
}

/// Arguments that do not fit a tool's type. The schema check runs first,
/// so this names what the schema let through.
#[derive(Debug)]
pub struct ArgsError(String);

impl From<ArgsError> for String {
    fn from(e: ArgsError) -> String {
        e.0
    }
}

impl From<ArgsError> for Error {
    fn from(e: ArgsError) -> Error {
        Error::Usage(e.0)
    }
}

impl From<ArgsError> for Refusal {
    fn from(e: ArgsError) -> Refusal {
        Refusal::from(Error::Usage(e.0))
    }
}

/// A tool's typed arguments.
pub(crate) fn parse<A: serde::de::DeserializeOwned>(args: &Value) -> Result<A, ArgsError> {
    A::deserialize(args).map_err(|e| ArgsError(format!("invalid arguments: {e}")))
}

/// `/changes/0/replaces` as `changes[0].replaces`.
fn instance_path(pointer: &str) -> String {
    let mut out = String::new();
    for seg in pointer.split('/').filter(|s| !s.is_empty()) {
        if !seg.is_empty() && seg.bytes().all(|b| b.is_ascii_digit()) {
            out.push('[');
            out.push_str(seg);
            out.push(']');
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&seg.replace("~1", "/").replace("~0", "~"));
        }
    }
    out
}

/// `s` shortened to its first 80 and last 120 characters when longer.
fn elide_middle(s: &str) -> String {
    let n = s.chars().count();
    if n <= 240 {
        return s.to_string();
    }
    let head: String = s.chars().take(80).collect();
    let tail: String = s.chars().skip(n - 120).collect();
    format!("{head} … {tail}")
}

/// Checks a tool's arguments against its schema before the handler runs:
/// `Err` is the -32602 message in the seed's wording.
pub fn check_args(
    name: &str,
    schema: &Value,
    validator: &jsonschema::Validator,
    args: &Value,
) -> Result<(), String> {
    let mut problems: Vec<String> = vec![];
    if let (Value::Object(given), Some(Value::Object(props))) = (args, schema.get("properties")) {
        let unknown: Vec<&str> = given
            .keys()
            .filter(|k| !props.contains_key(*k))
            .map(String::as_str)
            .collect();
        if !unknown.is_empty() {
            let accepted: Vec<&str> = props.keys().map(String::as_str).collect();
            problems.push(format!(
                "Unrecognized parameter(s): {} (accepted: {})",
                unknown.join(", "),
                if accepted.is_empty() {
                    "none".to_string()
                } else {
                    accepted.join(", ")
                }
            ));
        }
    }
    for e in validator.iter_errors(args) {
        let msg = e.to_string();
        if msg.contains("Additional properties are not allowed") && !problems.is_empty() {
            continue;
        }
        let msg = match e.kind() {
            jsonschema::error::ValidationErrorKind::Pattern { pattern } => {
                format!("Invalid string: must match pattern /{pattern}/")
            }
            // The message quotes the instance, which may be megabytes:
            // keep its start and its end, where the reason is.
            _ => elide_middle(&msg),
        };
        let at = instance_path(&e.instance_path().to_string());
        problems.push(if at.is_empty() {
            msg
        } else {
            format!("{msg} at {at}")
        });
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "Input validation error: Invalid arguments for tool {}: {}",
            name,
            problems.join("; ")
        ))
    }
}

/// Which group of the catalogue a tool belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Group {
    /// Read-only tools over the project's bundle (seed 002).
    Bundle,
    /// manifest, search, get, snapshot (seed 000).
    Knowledge,
    /// write, delete (seed 000).
    Write,
    /// transact, history, restore (`--database-tools`).
    Database,
}

/// Every tool the server can offer, in `tools/list` order.
pub fn catalogue() -> Vec<&'static ToolDef> {
    knowledge::READ_TOOLS
        .iter()
        .chain(knowledge::WRITE_TOOLS.iter())
        .chain(knowledge::DATABASE_TOOLS.iter())
        .chain(bundle::BUNDLE_TOOLS.iter())
        .collect()
}

/// How a server is started.
#[derive(Clone, Debug, Default)]
pub struct Options {
    /// The connection string; `None` is project mode.
    pub connection: Option<String>,
    /// `--tools`: exactly these tools.
    pub tools: Option<Vec<String>>,
    /// `--database-tools`.
    pub database_tools: bool,
    /// `--read-only`: no tool that writes.
    pub read_only: bool,
    /// Overrides the computed manifest advice.
    pub advice: Option<String>,
}

/// The tool names a server offers for `opts`.
pub fn select_tools(opts: &Options) -> Result<Vec<&'static str>, Error> {
    select(opts, opts.connection.is_some())
}

/// [`select_tools`], `connected` saying whether knowledge is connected
/// (the knowledge tools) or not (the project's bundle tools).
pub(crate) fn select(opts: &Options, connected: bool) -> Result<Vec<&'static str>, Error> {
    let cat = catalogue();
    let names: Vec<&'static str> = match &opts.tools {
        Some(list) => {
            let mut out = vec![];
            for n in list.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
                match cat.iter().find(|d| d.name == n) {
                    Some(d) => {
                        if !out.contains(&d.name) {
                            out.push(d.name)
                        }
                    }
                    None => {
                        let all: Vec<&str> = cat.iter().map(|d| d.name).collect();
                        return Err(Error::Usage(format!(
                            "unknown tool \"{}\": expected one of {}",
                            okfit_store::error::truncate(n),
                            all.join(", ")
                        )));
                    }
                }
            }
            out
        }
        None => {
            let groups: &[Group] = match (connected, opts.database_tools) {
                (true, true) => &[Group::Knowledge, Group::Write, Group::Database],
                (true, false) => &[Group::Knowledge, Group::Write],
                (false, true) => &[Group::Bundle, Group::Database],
                (false, false) => &[Group::Bundle],
            };
            cat.iter()
                .filter(|d| groups.contains(&d.group))
                .map(|d| d.name)
                .collect()
        }
    };
    let names = if opts.read_only {
        names
            .into_iter()
            .filter(|n| !cat.iter().any(|d| d.name == *n && d.access != Access::Read))
            .collect()
    } else {
        names
    };
    Ok(names)
}
