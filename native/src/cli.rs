//! The `okfit` command line: the project commands (`init`, `context`,
//! `validate`, `lint`, `sync`, `verify`, `stale`, `graph`, `query`), the
//! store commands (in `kbcli`) and the servers.
//! Reports go to stdout; errors and summaries to stderr, one line each.

use crate::shared::{
    bundle_project, envelope_head, meta, meta_envelope, out_err, print_json, shown, version_line,
    Common,
};
use clap::{Args, Parser, Subcommand, ValueEnum};
use okfit_core::bundle::{Bundle, NodeKind, Report};
use okfit_core::doc::LinkSource;
use okfit_core::query::{self, ListFilter};
use okfit_core::report;
use okfit_core::time;
use okfit_knowledge::project::{self, LoadOptions};
use okfit_mcp::McpArgs;
use okfit_store::clock::resolve_now;
use okfit_store::discover::Project;
use okfit_store::error::Error;
use std::io::{IsTerminal, Write};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "okfit",
    about = "Validate and query Open Knowledge Format (OKF) bundles",
    disable_version_flag = true
)]
struct Cli {
    /// Print the version and exit.
    #[arg(long, short = 'V')]
    version: bool,
    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Set up okfit in a project: the config and the bundle skeleton (never overwrites).
    Init(crate::init::InitArgs),
    /// Print the resolved config: roots, profile, agent actor, vocabulary (no bundle load).
    Context(crate::context::ContextArgs),
    /// Check conformance and lints; exit 0 clean, 1 lint/profile errors, 2 conformance errors.
    Validate(CheckArgs),
    /// Like validate, without the conformance tier.
    Lint(CheckArgs),
    /// Regenerate derived content: generated stamps, each directory's index.md, the root log.md.
    Sync(crate::sync::SyncArgs),
    /// List concepts whose stale_after instant has passed.
    Stale(StaleArgs),
    /// Print the link graph.
    Graph(GraphArgs),
    /// Query concepts.
    #[command(subcommand)]
    Query(QueryCommand),
    /// Serve knowledge over MCP on stdio (same as `okfit-mcp`).
    Mcp(McpArgs),
    /// Store one bundle folder into a store tenant (replacing that bundle's documents).
    Put(crate::kbcli::PutArgs),
    /// Store every immediate non-hidden subfolder of DIR as a bundle, in one commit.
    Import(crate::kbcli::ImportArgs),
    /// Write every document's exact bytes into a new directory.
    Export(crate::kbcli::ExportArgs),
    /// Print the manifest TSV.
    Manifest(crate::kbcli::ManifestArgs),
    /// Rank concepts for a query (TSV).
    Search(crate::kbcli::SearchArgs),
    /// Fetch concepts by id (exit 1 when one is missing).
    Get(crate::kbcli::GetArgs),
    /// Print the snapshot digest and concept count.
    Snapshot(crate::kbcli::SnapshotArgs),
    /// Create or replace one document (content from stdin or --from).
    Write(crate::kbcli::WriteArgs),
    /// Delete one document.
    Delete(crate::kbcli::DeleteArgs),
    /// Commit a JSON batch of changes atomically.
    Transact(crate::kbcli::TransactArgs),
    /// List retained revisions, newest first (JSON).
    History(crate::kbcli::HistoryArgs),
    /// Publish a retained revision again as a new revision.
    Restore(crate::kbcli::RestoreArgs),
    /// Keep the newest N revisions and drop the rest.
    Gc(crate::kbcli::GcArgs),
    /// Attest concepts as verified by you (an id, --all or --type), or,
    /// with a connection or nothing to attest, re-check a store's revisions.
    #[command(long_about = crate::attest::LONG_ABOUT)]
    Verify(crate::attest::VerifyArgs),
    /// Serve the store to many agents over a unix socket or TCP (HTTP/1.1).
    Serve(crate::kbcli::ServeArgs),
    /// Mint a bearer token for a tenant and record it in <data>/tokens.json.
    Token(crate::kbcli::TokenArgs),
    /// Claude Code hooks: read the hook's JSON on stdin, answer on stdout, always exit 0.
    #[command(subcommand)]
    Hook(crate::hook::HookCommand),
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum CheckFormat {
    Human,
    Json,
    Sarif,
}

#[derive(Args, Debug)]
struct CheckArgs {
    #[command(flatten)]
    common: Common,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: CheckFormat,
    /// The instant to validate at (ISO 8601 with offset); default: OKFIT_NOW or the clock.
    #[arg(long, value_name = "ISO")]
    now: Option<String>,
    /// Skip the git tier of generated-at-drift.
    #[arg(long)]
    skip_provenance: bool,
    /// Report only the findings of this Markdown file of the bundle (a path,
    /// or bundle-relative), reading only what they depend on.
    #[arg(long, value_name = "PATH")]
    file: Option<PathBuf>,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum PlainFormat {
    Human,
    Json,
}

#[derive(Args, Debug)]
struct StaleArgs {
    #[command(flatten)]
    common: Common,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: PlainFormat,
    /// The instant to compare with (ISO 8601 with offset).
    #[arg(long, value_name = "ISO")]
    now: Option<String>,
}

#[derive(Clone, Copy, Debug, ValueEnum, PartialEq, Eq)]
enum GraphFormat {
    Mermaid,
    Dot,
    Json,
}

#[derive(Args, Debug)]
struct GraphArgs {
    #[command(flatten)]
    common: Common,
    /// Output format.
    #[arg(long, value_enum, default_value = "mermaid")]
    format: GraphFormat,
}

#[derive(Subcommand, Debug)]
enum QueryCommand {
    /// List concept summaries.
    List(ListArgs),
    /// One concept with its frontmatter and links.
    Get(IdArgs),
    /// A concept's graph neighbours.
    Neighbors(IdArgs),
}

#[derive(Args, Debug)]
struct ListArgs {
    #[command(flatten)]
    common: Common,
    /// Only this type (repeatable: any of them).
    #[arg(long = "type", value_name = "TYPE")]
    types: Vec<String>,
    /// Only concepts with this tag (repeatable: all of them).
    #[arg(long = "tag", value_name = "TAG")]
    tags: Vec<String>,
    /// Only this status (repeatable: any of them).
    #[arg(long = "status", value_name = "STATUS")]
    statuses: Vec<String>,
    /// Only concepts with a verified entry.
    #[arg(long)]
    verified: bool,
    /// Only concepts without a verified entry.
    #[arg(long)]
    unverified: bool,
    /// Page size.
    #[arg(long, default_value_t = 200)]
    limit: usize,
    /// Page start.
    #[arg(long, default_value_t = 0)]
    offset: usize,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: PlainFormat,
}

#[derive(Args, Debug)]
struct IdArgs {
    /// Concept id (path id, with or without a leading / or trailing .md).
    id: String,
    #[command(flatten)]
    common: Common,
    /// Output format.
    #[arg(long, value_enum, default_value = "human")]
    format: PlainFormat,
}

/// [`run`] as launched by a package (`@okfit/plugin`): `okfit --version`
/// and the envelopes name it.
pub fn run_as<I, T>(args: I, distribution: okfit_core::report::Distribution) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    crate::shared::set_distribution(distribution);
    run(args)
}

/// Runs the CLI with `args` (including the program name); returns the exit code.
pub fn run<I, T>(args: I) -> i32
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let cli = match Cli::try_parse_from(args) {
        Ok(c) => c,
        Err(e) => {
            use clap::error::ErrorKind;
            return match e.kind() {
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion => {
                    let _ = e.print();
                    0
                }
                _ => {
                    eprintln!("error: {} (see okfit --help)", usage_line(&e));
                    64
                }
            };
        }
    };
    if cli.version {
        crate::outln!("{}", version_line());
        return 0;
    }
    let Some(command) = cli.command else {
        let mut cmd = <Cli as clap::CommandFactory>::command();
        let _ = cmd.print_help();
        crate::outln!();
        return 0;
    };
    let json_errors = matches!(
        &command,
        Command::Validate(CheckArgs {
            format: CheckFormat::Json,
            ..
        }) | Command::Lint(CheckArgs {
            format: CheckFormat::Json,
            ..
        })
    );
    let outcome = dispatch(command);
    if crate::shared::reader_gone() {
        return 0;
    }
    match outcome {
        Ok(code) => match crate::shared::stdout_failed() {
            Some(why) => {
                let e = Error::Io(format!("could not write the report ({why})"));
                eprintln!("error: {e}");
                e.exit_code()
            }
            None => code,
        },
        Err(e) => {
            if json_errors {
                crate::outln!(
                    "{}",
                    report::error_json(
                        okfit_store::VERSION,
                        e.exit_code(),
                        e.tag(),
                        &e.to_string()
                    )
                );
            }
            eprintln!("error: {e}");
            e.exit_code()
        }
    }
}

