//! The edge cases of okf-spec.md §3.2 ("Edge-case behaviour") and the
//! points SPEC §2 settles, one test each.

use okfit_core::bundle::{validate, Bundle, Report};
use okfit_core::config::Config;
use okfit_core::diag::{Severity, Tier};
use okfit_core::doc::Kind;
use okfit_core::time::parse_now;
use serde_json::Value;
use std::sync::mpsc;
use std::time::Duration;

mod common;
use common::{none, none_of, single};

fn load(files: &[(&str, &str)], now: Option<&str>) -> Bundle {
    common::load_text(files, &none(), now)
}

fn load_bytes(files: &[(&str, &[u8])], cfg: &Config, now: Option<&str>) -> Bundle {
    common::load_bytes(files, cfg, now)
}

fn run(files: &[(&str, &str)]) -> Report {
    validate(&load(files, None), &none(), vec![])
}

fn run_at(files: &[(&str, &str)], now: &str) -> Report {
    validate(&load(files, Some(now)), &none(), vec![])
}

fn assert_clean(r: &Report) {
    assert!(r.diagnostics.is_empty(), "{:#?}", r.diagnostics);
    assert_eq!(r.exit_code(), 0);
}

fn frontmatter(b: &Bundle, id: &str) -> serde_json::Map<String, Value> {
    b.concept(id)
        .unwrap_or_else(|| panic!("{id} is not a concept"))
        .1
        .frontmatter
        .clone()
        .unwrap()
}

const IDX: (&str, &str) = ("index.md", "# Concepts\n\n* [A](a.md)\n");

#[test]
fn utf8_bom_before_opening_fence_is_accepted() {
    let text = "\u{feff}---\ntype: Metric\ntitle: Revenue\n---\n# Revenue\n";
    let b = load(&[IDX, ("a.md", text)], None);
    let (_, c) = b.concept("a").expect("a BOM file decodes as a concept");
    assert_eq!(c.type_name, "Metric");
    assert_eq!(c.title, "Revenue");
    assert_clean(&validate(&b, &none(), vec![]));
}

#[test]
fn utf8_bom_with_crlf_is_accepted() {
    let text = "\u{feff}---\r\ntype: Metric\r\n---\r\n# Revenue\r\n";
    let b = load(&[IDX, ("a.md", text)], None);
    assert_eq!(b.concept("a").unwrap().1.type_name, "Metric");
    assert_clean(&validate(&b, &none(), vec![]));
}

#[test]
fn utf8_bom_on_reserved_files_is_accepted() {
    let r = run(&[
        (
            "index.md",
            "\u{feff}---\nokf_version: \"0.2\"\n---\n# C\n\n* [A](a.md)\n",
        ),
        ("log.md", "\u{feff}# Log\n\n## 2026-01-01\n\n* x\n"),
        ("a.md", "---\ntype: X\n---\n"),
    ]);
    assert_clean(&r);
}

#[test]
fn crlf_everywhere_is_accepted() {
    let files = [
        (
            "index.md",
            "---\r\nokf_version: \"0.2\"\r\n---\r\n# Concepts\r\n\r\n* [A](a.md) - The A.\r\n",
        ),
        (
            "a.md",
            "---\r\ntype: Metric\r\ntitle: A\r\ntags:\r\n  - x\r\n  - y\r\nstale_after: 2030-01-01T00:00:00Z\r\n---\r\n# A\r\n\r\nSee [sec](#a) and [b](sub/b.md#b).[^n]\r\n\r\n[^n]: note\r\n",
        ),
        ("sub/index.md", "# Things\r\n\r\n* [B](b.md)\r\n"),
        ("sub/b.md", "---\r\ntype: Metric\r\n---\r\n# B\r\n"),
        (
            "log.md",
            "# Log\r\n\r\n## 2026-01-01\r\n\r\n* Started.\r\n* Went on.\r\n",
        ),
    ];
    let b = load(&files, Some("2026-09-01T00:00:00Z"));
    let (_, c) = b.concept("a").unwrap();
    assert_eq!(c.title, "A");
    assert_eq!(c.tags, vec!["x", "y"]);
    assert_clean(&validate(&b, &none(), vec![]));
}

#[test]
fn uppercase_index_md_is_a_concept_not_reserved() {
    let b = load(
        &[
            IDX,
            ("a.md", "---\ntype: X\n---\n"),
            ("INDEX.md", "---\ntype: Overview\ntitle: Upper\n---\n# Hi\n"),
        ],
        None,
    );
    let d = b.doc("INDEX.md").unwrap();
    assert_eq!(d.kind, Kind::Concept);
    assert_eq!(b.concept("INDEX").unwrap().1.type_name, "Overview");
    let r = validate(&b, &none(), vec![]);
    assert_eq!(r.summary.concepts, 2);
    // Frontmatter in INDEX.md is not an index-frontmatter error.
    none_of(&r, "index-frontmatter");
    assert_clean(&r);
}

