//! Rendering a [`Report`]: the JSON envelope (schema 1), the human format
//! and SARIF 2.1.0.

use crate::bundle::Report;
use crate::diag::{Diagnostic, Severity, LINT_DEFAULTS};
use serde::Serialize;

/// This engine's version, stamped into every envelope.
pub const ENGINE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Who produced a report.
#[derive(Clone, Debug, Serialize)]
pub struct Distribution {
    /// Package name.
    pub name: String,
    /// Package version.
    pub version: String,
}

/// The envelope fields that are not findings.
#[derive(Clone, Debug)]
pub struct Meta {
    /// The front end's version.
    pub okfit_version: String,
    /// `"okfit"` for the CLI, `"@okfit/mcp"` for the MCP server.
    pub producer: String,
    /// Set when launched through another package.
    pub distribution: Option<Distribution>,
    /// The merged config's `okf_version`.
    pub okf_version: String,
    /// Absolute bundle root.
    pub root: String,
    /// Resolved profile name.
    pub profile: Option<String>,
}

impl Meta {
    /// The metadata of a report made by `producer` (a front end at
    /// `okfit_version`) on the bundle at `root`, validated with `cfg`.
    pub fn new(
        okfit_version: &str,
        producer: &str,
        cfg: &crate::config::Config,
        root: String,
    ) -> Meta {
        Meta {
            okfit_version: okfit_version.to_string(),
            producer: producer.to_string(),
            distribution: None,
            okf_version: cfg.okf_version.clone(),
            root,
            profile: cfg.profile.map(str::to_string),
        }
    }
}

#[derive(Serialize)]
struct Envelope<'a> {
    schema: u32,
    okfit_version: &'a str,
    engine_version: &'a str,
    producer: &'a str,
    distribution: &'a Option<Distribution>,
    okf_version: &'a str,
    root: &'a str,
    profile: &'a Option<String>,
    exit_code: i32,
    summary: &'a crate::diag::Summary,
    diagnostics: &'a [Diagnostic],
}

/// Writes the schema-1 JSON envelope (keys in contract order).
pub fn write_json<W: std::io::Write>(w: W, report: &Report, meta: &Meta) -> serde_json::Result<()> {
    serde_json::to_writer(w, &envelope(report, meta))
}

fn envelope<'a>(report: &'a Report, meta: &'a Meta) -> Envelope<'a> {
    Envelope {
        schema: 1,
        okfit_version: &meta.okfit_version,
        engine_version: ENGINE_VERSION,
        producer: &meta.producer,
        distribution: &meta.distribution,
        okf_version: &meta.okf_version,
        root: &meta.root,
        profile: &meta.profile,
        exit_code: report.exit_code(),
        summary: &report.summary,
        diagnostics: &report.diagnostics,
    }
}

/// The envelope as a JSON value (what the MCP tool returns).
pub fn to_value(report: &Report, meta: &Meta) -> serde_json::Value {
    serde_json::to_value(envelope(report, meta)).unwrap_or(serde_json::Value::Null)
}

/// The JSON error envelope for a run that could not report (exit 3 for
/// infrastructure failures, 64 for usage errors).
pub fn error_json(okfit_version: &str, exit_code: i32, tag: &str, message: &str) -> String {
    serde_json::json!({
        "schema": 1,
        "okfit_version": okfit_version,
        "engine_version": ENGINE_VERSION,
        "distribution": null,
        "exit_code": exit_code,
        "error": { "tag": tag, "message": message },
    })
    .to_string()
}

/// One line per diagnostic: `<file>:<line>:<col> <severity> <code> <message>`
/// (one-based), or `<file> <severity> <code> <message>` without a range;
/// `(bundle)` stands for bundle-level findings.
pub fn human_line(d: &Diagnostic) -> String {
    let file = if d.file.is_empty() {
        "(bundle)"
    } else {
        &d.file
    };
    match &d.range {
        Some(r) => format!(
            "{file}:{}:{} {} {} {}",
            r.line + 1,
            r.character + 1,
            d.severity.as_str(),
            d.code,
            d.message
        ),
        None => format!("{file} {} {} {}", d.severity.as_str(), d.code, d.message),
    }
}

