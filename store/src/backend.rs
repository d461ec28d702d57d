//! Where a tenant's store lives: a SQLite database under a data root, or
//! a PostgreSQL database; both open to the same [`Storage`].

use crate::error::Error;
use crate::sqlite::{SqliteStore, Storage};
use okfit_core::kb::names;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A store's location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// `<root>/tenants/<tenant>/okfit.sqlite`.
    Sqlite(PathBuf),
    /// A `postgres://` connection string (every tenant in one database).
    Postgres(String),
}

impl Location {
    /// Opens `tenant`'s store. With `create`, a missing tenant is created;
    /// without, it is [`Error::NoTenant`].
    pub fn open(&self, tenant: &str, create: bool) -> Result<Box<dyn Storage>, Error> {
        Ok(match self {
            Location::Sqlite(root) => Box::new(SqliteStore::open(root, tenant, create)?),
            Location::Postgres(url) => {
                Box::new(crate::postgres::PgStore::open(url, tenant, create)?)
            }
        })
    }

    /// Keeps a long-lived process's reads current from the store's commit
    /// announcements, so they need not ask for the head each time
    /// (PostgreSQL; SQLite has none and asks cheaply). Call once at start.
    pub fn follow_commits(&self) {
        if let Location::Postgres(url) = self {
            crate::postgres::follow_commits(url);
        }
    }

    /// Up to `limit` tenants, most recently committed to first: the ones
    /// a daemon warms at start.
    pub fn recent_tenants(&self, limit: usize) -> Result<Vec<String>, Error> {
        match self {
            Location::Sqlite(root) => Ok(recent_sqlite_tenants(root, limit)),
            Location::Postgres(url) => crate::postgres::recent_tenants(url, limit),
        }
    }

    /// Whether the store answers now (the database is reachable; the data
    /// folder is there).
    pub fn check(&self) -> Result<(), Error> {
        match self {
            Location::Sqlite(root) if root.is_dir() => Ok(()),
            Location::Sqlite(root) => Err(Error::Io(format!(
                "the data folder {} is gone",
                root.display()
            ))),
            Location::Postgres(url) => crate::postgres::ping(url),
        }
    }
}

/// The tenants under a SQLite data root, newest database change first.
fn recent_sqlite_tenants(root: &Path, limit: usize) -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(root.join("tenants")) else {
        return vec![];
    };
    let changed = |p: PathBuf| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let mut found: Vec<(SystemTime, String)> = dir
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            names::check_tenant(&name).ok()?;
            let db = e.path().join("okfit.sqlite");
            let at = changed(e.path().join("okfit.sqlite-wal"))
                .into_iter()
                .chain(changed(db))
                .max()?;
            Some((at, name))
        })
        .collect();
    found.sort_by(|a, b| b.cmp(a));
    found.truncate(limit);
    found.into_iter().map(|(_, n)| n).collect()
}
