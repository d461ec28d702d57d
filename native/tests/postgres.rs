//! The PostgreSQL store behaves as the SQLite store does: a scripted
//! session of every store command gives the same bytes on both (revision
//! ids and commit times aside), two writers racing for one document get
//! exactly one success, and one tenant never sees another's documents.
//!
//! Needs `OKFIT_TEST_POSTGRES`, the `postgres://` URL of a server on which
//! the tests may create databases: `./scripts/test.sh` starts a throwaway
//! cluster and sets it (`scripts/pg.sh start DIR` prints one by hand).
//! Without it these tests fail: they never pass by skipping.

mod common;
#[path = "common/pg.rs"]
mod pg;

use pg::{cluster, current_hash, fixture, fresh_database, race, Replica, Sandbox};
use std::path::Path;

/// One step of the scripted session: arguments (the connection is added)
/// and stdin.
struct Step {
    args: Vec<String>,
    input: Option<Vec<u8>>,
}

fn step(args: &[&str]) -> Step {
    Step {
        args: args.iter().map(|s| s.to_string()).collect(),
        input: None,
    }
}

fn step_in(args: &[&str], input: impl Into<Vec<u8>>) -> Step {
    Step {
        input: Some(input.into()),
        ..step(args)
    }
}

const REVENUE: &str = "---\ntype: Metric\ntitle: Revenue\ndescription: Money in, net of refunds.\nstatus: draft\n---\n\n# Revenue\n\nSum of [orders](../tables/orders.md) less refunds, per day.\n";
const CHURN: &str = "---\ntype: Metric\ntitle: Churn\ndescription: Customers lost per month.\n---\n\n# Churn\n\nCounted at month end.\n";

/// Runs the session against `dsn`; every step's exit code, stdout and
/// stderr, with revision ids numbered in order of appearance and commit
/// times blanked.
fn session(sb: &Sandbox, dsn: &str, store: &str) -> Vec<String> {
    let sales = fixture("sales").display().to_string();
    let imp = sb.path("imp");
    common::copy_tree(&fixture("sales"), &imp.join("sales"));
    common::copy_tree(&fixture("ops"), &imp.join("ops"));
    let imp = imp.display().to_string();
    let deploy = std::fs::read(fixture("ops").join("deploy.md")).expect("fixture");
    let batch = serde_json::json!({"changes": [
        {"operation": "write", "bundle": "sales", "path": "metrics/churn.md", "content": CHURN},
        {"operation": "delete", "bundle": "ops", "path": "deploy.md", "replaces": common::sha256_hex(&deploy)}
    ]})
    .to_string();
    let stale = "0".repeat(64);
    let steps = vec![
        step(&["manifest"]),
        step(&["put", &sales]),
        step(&["manifest"]),
        step(&["import", &imp]),
        step(&["snapshot"]),
        step(&["search", "revenue refunds"]),
        step(&["get", "customers"]),
        step_in(
            &["write", "sales", "metrics/revenue.md", "--force"],
            REVENUE,
        ),
        step_in(
            &["write", "sales", "metrics/revenue.md", "--replaces", &stale],
            REVENUE,
        ),
        step_in(&["write", "sales", "metrics/new.md", "--create"], CHURN),
        step_in(&["write", "sales", "metrics/new.md", "--create"], CHURN),
        step(&["delete", "sales", "metrics/new.md", "--force"]),
        step_in(&["transact"], batch.clone()),
        step_in(&["transact"], batch),
        step(&["manifest"]),
        step(&["search", "customers lost"]),
        step(&["history", "--limit", "3"]),
        step(&["verify"]),
        step(&["gc", "--keep", "2"]),
        step(&["history"]),
        step(&["verify"]),
        step(&["snapshot"]),
    ];
    let mut out = vec![];
    for s in &steps {
        let mut args: Vec<&str> = s.args.iter().map(String::as_str).collect();
        args.extend(["-c", dsn]);
        let o = sb.okfit(&args, s.input.as_deref());
        out.push(format!(
            "$ okfit {}\nexit {}\n{}\n--- stderr\n{}",
            s.args.join(" "),
            o.code,
            String::from_utf8_lossy(&o.stdout),
            o.stderr
        ));
    }
    // Restore the first retained revision, then export every document.
    let history = sb.okfit(&["history", "-c", dsn], None);
    let v: serde_json::Value = serde_json::from_slice(&history.stdout).unwrap_or_default();
    let revisions = v["revisions"].as_array().cloned().unwrap_or_default();
    let id =
        |r: Option<&serde_json::Value>| r.and_then(|r| r["revision"].as_str().map(str::to_string));
    if let (Some(head), Some(oldest)) = (id(revisions.first()), id(revisions.last())) {
        let o = sb.okfit(
            &["restore", &oldest, "--expected-revision", &head, "-c", dsn],
            None,
        );
        out.push(format!(
            "$ okfit restore <oldest>\nexit {}\n{}\n--- stderr\n{}",
            o.code,
            String::from_utf8_lossy(&o.stdout),
            o.stderr
        ));
    }
    let to = sb.path("export");
    let o = sb.okfit(&["export", &to.display().to_string(), "-c", dsn], None);
    out.push(format!("$ okfit export\nexit {}\n{}", o.code, o.stderr));
    for (p, b) in common::tree_bytes(&to) {
        out.push(format!("{p} {}", common::sha256_hex(&b)));
    }
    let out = out
        .into_iter()
        .map(|l| l.replace(store, "<store>"))
        .collect();
    normalise(out, &sb.root)
}

