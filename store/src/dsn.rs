//! Connection strings (reference langonrock §1.1, SPEC §3): which
//! knowledge a command or server works on.

use okfit_core::kb::names;
use std::path::PathBuf;

/// A parsed connection string.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Dsn {
    /// `okf:///abs/bundle` with no tenant: one bundle folder read live.
    Folder {
        /// The bundle folder.
        path: PathBuf,
    },
    /// `okf:///abs/data?tenant=t` or `okf://?tenant=t`: the embedded store.
    Store {
        /// The data root (`<root>/tenants/<tenant>/`).
        root: PathBuf,
        /// The tenant.
        tenant: String,
    },
    /// `okf+unix:///path.sock?tenant=t`: a running `okfit serve`.
    Unix {
        /// The socket.
        socket: PathBuf,
        /// The tenant (required without a token).
        tenant: Option<String>,
        /// A bearer token.
        token: Option<String>,
    },
    /// `okf+http(s)://host:port?token=…`: a remote `okfit serve`.
    Http {
        /// `http(s)://host[:port]` (any path in the string is dropped).
        origin: String,
        /// The tenant, when given.
        tenant: Option<String>,
        /// The bearer token; it picks the tenant.
        token: Option<String>,
    },
    /// `okf+postgres://user@host:5432/db?tenant=t` (libpq parameters such
    /// as `sslmode` pass through): a tenant of a PostgreSQL store.
    Postgres {
        /// The `postgres://` connection string, without `tenant`.
        url: String,
        /// The tenant.
        tenant: String,
    },
    /// `okf+npipe://./pipe/name`: parsed, not supported.
    Npipe {
        /// `\\.\pipe\<name>`.
        pipe: String,
    },
}

/// The schemes the reference names in its message (`okf+postgres:` is
/// okfit's own, named in a message of its own).
const SCHEMES: &str = "okf:, okf+unix:, okf+npipe:, okf+http:, okf+https:";

impl Dsn {
    /// Where the store of a store connection lives, and its tenant (`None`
    /// for folders and daemons).
    pub fn store(&self) -> Option<(crate::backend::Location, &str)> {
        use crate::backend::Location;
        match self {
            Dsn::Store { root, tenant } => Some((Location::Sqlite(root.clone()), tenant)),
            Dsn::Postgres { url, tenant } => Some((Location::Postgres(url.clone()), tenant)),
            _ => None,
        }
    }

    /// The connection to `tenant` of the store at `at`.
    pub fn of_store(at: &crate::backend::Location, tenant: &str) -> Dsn {
        use crate::backend::Location;
        match at {
            Location::Sqlite(root) => Dsn::Store {
                root: root.clone(),
                tenant: tenant.to_string(),
            },
            Location::Postgres(url) => Dsn::Postgres {
                url: url.clone(),
                tenant: tenant.to_string(),
            },
        }
    }

    /// True when the connection has revisions (a store, here or behind a
    /// daemon), so history, transactions and restore apply.
    pub fn has_revisions(&self) -> bool {
        !matches!(self, Dsn::Folder { .. } | Dsn::Npipe { .. })
    }
}

/// `okf+postgres://…`: every parameter but `tenant` is PostgreSQL's.
fn postgres(url: &url::Url, shown: &str) -> Result<Dsn, String> {
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!(
            "invalid dsn \"{shown}\": name the PostgreSQL host (okf+postgres://user@host:5432/db?tenant=t)"
        ));
    }
    let mut tenant = None;
    let mut rest = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in url.query_pairs() {
        if k == "tenant" {
            if tenant.is_some() {
                return Err(format!(
                    "invalid dsn \"{shown}\": tenant is given more than once"
                ));
            }
            tenant = Some(v.into_owned());
        } else {
            rest.append_pair(&k, &v);
        }
    }
    let tenant = tenant.filter(|t| !t.is_empty()).ok_or_else(|| {
        format!("invalid dsn \"{shown}\": a PostgreSQL connection needs ?tenant=")
    })?;
    names::check_tenant(&tenant)?;
    let query = rest.finish();
    let auth = match (url.username(), url.password()) {
        ("", _) => String::new(),
        (u, None) => format!("{u}@"),
        (u, Some(p)) => format!("{u}:{p}@"),
    };
    let host = url.host_str().unwrap_or_default();
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    let q = if query.is_empty() {
        String::new()
    } else {
        format!("?{query}")
    };
    Ok(Dsn::Postgres {
        url: format!("postgres://{auth}{host}{port}{}{q}", url.path()),
        tenant,
    })
}

