//! One test (or more) per validation rule: exact code, severity, file and
//! message, plus ranges, sort order, exit codes, link resolution and the
//! body digest (reference okfit.md §2–§9, SPEC §2).

use okfit_core::bundle::{self, validate, Bundle, NodeKind, Report, Resolution};
use okfit_core::config::{self, Config};
use okfit_core::diag::{Diagnostic, Severity, Tier};
use okfit_core::doc::{file_body_digest, Kind};
use okfit_core::text::Range;
use okfit_core::time::parse_now;
use sha2::{Digest, Sha256};

// ---------------------------------------------------------------- helpers

mod common;
use common::{none_of, single, with_code, NONE};

fn cfg(text: &str) -> Config {
    config::resolve(Some(text)).unwrap()
}

fn default_cfg() -> Config {
    config::resolve(None).unwrap()
}

fn none() -> Config {
    cfg(NONE)
}

fn load(files: &[(&str, &str)], cfg: &Config, now: Option<&str>) -> Bundle {
    common::load_text(files, cfg, now)
}

fn run_at(files: &[(&str, &str)], cfg: &Config, now: Option<&str>) -> Report {
    validate(&load(files, cfg, now), cfg, vec![])
}

fn run(files: &[(&str, &str)], cfg: &Config) -> Report {
    run_at(files, cfg, None)
}

fn assert_diag(
    d: &Diagnostic,
    source: Tier,
    file: &str,
    code: &str,
    severity: Severity,
    message: &str,
) {
    assert_eq!(d.source, source, "{d:?}");
    assert_eq!(d.file, file, "{d:?}");
    assert_eq!(d.code, code, "{d:?}");
    assert_eq!(d.severity, severity, "{d:?}");
    assert_eq!(d.message, message, "{d:?}");
}

fn conf(r: &Report, file: &str, code: &str, message: &str) -> Diagnostic {
    let d = single(r, code).clone();
    assert_diag(&d, Tier::Conformance, file, code, Severity::Error, message);
    d
}

fn lint(r: &Report, file: &str, code: &str, sev: Severity, message: &str) -> Diagnostic {
    let d = single(r, code).clone();
    assert_diag(&d, Tier::Lint, file, code, sev, message);
    d
}

fn sha_hex(s: &str) -> String {
    let d = Sha256::digest(s.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

const IDX: (&str, &str) = ("index.md", "# Concepts\n\n* [A](a.md) - A.\n");

// ---------------------------------------------------------------- baseline

#[test]
fn clean_bundle_has_no_diagnostics() {
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\ntitle: A\n---\n# A\n\nSee [b](sub/b.md).\n",
            ),
            ("sub/index.md", "# X\n\n* [B](b.md)\n"),
            ("sub/b.md", "---\ntype: X\n---\n# B\n"),
            ("log.md", "# Log\n\n## 2026-01-01\n\n* Started.\n"),
        ],
        &none(),
    );
    assert!(r.diagnostics.is_empty(), "{:#?}", r.diagnostics);
    assert_eq!(r.exit_code(), 0);
    assert_eq!(r.summary.concepts, 2);
}

// ---------------------------------------------------------------- conformance

#[test]
fn frontmatter_missing() {
    let r = run(&[IDX, ("a.md", "# Just a heading\n")], &none());
    let d = conf(
        &r,
        "a.md",
        "frontmatter-missing",
        "concept files must start with a --- frontmatter block",
    );
    assert_eq!(d.range, None);
    assert_eq!(r.summary.concepts, 0);
    assert_eq!(r.exit_code(), 2);
}

#[test]
fn frontmatter_missing_not_reported_for_reserved_files() {
    let r = run(
        &[
            ("index.md", "# Concepts\n"),
            ("log.md", "# Log\n"),
            ("sub/index.md", ""),
        ],
        &none(),
    );
    none_of(&r, "frontmatter-missing");
}

#[test]
fn frontmatter_unclosed() {
    let r = run(&[IDX, ("a.md", "---\ntype: X\n\n# A\n")], &none());
    let d = conf(
        &r,
        "a.md",
        "frontmatter-unclosed",
        "frontmatter opens with --- but never closes",
    );
    assert_eq!(
        d.range,
        Some(Range {
            offset: 0,
            length: 3,
            line: 0,
            character: 0
        })
    );
}

#[test]
fn frontmatter_unclosed_applies_to_reserved_files_too() {
    let r = run(&[("index.md", "---\nokf_version: \"0.2\"\n")], &none());
    conf(
        &r,
        "index.md",
        "frontmatter-unclosed",
        "frontmatter opens with --- but never closes",
    );
    let r = run(&[("log.md", "---\n# Log\n")], &none());
    conf(
        &r,
        "log.md",
        "frontmatter-unclosed",
        "frontmatter opens with --- but never closes",
    );
}

#[test]
fn frontmatter_unparseable() {
    let text = "---\ntype: X\ntitle: [unclosed\n---\n";
    let r = run(&[IDX, ("a.md", text)], &none());
    let d = single(&r, "frontmatter-unparseable");
    assert_eq!(d.source, Tier::Conformance);
    assert_eq!(d.file, "a.md");
    assert_eq!(d.severity, Severity::Error);
    assert!(d.message.starts_with("invalid YAML: "), "{}", d.message);
    let range = d.range.expect("a range at the YAML error or the block");
    assert!((range.offset + range.length) as usize <= text.len());
    // Mapped to file positions: the `[` on the file's third line.
    assert_eq!((range.line, range.character), (2, 7));
    assert_eq!(r.summary.concepts, 0);
}

#[test]
fn frontmatter_unparseable_range_is_in_utf16_file_positions() {
    let text = "---\ntype: X\ntitle: \"é😀\" junk\n---\n";
    let r = run(&[IDX, ("a.md", text)], &none());
    let d = single(&r, "frontmatter-unparseable");
    let range = d.range.unwrap();
    // `junk` starts after `title: "é😀" `: 7 + 1 + 1 + 2 + 1 + 1 units.
    assert_eq!((range.line, range.character), (2, 13));
    assert_eq!(range.offset, 12 + 13);
}

#[test]
fn frontmatter_unparseable_duplicate_key_message_is_for_users() {
    // The YAML layer's advice to Rust callers ("set DuplicateKeyPolicy in
    // Options if acceptable") must not reach the user.
    let r = run(
        &[IDX, ("a.md", "---\ntype: X\ntitle: A\ntype: Y\n---\n")],
        &none(),
    );
    let d = single(&r, "frontmatter-unparseable");
    assert!(
        d.message
            .starts_with("invalid YAML: duplicate mapping key: type"),
        "{}",
        d.message
    );
    assert!(!d.message.contains("DuplicateKeyPolicy"), "{}", d.message);
    assert!(!d.message.contains("Options"), "{}", d.message);
    let range = d.range.unwrap();
    assert_eq!((range.line, range.character), (3, 0));
}

#[test]
fn type_missing_not_a_mapping() {
    let r = run(&[IDX, ("a.md", "---\n- a\n- b\n---\n")], &none());
    let d = conf(&r, "a.md", "type-missing", "frontmatter is not a mapping");
    assert_eq!(d.range, None);
}

#[test]
fn type_missing_absent_or_not_a_string() {
    for text in [
        "---\ntitle: A\n---\n",
        "---\ntype: [a, b]\n---\n",
        "---\ntype: 3\n---\n",
        "---\ntype:\n---\n",
    ] {
        let r = run(&[IDX, ("a.md", text)], &none());
        let d = conf(
            &r,
            "a.md",
            "type-missing",
            "`type` must be a non-empty string",
        );
        assert_eq!(d.range, None, "{text}");
        assert_eq!(r.summary.concepts, 0, "{text}");
    }
}

#[test]
fn type_missing_empty_string() {
    let r = run(&[IDX, ("a.md", "---\ntype: \"\"\n---\n")], &none());
    let d = conf(&r, "a.md", "type-missing", "`type` must not be empty");
    assert_eq!(d.range, None);
}

#[test]
fn index_frontmatter_root() {
    let text = "---\nfoo: 1\n---\n# Concepts\n";
    let r = run(&[("index.md", text)], &none());
    let d = conf(
        &r,
        "index.md",
        "index-frontmatter",
        "root index.md frontmatter may only carry a string \"okf_version\"",
    );
    // The whole frontmatter block.
    assert_eq!(
        d.range,
        Some(Range {
            offset: 0,
            length: 14,
            line: 0,
            character: 0
        })
    );
}

