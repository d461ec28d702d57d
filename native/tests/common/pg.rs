//! What the PostgreSQL tests share: the test server (`OKFIT_TEST_POSTGRES`),
//! a fresh database per test, a sandbox to run `okfit` in, and `okfit
//! serve` replicas over a database.

#![allow(dead_code)]

use super::common::{self, Out};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Where a test's tenants live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// SQLite files under the sandbox's data root.
    Sqlite,
    /// A fresh database on the test server.
    Postgres,
}

/// Runs a test body once per store backend: tests `sqlite` and `postgres`
/// in a module named after the body.
#[allow(unused_macros)]
macro_rules! on_both_backends {
    (async $name:ident) => {
        mod $name {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn sqlite() {
                super::$name(super::Backend::Sqlite).await
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn postgres() {
                super::$name(super::Backend::Postgres).await
            }
        }
    };
    ($name:ident) => {
        mod $name {
            #[test]
            fn sqlite() {
                super::$name(super::Backend::Sqlite)
            }
            #[test]
            fn postgres() {
                super::$name(super::Backend::Postgres)
            }
        }
    };
}

/// Where a sandbox's tenants live: SQLite files under its data root, or a
/// fresh database on the test server.
pub struct Tenants {
    data: PathBuf,
    /// The `okf+postgres://` base of the database; `None`: SQLite.
    postgres: Option<String>,
}

impl Tenants {
    /// Tenants in `backend`, with `data` as the SQLite data root.
    pub fn on(backend: Backend, data: PathBuf) -> Tenants {
        Tenants {
            data,
            postgres: (backend == Backend::Postgres).then(fresh_database),
        }
    }

    pub fn is_sqlite(&self) -> bool {
        self.postgres.is_none()
    }

    /// The SQLite data root.
    pub fn data(&self) -> String {
        self.data.display().to_string()
    }

    /// A SQLite tenant's directory.
    pub fn tenant_dir(&self, tenant: &str) -> PathBuf {
        self.data.join("tenants").join(tenant)
    }

    /// `okf:///<data>?tenant=<tenant>`, or the tenant of the database.
    pub fn dsn(&self, tenant: &str) -> String {
        match &self.postgres {
            None => format!("okf://{}?tenant={tenant}", self.data()),
            Some(base) => format!("{base}?tenant={tenant}"),
        }
    }

    /// `args` naming the tenant: `--data <data> --tenant <tenant>` on
    /// SQLite, `-c <connection>` on PostgreSQL.
    pub fn args(&self, tenant: &str, args: &[&str]) -> Vec<String> {
        let mut all: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        match &self.postgres {
            None => all.extend([
                "--data".into(),
                self.data(),
                "--tenant".into(),
                tenant.into(),
            ]),
            Some(_) => all.extend(["-c".into(), self.dsn(tenant)]),
        }
        all
    }

    /// Whether `tenant` exists (its first write created it); `snapshot`
    /// runs `okfit snapshot` with the given arguments.
    pub fn exists(&self, tenant: &str, snapshot: impl FnOnce(&[&str]) -> Out) -> bool {
        if self.is_sqlite() {
            return self.tenant_dir(tenant).join("okfit.sqlite").exists();
        }
        let args = self.args(tenant, &["snapshot"]);
        snapshot(&args.iter().map(String::as_str).collect::<Vec<_>>()).code == 0
    }
}

impl Tenants {
    /// Makes `tenant` look written by an older okfit: its compiler version
    /// is "1" and its derived search data (postings, stored terms,
    /// lengths) is gone, as a different analyzer would have left it
    /// unusable. Returns the version it had.
    pub fn age_compiler(&self, tenant: &str) -> String {
        match &self.postgres {
            None => {
                let db = rusqlite::Connection::open(self.tenant_dir(tenant).join("okfit.sqlite"))
                    .expect("open the tenant's database");
                let had: String = db
                    .query_row("SELECT value FROM meta WHERE key = 'compiler'", [], |r| {
                        r.get(0)
                    })
                    .expect("the compiler version");
                db.execute_batch(
                    "UPDATE meta SET value = '1' WHERE key = 'compiler';
                     DELETE FROM postings; DELETE FROM doc_terms; UPDATE docs SET len = 0;",
                )
                .expect("age the tenant");
                had
            }
            Some(base) => {
                let base = base.clone();
                let tenant = tenant.to_string();
                std::thread::spawn(move || {
                    let mut c = admin(&base);
                    let row = c
                        .query_one(
                            "SELECT id, compiler FROM okfit_tenants WHERE name = $1",
                            &[&tenant],
                        )
                        .expect("the tenant exists");
                    let (id, had): (i64, String) = (row.get(0), row.get(1));
                    for sql in [
                        "UPDATE okfit_tenants SET compiler = '1' WHERE id = $1",
                        "DELETE FROM okfit_postings WHERE tenant = $1",
                        "DELETE FROM okfit_doc_terms WHERE tenant = $1",
                        "UPDATE okfit_docs SET len = 0 WHERE tenant = $1",
                    ] {
                        c.execute(sql, &[&id]).expect("age the tenant");
                    }
                    had
                })
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
            }
        }
    }
}

/// A plain client of the test database named by an `okf+postgres://`
/// base (blocking: call it off any async runtime).
fn admin(base: &str) -> postgres::Client {
    let url = base.replacen("okf+postgres://", "postgres://", 1);
    postgres::Client::connect(&url, postgres::NoTls)
        .unwrap_or_else(|e| panic!("cannot reach {url}: {e}"))
}

/// The first key of okfit's PostgreSQL commit locks
/// (`pg_advisory_lock(key, tenant id)`), as the store takes them.
const COMMIT_LOCKS: i32 = 0x6f6b_6663;

/// A commit lock on a tenant held by the test itself, as another okfit
/// process would hold it while committing; released when dropped.
pub enum CommitLockHeld {
    /// The lock file, locked.
    Sqlite(std::fs::File),
    /// The session holding the advisory lock.
    Postgres(Box<postgres::Client>),
}

impl Tenants {
    /// Takes `tenant`'s commit lock (the tenant must exist): commits by
    /// okfit processes wait until the returned lock drops.
    pub fn hold_commit_lock(&self, tenant: &str) -> CommitLockHeld {
        match &self.postgres {
            None => {
                let file = std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false)
                    .open(self.tenant_dir(tenant).join("okfit.lock"))
                    .expect("open the tenant's lock file");
                file.lock().expect("lock the tenant's lock file");
                CommitLockHeld::Sqlite(file)
            }
            Some(base) => {
                let base = base.clone();
                let tenant = tenant.to_string();
                std::thread::spawn(move || {
                    let mut c = admin(&base);
                    let id: i64 = c
                        .query_one("SELECT id FROM okfit_tenants WHERE name = $1", &[&tenant])
                        .expect("the tenant exists")
                        .get(0);
                    c.execute(
                        "SELECT pg_advisory_lock($1, $2)",
                        &[&COMMIT_LOCKS, &(id as i32)],
                    )
                    .expect("take the commit lock");
                    CommitLockHeld::Postgres(Box::new(c))
                })
                .join()
                .unwrap_or_else(|p| std::panic::resume_unwind(p))
            }
        }
    }
}