/// Numbers revision ids in order of first appearance and blanks commit
/// times and the sandbox path.
fn normalise(lines: Vec<String>, root: &Path) -> Vec<String> {
    let root = root.display().to_string();
    let mut ids: Vec<String> = vec![];
    let created = regex_created();
    lines
        .into_iter()
        .map(|l| {
            let l = l.replace(&root, "<sandbox>");
            let l = cursors(&created(&l));
            let mut out = l.clone();
            for w in revision_ids(&l) {
                if !ids.contains(&w) {
                    ids.push(w.clone());
                }
            }
            for (i, id) in ids.iter().enumerate() {
                out = out.replace(id, &format!("<rev{}>", i + 1));
            }
            out
        })
        .collect()
}

/// The revision ids a line names: the values of `"revision"` and
/// `"parent"` keys, and the ids `okfit` prints after "revision ".
fn revision_ids(line: &str) -> Vec<String> {
    let mut out = vec![];
    for key in [
        "\"revision\":\"",
        "\"parent\":\"",
        "revision ",
        "before=",
        "expectedRevision\":\"",
    ] {
        let mut rest = line;
        while let Some(i) = rest.find(key) {
            let tail = &rest[i + key.len()..];
            let id: String = tail.chars().take_while(|c| c.is_ascii_hexdigit()).collect();
            if id.len() == 64 {
                out.push(id);
            }
            rest = tail;
        }
    }
    out
}

/// Shows history cursors (`"next":"…"`, base64 of the revision they
/// continue before) as `cursor(before=<id>)`.
fn cursors(line: &str) -> String {
    use base64::Engine as _;
    let key = "\"next\":\"";
    let Some(i) = line.find(key) else {
        return line.to_string();
    };
    let tail = &line[i + key.len()..];
    let end = tail.find('"').unwrap_or(tail.len());
    let decoded = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(&tail[..end])
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let before = decoded
        .as_ref()
        .and_then(|v| v["before"].as_str())
        .unwrap_or("?");
    format!(
        "{}cursor(before={before}){}",
        &line[..i + key.len()],
        &tail[end..]
    )
}

/// Blanks `"created":"…"` values.
fn regex_created() -> impl Fn(&str) -> String {
    |line: &str| {
        let key = "\"created\":\"";
        let mut out = String::new();
        let mut rest = line;
        while let Some(i) = rest.find(key) {
            out.push_str(&rest[..i + key.len()]);
            let tail = &rest[i + key.len()..];
            let end = tail.find('"').unwrap_or(tail.len());
            out.push_str("<time>");
            rest = &tail[end..];
        }
        out.push_str(rest);
        out
    }
}