/// `$HOME`, when set.
fn home() -> Option<PathBuf> {
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
}

/// The platform data root: `OKFIT_DATA`, else the platform's data
/// directory (`$XDG_DATA_HOME/okfit`, `~/.local/share/okfit`,
/// `~/Library/Application Support/okfit`, `%LOCALAPPDATA%\okfit`).
pub fn default_data_root() -> Result<PathBuf, String> {
    if let Some(d) = std::env::var_os("OKFIT_DATA").filter(|d| !d.is_empty()) {
        return Ok(PathBuf::from(d));
    }
    let dir = if cfg!(windows) {
        std::env::var_os("LOCALAPPDATA").map(PathBuf::from)
    } else if cfg!(target_os = "macos") {
        home().map(|h| h.join("Library/Application Support"))
    } else {
        std::env::var_os("XDG_DATA_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| home().map(|h| h.join(".local/share")))
    };
    dir.map(|d| d.join("okfit")).ok_or_else(|| {
        "no data directory: set OKFIT_DATA or HOME, or give the data root in the connection string"
            .to_string()
    })
}

/// The platform cache root, where okfit keeps what it can derive again
/// (a large folder's search index): `OKFIT_CACHE`, else the platform's
/// cache directory (`$XDG_CACHE_HOME/okfit`, `~/.cache/okfit`,
/// `~/Library/Caches/okfit`, `%LOCALAPPDATA%\okfit\cache`). `None` when
/// `OKFIT_CACHE` is `off` or there is no such directory.
pub fn default_cache_root() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("OKFIT_CACHE").filter(|d| !d.is_empty()) {
        return (d != "off").then(|| PathBuf::from(d));
    }
    if cfg!(windows) {
        std::env::var_os("LOCALAPPDATA").map(|d| PathBuf::from(d).join("okfit").join("cache"))
    } else if cfg!(target_os = "macos") {
        home().map(|h| h.join("Library/Caches/okfit"))
    } else {
        std::env::var_os("XDG_CACHE_HOME")
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
            .or_else(|| home().map(|h| h.join(".cache")))
            .map(|d| d.join("okfit"))
    }
}

/// Whether `s` starts like a Windows drive path (`C:/…`, `C:\…`).
fn drive_path(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && matches!(b[2], b'/' | b'\\')
}

/// Rewrites `scheme://C:\x` and `scheme:C:/x` as `scheme:///C:/x`.
fn windows_form(s: &str) -> String {
    let (head, query) = match s.find('?') {
        Some(i) => (&s[..i], &s[i..]),
        None => (s, ""),
    };
    let Some(colon) = head.find(':') else {
        return s.to_string();
    };
    let scheme = &head[..=colon];
    if !scheme[..colon]
        .bytes()
        .all(|b| b.is_ascii_lowercase() || b == b'+')
    {
        return s.to_string();
    }
    let rest = head[colon + 1..].trim_start_matches('/');
    if drive_path(rest) {
        return format!("{scheme}///{}{query}", rest.replace('\\', "/"));
    }
    s.to_string()
}

/// `dsn` with every `token=` value replaced by `…`, for messages and logs.
pub fn masked(dsn: &str) -> String {
    let (head, query) = dsn.split_once('?').unwrap_or((dsn, ""));
    // A password in the authority (`user:secret@host`) is masked too.
    let head = match head.split_once("://") {
        Some((scheme, rest)) => {
            let authority = rest.split('/').next().unwrap_or(rest);
            match authority.rsplit_once('@') {
                Some((user, _)) if user.contains(':') => {
                    let name = user.split(':').next().unwrap_or_default();
                    format!("{scheme}://{name}:…@{}", &rest[user.len() + 1..])
                }
                _ => head.to_string(),
            }
        }
        None => head.to_string(),
    };
    if query.is_empty() && !dsn.contains('?') {
        return crate::error::truncate(&head);
    }
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, v)) if (k == "token" || k == "password") && !v.is_empty() => {
                format!("{k}=…")
            }
            _ => p.to_string(),
        })
        .collect();
    crate::error::truncate(&format!("{head}?{}", params.join("&")))
}