pub const OKFIT: &str = env!("CARGO_BIN_EXE_okfit");
pub const HANG: Duration = Duration::from_secs(120);

pub fn server() -> String {
    std::env::var("OKFIT_TEST_POSTGRES").unwrap_or_else(|_| {
        panic!(
            "OKFIT_TEST_POSTGRES is not set: the PostgreSQL tests need a server. Run ./scripts/test.sh (it starts one), or start one with scripts/pg.sh start DIR and export the URL it prints"
        )
    })
}

/// The test server's cluster folder (`OKFIT_TEST_PGDIR`): `tls/ca.pem`
/// is the CA of its certificate.
pub fn cluster() -> PathBuf {
    PathBuf::from(std::env::var_os("OKFIT_TEST_PGDIR").unwrap_or_else(|| {
        panic!("OKFIT_TEST_PGDIR is not set: run ./scripts/test.sh, which starts the test server and names its folder")
    }))
}

static DATABASES: AtomicUsize = AtomicUsize::new(0);

/// A new empty database on the test server, as an `okf+postgres://` base
/// (append `?tenant=…`). Safe to call from async tests: the blocking client
/// runs on a thread of its own.
pub fn fresh_database() -> String {
    std::thread::spawn(create_database)
        .join()
        .unwrap_or_else(|p| std::panic::resume_unwind(p))
}