#[test]
fn index_frontmatter_root_okf_version_string_is_fine() {
    let r = run(
        &[("index.md", "---\nokf_version: \"0.2\"\n---\n# Concepts\n")],
        &none(),
    );
    assert!(r.diagnostics.is_empty(), "{:#?}", r.diagnostics);
}

#[test]
fn index_frontmatter_root_extra_key() {
    let r = run(
        &[(
            "index.md",
            "---\nokf_version: \"0.2\"\ntitle: Home\n---\n# Concepts\n",
        )],
        &none(),
    );
    conf(
        &r,
        "index.md",
        "index-frontmatter",
        "root index.md frontmatter may only carry a string \"okf_version\"",
    );
}

#[test]
fn index_frontmatter_subdir() {
    let r = run(
        &[
            ("index.md", "# Concepts\n"),
            ("sub/index.md", "---\nokf_version: \"0.2\"\n---\n# Things\n"),
        ],
        &none(),
    );
    conf(
        &r,
        "sub/index.md",
        "index-frontmatter",
        "index.md below the bundle root must not carry frontmatter",
    );
}

#[test]
fn index_malformed_found_paragraph() {
    let r = run(
        &[("index.md", "# Tables\n\nSome prose here.\n\n* [A](a.md)\n")],
        &none(),
    );
    let d = conf(
        &r,
        "index.md",
        "index-malformed",
        "expected a list under \"# Tables\", found paragraph",
    );
    let range = d.range.unwrap();
    assert_eq!((range.line, range.character, range.offset), (2, 0, 10));
}

#[test]
fn index_malformed_found_code() {
    let r = run(&[("index.md", "# Tables\n\n```\nx\n```\n")], &none());
    conf(
        &r,
        "index.md",
        "index-malformed",
        "expected a list under \"# Tables\", found code",
    );
}

#[test]
fn index_malformed_entry_without_link() {
    let r = run(
        &[(
            "index.md",
            "# Tables\n\n* plain entry\n* [Orders](orders.md)\n",
        )],
        &none(),
    );
    let d = conf(&r, "index.md", "index-malformed", "index entry has no link");
    let range = d.range.unwrap();
    assert_eq!((range.line, range.character, range.offset), (2, 0, 10));
}

#[test]
fn index_well_formed_has_no_findings() {
    let r = run(
        &[(
            "index.md",
            "# Tables\n\n* [Orders](orders.md) - All orders.\n* [Users](users.md): people\n\n# Metrics\n\n- [Revenue](revenue.md)\n",
        )],
        &none(),
    );
    assert!(r.diagnostics.is_empty(), "{:#?}", r.diagnostics);
}

#[test]
fn log_heading_invalid() {
    let r = run(
        &[
            IDX,
            (
                "log.md",
                "# Log\n\n## yesterday\n\n* did it\n\n## 2026-01-02\n\n* ok\n",
            ),
        ],
        &none(),
    );
    let d = conf(
        &r,
        "log.md",
        "log-heading-invalid",
        "log heading \"yesterday\" is not a YYYY-MM-DD date",
    );
    assert_eq!(d.range.unwrap().line, 2);
    // The entries under the invalid heading are skipped, not malformed.
    none_of(&r, "log-malformed");
}

#[test]
fn log_malformed_entries_before_date() {
    let r = run(&[("log.md", "# Log\n\n* early entry\n")], &none());
    conf(
        &r,
        "log.md",
        "log-malformed",
        "log entries appear before any date heading",
    );
}

#[test]
fn log_malformed_non_list_under_date() {
    let r = run(
        &[("log.md", "# Log\n\n## 2026-01-01\n\nA paragraph.\n")],
        &none(),
    );
    conf(
        &r,
        "log.md",
        "log-malformed",
        "expected a list under \"## 2026-01-01\", found paragraph",
    );
}

#[test]
fn log_malformed_item_without_text() {
    let r = run(
        &[(
            "log.md",
            "# Log\n\n## 2026-01-01\n\n* ok\n* - nested only\n",
        )],
        &none(),
    );
    conf(
        &r,
        "log.md",
        "log-malformed",
        "log item does not start with text",
    );
}

#[test]
fn conformance_codes_are_not_configurable_errors() {
    // Even with every lint off, conformance findings stay errors.
    let c = cfg(&format!(
        "{NONE}[lint]\nbroken_links = \"off\"\nmissing_index = \"off\"\n"
    ));
    let r = run(&[("a.md", "no frontmatter\n")], &c);
    conf(
        &r,
        "a.md",
        "frontmatter-missing",
        "concept files must start with a --- frontmatter block",
    );
    assert_eq!(r.exit_code(), 2);
}

// ---------------------------------------------------------------- lints

#[test]
fn broken_links_missing_file() {
    let text = "---\ntype: X\n---\nSee [x](nope.md).\n";
    let r = run(&[IDX, ("a.md", text)], &none());
    let d = lint(
        &r,
        "a.md",
        "broken-links",
        Severity::Warning,
        "Link target \"nope.md\" does not exist in the bundle",
    );
    // The whole link node span.
    assert_eq!(
        d.range,
        Some(Range {
            offset: 20,
            length: 12,
            line: 3,
            character: 4
        })
    );
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn broken_links_missing_file_with_fragment_reports_only_the_file() {
    let r = run(
        &[IDX, ("a.md", "---\ntype: X\n---\n[x](nope.md#intro)\n")],
        &none(),
    );
    lint(
        &r,
        "a.md",
        "broken-links",
        Severity::Warning,
        "Link target \"nope.md#intro\" does not exist in the bundle",
    );
}

#[test]
fn broken_links_frontmatter_resource() {
    let r = run(
        &[IDX, ("a.md", "---\ntype: X\nresource: gone/file.rs\n---\n")],
        &none(),
    );
    let d = lint(
        &r,
        "a.md",
        "broken-links",
        Severity::Warning,
        "Link target \"gone/file.rs\" does not exist in the bundle",
    );
    // The value inside the frontmatter.
    let range = d.range.unwrap();
    assert_eq!((range.line, range.character, range.length), (2, 10, 12));
}

#[test]
fn broken_links_bad_fragment_did_you_mean() {
    let r = run(
        &[
            IDX,
            ("a.md", "---\ntype: X\n---\nSee [b](b.md#setup-guid).\n"),
            ("b.md", "---\ntype: X\n---\n# Setup Guide\n\n## Usage\n"),
        ],
        &none(),
    );
    lint(
        &r,
        "a.md",
        "broken-links",
        Severity::Warning,
        "Link target \"b.md#setup-guid\" has no heading \"#setup-guid\"; did you mean \"#setup-guide\"?",
    );
}

#[test]
fn fragment_matches_slug_including_percent_encoding_and_duplicates() {
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\n---\n[1](b.md#the-v4-sqlite-decision) [2](b.md#the-v4-sqlite%2Ddecision) [3](b.md#setup-1) [4](b#setup)\n",
            ),
            (
                "b.md",
                "---\ntype: X\n---\n# The v4 SQLite decision?\n\n## Setup\n\n## Setup\n",
            ),
        ],
        &none(),
    );
    none_of(&r, "broken-links");
}

#[test]
fn broken_links_fragment_lists_headings_or_says_none() {
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\n---\n[b](b.md#zzzzzzzz) [c](c.md#anything)\n",
            ),
            ("b.md", "---\ntype: X\n---\n# Alpha\n\n## Beta\n"),
            ("c.md", "---\ntype: X\n---\nNo headings here.\n"),
        ],
        &none(),
    );
    let v = with_code(&r, "broken-links");
    let msgs: Vec<&str> = v.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        msgs,
        vec![
            "Link target \"b.md#zzzzzzzz\" has no heading \"#zzzzzzzz\"; its headings are #alpha, #beta",
            "Link target \"c.md#anything\" has no heading \"#anything\"; the target has no headings",
        ]
    );
}

#[test]
fn broken_links_self_anchor() {
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\n---\n# Intro\n\n[ok](#intro) [bad](#intor)\n",
            ),
        ],
        &none(),
    );
    lint(
        &r,
        "a.md",
        "broken-links",
        Severity::Warning,
        "Link target \"#intor\" has no heading \"#intor\"; did you mean \"#intro\"?",
    );
}

#[test]
fn broken_links_images_count() {
    let r = run(
        &[
            IDX,
            ("img/ok.png", "png"),
            (
                "a.md",
                "---\ntype: X\n---\n![ok](img/ok.png) ![gone](img/gone.png)\n",
            ),
        ],
        &none(),
    );
    lint(
        &r,
        "a.md",
        "broken-links",
        Severity::Warning,
        "Link target \"img/gone.png\" does not exist in the bundle",
    );
}

