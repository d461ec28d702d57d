//! Concept documents: frontmatter + Markdown through the parser, the
//! read-model compiler, the bundle validator and the query model.
//!
//! Input: one flag byte, then the document text; with flag bit 0 the text
//! is two documents separated by the first 0xFF byte.
//!
//! flags: bit 0 two documents; bit 1 the fixture okfit.toml instead of the
//! defaults; bit 2 parse the raw bytes (else their lossy UTF-8);
//! bit 3 an asset beside the documents; bits 4-6 the first path; bit 7
//! skip the body in the first parse (the query model's way).
#![no_main]

use libfuzzer_sys::fuzz_target;
use okfit_core::bundle::{self, Bundle};
use okfit_core::config::{self, Config};
use okfit_core::doc::{self, ParseOptions};
use okfit_core::kb::compile::{self, Compiled};
use okfit_core::kb::model::Model;
use okfit_core::kb::slice::SliceOptions;
use okfit_core::report::{self, Meta};
use okfit_core::time::Instant;
use okfit_core::{frontmatter, query};
use std::sync::{Arc, OnceLock};

const PATHS: [&str; 8] = [
    "concept.md",
    "metrics/revenue.md",
    "orders.md",
    "index.md",
    "log.md",
    "a/b/c.md",
    "README.md",
    "notes/ok.md",
];

/// 2026-03-01T00:00:00Z: before the fixture's stale dates.
const NOW: Instant = Instant(1_772_323_200_000);

fn configs() -> &'static (Config, Config) {
    static C: OnceLock<(Config, Config)> = OnceLock::new();
    C.get_or_init(|| {
        (
            Config::default(),
            config::resolve(Some(okfit_fuzz::FIXTURE_CONFIG)).expect("the fixture config"),
        )
    })
}

fn meta(cfg: &Config) -> Meta {
    Meta {
        okfit_version: "0.0.0".into(),
        producer: "fuzz".into(),
        distribution: None,
        okf_version: cfg.okf_version.clone(),
        root: String::new(),
        profile: cfg.profile.map(str::to_string),
    }
}

/// Everything that reads one document alone.
fn single(path: &str, raw: &[u8], text: &str, cfg: &Config) -> Compiled {
    let _ = frontmatter::split(text);
    let start = compile::body_start(text);
    assert!(
        text.is_char_boundary(start),
        "body_start {start} is inside a character"
    );
    let _ = doc::frontmatter_of(text);
    let _ = doc::body_links(text);
    let _ = doc::file_digest(text);
    let _ = doc::file_body_digest(text);
    let full = ParseOptions {
        config: cfg,
        now: Some(NOW),
        keep_frontmatter: true,
        digests: true,
        diagnostics: true,
        skip_body: false,
    };
    let d = doc::parse(path, raw, &full);
    if let Some(c) = &d.concept {
        let _ = c.status_or_stable();
        let _ = c.trust_tier();
        let _ = c.staleness(NOW);
        let _ = c.body_digest_hex();
        let _ = query::summary(&d, c);
    }
    let c = compile::compile(path, text);
    let encoded = c.encode();
    assert!(
        Compiled::decode(&encoded).is_some(),
        "Compiled::decode cannot read what encode wrote: {encoded:?}"
    );
    c
}