fn dispatch(command: Command) -> Result<i32, Error> {
    if matches!(
        command,
        Command::Put(_)
            | Command::Import(_)
            | Command::Export(_)
            | Command::Transact(_)
            | Command::Restore(_)
            | Command::Gc(_)
            | Command::Verify(_)
    ) && !matches!(&command, Command::Verify(a) if a.attests())
    {
        crate::progress::show_on_terminal();
    }
    match command {
        Command::Init(a) => crate::init::init(a),
        Command::Context(a) => crate::context::context(a),
        Command::Sync(a) => crate::sync::sync(a),
        Command::Hook(h) => Ok(crate::hook::run(h)),
        Command::Validate(a) => check(a, false),
        Command::Lint(a) => check(a, true),
        Command::Stale(a) => stale(a),
        Command::Graph(a) => graph(a),
        Command::Mcp(a) => okfit_mcp::run(&a.options()),
        Command::Put(a) => crate::kbcli::put(a),
        Command::Import(a) => crate::kbcli::import(a),
        Command::Export(a) => crate::kbcli::export(a),
        Command::Manifest(a) => crate::kbcli::manifest(a),
        Command::Search(a) => crate::kbcli::search_cmd(a),
        Command::Get(a) => crate::kbcli::get(a),
        Command::Snapshot(a) => crate::kbcli::snapshot(a),
        Command::Write(a) => crate::kbcli::write(a),
        Command::Delete(a) => crate::kbcli::delete(a),
        Command::Transact(a) => crate::kbcli::transact(a),
        Command::History(a) => crate::kbcli::history(a),
        Command::Restore(a) => crate::kbcli::restore(a),
        Command::Gc(a) => crate::kbcli::gc(a),
        Command::Verify(a) => crate::attest::verify(a),
        Command::Serve(a) => crate::kbcli::serve(a),
        Command::Token(a) => crate::kbcli::token(a),
        Command::Query(q) => match q {
            QueryCommand::List(a) => query_list(a),
            QueryCommand::Get(a) => query_get(a),
            QueryCommand::Neighbors(a) => query_neighbors(a),
        },
    }
}

