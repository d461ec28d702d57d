//! The client side of `okfit serve`: blocking HTTP/1.1 through `ureq` over
//! a unix socket, TCP or TLS (rustls with ring), with kept-alive
//! connections reused by the agent and the manifest cached by its ETag.
//! Requests and answers are the types of [`crate::wire`].
//!
//! `ureq` is synchronous, so the MCP server may call it from an async
//! worker without a nested runtime. The unix socket is reached through
//! ureq's `unversioned` transport API (see the `transport` module), which
//! is outside ureq's semver promise: the dependency is pinned to `~3.5`
//! for that reason.

use okfit_store::error::{Error, Kind};
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use transport::{Dial, Lookup, Unreachable};
use ureq::unversioned::transport::{Connector, RustlsConnector};

mod transport;

/// Where the daemon is.
#[derive(Clone, Debug)]
pub enum Target {
    /// A unix socket.
    Unix(PathBuf),
    /// TCP, with TLS or not.
    Tcp {
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
        /// `https`.
        tls: bool,
    },
}

impl fmt::Display for Target {
    /// The socket's path, or the origin (`https://host:port`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Target::Unix(p) => write!(f, "{}", p.display()),
            Target::Tcp { host, port, tls } => {
                write!(f, "{}://{host}:{port}", if *tls { "https" } else { "http" })
            }
        }
    }
}

/// A response.
#[derive(Debug)]
pub struct Reply {
    /// Status code.
    pub status: u16,
    /// Headers, names lowercased.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

impl Reply {
    /// The reply when its status is 2xx or 304; any other status as the
    /// error it stands for.
    pub fn ok(self) -> Result<Reply, Error> {
        if (200..300).contains(&self.status) || self.status == 304 {
            return Ok(self);
        }
        Err(status_error(&self))
    }

    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body as text.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A connection to a running `okfit serve`.
pub struct Remote {
    target: Target,
    tenant: Option<String>,
    token: Option<String>,
    agent: ureq::Agent,
    /// `http://okfit` on a unix socket, else the target's origin.
    origin: String,
    manifests: Mutex<HashMap<String, (String, Arc<str>)>>,
}

/// The roots a TLS connection trusts, as ureq takes them.
fn tls_roots() -> Result<Vec<ureq::tls::Certificate<'static>>, Error> {
    Ok(okfit_store::tls::trusted_roots()?
        .iter()
        .map(|c| ureq::tls::Certificate::from_der(c.as_ref()).to_owned())
        .collect())
}

/// The agent for `target`: statuses are answers, not errors; no proxy
/// from the environment, no redirects; TLS through rustls with ring.
fn agent(target: &Target) -> Result<ureq::Agent, Error> {
    let mut config = ureq::config::Config::builder()
        .http_status_as_error(false)
        .proxy(None)
        .max_redirects(0)
        .max_idle_connections(1)
        .max_idle_connections_per_host(1)
        .no_delay(true);
    if let Target::Tcp { tls: true, .. } = target {
        let tls = ureq::tls::TlsConfig::builder()
            .provider(ureq::tls::TlsProvider::Rustls)
            .root_certs(ureq::tls::RootCerts::Specific(Arc::new(tls_roots()?)))
            .unversioned_rustls_crypto_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .build();
        config = config.tls_config(tls);
    }
    let dial = Dial {
        target: target.clone(),
    };
    Ok(ureq::Agent::with_parts(
        config.build(),
        dial.chain(RustlsConnector::default()),
        Lookup {
            target: target.clone(),
        },
    ))
}

fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

impl Remote {
    /// A client for `target`; nothing is connected until the first call.
    pub fn new(
        target: Target,
        tenant: Option<String>,
        token: Option<String>,
    ) -> Result<Remote, Error> {
        let origin = match &target {
            Target::Unix(_) => "http://okfit".to_string(),
            Target::Tcp { host, port, tls } => {
                let host = if host.contains(':') {
                    format!("[{host}]")
                } else {
                    host.clone()
                };
                format!("{}://{host}:{port}", if *tls { "https" } else { "http" })
            }
        };
        Ok(Remote {
            agent: agent(&target)?,
            target,
            tenant,
            token,
            origin,
            manifests: Mutex::new(HashMap::new()),
        })
    }

