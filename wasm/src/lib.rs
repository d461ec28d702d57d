//! okfit in WebAssembly: validate unsaved documents, read one concept,
//! build a manifest — the same core, rules and JSON envelope as the CLI,
//! with no server. Inputs and outputs are plain JS values (through JSON);
//! bad input throws an `Error` with a clear message.

use okfit_core::bundle;
use okfit_core::config;
use okfit_core::kb::{compile, model::Model};
use okfit_core::overlay::{Given, Refusal};
use okfit_core::query;
use okfit_core::report::{self, Meta};
use okfit_core::time::{self, Instant};
use serde_json::Value;

use wasm_bindgen::prelude::*;

fn to_js(v: &Value) -> Result<JsValue, JsError> {
    js_sys::JSON::parse(&v.to_string()).map_err(|_| JsError::new("okfit: cannot build the result"))
}

fn get(obj: &JsValue, key: &str) -> JsValue {
    js_sys::Reflect::get(obj, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

/// The producer named in the envelope.
const PRODUCER: &str = "@okfit/wasm";

/// A refused path as the Error for `documents[i].path`.
fn path_error(i: usize, p: &str, r: Refusal) -> JsError {
    JsError::new(&format!(
        "documents[{i}].path \"{}\" {}",
        p.replace('\0', "\\0"),
        r.as_str()
    ))
}

/// `documents: [{path, text}]` from a JS value (lone surrogates in text
/// become U+FFFD, as a browser's encoder would write them).
fn documents(v: &JsValue, what: &str) -> Result<Vec<(String, String, JsValue)>, JsError> {
    documents_keyed(v, what, false)
}

/// [`documents`], where `per_bundle` makes a path unique per `bundle`.
fn documents_keyed(
    v: &JsValue,
    what: &str,
    per_bundle: bool,
) -> Result<Vec<(String, String, JsValue)>, JsError> {
    if !js_sys::Array::is_array(v) {
        return Err(JsError::new(&format!(
            "{what} must be an array of {{path, text}} objects"
        )));
    }
    let arr = js_sys::Array::from(v);
    let mut out: Vec<(String, String, JsValue)> = Vec::with_capacity(arr.length() as usize);
    let mut given = Given::files();
    for (i, d) in arr.iter().enumerate() {
        let (Some(p), Some(t)) = (get(&d, "path").as_string(), get(&d, "text").as_string()) else {
            return Err(JsError::new(&format!(
                "{what}[{i}] must be {{path: string, text: string}}"
            )));
        };
        let scope = if per_bundle {
            get(&d, "bundle").as_string().unwrap_or_default()
        } else {
            String::new()
        };
        let norm = given
            .check_in(&scope, &p)
            .map_err(|r| path_error(i, &p, r))?;
        out.push((norm, t, d));
    }
    Ok(out)
}

fn now_from(v: &JsValue) -> Result<Instant, JsError> {
    if v.is_undefined() || v.is_null() {
        return Ok(Instant(js_sys::Date::now() as i64));
    }
    let Some(s) = v.as_string() else {
        return Err(JsError::new(
            "now must be a string: an ISO 8601 instant with an explicit offset",
        ));
    };
    time::parse_now(&s).map_err(|_| {
        JsError::new(&format!(
            "now must be an ISO 8601 instant with an explicit offset, for example 2026-09-06T00:00:00Z (got \"{s}\")"
        ))
    })
}

/// `validate({documents, config?, now?})`: the JSON envelope of
/// `okfit validate --format json` for these documents (paths relative to
/// the bundle root; `.md` files are documents, other paths are assets).
#[wasm_bindgen]
pub fn validate(options: JsValue) -> Result<JsValue, JsError> {
    if !options.is_object() {
        return Err(JsError::new(
            "documents must be an array of {path, text} objects: validate({documents, config?, now?})",
        ));
    }
    let docs: Vec<(String, String)> = documents(&get(&options, "documents"), "documents")?
        .into_iter()
        .map(|(p, t, _)| (p, t))
        .collect();
    let cfg_js = get(&options, "config");
    let cfg_text = if cfg_js.is_undefined() || cfg_js.is_null() {
        None
    } else {
        Some(
            cfg_js
                .as_string()
                .ok_or_else(|| JsError::new("config must be the text of an okfit.toml"))?,
        )
    };
    let cfg = config::resolve(cfg_text.as_deref())
        .map_err(|e| JsError::new(&format!("malformed config okfit.toml: {e}")))?;
    let now = now_from(&get(&options, "now"))?;
    let r = bundle::validate_texts(&docs, &cfg, now);
    let meta = Meta::new(env!("CARGO_PKG_VERSION"), PRODUCER, &cfg, String::new());
    to_js(&report::to_value(&r, &meta))
}

/// `parseConcept(text, path?)`: what okfit reads from one file — its
/// frontmatter, the concept model, outgoing links and the findings that
/// need no other file.
#[wasm_bindgen(js_name = parseConcept)]
pub fn parse_concept(text: JsValue, path: JsValue) -> Result<JsValue, JsError> {
    let Some(text) = text.as_string() else {
        return Err(JsError::new(
            "parseConcept(text, path?) needs the text as a string",
        ));
    };
    let text = text.as_str();
    let path = if path.is_undefined() || path.is_null() {
        "concept.md".to_string()
    } else {
        let p = path
            .as_string()
            .ok_or_else(|| JsError::new("parseConcept(text, path?): path must be a string"))?;
        Given::files().check(&p).map_err(|r| path_error(0, &p, r))?
    };
    to_js(&query::file_json(
        &path,
        text,
        Instant(js_sys::Date::now() as i64),
    ))
}

/// `manifest(documents, tenant?)`: the manifest TSV of these documents
/// (`{path, text, bundle?}`; the bundle defaults to `bundle`, the tenant to
/// `preview`). Names follow the store's rules.
#[wasm_bindgen]
pub fn manifest(documents_in: JsValue, tenant: JsValue) -> Result<String, JsError> {
    use okfit_core::kb::names;
    let tenant = if tenant.is_undefined() || tenant.is_null() {
        "preview".to_string()
    } else {
        tenant
            .as_string()
            .ok_or_else(|| JsError::new("manifest(documents, tenant?): tenant must be a string"))?
    };
    names::check_tenant(&tenant).map_err(|e| JsError::new(&e))?;
    let docs = documents_keyed(&documents_in, "documents", true)?;
    let mut m = Model::new(&tenant);
    for (i, (p, t, d)) in docs.iter().enumerate() {
        let b = get(d, "bundle");
        let bundle = if b.is_undefined() || b.is_null() {
            "bundle".to_string()
        } else {
            b.as_string()
                .ok_or_else(|| JsError::new(&format!("documents[{i}].bundle must be a string")))?
        };
        names::check_bundle(&bundle).map_err(|e| JsError::new(&format!("documents[{i}]: {e}")))?;
        if !p.ends_with(".md") {
            continue;
        }
        names::check_path(p).map_err(|e| JsError::new(&format!("documents[{i}]: {e}")))?;
        let c = compile::compile(p, t);
        m.upsert(&bundle, p, "", c);
    }
    m.settle();
    let (text, _) = m
        .manifest(None, Instant(js_sys::Date::now() as i64))
        .map_err(|e| JsError::new(&e))?;
    Ok(text)
}
