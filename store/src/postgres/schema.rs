//! The PostgreSQL schema: versioned migrations, applied once per database
//! under an advisory lock so replicas starting together apply each once.

use super::pool::pg_err;
use crate::error::Error;
use postgres::Client;

/// The migrations, in order; `okfit_migrations` records which ran.
const MIGRATIONS: &[&str] = &["
CREATE TABLE okfit_tenants(
  id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL UNIQUE, head BIGINT NOT NULL DEFAULT 0,
  compiler TEXT NOT NULL);
CREATE TABLE okfit_blobs(tenant BIGINT NOT NULL REFERENCES okfit_tenants(id), hash TEXT NOT NULL,
  bytes BYTEA NOT NULL, PRIMARY KEY(tenant, hash));
CREATE TABLE okfit_docs(tenant BIGINT NOT NULL REFERENCES okfit_tenants(id), slot INTEGER NOT NULL,
  bundle TEXT NOT NULL, path TEXT NOT NULL, hash TEXT NOT NULL, len DOUBLE PRECISION NOT NULL,
  compiled TEXT NOT NULL, PRIMARY KEY(tenant, slot), UNIQUE(tenant, bundle, path));
CREATE TABLE okfit_doc_terms(tenant BIGINT NOT NULL, slot INTEGER NOT NULL, terms BYTEA NOT NULL,
  PRIMARY KEY(tenant, slot));
CREATE TABLE okfit_terms(id BIGSERIAL PRIMARY KEY, term TEXT NOT NULL UNIQUE);
CREATE TABLE okfit_postings(tenant BIGINT NOT NULL, term BIGINT NOT NULL, slot INTEGER NOT NULL,
  tf REAL NOT NULL, PRIMARY KEY(tenant, term, slot));
CREATE TABLE okfit_revisions(tenant BIGINT NOT NULL REFERENCES okfit_tenants(id), seq BIGINT NOT NULL,
  revision TEXT NOT NULL, parent TEXT, snapshot TEXT NOT NULL, created TEXT NOT NULL,
  concepts BIGINT NOT NULL, bundles TEXT NOT NULL, PRIMARY KEY(tenant, seq),
  UNIQUE(tenant, revision));
CREATE TABLE okfit_changes(tenant BIGINT NOT NULL, seq BIGINT NOT NULL, bundle TEXT NOT NULL,
  path TEXT NOT NULL, old TEXT, new TEXT, PRIMARY KEY(tenant, seq, bundle, path));
", "
-- A term's postings are read from the index alone (an index-only scan of
-- consecutive leaf pages), not from table rows scattered across as many
-- pages as the term has documents.
ALTER TABLE okfit_postings DROP CONSTRAINT okfit_postings_pkey,
  ADD CONSTRAINT okfit_postings_pkey PRIMARY KEY(tenant, term, slot) INCLUDE (tf);
", "
-- Slots whose postings rows a commit left to fold later, each with the
-- terms its rows still hold (NULL: none); see store/src/postgres/pending.rs.
CREATE TABLE okfit_pending(tenant BIGINT NOT NULL, slot INTEGER NOT NULL, posted BYTEA,
  PRIMARY KEY(tenant, slot));
", "
-- A text is kept in its row (compressed first when the row would not fit a
-- page, moved out of line only when it still would not), not in the TOAST
-- table a row above 2 KB sends it to: a search reads its hits' texts for
-- their passages, and a row read from the table alone costs one page where
-- an out-of-line text costs an index lookup and a page per 2 KB besides.
-- Texts stored before this migration stay where they are until rewritten.
ALTER TABLE okfit_blobs SET (toast_tuple_target = 8160);
ALTER TABLE okfit_blobs ALTER COLUMN bytes SET STORAGE MAIN;
"];

/// The lock key migrations run under (any constant shared by replicas).
const MIGRATION_LOCK: i64 = 0x006f_6b66_6974;

/// Applies the migrations not yet recorded.
pub fn migrate(client: &mut Client) -> Result<(), Error> {
    let mut tx = client.transaction().map_err(pg_err)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .map_err(pg_err)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS okfit_migrations(version INTEGER PRIMARY KEY,
           applied TIMESTAMPTZ NOT NULL DEFAULT now())",
    )
    .map_err(pg_err)?;
    let done: i32 = tx
        .query_one(
            "SELECT COALESCE(MAX(version), 0) FROM okfit_migrations",
            &[],
        )
        .map_err(pg_err)?
        .get(0);
    if done as usize > MIGRATIONS.len() {
        return Err(Error::Store(format!(
            "postgresql: schema version {done} is newer than this okfit understands; upgrade okfit"
        )));
    }
    for (i, m) in MIGRATIONS.iter().enumerate().skip(done as usize) {
        tx.batch_execute(m).map_err(pg_err)?;
        tx.execute(
            "INSERT INTO okfit_migrations(version) VALUES ($1)",
            &[&(i as i32 + 1)],
        )
        .map_err(pg_err)?;
    }
    tx.commit().map_err(pg_err)
}