/// One line for a command-line error: clap's message with its indented
/// continuation (the missing arguments) folded in, or the subcommands a
/// command needs.
fn usage_line(e: &clap::Error) -> String {
    let text = e.render().to_string();
    if e.kind() == clap::error::ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
        let names: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("Commands:"))
            .skip(1)
            .take_while(|l| l.starts_with("  "))
            .filter_map(|l| l.split_whitespace().next())
            .filter(|n| *n != "help")
            .collect();
        return format!("a subcommand is required: {}", names.join(", "));
    }
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("invalid arguments");
    let mut msg = first
        .strip_prefix("error: ")
        .unwrap_or(first)
        .trim_end()
        .to_string();
    for l in lines.take_while(|l| l.starts_with("  ")) {
        if msg.ends_with(':') {
            msg.push(' ');
        } else {
            msg.push_str(", ");
        }
        msg.push_str(l.trim());
    }
    msg
}

fn check(a: CheckArgs, lint_only: bool) -> Result<i32, Error> {
    let now = resolve_now(a.now.as_deref())?;
    let p = bundle_project(&a.common)?;
    let mut report = match &a.file {
        Some(f) => {
            let rel = crate::shared::bundle_relative(&p, f)
                .or_else(|| {
                    let given = f.to_string_lossy().replace('\\', "/");
                    p.bundle_root.join(&given).is_file().then_some(given)
                })
                .ok_or_else(|| {
                    Error::Usage(format!(
                        "--file {} is not a file of the bundle at {}",
                        f.display(),
                        p.bundle_root.display()
                    ))
                })?;
            project::validate_file(&p, &rel, now, a.skip_provenance)?
        }
        None => {
            let loaded = project::load(
                &p,
                &LoadOptions {
                    now: Some(now),
                    git: !a.skip_provenance,
                    ..LoadOptions::default()
                },
            )?;
            let report = project::validate(&p, &loaded, a.skip_provenance);
            // The process ends right after printing: freeing every parsed
            // document one by one would only add to the wall time.
            std::mem::forget(loaded);
            report
        }
    };
    if lint_only {
        report = report.lint_only();
    }
    let m = meta(&p);
    let stdout = std::io::stdout();
    let mut w = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    match a.format {
        CheckFormat::Json => {
            report::write_json(&mut w, &report, &m).map_err(|e| out_err(e.into()))?;
            writeln!(w).map_err(out_err)?;
        }
        CheckFormat::Sarif => {
            serde_json::to_writer_pretty(&mut w, &report::sarif(&report, &m))
                .map_err(|e| out_err(e.into()))?;
            writeln!(w).map_err(out_err)?;
        }
        CheckFormat::Human => {
            write_human(&mut w, &report).map_err(out_err)?;
            w.flush().map_err(out_err)?;
            eprintln!("{}", report::human_summary(&report, &shown(&p.bundle_root)));
        }
    }
    w.flush().map_err(out_err)?;
    Ok(report.exit_code())
}

