//! `okfit serve`: one warm process for many agents. HTTP/1.1 on a unix
//! socket, or on TCP with bearer tokens (and TLS off loopback), speaking
//! the routes of reference langonrock §1.4 ([`router`]). Each tenant's
//! read model stays in memory and is updated by every commit, whoever
//! made it. This module holds the daemon's listeners.

pub use crate::oauth::OAuthOptions;
pub use crate::reply::ERROR_KIND_HEADER;
pub use crate::routes::router;
pub use crate::state::{Daemon, Tenant, MAX_BODY};
pub use crate::tokens::{mint_token, read_tokens, Grant};

pub use crate::state::{RATE_LIMIT, WARM_POSTINGS, WARM_TENANTS};
use okfit_store::error::Error;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How long a client has to send a request's headers (and a TLS
/// handshake) before its connection is closed.
pub const HEADER_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Connections served at once by default; past this, new connections wait in the
/// listen queue until one closes, and those already open are unaffected.
pub const MAX_CONNECTIONS: usize = 512;

/// Threads that run store work at once, beside the two async workers:
/// requests beyond it wait their turn (two cores cannot run more at once,
/// and a PostgreSQL round trip is short).
const BLOCKING_THREADS: usize = 8;

/// How `okfit serve` was asked to listen.
#[derive(Clone, Debug, Default)]
pub struct ServeOptions {
    /// The data root (tokens.json, sources.json, the socket, and the
    /// tenants' SQLite stores unless `store` names another).
    pub data: PathBuf,
    /// A `postgres://` store for the tenants instead of SQLite files
    /// under `data`.
    pub store: Option<String>,
    /// A unix socket path.
    pub socket: Option<PathBuf>,
    /// `HOST:PORT` for TCP.
    pub listen: Option<String>,
    /// PEM certificate chain for TLS.
    pub tls_cert: Option<PathBuf>,
    /// PEM private key for TLS.
    pub tls_key: Option<PathBuf>,
    /// Debounce of the sources.json folder watcher, milliseconds.
    pub debounce_ms: u64,
    /// Connections served at once (at least 1).
    pub max_connections: usize,
    /// Idle tenants kept open (read models, connections, files).
    pub warm_tenants: usize,
    /// Search postings the warm-up holds in memory at most.
    pub warm_postings: usize,
    /// `Host` names MCP accepts besides this machine's and `listen`'s.
    pub allowed_hosts: Vec<String>,
    /// Browser origins MCP accepts (none: any page's request is refused).
    pub allowed_origins: Vec<String>,
    /// An authorization server whose access tokens are accepted too.
    pub oauth: Option<OAuthOptions>,
    /// MCP requests per second per credential (0: no limit).
    pub rate_limit: u32,
}

fn is_loopback(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    h == "localhost"
        || h.parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

fn tls_config(cert: &Path, key: &Path) -> Result<Arc<rustls::ServerConfig>, Error> {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let certs: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(cert)
        .map_err(|e| Error::Usage(format!("cannot read --tls-cert {} ({e})", cert.display())))?
        .collect::<Result<_, _>>()
        .map_err(|e| Error::Usage(format!("--tls-cert {} is not PEM ({e})", cert.display())))?;
    if certs.is_empty() {
        return Err(Error::Usage(format!(
            "--tls-cert {} holds no certificate",
            cert.display()
        )));
    }
    let key = PrivateKeyDer::from_pem_file(key)
        .map_err(|e| Error::Usage(format!("cannot read --tls-key {} ({e})", key.display())))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let cfg = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| Error::Usage(format!("tls: {e}")))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| Error::Usage(format!("tls certificate and key do not match ({e})")))?;
    Ok(Arc::new(cfg))
}

/// Waits for a free connection slot; `None` once the daemon is stopping.
async fn free_slot<F>(
    shutdown: &mut F,
    slots: &Arc<tokio::sync::Semaphore>,
) -> Result<Option<tokio::sync::OwnedSemaphorePermit>, Error>
where
    F: std::future::Future<Output = Result<(), Error>> + Unpin,
{
    tokio::select! {
        r = shutdown => r.map(|()| None),
        p = slots.clone().acquire_owned() => Ok(p.ok()),
    }
}

/// A listening socket: the unix socket or TCP.
trait Listener {
    /// A connection.
    type Conn;
    /// The next connection.
    fn next(&self) -> impl std::future::Future<Output = std::io::Result<Self::Conn>>;
}

impl Listener for tokio::net::TcpListener {
    type Conn = tokio::net::TcpStream;
    async fn next(&self) -> std::io::Result<Self::Conn> {
        self.accept().await.map(|(s, _)| s)
    }
}

#[cfg(unix)]
impl Listener for tokio::net::UnixListener {
    type Conn = tokio::net::UnixStream;
    async fn next(&self) -> std::io::Result<Self::Conn> {
        self.accept().await.map(|(s, _)| s)
    }
}