#[test]
fn family_invalid_range_in_utf16_after_non_ascii_line() {
    let text = "---\ntype: X\ntitle: 😀é\ntags: nope\n---\n";
    let r = run(&[IDX, ("a.md", text)], &none());
    let d = single(&r, "family-invalid");
    let prefix = "---\ntype: X\ntitle: 😀é\ntags: ";
    assert_eq!(
        d.range,
        Some(Range {
            offset: prefix.encode_utf16().count() as u32,
            length: 4,
            line: 3,
            character: 6
        })
    );
}

#[test]
fn broken_links_ignore_urls_external_and_reference_links() {
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\nresource: ../packages/core\n---\n[u](https://example.com/x.md) [m](mailto:a@b.c) [e](../../outside.md) [r][ref]\n\n[ref]: nope.md\n",
            ),
        ],
        &none(),
    );
    none_of(&r, "broken-links");
}

#[test]
fn missing_index_root_and_subdir() {
    let r = run(
        &[
            ("a.md", "---\ntype: X\n---\n"),
            ("sub/b.md", "---\ntype: X\n---\n"),
        ],
        &none(),
    );
    let v = with_code(&r, "missing-index");
    assert_eq!(v.len(), 2);
    assert_diag(
        v[0],
        Tier::Lint,
        "index.md",
        "missing-index",
        Severity::Warning,
        "Directory \".\" has no index.md",
    );
    assert_diag(
        v[1],
        Tier::Lint,
        "sub/index.md",
        "missing-index",
        Severity::Warning,
        "Directory \"sub\" has no index.md",
    );
    assert!(v.iter().all(|d| d.range.is_none()));
}

#[test]
fn missing_index_only_for_dirs_holding_decoded_concepts() {
    let r = run(
        &[
            IDX,
            ("assets/logo.png", "png"),
            ("broken/a.md", "no frontmatter"),
        ],
        &none(),
    );
    none_of(&r, "missing-index");
}

#[test]
fn unknown_type() {
    let c = cfg(&format!(
        "{NONE}[types.Metric]\ndescription = \"A number.\"\n"
    ));
    let r = run(
        &[
            IDX,
            ("a.md", "---\ntype: Widget\n---\n"),
            ("b.md", "---\ntype: Metric\n---\n"),
        ],
        &c,
    );
    lint(
        &r,
        "a.md",
        "unknown-type",
        Severity::Error,
        "Type \"Widget\" is not declared in [types]",
    );
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn unknown_type_off_when_no_types_declared() {
    let r = run(&[IDX, ("a.md", "---\ntype: Widget\n---\n")], &none());
    none_of(&r, "unknown-type");
    // Even when explicitly switched on.
    let c = cfg(&format!("{NONE}[lint]\nunknown_type = \"error\"\n"));
    let r = run(&[IDX, ("a.md", "---\ntype: Widget\n---\n")], &c);
    none_of(&r, "unknown-type");
}

#[test]
fn required_key_missing() {
    let c = cfg(&format!(
        "{NONE}[concepts]\nrequired = [\"title\", \"owner\"]\n[types.X]\nrequired = [\"kind\"]\n"
    ));
    let r = run(
        &[
            IDX,
            ("a.md", "---\ntype: X\ntitle: \"\"\nowner: null\n---\n"),
        ],
        &c,
    );
    let v = with_code(&r, "required-key-missing");
    let msgs: Vec<&str> = v.iter().map(|d| d.message.as_str()).collect();
    // An empty string is present; null counts as absent.
    assert_eq!(
        msgs,
        vec![
            "Required key \"owner\" is missing",
            "Required key \"kind\" is missing"
        ]
    );
    for d in v {
        assert_eq!(d.severity, Severity::Error);
        assert_eq!(d.file, "a.md");
        assert_eq!(d.source, Tier::Lint);
    }
}

#[test]
fn field_value_unknown() {
    let c = cfg(&format!(
        "{NONE}[types.Module.fields.kind]\nvalues = {{ zeta = \"Z.\", alpha = \"A.\" }}\n"
    ));
    let r = run(
        &[IDX, ("a.md", "---\ntype: Module\nkind: gamma\n---\n")],
        &c,
    );
    lint(
        &r,
        "a.md",
        "field-value-unknown",
        Severity::Error,
        "Value \"gamma\" for \"kind\" is not one of: zeta, alpha",
    );
    let r = run(&[IDX, ("a.md", "---\ntype: Module\nkind: 3\n---\n")], &c);
    lint(
        &r,
        "a.md",
        "field-value-unknown",
        Severity::Error,
        "Value 3 for \"kind\" is not one of: zeta, alpha",
    );
    let r = run(
        &[IDX, ("a.md", "---\ntype: Module\nkind: alpha\n---\n")],
        &c,
    );
    none_of(&r, "field-value-unknown");
}

#[test]
fn require_verified_unmet_and_drafts_exempt() {
    let c = cfg(&format!(
        "{NONE}[types.Decision]\nrequire_verified = true\n"
    ));
    let r = run(&[IDX, ("a.md", "---\ntype: Decision\n---\n")], &c);
    lint(
        &r,
        "a.md",
        "require-verified-unmet",
        Severity::Error,
        "Type \"Decision\" requires a verified entry",
    );
    let r = run(
        &[IDX, ("a.md", "---\ntype: Decision\nstatus: stable\n---\n")],
        &c,
    );
    single(&r, "require-verified-unmet");
    let r = run(
        &[IDX, ("a.md", "---\ntype: Decision\nstatus: draft\n---\n")],
        &c,
    );
    none_of(&r, "require-verified-unmet");
    let r = run(
        &[(
            "a.md",
            "---\ntype: Decision\nverified:\n  by: human:ann\n  at: 2026-01-01T00:00:00Z\n---\n",
        ), IDX],
        &c,
    );
    none_of(&r, "require-verified-unmet");
}

#[test]
fn family_invalid_tags_as_string() {
    let b = load(
        &[IDX, ("a.md", "---\ntype: X\ntags: finance\n---\n")],
        &none(),
        None,
    );
    let r = validate(&b, &none(), vec![]);
    let d = lint(
        &r,
        "a.md",
        "family-invalid",
        Severity::Error,
        "tags: expected a list of strings, got a string",
    );
    // The YAML node of the field.
    let range = d.range.unwrap();
    assert_eq!((range.line, range.character, range.length), (2, 6, 7));
    // The concept still decodes, with the field treated as absent.
    let (_, c) = b.concept("a").unwrap();
    assert!(c.tags.is_empty());
    assert_eq!(r.summary.concepts, 1);
}

#[test]
fn family_invalid_offsetless_timestamp() {
    let b = load(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\nstale_after: 2026-01-01T00:00:00\n---\n",
            ),
        ],
        &none(),
        Some("2030-01-01T00:00:00Z"),
    );
    let r = validate(&b, &none(), vec![]);
    let d = single(&r, "family-invalid");
    assert_eq!(d.severity, Severity::Error);
    assert!(
        d.message.contains(
            "Expected an ISO 8601 timestamp with an explicit offset (Z, +hh:mm or -hh:mm)"
        ),
        "{}",
        d.message
    );
    assert_eq!(
        d.message,
        "stale_after: Expected an ISO 8601 timestamp with an explicit offset (Z, +hh:mm or -hh:mm)"
    );
    // Treated as absent: no stale lint.
    none_of(&r, "stale");
    assert_eq!(b.concept("a").unwrap().1.stale_after, None);
}

#[test]
fn family_invalid_bad_actor() {
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\ngenerated:\n  by: nobody\n  at: 2026-01-01T00:00:00Z\nverified:\n  - by: \"human: ann\"\n    at: 2026-01-01T00:00:00Z\n---\n",
            ),
        ],
        &none(),
    );
    let v = with_code(&r, "family-invalid");
    let msgs: Vec<&str> = v.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(
        msgs,
        vec![
            "generated.by: Expected <producer>/<version> or <prefix>:<id> with no whitespace",
            "verified[0].by: Expected <producer>/<version> or <prefix>:<id> with no whitespace",
        ]
    );
}

#[test]
fn computation_runtime_missing() {
    let r = run(
        &[IDX, ("a.md", "---\ntype: Attested Computation\n---\n")],
        &none(),
    );
    lint(
        &r,
        "a.md",
        "computation-runtime-missing",
        Severity::Error,
        "`runtime` is required on an Attested Computation",
    );
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: Attested Computation\nruntime: python3.12\n---\n",
            ),
        ],
        &none(),
    );
    none_of(&r, "computation-runtime-missing");
    // Only that exact type.
    let r = run(&[IDX, ("a.md", "---\ntype: Computation\n---\n")], &none());
    none_of(&r, "computation-runtime-missing");
}

