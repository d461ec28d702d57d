//! The okfit.toml model: defaults, the profile merge, closed tables,
//! the duration codec and lint levels.

use crate::actor;
use crate::diag::{Severity, LINT_DEFAULTS};
use crate::profile;
use std::collections::BTreeMap;
use toml::{Table, Value};

/// The OKF version this okfit implements.
pub const OKF_VERSION: &str = "0.2";

/// A `[lint]` level.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    /// Not reported.
    Off,
    /// Reported at this severity.
    On(Severity),
}

/// One declared field of a type.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FieldDecl {
    /// One sentence.
    pub description: Option<String>,
    /// `Some("path")` when the value is a concept id or file path.
    pub kind: Option<String>,
    /// Allowed values with their descriptions, in declaration order.
    pub values: Option<Vec<(String, String)>>,
}

/// One `[types.<Name>]` table.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct TypeDecl {
    /// One sentence.
    pub description: Option<String>,
    /// Longer authoring guidance.
    pub guidance: Option<String>,
    /// Keys every concept of this type must carry (beyond `concepts.required`).
    pub required: Option<Vec<String>>,
    /// Non-draft concepts of this type need a `verified` entry.
    pub require_verified: Option<bool>,
    /// Declared fields, by name.
    pub fields: BTreeMap<String, FieldDecl>,
}

/// The resolved configuration a validation runs with.
#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `okf_version`.
    pub okf_version: String,
    /// `[bundle].path`, relative to the project root (or absolute).
    pub bundle_path: String,
    /// The profile name after defaulting (`"none"` when switched off).
    pub profile_requested: String,
    /// The profile in effect, if the name is known.
    pub profile: Option<&'static str>,
    /// `concepts.required`.
    pub concepts_required: Vec<String>,
    /// `concepts.tags.required`.
    pub tags_required: Vec<String>,
    /// `lifecycle.default_stale_after`, in milliseconds.
    pub default_stale_after_ms: i64,
    /// `actors.agent`.
    pub agent: Option<String>,
    /// `actors.humans`.
    pub humans: Vec<String>,
    /// Effective level of every lint code.
    pub lint: BTreeMap<&'static str, Level>,
    /// Declared types, sorted by name.
    pub types: BTreeMap<String, TypeDecl>,
    /// Declared tags with their descriptions, sorted by name.
    pub tags: BTreeMap<String, Option<String>>,
    /// Unknown top-level keys (reported as `config-unknown-key`).
    pub unknown_keys: Vec<String>,
    /// Warnings for stderr (unknown profile, okf_version mismatch).
    pub warnings: Vec<String>,
}

impl Default for Config {
    fn default() -> Self {
        // The defaults with the default profile; cannot fail on built-in text.
        resolve(None).unwrap_or_else(|_| Config::bare())
    }
}

impl Config {
    fn bare() -> Self {
        Config {
            okf_version: OKF_VERSION.into(),
            bundle_path: "okf".into(),
            profile_requested: "none".into(),
            profile: None,
            concepts_required: vec![],
            tags_required: vec![],
            default_stale_after_ms: 90 * 86_400_000,
            agent: None,
            humans: vec![],
            lint: LINT_DEFAULTS
                .iter()
                .map(|(c, s)| (*c, s.map_or(Level::Off, Level::On)))
                .collect(),
            types: BTreeMap::new(),
            tags: BTreeMap::new(),
            unknown_keys: vec![],
            warnings: vec![],
        }
    }

    /// The severity a lint code is reported at, or `None` when off.
    /// `unknown-type` is off when no types are declared.
    pub fn severity(&self, code: &str) -> Option<Severity> {
        if code == "unknown-type" && self.types.is_empty() {
            return None;
        }
        match self.lint.get(code) {
            Some(Level::On(s)) => Some(*s),
            _ => None,
        }
    }
}