/// Accepts connections on `listener` until `shutdown` resolves (then
/// returns what it said), each once a connection slot is free; `serve`
/// takes the connection and its slot.
async fn accept_until<F, L: Listener>(
    shutdown: &mut F,
    slots: &Arc<tokio::sync::Semaphore>,
    listener: &L,
    mut serve: impl FnMut(L::Conn, tokio::sync::OwnedSemaphorePermit),
) -> Result<(), Error>
where
    F: std::future::Future<Output = Result<(), Error>> + Unpin,
{
    loop {
        let Some(permit) = free_slot(shutdown, slots).await? else {
            return Ok(());
        };
        tokio::select! {
            r = &mut *shutdown => return r,
            a = listener.next() => {
                if let Ok(s) = a {
                    serve(s, permit);
                }
            }
        }
    }
}

/// Serves one connection until it closes (or the daemon stops), holding
/// one of the daemon's connection slots meanwhile.
async fn serve_conn<S>(
    stream: S,
    app: axum::Router,
    mut stop: tokio::sync::watch::Receiver<bool>,
    _slot: tokio::sync::OwnedSemaphorePermit,
) where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
{
    let svc = hyper_util::service::TowerToHyperService::new(app);
    let conn = hyper::server::conn::http1::Builder::new()
        .timer(hyper_util::rt::TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .serve_connection(hyper_util::rt::TokioIo::new(stream), svc);
    tokio::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => {}
        _ = stop.changed() => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
    }
}