#[test]
fn log_md_with_frontmatter_is_a_warning_not_an_error() {
    let r = run(&[
        IDX,
        ("a.md", "---\ntype: X\n---\n"),
        (
            "log.md",
            "---\ntitle: Changes\n---\n# Log\n\n## 2026-01-01\n\n* Started.\n",
        ),
    ]);
    assert_eq!(r.diagnostics.len(), 1, "{:#?}", r.diagnostics);
    let d = &r.diagnostics[0];
    assert_eq!(d.code, "log-frontmatter");
    assert_eq!(d.source, Tier::Lint);
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(
        d.message,
        "log.md carries frontmatter; the spec defines none"
    );
    assert_eq!(r.summary.conformance_errors, 0);
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn log_md_frontmatter_is_never_decoded() {
    // Even unparseable YAML in log.md is only the warning.
    let r = run(&[
        IDX,
        ("a.md", "---\ntype: X\n---\n"),
        ("log.md", "---\n: : [ {\n---\n# Log\n"),
    ]);
    single(&r, "log-frontmatter");
    none_of(&r, "frontmatter-unparseable");
    assert_eq!(r.exit_code(), 0);
}

#[test]
fn date_only_stale_after_is_a_warning_read_as_midnight_utc() {
    let files = [
        IDX,
        ("a.md", "---\ntype: X\nstale_after: 2026-12-31\n---\n"),
    ];
    let b = load(&files, None);
    let (_, c) = b.concept("a").unwrap();
    assert_eq!(
        c.stale_after,
        Some(parse_now("2026-12-31T00:00:00Z").unwrap())
    );
    let r = validate(&b, &none(), vec![]);
    let d = single(&r, "timestamp-date-only");
    assert_eq!(d.severity, Severity::Warning);
    assert_eq!(
        d.message,
        "stale_after: \"2026-12-31\" is a date without a time or offset; read as 2026-12-31T00:00:00Z"
    );
    assert_eq!(r.exit_code(), 0);
    // Stale from that day's 00:00Z on (an instant compare, inclusive).
    let r = run_at(&files, "2026-12-31T00:00:00Z");
    assert_eq!(
        single(&r, "stale").message,
        "Concept is stale since 2026-12-31T00:00:00.000Z"
    );
    let r = run_at(&files, "2026-12-30T23:59:59.999Z");
    none_of(&r, "stale");
    // A later instant in a western offset is still that instant.
    let r = run_at(&files, "2026-12-30T19:00:00-05:00");
    single(&r, "stale");
}

#[test]
fn date_only_values_in_other_timestamp_fields() {
    let r = run(&[
        IDX,
        (
            "a.md",
            "---\ntype: X\ngenerated:\n  by: human:ann\n  at: 2026-01-02\n---\n",
        ),
    ]);
    let d = single(&r, "timestamp-date-only");
    assert_eq!(
        d.message,
        "generated.at: \"2026-01-02\" is a date without a time or offset; read as 2026-01-02T00:00:00Z"
    );
}

fn alias_bomb() -> String {
    let mut s = String::from("---\ntype: X\na0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n");
    for i in 1..10 {
        let p = i - 1;
        let refs = vec![format!("*a{p}"); 9].join(",");
        s.push_str(&format!("a{i}: &a{i} [{refs}]\n"));
    }
    s.push_str("---\n# Boom\n");
    s
}

#[test]
fn alias_bomb_is_a_diagnostic_not_a_hang() {
    let text = alias_bomb();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let r = run(&[IDX, ("a.md", &text)]);
        let _ = tx.send(r);
    });
    // A hang guard, not a timing assertion.
    let r = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("an alias bomb must not hang the validator");
    let d = single(&r, "frontmatter-unparseable");
    assert_eq!(d.source, Tier::Conformance);
    assert_eq!(d.file, "a.md");
    assert!(
        d.message.contains("budget"),
        "the message should say the YAML exceeded its budget: {}",
        d.message
    );
    assert_eq!(r.summary.concepts, 0);
    assert_eq!(r.exit_code(), 2);
}

#[test]
fn small_anchors_and_aliases_are_accepted() {
    let b = load(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\nbase: &who human:ann\ngenerated:\n  by: *who\n  at: 2026-01-01T00:00:00Z\n---\n",
            ),
        ],
        None,
    );
    let (_, c) = b.concept("a").unwrap();
    assert_eq!(c.generated.as_ref().unwrap().by, "human:ann");
    assert_clean(&validate(&b, &none(), vec![]));
}

