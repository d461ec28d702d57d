//! The client side of `okfit serve`: a small blocking HTTP/1.1 client over
//! a unix socket, TCP or TLS (rustls; responses parsed by httparse), with
//! one kept-alive connection and the manifest cached by its ETag.

use okfit_store::error::{Error, Kind};
use serde_json::Value;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

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

enum Stream {
    #[cfg(unix)]
    Unix(std::os::unix::net::UnixStream),
    Tcp(std::net::TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, std::net::TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            #[cfg(unix)]
            Stream::Unix(s) => s.read(buf),
            Stream::Tcp(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            #[cfg(unix)]
            Stream::Unix(s) => s.write(buf),
            Stream::Tcp(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            #[cfg(unix)]
            Stream::Unix(s) => s.flush(),
            Stream::Tcp(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
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
    conn: Mutex<Option<Stream>>,
    tls: Option<Arc<rustls::ClientConfig>>,
    manifests: Mutex<HashMap<String, (String, Arc<str>)>>,
}

fn tls_config() -> Result<Arc<rustls::ClientConfig>, Error> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::CertificateDer;
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls_native_certs::load_native_certs().certs {
        let _ = roots.add(c);
    }
    // OKFIT_TLS_CA: a PEM file of extra roots (a private CA, a test cert).
    if let Some(ca) = std::env::var_os("OKFIT_TLS_CA").filter(|v| !v.is_empty()) {
        let certs = CertificateDer::pem_file_iter(&ca).map_err(|e| {
            Error::Usage(format!(
                "OKFIT_TLS_CA: cannot read {} ({e})",
                PathBuf::from(&ca).display()
            ))
        })?;
        for c in certs.flatten() {
            roots
                .add(c)
                .map_err(|e| Error::Usage(format!("OKFIT_TLS_CA: {e}")))?;
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Usage(format!("tls: {e}")))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
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
        let tls = match &target {
            Target::Tcp { tls: true, .. } => Some(tls_config()?),
            _ => None,
        };
        Ok(Remote {
            target,
            tenant,
            token,
            conn: Mutex::new(None),
            tls,
            manifests: Mutex::new(HashMap::new()),
        })
    }

    fn describe(&self) -> String {
        match &self.target {
            Target::Unix(p) => p.display().to_string(),
            Target::Tcp { host, port, tls } => {
                format!("{}://{host}:{port}", if *tls { "https" } else { "http" })
            }
        }
    }

    fn connect(&self) -> Result<Stream, Error> {
        let fail = |e: std::io::Error| {
            Error::Io(format!(
                "cannot reach okfit serve at {} ({e}); is it running?",
                self.describe()
            ))
        };
        match &self.target {
            #[cfg(unix)]
            Target::Unix(p) => Ok(Stream::Unix(
                std::os::unix::net::UnixStream::connect(p).map_err(fail)?,
            )),
            #[cfg(not(unix))]
            Target::Unix(_) => Err(Error::Usage(
                "unix sockets are not available here: connect with okf+http://127.0.0.1:PORT?token=...".into(),
            )),
            Target::Tcp { host, port, tls } => {
                let s = std::net::TcpStream::connect((host.as_str(), *port)).map_err(fail)?;
                let _ = s.set_nodelay(true);
                if !tls {
                    return Ok(Stream::Tcp(s));
                }
                let cfg = self
                    .tls
                    .clone()
                    .ok_or_else(|| Error::Usage("tls is not configured".into()))?;
                let name = rustls::pki_types::ServerName::try_from(host.clone())
                    .map_err(|e| Error::Usage(format!("{host}: not a server name for tls ({e})")))?;
                let c = rustls::ClientConnection::new(cfg, name)
                    .map_err(|e| Error::Io(format!("tls: {e}")))?;
                Ok(Stream::Tls(Box::new(rustls::StreamOwned::new(c, s))))
            }
        }
    }

    /// Sends one request to `/v1[/{tenant}]/{path}`.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<Reply, Error> {
        let full = match &self.tenant {
            Some(t) => format!("/v1/{}/{path}", enc(t)),
            None => format!("/v1/{path}"),
        };
        let host = match &self.target {
            Target::Unix(_) => "okfit".to_string(),
            Target::Tcp { host, port, .. } => format!("{host}:{port}"),
        };
        let mut head = format!(
            "{method} {full} HTTP/1.1\r\nhost: {host}\r\ncontent-length: {}\r\n",
            body.len()
        );
        if let Some(t) = &self.token {
            head.push_str(&format!("authorization: Bearer {t}\r\n"));
        }
        if !body.is_empty() {
            head.push_str("content-type: application/json\r\n");
        }
        for (k, v) in headers {
            head.push_str(&format!("{k}: {v}\r\n"));
        }
        head.push_str("\r\n");
        // One write: head and body leave together.
        let mut message = head.into_bytes();
        message.extend_from_slice(body);
        let mut guard = self.conn.lock().unwrap_or_else(|p| p.into_inner());
        // A kept-alive connection the server closed fails at once: retry
        // once on a fresh one.
        for attempt in 0..2 {
            let fresh = guard.is_none();
            if fresh {
                *guard = Some(self.connect()?);
            }
            let Some(stream) = guard.as_mut() else {
                continue;
            };
            let sent = stream.write_all(&message).and_then(|_| stream.flush());
            let r = match sent {
                Ok(()) => read_reply(stream, method == "HEAD"),
                Err(e) => Err(e),
            };
            match r {
                Ok((reply, keep)) => {
                    if !keep {
                        *guard = None;
                    }
                    return Ok(reply);
                }
                Err(e) => {
                    *guard = None;
                    if fresh || attempt == 1 {
                        let tls = e
                            .get_ref()
                            .is_some_and(|inner| inner.downcast_ref::<rustls::Error>().is_some());
                        return Err(Error::Io(if tls {
                            format!("tls with {}: {e}", self.describe())
                        } else {
                            format!(
                                "okfit serve at {} closed the connection ({e})",
                                self.describe()
                            )
                        }));
                    }
                }
            }
        }
        Err(Error::Io(format!(
            "okfit serve at {} did not answer",
            self.describe()
        )))
    }

    /// A request whose non-2xx answers become errors naming the status.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, String)],
        body: &[u8],
    ) -> Result<Reply, Error> {
        let r = self.request(method, path, headers, body)?;
        if (200..300).contains(&r.status) || r.status == 304 {
            return Ok(r);
        }
        Err(status_error(&r))
    }

    /// The manifest, revalidated by ETag.
    pub fn manifest(&self, bundle: Option<&str>) -> Result<Arc<str>, Error> {
        let key = bundle.unwrap_or("").to_string();
        let path = match bundle {
            Some(b) => format!("manifest?bundle={}", enc(b)),
            None => "manifest".into(),
        };
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
        let r = self.call("GET", &path, &headers, b"")?;
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

    /// POSTs JSON and parses the JSON answer.
    pub fn post_json(&self, path: &str, v: &Value) -> Result<Value, Error> {
        let r = self.call("POST", path, &[], v.to_string().as_bytes())?;
        serde_json::from_slice(&r.body).map_err(|e| {
            Error::Io(format!(
                "okfit serve answered {path} with invalid JSON ({e})"
            ))
        })
    }

    /// GETs JSON.
    pub fn get_json(&self, path: &str) -> Result<Value, Error> {
        let r = self.call("GET", path, &[], b"")?;
        serde_json::from_slice(&r.body).map_err(|e| {
            Error::Io(format!(
                "okfit serve answered {path} with invalid JSON ({e})"
            ))
        })
    }

    /// Percent-encodes one path segment.
    pub fn seg(s: &str) -> String {
        enc(s)
    }
}

/// The error for a non-2xx answer: conflicts keep their kind, refusals
/// their message, anything else names the status.
pub fn status_error(r: &Reply) -> Error {
    let body = r.text();
    if let Ok(v) = serde_json::from_str::<Value>(&body) {
        if let Some(m) = v.get("message").and_then(Value::as_str) {
            return match v.get("code").and_then(Value::as_str) {
                Some("CONFLICT") => Error::Conflict(m.to_string()),
                _ => Error::Refused(m.to_string()),
            };
        }
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

/// Reads one response; also says whether the connection stays open.
fn read_reply(s: &mut Stream, head_only: bool) -> std::io::Result<(Reply, bool)> {
    let mut buf: Vec<u8> = Vec::with_capacity(8192);
    let mut chunk = [0u8; 16384];
    let (status, headers, body_start) = loop {
        let n = s.read(&mut chunk)?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "connection closed before a response",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
        let mut hs = [httparse::EMPTY_HEADER; 32];
        let mut resp = httparse::Response::new(&mut hs);
        match resp.parse(&buf) {
            Ok(httparse::Status::Complete(len)) => {
                let headers: Vec<(String, String)> = resp
                    .headers
                    .iter()
                    .map(|h| {
                        (
                            h.name.to_ascii_lowercase(),
                            String::from_utf8_lossy(h.value).trim().to_string(),
                        )
                    })
                    .collect();
                break (resp.code.unwrap_or(0), headers, len);
            }
            Ok(httparse::Status::Partial) => {
                if buf.len() > 1 << 20 {
                    return Err(std::io::Error::other("response headers too large"));
                }
            }
            Err(e) => return Err(std::io::Error::other(format!("bad response: {e}"))),
        }
    };
    let get = |n: &str| headers.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
    let keep = !get("connection").is_some_and(|c| c.eq_ignore_ascii_case("close"));
    let mut body = buf.split_off(body_start);
    if head_only || status == 304 || status == 204 || (100..200).contains(&status) {
        return Ok((
            Reply {
                status,
                headers,
                body: vec![],
            },
            keep,
        ));
    }
    if let Some(len) = get("content-length").and_then(|l| l.parse::<usize>().ok()) {
        while body.len() < len {
            let n = s.read(&mut chunk)?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "connection closed inside a response",
                ));
            }
            body.extend_from_slice(&chunk[..n]);
        }
        body.truncate(len);
        return Ok((
            Reply {
                status,
                headers,
                body,
            },
            keep,
        ));
    }
    if get("transfer-encoding").is_some_and(|t| t.eq_ignore_ascii_case("chunked")) {
        let mut out = vec![];
        let mut raw = body;
        loop {
            // Need a full size line.
            let pos = loop {
                if let Some(p) = raw.windows(2).position(|w| w == b"\r\n") {
                    break p;
                }
                let n = s.read(&mut chunk)?;
                if n == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "connection closed inside a chunk",
                    ));
                }
                raw.extend_from_slice(&chunk[..n]);
            };
            let line = String::from_utf8_lossy(&raw[..pos]).to_string();
            let size = usize::from_str_radix(line.split(';').next().unwrap_or("").trim(), 16)
                .map_err(|_| std::io::Error::other("bad chunk size"))?;
            raw.drain(..pos + 2);
            while raw.len() < size + 2 {
                let n = s.read(&mut chunk)?;
                if n == 0 {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::UnexpectedEof,
                        "connection closed inside a chunk",
                    ));
                }
                raw.extend_from_slice(&chunk[..n]);
            }
            if size == 0 {
                break;
            }
            out.extend_from_slice(&raw[..size]);
            raw.drain(..size + 2);
        }
        return Ok((
            Reply {
                status,
                headers,
                body: out,
            },
            keep,
        ));
    }
    // No length: the body runs to the end of the connection.
    s.read_to_end(&mut body)?;
    Ok((
        Reply {
            status,
            headers,
            body,
        },
        false,
    ))
}