/// Parses a connection string with the reference's messages.
pub fn parse(dsn: &str) -> Result<Dsn, String> {
    let normalized = windows_form(dsn.trim());
    // Messages echo the string, never a token in it.
    let dsn = &masked(dsn);
    // URL parsing folds `..` (and `%2e%2e`) segments away; a connection
    // string that climbs out of the folder it names is refused instead.
    let head = normalized.split(['?', '#']).next().unwrap_or_default();
    if head.split(['/', '\\']).any(|seg| {
        let decoded = percent_encoding::percent_decode_str(seg).decode_utf8_lossy();
        decoded.contains('\0') || decoded.split(['/', '\\']).any(|s| s == "..")
    }) {
        return Err(format!(
            "invalid dsn \"{dsn}\": the path must not contain \"..\" or NUL (percent-encoded or not)"
        ));
    }
    let url = url::Url::parse(&normalized).map_err(|_| format!("invalid dsn \"{dsn}\""))?;
    let scheme = url.scheme().to_string();
    if scheme == "okf+postgres" || scheme == "okf+postgresql" {
        return postgres(&url, dsn);
    }
    let mut tenant = None;
    let mut token = None;
    for (k, v) in url.query_pairs() {
        let slot = match k.as_ref() {
            "tenant" => &mut tenant,
            "token" => &mut token,
            other => {
                return Err(format!(
                    "invalid dsn \"{dsn}\": unknown parameter \"{}\" (expected tenant or token)",
                    crate::error::truncate(other)
                ))
            }
        };
        if slot.is_some() {
            return Err(format!(
                "invalid dsn \"{dsn}\": {k} is given more than once"
            ));
        }
        *slot = Some(v.into_owned());
    }
    // An empty value counts as absent (reference §1.1).
    let tenant = tenant.filter(|t| !t.is_empty());
    let token = token.filter(|t| !t.is_empty());
    if let Some(t) = &tenant {
        names::check_tenant(t)?;
    }
    let path = || -> Result<PathBuf, String> {
        let raw = url.path();
        let decoded = percent_encoding::percent_decode_str(raw)
            .decode_utf8()
            .map_err(|_| format!("invalid dsn \"{dsn}\": the path is not valid UTF-8"))?;
        let p = decoded.as_ref();
        let p = match p.strip_prefix('/') {
            Some(rest) if drive_path(rest) => rest,
            _ => p,
        };
        Ok(PathBuf::from(p))
    };
    match scheme.as_str() {
        "okf" => {
            if let Some(host) = url.host_str().filter(|h| !h.is_empty()) {
                return Err(format!(
                    "invalid dsn \"{dsn}\": \"{host}\" reads as a host name, not a folder; write three slashes and an absolute path (okf:///abs/path)"
                ));
            }
            let p = path()?;
            let empty = p.as_os_str().is_empty() || p.as_os_str() == "/";
            if !empty && !p.is_absolute() && !p.to_str().is_some_and(drive_path) {
                return Err(format!(
                    "invalid dsn \"{dsn}\": the path must be absolute (okf:///abs/path)"
                ));
            }
            match (empty, tenant) {
                (true, None) => Err("embedded dsn needs ?tenant=".into()),
                (true, Some(tenant)) => Ok(Dsn::Store {
                    root: default_data_root()?,
                    tenant,
                }),
                (false, Some(tenant)) => Ok(Dsn::Store { root: p, tenant }),
                (false, None) => Ok(Dsn::Folder { path: p }),
            }
        }
        "okf+unix" => Ok(Dsn::Unix {
            socket: path()?,
            tenant,
            token,
        }),
        "okf+http" | "okf+https" => {
            let host = url
                .host_str()
                .filter(|h| !h.is_empty())
                .ok_or_else(|| format!("invalid dsn \"{dsn}\""))?;
            let proto = if scheme == "okf+https" {
                "https"
            } else {
                "http"
            };
            let origin = match url.port() {
                Some(p) => format!("{proto}://{host}:{p}"),
                None => format!("{proto}://{host}"),
            };
            Ok(Dsn::Http {
                origin,
                tenant,
                token,
            })
        }
        "okf+npipe" => {
            let mut name = format!("{}{}", url.host_str().unwrap_or(""), url.path());
            name = name
                .trim_start_matches("./")
                .trim_start_matches('.')
                .to_string();
            let name = name.trim_start_matches('/');
            let name = name.strip_prefix("pipe/").unwrap_or(name);
            Ok(Dsn::Npipe {
                pipe: format!("\\\\.\\pipe\\{}", name.replace('/', "\\")),
            })
        }
        "postgres" | "postgresql" => Err(format!(
            "invalid dsn \"{dsn}\": a PostgreSQL store is okf+postgres://user@host:5432/db?tenant=t"
        )),
        other => Err(format!(
            "unsupported dsn scheme \"{other}:\", expected one of {SCHEMES}"
        )),
    }
}

