//! The shared state of a running daemon: its tokens and each tenant's
//! warm knowledge.

use crate::tokens::{token_digest, Grant};
use okfit_knowledge::Knowledge;
use okfit_store::error::Error;
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

/// Largest request body (a 16 MiB transaction plus JSON framing).
pub const MAX_BODY: usize = okfit_store::change::MAX_REQUEST_BYTES;

/// The shared state of a running daemon.
pub struct Daemon {
    data: PathBuf,
    /// The sha256 of each token with its grant (digested once, at start).
    tokens: Vec<([u8; 32], Grant)>,
    tenants: Mutex<HashMap<String, Arc<Tenant>>>,
}

/// One tenant's knowledge, split so that a commit never stalls a read: a
/// writer whose connection and view serialise commits, and a reader with
/// a SQLite connection of its own. WAL lets the reader's transactions run
/// beside a commit; before each answer the reader catches up with the
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

    /// A daemon over `data` with these grants.
    pub fn new(data: PathBuf, tokens: HashMap<String, Grant>) -> Daemon {
        Daemon {
            data,
            tokens: tokens
                .into_iter()
                .map(|(t, g)| (token_digest(&t), g))
                .collect(),
            tenants: Mutex::new(HashMap::new()),
        }
    }

    /// The warm knowledge of a tenant (opened on first use).
    pub fn tenant(&self, tenant: &str) -> Result<Arc<Tenant>, Error> {
        let mut map = self.tenants.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(k) = map.get(tenant) {
            return Ok(k.clone());
        }
        let open = || {
            Knowledge::from_dsn(okfit_store::dsn::Dsn::Store {
                root: self.data.clone(),
                tenant: tenant.to_string(),
            })
            .map(Arc::new)
        };
        let t = Arc::new(Tenant {
            writer: open()?,
            reader: open()?,
        });
        map.insert(tenant.to_string(), t.clone());
        Ok(t)
    }
}

impl Daemon {
    /// How many tokens it knows (none: a unix socket where the path names
    /// the tenant).
    pub fn token_count(&self) -> usize {
        self.tokens.len()
    }
}