#[test]
fn footnote_source_unknown() {
    let text = "---\ntype: X\nsources:\n  - resource: https://example.com/a\n    id: s1\n---\nClaim.[^s1] Other.[^s2] Again.[^s2]\n\n[^s1]: A\n[^s2]: B\n";
    let r = run(&[IDX, ("a.md", text)], &none());
    let d = lint(
        &r,
        "a.md",
        "footnote-source-unknown",
        Severity::Warning,
        "Footnote label \"s2\" matches no sources[].id",
    );
    // The first occurrence of the token.
    let start = text.find("[^s2]").unwrap() as u32;
    assert_eq!(d.range.unwrap().offset, start);
    assert_eq!(d.range.unwrap().length, 5);
    // Without any sources[].id the rule is silent.
    let r = run(
        &[
            IDX,
            ("a.md", "---\ntype: X\n---\nClaim.[^zz]\n\n[^zz]: z\n"),
        ],
        &none(),
    );
    none_of(&r, "footnote-source-unknown");
}

#[test]
fn footnote_undefined() {
    let text = "---\ntype: X\n---\nClaim.[^a] Again[^a] and [^b].\n\n[^b]: defined\n";
    let r = run(&[IDX, ("a.md", text)], &none());
    let d = lint(
        &r,
        "a.md",
        "footnote-undefined",
        Severity::Warning,
        "Footnote \"a\" is referenced but has no [^a]: definition",
    );
    assert_eq!(d.range.unwrap().offset, text.find("[^a]").unwrap() as u32);
}

#[test]
fn footnotes_inside_code_are_ignored() {
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\nsources:\n  - resource: https://example.com\n    id: s1\n---\nInline `[^x]` code.\n\n```\n[^y]\n```\n\n    [^z] indented code\n",
            ),
        ],
        &none(),
    );
    none_of(&r, "footnote-undefined");
    none_of(&r, "footnote-source-unknown");
}

#[test]
fn log_frontmatter() {
    let text = "---\ntitle: Log\n---\n# Log\n\n## 2026-01-01\n\n* ok\n";
    let r = run(&[IDX, ("log.md", text)], &none());
    let d = lint(
        &r,
        "log.md",
        "log-frontmatter",
        Severity::Warning,
        "log.md carries frontmatter; the spec defines none",
    );
    assert_eq!(d.range.unwrap().offset, 0);
    assert_eq!(d.range.unwrap().length, 18);
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn actor_prefix_unknown() {
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\ngenerated:\n  by: team:docs\n  at: 2026-01-01T00:00:00Z\n---\n",
            ),
        ],
        &none(),
    );
    lint(
        &r,
        "a.md",
        "actor-prefix-unknown",
        Severity::Info,
        "Actor \"team:docs\" uses an unknown prefix; expected human:<id>, process:<id>, or <producer>/<version>",
    );
    assert_eq!(r.exit_code(), 0);
    for ok in ["human:ann", "process:ci", "okfit/claude-code"] {
        let r = run(
            &[
                IDX,
                (
                    "a.md",
                    &format!("---\ntype: X\ngenerated:\n  by: {ok}\n---\n"),
                ),
            ],
            &none(),
        );
        none_of(&r, "actor-prefix-unknown");
        none_of(&r, "family-invalid");
    }
}

#[test]
fn legacy_timestamp() {
    let b = load(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\ntimestamp: 2026-01-01T00:00:00Z\n---\n",
            ),
        ],
        &none(),
        None,
    );
    let r = validate(&b, &none(), vec![]);
    let d = lint(
        &r,
        "a.md",
        "legacy-timestamp",
        Severity::Info,
        "legacy `timestamp` used as `generated.at`",
    );
    assert_eq!(d.range.unwrap().line, 2);
    let g = b.concept("a").unwrap().1.generated.clone().unwrap();
    assert_eq!(g.by, "process:legacy-timestamp");
    assert_eq!(g.at, Some(parse_now("2026-01-01T00:00:00Z").unwrap()));
    // Ignored when `generated` is present.
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\ngenerated:\n  by: human:ann\ntimestamp: 2026-01-01T00:00:00Z\n---\n",
            ),
        ],
        &none(),
    );
    none_of(&r, "legacy-timestamp");
}

#[test]
fn config_unknown_key() {
    let c = cfg(&format!("extra = 1\n{NONE}"));
    let r = run(&[IDX], &c);
    let d = lint(
        &r,
        "",
        "config-unknown-key",
        Severity::Warning,
        "Unknown config key \"extra\"",
    );
    assert_eq!(d.range, None);
}

#[test]
fn stale_only_with_now() {
    let files = [
        IDX,
        (
            "a.md",
            "---\ntype: X\nstale_after: 2020-01-01T00:00:00Z\n---\n",
        ),
    ];
    let r = run(&files, &none());
    none_of(&r, "stale");
    let r = run_at(&files, &none(), Some("2026-09-01T00:00:00Z"));
    let d = lint(
        &r,
        "a.md",
        "stale",
        Severity::Info,
        "Concept is stale since 2020-01-01T00:00:00.000Z",
    );
    assert_eq!(d.range.unwrap().line, 2);
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn stale_is_inclusive_at_exactly_now() {
    let files = [
        IDX,
        (
            "a.md",
            "---\ntype: X\nstale_after: 2020-01-01T00:00:00Z\n---\n",
        ),
    ];
    let r = run_at(&files, &none(), Some("2020-01-01T00:00:00Z"));
    lint(
        &r,
        "a.md",
        "stale",
        Severity::Info,
        "Concept is stale since 2020-01-01T00:00:00.000Z",
    );
    let r = run_at(&files, &none(), Some("2019-12-31T23:59:59.999Z"));
    none_of(&r, "stale");
    // Offsets are instants, not strings: 01:00+01:00 is the same instant.
    let r = run_at(&files, &none(), Some("2020-01-01T01:00:00+01:00"));
    single(&r, "stale");
}

#[test]
fn timestamp_date_only_warning() {
    let r = run(
        &[
            IDX,
            ("a.md", "---\ntype: X\nstale_after: 2026-12-31\n---\n"),
        ],
        &none(),
    );
    lint(
        &r,
        "a.md",
        "timestamp-date-only",
        Severity::Warning,
        "stale_after: \"2026-12-31\" is a date without a time or offset; read as 2026-12-31T00:00:00Z",
    );
    none_of(&r, "family-invalid");
}

#[test]
fn timestamp_date_only_reads_as_midnight_utc() {
    let files = [
        IDX,
        ("a.md", "---\ntype: X\nstale_after: 2026-12-31\n---\n"),
    ];
    let r = run_at(&files, &none(), Some("2026-12-31T00:00:00Z"));
    lint(
        &r,
        "a.md",
        "stale",
        Severity::Info,
        "Concept is stale since 2026-12-31T00:00:00.000Z",
    );
    let r = run_at(&files, &none(), Some("2026-12-30T23:59:59Z"));
    none_of(&r, "stale");
}

fn stamped(body: &str, recorded: &str) -> String {
    format!(
        "---\ntype: X\ngenerated:\n  by: okfit/claude-code\n  at: 2026-01-01T00:00:00Z\n  body_sha256: {recorded}\n---\n{body}"
    )
}

#[test]
fn generated_at_drift_tier1_differs() {
    let old = file_body_digest("---\n---\n\n# Title\n\nOld text.\n");
    let text = stamped("\n# Title\n\nNew text.\n", &old);
    let now = file_body_digest(&text);
    assert_ne!(old, now);
    let r = run(&[IDX, ("a.md", &text)], &none());
    let d = lint(
        &r,
        "a.md",
        "generated-at-drift",
        Severity::Warning,
        &format!(
            "generated.body_sha256 is {}…; the body now hashes to {}…, so it changed after generated.at; re-stamp generated.at and body_sha256",
            &old[..12],
            &now[..12]
        ),
    );
    assert_eq!(d.range.unwrap().length, 64);
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn generated_at_drift_tier1_equal_is_silent() {
    let body = "\n# Title\n\nText.\n";
    let digest = file_body_digest(&format!("---\n---\n{body}"));
    let r = run(&[IDX, ("a.md", &stamped(body, &digest))], &none());
    none_of(&r, "generated-at-drift");
    // An uppercase recorded digest is the same digest.
    let r = run(
        &[IDX, ("a.md", &stamped(body, &digest.to_uppercase()))],
        &none(),
    );
    none_of(&r, "generated-at-drift");
}

#[test]
fn generated_at_drift_ignores_crlf_and_trailing_newline_churn() {
    let digest = file_body_digest("---\n---\n\n# Title\n\nText.\n");
    let lf = stamped("\n# Title\n\nText.", &digest);
    let crlf = stamped("\n# Title\n\nText.\n\n\n", &digest).replace('\n', "\r\n");
    for text in [&lf, &crlf] {
        let r = run(&[IDX, ("a.md", text)], &none());
        none_of(&r, "generated-at-drift");
        assert!(r.diagnostics.is_empty(), "{:#?}", r.diagnostics);
    }
}

#[test]
fn generated_at_drift_off_drops_it() {
    let c = cfg(&format!("{NONE}[lint]\ngenerated_at_drift = \"off\"\n"));
    let r = run(&[IDX, ("a.md", &stamped("changed", &"f".repeat(64)))], &c);
    none_of(&r, "generated-at-drift");
}

#[test]
fn status_missing_off_by_default_warn_under_software_project() {
    let r = run(&[IDX, ("a.md", "---\ntype: X\n---\n")], &none());
    none_of(&r, "status-missing");
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: Glossary\ntitle: A\ndescription: d\n---\n",
            ),
        ],
        &default_cfg(),
    );
    lint(
        &r,
        "a.md",
        "status-missing",
        Severity::Warning,
        "Concept has neither a status nor a verified entry; set status (draft for unreviewed work)",
    );
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: Glossary\ntitle: A\ndescription: d\nstatus: draft\n---\n",
            ),
        ],
        &default_cfg(),
    );
    none_of(&r, "status-missing");
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: Glossary\ntitle: A\ndescription: d\nverified:\n  by: process:ci\n  at: 2026-01-01T00:00:00Z\n---\n",
            ),
        ],
        &default_cfg(),
    );
    none_of(&r, "status-missing");
}