#[test]
fn a_scripted_session_answers_the_same_on_sqlite_and_postgresql() {
    let lite = Sandbox::new();
    let data = lite.path("data").display().to_string();
    let sqlite = session(&lite, &format!("okf://{data}?tenant=acme"), &data);
    let pg = Sandbox::new();
    let db = fresh_database();
    let shown = db.trim_start_matches("okf+").to_string();
    let postgres = session(&pg, &format!("{db}?tenant=acme"), &shown);
    if let Some(p) = std::env::var_os("OKFIT_TEST_SESSION_OUT") {
        std::fs::write(p, sqlite.join("\n")).expect("session transcript");
    }
    assert_eq!(sqlite.len(), postgres.len());
    for (a, b) in sqlite.iter().zip(&postgres) {
        assert_eq!(a, b, "SQLite and PostgreSQL differ");
    }
    // The session did what it says: commits, refusals, gc and a restore.
    let all = sqlite.join("\n");
    for expected in [
        "concept changed since it was read",
        "concept already exists",
        "$ okfit restore <oldest>\nexit 0",
        "<rev5>",
    ] {
        assert!(all.contains(expected), "{expected}: {all}");
    }
}

#[test]
fn racing_writers_get_exactly_one_success() {
    let base = fresh_database();
    let dsn = format!("{base}?tenant=race");
    let sb = Sandbox::new();
    let first = sb.okfit(
        &["write", "b", "doc.md", "--create", "-c", &dsn],
        Some(b"# Doc\n\nversion 0\n"),
    );
    first.expect_code(0);
    for round in 0..20 {
        let hash = current_hash(&sb, &dsn);
        race(&sb, [&dsn, &dsn], &hash, round);
    }
    let v = sb.okfit(&["verify", "-c", &dsn], None);
    v.expect_code(0);
}

#[test]
fn one_tenant_never_sees_another() {
    let base = fresh_database();
    let sb = Sandbox::new();
    let a = format!("{base}?tenant=alpha");
    let b = format!("{base}?tenant=beta");
    sb.okfit(
        &["write", "x", "secret.md", "--create", "-c", &a],
        Some(CHURN.as_bytes()),
    )
    .expect_code(0);
    let m = sb.okfit(&["manifest", "-c", &b], None);
    assert_ne!(m.code, 0, "beta does not exist yet");
    assert!(m.stderr.contains("no tenant \"beta\""), "{}", m.stderr);
    sb.okfit(
        &["write", "y", "open.md", "--create", "-c", &b],
        Some(REVENUE.as_bytes()),
    )
    .expect_code(0);
    let m = sb.okfit(&["manifest", "-c", &b], None).ok();
    assert!(!m.contains("Churn") && !m.contains("secret"), "{m}");
    let s = sb.okfit(&["search", "customers lost", "-c", &b], None).ok();
    assert!(!s.contains("secret"), "{s}");
    let m = sb.okfit(&["manifest", "-c", &a], None).ok();
    assert!(!m.contains("open"), "{m}");
}

/// A fresh database (its `okf+postgres://` base), a sandbox, and replicas
/// `a` and `b` serving it.
fn two_replicas() -> (String, Sandbox, Replica, Replica) {
    let base = fresh_database();
    let store = base.trim_start_matches("okf+").to_string();
    let sb = Sandbox::new();
    let a = Replica::start(&sb, "a", &store);
    let b = Replica::start(&sb, "b", &store);
    (base, sb, a, b)
}