impl std::fmt::Display for Dsn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Dsn::Folder { path } => write!(f, "okf://{}", path.display()),
            Dsn::Store { root, tenant } => {
                write!(f, "okf://{}?tenant={tenant}", root.display())
            }
            Dsn::Unix { socket, tenant, .. } => {
                write!(f, "okf+unix://{}", socket.display())?;
                match tenant {
                    Some(t) => write!(f, "?tenant={t}"),
                    None => Ok(()),
                }
            }
            Dsn::Http { origin, .. } => write!(f, "okf+{origin}"),
            Dsn::Npipe { pipe } => write!(f, "okf+npipe:{pipe}"),
            Dsn::Postgres { url, tenant } => {
                // Never the password.
                let shown = crate::postgres::shown(url);
                write!(f, "okf+{shown}?tenant={tenant}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grammar() {
        assert_eq!(
            parse("okf:///var/data?tenant=acme").unwrap(),
            Dsn::Store {
                root: "/var/data".into(),
                tenant: "acme".into()
            }
        );
        assert_eq!(
            parse("okf:///abs/bundle").unwrap(),
            Dsn::Folder {
                path: "/abs/bundle".into()
            }
        );
        assert_eq!(
            parse("okf:///a%20b/c?tenant=").unwrap(),
            Dsn::Folder {
                path: "/a b/c".into()
            }
        );
        assert_eq!(
            parse("okf+unix:///tmp/okf.sock?tenant=acme").unwrap(),
            Dsn::Unix {
                socket: "/tmp/okf.sock".into(),
                tenant: Some("acme".into()),
                token: None
            }
        );
        assert_eq!(
            parse("okf+https://host:7777/ignored/path?token=abc").unwrap(),
            Dsn::Http {
                origin: "https://host:7777".into(),
                tenant: None,
                token: Some("abc".into())
            }
        );
        assert_eq!(
            parse("okf+http://host:7777?token=t").unwrap(),
            Dsn::Http {
                origin: "http://host:7777".into(),
                tenant: None,
                token: Some("t".into())
            }
        );
        assert_eq!(
            parse("okf+npipe://./pipe/okf").unwrap(),
            Dsn::Npipe {
                pipe: "\\\\.\\pipe\\okf".into()
            }
        );
        for w in [
            "okf://C:\\Users\\me\\data?tenant=a",
            "okf://C:/Users/me/data?tenant=a",
            "okf:///C:/Users/me/data?tenant=a",
        ] {
            assert_eq!(
                parse(w).unwrap(),
                Dsn::Store {
                    root: "C:/Users/me/data".into(),
                    tenant: "a".into()
                },
                "{w}"
            );
        }
    }

    #[test]
    fn postgres() {
        assert_eq!(
            parse("okf+postgres://u:secret@db:5433/kb?tenant=acme&sslmode=disable").unwrap(),
            Dsn::Postgres {
                url: "postgres://u:secret@db:5433/kb?sslmode=disable".into(),
                tenant: "acme".into()
            }
        );
        let d = parse("okf+postgres://u:secret@db/kb?tenant=acme").unwrap();
        assert_eq!(d.to_string(), "okf+postgres://u@db/kb?tenant=acme");
        assert!(d.has_revisions());
        for (bad, says) in [
            ("okf+postgres://db/kb", "needs ?tenant="),
            ("okf+postgres://db/kb?tenant=a&tenant=b", "more than once"),
            ("okf+postgres:///kb?tenant=a", "name the PostgreSQL host"),
            ("postgres://db/kb?tenant=a", "okf+postgres://"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(says), "{bad}: {e}");
            assert!(!e.contains("secret"));
        }
        let e = parse("okf+postgres://u:secret@db/kb").unwrap_err();
        assert!(!e.contains("secret"), "{e}");
    }

    #[test]
    fn errors() {
        assert_eq!(parse("not a url").unwrap_err(), "invalid dsn \"not a url\"");
        assert_eq!(
            parse("ftp://x").unwrap_err(),
            "unsupported dsn scheme \"ftp:\", expected one of okf:, okf+unix:, okf+npipe:, okf+http:, okf+https:"
        );
        assert_eq!(parse("okf://").unwrap_err(), "embedded dsn needs ?tenant=");
        assert_eq!(
            parse("okf:///d?tenant=a%20b").unwrap_err(),
            "invalid tenant id \"a b\": expected 1-64 chars of [a-z0-9_-]"
        );
        assert!(parse("okf://data?tenant=a")
            .unwrap_err()
            .contains("\"data\" reads as a host name"));
        assert!(parse("okf://./data")
            .unwrap_err()
            .contains("reads as a host"));
    }
}
