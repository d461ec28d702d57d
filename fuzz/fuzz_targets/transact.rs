//! The transact batch: `okfit_tools::args::Batch::from_json` (the CLI's and
//! the daemon's parse, with the reference's messages), `Batch::changes`,
//! `Knowledge::check_transaction`, `okfit_store::change::check_precondition`, then
//! the commit itself (`Knowledge::transact` on a scratch store) and the
//! same batch through the MCP `transact` tool (`Server::call`).
//!
//! Input: a JSON batch as is (the seeds are plain batches); anything that
//! is not JSON is read with `arbitrary` as a structured batch whose names
//! come mostly from a small set and whose `replaces`/`expectedRevision`
//! can be the current hash/head, so replaces and deletes get past their
//! preconditions.
//!
//! After every commit the written documents must read back as written and
//! deleted ones must be gone; every 64 commits `verify` must find nothing
//! wrong.
#![no_main]

use arbitrary::{Arbitrary, Unstructured};
use libfuzzer_sys::fuzz_target;
use okfit_store::change::{check_precondition, sha256_hex};
use okfit_knowledge::kb::{Knowledge};
use okfit_mcp::Server;
use okfit_tools::{knowledge, Options};
use okfit_fuzz::{Scratch, BUNDLES, FIXTURE_DOCS, PATHS};
use serde_json::{json, Map, Value};
use std::sync::Mutex;

const ROTATE: usize = 300;

#[derive(Arbitrary, Debug)]
enum Op {
    Write,
    Delete,
    Missing,
    Other(String),
    NotString(i64),
}

#[derive(Arbitrary, Debug)]
enum Name {
    Known(u8),
    Free(String),
    Missing,
    NotString(u32),
}

#[derive(Arbitrary, Debug)]
enum Content {
    Missing,
    Text(String),
    Fixture(u8),
    Edited(u8, String),
    NotString(bool),
}

#[derive(Arbitrary, Debug)]
enum Sel {
    Missing,
    Current,
    Literal(String),
    Digest([u8; 32]),
    NotString(u64),
}

impl Sel {
    /// The JSON value chosen (`current`: the hash or head it stands for);
    /// `None` leaves the key out.
    fn value(&self, current: Option<String>) -> Option<Value> {
        match self {
            Sel::Missing => None,
            Sel::Current => current.map(Value::String),
            Sel::Literal(s) => Some(json!(s)),
            Sel::Digest(d) => Some(json!(digest(d))),
            Sel::NotString(x) => Some(json!(x)),
        }
    }
}

#[derive(Arbitrary, Debug)]
struct Ch {
    op: Op,
    bundle: Name,
    path: Name,
    content: Content,
    replaces: Sel,
    tenant: bool,
    extra: Option<String>,
}

#[derive(Arbitrary, Debug)]
struct Batch {
    changes: Vec<Ch>,
    expected: Sel,
    tenant: bool,
    extra: Option<String>,
    via: u8,
}

struct State {
    kb: Knowledge,
    server: Server,
    commits: usize,
    _dir: Scratch,
}

fn open() -> State {
    let dir = Scratch::new("transact");
    let dsn = format!("okf://{}?tenant=fuzz", dir.path().display());
    let kb = Knowledge::open(&dsn).expect("a store connection");
    let server = Server::with_options(
        dir.path().to_path_buf(),
        &Options {
            connection: Some(dsn),
            database_tools: true,
            ..Default::default()
        },
    )
    .expect("a store server");
    State {
        kb,
        server,
        commits: 0,
        _dir: dir,
    }
}

fn name(n: &Name, known: &[&str]) -> Option<Value> {
    match n {
        Name::Known(i) => Some(json!(known[*i as usize % known.len()])),
        Name::Free(s) => Some(json!(s)),
        Name::Missing => None,
        Name::NotString(x) => Some(json!(x)),
    }
}