/// The knowledge operations over a daemon: the same results as the
/// embedded store gives.
pub mod ops {
    use super::{status_error, Remote};
    use crate::options::GetOptions;
    use okfit_core::kb::model::Fetched;
    use okfit_core::kb::slice::Slice;
    use okfit_store::change::{
        sha256_hex, Change, CommitError, Committed, Pre, Precondition, RevisionPage,
    };
    use okfit_store::error::Error;
    use okfit_store::sqlite::RevisionInfo;
    use serde_json::{json, Value};
    use std::collections::HashMap;

    /// `snapshot`.
    pub fn snapshot(r: &Remote) -> Result<(String, usize), Error> {
        let v = r.get_json("snapshot")?;
        Ok((
            v["snapshot"].as_str().unwrap_or_default().to_string(),
            v["concepts"].as_u64().unwrap_or(0) as usize,
        ))
    }

    /// `search`.
    pub fn search(
        r: &Remote,
        q: &str,
        k: usize,
        bundle: Option<&str>,
        expand: bool,
    ) -> Result<String, Error> {
        let mut body = json!({"q": q, "k": k, "expand": expand});
        if let Some(b) = bundle {
            body["bundle"] = json!(b);
        }
        Ok(r.call("POST", "search", &[], body.to_string().as_bytes())?
            .text())
    }