#[test]
fn source_resource_missing() {
    let r = run(
        &[
            IDX,
            ("docs/x.md", "plain file, not a concept"),
            (
                "a.md",
                "---\ntype: X\nsources:\n  - resource: docs/missing.md\n  - resource: docs/x.md\n  - resource: all rows of the orders table\n  - resource: https://example.com/y\n---\n",
            ),
        ],
        &none(),
    );
    lint(
        &r,
        "a.md",
        "source-resource-missing",
        Severity::Warning,
        "Resource \"docs/missing.md\" does not exist relative to a.md",
    );
    // A missing sources[].resource is a descriptor, never a broken link.
    none_of(&r, "broken-links");
}

#[test]
fn status_unknown() {
    let r = run(
        &[IDX, ("a.md", "---\ntype: X\nstatus: wip\n---\n")],
        &none(),
    );
    lint(
        &r,
        "a.md",
        "status-unknown",
        Severity::Warning,
        "Status \"wip\" is not one of draft, stable, deprecated",
    );
    for s in ["draft", "stable", "deprecated", "current"] {
        let r = run(
            &[IDX, ("a.md", &format!("---\ntype: X\nstatus: {s}\n---\n"))],
            &none(),
        );
        none_of(&r, "status-unknown");
    }
}

#[test]
fn surface_unmatched() {
    let r = run(
        &[
            IDX,
            (
                "s.md",
                "---\ntype: Surface\nresource: \"docs/**/*.md\"\n---\n",
            ),
            ("site/index.md", "# S\n\n* [T](t.md)\n"),
            (
                "site/t.md",
                "---\ntype: Surface\nresource: \"pages/*.html\"\n---\n",
            ),
            (
                "ok.md",
                "---\ntype: Surface\nresource: \"site/*.md\"\n---\n",
            ),
        ],
        &none(),
    );
    let v = with_code(&r, "surface-unmatched");
    assert_eq!(v.len(), 2, "{v:#?}");
    assert_diag(
        v[0],
        Tier::Lint,
        "s.md",
        "surface-unmatched",
        Severity::Warning,
        "Surface resource \"docs/**/*.md\" matches nothing under .",
    );
    assert_diag(
        v[1],
        Tier::Lint,
        "site/t.md",
        "surface-unmatched",
        Severity::Warning,
        "Surface resource \"pages/*.html\" matches nothing under site",
    );
    // A Surface's glob is not a link.
    none_of(&r, "broken-links");
}

fn project_files() -> Vec<(&'static str, String)> {
    vec![
        ("index.md", "# Concepts\n\n* [P](project.md)\n".into()),
        (
            "project.md",
            "---\ntype: Project\ntitle: P\ndescription: d\nstatus: stable\n---\n".into(),
        ),
        (
            "surf.md",
            "---\ntype: Surface\ntitle: S\ndescription: d\nstatus: stable\nresource: \"*.md\"\n---\n"
                .into(),
        ),
        (
            "a.md",
            "---\ntype: Glossary\ntitle: A\ndescription: d\nstatus: stable\n---\n# A\n".into(),
        ),
        (
            "b.md",
            "---\ntype: Glossary\ntitle: B\ndescription: d\nstatus: stable\n---\n# B\n".into(),
        ),
    ]
}

fn run_with_pub(pub_text: &str, c: &Config) -> Report {
    let mut files = project_files();
    files.push(("pub.md", pub_text.to_string()));
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    run(&refs, c)
}

fn publication(surface: &str, renders: &str) -> String {
    format!("---\ntype: Publication\ntitle: Pub\ndescription: d\nstatus: stable\nsurface: {surface}\n{renders}---\n")
}

#[test]
fn publication_orphan() {
    let r = run_with_pub(&publication("nope", ""), &default_cfg());
    let v = with_code(&r, "publication-orphan");
    let msgs: Vec<&str> = v.iter().map(|d| d.message.as_str()).collect();
    assert_eq!(msgs.len(), 2, "{:#?}", r.diagnostics);
    assert!(msgs.contains(&"surface \"nope\" does not resolve to a concept in the bundle"));
    assert!(msgs.contains(&"renders must be a list of { path, body_sha256 } entries"));
    for d in &v {
        assert_eq!(d.severity, Severity::Warning);
        assert_eq!(d.file, "pub.md");
    }
    let r = run_with_pub(
        &publication("a", "renders:\n  - path: missing.md\n"),
        &default_cfg(),
    );
    let v = with_code(&r, "publication-orphan");
    let msgs: Vec<&str> = v.iter().map(|d| d.message.as_str()).collect();
    assert!(msgs.contains(&"surface \"a\" resolves to a Glossary concept, not a Surface"));
    assert!(msgs
        .contains(&"renders[0].path \"missing.md\" does not resolve to a concept in the bundle"));
    assert_eq!(msgs.len(), 2);
}

#[test]
fn publication_drift() {
    let a_text = &project_files()[3].1;
    let a_digest = file_body_digest(a_text);
    let r = run_with_pub(
        &publication(
            "surf",
            &format!(
                "renders:\n  - path: a.md\n  - path: b.md\n    body_sha256: {}\n",
                "f".repeat(64)
            ),
        ),
        &default_cfg(),
    );
    none_of(&r, "publication-orphan");
    lint(
        &r,
        "pub.md",
        "publication-drift",
        Severity::Warning,
        "Rendered page pub is stale against: a (never stamped), b (changed); re-render it, then run okfit sync --publication pub",
    );
    let r = run_with_pub(
        &publication(
            "surf",
            &format!("renders:\n  - path: a.md\n    body_sha256: {a_digest}\n"),
        ),
        &default_cfg(),
    );
    none_of(&r, "publication-drift");
    none_of(&r, "publication-orphan");
}

#[test]
fn validate_texts_fills_the_digests_checks_need() {
    // Parsed without digests, the renders' targets get theirs from the text:
    // the same report as a load that digests every concept.
    let a_digest = file_body_digest(&project_files()[3].1);
    let pub_text = publication(
        "surf",
        &format!(
            "renders:\n  - path: a.md\n    body_sha256: {a_digest}\n  - path: b.md\n    body_sha256: {}\n",
            "f".repeat(64)
        ),
    );
    let mut files = project_files();
    files.push(("pub.md", pub_text.clone()));
    files.push(("data/t.csv", "a,b\n".into()));
    let owned: Vec<(String, String)> = files
        .iter()
        .map(|(p, t)| (p.to_string(), t.clone()))
        .collect();
    let now = parse_now("2026-09-01T00:00:00Z").unwrap();
    let r = bundle::validate_texts(&owned, &default_cfg(), now);
    let refs: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
    let full = run_at(&refs, &default_cfg(), Some("2026-09-01T00:00:00Z"));
    assert_eq!(r.diagnostics, full.diagnostics);
    assert_eq!(r.summary, full.summary);
    let drift = single(&r, "publication-drift");
    assert!(drift.message.contains("b (changed)"), "{}", drift.message);
    assert!(!drift.message.contains("a (changed)"), "{}", drift.message);
}