    /// The error a failed exchange becomes, naming the daemon.
    fn failure(&self, e: ureq::Error) -> Error {
        let at = &self.target;
        match e {
            ureq::Error::Other(inner) => match inner.downcast::<Unreachable>() {
                Ok(u) => Error::Io(format!(
                    "cannot reach okfit serve at {at} ({}); is it running?",
                    u.0
                )),
                Err(other) => Error::Io(format!(
                    "okfit serve at {at} closed the connection ({other})"
                )),
            },
            ureq::Error::Io(io)
                if io
                    .get_ref()
                    .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some()) =>
            {
                Error::Io(format!("tls with {at}: {io}"))
            }
            ureq::Error::Rustls(t) => Error::Io(format!("tls with {at}: {t}")),
            ureq::Error::Tls(t) => Error::Io(format!("tls with {at}: {t}")),
            ureq::Error::Io(io) => {
                Error::Io(format!("okfit serve at {at} closed the connection ({io})"))
            }
            other => Error::Io(format!(
                "okfit serve at {at} closed the connection ({other})"
            )),
        }
    }

    /// Sends one request to `/v1[/{tenant}]/{path}`; every status is an
    /// answer.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<Reply, Error> {
        #[cfg(not(unix))]
        if let Target::Unix(_) = self.target {
            return Err(Error::Usage(
                "unix sockets are not available here: connect with okf+http://127.0.0.1:PORT?token=...".into(),
            ));
        }
        let uri = match &self.tenant {
            Some(t) => format!("{}/v1/{}/{path}", self.origin, enc(t)),
            None => format!("{}/v1/{path}", self.origin),
        };
        let mut req = ureq::http::Request::builder().method(method).uri(&uri);
        if let Some(t) = &self.token {
            req = req.header("authorization", format!("Bearer {t}"));
        }
        if !body.is_empty() {
            req = req.header("content-type", "application/json");
        }
        for (k, v) in headers {
            req = req.header(*k, v.as_str());
        }
        let req = req
            .body(body)
            .map_err(|e| Error::Usage(format!("cannot send {method} {uri} ({e})")))?;
        let reply = self.agent.run(req).map_err(|e| self.failure(e))?;
        let status = reply.status().as_u16();
        let headers = reply
            .headers()
            .iter()
            .map(|(n, v)| {
                (
                    n.as_str().to_ascii_lowercase(),
                    String::from_utf8_lossy(v.as_bytes()).trim().to_string(),
                )
            })
            .collect();
        // Answers are as large as the store's documents: no cap here.
        let body = reply
            .into_body()
            .into_with_config()
            .limit(u64::MAX)
            .read_to_vec()
            .map_err(|e| self.failure(e))?;
        Ok(Reply {
            status,
            headers,
            body,
        })
    }

    /// The manifest, revalidated by ETag.
    pub fn manifest(&self, bundle: Option<&str>) -> Result<Arc<str>, Error> {
        let key = bundle.unwrap_or("").to_string();
        let query = crate::wire::ManifestQuery {
            bundle: bundle.map(str::to_string),
        };
        let path = with_query("manifest", &query);
        let cached = self
            .manifests
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&key)
            .cloned();
        let headers: Vec<(&str, String)> = match &cached {
            Some((etag, _)) => vec![("if-none-match", etag.clone())],
            None => vec![],
        };
        let r = self.request("GET", &path, &headers, b"")?.ok()?;
        if r.status == 304 {
            if let Some((_, m)) = cached {
                return Ok(m);
            }
        }
        let text: Arc<str> = Arc::from(r.text());
        if let Some(etag) = r.header("etag") {
            self.manifests
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(key, (etag.to_string(), text.clone()));
        }
        Ok(text)
    }

    /// POSTs `body` as JSON and reads the JSON answer.
    pub fn post_json<B: Serialize, A: DeserializeOwned>(
        &self,
        path: &str,
        body: &B,
    ) -> Result<A, Error> {
        let r = self.request("POST", path, &[], &to_json(body)?)?.ok()?;
        decode(path, &r.body)
    }

    /// GETs a JSON answer.
    pub fn get_json<A: DeserializeOwned>(&self, path: &str) -> Result<A, Error> {
        let r = self.request("GET", path, &[], b"")?.ok()?;
        decode(path, &r.body)
    }

    /// Percent-encodes one path segment.
    pub fn seg(s: &str) -> String {
        enc(s)
    }
}