/// `okfit serve`: runs until SIGINT or SIGTERM; requests in flight finish
/// (a commit is never cut in half) before it exits.
pub fn run(opts: ServeOptions) -> Result<i32, Error> {
    if opts.tls_cert.is_some() != opts.tls_key.is_some() {
        return Err(Error::Usage(
            "--tls-cert and --tls-key must be given together".into(),
        ));
    }
    if opts.tls_cert.is_some() && opts.listen.is_none() {
        return Err(Error::Usage(
            "--tls-cert needs --listen: a unix socket has no tls".into(),
        ));
    }
    if opts.socket.is_some() && opts.listen.is_some() {
        return Err(Error::Usage("give --socket or --listen, not both".into()));
    }
    let data = okfit_store::discover::absolute(&opts.data);
    let tokens = read_tokens(&data)?;
    let oauth = opts
        .oauth
        .clone()
        .map(crate::oauth::OAuth::load)
        .transpose()?;
    let tls = match (&opts.tls_cert, &opts.tls_key) {
        (Some(c), Some(k)) => Some(tls_config(c, k)?),
        _ => None,
    };
    let listen = match &opts.listen {
        Some(l) => {
            let (host, port) = l.rsplit_once(':').ok_or_else(|| {
                Error::Usage(format!(
                    "--listen {l}: expected HOST:PORT, for example 127.0.0.1:7777"
                ))
            })?;
            port.parse::<u16>().map_err(|_| {
                Error::Usage(format!(
                    "--listen {l}: the port must be a number from 0 to 65535"
                ))
            })?;
            if tokens.is_empty() && oauth.is_none() {
                return Err(Error::Usage(
                    "refusing to listen on TCP without tokens: pass tokens or use a unix socket (mint one with okfit token --data DIR --tenant T)".into(),
                ));
            }
            if !is_loopback(host) && tls.is_none() {
                return Err(Error::Usage(format!(
                    "refusing to serve {host} without tls: every request would carry its token in cleartext. Pass tls, or bind 127.0.0.1 and terminate tls in a proxy in front"
                )));
            }
            Some(l.clone())
        }
        None => None,
    };
    let socket = if listen.is_none() {
        Some(
            opts.socket
                .clone()
                .unwrap_or_else(|| data.join("okfit.sock")),
        )
    } else {
        None
    };
    std::fs::create_dir_all(&data)
        .map_err(|e| Error::Io(format!("cannot create {} ({e})", data.display())))?;
    let at = match &opts.store {
        Some(url) if !(url.starts_with("postgres://") || url.starts_with("postgresql://")) => {
            return Err(Error::Usage(
                "--store takes a PostgreSQL connection string: postgres://user@host:5432/db".into(),
            ))
        }
        Some(url) => okfit_store::backend::Location::Postgres(url.clone()),
        None => okfit_store::backend::Location::Sqlite(data.clone()),
    };
    crate::observe::init_logging();
    at.follow_commits();
    let mut hosts = opts.allowed_hosts.clone();
    if let Some((host, _)) = listen.as_deref().and_then(|l| l.rsplit_once(':')) {
        hosts.push(
            host.trim_start_matches('[')
                .trim_end_matches(']')
                .to_string(),
        );
    }
    let mut daemon = Daemon::new(at, tokens, opts.warm_tenants)
        .with_mcp_access(&hosts, &opts.allowed_origins)
        .with_rate_limit(opts.rate_limit)
        .with_warm_postings(opts.warm_postings);
    if let Some(o) = oauth {
        daemon = daemon.with_oauth(o);
    }
    let daemon = Arc::new(daemon);
    // Once serving (its first line said so): warm the read models, then
    // /readyz says ready.
    let warming = daemon.clone();
    let warm_up = move || {
        let spawned = std::thread::Builder::new()
            .name("okfit-warm-up".into())
            .spawn(move || warming.warm_up());
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start warming the read models; /readyz stays 503");
        }
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        // Store work runs in place (`block_in_place`), each call moving its
        // worker's other tasks to a pool thread: a small pool keeps the
        // thread count (and memory) near the work actually in flight.
        .max_blocking_threads(BLOCKING_THREADS)
        .enable_all()
        .build()
        .map_err(|e| Error::Io(format!("cannot start the runtime: {e}")))?;
    let sources = crate::sources::start(&daemon, &data, opts.debounce_ms.max(10))?;
    let app = router(daemon.clone());
    let token_count = daemon.token_count();
    let result: Result<(), Error> = rt.block_on(async move {
        let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
        let mut tasks = tokio::task::JoinSet::new();
        let shutdown = async {
            #[cfg(unix)]
            {
                let mut term =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
                        .map_err(|e| Error::Io(format!("cannot watch SIGTERM ({e})")))?;
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            #[cfg(not(unix))]
            {
                let _ = tokio::signal::ctrl_c().await;
            }
            Ok::<(), Error>(())
        };
        tokio::pin!(shutdown);
        let where_ = match (&socket, &listen) {
            (Some(s), _) => s.display().to_string(),
            (_, Some(l)) => format!("{}{l}", if tls.is_some() { "https://" } else { "http://" }),
            _ => String::new(),
        };
        let slots = Arc::new(tokio::sync::Semaphore::new(opts.max_connections.max(1)));
        let line = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        if let Some(sock) = &socket {
            #[cfg(unix)]
            {
                if sock.exists() {
                    // A socket nobody answers on is left over from a crash.
                    if std::os::unix::net::UnixStream::connect(sock).is_ok() {
                        return Err(Error::Refused(format!(
                            "{} is in use by a running server",
                            sock.display()
                        )));
                    }
                    let _ = std::fs::remove_file(sock);
                }
                let listener = tokio::net::UnixListener::bind(sock)
                    .map_err(|e| Error::Io(format!("cannot listen on {} ({e})", sock.display())))?;
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(sock, std::fs::Permissions::from_mode(0o600));
                eprintln!(
                    "okfit serving {} on {where_} ({}, {})",
                    data.display(),
                    line(token_count, "token"),
                    line(sources, "watched tenant")
                );
                warm_up();
                accept_until(&mut shutdown, &slots, &listener, |s, permit| {
                    tasks.spawn(serve_conn(s, app.clone(), stop_rx.clone(), permit));
                })
                .await?;
                let _ = std::fs::remove_file(sock);
            }
            #[cfg(not(unix))]
            {
                let _ = sock;
                return Err(Error::Usage(
                    "unix sockets are not available here: use --listen 127.0.0.1:PORT with a token"
                        .into(),
                ));
            }
        } else if let Some(l) = &listen {
            let listener = tokio::net::TcpListener::bind(l.as_str())
                .await
                .map_err(|e| Error::Io(format!("cannot listen on {l} ({e})")))?;
            let local = listener
                .local_addr()
                .map(|a| a.to_string())
                .unwrap_or_else(|_| l.clone());
            let scheme = if tls.is_some() { "https://" } else { "http://" };
            eprintln!(
                "okfit serving {} on {scheme}{local} ({}, {})",
                data.display(),
                line(token_count, "token"),
                line(sources, "watched tenant")
            );
            eprintln!("okfit: MCP over HTTP at {scheme}{local}/mcp");
            warm_up();
            let acceptor = tls.clone().map(tokio_rustls::TlsAcceptor::from);
            accept_until(&mut shutdown, &slots, &listener, |s, permit| {
                let _ = s.set_nodelay(true);
                let app = app.clone();
                let stop = stop_rx.clone();
                match acceptor.clone() {
                    Some(acc) => {
                        tasks.spawn(async move {
                            let shake = tokio::time::timeout(HEADER_TIMEOUT, acc.accept(s));
                            if let Ok(Ok(t)) = shake.await {
                                serve_conn(t, app, stop, permit).await;
                            }
                        });
                    }
                    None => {
                        tasks.spawn(serve_conn(s, app, stop, permit));
                    }
                }
            })
            .await?;
        }
        eprintln!("okfit: shutting down; finishing requests in flight");
        let _ = stop_tx.send(true);
        let _ = tokio::time::timeout(std::time::Duration::from_secs(30), async {
            while tasks.join_next().await.is_some() {}
        })
        .await;
        Ok(())
    });
    // Blocking work (a commit) already running completes before exit.
    drop(rt);
    result.map(|_| 0)
}