fn digest(b: &[u8; 32]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// A structured batch as JSON, resolving `Current` against the store.
fn to_json(b: &Batch, kb: &Knowledge) -> Value {
    let mut changes = vec![];
    for c in &b.changes {
        let mut o = Map::new();
        match &c.op {
            Op::Write => {
                o.insert("operation".into(), json!("write"));
            }
            Op::Delete => {
                o.insert("operation".into(), json!("delete"));
            }
            Op::Missing => {}
            Op::Other(s) => {
                o.insert("operation".into(), json!(s));
            }
            Op::NotString(x) => {
                o.insert("operation".into(), json!(x));
            }
        }
        let bundle = name(&c.bundle, &BUNDLES);
        let path = name(&c.path, &PATHS);
        let current = match (&bundle, &path) {
            (Some(Value::String(b)), Some(Value::String(p))) => {
                kb.read_source(b, p).ok().flatten().map(|(_, h)| h)
            }
            _ => None,
        };
        if let Some(v) = bundle {
            o.insert("bundle".into(), v);
        }
        if let Some(v) = path {
            o.insert("path".into(), v);
        }
        let fixture = |i: &u8| FIXTURE_DOCS[*i as usize % FIXTURE_DOCS.len()].1;
        match &c.content {
            Content::Missing => {}
            Content::Text(s) => {
                o.insert("content".into(), json!(s));
            }
            Content::Fixture(i) => {
                o.insert("content".into(), json!(fixture(i)));
            }
            Content::Edited(i, s) => {
                o.insert("content".into(), json!(format!("{}{s}", fixture(i))));
            }
            Content::NotString(x) => {
                o.insert("content".into(), json!(x));
            }
        }
        if let Some(v) = c.replaces.value(current) {
            o.insert("replaces".into(), v);
        }
        if c.tenant {
            o.insert("tenant".into(), json!("fuzz"));
        }
        if let Some(k) = &c.extra {
            o.insert(k.clone(), json!(true));
        }
        changes.push(Value::Object(o));
    }
    let mut top = Map::new();
    top.insert("changes".into(), Value::Array(changes));
    if let Some(v) = b.expected.value(kb.head().ok().flatten()) {
        top.insert("expectedRevision".into(), v);
    }
    if b.tenant {
        top.insert("tenant".into(), json!("fuzz"));
    }
    if let Some(k) = &b.extra {
        top.insert(k.clone(), json!(1));
    }
    Value::Object(top)
}

fn run(v: Value, via: u8, st: &mut State) {
    let batch = okfit_tools::args::Batch::from_json(&v);
    let batch_ok = batch.is_ok();
    let changes = batch.as_ref().map(|b| b.changes()).unwrap_or_default();
    let expected = batch
        .as_ref()
        .ok()
        .and_then(|b| b.expected_revision.as_deref());
    let shape_ok = Knowledge::check_transaction(&changes, expected).is_ok();
    let zero = "0".repeat(64);
    for c in &changes {
        let _ = check_precondition(c, None);
        let _ = check_precondition(c, Some(&zero));
    }
    if batch_ok && shape_ok && via & 1 != 0 {
        if let Ok(done) = st.kb.transact(changes.clone(), expected) {
            st.commits += 1;
            let _ = knowledge::revision_json(&st.kb, &done, &changes);
            for c in &changes {
                let now = st.kb.read_source(&c.bundle, &c.path).expect("read back");
                match &c.content {
                    Some(bytes) => {
                        let (got, hash) = now.unwrap_or_else(|| {
                            panic!("{}/{} was written but reads as absent", c.bundle, c.path)
                        });
                        assert!(
                            &got == bytes,
                            "{}/{} reads back other bytes",
                            c.bundle,
                            c.path
                        );
                        assert_eq!(hash, sha256_hex(bytes), "{}/{}: hash", c.bundle, c.path);
                    }
                    None => assert!(
                        now.is_none(),
                        "{}/{} was deleted but still reads",
                        c.bundle,
                        c.path
                    ),
                }
            }
            if st.commits % 64 == 0 {
                let v = st.kb.verify().expect("verify runs");
                assert!(
                    v.ok,
                    "verify after {} commits: {:?}",
                    st.commits, v.problems
                );
            }
        }
    }
    if via & 2 != 0 {
        if let Value::Object(m) = v {
            let r = st.server.call("transact", Some(m));
            let _ = serde_json::to_string(&r);
        }
    }
}

static STATE: Mutex<Option<State>> = Mutex::new(None);

fuzz_target!(|data: &[u8]| {
    let mut guard = STATE.lock().unwrap_or_else(|p| p.into_inner());
    if guard.as_ref().is_some_and(|s| s.commits >= ROTATE) {
        *guard = None;
    }
    let st = guard.get_or_insert_with(open);
    match serde_json::from_slice::<Value>(data) {
        Ok(v) => run(v, 3, st),
        Err(_) => {
            let mut u = Unstructured::new(data);
            let Ok(b) = Batch::arbitrary(&mut u) else {
                return;
            };
            let v = to_json(&b, &st.kb);
            run(v, b.via | 1, st);
        }
    }
});