/// Parses okfit.toml text (or none) and resolves it against the defaults
/// and the selected profile. Errors are the detail of a malformed config.
pub fn resolve(text: Option<&str>) -> Result<Config, String> {
    let file: Table = match text {
        Some(t) => t.parse::<Table>().map_err(|e| one_line(&e.to_string()))?,
        None => Table::new(),
    };
    let requested = match file.get("bundle").and_then(|b| b.get("profile")) {
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(format!(
                "bundle.profile must be a string, got {}",
                type_name(other)
            ))
        }
        None => profile::DEFAULT.to_string(),
    };
    let mut warnings = vec![];
    let profile_name = if requested == "none" {
        None
    } else if let Some(p) = profile::lookup(&requested) {
        Some(p)
    } else {
        warnings.push(format!(
            "unknown profile \"{requested}\"; continuing with defaults"
        ));
        None
    };
    let merged = match profile_name.and_then(profile::config_text) {
        Some(ptext) => {
            let base: Table = ptext
                .parse()
                .map_err(|e: toml::de::Error| format!("built-in profile: {e}"))?;
            merge(base, file)
        }
        None => file,
    };
    let mut cfg = decode(&merged)?;
    cfg.profile_requested = requested;
    cfg.profile = profile_name;
    if cfg.okf_version != OKF_VERSION {
        warnings.push(format!(
            "okf_version \"{}\" does not match this okfit's spec version \"{OKF_VERSION}\"; continuing",
            cfg.okf_version
        ));
    }
    cfg.warnings = warnings;
    Ok(cfg)
}

fn one_line(s: &str) -> String {
    s.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('|') && !l.starts_with("-->"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Tables merge key-wise, recursively; arrays and scalars replace.
fn merge(mut base: Table, over: Table) -> Table {
    for (k, v) in over {
        if matches!(k.as_str(), "__proto__" | "constructor" | "prototype") {
            continue;
        }
        match (base.remove(&k), v) {
            (Some(Value::Table(b)), Value::Table(o)) => {
                base.insert(k, Value::Table(merge(b, o)));
            }
            (_, v) => {
                base.insert(k, v);
            }
        }
    }
    base
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "a string",
        Value::Integer(_) => "an integer",
        Value::Float(_) => "a float",
        Value::Boolean(_) => "a boolean",
        Value::Datetime(_) => "a datetime",
        Value::Array(_) => "an array",
        Value::Table(_) => "a table",
    }
}

fn closed<'a>(t: &'a Table, path: &str, allowed: &[&str]) -> Result<&'a Table, String> {
    for k in t.keys() {
        if !allowed.contains(&k.as_str()) {
            return Err(format!("unknown key \"{k}\" in [{path}]"));
        }
    }
    Ok(t)
}

fn table<'a>(t: &'a Table, key: &str, path: &str) -> Result<Option<&'a Table>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Table(x)) => Ok(Some(x)),
        Some(v) => Err(format!("{path} must be a table, got {}", type_name(v))),
    }
}

fn string(t: &Table, key: &str, path: &str) -> Result<Option<String>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(v) => Err(format!("{path} must be a string, got {}", type_name(v))),
    }
}

fn strings(t: &Table, key: &str, path: &str) -> Result<Option<Vec<String>>, String> {
    match t.get(key) {
        None => Ok(None),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| match v {
                Value::String(s) => Ok(s.clone()),
                v => Err(format!(
                    "{path} must be an array of strings, found {}",
                    type_name(v)
                )),
            })
            .collect::<Result<Vec<_>, _>>()
            .map(Some),
        Some(v) => Err(format!(
            "{path} must be an array of strings, got {}",
            type_name(v)
        )),
    }
}

