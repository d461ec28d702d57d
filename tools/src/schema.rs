//! Argument schemas derived from the argument types (schemars), in the
//! shape the tools have always published: no `$schema` or `title`, no
//! numeric `format`, optional fields typed without `null`, enums and
//! nested objects inline, and keys in a stable order (`type` first,
//! `required` before `additionalProperties`, `description` last).

use schemars::JsonSchema;
use serde_json::{Map, Value};

/// The JSON Schema of `T`'s arguments.
pub fn derived<T: JsonSchema>() -> Value {
    let root = schemars::generate::SchemaSettings::draft2020_12()
        .with(|s| s.meta_schema = None)
        .into_generator()
        .into_root_schema_for::<T>();
    let mut v = root.to_value();
    // The tool's own description says what the arguments are for.
    let defs = match &mut v {
        Value::Object(m) => {
            m.remove("description");
            m.remove("$defs").unwrap_or(Value::Null)
        }
        _ => Value::Null,
    };
    tidy(v, &defs)
}

fn tidy(v: Value, defs: &Value) -> Value {
    match v {
        Value::Object(m) => tidy_object(m, defs),
        Value::Array(a) => Value::Array(a.into_iter().map(|x| tidy(x, defs)).collect()),
        other => other,
    }
}

/// Where a key goes: `type` first, then bounds (lower before upper), the
/// rest as generated, `default`, `required` and `additionalProperties`,
/// and `description` last.
fn rank(key: &str) -> u8 {
    match key {
        "type" => 0,
        "minimum" | "minItems" | "minLength" => 1,
        "maximum" | "maxItems" | "maxLength" => 2,
        "default" => 4,
        "required" => 5,
        "additionalProperties" => 6,
        "allOf" => 7,
        "description" => 8,
        _ => 3,
    }
}

fn tidy_object(mut m: Map<String, Value>, defs: &Value) -> Value {
    // `Option<T>` is `anyOf: [T, null]` or `type: [t, "null"]`: optional
    // already means absent, never null.
    if let Some(Value::Array(any)) = m.get("anyOf") {
        if any.len() == 2
            && any
                .iter()
                .any(|x| x.get("type") == Some(&Value::from("null")))
        {
            let inner = any
                .iter()
                .find(|x| x.get("type") != Some(&Value::from("null")))
                .cloned()
                .unwrap_or(Value::Null);
            m.remove("anyOf");
            let inner = resolve(inner, defs);
            if let Value::Object(im) = inner {
                for (k, v) in im {
                    m.entry(k).or_insert(v);
                }
            }
        }
    }
    if let Some(r) = m.remove("$ref") {
        if let Value::Object(im) = resolve(serde_json::json!({ "$ref": r }), defs) {
            for (k, v) in im {
                m.entry(k).or_insert(v);
            }
        }
    }
    // An enum whose variants carry docs comes out as `oneOf` consts:
    // publish it as the plain string enum it is.
    if let Some(Value::Array(one)) = m.get("oneOf") {
        let consts: Option<Vec<Value>> = one
            .iter()
            .map(|x| {
                (x.get("type") == Some(&Value::from("string")))
                    .then(|| x.get("const").cloned())
                    .flatten()
            })
            .collect();
        if let Some(c) = consts {
            m.remove("oneOf");
            m.insert("type".into(), Value::from("string"));
            m.insert("enum".into(), Value::Array(c));
        }
    }
    if let Some(Value::Array(types)) = m.get("type") {
        let kept: Vec<&Value> = types.iter().filter(|t| *t != "null").collect();
        if kept.len() == 1 {
            let t = kept[0].clone();
            m.insert("type".into(), t);
        }
    }
    m.remove("title");
    m.remove("format");
    if m.get("default") == Some(&Value::Null) {
        m.remove("default");
    }
    if m.get("type") == Some(&Value::from("object")) && !m.contains_key("properties") {
        m.insert("properties".into(), Value::Object(Map::new()));
    }
    let mut entries: Vec<(String, Value)> = m
        .into_iter()
        .map(|(k, v)| {
            let v = if k == "properties" {
                match v {
                    Value::Object(p) => {
                        Value::Object(p.into_iter().map(|(k, v)| (k, tidy(v, defs))).collect())
                    }
                    other => other,
                }
            } else {
                tidy(v, defs)
            };
            (k, v)
        })
        .collect();
    entries.sort_by_key(|(k, _)| rank(k));
    Value::Object(entries.into_iter().collect())
}

/// A `$ref` into `$defs`, replaced by the definition it names.
fn resolve(v: Value, defs: &Value) -> Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => {
            let name = r.rsplit('/').next().unwrap_or("");
            defs.get(name).cloned().unwrap_or(Value::Null)
        }
        None => v,
    }
}
