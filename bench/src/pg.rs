//! The PostgreSQL server the benchmarks measure: the one in
//! `OKFIT_BENCH_POSTGRES` (a `postgres://` URL on which they may create
//! databases), or a throwaway cluster started with `scripts/pg.sh`.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn root() -> PathBuf {
    let r = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
    std::fs::canonicalize(&r).unwrap_or(r)
}

/// The PostgreSQL server: `OKFIT_BENCH_POSTGRES`, or a throwaway cluster
/// (`scripts/pg.sh`) stopped when the guard drops.
pub struct Server {
    /// Its `postgres://` URL.
    pub url: String,
    cluster: Option<PathBuf>,
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(dir) = &self.cluster {
            let _ = Command::new("bash")
                .arg(root().join("scripts/pg.sh"))
                .arg("stop")
                .arg(dir)
                .status();
        }
    }
}

/// Starts the server (or takes `OKFIT_BENCH_POSTGRES`'s); a throwaway
/// cluster lives in `dir`.
pub fn server(dir: &Path) -> Result<Server, String> {
    if let Ok(url) = std::env::var("OKFIT_BENCH_POSTGRES") {
        return Ok(Server { url, cluster: None });
    }
    let _ = Command::new("bash")
        .arg(root().join("scripts/pg.sh"))
        .arg("stop")
        .arg(dir)
        .status();
    let _ = std::fs::remove_dir_all(dir);
    let out = Command::new("bash")
        .arg(root().join("scripts/pg.sh"))
        .arg("start")
        .arg(dir)
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| format!("scripts/pg.sh: {e}"))?;
    if !out.status.success() {
        return Err("scripts/pg.sh start failed".into());
    }
    Ok(Server {
        url: String::from_utf8_lossy(&out.stdout).trim().to_string(),
        cluster: Some(dir.to_path_buf()),
    })
}

/// A new database on the server; its `postgres://` URL.
pub fn database(server: &str, name: &str) -> Result<String, String> {
    let mut c = okfit_store::postgres::connect(server).map_err(|e| e.to_string())?;
    c.batch_execute(&format!("DROP DATABASE IF EXISTS {name}"))
        .and_then(|_| c.batch_execute(&format!("CREATE DATABASE {name}")))
        .map_err(|e| {
            format!(
                "create database {name}: {}",
                okfit_store::postgres::said(&e)
            )
        })?;
    let (base, query) = server.split_once('?').unwrap_or((server, ""));
    let base = base.rsplit_once('/').map_or(base, |(b, _)| b);
    Ok(if query.is_empty() {
        format!("{base}/{name}")
    } else {
        format!("{base}/{name}?{query}")
    })
}

/// The `okf+postgres://` connection to `tenant` of the database at `url`.
pub fn with_tenant(url: &str, tenant: &str) -> String {
    let sep = if url.contains('?') { '&' } else { '?' };
    format!(
        "{}{sep}tenant={tenant}",
        url.replacen("postgres://", "okf+postgres://", 1)
    )
}

/// Settles the database at `url` after a bulk load, as an operator does
/// (PostgreSQL's "Populating a Database": run `ANALYZE` afterwards):
/// `VACUUM (ANALYZE)` of every table, so that autovacuum has nothing left
/// to do on the imported rows, then a `CHECKPOINT`, so that the load's
/// dirty pages are not written out while the benchmark measures. The
/// seconds it took; a checkpoint the role may not run is skipped (said on
/// stderr).
pub fn settle(url: &str) -> Result<f64, String> {
    let started = std::time::Instant::now();
    let mut c = okfit_store::postgres::connect(url).map_err(|e| e.to_string())?;
    c.batch_execute("VACUUM (ANALYZE)")
        .map_err(|e| format!("vacuum: {}", okfit_store::postgres::said(&e)))?;
    if let Err(e) = c.batch_execute("CHECKPOINT") {
        eprintln!("checkpoint skipped: {}", okfit_store::postgres::said(&e));
    }
    Ok(started.elapsed().as_secs_f64())
}
