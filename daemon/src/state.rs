//! The shared state of a running daemon: its tokens and each tenant's
//! warm knowledge.

use crate::metrics::{Metrics, Now};
use crate::oauth::{OAuth, Refused};
use crate::tokens::{token_digest, Grant};
use okfit_knowledge::Knowledge;
use okfit_mcp::http::HttpOptions;
use okfit_store::backend::Location;
use okfit_store::dsn::Dsn;
use okfit_store::error::Error;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// The `Host` names MCP always accepts: this machine's.
const LOOPBACK: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

/// Largest request body (a 16 MiB transaction plus JSON framing).
pub const MAX_BODY: usize = okfit_store::change::MAX_REQUEST_BYTES;

/// The shared state of a running daemon.
pub struct Daemon {
    /// Where the tenants' stores are.
    at: Location,
    /// The sha256 of each token with its grant (digested once, at start).
    tokens: Vec<([u8; 32], Grant)>,
    tenants: Mutex<Warm>,
    /// What `/metrics` shows.
    pub metrics: Metrics,
    /// How far the warm-up at start got: (tenants warmed, to warm, done).
    warming: Mutex<(usize, usize, bool)>,
    /// What MCP over HTTP accepts (hosts, origins, body size).
    mcp: HttpOptions,
    /// The authorization server whose access tokens are accepted too.
    oauth: Option<OAuth>,
    /// MCP requests allowed per credential (a token's sha256).
    limiter: Option<Limiter>,
    /// Search postings the warm-up may hold in memory.
    warm_postings: usize,
}

/// A rate limit per credential.
type Limiter = governor::DefaultKeyedRateLimiter<[u8; 32]>;

/// MCP requests a credential may make per second by default (twice as
/// many in a burst).
pub const RATE_LIMIT: u32 = 100;

/// The tenants kept open, each with when it was last used; at most
/// `budget` of them once the least recently used idle ones are closed.
struct Warm {
    open: HashMap<String, (Arc<Tenant>, u64)>,
    clock: u64,
    budget: usize,
}

impl Warm {
    /// Closes the least recently used tenants nobody holds (no request in
    /// flight, no sources.json watcher) until at most `budget` are open.
    fn trim(&mut self) {
        while self.open.len() > self.budget {
            let idle = self
                .open
                .iter()
                .filter(|(_, (t, _))| Arc::strong_count(t) == 1)
                .min_by_key(|(_, (_, used))| *used)
                .map(|(name, _)| name.clone());
            match idle {
                Some(name) => {
                    self.open.remove(&name);
                }
                None => break,
            }
        }
    }
}

/// How many tenants a daemon keeps open by default. A warm SQLite tenant
/// holds five files (the database and its log for each of its two
/// connections, and the shared-memory index): 150 of them stay under 800
/// descriptors, below the common soft limit of 1,024 with room for clients.
pub const WARM_TENANTS: usize = 150;

/// How many documents the warm-up at start loads at most, over all the
/// tenants it warms: enough for the largest tenants we measure, few enough
/// that a store of many large tenants does not start with all of them in
/// memory. The others load on their first request.
pub const WARM_UP_DOCUMENTS: usize = 200_000;

/// How many search postings the warm-up holds in memory at most, over all
/// the tenants it warms (about 5 bytes each: some 240 MB). A warmed
/// tenant whose postings fit in what is left is searched from memory
/// alone; the others read each word's postings on its first search.
pub const WARM_POSTINGS: usize = 48_000_000;

/// One tenant's knowledge, split so that a commit never stalls a read: a
/// writer whose connection and view serialise commits, and a reader with
/// connections of its own. Its transactions run beside a commit (WAL on
/// SQLite, MVCC on PostgreSQL); before each answer the reader catches up with the
/// commits made since its last look (as it would with another process's).
pub struct Tenant {
    writer: Arc<Knowledge>,
    reader: Arc<Knowledge>,
}

impl Tenant {
    /// The knowledge commits go through.
    pub fn writer(&self) -> &Arc<Knowledge> {
        &self.writer
    }

    /// The knowledge reads go through.
    pub fn reader(&self) -> &Arc<Knowledge> {
        &self.reader
    }
}

impl Daemon {
    /// The grant of a bearer token. Every known token is compared, each in
    /// constant time over its sha256, so the time taken says nothing about
    /// how close a guess came.
    pub fn grant(&self, bearer: &str) -> Option<&Grant> {
        use subtle::ConstantTimeEq;
        let given = token_digest(bearer);
        let mut found = None;
        for (known, grant) in &self.tokens {
            if bool::from(known.ct_eq(&given)) {
                found = Some(grant);
            }
        }
        found
    }