fn decode(t: &Table) -> Result<Config, String> {
    const TOP: [&str; 8] = [
        "okf_version",
        "bundle",
        "concepts",
        "lifecycle",
        "actors",
        "lint",
        "types",
        "tags",
    ];
    let mut cfg = Config::bare();
    cfg.unknown_keys = t
        .keys()
        .filter(|k| !TOP.contains(&k.as_str()) && !k.starts_with('$'))
        .cloned()
        .collect();
    if let Some(v) = string(t, "okf_version", "okf_version")? {
        cfg.okf_version = v;
    }
    if let Some(b) = table(t, "bundle", "bundle")? {
        closed(b, "bundle", &["path", "profile"])?;
        if let Some(p) = string(b, "path", "bundle.path")? {
            if p.is_empty() || p.contains('\0') {
                return Err("bundle.path must be a non-empty path".into());
            }
            cfg.bundle_path = p;
        }
    }
    if let Some(c) = table(t, "concepts", "concepts")? {
        closed(c, "concepts", &["required", "tags"])?;
        if let Some(r) = strings(c, "required", "concepts.required")? {
            cfg.concepts_required = r;
        }
        if let Some(tg) = table(c, "tags", "concepts.tags")? {
            closed(tg, "concepts.tags", &["required"])?;
            if let Some(r) = strings(tg, "required", "concepts.tags.required")? {
                cfg.tags_required = r;
            }
        }
    }
    if let Some(l) = table(t, "lifecycle", "lifecycle")? {
        closed(l, "lifecycle", &["default_stale_after"])?;
        if let Some(d) = string(l, "default_stale_after", "lifecycle.default_stale_after")? {
            cfg.default_stale_after_ms = parse_duration(&d)?;
        }
    }
    if let Some(a) = table(t, "actors", "actors")? {
        closed(a, "actors", &["agent", "humans"])?;
        if let Some(agent) = string(a, "agent", "actors.agent")? {
            if actor::classify(&agent).is_none() {
                return Err(format!(
                    "actors.agent \"{agent}\": {}",
                    actor::ACTOR_MESSAGE
                ));
            }
            cfg.agent = Some(agent);
        }
        if let Some(h) = strings(a, "humans", "actors.humans")? {
            for x in &h {
                if actor::classify(x).is_none() {
                    return Err(format!("actors.humans \"{x}\": {}", actor::ACTOR_MESSAGE));
                }
            }
            cfg.humans = h;
        }
    }
    if let Some(l) = table(t, "lint", "lint")? {
        for (k, v) in l {
            let code = LINT_DEFAULTS
                .iter()
                .map(|(c, _)| *c)
                .find(|c| c.replace('-', "_") == *k)
                .ok_or_else(|| format!("unknown key \"{k}\" in [lint]"))?;
            let level = match v {
                Value::String(s) => match s.as_str() {
                    "off" => Level::Off,
                    "info" => Level::On(Severity::Info),
                    "warn" => Level::On(Severity::Warning),
                    "error" => Level::On(Severity::Error),
                    other => {
                        return Err(format!(
                            "lint.{k} must be one of off, info, warn, error, got \"{other}\""
                        ))
                    }
                },
                v => {
                    return Err(format!(
                        "lint.{k} must be one of off, info, warn, error, got {}",
                        type_name(v)
                    ))
                }
            };
            cfg.lint.insert(code, level);
        }
    }
    if let Some(ty) = table(t, "types", "types")? {
        for (name, v) in ty {
            let path = format!("types.{name}");
            let Value::Table(d) = v else {
                return Err(format!("{path} must be a table, got {}", type_name(v)));
            };
            closed(
                d,
                &path,
                &[
                    "description",
                    "guidance",
                    "required",
                    "require_verified",
                    "fields",
                ],
            )?;
            let mut decl = TypeDecl {
                description: string(d, "description", &format!("{path}.description"))?,
                guidance: string(d, "guidance", &format!("{path}.guidance"))?,
                required: strings(d, "required", &format!("{path}.required"))?,
                ..TypeDecl::default()
            };
            match d.get("require_verified") {
                None => {}
                Some(Value::Boolean(b)) => decl.require_verified = Some(*b),
                Some(v) => {
                    return Err(format!(
                        "{path}.require_verified must be a boolean, got {}",
                        type_name(v)
                    ))
                }
            }
            if let Some(fields) = table(d, "fields", &format!("{path}.fields"))? {
                for (fname, fv) in fields {
                    let fpath = format!("{path}.fields.{fname}");
                    let Value::Table(f) = fv else {
                        return Err(format!("{fpath} must be a table, got {}", type_name(fv)));
                    };
                    closed(f, &fpath, &["description", "kind", "values"])?;
                    let kind = string(f, "kind", &format!("{fpath}.kind"))?;
                    if let Some(k) = &kind {
                        if k != "path" {
                            return Err(format!("{fpath}.kind must be \"path\", got \"{k}\""));
                        }
                    }
                    let values = match table(f, "values", &format!("{fpath}.values"))? {
                        None => None,
                        Some(vals) => Some(
                            vals.iter()
                                .map(|(vk, vd)| match vd {
                                    Value::String(s) => Ok((vk.clone(), s.clone())),
                                    v => Err(format!(
                                        "{fpath}.values.{vk} must be a string, got {}",
                                        type_name(v)
                                    )),
                                })
                                .collect::<Result<Vec<_>, _>>()?,
                        ),
                    };
                    decl.fields.insert(
                        fname.clone(),
                        FieldDecl {
                            description: string(f, "description", &format!("{fpath}.description"))?,
                            kind,
                            values,
                        },
                    );
                }
            }
            cfg.types.insert(name.clone(), decl);
        }
    }
    if let Some(tags) = table(t, "tags", "tags")? {
        for (name, v) in tags {
            let path = format!("tags.{name}");
            let Value::Table(d) = v else {
                return Err(format!("{path} must be a table, got {}", type_name(v)));
            };
            closed(d, &path, &["description"])?;
            cfg.tags.insert(
                name.clone(),
                string(d, "description", &format!("{path}.description"))?,
            );
        }
    }
    Ok(cfg)
}

