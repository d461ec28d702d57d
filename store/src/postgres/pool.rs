//! Connections to a PostgreSQL database: the connection string's rules,
//! errors as the store's kinds, and one pool per database shared by every
//! tenant a process opens over it.

use super::listen::Heads;
use super::schema::migrate;
use crate::error::Error;
use postgres::{Client, GenericClient, NoTls, Statement};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// The store error of a PostgreSQL error: a lost connection is
/// unavailability, a serialization failure or duplicate key a conflict.
pub(crate) fn pg_err(e: postgres::Error) -> Error {
    match e.code() {
        Some(c)
            if *c == postgres::error::SqlState::T_R_SERIALIZATION_FAILURE
                || *c == postgres::error::SqlState::T_R_DEADLOCK_DETECTED
                || *c == postgres::error::SqlState::UNIQUE_VIOLATION =>
        {
            Error::Conflict("database changed: re-read the revision and document hashes".into())
        }
        // A lost connection, a server shutting down or refusing us is
        // unavailability; the caller may retry.
        _ => Error::Store(format!("postgresql: {}", said(&e))),
    }
}

/// What a PostgreSQL error says, in one line: the server's own message, or
/// the client's with its cause.
pub fn said(e: &postgres::Error) -> String {
    if let Some(db) = e.as_db_error() {
        return format!("{}: {}", db.severity(), db.message());
    }
    match std::error::Error::source(e) {
        Some(cause) => format!("{e}: {cause}"),
        None => e.to_string(),
    }
}

/// `url` as messages show it: no password, no parameters.
pub fn shown(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            let _ = u.set_password(None);
            u.set_query(None);
            u.to_string()
        }
        Err(_) => "the PostgreSQL database".into(),
    }
}

/// Connects to `url`, a `postgres://` connection string, speaking TLS as
/// its `sslmode` asks (see [`super::tls`]).
pub fn connect(url: &str) -> Result<Client, Error> {
    Connector::new(url)?.connect()
}

/// What connecting to one database needs, worked out once: the parsed
/// connection string and the TLS set-up (its trusted roots read once, not
/// on every connection).
pub(crate) struct Connector {
    config: postgres::Config,
    tls: super::tls::Tls,
    make: Option<tokio_postgres_rustls::MakeRustlsConnect>,
}

impl Connector {
    /// The connector of `url`, a `postgres://` connection string.
    pub(crate) fn new(url: &str) -> Result<Connector, Error> {
        let (rest, tls) = super::tls::Tls::split(url)?;
        let mut config: postgres::Config = rest
            .parse()
            .map_err(|e| Error::Usage(format!("invalid postgresql connection string ({e})")))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(CONNECT_TIMEOUT);
        }
        // A peer that vanished without closing (a failover, a cut link) is
        // noticed in about a minute rather than two hours.
        config.keepalives_idle(KEEPALIVE_IDLE);
        let make = tls.connector()?;
        config.ssl_mode(match make {
            Some(_) => tls.mode(),
            None => postgres::config::SslMode::Disable,
        });
        Ok(Connector { config, tls, make })
    }

    /// A new connection.
    pub(crate) fn connect(&self) -> Result<Client, Error> {
        match &self.make {
            None => self.config.connect(NoTls),
            Some(make) => self.config.connect(make.clone()),
        }
        .map_err(|e| super::tls::explain(e, &self.tls))
    }
}

/// How long a connection attempt may take unless the string says.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Idle time before TCP keepalive probes start.
const KEEPALIVE_IDLE: Duration = Duration::from_secs(30);

/// Idle connections kept per database.
const IDLE: usize = 16;

/// The connections to one database, shared by every tenant this process
/// opens over it. A connection the server closed (a restart, a failover)
/// is dropped instead of returned, so the next use connects afresh; the
/// first success after a failure says so on stderr.
pub(crate) struct Pool {
    url: String,
    /// Made at the first connection (a failure is not kept: the next
    /// attempt tries again).
    connector: Mutex<Option<Arc<Connector>>>,
    idle: Mutex<Vec<Session>>,
    migrated: OnceLock<()>,
    lost: AtomicBool,
    /// Connections lent out now.
    lent: AtomicUsize,
    /// The heads announced by other processes' commits, once
    /// [`Pool::follow`] started listening.
    pub(crate) heads: Arc<Heads>,
    following: OnceLock<()>,
}

/// What a database's pool holds, for metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolUse {
    /// Idle connections.
    pub idle: usize,
    /// Connections lent to a call now.
    pub lent: usize,
    /// Whether commit announcements are being received.
    pub listening: bool,
    /// Commit announcements received from the database.
    pub announcements: u64,
}

fn pools() -> MutexGuard<'static, HashMap<String, Arc<Pool>>> {
    static POOLS: OnceLock<Mutex<HashMap<String, Arc<Pool>>>> = OnceLock::new();
    POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

impl Pool {
    /// The pool of `url` (made on first use).
    pub(crate) fn of(url: &str) -> Arc<Pool> {
        pools()
            .entry(url.to_string())
            .or_insert_with(|| {
                Arc::new(Pool {
                    url: url.to_string(),
                    connector: Mutex::new(None),
                    idle: Mutex::new(vec![]),
                    migrated: OnceLock::new(),
                    lost: AtomicBool::new(false),
                    lent: AtomicUsize::new(0),
                    heads: Arc::new(Heads::default()),
                    following: OnceLock::new(),
                })
            })
            .clone()
    }