    /// `get`, structured.
    pub fn get(r: &Remote, ids: &[String], opts: &GetOptions) -> Result<Fetched, Error> {
        let mut body = json!({"ids": ids});
        if let Some(s) = &opts.section {
            body["section"] = json!(s);
        }
        if let Some(o) = opts.slice.offset {
            body["offset"] = json!(o);
        }
        if let Some(l) = opts.slice.limit {
            body["limit"] = json!(l);
        }
        if let Some(f) = &opts.slice.find {
            body["find"] = json!(f);
        }
        let v = r.post_json("get", &body)?;
        let mut found = vec![];
        let mut missing = vec![];
        let mut seen = std::collections::HashSet::new();
        for id in ids {
            if !seen.insert(id.as_str()) {
                continue;
            }
            match v.get(id) {
                Some(o) => found.push((
                    id.clone(),
                    Slice {
                        text: o["text"].as_str().unwrap_or_default().to_string(),
                        start: o["start"].as_u64().unwrap_or(0) as usize,
                        end: o["end"].as_u64().unwrap_or(0) as usize,
                        total: o["total"].as_u64().unwrap_or(0) as usize,
                        matches: o.get("matches").and_then(Value::as_array).map(|a| {
                            a.iter()
                                .filter_map(Value::as_u64)
                                .map(|x| x as usize)
                                .collect()
                        }),
                        match_count: o
                            .get("matchCount")
                            .and_then(Value::as_u64)
                            .map(|x| x as usize),
                    },
                )),
                None => missing.push(id.clone()),
            }
        }
        Ok((found, missing))
    }

