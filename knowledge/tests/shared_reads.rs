//! Reads of a store tenant share one model across threads and run beside
//! commits made through another connection: each read sees a whole
//! revision, and never an older one than a read before it.

use okfit_knowledge::{GetOptions, Knowledge};
use okfit_store::change::{Change, Pre};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

fn concept(n: usize) -> Vec<u8> {
    format!(
        "---\ntype: Note\ntitle: Harbour {n}\n---\n# Harbour {n}\n\nThe harbour pilot boards ship {n} at dawn.\n"
    )
    .into_bytes()
}

fn write(n: usize) -> Change {
    Change {
        bundle: "ships".into(),
        path: format!("ship-{n:03}.md"),
        content: Some(concept(n)),
        pre: Pre::Create,
    }
}

/// The direct hit count a search answer reports.
fn direct_hits(answer: &str) -> usize {
    let line = answer
        .lines()
        .find_map(|l| l.strip_prefix("# hits: "))
        .unwrap_or_else(|| panic!("no hits line in {answer}"));
    line.split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn concurrent_reads_see_whole_revisions_in_order_while_another_connection_commits() {
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("okf://{}?tenant=fleet", dir.path().join("data").display());
    let writer = Knowledge::open(&dsn).unwrap();
    // Two documents per commit: a read that saw half a commit would count
    // an odd number of concepts.
    writer.commit(vec![write(0), write(1)], None).unwrap();
    let reader = Arc::new(Knowledge::open(&dsn).unwrap());
    let done = Arc::new(AtomicBool::new(false));
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let reader = reader.clone();
            let done = done.clone();
            std::thread::spawn(move || {
                let mut last = 0;
                let mut reads = 0;
                while !done.load(Ordering::SeqCst) || reads < 5 {
                    let (_, concepts) = reader.snapshot().unwrap();
                    assert_eq!(concepts % 2, 0, "thread {t} saw half a commit");
                    assert!(
                        concepts >= last,
                        "thread {t} went back: {last} then {concepts}"
                    );
                    let hits = direct_hits(
                        &reader
                            .search_with("harbour pilot", 50, None, false)
                            .unwrap(),
                    );
                    assert!(
                        hits >= concepts.min(50),
                        "thread {t}: {hits} hits for {concepts} concepts"
                    );
                    let got = reader
                        .get(&["ship-000".into()], &GetOptions::default())
                        .unwrap();
                    assert!(got.contains("The harbour pilot boards ship 0"), "{got}");
                    last = concepts;
                    reads += 1;
                }
                last
            })
        })
        .collect();
    for n in 1..20 {
        writer
            .commit(vec![write(2 * n), write(2 * n + 1)], None)
            .unwrap();
    }
    done.store(true, Ordering::SeqCst);
    for t in threads {
        let seen = t.join().unwrap();
        assert!(seen <= 40);
    }
    // After the last commit, the very next read sees all of it.
    assert_eq!(reader.snapshot().unwrap().1, 40);
    let answer = reader
        .search_with("harbour pilot", 50, None, false)
        .unwrap();
    assert_eq!(direct_hits(&answer), 40);
}

fn sha256_hex(bytes: &[u8]) -> String {
    okfit_store::change::sha256_hex(bytes)
}

#[test]
fn commits_seeded_from_a_reader_start_from_the_revision_stored_now() {
    let dir = tempfile::tempdir().unwrap();
    let dsn = format!("okf://{}?tenant=fleet", dir.path().join("data").display());
    let other = Knowledge::open(&dsn).unwrap();
    other.commit((0..4).map(write).collect(), None).unwrap();
    let reader = Knowledge::open(&dsn).unwrap();
    let (at_first, _) = reader.snapshot().unwrap();
    // Another connection moves on after the reader loaded: ship 1
    // rewritten, ship 2 deleted, ship 10 created.
    let rewritten =
        b"---\ntype: Note\ntitle: Harbour 1\n---\n# Harbour 1\n\nShip 1 waits for the tide.\n"
            .to_vec();
    other
        .commit(
            vec![
                Change {
                    content: Some(rewritten.clone()),
                    pre: Pre::Hash(sha256_hex(&concept(1))),
                    ..write(1)
                },
                Change {
                    content: None,
                    pre: Pre::Hash(sha256_hex(&concept(2))),
                    ..write(2)
                },
                write(10),
            ],
            None,
        )
        .unwrap();
    let writer = Knowledge::open(&dsn).unwrap();
    writer.seed_from(&reader);
    // The reader's model still shows the first revision; the writer's
    // preconditions hold against the one stored now.
    let stale = Change {
        pre: Pre::Hash(sha256_hex(&concept(1))),
        ..write(1)
    };
    assert!(writer.commit(vec![stale], None).is_err());
    assert!(writer.commit(vec![write(10)], None).is_err());
    let current = Change {
        pre: Pre::Hash(sha256_hex(&rewritten)),
        ..write(1)
    };
    writer.commit(vec![current, write(2)], None).unwrap();
    // Every connection, new or old, agrees on what is stored.
    let fresh = Knowledge::open(&dsn).unwrap();
    let (now, concepts) = fresh.snapshot().unwrap();
    assert_ne!(now, at_first);
    assert_eq!(concepts, 5);
    assert_eq!(writer.snapshot().unwrap(), (now.clone(), 5));
    assert_eq!(reader.snapshot().unwrap(), (now, 5));
    let q = "harbour pilot boards";
    assert_eq!(
        reader.search_with(q, 8, None, false).unwrap(),
        fresh.search_with(q, 8, None, false).unwrap()
    );
    assert_eq!(
        direct_hits(&fresh.search_with(q, 8, None, false).unwrap()),
        5
    );
}