    /// A daemon over the store at `at` with these grants, keeping at most
    /// `warm` idle tenants open (at least one).
    pub fn new(at: Location, tokens: HashMap<String, Grant>, warm: usize) -> Daemon {
        Daemon {
            at,
            tokens: tokens
                .into_iter()
                .map(|(t, g)| (token_digest(&t), g))
                .collect(),
            tenants: Mutex::new(Warm {
                open: HashMap::new(),
                clock: 0,
                budget: warm.max(1),
            }),
            metrics: Metrics::new(),
            warming: Mutex::new((0, 0, false)),
            mcp: HttpOptions {
                allowed_hosts: LOOPBACK.iter().map(|h| h.to_string()).collect(),
                allowed_origins: vec![],
                max_body: MAX_BODY,
            },
            oauth: None,
            limiter: None,
            warm_postings: WARM_POSTINGS,
        }
    }

    /// The daemon's warm-up holding at most `postings` search postings in
    /// memory (0: none; words' postings are then read on demand).
    pub fn with_warm_postings(mut self, postings: usize) -> Daemon {
        self.warm_postings = postings;
        self
    }

    /// The daemon allowing each credential `per_second` MCP requests a
    /// second on average, twice that in a burst (0: no limit).
    pub fn with_rate_limit(mut self, per_second: u32) -> Daemon {
        self.limiter = std::num::NonZeroU32::new(per_second).map(|n| {
            let burst = n.saturating_mul(std::num::NonZeroU32::MIN.saturating_add(1));
            governor::RateLimiter::keyed(governor::Quota::per_second(n).allow_burst(burst))
        });
        self
    }

    /// `Ok` when the credential `key` may make another request now, else
    /// how long until it may.
    pub fn admit(&self, key: &[u8; 32]) -> Result<(), std::time::Duration> {
        use governor::clock::{Clock, DefaultClock};
        let Some(l) = &self.limiter else {
            return Ok(());
        };
        if l.len() > 10_000 {
            l.retain_recent();
        }
        l.check_key(key)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// The daemon accepting `oauth`'s access tokens besides its own.
    pub fn with_oauth(mut self, oauth: OAuth) -> Daemon {
        self.oauth = Some(oauth);
        self
    }

    /// The authorization server, when one is configured.
    pub fn oauth(&self) -> Option<&OAuth> {
        self.oauth.as_ref()
    }

    /// Whether a request must carry a credential: tokens exist, or an
    /// authorization server is configured. Without either (a unix socket)
    /// the path names the tenant.
    pub fn has_credentials(&self) -> bool {
        !self.tokens.is_empty() || self.oauth.is_some()
    }

    /// The grant of a bearer credential (`None`: the request carried
    /// none): one of the daemon's own tokens, or an access token from the
    /// configured authorization server.
    pub fn authenticate(&self, bearer: Option<&str>) -> Result<Grant, Refused> {
        if let Some(g) = bearer.and_then(|b| self.grant(b)) {
            return Ok(g.clone());
        }
        match (&self.oauth, bearer) {
            (Some(o), Some(b)) if b.bytes().filter(|c| *c == b'.').count() == 2 => o.grant(b),
            _ => Err(Refused::Invalid("invalid or missing bearer token".into())),
        }
    }

    /// The daemon with MCP accepting `hosts` (beside the loopback names)
    /// and browser `origins`.
    pub fn with_mcp_access(mut self, hosts: &[String], origins: &[String]) -> Daemon {
        self.mcp.allowed_hosts.extend(hosts.iter().cloned());
        self.mcp.allowed_origins = origins.to_vec();
        self
    }

    /// What MCP over HTTP accepts.
    pub fn mcp_options(&self) -> &HttpOptions {
        &self.mcp
    }

    fn warm(&self) -> MutexGuard<'_, Warm> {
        self.tenants.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens the most recently used tenants, as many as the warm budget
    /// keeps, and loads their read models until they hold
    /// [`WARM_UP_DOCUMENTS`]; then the daemon is ready. Runs once at start,
    /// off the request path; while the store cannot list its tenants it
    /// retries.
    pub fn warm_up(&self) {
        let budget = self.warm().budget;
        let names = loop {
            match self.at.recent_tenants(budget) {
                Ok(names) => break names,
                Err(e) => {
                    tracing::warn!(error = %e, "cannot list the tenants to warm; trying again");
                    std::thread::sleep(std::time::Duration::from_secs(1));
                }
            }
        };
        let started = std::time::Instant::now();
        self.set_warming(0, names.len(), false);
        let mut documents = 0;
        let mut warmed = vec![];
        for (i, name) in names.iter().enumerate() {
            if documents >= WARM_UP_DOCUMENTS {
                break;
            }
            match self
                .tenant(name)
                .and_then(|t| t.reader().warm().map(|()| t))
            {
                Ok(t) => {
                    documents += t.reader().warm_documents().unwrap_or(0);
                    warmed.push((name, t));
                }
                Err(e) => {
                    tracing::warn!(tenant = %name, error = %e, "cannot warm a tenant's read model")
                }
            }
            self.set_warming(i + 1, names.len(), false);
        }
        let postings = self.warm_postings_of(&warmed);
        self.set_warming(names.len(), names.len(), true);
        tracing::debug!(
            tenants = names.len(),
            documents,
            postings,
            ms = started.elapsed().as_millis() as u64,
            "read models warm: ready"
        );
    }

    /// Loads the search postings of the `warmed` tenants, most recent
    /// first, while they fit in the daemon's budget; the postings held.
    fn warm_postings_of(&self, warmed: &[(&String, Arc<Tenant>)]) -> usize {
        let mut held = 0;
        for (name, t) in warmed {
            let left = self.warm_postings.saturating_sub(held);
            if left == 0 {
                break;
            }
            match t.reader().warm_postings(left) {
                Ok(Some(n)) => held += n,
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(tenant = %name, error = %e, "cannot load a tenant's search postings")
                }
            }
        }
        held
    }