    /// What every pool of this process holds, by database (as
    /// [`shown`]).
    pub(crate) fn usage() -> Vec<(String, PoolUse)> {
        pools()
            .values()
            .map(|p| {
                let idle = p.idle.lock().unwrap_or_else(|e| e.into_inner()).len();
                (
                    shown(&p.url),
                    PoolUse {
                        idle,
                        lent: p.lent.load(Ordering::Relaxed),
                        listening: p.heads.listening(),
                        announcements: p.heads.announcements(),
                    },
                )
            })
            .collect()
    }

    /// Starts following commit announcements on this database (once): a
    /// long-lived process then learns other processes' heads without a
    /// query per read.
    pub(crate) fn follow(&self) {
        self.following.get_or_init(|| {
            super::listen::start(self.url.clone(), self.heads.clone());
        });
    }

    /// A connection, lent until the returned guard drops.
    pub(crate) fn lend(self: &Arc<Self>) -> Result<Conn, Error> {
        let client = self.take()?;
        self.lent.fetch_add(1, Ordering::Relaxed);
        Ok(Conn {
            pool: self.clone(),
            client: Some(client),
        })
    }

    fn take(&self) -> Result<Session, Error> {
        loop {
            let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
            match idle {
                Some(s) if s.client.is_closed() => self.lost.store(true, Ordering::Relaxed),
                Some(s) => return Ok(s),
                None => break,
            }
        }
        let mut c = self
            .connector()
            .and_then(|k| k.connect())
            .inspect_err(|_| self.lost.store(true, Ordering::Relaxed))?;
        if self.migrated.get().is_none() {
            migrate(&mut c)?;
            let _ = self.migrated.set(());
        }
        if self.lost.swap(false, Ordering::Relaxed) {
            eprintln!("okfit: reconnected to PostgreSQL at {}", shown(&self.url));
        }
        Ok(Session {
            client: c,
            prepared: Prepared::default(),
        })
    }

    fn connector(&self) -> Result<Arc<Connector>, Error> {
        let mut k = self.connector.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = &*k {
            return Ok(k.clone());
        }
        let made = Arc::new(Connector::new(&self.url)?);
        *k = Some(made.clone());
        Ok(made)
    }

    fn give(&self, c: Session) {
        self.lent.fetch_sub(1, Ordering::Relaxed);
        if c.client.is_closed() {
            self.lost.store(true, Ordering::Relaxed);
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(|p| p.into_inner());
        if idle.len() < IDLE {
            idle.push(c);
        }
    }
}

/// A pooled connection with the statements prepared on it.
struct Session {
    client: Client,
    prepared: Prepared,
}

/// The statements prepared on one connection, by their text: each is
/// parsed and planned by the server once per connection, not once per
/// use.
#[derive(Default)]
pub(crate) struct Prepared(HashMap<&'static str, Statement>);

impl Prepared {
    /// `sql` prepared on `c`'s connection (the first time only).
    pub(crate) fn get(
        &mut self,
        c: &mut impl GenericClient,
        sql: &'static str,
    ) -> Result<Statement, Error> {
        if let Some(s) = self.0.get(sql) {
            return Ok(s.clone());
        }
        let s = c.prepare(sql).map_err(pg_err)?;
        self.0.insert(sql, s.clone());
        Ok(s)
    }
}

/// A connection lent by a [`Pool`]; it goes back when dropped.
pub(crate) struct Conn {
    pool: Arc<Pool>,
    client: Option<Session>,
}

impl Conn {
    /// Closes the connection instead of returning it to the pool (its
    /// session holds something the next user must not inherit).
    pub(crate) fn discard(mut self) {
        if self.client.take().is_some() {
            self.pool.lent.fetch_sub(1, Ordering::Relaxed);
        }
    }

    fn session(&mut self) -> &mut Session {
        // Present from creation until drop.
        self.client.as_mut().unwrap_or_else(|| unreachable!())
    }

    /// The connection and the statements prepared on it, borrowed apart
    /// so a transaction can use both.
    pub(crate) fn parts(&mut self) -> (&mut Client, &mut Prepared) {
        let s = self.session();
        (&mut s.client, &mut s.prepared)
    }

    /// The rows of `sql` (prepared once per connection) with `params`.
    pub(crate) fn query_prepared(
        &mut self,
        sql: &'static str,
        params: &[&(dyn postgres::types::ToSql + Sync)],
    ) -> Result<Vec<postgres::Row>, Error> {
        let (c, p) = self.parts();
        let st = p.get(c, sql)?;
        c.query(&st, params).map_err(pg_err)
    }
}

impl std::ops::Deref for Conn {
    type Target = Client;
    fn deref(&self) -> &Client {
        // Present from creation until drop.
        &self
            .client
            .as_ref()
            .unwrap_or_else(|| unreachable!())
            .client
    }
}

impl std::ops::DerefMut for Conn {
    fn deref_mut(&mut self) -> &mut Client {
        &mut self.session().client
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        if let Some(c) = self.client.take() {
            self.pool.give(c);
        }
    }
}
