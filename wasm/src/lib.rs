//! okfit in WebAssembly: validate unsaved documents, read one concept,
//! build a manifest — the same core, rules and JSON envelope as the CLI,
//! with no server. Inputs and outputs are plain JS values (through JSON);
//! bad input throws an `Error` with a clear message.

use okfit_core::bundle::{self, Bundle};
use okfit_core::config;
use okfit_core::doc::{self, LinkSource, ParseOptions};
use okfit_core::kb::{compile, model::Model};
use okfit_core::report::{self, Meta};
use okfit_core::time::{self, Instant};
use serde_json::{json, Value};
use wasm_bindgen::prelude::*;

fn to_js(v: &Value) -> Result<JsValue, JsError> {
    js_sys::JSON::parse(&v.to_string()).map_err(|_| JsError::new("okfit: cannot build the result"))
}

fn from_js(v: &JsValue, what: &str) -> Result<Value, JsError> {
    if v.is_undefined() || v.is_null() {
        return Ok(Value::Null);
    }
    let s = js_sys::JSON::stringify(v)
        .map_err(|_| JsError::new(&format!("{what} must be a plain object")))?;
    let s: String = s.into();
    serde_json::from_str(&s).map_err(|e| JsError::new(&format!("{what}: {e}")))
}

/// `documents: [{path, text}]` from a JS value.
fn documents(v: &Value) -> Result<Vec<(String, String)>, JsError> {
    let Some(arr) = v.as_array() else {
        return Err(JsError::new(
            "documents must be an array of {path, text} objects",
        ));
    };
    let mut out = Vec::with_capacity(arr.len());
    for (i, d) in arr.iter().enumerate() {
        let (Some(p), Some(t)) = (
            d.get("path").and_then(Value::as_str),
            d.get("text").and_then(Value::as_str),
        ) else {
            return Err(JsError::new(&format!(
                "documents[{i}] must be {{path: string, text: string}}"
            )));
        };
        let norm = okfit_core::paths::normalize(p.trim_start_matches("./")).ok_or_else(|| {
            JsError::new(&format!(
                "documents[{i}].path \"{p}\" must be a relative path inside the bundle"
            ))
        })?;
        out.push((norm, t.to_string()));
    }
    Ok(out)
}

fn now_of(v: &Value) -> Result<Instant, JsError> {
    match v.get("now").and_then(Value::as_str) {
        Some(s) => time::parse_now(s).map_err(|_| {
            JsError::new(&format!(
                "now must be an ISO 8601 instant with an explicit offset, for example 2026-09-06T00:00:00Z (got \"{s}\")"
            ))
        }),
        None => Ok(Instant(js_sys::Date::now() as i64)),
    }
}

/// `validate({documents, config?, now?})`: the JSON envelope of
/// `okfit validate --format json` for these documents (paths relative to
/// the bundle root; `.md` files are documents, other paths are assets).
#[wasm_bindgen]
pub fn validate(options: JsValue) -> Result<JsValue, JsError> {
    let o = from_js(&options, "options")?;
    let docs = documents(o.get("documents").unwrap_or(&Value::Null))?;
    let cfg_text = match o.get("config") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(JsError::new("config must be the text of an okfit.toml")),
    };
    let cfg = config::resolve(cfg_text)
        .map_err(|e| JsError::new(&format!("malformed config okfit.toml: {e}")))?;
    let now = now_of(&o)?;
    let popts = ParseOptions {
        config: &cfg,
        now: Some(now),
        keep_frontmatter: false,
        digests: true,
        diagnostics: true,
        skip_body: false,
    };
    let (md, assets): (Vec<_>, Vec<_>) = docs.into_iter().partition(|(p, _)| p.ends_with(".md"));
    let parsed: Vec<doc::Document> = md
        .iter()
        .map(|(p, t)| doc::parse(p, t.as_bytes(), &popts))
        .collect();
    let b = Bundle::from_parts(parsed, assets.into_iter().map(|(p, _)| p).collect());
    let r = bundle::validate(&b, &cfg, vec![]);
    let meta = Meta {
        okfit_version: env!("CARGO_PKG_VERSION").to_string(),
        producer: "@okfit/wasm".into(),
        distribution: None,
        okf_version: cfg.okf_version.clone(),
        root: String::new(),
        profile: cfg.profile.map(str::to_string),
    };
    to_js(&report::to_value(&r, &meta))
}

