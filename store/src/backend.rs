//! Where a tenant's store lives: a SQLite database under a data root, or
//! a PostgreSQL database; both open to the same [`Storage`].

use crate::error::Error;
use crate::sqlite::{SqliteStore, Storage};
use std::path::PathBuf;

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
}