#[test]
fn publication_lints_only_under_software_project() {
    let r = run_with_pub(&publication("nope", "renders:\n  - path: a.md\n"), &none());
    none_of(&r, "publication-orphan");
    none_of(&r, "publication-drift");
}

// ---------------------------------------------------------------- profile

#[test]
fn project_missing() {
    let r = run(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: Glossary\ntitle: A\ndescription: d\nstatus: stable\n---\n",
            ),
        ],
        &default_cfg(),
    );
    let d = single(&r, "project-missing");
    assert_diag(
        d,
        Tier::Profile,
        "",
        "project-missing",
        Severity::Error,
        "No Project concept in the bundle; software-project expects exactly one at the bundle root (project.md)",
    );
    assert_eq!(d.range, None);
    assert_eq!(r.summary.profile_errors, 1);
    assert_eq!(r.summary.lint_errors, 0);
    assert_eq!(r.exit_code(), 1);
    // No profile, no profile checks.
    let r = run(&[IDX, ("a.md", "---\ntype: X\n---\n")], &none());
    none_of(&r, "project-missing");
}

#[test]
fn project_multiple_and_not_at_root() {
    let p = "---\ntype: Project\ntitle: P\ndescription: d\nstatus: stable\n---\n";
    let r = run(
        &[
            IDX,
            ("project.md", p),
            ("sub/index.md", "# P\n\n* [P](project.md)\n"),
            ("sub/project.md", p),
        ],
        &default_cfg(),
    );
    let profile: Vec<&Diagnostic> = r
        .diagnostics
        .iter()
        .filter(|d| d.source == Tier::Profile)
        .collect();
    assert_eq!(profile.len(), 3, "{profile:#?}");
    assert_diag(
        profile[0],
        Tier::Profile,
        "project.md",
        "project-multiple",
        Severity::Error,
        "Project concept \"project.md\" is one of 2; software-project expects exactly one (others: sub/project.md)",
    );
    assert_diag(
        profile[1],
        Tier::Profile,
        "sub/project.md",
        "project-multiple",
        Severity::Error,
        "Project concept \"sub/project.md\" is one of 2; software-project expects exactly one (others: project.md)",
    );
    assert_diag(
        profile[2],
        Tier::Profile,
        "sub/project.md",
        "project-not-at-root",
        Severity::Error,
        "Project concept \"sub/project.md\" is below the bundle root; software-project expects it beside index.md",
    );
    assert!(profile.iter().all(|d| d.range.is_none()));
    assert_eq!(r.summary.profile_errors, 3);
}

#[test]
fn project_not_at_root_alone() {
    let r = run(
        &[
            IDX,
            ("sub/index.md", "# P\n\n* [P](p.md)\n"),
            (
                "sub/p.md",
                "---\ntype: Project\ntitle: P\ndescription: d\nstatus: stable\n---\n",
            ),
        ],
        &default_cfg(),
    );
    let d = single(&r, "project-not-at-root");
    assert_diag(
        d,
        Tier::Profile,
        "sub/p.md",
        "project-not-at-root",
        Severity::Error,
        "Project concept \"sub/p.md\" is below the bundle root; software-project expects it beside index.md",
    );
    none_of(&r, "project-missing");
    none_of(&r, "project-multiple");
}

// ---------------------------------------------------------------- [lint] overrides