/// `parseConcept(text, path?)`: what okfit reads from one file — its
/// frontmatter, the concept model, outgoing links and the findings that
/// need no other file.
#[wasm_bindgen(js_name = parseConcept)]
pub fn parse_concept(text: &str, path: Option<String>) -> Result<JsValue, JsError> {
    let path = path.unwrap_or_else(|| "concept.md".into());
    let cfg = config::Config::default();
    let popts = ParseOptions {
        config: &cfg,
        now: Some(Instant(js_sys::Date::now() as i64)),
        keep_frontmatter: true,
        digests: true,
        diagnostics: true,
        skip_body: false,
    };
    let d = doc::parse(&path, text.as_bytes(), &popts);
    let concept = d.concept.as_ref().map(|c| {
        json!({
            "id": c.id,
            "type": c.type_name,
            "title": c.title,
            "description": c.description,
            "status": c.status_or_stable(),
            "tags": c.tags,
            "stale_after": c.stale_after.map(time::format_millis),
            "trust_tier": format!("{:?}", c.trust_tier()).to_lowercase(),
            "body_sha256": c.body_digest_hex(),
            "frontmatter": c.frontmatter,
        })
    });
    let links: Vec<Value> = d
        .links
        .iter()
        .map(|l| {
            json!({
                "raw": l.raw,
                "source": if l.source == LinkSource::Frontmatter { "frontmatter" } else { "body" },
                "field": l.field,
            })
        })
        .collect();
    let diagnostics = serde_json::to_value(&d.diagnostics).unwrap_or(Value::Null);
    to_js(&json!({
        "path": path,
        "kind": format!("{:?}", d.kind).to_lowercase(),
        "concept": concept,
        "frontmatter": d.concept.as_ref().and_then(|c| c.frontmatter.clone()).or_else(|| doc::frontmatter_of(text)),
        "links": links,
        "headings": d.slugs,
        "diagnostics": diagnostics,
    }))
}

/// `manifest(documents, tenant?)`: the manifest TSV of these documents,
/// one bundle per first path segment when `bundle` is not given per
/// document (`{path, text, bundle?}`).
#[wasm_bindgen]
pub fn manifest(documents_in: JsValue, tenant: Option<String>) -> Result<String, JsError> {
    let v = from_js(&documents_in, "documents")?;
    let Some(arr) = v.as_array() else {
        return Err(JsError::new(
            "documents must be an array of {path, text, bundle?} objects",
        ));
    };
    let tenant = tenant.unwrap_or_else(|| "preview".into());
    let mut m = Model::new(&tenant);
    for (i, d) in arr.iter().enumerate() {
        let (Some(p), Some(t)) = (
            d.get("path").and_then(Value::as_str),
            d.get("text").and_then(Value::as_str),
        ) else {
            return Err(JsError::new(&format!(
                "documents[{i}] must be {{path: string, text: string}}"
            )));
        };
        let bundle = d
            .get("bundle")
            .and_then(Value::as_str)
            .unwrap_or("bundle")
            .to_string();
        if !p.ends_with(".md") {
            continue;
        }
        let c = compile::compile(p, t);
        m.upsert(&bundle, p, "", c);
    }
    m.settle();
    let (text, _) = m
        .manifest(None, Instant(js_sys::Date::now() as i64))
        .map_err(|e| JsError::new(&e))?;
    Ok(text)
}