/// Parses `"<n>h" | "<n>d" | "<n>w" | "<n> <unit>"` into milliseconds.
pub fn parse_duration(s: &str) -> Result<i64, String> {
    let err = || format!("expected \"<n>h\", \"<n>d\", \"<n>w\" or \"<n> <unit>\", got \"{s}\"");
    let short = |n: &str, mult: i64| -> Result<i64, String> {
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            return Err(err());
        }
        n.parse::<i64>()
            .ok()
            .and_then(|v| v.checked_mul(mult))
            .ok_or_else(err)
    };
    const HOUR: i64 = 3_600_000;
    if let Some(n) = s.strip_suffix('h') {
        if !n.contains(' ') {
            return short(n, HOUR);
        }
    }
    if let Some(n) = s.strip_suffix('d') {
        if !n.contains(' ') {
            return short(n, 24 * HOUR);
        }
    }
    if let Some(n) = s.strip_suffix('w') {
        if !n.contains(' ') {
            return short(n, 7 * 24 * HOUR);
        }
    }
    let mut parts = s.split_whitespace();
    let (Some(num), Some(unit), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err(err());
    };
    let num_ok = {
        let mut it = num.splitn(2, '.');
        let a = it.next().unwrap_or("");
        let b = it.next();
        !a.is_empty()
            && a.bytes().all(|c| c.is_ascii_digit())
            && b.is_none_or(|b| !b.is_empty() && b.bytes().all(|c| c.is_ascii_digit()))
    };
    if !num_ok {
        return Err(err());
    }
    let n: f64 = num.parse().map_err(|_| err())?;
    let ms_per: f64 = match unit.trim_end_matches('s') {
        "nano" => 1e-6,
        "micro" => 1e-3,
        "milli" => 1.0,
        "second" => 1e3,
        "minute" => 6e4,
        "hour" => 3.6e6,
        "day" => 8.64e7,
        "week" => 6.048e8,
        _ => return Err(err()),
    };
    let ms = n * ms_per;
    if !ms.is_finite() || ms > 9.0e15 {
        return Err(err());
    }
    Ok(ms.round() as i64)
}