/// The summary line: `<E> errors, <W> warnings, <I> info in <N> concepts (<root>)`.
pub fn human_summary(report: &Report, root_shown: &str) -> String {
    let s = &report.summary;
    let errors = s.conformance_errors + s.lint_errors + s.profile_errors;
    format!(
        "{errors} errors, {} warnings, {} info in {} concepts ({root_shown})",
        s.lint_warnings, s.lint_info, s.concepts
    )
}

fn sarif_level(s: Severity) -> &'static str {
    match s {
        Severity::Error => "error",
        Severity::Warning => "warning",
        Severity::Info => "note",
    }
}

const URI_PATH: &percent_encoding::AsciiSet = &percent_encoding::CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// `file://` URI of an absolute directory, with a trailing slash.
fn file_uri(path: &str) -> String {
    let enc = percent_encoding::utf8_percent_encode(path, URI_PATH).to_string();
    let sep = if enc.starts_with('/') { "" } else { "/" };
    let tail = if enc.ends_with('/') { "" } else { "/" };
    format!("file://{sep}{enc}{tail}")
}

/// SARIF 2.1.0, so CI systems can show findings inline. Artifact URIs are
/// bundle-relative under the `BUNDLE_ROOT` base id.
pub fn sarif(report: &Report, meta: &Meta) -> serde_json::Value {
    use serde_json::json;
    let mut codes: Vec<&str> = report.diagnostics.iter().map(|d| d.code).collect();
    codes.sort_unstable();
    codes.dedup();
    let rules: Vec<serde_json::Value> = codes
        .iter()
        .map(|c| {
            let tier = if crate::diag::CONFORMANCE_CODES.contains(c) {
                "conformance"
            } else if crate::diag::PROFILE_CODES.contains(c) {
                "profile"
            } else {
                "lint"
            };
            let default = LINT_DEFAULTS
                .iter()
                .find(|(x, _)| x == c)
                .and_then(|(_, s)| *s)
                .unwrap_or(Severity::Error);
            json!({
                "id": c,
                "name": c,
                "shortDescription": { "text": format!("okfit {tier} check {c}") },
                "defaultConfiguration": { "level": sarif_level(default) },
                "properties": { "tier": tier },
            })
        })
        .collect();
    let results: Vec<serde_json::Value> = report
        .diagnostics
        .iter()
        .map(|d| {
            let rule_index = codes.iter().position(|c| *c == d.code).unwrap_or(0);
            let mut r = json!({
                "ruleId": d.code,
                "ruleIndex": rule_index,
                "level": sarif_level(d.severity),
                "message": { "text": d.message },
            });
            let uri = if d.file.is_empty() {
                "index.md"
            } else {
                &d.file
            };
            let mut loc = json!({
                "physicalLocation": {
                    "artifactLocation": { "uri": uri, "uriBaseId": "BUNDLE_ROOT" }
                }
            });
            if let Some(rg) = &d.range {
                loc["physicalLocation"]["region"] = json!({
                    "startLine": rg.line + 1,
                    "startColumn": rg.character + 1,
                    "charOffset": rg.offset,
                    "charLength": rg.length,
                });
            }
            r["locations"] = json!([loc]);
            r
        })
        .collect();
    json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": { "driver": {
                "name": "okfit",
                "version": meta.okfit_version,
                "semanticVersion": meta.okfit_version,
                "rules": rules,
            }},
            "originalUriBaseIds": { "BUNDLE_ROOT": { "uri": file_uri(&meta.root) } },
            "columnKind": "utf16CodeUnits",
            "results": results,
            "properties": {
                "engine_version": ENGINE_VERSION,
                "okf_version": meta.okf_version,
                "profile": meta.profile,
                "exit_code": report.exit_code(),
            },
        }],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn meta_from_config() {
        let cfg = crate::config::resolve(Some("okf_version = \"0.3\"\n")).unwrap();
        let m = Meta::new("9.9.9", "@okfit/wasm", &cfg, String::new());
        assert_eq!(m.okfit_version, "9.9.9");
        assert_eq!(m.producer, "@okfit/wasm");
        assert!(m.distribution.is_none());
        assert_eq!(m.okf_version, "0.3");
        assert_eq!(m.root, "");
        assert_eq!(m.profile.as_deref(), cfg.profile);
    }
}