fn write_human(w: &mut impl Write, report: &Report) -> std::io::Result<()> {
    let color = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    for d in &report.diagnostics {
        let line = report::human_line(d);
        if color {
            let sev = d.severity.as_str();
            let code = match d.severity {
                okfit_core::diag::Severity::Error => "31",
                okfit_core::diag::Severity::Warning => "33",
                okfit_core::diag::Severity::Info => "36",
            };
            writeln!(
                w,
                "{}",
                line.replacen(
                    &format!(" {sev} "),
                    &format!(" \x1b[{code}m{sev}\x1b[0m "),
                    1
                )
            )?;
        } else {
            writeln!(w, "{line}")?;
        }
    }
    Ok(())
}

fn load_bundle(p: &Project, keep_frontmatter: bool) -> Result<Bundle, Error> {
    Ok(project::load(
        p,
        &LoadOptions {
            keep_frontmatter,
            ..LoadOptions::default()
        },
    )?
    .bundle)
}

fn stale(a: StaleArgs) -> Result<i32, Error> {
    let now = resolve_now(a.now.as_deref())?;
    let p = bundle_project(&a.common)?;
    let b = load_bundle(&p, false)?;
    let items = query::stale(&b, now);
    let total = b.concepts().count();
    match a.format {
        PlainFormat::Json => {
            let m = meta(&p);
            print_json(&meta_envelope(
                &m,
                serde_json::json!({
                    "as_of": time::format_millis(now),
                    "summary": { "concepts": total, "stale": items.len() },
                    "items": items.iter().map(|i| serde_json::json!({
                        "id": i.summary.id, "stale_after": i.stale_after, "days_past": i.days_past
                    })).collect::<Vec<_>>(),
                }),
            ))?;
        }
        PlainFormat::Human => {
            for i in &items {
                crate::outln!(
                    "{}  {}  ({} days past)",
                    i.summary.id,
                    i.stale_after,
                    i.days_past
                );
            }
            eprintln!(
                "{} stale concepts of {} in {}",
                items.len(),
                total,
                shown(&p.bundle_root)
            );
        }
    }
    Ok(0)
}