#[test]
fn duplicate_keys_are_unparseable() {
    let r = run(&[IDX, ("a.md", "---\ntype: X\ntitle: A\ntype: Y\n---\n")]);
    let d = single(&r, "frontmatter-unparseable");
    assert_eq!(d.source, Tier::Conformance);
    assert_eq!(d.severity, Severity::Error);
    assert!(d.message.starts_with("invalid YAML: "), "{}", d.message);
    assert!(
        d.message.to_lowercase().contains("duplicate"),
        "{}",
        d.message
    );
    assert!(d.range.is_some());
    assert_eq!(r.summary.concepts, 0);
}

#[test]
fn duplicate_keys_in_nested_mappings_are_unparseable() {
    let r = run(&[
        IDX,
        (
            "a.md",
            "---\ntype: X\ngenerated:\n  by: human:a\n  by: human:b\n---\n",
        ),
    ]);
    single(&r, "frontmatter-unparseable");
}

#[test]
fn invalid_utf8_is_unparseable() {
    let bytes: &[u8] = b"---\ntype: X\n---\nbad \xff\xfe byte\n";
    let b = load_bytes(
        &[("index.md", IDX.1.as_bytes()), ("a.md", bytes)],
        &none(),
        None,
    );
    assert_eq!(b.doc("a.md").unwrap().kind, Kind::Undecodable);
    let r = validate(&b, &none(), vec![]);
    let d = single(&r, "frontmatter-unparseable");
    assert_eq!(d.source, Tier::Conformance);
    assert_eq!(d.file, "a.md");
    assert!(
        d.message.starts_with("file is not valid UTF-8"),
        "{}",
        d.message
    );
    assert_eq!(r.summary.concepts, 0);
    assert_eq!(r.exit_code(), 2);
}

#[test]
fn invalid_utf8_in_reserved_files_is_unparseable() {
    for name in ["index.md", "log.md", "sub/index.md"] {
        let b = load_bytes(&[(name, b"# T\n\xc3\x28\n")], &none(), None);
        let r = validate(&b, &none(), vec![]);
        let d = single(&r, "frontmatter-unparseable");
        assert_eq!(d.file, name);
        assert!(d.message.starts_with("file is not valid UTF-8"));
    }
}

#[test]
fn empty_file_is_frontmatter_missing() {
    let r = run(&[IDX, ("a.md", "")]);
    let d = single(&r, "frontmatter-missing");
    assert_eq!(d.source, Tier::Conformance);
    assert_eq!(
        d.message,
        "concept files must start with a --- frontmatter block"
    );
    assert_eq!(d.range, None);
    assert_eq!(r.exit_code(), 2);
}

#[test]
fn empty_reserved_files_are_fine() {
    let r = run(&[("index.md", ""), ("log.md", ""), ("sub/index.md", "")]);
    assert_clean(&r);
}

#[test]
fn unclosed_frontmatter_range_is_the_opening_fence() {
    let r = run(&[
        IDX,
        ("a.md", "---\ntype: X\ntitle: never closed\n\n# Body\n"),
    ]);
    let d = single(&r, "frontmatter-unclosed");
    assert_eq!(d.source, Tier::Conformance);
    assert_eq!(d.message, "frontmatter opens with --- but never closes");
    // The range covers the opening fence: offset, length, line, column.
    let at = d.range.expect("a range");
    assert_eq!([at.offset, at.length, at.line, at.character], [0, 3, 0, 0]);
}

#[test]
fn only_an_opening_fence_is_unclosed() {
    let r = run(&[IDX, ("a.md", "---")]);
    single(&r, "frontmatter-unclosed");
    let r = run(&[IDX, ("a.md", "---\n")]);
    single(&r, "frontmatter-unclosed");
}

#[test]
fn type_empty_string_is_type_missing() {
    let r = run(&[IDX, ("a.md", "---\ntype: \"\"\n---\n")]);
    let d = single(&r, "type-missing");
    assert_eq!(d.message, "`type` must not be empty");
    assert_eq!(d.source, Tier::Conformance);
    assert_eq!(d.range, None);
    assert_eq!(r.summary.concepts, 0);
}

#[test]
fn type_list_is_type_missing() {
    let r = run(&[IDX, ("a.md", "---\ntype: [a, b]\n---\n")]);
    let d = single(&r, "type-missing");
    assert_eq!(d.message, "`type` must be a non-empty string");
    assert_eq!(d.range, None);
    assert_eq!(r.summary.concepts, 0);
}