/// `path?query`, or `path` alone when the query is empty.
fn with_query<Q: Serialize>(path: &str, query: &Q) -> String {
    match serde_urlencoded::to_string(query) {
        Ok(q) if !q.is_empty() => format!("{path}?{q}"),
        _ => path.to_string(),
    }
}

/// A request body's JSON.
fn to_json<B: Serialize>(body: &B) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(body).map_err(|e| Error::Usage(format!("cannot write a request ({e})")))
}

/// An answer's JSON as `A`.
fn decode<A: DeserializeOwned>(path: &str, body: &[u8]) -> Result<A, Error> {
    serde_json::from_slice(body).map_err(|e| {
        Error::Io(format!(
            "okfit serve answered {path} with invalid JSON ({e})"
        ))
    })
}

/// The error for a non-2xx answer: conflicts keep their kind, refusals
/// their message, anything else names the status.
pub fn status_error(r: &Reply) -> Error {
    let body = r.text();
    if let Ok(e) = serde_json::from_str::<crate::wire::ErrorBody>(&body) {
        return if e.code == crate::wire::CONFLICT {
            Error::Conflict(e.message)
        } else {
            Error::Refused(e.message)
        };
    }
    // The daemon names the kind of its errors in a header of their own.
    if let Some(kind) = r.header("okfit-error").and_then(Kind::from_wire) {
        return Error::from_wire(kind, body);
    }
    match r.status {
        400 | 404 | 412 | 413 | 428 => Error::Refused(body),
        _ => Error::Refused(format!("okfit server returned {}: {body}", r.status)),
    }
}

/// The knowledge operations over a daemon: the same results as the
/// embedded store gives.
pub mod ops {
    use super::{status_error, to_json, with_query, Remote, Reply};
    use crate::options::GetOptions;
    use crate::wire::{
        Batch, BatchChange, DiagnosticsAnswer, DiagnosticsRequest, ErrorBody, GetAnswer,
        GetRequest, HistoryQuery, Operation, RestoreRequest, RevisionAnswer, SearchRequest,
        SnapshotAnswer, SourceEntry, SyncRequest, PRECONDITION,
    };
    use okfit_core::kb::model::Fetched;
    use okfit_store::change::{
        sha256_hex, Change, CommitError, Committed, Pre, Precondition, RevisionPage,
    };
    use okfit_store::error::Error;
    use okfit_store::sqlite::RevisionInfo;
    use std::collections::HashMap;

    /// `snapshot`.
    pub fn snapshot(r: &Remote) -> Result<(String, usize), Error> {
        let a: SnapshotAnswer = r.get_json("snapshot")?;
        Ok((a.snapshot, a.concepts))
    }

    /// `search`.
    pub fn search(
        r: &Remote,
        q: &str,
        k: usize,
        bundle: Option<&str>,
        expand: bool,
    ) -> Result<String, Error> {
        let body = SearchRequest {
            q: q.to_string(),
            k: Some(k as u64),
            expand: Some(expand),
            bundle: bundle.map(str::to_string),
        };
        Ok(r.request("POST", "search", &[], &to_json(&body)?)?
            .ok()?
            .text())
    }