fn dot_escape(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"")
}

fn mermaid_escape(s: &str) -> String {
    s.replace('"', "#quot;")
}

fn graph(a: GraphArgs) -> Result<i32, Error> {
    let p = bundle_project(&a.common)?;
    let b = load_bundle(&p, false)?;
    let g = b.graph();
    match a.format {
        GraphFormat::Json => {
            let m = meta(&p);
            let nodes: Vec<_> = g
                .nodes
                .iter()
                .map(|(id, k)| serde_json::json!({"id": id, "kind": k}))
                .collect();
            let edges: Vec<_> = g
                .edges
                .iter()
                .map(|e| {
                    let mut v = serde_json::json!({
                        "from": g.nodes[e.from].0, "to": g.nodes[e.to].0, "source": e.source,
                    });
                    if let Some(f) = e.field {
                        v["field"] = f.into();
                    }
                    v["raw"] = e.raw.clone().into();
                    v
                })
                .collect();
            print_json(&meta_envelope(
                &m,
                serde_json::json!({
                    "summary": { "nodes": g.nodes.len(), "edges": g.edges.len() },
                    "nodes": nodes,
                    "edges": edges,
                }),
            ))?;
        }
        GraphFormat::Mermaid => {
            let mut s = String::from("flowchart LR\n");
            for (i, (id, k)) in g.nodes.iter().enumerate() {
                let shape = match k {
                    NodeKind::Concept => format!("n{i}[\"{}\"]", mermaid_escape(id)),
                    NodeKind::File => format!("n{i}([\"{}\"])", mermaid_escape(id)),
                    NodeKind::Missing => {
                        format!("n{i}{{{{\"{} (missing)\"}}}}", mermaid_escape(id))
                    }
                };
                s.push_str(&format!("  {shape}\n"));
            }
            for e in &g.edges {
                match (e.source, e.field) {
                    (LinkSource::Frontmatter, Some(f)) => {
                        s.push_str(&format!("  n{} -->|{f}| n{}\n", e.from, e.to))
                    }
                    _ => s.push_str(&format!("  n{} --> n{}\n", e.from, e.to)),
                }
            }
            crate::out!("{s}");
        }
        GraphFormat::Dot => {
            let mut s = String::from("digraph okf {\n  rankdir=LR;\n");
            for (id, k) in &g.nodes {
                let style = match k {
                    NodeKind::Concept => "shape=box",
                    NodeKind::File => "shape=note",
                    NodeKind::Missing => "shape=box, style=dashed, color=red",
                };
                s.push_str(&format!("  \"{}\" [{style}];\n", dot_escape(id)));
            }
            for e in &g.edges {
                let (f, t) = (dot_escape(&g.nodes[e.from].0), dot_escape(&g.nodes[e.to].0));
                match e.field {
                    Some(field) => {
                        s.push_str(&format!("  \"{f}\" -> \"{t}\" [label=\"{field}\"];\n"))
                    }
                    None => s.push_str(&format!("  \"{f}\" -> \"{t}\";\n")),
                }
            }
            s.push_str("}\n");
            crate::out!("{s}");
        }
    }
    Ok(0)
}

fn check_vocab(p: &Project, kind: &str, names: &[String]) -> Result<(), Error> {
    let declared: Vec<&String> = if kind == "type" {
        p.config.types.keys().collect()
    } else {
        p.config.tags.keys().collect()
    };
    for n in names {
        if !declared.contains(&n) {
            let list: Vec<&str> = declared.iter().map(|s| s.as_str()).collect();
            return Err(Error::Usage(format!(
                "{kind} \"{}\" is not declared in the config; declared: {}",
                okfit_store::error::truncate(n),
                if list.is_empty() {
                    "(none)".to_string()
                } else {
                    list.join(", ")
                }
            )));
        }
    }
    Ok(())
}

