//! MCP tool arguments through `okfit_mcp::Server::call`, the dispatch the
//! stdio server and the Node addon share (schema check, then the tool).
//!
//! Input: one selector byte, then JSON. The selector's top two bits pick the
//! server: 0b00/0b01 a store connection with every knowledge, write and
//! database tool; 0b10 a folder connection (a copy of the clean fixture's
//! bundle) with the knowledge and write tools; 0b11 project mode over a
//! copy of the clean fixture (the bundle tools). The low six bits pick the
//! tool from that server's `tool_list()`. The JSON must be an object (the
//! arguments); an empty rest calls the tool with no arguments.
//!
//! So that replaces and deletes get past their preconditions, the string
//! "@current" as a `replaces` (top level or in a `changes` item) becomes
//! the current hash of that bundle/path, and "@head" as `expectedRevision`
//! the current head, both read through `Server::knowledge`.
//!
//! Servers that write are rebuilt over a fresh directory every
//! `ROTATE` writing calls, so the store stays small.
#![no_main]

use libfuzzer_sys::fuzz_target;
use okfit_mcp::Server;
use okfit_tools::Options;
use okfit_fuzz::{copy_tree, fixture_project, resolve_current, Scratch, FIXTURE_DOCS};
use serde_json::{Map, Value};
use std::sync::Mutex;

const ROTATE: usize = 256;
const WRITERS: [&str; 4] = ["write", "delete", "transact", "restore"];

struct Slot {
    server: Server,
    tools: Vec<String>,
    writes: usize,
    _dir: Scratch,
}

#[derive(Clone, Copy)]
enum Kind {
    Store,
    Folder,
    Project,
}

fn tools_of(server: &Server) -> Vec<String> {
    server
        .tool_list()
        .iter()
        .map(|t| t.name.to_string())
        .collect()
}

fn args(pairs: &[(&str, &str)]) -> Option<Map<String, Value>> {
    Some(
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
            .collect(),
    )
}

fn build(kind: Kind) -> Slot {
    let dir = Scratch::new(match kind {
        Kind::Store => "mcp-store",
        Kind::Folder => "mcp-folder",
        Kind::Project => "mcp-project",
    });
    let root = dir.path().to_path_buf();
    let server = match kind {
        Kind::Store => {
            let opts = Options {
                connection: Some(format!("okf://{}?tenant=fuzz", root.display())),
                database_tools: true,
                ..Default::default()
            };
            let s = Server::with_options(root.clone(), &opts).expect("a store server");
            // Seed it through the write tool: two bundles, five documents.
            for (i, (path, text)) in FIXTURE_DOCS.iter().enumerate() {
                let bundle = if i % 2 == 0 { "docs" } else { "ops" };
                let r = s
                    .call(
                        "write",
                        args(&[("bundle", bundle), ("path", path), ("content", text)]),
                    )
                    .expect("seed write answers");
                assert_ne!(r.is_error, Some(true), "seed write refused: {r:?}");
            }
            s
        }
        Kind::Folder => {
            copy_tree(&fixture_project().join("okf"), &root.join("okf"));
            let opts = Options {
                connection: Some(format!("okf://{}", root.join("okf").display())),
                ..Default::default()
            };
            Server::with_options(root.clone(), &opts).expect("a folder server")
        }
        Kind::Project => {
            copy_tree(&fixture_project(), &root);
            Server::with_options(root.clone(), &Options::default()).expect("a project server")
        }
    };
    let tools = tools_of(&server);
    assert!(!tools.is_empty(), "a server without tools");
    Slot {
        server,
        tools,
        writes: 0,
        _dir: dir,
    }
}

/// Replaces the "@current" and "@head" placeholders.
fn resolve(server: &Server, args: &mut Map<String, Value>) {
    let Ok(kb) = server.toolbox().knowledge() else {
        return;
    };
    let lookup = |b: &str, p: &str| kb.read_source(b, p).ok().flatten().map(|(_, h)| h);
    let current = |o: &mut Map<String, Value>| resolve_current(o, lookup);
    current(args);
    if let Some(Value::Array(changes)) = args.get_mut("changes") {
        for c in changes.iter_mut() {
            if let Value::Object(o) = c {
                current(o);
            }
        }
    }
    if args.get("expectedRevision").and_then(Value::as_str) == Some("@head") {
        if let Ok(Some(h)) = kb.head() {
            args.insert("expectedRevision".into(), Value::String(h));
        }
    }
}

static SLOTS: Mutex<[Option<Slot>; 3]> = Mutex::new([None, None, None]);

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let args: Option<Map<String, Value>> = if rest.is_empty() {
        None
    } else {
        match serde_json::from_slice::<Value>(rest) {
            Ok(Value::Object(m)) => Some(m),
            _ => return,
        }
    };
    let (i, kind) = match sel >> 6 {
        0 | 1 => (0, Kind::Store),
        2 => (1, Kind::Folder),
        _ => (2, Kind::Project),
    };
    let mut slots = SLOTS.lock().unwrap_or_else(|p| p.into_inner());
    let slot = slots[i].get_or_insert_with(|| build(kind));
    let name = slot.tools[(sel & 0x3f) as usize % slot.tools.len()].clone();
    if WRITERS.contains(&name.as_str()) {
        slot.writes += 1;
        if slot.writes > ROTATE {
            // Drop the old server (and its directory) before the new one.
            slots[i] = None;
            slots[i] = Some(build(kind));
        }
    }
    let slot = slots[i].as_ref().expect("built");
    let mut args = args;
    if let (Some(a), Kind::Store | Kind::Folder) = (args.as_mut(), kind) {
        resolve(&slot.server, a);
    }
    let r = slot.server.call(&name, args);
    let _ = serde_json::to_string(&r);
});