    /// Every document `(bundle, path, hash)`.
    pub fn list_sources(r: &Remote) -> Result<Vec<(String, String, String)>, Error> {
        let v = r.get_json("source")?;
        Ok(v.as_array()
            .map(|a| {
                a.iter()
                    .map(|d| {
                        (
                            d["bundle"].as_str().unwrap_or_default().to_string(),
                            d["path"].as_str().unwrap_or_default().to_string(),
                            d["hash"].as_str().unwrap_or_default().to_string(),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default())
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
        let v = r.post_json(
            "diagnostics",
            &json!({"bundle": bundle, "path": path, "content": text}),
        )?;
        serde_json::from_value(v["findings"].clone())
            .map_err(|e| Error::Io(format!("okfit serve sent findings okfit cannot read ({e})")))
    }

    fn committed(v: &Value, changes: &[Change]) -> Committed {
        let bundles: Vec<String> = v["bundles"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        let snapshot = v["snapshot"].as_str().unwrap_or_default().to_string();
        let concepts = v["concepts"].as_u64().unwrap_or(0) as usize;
        Committed {
            revision: v["revision"].as_str().map(|rev| RevisionInfo {
                revision: rev.to_string(),
                parent: None,
                snapshot: snapshot.clone(),
                created: String::new(),
                concepts,
                bundles: bundles.clone(),
            }),
            snapshot,
            concepts,
            bundles,
            hashes: changes
                .iter()
                .map(|c| c.content.as_deref().map(sha256_hex))
                .collect(),
        }
    }

    fn commit_failure(reply: &super::Reply) -> CommitError {
        if let Ok(v) = serde_json::from_slice::<Value>(&reply.body) {
            if v["code"] == "PRECONDITION" {
                return CommitError::Precondition {
                    index: v["index"].as_u64().unwrap_or(0) as usize,
                    failure: Precondition {
                        message: v["message"].as_str().unwrap_or_default().to_string(),
                        current: v["current"].as_str().map(str::to_string),
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
            let mut o = json!({"bundle": c.bundle, "path": c.path});
            match (&c.content, &c.pre) {
                (Some(bytes), pre) => {
                    o["operation"] = json!("write");
                    o["content"] = json!(String::from_utf8_lossy(bytes));
                    match pre {
                        Pre::Hash(h) => o["replaces"] = json!(h),
                        Pre::Any => {
                            if let Some(h) = lookup(&c.bundle, &c.path)? {
                                o["replaces"] = json!(h);
                            }
                        }
                        Pre::Create => {}
                    }
                }
                (None, Pre::Hash(h)) => {
                    o["operation"] = json!("delete");
                    o["replaces"] = json!(h);
                }
                (None, pre) => {
                    let cur = lookup(&c.bundle, &c.path)?;
                    match (cur, pre) {
                        (Some(h), Pre::Any) => {
                            o["operation"] = json!("delete");
                            o["replaces"] = json!(h);
                        }
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
                    }
                }
            }
            items.push(o);
        }
        let mut body = json!({"changes": items});
        if let Some(e) = expected {
            body["expectedRevision"] = json!(e);
        }
        commit_post(r, "transact", &body, changes)
    }

    /// `restore`.
    pub fn restore(r: &Remote, revision: &str, expected: &str) -> Result<Committed, CommitError> {
        let body = json!({"revision": revision, "expectedRevision": expected});
        commit_post(r, "restore", &body, &[])
    }

    /// POSTs a commit (`transact`, `restore`) and reads its revision.
    fn commit_post(
        r: &Remote,
        verb: &str,
        body: &Value,
        changes: &[Change],
    ) -> Result<Committed, CommitError> {
        let reply = r.request("POST", verb, &[], body.to_string().as_bytes())?;
        if reply.status != 200 {
            return Err(commit_failure(&reply));
        }
        let v: Value = serde_json::from_slice(&reply.body).map_err(|e| {
            Error::Io(format!(
                "okfit serve answered {verb} with invalid JSON ({e})"
            ))
        })?;
        Ok(committed(&v, changes))
    }

    /// `history`.
    pub fn history(r: &Remote, before: Option<&str>, limit: usize) -> Result<RevisionPage, Error> {
        let mut path = format!("history?limit={limit}");
        if let Some(b) = before {
            path.push_str(&format!("&before={}", Remote::seg(b)));
        }
        let v = r.get_json(&path)?;
        serde_json::from_value(v).map_err(|e| {
            Error::Io(format!(
                "okfit serve answered history with an unexpected page ({e})"
            ))
        })
    }

    /// The head revision.
    pub fn head(r: &Remote) -> Result<Option<String>, Error> {
        let v = r.post_json("sync", &json!({}))?;
        Ok(v["revision"].as_str().map(str::to_string))
    }
}