    /// `get`, structured.
    pub fn get(r: &Remote, ids: &[String], opts: &GetOptions) -> Result<Fetched, Error> {
        let answer: GetAnswer = r.post_json("get", &GetRequest::new(ids, opts))?;
        let mut by_id: HashMap<String, _> = answer.0.into_iter().collect();
        let mut found = vec![];
        let mut missing = vec![];
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            if !seen.insert(id.as_str()) {
                continue;
            }
            match by_id.remove(id) {
                Some(s) => found.push((id.clone(), s.into())),
                None => missing.push(id.clone()),
            }
        }
        Ok((found, missing))
    }

    /// Every document `(bundle, path, hash)`.
    pub fn list_sources(r: &Remote) -> Result<Vec<(String, String, String)>, Error> {
        let list: Vec<SourceEntry> = r.get_json("source")?;
        Ok(list
            .into_iter()
            .map(|d| (d.bundle, d.path, d.hash))
            .collect())
    }

    fn source_path(bundle: &str, path: &str) -> String {
        let mut p = format!("source/{}", Remote::seg(bundle));
        for s in path.split('/') {
            p.push('/');
            p.push_str(&Remote::seg(s));
        }
        p
    }

    /// One document's bytes and hash.
    pub fn read_source(
        r: &Remote,
        bundle: &str,
        path: &str,
    ) -> Result<Option<(Vec<u8>, String)>, Error> {
        let reply = r.request("GET", &source_path(bundle, path), &[], b"")?;
        match reply.status {
            200 => {
                let hash = reply
                    .header("etag")
                    .map(|e| e.trim_matches('"').to_string())
                    .unwrap_or_else(|| sha256_hex(&reply.body));
                Ok(Some((reply.body, hash)))
            }
            404 if reply.text() == "concept does not exist" => Ok(None),
            _ => Err(status_error(&reply)),
        }
    }

    /// The validator's findings for a document as it would be stored.
    pub fn diagnostics(
        r: &Remote,
        bundle: &str,
        path: &str,
        text: &str,
    ) -> Result<Vec<okfit_store::change::Finding>, Error> {
        let body = DiagnosticsRequest {
            bundle: bundle.to_string(),
            path: path.to_string(),
            content: text.to_string(),
        };
        let reply = r
            .request("POST", "diagnostics", &[], &to_json(&body)?)?
            .ok()?;
        serde_json::from_slice::<DiagnosticsAnswer>(&reply.body)
            .map(|a| a.findings)
            .map_err(|e| match e.classify() {
                serde_json::error::Category::Data => {
                    Error::Io(format!("okfit serve sent findings okfit cannot read ({e})"))
                }
                _ => Error::Io(format!(
                    "okfit serve answered diagnostics with invalid JSON ({e})"
                )),
            })
    }

    /// A commit's answer as the store's [`Committed`]; the hashes are
    /// those of the contents sent.
    fn committed(a: RevisionAnswer, changes: &[Change]) -> Committed {
        Committed {
            revision: a.revision.map(|rev| RevisionInfo {
                revision: rev,
                parent: None,
                snapshot: a.snapshot.clone(),
                created: String::new(),
                concepts: a.concepts,
                bundles: a.bundles.clone(),
            }),
            snapshot: a.snapshot,
            concepts: a.concepts,
            bundles: a.bundles,
            hashes: changes
                .iter()
                .map(|c| c.content.as_deref().map(sha256_hex))
                .collect(),
        }
    }

    /// A refused commit: a failed precondition names its change.
    fn commit_failure(reply: &Reply) -> CommitError {
        if let Ok(e) = serde_json::from_slice::<ErrorBody>(&reply.body) {
            if let (true, Some(c)) = (e.code == PRECONDITION, &e.change) {
                return CommitError::Precondition {
                    index: c.index,
                    failure: Precondition {
                        message: e.message,
                        current: c.current.clone(),
                    },
                };
            }
        }
        CommitError::Other(status_error(reply))
    }

    /// Commits changes as one transaction on the daemon.
    pub fn commit(
        r: &Remote,
        changes: &[Change],
        expected: Option<&str>,
    ) -> Result<Committed, CommitError> {
        let mut current: Option<HashMap<(String, String), String>> = None;
        let mut lookup = |b: &str, p: &str| -> Result<Option<String>, Error> {
            if current.is_none() {
                current = Some(
                    list_sources(r)
                        .or_else(|e| match e {
                            Error::NoTenant(_) => Ok(vec![]),
                            e => Err(e),
                        })?
                        .into_iter()
                        .map(|(b, p, h)| ((b, p), h))
                        .collect(),
                );
            }
            Ok(current
                .as_ref()
                .and_then(|m| m.get(&(b.to_string(), p.to_string())).cloned()))
        };
        let mut items = vec![];
        for (i, c) in changes.iter().enumerate() {
            let (operation, content, replaces) = match (&c.content, &c.pre) {
                (Some(bytes), pre) => {
                    let replaces = match pre {
                        Pre::Hash(h) => Some(h.clone()),
                        Pre::Any => lookup(&c.bundle, &c.path)?,
                        Pre::Create => None,
                    };
                    let text = String::from_utf8_lossy(bytes).into_owned();
                    (Operation::Write, Some(text), replaces)
                }
                (None, Pre::Hash(h)) => (Operation::Delete, None, Some(h.clone())),
                (None, pre) => match (lookup(&c.bundle, &c.path)?, pre) {
                    (Some(h), Pre::Any) => (Operation::Delete, None, Some(h)),
                    (Some(h), _) => {
                        return Err(CommitError::Precondition {
                            index: i,
                            failure: Precondition {
                                message: "deleting needs the hash of the version being removed"
                                    .into(),
                                current: Some(h),
                            },
                        })
                    }
                    (None, _) => {
                        return Err(CommitError::Precondition {
                            index: i,
                            failure: Precondition {
                                message: "concept does not exist".into(),
                                current: None,
                            },
                        })
                    }
                },
            };
            items.push(BatchChange {
                operation,
                bundle: c.bundle.clone(),
                path: c.path.clone(),
                content,
                replaces,
            });
        }
        let body = Batch {
            changes: items,
            expected_revision: expected.map(str::to_string),
        };
        commit_post(r, "transact", &body, changes)
    }

    /// `restore`.
    pub fn restore(r: &Remote, revision: &str, expected: &str) -> Result<Committed, CommitError> {
        let body = RestoreRequest {
            revision: revision.to_string(),
            expected_revision: expected.to_string(),
            names_tenant: false,
        };
        commit_post(r, "restore", &body, &[])
    }

    /// POSTs a commit (`transact`, `restore`) and reads its revision.
    fn commit_post<B: serde::Serialize>(
        r: &Remote,
        verb: &str,
        body: &B,
        changes: &[Change],
    ) -> Result<Committed, CommitError> {
        let reply = r.request("POST", verb, &[], &to_json(body)?)?;
        if reply.status != 200 {
            return Err(commit_failure(&reply));
        }
        let a: RevisionAnswer = super::decode(verb, &reply.body)?;
        Ok(committed(a, changes))
    }

    /// `history`.
    pub fn history(r: &Remote, before: Option<&str>, limit: usize) -> Result<RevisionPage, Error> {
        let query = HistoryQuery {
            limit: Some(limit),
            before: before.map(str::to_string),
        };
        let path = with_query("history", &query);
        let reply = r.request("GET", &path, &[], b"")?.ok()?;
        serde_json::from_slice(&reply.body).map_err(|e| match e.classify() {
            serde_json::error::Category::Data => Error::Io(format!(
                "okfit serve answered history with an unexpected page ({e})"
            )),
            _ => Error::Io(format!(
                "okfit serve answered {path} with invalid JSON ({e})"
            )),
        })
    }

    /// The head revision.
    pub fn head(r: &Remote) -> Result<Option<String>, Error> {
        let a: RevisionAnswer = r.post_json("sync", &SyncRequest {})?;
        Ok(a.revision)
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::os::unix::net::UnixListener;

    /// Reads one request's head and body from `r`; `None` at the end.
    fn read_request(r: &mut BufReader<std::os::unix::net::UnixStream>) -> Option<String> {
        let mut head = String::new();
        loop {
            let mut line = String::new();
            if r.read_line(&mut line).ok()? == 0 {
                return None;
            }
            if line == "\r\n" {
                break;
            }
            head.push_str(&line);
        }
        let len = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse::<usize>().ok())?
            })
            .unwrap_or(0);
        let mut body = vec![0u8; len];
        r.read_exact(&mut body).ok()?;
        Some(head + &String::from_utf8_lossy(&body))
    }

    #[test]
    fn one_kept_alive_unix_connection_carries_chunked_and_sized_answers() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("d.sock");
        let listener = UnixListener::bind(&sock).unwrap();
        let server = std::thread::spawn(move || {
            // One connection only: a second one would never be accepted.
            let (s, _) = listener.accept().unwrap();
            let mut w = s.try_clone().unwrap();
            let mut r = BufReader::new(s);
            let mut seen = vec![];
            let first = read_request(&mut r).unwrap();
            w.write_all(
                b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\ncontent-type: application/json\r\n\r\n\
                  d\r\n{\"snapshot\":\"\r\n12\r\nabc\",\"concepts\":7}\r\n0\r\n\r\n",
            )
            .unwrap();
            seen.push(first);
            let second = read_request(&mut r).unwrap();
            let conflict = r#"{"code":"CONFLICT","message":"database moved"}"#;
            let reply = format!(
                "HTTP/1.1 409 Conflict\r\ncontent-length: {}\r\n\r\n{conflict}",
                conflict.len()
            );
            w.write_all(reply.as_bytes()).unwrap();
            seen.push(second);
            seen
        });
        let remote = Remote::new(
            Target::Unix(sock),
            Some("acme".into()),
            Some("s3cret".into()),
        )
        .unwrap();
        assert_eq!(ops::snapshot(&remote).unwrap(), ("abc".to_string(), 7));
        let err = ops::head(&remote).unwrap_err();
        assert!(
            matches!(&err, Error::Conflict(m) if m == "database moved"),
            "{err:?}"
        );
        let seen = server.join().unwrap();
        assert!(
            seen[0].starts_with("GET /v1/acme/snapshot HTTP/1.1\r\n"),
            "{seen:?}"
        );
        assert!(
            seen[0].contains("authorization: Bearer s3cret\r\n"),
            "{seen:?}"
        );
        assert!(
            seen[1].starts_with("POST /v1/acme/sync HTTP/1.1\r\n"),
            "{seen:?}"
        );
        assert!(seen[1].ends_with("\r\n{}"), "{seen:?}");
    }

    #[test]
    fn a_missing_socket_is_named_with_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let sock = dir.path().join("none.sock");
        let remote = Remote::new(Target::Unix(sock.clone()), Some("t".into()), None).unwrap();
        let err = ops::snapshot(&remote).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("cannot reach okfit serve at {} (", sock.display()))
                && err.ends_with("); is it running?"),
            "{err}"
        );
    }

    #[test]
    fn a_refused_tcp_port_is_named_with_its_origin() {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let target = Target::Tcp {
            host: "127.0.0.1".into(),
            port,
            tls: false,
        };
        let remote = Remote::new(target, None, Some("t".into())).unwrap();
        let err = ops::snapshot(&remote).unwrap_err().to_string();
        assert!(
            err.starts_with(&format!(
                "cannot reach okfit serve at http://127.0.0.1:{port} ("
            )) && err.ends_with("); is it running?"),
            "{err}"
        );
    }
}