fuzz_target!(|data: &[u8]| {
    let Some((&flags, rest)) = data.split_first() else {
        return;
    };
    let (cfg_default, cfg_fixture) = configs();
    let cfg = if flags & 2 != 0 {
        cfg_fixture
    } else {
        cfg_default
    };
    let raw_mode = flags & 4 != 0;
    let two = flags & 1 != 0;
    let (first, second) = match (two, rest.iter().position(|&b| b == 0xFF)) {
        (true, Some(i)) => (&rest[..i], Some(&rest[i + 1..])),
        _ => (rest, None),
    };
    let p1 = PATHS[((flags >> 4) & 7) as usize];
    let p2 = PATHS[(((flags >> 4) & 7) as usize + 1 + (first.len() % 7)) % PATHS.len()];
    let mut files: Vec<(&str, &[u8])> = vec![(p1, first)];
    if let Some(s) = second {
        files.push((p2, s));
    }

    // Parse each document (raw bytes or their lossy UTF-8), compile it.
    let texts: Vec<(&str, String)> = files
        .iter()
        .map(|(p, b)| (*p, okfit_fuzz::lossy(b).into_owned()))
        .collect();
    let mut compiled = vec![];
    for ((p, b), (_, t)) in files.iter().zip(&texts) {
        let raw: &[u8] = if raw_mode { b } else { t.as_bytes() };
        compiled.push(single(p, raw, t, cfg));
    }

    // The bundle: validation and queries, as `okfit validate` and the wasm
    // `validate` run them.
    let popts = ParseOptions {
        config: cfg,
        now: Some(NOW),
        keep_frontmatter: false,
        digests: true,
        diagnostics: true,
        skip_body: flags & 0x80 != 0,
    };
    let docs: Vec<doc::Document> = files
        .iter()
        .zip(&texts)
        .map(|((p, b), (_, t))| doc::parse(p, if raw_mode { b } else { t.as_bytes() }, &popts))
        .collect();
    let assets = if flags & 8 != 0 {
        vec!["schema.sql".to_string(), "metrics/data.csv".to_string()]
    } else {
        vec![]
    };
    let mut b = Bundle::from_parts(docs, assets);
    for path in b.bodies_pending() {
        if let Some((_, t)) = texts.iter().find(|(p, _)| *p == path) {
            let (links, slugs) = doc::body_links(t);
            b.fill_body(&path, links, slugs);
        }
    }
    for path in b.digests_needed() {
        if let Some((_, t)) = texts.iter().find(|(p, _)| *p == path) {
            b.set_digest(&path, doc::file_digest(t));
        }
    }
    let r = bundle::validate(&b, cfg, vec![]);
    let _ = r.exit_code();
    let m = meta(cfg);
    let _ = report::to_value(&r, &m);
    let _ = report::sarif(&r, &m);
    let _ = report::human_summary(&r, "okf");
    for d in &r.diagnostics {
        let _ = report::human_line(d);
    }
    let _ = r.lint_only();
    let _ = b.graph();
    let _ = query::list(&b, &query::ListFilter::default(), 0, 50);
    let _ = query::stale(&b, NOW);
    let ids: Vec<String> = b.concepts().map(|(_, c)| c.id.clone()).collect();
    for id in &ids {
        let _ = b.find_concept(id);
        let _ = query::neighbors(&b, id);
        if let Some((d, _)) = b.concept(id) {
            let _ = query::links(&b, d);
        }
    }

    // The read model: upsert, settle, manifest, get (whole, by section,
    // by find) and a write's diagnostics.
    let mut model = Model::new("fuzz");
    for ((p, t), c) in texts.iter().zip(compiled) {
        let hash = doc::hex(&doc::file_digest(t));
        model.upsert("docs", p, &hash, c);
    }
    model.settle();
    let _ = model.manifest(None, NOW);
    let _ = model.manifest(Some("docs"), NOW);
    let mut body = |e: &okfit_core::kb::model::Entry| -> Option<Arc<str>> {
        texts
            .iter()
            .find(|(p, _)| *p == e.path)
            .map(|(_, t)| Arc::from(t.as_str()))
    };
    let slots: Vec<u32> = model.slots().collect();
    let mut ids = vec![];
    let mut sections = vec![];
    for s in &slots {
        let _ = model.search_fields(*s);
        let _ = model.links_of(*s);
        if let Some(e) = model.entry(*s) {
            let _ = model.status_at(e, NOW);
            ids.push(e.id.clone());
            sections.extend(e.compiled.sections.iter().map(|s| s.name.clone()));
        }
    }
    let find = texts[0].1.split_whitespace().nth(3).map(str::to_string);
    let _ = model.get_text(&ids, None, &SliceOptions::default(), &mut body);
    let _ = model.get_text(
        &ids,
        None,
        &SliceOptions {
            offset: Some(rest.len() as u64 / 3),
            limit: Some(17),
            find: find.clone(),
        },
        &mut body,
    );
    for sec in sections.iter().take(4) {
        let _ = model.get_text(&ids, Some(sec), &SliceOptions::default(), &mut body);
    }
    for (p, t) in &texts {
        let _ = model.file_diagnostics("docs", p, t, cfg, NOW);
    }
    for (p, _) in &texts {
        model.remove("docs", p);
    }
    model.settle();
    let _ = model.manifest(None, NOW);
});