#[test]
fn replicas_over_one_database_see_each_others_commits() {
    let (_, sb, a, b) = two_replicas();
    let (via_a, via_b) = (a.dsn("acme"), b.dsn("acme"));
    sb.okfit(
        &["write", "b1", "seed.md", "--create", "-c", &via_a],
        Some(REVENUE.as_bytes()),
    )
    .expect_code(0);
    // Warm both replicas' read models, then commit through one and read
    // through the other at once: the next read shows the commit.
    for r in [&via_a, &via_b] {
        sb.okfit(&["search", "revenue", "-c", r], None)
            .expect_code(0);
    }
    let mut waits = vec![];
    for i in 0..30 {
        let (from, to) = if i % 2 == 0 {
            (&via_a, &via_b)
        } else {
            (&via_b, &via_a)
        };
        let word = format!("zebra{i}quokka");
        let body =
            format!("---\ntype: Metric\ntitle: Note {i}\n---\n\n# Note {i}\n\nAbout {word}.\n");
        sb.okfit(
            &["write", "b1", &format!("n{i}.md"), "--create", "-c", from],
            Some(body.as_bytes()),
        )
        .expect_code(0);
        // Replicas learn of each other's commits from the database's
        // announcements: a read may run a few milliseconds ahead of one.
        let t = std::time::Instant::now();
        let mut reads = 0;
        let seen = pg::eventually(|| {
            reads += 1;
            let s = sb.okfit(&["search", &word, "-c", to], None).ok();
            s.contains(&format!("n{i}"))
        });
        assert!(seen, "round {i}: the other replica never showed the commit");
        waits.push((t.elapsed(), reads));
    }
    // Each replica heard the other's commits announced, and follows them.
    for r in [&a, &b] {
        assert_eq!(r.metric("okfit_db_following_commits{"), Some(1.0));
        let heard = r.metric("okfit_db_announcements_received_total{");
        assert!(heard.is_some_and(|n| n >= 15.0), "{heard:?}");
        assert_eq!(r.get("/readyz"), (200, "ready".to_string()));
    }
    waits.sort();
    let late = waits.iter().filter(|(_, reads)| *reads > 1).count();
    eprintln!(
        "a commit through one replica, read through the other: shown after p50 {:?}, p95 {:?} (whole okfit processes); {late} of 30 needed a second read",
        waits[waits.len() / 2].0,
        waits[waits.len() * 95 / 100].0
    );
}

#[test]
fn writers_racing_through_two_replicas_get_exactly_one_success() {
    let (base, sb, a, b) = two_replicas();
    let dsns = [a.dsn("race"), b.dsn("race")];
    let direct = format!("{base}?tenant=race");
    sb.okfit(
        &["write", "b", "doc.md", "--create", "-c", &dsns[0]],
        Some(b"# Doc\n\nv0\n"),
    )
    .expect_code(0);
    for round in 0..100 {
        let hash = current_hash(&sb, &direct);
        race(&sb, [&dsns[0], &dsns[1]], &hash, round);
    }
    sb.okfit(&["verify", "-c", &direct], None).expect_code(0);
    let h = sb
        .okfit(&["history", "--limit", "100", "-c", &direct], None)
        .json();
    assert_eq!(h["revisions"].as_array().map(Vec::len), Some(100));
}