#[test]
fn non_mapping_frontmatter_is_type_missing() {
    for yaml in ["just a string", "- a\n- b", "42"] {
        let r = run(&[IDX, ("a.md", &format!("---\n{yaml}\n---\n"))]);
        let d = single(&r, "type-missing");
        assert_eq!(d.message, "frontmatter is not a mapping", "{yaml}");
        assert_eq!(d.range, None);
    }
}

#[test]
fn unquoted_okf_version_in_root_index_is_index_frontmatter_error() {
    let r = run(&[
        (
            "index.md",
            "---\nokf_version: 0.2\n---\n# Concepts\n\n* [A](a.md)\n",
        ),
        ("a.md", "---\ntype: X\n---\n"),
    ]);
    let d = single(&r, "index-frontmatter");
    assert_eq!(d.source, Tier::Conformance);
    assert_eq!(d.file, "index.md");
    assert_eq!(
        d.message,
        "root index.md frontmatter may only carry a string \"okf_version\""
    );
    assert_eq!(r.exit_code(), 2);
    // Quoted, it is fine.
    let r = run(&[
        (
            "index.md",
            "---\nokf_version: \"0.2\"\n---\n# Concepts\n\n* [A](a.md)\n",
        ),
        ("a.md", "---\ntype: X\n---\n"),
    ]);
    assert_clean(&r);
}

#[test]
fn non_root_index_with_frontmatter_is_an_error() {
    let r = run(&[
        IDX,
        ("a.md", "---\ntype: X\n---\n"),
        ("sub/index.md", "---\nokf_version: \"0.2\"\n---\n"),
    ]);
    let d = single(&r, "index-frontmatter");
    assert_eq!(d.file, "sub/index.md");
    assert_eq!(
        d.message,
        "index.md below the bundle root must not carry frontmatter"
    );
}

#[test]
fn yaml_1_2_booleans_yes_stays_a_string() {
    let b = load(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\nflag: yes\nother: no\nswitch: on\nreal: true\nnah: false\n---\n",
            ),
        ],
        None,
    );
    let fm = frontmatter(&b, "a");
    assert_eq!(fm["flag"], "yes");
    assert_eq!(fm["other"], "no");
    assert_eq!(fm["switch"], "on");
    assert_eq!(fm["real"], Value::Bool(true));
    assert_eq!(fm["nah"], Value::Bool(false));
}

#[test]
fn yaml_1_2_core_schema_scalars() {
    let b = load(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\nnull1: ~\nnull2: null\nint: 42\nfloat: 0.5\noctal_like: 0o17\nsexagesimal: 1:30\nversion: 0.2\n---\n",
            ),
        ],
        None,
    );
    let fm = frontmatter(&b, "a");
    assert_eq!(fm["null1"], Value::Null);
    assert_eq!(fm["null2"], Value::Null);
    assert_eq!(fm["int"], 42);
    assert_eq!(fm["float"], 0.5);
    // YAML 1.1 sexagesimal numbers do not exist in 1.2.
    assert_eq!(fm["sexagesimal"], "1:30");
    assert!(fm["version"].is_number());
}

#[test]
fn timestamps_stay_strings_in_frontmatter() {
    let b = load(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\nstale_after: 2026-12-31T00:00:00Z\nwhen: 2026-01-01\nlocal: 2026-01-01 10:00:00\nverified:\n  by: human:ann\n  at: 2026-01-01T12:30:00+02:00\n---\n",
            ),
        ],
        None,
    );
    let fm = frontmatter(&b, "a");
    assert_eq!(fm["stale_after"], "2026-12-31T00:00:00Z");
    assert_eq!(fm["when"], "2026-01-01");
    assert_eq!(fm["local"], "2026-01-01 10:00:00");
    assert_eq!(fm["verified"]["at"], "2026-01-01T12:30:00+02:00");
    // …and the typed model still reads them as instants.
    let (_, c) = b.concept("a").unwrap();
    assert_eq!(
        c.stale_after,
        Some(parse_now("2026-12-31T00:00:00Z").unwrap())
    );
    assert_eq!(
        c.verified[0].at,
        Some(parse_now("2026-01-01T10:30:00Z").unwrap())
    );
}

#[test]
fn unknown_frontmatter_keys_are_preserved() {
    let b = load(
        &[
            IDX,
            (
                "a.md",
                "---\ntype: X\nx-owner: team-a\nnested:\n  deep: [1, 2]\n---\n",
            ),
        ],
        None,
    );
    let fm = frontmatter(&b, "a");
    assert_eq!(fm["x-owner"], "team-a");
    assert_eq!(fm["nested"]["deep"][1], 2);
}