    fn set_warming(&self, done: usize, of: usize, ready: bool) {
        *self.warming.lock().unwrap_or_else(|p| p.into_inner()) = (done, of, ready);
    }

    /// Ready to serve: warmed up, and the store answers. The reason when
    /// not.
    pub fn readiness(&self) -> Result<(), String> {
        let (done, of, ready) = *self.warming.lock().unwrap_or_else(|p| p.into_inner());
        if !ready {
            return Err(format!("warming read models: {done} of {of} tenants"));
        }
        self.at
            .check()
            .map_err(|e| format!("the store does not answer: {e}"))
    }

    /// What a metrics scrape reads now: the warm tenants, the documents and
    /// search postings in their read models, and the database pools.
    pub fn scrape(&self) -> Now {
        let tenants: Vec<Arc<Tenant>> = self.warm().open.values().map(|(t, _)| t.clone()).collect();
        Now {
            warm_tenants: tenants.len(),
            model_documents: tenants
                .iter()
                .filter_map(|t| t.reader().warm_documents())
                .sum(),
            postings_held: tenants
                .iter()
                .filter_map(|t| t.reader().held_postings())
                .sum(),
            pools: okfit_store::postgres::pool_use(),
        }
    }

    /// The warm knowledge of a tenant, opened on first use and again after
    /// it was closed to stay within the budget.
    pub fn tenant(&self, tenant: &str) -> Result<Arc<Tenant>, Error> {
        let mut warm = self.warm();
        warm.clock += 1;
        let now = warm.clock;
        if let Some((k, used)) = warm.open.get_mut(tenant) {
            *used = now;
            return Ok(k.clone());
        }
        let open = || Knowledge::from_dsn(Dsn::of_store(&self.at, tenant)).map(Arc::new);
        let (writer, reader) = (open()?, open()?);
        writer.seed_from(&reader);
        let t = Arc::new(Tenant { writer, reader });
        warm.open.insert(tenant.to_string(), (t.clone(), now));
        warm.trim();
        Ok(t)
    }
}

impl Daemon {
    /// True when a read of `tenant` is answered from memory and a local
    /// file: an embedded SQLite tenant whose reader has its model loaded.
    pub fn reads_from_memory(&self, tenant: &str) -> bool {
        matches!(self.at, Location::Sqlite(_))
            && self
                .warm()
                .open
                .get(tenant)
                .is_some_and(|(t, _)| t.reader().warm_documents().is_some())
    }

    /// How many tokens it knows (none: a unix socket where the path names
    /// the tenant).
    pub fn token_count(&self) -> usize {
        self.tokens.len()
    }
}