#[test]
fn tls_is_spoken_as_sslmode_asks() {
    // The test server lets okfit_tls in over TLS only, with a certificate
    // for 127.0.0.1 issued by the CA in tls/ca.pem.
    let base = fresh_database().replacen("//okfit@", "//okfit_tls@", 1);
    let by_name = base.replacen("@127.0.0.1:", "@localhost:", 1);
    let ca = cluster().join("tls/ca.pem");
    let ca_text = ca.display().to_string();
    let sb = Sandbox::new();
    let dsn = |base: &str, query: &str| format!("{base}?tenant=t&{query}");
    let manifest = |dsn: &str| sb.okfit(&["manifest", "-c", dsn], None);

    let o = manifest(&dsn(&base, "sslmode=disable"));
    assert_ne!(o.code, 0);
    assert!(o.stderr.contains("no encryption"), "{}", o.stderr);
    // Encrypted, the certificate unchecked (libpq's require).
    sb.okfit(
        &[
            "write",
            "b",
            "a.md",
            "--create",
            "-c",
            &dsn(&base, "sslmode=require"),
        ],
        Some(REVENUE.as_bytes()),
    )
    .expect_code(0);
    // prefer (the default) takes TLS when offered.
    manifest(&format!("{base}?tenant=t")).expect_code(0);
    let full = format!("sslmode=verify-full&sslrootcert={ca_text}");
    assert!(manifest(&dsn(&base, &full)).ok().contains("Money in"));
    // No root trusts the certificate: refused, saying how to name one.
    let o = manifest(&dsn(&base, "sslmode=verify-full"));
    assert_ne!(o.code, 0);
    assert!(
        o.stderr.contains("certificate") && o.stderr.contains("sslrootcert"),
        "{}",
        o.stderr
    );
    // OKFIT_TLS_CA is trusted too.
    sb.okfit_with(
        ("OKFIT_TLS_CA", &ca),
        &["manifest", "-c", &dsn(&base, "sslmode=verify-full")],
    )
    .expect_code(0);
    // The certificate is for 127.0.0.1, not localhost: verify-full
    // refuses the name, verify-ca accepts the chain.
    let o = manifest(&dsn(&by_name, &full));
    assert_ne!(o.code, 0);
    assert!(
        o.stderr.contains("not valid for name") && o.stderr.contains("verify-ca"),
        "{}",
        o.stderr
    );
    manifest(&dsn(
        &by_name,
        &format!("sslmode=verify-ca&sslrootcert={ca_text}"),
    ))
    .expect_code(0);
    // A mode libpq does not know is named.
    let o = manifest(&dsn(&base, "sslmode=verify"));
    assert_ne!(o.code, 0);
    assert!(o.stderr.contains("verify-full"), "{}", o.stderr);
}

/// A folder `imp` holding bundle `kb` with `n` notes (`n0000.md`, … as
/// `note` writes them); its path.
fn notes_folder(sb: &Sandbox, n: usize, note: impl Fn(usize) -> String) -> String {
    for i in 0..n {
        let p = sb.path(&format!("imp/kb/n{i:04}.md"));
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, note(i)).unwrap();
    }
    sb.path("imp").display().to_string()
}

/// Asserts that each command of `asked` prints the same on both
/// connections.
fn answers_agree(sb: &Sandbox, dsns: [&str; 2], asked: &[&[&str]], when: &str) {
    for args in asked {
        let on = |dsn: &str| {
            let mut a = args.to_vec();
            a.extend(["-c", dsn]);
            sb.okfit(&a, None).ok()
        };
        assert_eq!(on(dsns[0]), on(dsns[1]), "{when}: {args:?} differs");
    }
}

#[test]
fn commits_of_thousands_of_documents_answer_as_on_sqlite() {
    // 2,400 documents in one import: several runs of slots and tens of
    // thousands of postings rows in one commit. Then a second import
    // rewrites half of them with other words and deletes 300.
    let sb = Sandbox::new();
    let note = |i: usize, v: usize| {
        format!(
            "---\ntype: Note\ndescription: Note {i}, version {v}.\n---\n# N{i}\n\nalpha{} beta{} common words here gamma{v}x{}\n",
            i % 37,
            i % 101,
            i % 7
        )
    };
    let imp = notes_folder(&sb, 2400, |i| note(i, 1));
    let pg = format!("{}?tenant=big", fresh_database());
    let lite = format!("okf://{}?tenant=big", sb.path("data").display());
    let import = |dsn: &str| {
        sb.okfit(&["import", &imp, "-c", dsn], None).expect_code(0);
    };
    let same = |when: &str| {
        let asked: &[&[&str]] = &[
            &["snapshot"],
            &["search", "alpha5", "beta7", "-k", "20"],
            &["search", "common", "-k", "50"],
            &["search", "gamma2x3", "-k", "50"],
            &["manifest"],
        ];
        answers_agree(&sb, [&pg, &lite], asked, when);
    };
    import(&pg);
    import(&lite);
    same("after 2,400 documents in one commit");
    for i in 0..1200 {
        std::fs::write(sb.path(&format!("imp/kb/n{i:04}.md")), note(i, 2)).unwrap();
    }
    for i in 2100..2400 {
        std::fs::remove_file(sb.path(&format!("imp/kb/n{i:04}.md"))).unwrap();
    }
    import(&pg);
    import(&lite);
    same("after rewriting 1,200 and deleting 300");
    let v = sb.okfit(&["verify", "-c", &pg], None).ok();
    assert!(v.contains("\"ok\":true"), "{v}");
}