#[test]
fn case_variant_file_names_are_two_concepts() {
    let r = run(&[
        ("index.md", "# C\n\n* [D](Dup.md)\n* [d](dup.md)\n"),
        ("Dup.md", "---\ntype: X\n---\n"),
        ("dup.md", "---\ntype: X\n---\n"),
    ]);
    assert_eq!(r.summary.concepts, 2);
    assert_clean(&r);
}

#[test]
fn link_to_directory_with_index_resolves() {
    let r = run(&[
        IDX,
        ("a.md", "---\ntype: X\n---\n[sub](sub/) [missing](nodir/)\n"),
        ("sub/index.md", "# S\n"),
    ]);
    let d = single(&r, "broken-links");
    assert_eq!(
        d.message,
        "Link target \"nodir/\" does not exist in the bundle"
    );
}

#[test]
fn verified_without_at_is_family_invalid() {
    let r = run(&[
        IDX,
        ("a.md", "---\ntype: X\nverified: [{by: bot/1}]\n---\n"),
    ]);
    let d = single(&r, "family-invalid");
    assert_eq!(d.message, "verified[0].at: is required");
}

#[test]
fn file_name_with_non_ascii_and_spaces_is_a_concept() {
    let b = load(
        &[
            ("index.md", "# C\n\n* [Café](caf%C3%A9%20notes.md)\n"),
            ("café notes.md", "---\ntype: X\n---\n"),
        ],
        None,
    );
    assert!(b.concept("café notes").is_some());
    assert_clean(&validate(&b, &none(), vec![]));
}

#[test]
fn frontmatter_fence_must_be_on_the_first_line() {
    let r = run(&[IDX, ("a.md", "\n---\ntype: X\n---\n")]);
    single(&r, "frontmatter-missing");
    let r = run(&[IDX, ("a.md", "# Title\n---\ntype: X\n---\n")]);
    single(&r, "frontmatter-missing");
}

#[test]
fn a_thematic_break_in_the_body_is_not_a_fence_problem() {
    let b = load(
        &[IDX, ("a.md", "---\ntype: X\n---\n# A\n\n---\n\nMore.\n")],
        None,
    );
    assert!(b.concept("a").is_some());
    assert_clean(&validate(&b, &none(), vec![]));
}

#[test]
fn empty_frontmatter_block_is_type_missing() {
    let r = run(&[IDX, ("a.md", "---\n---\n# A\n")]);
    let d = single(&r, "type-missing");
    assert_eq!(d.source, Tier::Conformance);
    assert_eq!(r.summary.concepts, 0);
}

#[test]
fn a_concept_retimed_to_another_now_has_the_findings_of_a_parse_at_it() {
    use okfit_core::doc::{parse, retime, ParseOptions};
    let cfg = none();
    let texts = [
        "---\ntype: X\ntitle: A\nstale_after: 2026-06-01T00:00:00Z\n---\n# A\n",
        "---\r\ntype: X\r\ntitle: Ä\r\nstale_after: \"2026-06-01T00:00:00Z\"\r\n---\r\n# Ä\r\n",
        "---\ntype: X\ntitle: é\nstale_after: 2026-06-01\nstatus: draft\n---\n# é [x](nowhere.md)\n",
        "---\ntype: X\nstale_after: not a time\n---\n",
        "---\ntype: X\ntitle: No date\n---\n",
        "---\ntype: [\n---\n",
        "# Not a concept\n",
    ];
    let nows = [
        None,
        Some("2026-01-01T00:00:00Z"),
        Some("2026-06-01T00:00:00Z"),
        Some("2027-01-01T00:00:00Z"),
    ];
    let at = |now: &Option<&str>| now.map(|n| parse_now(n).unwrap());
    for text in texts {
        for from in &nows {
            for to in &nows {
                let mut d = parse(
                    "a.md",
                    text.as_bytes(),
                    &ParseOptions::validation(&cfg, at(from)),
                );
                retime(&mut d, &cfg, at(to));
                let fresh = parse(
                    "a.md",
                    text.as_bytes(),
                    &ParseOptions::validation(&cfg, at(to)),
                );
                let (mut got, mut want) = (d.diagnostics.clone(), fresh.diagnostics.clone());
                okfit_core::diag::sort(&mut got);
                okfit_core::diag::sort(&mut want);
                assert_eq!(got, want, "{text:?} from {from:?} to {to:?}");
                assert_eq!(d.concept, fresh.concept, "{text:?}");
            }
        }
    }
}