fn create_database() -> String {
    let base = server();
    let name = format!(
        "okfit_t{}_{}",
        std::process::id(),
        DATABASES.fetch_add(1, Ordering::SeqCst)
    );
    let mut c = postgres::Client::connect(&base, postgres::NoTls)
        .unwrap_or_else(|e| panic!("cannot reach the test server {base}: {e}"));
    c.batch_execute(&format!("CREATE DATABASE {name}"))
        .unwrap_or_else(|e| panic!("cannot create database {name}: {e}"));
    let mut u = url::Url::parse(&base).expect("OKFIT_TEST_POSTGRES is a URL");
    u.set_path(&format!("/{name}"));
    u.set_query(None);
    u.to_string().replacen("postgres://", "okf+postgres://", 1)
}

/// A sandbox folder (see [`common::Dir`]) whose tenants live in one
/// backend: the harness the store and knowledge tests share.
pub struct Stores {
    dir: common::Dir,
    pub tenants: Tenants,
}

impl std::ops::Deref for Stores {
    type Target = common::Dir;
    fn deref(&self) -> &common::Dir {
        &self.dir
    }
}

impl Stores {
    /// A sandbox whose tenants live in SQLite files under `data/`.
    pub fn new() -> Stores {
        Stores::on(Backend::Sqlite)
    }

    /// A sandbox whose tenants live in `backend` (PostgreSQL: a fresh
    /// database on the test server).
    pub fn on(backend: Backend) -> Stores {
        let dir = common::Dir::with_prefix("okfit-store-");
        Stores {
            tenants: Tenants::on(backend, dir.path("data")),
            dir,
        }
    }

    /// The data root every store test uses.
    pub fn data(&self) -> String {
        self.tenants.data()
    }

    /// A tenant's directory in the data root.
    pub fn tenant_dir(&self, tenant: &str) -> PathBuf {
        self.tenants.tenant_dir(tenant)
    }

    /// `okf:///<sandbox>/data?tenant=<tenant>`, or the tenant of the
    /// sandbox's PostgreSQL database.
    pub fn store_dsn(&self, tenant: &str) -> String {
        self.tenants.dsn(tenant)
    }
}

/// The PostgreSQL tests' sandbox folder.
pub type Sandbox = common::Dir;

impl Sandbox {
    pub fn new() -> Sandbox {
        Sandbox::with_prefix("okfit-pg-")
    }

    pub fn okfit(&self, args: &[&str], input: Option<&[u8]>) -> Out {
        common::run(self.sandboxed(OKFIT, args), input, HANG)
    }

    /// `okfit args` with one more environment variable.
    pub fn okfit_with(&self, var: (&str, &Path), args: &[&str]) -> Out {
        let mut c = self.sandboxed(OKFIT, args);
        c.env(var.0, var.1);
        common::run(c, None, HANG)
    }
}

pub fn fixture(name: &str) -> PathBuf {
    common::fixture("kb-native", name)
}