#[test]
fn single_writes_left_pending_answer_as_on_sqlite_before_and_after_folding() {
    // Commits of one document leave their postings pending; searches read
    // a pending document's postings from its stored terms, a process that
    // sees enough pending folds them in the background, and gc folds the
    // rest: every search answers as on SQLite throughout.
    let sb = Sandbox::new();
    let note = |i: usize, v: usize| {
        format!(
            "---\ntype: Note\ndescription: Note {i}, version {v}.\n---\n# N{i}\n\nalpha{} beta{} shared words v{v}w{}\n",
            i % 13,
            (i + v) % 17,
            i % 5
        )
    };
    let imp = notes_folder(&sb, 150, |i| note(i, 1));
    let pg = format!("{}?tenant=pend", fresh_database());
    let lite = format!("okf://{}?tenant=pend", sb.path("data").display());
    let same = |when: &str| {
        let asked: &[&[&str]] = &[
            &["search", "alpha3", "beta5", "-k", "20"],
            &["search", "shared", "-k", "50"],
            &["search", "v2w3", "v3w1", "-k", "50"],
            &["search", "alpha7", "v4w2", "-k", "50"],
            &["snapshot"],
        ];
        answers_agree(&sb, [&pg, &lite], asked, when);
    };
    for dsn in [&pg, &lite] {
        sb.okfit(&["import", &imp, "-c", dsn], None).expect_code(0);
    }
    let mut gone = std::collections::HashSet::new();
    for round in 0..100usize {
        let i = (round * 37) % 150;
        let path = format!("n{i:04}.md");
        let delete = round % 9 == 4 && gone.insert(i);
        let how = if !delete && gone.remove(&i) {
            "--create"
        } else {
            "--force"
        };
        for dsn in [&pg, &lite] {
            if delete {
                sb.okfit(&["delete", "kb", &path, "--force", "-c", dsn], None)
                    .expect_code(0);
            } else {
                let text = note(i, 2 + round % 4);
                sb.okfit(
                    &["write", "kb", &path, how, "-c", dsn],
                    Some(text.as_bytes()),
                )
                .expect_code(0);
            }
        }
        if round % 20 == 19 {
            same(&format!("after {} single writes", round + 1));
        }
    }
    // One commit of 30 new documents: pending too.
    let created: Vec<serde_json::Value> = (0..30)
        .map(|i| {
            serde_json::json!({"operation": "write", "bundle": "kb",
                "path": format!("m{i:02}.md"), "content": note(i + 500, 7)})
        })
        .collect();
    let batch = serde_json::json!({ "changes": created }).to_string();
    for dsn in [&pg, &lite] {
        sb.okfit(&["transact", "-c", dsn], Some(batch.as_bytes()))
            .expect_code(0);
    }
    same("after a commit of 30 documents");
    // An import bringing every document back to the folder's text: one
    // commit of more than 64, over pending documents.
    for dsn in [&pg, &lite] {
        sb.okfit(&["import", &imp, "-c", dsn], None).expect_code(0);
    }
    same("after an import over pending documents");
    sb.okfit(&["gc", "--keep", "1000", "-c", &pg], None)
        .expect_code(0);
    same("after gc folded every pending document");
    let v = sb.okfit(&["verify", "-c", &pg], None).ok();
    assert!(v.contains("\"ok\":true"), "{v}");
}