fn query_list(a: ListArgs) -> Result<i32, Error> {
    if a.verified && a.unverified {
        return Err(Error::Usage(
            "query list takes --verified or --unverified, not both".into(),
        ));
    }
    let p = bundle_project(&a.common)?;
    check_vocab(&p, "type", &a.types)?;
    check_vocab(&p, "tag", &a.tags)?;
    let b = load_bundle(&p, false)?;
    let f = ListFilter {
        types: a.types,
        tags: a.tags,
        statuses: a.statuses,
        verified: if a.verified {
            Some(true)
        } else if a.unverified {
            Some(false)
        } else {
            None
        },
    };
    let (items, total) = query::list(&b, &f, a.offset, a.limit);
    match a.format {
        PlainFormat::Json => print_json(&envelope_head(
            serde_json::json!({ "total": total, "items": items }),
        ))?,
        PlainFormat::Human => {
            for i in &items {
                crate::outln!("{}  {}  {}  {}", i.id, i.type_name, i.status, i.title);
            }
            eprintln!("{} of {} concepts", items.len(), total);
        }
    }
    Ok(0)
}

/// Loads the bundle for a command that names one concept, checking the id.
fn load_for_id(a: &IdArgs, keep_frontmatter: bool) -> Result<(Bundle, String), Error> {
    let p = bundle_project(&a.common)?;
    let id = query::normalize_id(&a.id);
    if id.is_empty() {
        return Err(Error::Usage("a concept id must not be empty".into()));
    }
    let b = load_bundle(&p, keep_frontmatter)?;
    if b.concept(&id).is_none() {
        return Err(Error::ConceptNotFound(a.id.clone()));
    }
    Ok((b, id))
}

fn query_get(a: IdArgs) -> Result<i32, Error> {
    let (b, id) = load_for_id(&a, true)?;
    let Some((d, c)) = b.concept(&id) else {
        return Err(Error::ConceptNotFound(a.id));
    };
    match a.format {
        PlainFormat::Json => {
            let frontmatter = c.frontmatter.clone().unwrap_or_default();
            let concept = query::concept_json(&b, d, c, frontmatter, None);
            print_json(&envelope_head(serde_json::json!({ "concept": concept })))?;
        }
        PlainFormat::Human => {
            let s = query::summary(d, c);
            let links = query::links(&b, d);
            crate::outln!("{}  {}  {}", s.id, s.type_name, s.status);
            crate::outln!("title: {}", s.title);
            if let Some(desc) = &s.description {
                crate::outln!("description: {desc}");
            }
            if !s.tags.is_empty() {
                crate::outln!("tags: {}", s.tags.join(", "));
            }
            crate::outln!("path: {}", s.path);
            for l in &links {
                let kind = serde_json::to_value(l.kind)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default();
                match l.field {
                    Some(f) => crate::outln!("-> {} ({kind}, {f})", l.to),
                    None => crate::outln!("-> {} ({kind})", l.to),
                }
            }
        }
    }
    Ok(0)
}

fn query_neighbors(a: IdArgs) -> Result<i32, Error> {
    let (b, id) = load_for_id(&a, false)?;
    let (outgoing, incoming) = query::neighbors(&b, &id).unwrap_or_default();
    match a.format {
        PlainFormat::Json => print_json(&envelope_head(serde_json::json!({
            "id": id, "outgoing": outgoing, "incoming": incoming,
        })))?,
        PlainFormat::Human => {
            for n in &outgoing {
                crate::outln!("-> {}", n.id);
            }
            for n in &incoming {
                crate::outln!("<- {}", n.id);
            }
        }
    }
    Ok(0)
}
