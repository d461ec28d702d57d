//! Faults on the PostgreSQL store: a daemon killed mid-commit, and the
//! database server stopped at once and started again, lose no
//! acknowledged commit and leave `okfit verify` clean; the daemon
//! reconnects by itself and says so on stderr.
//!
//! Needs `OKFIT_TEST_POSTGRES` and `OKFIT_TEST_PGDIR`, the test server and
//! its cluster folder, which `./scripts/test.sh` sets (it crashes and
//! restarts that server with `scripts/pg.sh`). The tests run one after
//! another: they share the server, and one of them stops it.

mod common;
#[path = "common/pg.rs"]
mod pg;

use pg::{cluster, fresh_database, Replica, Sandbox};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// One test at a time: the server is shared and one test crashes it.
static SERIAL: Mutex<()> = Mutex::new(());

fn pg_script(what: &str) {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/pg.sh");
    let st = std::process::Command::new("bash")
        .args([script, what])
        .arg(cluster())
        .status()
        .expect("scripts/pg.sh");
    assert!(st.success(), "scripts/pg.sh {what} failed");
}

fn note(i: usize) -> String {
    format!("---\ntype: Metric\ntitle: Note {i}\ndescription: Written {i}th.\n---\n\n# Note {i}\n\nBody {i}.\n")
}

/// Writes `n{i}.md` through `dsn` one after another until `stop`; returns
/// the indices acknowledged (exit 0).
fn writer(sb: &Sandbox, dsn: &str, stop: &AtomicBool, from: usize) -> Vec<usize> {
    let mut acked = vec![];
    let mut i = from;
    while !stop.load(Ordering::SeqCst) {
        let o = sb.okfit(
            &["write", "b", &format!("n{i}.md"), "--create", "-c", dsn],
            Some(note(i).as_bytes()),
        );
        if o.code == 0 {
            acked.push(i);
        }
        i += 1;
    }
    acked
}

/// Every acknowledged document is in the store with its bytes, and the
/// store verifies clean.
fn check(sb: &Sandbox, direct: &str, acked: &[usize]) {
    let to = sb.path("check");
    let _ = std::fs::remove_dir_all(&to);
    sb.okfit(&["export", &to.display().to_string(), "-c", direct], None)
        .expect_code(0);
    for i in acked {
        let got = std::fs::read(to.join(format!("b/n{i}.md")))
            .unwrap_or_else(|e| panic!("acknowledged n{i}.md is gone: {e}"));
        assert_eq!(got, note(*i).as_bytes(), "n{i}.md");
    }
    let v = sb.okfit(&["verify", "-c", direct], None);
    assert_eq!(v.code, 0, "verify: {}", v.text());
}

/// A fresh database: its `postgres://` URL for `okfit serve --store`, the
/// `okf+postgres://` connection to its tenant `acme`, and a sandbox.
fn setup() -> (String, String, Sandbox) {
    let base = fresh_database();
    let store = base.trim_start_matches("okf+").to_string();
    (store, format!("{base}?tenant=acme"), Sandbox::new())
}

#[test]
fn a_daemon_killed_mid_commit_loses_no_acknowledged_commit() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (store, direct, sb) = setup();
    let mut acked = vec![];
    for round in 0..3 {
        let mut r = Replica::start(&sb, &format!("r{round}"), &store);
        let dsn = r.dsn("acme");
        let stop = AtomicBool::new(false);
        let got = std::thread::scope(|s| {
            let w = s.spawn(|| writer(&sb, &dsn, &stop, round * 10_000));
            std::thread::sleep(Duration::from_millis(400 + 150 * round as u64));
            // SIGKILL, wherever the daemon is in a commit.
            let _ = r.child.kill();
            let _ = r.child.wait();
            stop.store(true, Ordering::SeqCst);
            w.join().expect("writer")
        });
        assert!(!got.is_empty(), "round {round}: no write was acknowledged");
        acked.extend(got);
        check(&sb, &direct, &acked);
    }
}

#[test]
fn the_database_crashing_loses_no_acknowledged_commit_and_the_daemon_reconnects() {
    let _one = SERIAL.lock().unwrap_or_else(|p| p.into_inner());
    let (store, direct, sb) = setup();
    let mut r = Replica::start(&sb, "r", &store);
    let dsn = r.dsn("acme");
    let stop = AtomicBool::new(false);
    let acked = std::thread::scope(|s| {
        let w = s.spawn(|| writer(&sb, &dsn, &stop, 0));
        std::thread::sleep(Duration::from_millis(500));
        pg_script("crash");
        std::thread::sleep(Duration::from_millis(500));
        pg_script("restart");
        // Writes succeed again without restarting the daemon.
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        let mut again = false;
        while !again && std::time::Instant::now() < deadline {
            let o = sb.okfit(&["search", "note", "-c", &dsn], None);
            again = o.code == 0;
            std::thread::sleep(Duration::from_millis(100));
        }
        std::thread::sleep(Duration::from_millis(300));
        stop.store(true, Ordering::SeqCst);
        let acked = w.join().expect("writer");
        assert!(
            again,
            "the daemon did not answer again after the database restarted"
        );
        acked
    });
    assert!(
        r.wait_for("reconnected to PostgreSQL", Duration::from_secs(5)),
        "the daemon did not say it reconnected: {:?}",
        r.lines()
    );
    assert!(acked.len() > 2, "too few writes acknowledged: {acked:?}");
    check(&sb, &direct, &acked);
    // The daemon follows commit announcements again, so a commit made by
    // another process after the restart reaches its reads.
    assert!(
        r.wait_for("following commits on PostgreSQL", Duration::from_secs(15)),
        "the daemon did not say it follows commits again: {:?}",
        r.lines()
    );
    sb.okfit(
        &["write", "b", "after.md", "--create", "-c", &direct],
        Some(b"---\ntype: Metric\ntitle: After\n---\n\n# After\n\nwombatafter\n"),
    )
    .expect_code(0);
    assert!(
        pg::eventually(|| sb
            .okfit(&["search", "wombatafter", "-c", &dsn], None)
            .ok()
            .lines()
            .any(|l| l.starts_with("after\t"))),
        "a commit made after the restart never reached the daemon's reads"
    );
}
