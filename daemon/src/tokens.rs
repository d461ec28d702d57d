//! The bearer tokens of `<data>/tokens.json`: each names a tenant, whether
//! it may write, and whether it is offered the database tools over MCP.
//! The daemon keeps only their sha256.

use okfit_core::kb::names;
use okfit_store::error::Error;
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

/// What a token may do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grant {
    /// The tenant it reads (and maybe writes).
    pub tenant: String,
    /// Whether it may write.
    pub write: bool,
    /// Whether MCP offers it the database tools (history; transact and
    /// restore too when it may write).
    pub database: bool,
}

/// Reads `<data>/tokens.json`: `{"<token>": "<tenant>"}` is a read-only
/// grant, `{"<token>": {"tenant": "<t>", "write": true}}` a writer, and
/// `"database": true` beside them adds the database tools.
pub fn read_tokens(data: &Path) -> Result<HashMap<String, Grant>, Error> {
    let path = data.join("tokens.json");
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(HashMap::new()),
        Err(e) => return Err(Error::Io(format!("cannot read {} ({e})", path.display()))),
    };
    let bad = |why: &str| Error::Refused(format!("{}: {why}", path.display()));
    let v: Value = serde_json::from_str(&text).map_err(|_| bad("must be a JSON object"))?;
    let Value::Object(map) = v else {
        return Err(bad("must be a JSON object"));
    };
    let mut out = HashMap::new();
    for (token, grant) in map {
        if token.is_empty() {
            return Err(bad("has an empty token"));
        }
        let g = match grant {
            Value::String(t) => Grant {
                tenant: t,
                write: false,
                database: false,
            },
            Value::Object(o) => Grant {
                tenant: o
                    .get("tenant")
                    .and_then(Value::as_str)
                    .ok_or_else(|| bad("invalid grant"))?
                    .to_string(),
                write: o.get("write") == Some(&Value::Bool(true)),
                database: o.get("database") == Some(&Value::Bool(true)),
            },
            _ => return Err(bad("invalid grant")),
        };
        names::check_tenant(&g.tenant).map_err(|e| bad(&e))?;
        out.insert(token, g);
    }
    Ok(out)
}

/// Mints a token for `tenant`, records it in `<data>/tokens.json` (mode
/// 600) and returns it.
pub fn mint_token(data: &Path, tenant: &str, write: bool, database: bool) -> Result<String, Error> {
    names::check_tenant(tenant).map_err(Error::Usage)?;
    let path = data.join("tokens.json");
    let mut map: serde_json::Map<String, Value> = match std::fs::read_to_string(&path) {
        Ok(t) => match serde_json::from_str(&t) {
            Ok(Value::Object(m)) => m,
            _ => {
                return Err(Error::Refused(format!(
                    "{}: must be a JSON object",
                    path.display()
                )))
            }
        },
        Err(_) => serde_json::Map::new(),
    };
    let mut raw = [0u8; 32];
    getrandom(&mut raw)?;
    let token = okfit_core::doc::hex(&raw);
    map.insert(
        token.clone(),
        match (write, database) {
            (false, false) => json!(tenant),
            (true, false) => json!({"tenant": tenant, "write": true}),
            (_, true) => json!({"tenant": tenant, "write": write, "database": true}),
        },
    );
    let text = serde_json::to_string_pretty(&map).unwrap_or_default();
    okfit_store::beneath::Root::create(data)?.write_mode(
        "tokens.json",
        text.as_bytes(),
        "tokens.json",
        0o600,
    )?;
    Ok(token)
}

fn getrandom(buf: &mut [u8]) -> Result<(), Error> {
    use std::io::Read;
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(buf))
        .map_err(|e| Error::Io(format!("no randomness for a token ({e})")))
}

/// A token's sha256: what the daemon keeps and compares.
pub(crate) fn token_digest(token: &str) -> [u8; 32] {
    use sha2::{Digest, Sha256};
    Sha256::digest(token.as_bytes()).into()
}