#[test]
fn lint_override_error_changes_severity_and_exit_code() {
    let files = [IDX, ("a.md", "---\ntype: X\n---\n[x](nope.md)\n")];
    let r = run(&files, &none());
    assert_eq!(single(&r, "broken-links").severity, Severity::Warning);
    assert_eq!(r.exit_code(), 0);
    let c = cfg(&format!("{NONE}[lint]\nbroken_links = \"error\"\n"));
    let r = run(&files, &c);
    assert_eq!(single(&r, "broken-links").severity, Severity::Error);
    assert_eq!(r.summary.lint_errors, 1);
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn lint_override_off_drops_it() {
    let files = [IDX, ("a.md", "---\ntype: X\n---\n[x](nope.md)\n")];
    let c = cfg(&format!("{NONE}[lint]\nbroken_links = \"off\"\n"));
    let r = run(&files, &c);
    assert!(r.diagnostics.is_empty(), "{:#?}", r.diagnostics);
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn lint_override_info_and_warn() {
    let c = cfg(&format!(
        "{NONE}[lint]\nstale = \"warn\"\nmissing_index = \"info\"\nstatus_missing = \"error\"\n"
    ));
    let r = run_at(
        &[(
            "a.md",
            "---\ntype: X\nstale_after: 2020-01-01T00:00:00Z\n---\n",
        )],
        &c,
        Some("2021-01-01T00:00:00Z"),
    );
    assert_eq!(single(&r, "stale").severity, Severity::Warning);
    assert_eq!(single(&r, "missing-index").severity, Severity::Info);
    assert_eq!(single(&r, "status-missing").severity, Severity::Error);
    assert_eq!(r.exit_code(), 1);
}

#[test]
fn load_time_lints_follow_overrides_too() {
    let c = cfg(&format!(
        "{NONE}[lint]\nlog_frontmatter = \"error\"\nfamily_invalid = \"off\"\n"
    ));
    let r = run(
        &[
            IDX,
            ("log.md", "---\nx: 1\n---\n# Log\n"),
            ("a.md", "---\ntype: X\ntags: nope\n---\n"),
        ],
        &c,
    );
    assert_eq!(single(&r, "log-frontmatter").severity, Severity::Error);
    none_of(&r, "family-invalid");
    assert_eq!(r.exit_code(), 1);
}

// ---------------------------------------------------------------- sort order

fn is_sorted(diags: &[Diagnostic]) -> bool {
    diags.windows(2).all(|w| {
        let (a, b) = (&w[0], &w[1]);
        let key = |d: &Diagnostic| {
            (
                d.file.clone(),
                d.range.is_some(),
                d.range.map_or(0, |r| r.offset),
            )
        };
        let (ka, kb) = (key(a), key(b));
        ka < kb || (ka == kb && a.code <= b.code)
    })
}

#[test]
fn sort_order_file_then_rangeless_then_offset_then_code() {
    let c = cfg(&format!(
        "extra = 1\n{NONE}[concepts]\nrequired = [\"title\"]\n"
    ));
    let files = [
        ("a.md", "---\ntype: X\n---\n[x](nope.md) and [y](gone.md)\n"),
        ("b.md", "no frontmatter\n"),
        ("sub/c.md", "---\ntype: X\ntitle: C\n---\n"),
    ];
    let b = load(&files, &c, None);
    let extra = vec![
        Diagnostic {
            source: Tier::Lint,
            file: "a.md".into(),
            code: "walk-unreadable",
            severity: Severity::Warning,
            message: "range-less".into(),
            range: None,
        },
        Diagnostic {
            source: Tier::Lint,
            file: "a.md".into(),
            code: "actor-prefix-unknown",
            severity: Severity::Info,
            message: "same offset as the frontmatter block".into(),
            range: Some(Range {
                offset: 0,
                length: 1,
                line: 0,
                character: 0,
            }),
        },
    ];
    let r = validate(&b, &c, extra);
    let got: Vec<(&str, &str)> = r
        .diagnostics
        .iter()
        .map(|d| (d.file.as_str(), d.code))
        .collect();
    assert_eq!(
        got,
        vec![
            ("", "config-unknown-key"),
            ("a.md", "walk-unreadable"),
            ("a.md", "actor-prefix-unknown"),
            ("a.md", "required-key-missing"),
            ("a.md", "broken-links"),
            ("a.md", "broken-links"),
            ("b.md", "frontmatter-missing"),
            ("index.md", "missing-index"),
            ("sub/index.md", "missing-index"),
        ]
    );
    let links = with_code(&r, "broken-links");
    assert!(links[0].range.unwrap().offset < links[1].range.unwrap().offset);
    assert_eq!(
        links[0].message,
        "Link target \"nope.md\" does not exist in the bundle"
    );
    assert!(is_sorted(&r.diagnostics));
}

#[test]
fn sort_is_by_code_units_not_locale() {
    // Upper-case sorts before lower-case; "" first.
    let r = run(
        &[("b.md", "x"), ("B.md", "x"), ("a/z.md", "x"), ("a.md", "x")],
        &none(),
    );
    let files: Vec<&str> = r.diagnostics.iter().map(|d| d.file.as_str()).collect();
    assert_eq!(files, vec!["B.md", "a.md", "a/z.md", "b.md"]);
}

// ---------------------------------------------------------------- exit codes

#[test]
fn exit_code_conformance_beats_lint_errors() {
    let c = cfg(&format!("{NONE}[lint]\nbroken_links = \"error\"\n"));
    let r = run(
        &[
            IDX,
            ("a.md", "---\ntype: X\n---\n[x](nope.md)\n"),
            ("b.md", "---\n"),
        ],
        &c,
    );
    assert_eq!(r.summary.conformance_errors, 1);
    assert_eq!(r.summary.lint_errors, 1);
    assert_eq!(r.exit_code(), 2);
    // `okfit lint` drops the conformance tier.
    let l = r.lint_only();
    assert!(l.diagnostics.iter().all(|d| d.source != Tier::Conformance));
    assert_eq!(l.exit_code(), 1);
}

#[test]
fn exit_code_warnings_and_info_never_change_it() {
    let r = run_at(
        &[
            ("a.md", "---\ntype: X\nstale_after: 2020-01-01T00:00:00Z\ngenerated:\n  by: team:x\n---\n[x](nope.md)[^u]\n"),
            ("log.md", "---\nx: 1\n---\n"),
        ],
        &none(),
        Some("2026-01-01T00:00:00Z"),
    );
    assert!(r.summary.lint_warnings >= 4, "{:#?}", r.diagnostics);
    assert_eq!(r.summary.lint_info, 2);
    assert_eq!(r.summary.lint_errors, 0);
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn exit_code_lint_error_is_one_and_summary_counts() {
    let c = cfg(&format!("{NONE}[concepts]\nrequired = [\"title\"]\n"));
    let r = run(
        &[
            IDX,
            ("a.md", "---\ntype: X\n---\n"),
            ("b.md", "---\ntype: X\n---\n"),
        ],
        &c,
    );
    assert_eq!(r.summary.lint_errors, 2);
    assert_eq!(r.summary.conformance_errors, 0);
    assert_eq!(r.summary.concepts, 2);
    assert_eq!(r.exit_code(), 1);
}

// ---------------------------------------------------------------- link resolution (§5.2)

fn resolution_bundle() -> Bundle {
    load(
        &[
            ("index.md", "# C\n"),
            ("a.md", "---\ntype: X\n---\n# A\n"),
            ("sub/index.md", "# S\n"),
            ("sub/b.md", "---\ntype: X\n---\n"),
            ("sub/deeper/c.md", "---\ntype: X\n---\n"),
            ("references/x.md", "---\ntype: X\n---\n"),
            ("my notes.md", "---\ntype: X\n---\n"),
            ("broken.md", "no frontmatter"),
            ("img/logo.png", "png"),
            ("INDEX.md", "---\ntype: Upper\n---\n"),
        ],
        &none(),
        None,
    )
}

fn node(kind: NodeKind, id: &str) -> Resolution {
    Resolution::Node {
        kind,
        id: id.into(),
        fragment: None,
    }
}

#[test]
fn resolve_urls_are_not_links() {
    let b = resolution_bundle();
    for u in [
        "https://example.com/a.md",
        "http://x",
        "mailto:a@b.c",
        "ftp://host/file",
        "  https://padded.example  ",
    ] {
        assert_eq!(b.resolve("a.md", u, None), Resolution::Url, "{u}");
    }
    // A drive letter is not a scheme.
    assert_eq!(
        b.resolve("a.md", "C:/x.md", None),
        node(NodeKind::Missing, "C:/x.md")
    );
}

#[test]
fn resolve_self_links() {
    let b = resolution_bundle();
    assert_eq!(
        b.resolve("a.md", "#intro", None),
        Resolution::SelfLink(Some("intro".into()))
    );
    assert_eq!(b.resolve("a.md", "", None), Resolution::SelfLink(None));
    assert_eq!(b.resolve("a.md", "?q=1", None), Resolution::SelfLink(None));
}

#[test]
fn resolve_bundle_absolute() {
    let b = resolution_bundle();
    assert_eq!(
        b.resolve("sub/deeper/c.md", "/a.md", None),
        node(NodeKind::Concept, "a")
    );
    assert_eq!(
        b.resolve("sub/b.md", "/sub/b.md", None),
        node(NodeKind::Concept, "sub/b")
    );
    assert_eq!(
        b.resolve("sub/b.md", "/", None),
        node(NodeKind::File, "index.md")
    );
    assert_eq!(
        b.resolve("a.md", "/sub/", None),
        node(NodeKind::File, "sub/index.md")
    );
    assert_eq!(
        b.resolve("a.md", "/sub/b", None),
        node(NodeKind::Concept, "sub/b")
    );
    assert_eq!(
        b.resolve("sub/b.md", "/nope.md", None),
        node(NodeKind::Missing, "nope.md")
    );
    assert_eq!(
        b.resolve("sub/b.md", "/../x.md", None),
        Resolution::External
    );
}

#[test]
fn resolve_document_relative() {
    let b = resolution_bundle();
    assert_eq!(
        b.resolve("sub/deeper/c.md", "../b.md", None),
        node(NodeKind::Concept, "sub/b")
    );
    assert_eq!(
        b.resolve("sub/b.md", "deeper/c.md", None),
        node(NodeKind::Concept, "sub/deeper/c")
    );
    assert_eq!(
        b.resolve("sub/b.md", "./deeper/c.md", None),
        node(NodeKind::Concept, "sub/deeper/c")
    );
    assert_eq!(
        b.resolve("sub/b.md", "../a.md", None),
        node(NodeKind::Concept, "a")
    );
    assert_eq!(
        b.resolve("sub/b.md", "nope.md", None),
        node(NodeKind::Missing, "sub/nope.md")
    );
    assert_eq!(
        b.resolve("sub/b.md", "./nope.md", None),
        node(NodeKind::Missing, "sub/nope.md")
    );
}

#[test]
fn resolve_root_relative_fallback() {
    let b = resolution_bundle();
    assert_eq!(
        b.resolve("sub/deeper/c.md", "references/x.md", None),
        node(NodeKind::Concept, "references/x")
    );
    // A missing target containing `/` reports the root-relative candidate.
    assert_eq!(
        b.resolve("sub/b.md", "references/nope.md", None),
        node(NodeKind::Missing, "references/nope.md")
    );
    // `./` and `../` targets never fall back.
    assert_eq!(
        b.resolve("sub/b.md", "./references/x.md", None),
        node(NodeKind::Missing, "sub/references/x.md")
    );
}

#[test]
fn resolve_escaping_is_external() {
    let b = resolution_bundle();
    assert_eq!(b.resolve("a.md", "../x.md", None), Resolution::External);
    assert_eq!(
        b.resolve("sub/b.md", "../../packages/core", Some("resource")),
        Resolution::External
    );
    assert_eq!(
        b.resolve("sub/deeper/c.md", "../../../x.md", None),
        Resolution::External
    );
}

#[test]
fn resolve_extensionless_is_concept() {
    let b = resolution_bundle();
    assert_eq!(
        b.resolve("a.md", "sub/b", None),
        node(NodeKind::Concept, "sub/b")
    );
    assert_eq!(
        b.resolve("sub/b.md", "deeper/c", None),
        node(NodeKind::Concept, "sub/deeper/c")
    );
}

#[test]
fn resolve_trailing_slash_is_index() {
    let b = resolution_bundle();
    assert_eq!(
        b.resolve("a.md", "sub/", None),
        node(NodeKind::File, "sub/index.md")
    );
    assert_eq!(
        b.resolve("a.md", "nodir/", None),
        node(NodeKind::Missing, "nodir/index.md")
    );
}

#[test]
fn resolve_files_and_undecodable_md() {
    let b = resolution_bundle();
    assert_eq!(
        b.resolve("a.md", "img/logo.png", None),
        node(NodeKind::File, "img/logo.png")
    );
    assert_eq!(
        b.resolve("a.md", "broken.md", None),
        node(NodeKind::File, "broken.md")
    );
    assert_eq!(
        b.resolve("sub/b.md", "index.md", None),
        node(NodeKind::File, "sub/index.md")
    );
}

#[test]
fn resolve_sources_resource_descriptors() {
    let b = resolution_bundle();
    let f = Some("sources.resource");
    assert_eq!(
        b.resolve("a.md", "the orders table, 2024", f),
        Resolution::Descriptor
    );
    assert_eq!(b.resolve("a.md", "nope.md", f), Resolution::Descriptor);
    assert_eq!(b.resolve("a.md", "https://x.y", f), Resolution::Url);
    assert_eq!(
        b.resolve("a.md", "references/x.md", f),
        node(NodeKind::Concept, "references/x")
    );
    // Whitespace outside `sources` is a path like any other.
    assert_eq!(
        b.resolve("a.md", "my notes.md", Some("resource")),
        node(NodeKind::Concept, "my notes")
    );
}

#[test]
fn resolve_percent_encoded_names_query_and_fragment() {
    let b = resolution_bundle();
    assert_eq!(
        b.resolve("a.md", "my%20notes.md", None),
        node(NodeKind::Concept, "my notes")
    );
    assert_eq!(
        b.resolve("a.md", "a.md?x=1", None),
        node(NodeKind::Concept, "a")
    );
    assert_eq!(
        b.resolve("a.md", "a.md#Sec%20x", None),
        Resolution::Node {
            kind: NodeKind::Concept,
            id: "a".into(),
            fragment: Some("Sec x".into())
        }
    );
    // An invalid escape stays as written.
    assert_eq!(
        b.resolve("a.md", "x%ff.md", None),
        node(NodeKind::Missing, "x%ff.md")
    );
}

#[test]
fn resolved_links_feed_the_graph() {
    let b = load(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\nresource: img/logo.png\n---\n[b](b.md) [u](https://x.y) [s](#top) [m](nope.md)\n",
            ),
            ("b.md", "---\ntype: X\n---\n"),
            ("img/logo.png", "png"),
        ],
        &none(),
        None,
    );
    let g = b.graph();
    let kinds: Vec<(String, NodeKind)> = g.nodes.clone();
    assert_eq!(
        kinds,
        vec![
            ("a".to_string(), NodeKind::Concept),
            ("b".to_string(), NodeKind::Concept),
            ("img/logo.png".to_string(), NodeKind::File),
            ("nope.md".to_string(), NodeKind::Missing),
        ]
    );
    assert_eq!(g.edges.len(), 3);
    assert_eq!(g.edges[0].field, Some("resource"));
}

// ---------------------------------------------------------------- UTF-16 ranges

#[test]
fn utf16_ranges_after_emoji_and_accent() {
    let text = "---\ntype: X\n---\né😀 [x](nope.md)\n";
    let r = run(&[IDX, ("a.md", text)], &none());
    let d = single(&r, "broken-links");
    // é = 1 unit, 😀 = 2 units, space = 1: the link starts at character 4.
    assert_eq!(
        d.range,
        Some(Range {
            offset: 20,
            length: 12,
            line: 3,
            character: 4
        })
    );
}

#[test]
fn utf16_ranges_non_ascii_link_text_and_earlier_lines() {
    let text = "---\ntype: X\ntitle: Café ☕\n---\n𝄞\nx é [ü😀](nope.md)\n";
    let r = run(&[IDX, ("a.md", text)], &none());
    let d = single(&r, "broken-links");
    let prefix = "---\ntype: X\ntitle: Café ☕\n---\n𝄞\nx é ";
    let offset = prefix.encode_utf16().count() as u32;
    let length = "[ü😀](nope.md)".encode_utf16().count() as u32;
    assert_eq!(
        d.range,
        Some(Range {
            offset,
            length,
            line: 5,
            character: 4
        })
    );
}

#[test]
fn ranges_with_crlf_line_endings() {
    let text = "---\r\ntype: X\r\n---\r\n\r\n[x](nope.md)\r\n";
    let r = run(&[IDX, ("a.md", text)], &none());
    let d = single(&r, "broken-links");
    assert_eq!(
        d.range,
        Some(Range {
            offset: 21,
            length: 12,
            line: 4,
            character: 0
        })
    );
}

// ---------------------------------------------------------------- reserved names

#[test]
fn reserved_names_are_case_sensitive() {
    let b = load(
        &[
            ("INDEX.md", "---\ntype: X\n---\n"),
            ("Log.md", "---\ntype: X\n---\n"),
        ],
        &none(),
        None,
    );
    assert_eq!(b.doc("INDEX.md").unwrap().kind, Kind::Concept);
    assert_eq!(b.doc("Log.md").unwrap().kind, Kind::Concept);
    assert!(b.concept("INDEX").is_some());
    let r = validate(&b, &none(), vec![]);
    assert_eq!(r.summary.concepts, 2);
    // INDEX.md does not stand in for index.md.
    lint(
        &r,
        "index.md",
        "missing-index",
        Severity::Warning,
        "Directory \".\" has no index.md",
    );
    // …and without frontmatter it is a concept missing its frontmatter.
    let r = run(&[IDX, ("INDEX.md", "# Not reserved\n")], &none());
    conf(
        &r,
        "INDEX.md",
        "frontmatter-missing",
        "concept files must start with a --- frontmatter block",
    );
}

#[test]
fn reserved_names_in_any_directory() {
    let b = load(
        &[("sub/index.md", "# S\n"), ("sub/log.md", "# Log\n")],
        &none(),
        None,
    );
    assert_eq!(b.doc("sub/index.md").unwrap().kind, Kind::Index);
    assert_eq!(b.doc("sub/log.md").unwrap().kind, Kind::Log);
    assert_eq!(b.concepts().count(), 0);
}

// ---------------------------------------------------------------- body digest (§8.1)

#[test]
fn body_digest_is_the_text_after_the_closing_fence_line() {
    let text = "---\ntype: X\n---\n\n# Title\n\nBody text.\n";
    assert_eq!(file_body_digest(text), sha_hex("\n# Title\n\nBody text."));
    // Not the fence newline, not the stripped blank line, not the file.
    assert_ne!(file_body_digest(text), sha_hex("\n\n# Title\n\nBody text."));
    assert_ne!(file_body_digest(text), sha_hex("# Title\n\nBody text."));
    assert_ne!(file_body_digest(text), sha_hex(text));
}

#[test]
fn body_digest_normalises_line_endings_and_trailing_whitespace() {
    let want = sha_hex("\n# Title\n\nBody text.");
    for text in [
        "---\ntype: X\n---\n\n# Title\n\nBody text.",
        "---\ntype: X\n---\n\n# Title\n\nBody text.\n\n\n",
        "---\ntype: X\n---\n\n# Title\n\nBody text.  \t\n \n",
        "---\r\ntype: X\r\n---\r\n\r\n# Title\r\n\r\nBody text.\r\n",
        "---\rtype: X\r---\r\r# Title\r\rBody text.\r",
        "---\ntype: Y\ntitle: other frontmatter\n---\n\n# Title\r\n\nBody text.\r\n",
    ] {
        assert_eq!(file_body_digest(text), want, "{text:?}");
    }
}

#[test]
fn body_digest_keeps_leading_and_inner_whitespace() {
    assert_ne!(
        file_body_digest("---\n---\n  x\n"),
        file_body_digest("---\n---\nx\n")
    );
    assert_ne!(
        file_body_digest("---\n---\na  \nb\n"),
        file_body_digest("---\n---\na\nb\n")
    );
}

#[test]
fn body_digest_of_empty_body_is_sha256_of_empty_string() {
    let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
    assert_eq!(file_body_digest("---\ntype: X\n---\n"), empty);
    assert_eq!(file_body_digest("---\ntype: X\n---"), empty);
    assert_eq!(file_body_digest("---\ntype: X\n---\n\n\n"), empty);
}

#[test]
fn concept_body_digest_matches_file_body_digest() {
    let text = "---\ntype: X\n---\n\n# T\r\n\r\nBody.\n";
    let b = load(&[IDX, ("a.md", text)], &none(), None);
    let c = b.concept("a").unwrap().1;
    assert_eq!(c.body_digest_hex().unwrap(), file_body_digest(text));
    assert_eq!(c.body_digest_hex().unwrap(), sha_hex("\n# T\n\nBody."));
}

#[test]
fn body_digest_trailing_whitespace_is_the_js_regex_class() {
    // §8.1 strips trailing `\s+` as JavaScript defines it, so digests match
    // the ones okfit (TypeScript) records: U+FEFF and U+00A0 are
    // whitespace there, U+0085 is not.
    assert_eq!(file_body_digest("---\n---\nx\u{a0}\n"), sha_hex("x"));
    assert_eq!(
        file_body_digest("---\n---\nx\u{3000}\u{2028}"),
        sha_hex("x")
    );
    assert_eq!(file_body_digest("---\n---\nx\u{feff}\n"), sha_hex("x"));
    assert_eq!(file_body_digest("---\n---\nx\u{85}"), sha_hex("x\u{85}"));
}