/// Whether `f` holds within 5 s, tried every 10 ms.
pub fn eventually(mut f: impl FnMut() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        if f() {
            return true;
        }
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The current hash of b/doc.md from `okfit export`.
pub fn current_hash(sb: &Sandbox, dsn: &str) -> String {
    let to = sb.path(&format!("x{}", DATABASES.fetch_add(1, Ordering::SeqCst)));
    sb.okfit(&["export", &to.display().to_string(), "-c", dsn], None)
        .expect_code(0);
    let bytes = std::fs::read(to.join("b/doc.md")).expect("exported document");
    common::sha256_hex(&bytes)
}

/// An `okfit serve` replica over a PostgreSQL store, on a unix socket of
/// its own; killed when dropped.
pub struct Replica {
    pub child: std::process::Child,
    pub socket: PathBuf,
    /// Every line the replica wrote on stderr so far.
    pub stderr: Arc<Mutex<Vec<String>>>,
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Replica {
    pub fn start(sb: &Sandbox, name: &str, store: &str) -> Replica {
        use std::io::BufRead as _;
        let data = sb.path(&format!("{name}-data"));
        let socket = sb.path(&format!("{name}.sock"));
        let mut c = Command::new(OKFIT);
        c.current_dir(&sb.root)
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", sb.path("home"))
            .env("LC_ALL", "C")
            .args(["serve", "--data"])
            .arg(&data)
            .args(["--store", store, "--socket"])
            .arg(&socket)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped());
        let child = c.spawn().expect("spawn okfit serve");
        // Dropped (killed and waited for) on every path out of here.
        let mut r = Replica {
            child,
            socket,
            stderr: Arc::default(),
        };
        let err = r.child.stderr.take().expect("stderr");
        let lines = r.stderr.clone();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(err).lines().map_while(Result::ok) {
                lines.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
        if !r.wait_for("okfit serving ", Duration::from_secs(30)) {
            panic!("replica {name} did not start: {:?}", r.lines());
        }
        r
    }

    /// What the replica wrote on stderr so far.
    pub fn lines(&self) -> Vec<String> {
        self.stderr
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }

    /// Waits until a stderr line contains `needle`; false when `timeout`
    /// passes or the replica exits first.
    pub fn wait_for(&mut self, needle: &str, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        while std::time::Instant::now() < deadline {
            if self.lines().iter().any(|l| l.contains(needle)) {
                return true;
            }
            if let Ok(Some(_)) = self.child.try_wait() {
                return self.lines().iter().any(|l| l.contains(needle));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }

    pub fn dsn(&self, tenant: &str) -> String {
        format!("okf+unix://{}?tenant={tenant}", self.socket.display())
    }

    /// `GET path` on the replica's socket: the status and the body.
    pub fn get(&self, path: &str) -> (u16, String) {
        use std::io::{Read as _, Write as _};
        let mut s = std::os::unix::net::UnixStream::connect(&self.socket).expect("connect");
        s.set_read_timeout(Some(HANG)).expect("timeout");
        write!(
            s,
            "GET {path} HTTP/1.1\r\nHost: okfit\r\nConnection: close\r\n\r\n"
        )
        .expect("send");
        let mut raw = vec![];
        s.read_to_end(&mut raw).expect("answer");
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let status = raw
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        let body = raw.split_once("\r\n\r\n").map_or("", |(_, b)| b);
        (status, body.to_string())
    }

    /// The value of the first metric line starting with `prefix`.
    pub fn metric(&self, prefix: &str) -> Option<f64> {
        let (_, body) = self.get("/metrics");
        body.lines()
            .find(|l| l.starts_with(prefix))
            .and_then(|l| l.rsplit(' ').next())
            .and_then(|v| v.parse().ok())
    }
}

/// Two writers replace b/doc.md at once, both over `hash`, each through
/// its connection: exactly one may succeed.
pub fn race(sb: &Sandbox, dsns: [&str; 2], hash: &str, round: usize) {
    let outs: Vec<Out> = std::thread::scope(|s| {
        let hs: Vec<_> = dsns
            .iter()
            .enumerate()
            .map(|(i, dsn)| {
                s.spawn(move || {
                    let body = format!("# Doc\n\nround {round}, writer {i}\n");
                    sb.okfit(
                        &["write", "b", "doc.md", "--replaces", hash, "-c", dsn],
                        Some(body.as_bytes()),
                    )
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().expect("writer")).collect()
    });
    let won = outs.iter().filter(|o| o.code == 0).count();
    let seen: Vec<(i32, &str)> = outs.iter().map(|o| (o.code, o.stderr.as_str())).collect();
    assert_eq!(won, 1, "round {round}: {seen:?}");
}