/// Encodes milliseconds as the shortest exact `w`/`d`/`h` form, else `<ms> millis`.
pub fn format_duration(ms: i64) -> String {
    const H: i64 = 3_600_000;
    if ms > 0 && ms % (7 * 24 * H) == 0 {
        format!("{}w", ms / (7 * 24 * H))
    } else if ms > 0 && ms % (24 * H) == 0 {
        format!("{}d", ms / (24 * H))
    } else if ms > 0 && ms % H == 0 {
        format!("{}h", ms / H)
    } else {
        format!("{ms} millis")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_use_software_project() {
        let c = resolve(None).unwrap();
        assert_eq!(c.profile, Some("software-project"));
        assert_eq!(c.concepts_required, vec!["title", "description"]);
        assert_eq!(c.severity("status-missing"), Some(Severity::Warning));
        assert!(c.types.contains_key("Module"));
        assert_eq!(c.default_stale_after_ms, 90 * 86_400_000);
    }

    #[test]
    fn none_profile_and_overrides() {
        let c = resolve(Some(
            "[bundle]\nprofile = \"none\"\n[lint]\nbroken_links = \"error\"\nstale = \"off\"\n",
        ))
        .unwrap();
        assert_eq!(c.profile, None);
        assert_eq!(c.profile_requested, "none");
        assert_eq!(c.severity("broken-links"), Some(Severity::Error));
        assert_eq!(c.severity("stale"), None);
        assert_eq!(c.severity("unknown-type"), None);
        assert_eq!(c.severity("status-missing"), None);
    }

    #[test]
    fn closed_tables_and_unknown_keys() {
        assert_eq!(
            resolve(Some("[bundle]\npth = \"x\"\n")).unwrap_err(),
            "unknown key \"pth\" in [bundle]"
        );
        assert_eq!(
            resolve(Some("[lint]\nnope = \"warn\"\n")).unwrap_err(),
            "unknown key \"nope\" in [lint]"
        );
        assert!(resolve(Some("[lint]\nstale = \"loud\"\n"))
            .unwrap_err()
            .contains("off, info, warn, error"));
        let c = resolve(Some("extra = 1\n")).unwrap();
        assert_eq!(c.unknown_keys, vec!["extra"]);
        assert!(resolve(Some("[bundle\n")).is_err());
    }

    #[test]
    fn profile_merge_keeps_profile_types_and_adds_own() {
        let c = resolve(Some(
            "[types.Metric]\ndescription = \"A number.\"\n[types.Module]\nrequired = [\"resource\"]\n",
        ))
        .unwrap();
        assert!(c.types.contains_key("Metric"));
        assert_eq!(
            c.types["Module"].required,
            Some(vec!["resource".to_string()])
        );
        assert!(c.types["Module"].description.is_some());
        let w = resolve(Some("[bundle]\nprofile = \"nope\"\n")).unwrap();
        assert_eq!(
            w.warnings,
            vec!["unknown profile \"nope\"; continuing with defaults"]
        );
        let w = resolve(Some("okf_version = \"0.1\"\n")).unwrap();
        assert_eq!(
            w.warnings,
            vec![
                "okf_version \"0.1\" does not match this okfit's spec version \"0.2\"; continuing"
            ]
        );
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90d").unwrap(), 90 * 86_400_000);
        assert_eq!(parse_duration("2w").unwrap(), 14 * 86_400_000);
        assert_eq!(parse_duration("36h").unwrap(), 36 * 3_600_000);
        assert_eq!(parse_duration("1.5 hours").unwrap(), 5_400_000);
        assert_eq!(parse_duration("1 day").unwrap(), 86_400_000);
        assert_eq!(parse_duration("250 millis").unwrap(), 250);
        assert_eq!(
            parse_duration("soon").unwrap_err(),
            "expected \"<n>h\", \"<n>d\", \"<n>w\" or \"<n> <unit>\", got \"soon\""
        );
        assert!(parse_duration("d").is_err());
        assert!(parse_duration("1.d").is_err());
        assert_eq!(format_duration(90 * 86_400_000), "90d");
        assert_eq!(format_duration(14 * 86_400_000), "2w");
        assert_eq!(format_duration(3_600_000), "1h");
        assert_eq!(format_duration(250), "250 millis");
    }
}
