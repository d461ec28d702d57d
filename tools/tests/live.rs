//! Project mode keeps one live view of the bundle folder: the bundle tools,
//! the concept resources, `okf://manifest` and the knowledge tools read
//! from the same stamps and watch, so a change on disk is read once and
//! every reader sees it on its next call; the read model is made only when
//! a knowledge reader first asks.

use okfit_tools::{Options, Outcome, Toolbox};
use serde_json::{json, Map, Value};
use std::path::Path;

const CONFIG: &str = "[bundle]\npath = \"bundle\"\nprofile = \"none\"\n";

fn concept(title: &str, description: &str) -> String {
    format!(
        "---\ntype: Metric\ntitle: {title}\ndescription: {description}\nstatus: draft\n---\n\n# {title}\n\nSee [orders](orders.md).\n"
    )
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    let bundle = dir.path().join("bundle");
    std::fs::create_dir_all(bundle.join("metrics")).expect("bundle folder");
    std::fs::write(dir.path().join("okfit.toml"), CONFIG).expect("config");
    std::fs::write(bundle.join("index.md"), "# Metrics\n").expect("index");
    write(
        &bundle,
        "metrics/revenue.md",
        &concept("Revenue", "Money in."),
    );
    write(
        &bundle,
        "metrics/orders.md",
        &concept("Orders", "Orders placed."),
    );
    dir
}

fn write(bundle: &Path, rel: &str, text: &str) {
    std::fs::write(bundle.join(rel), text).expect("write");
}

fn call(tb: &Toolbox, name: &str, args: Value) -> Value {
    let Value::Object(m) = args else {
        panic!("arguments are an object")
    };
    match tb.call(name, Some(m)) {
        Outcome::Structured(v) => v,
        other => panic!("{name}: {other:?}"),
    }
}

fn manifest(tb: &Toolbox) -> String {
    tb.read("okf://manifest").expect("okf://manifest").0
}

/// The descriptions `list_concepts` reports, by id.
fn listed(tb: &Toolbox) -> Map<String, Value> {
    let v = call(tb, "list_concepts", json!({}));
    v["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            (
                i["id"].as_str().unwrap_or_default().to_string(),
                i["description"].clone(),
            )
        })
        .collect()
}

#[test]
fn one_edit_is_read_once_and_seen_by_the_tools_and_the_manifest() {
    let dir = project();
    let bundle = dir.path().join("bundle");
    let tb = Toolbox::new(dir.path().to_path_buf(), &Options::default()).expect("toolbox");
    assert!(tb.project_mode);
    // The bundle tools alone read each file once, and make no read model.
    assert_eq!(listed(&tb).len(), 2);
    let kb = tb.knowledge().expect("knowledge");
    assert_eq!(kb.reads(), 3);
    assert_eq!(listed(&tb).len(), 2);
    assert_eq!(kb.reads(), 3, "nothing changed, nothing read");
    // The first knowledge read makes the model: each file read once more.
    assert!(manifest(&tb).contains("Money in."));
    assert_eq!(kb.reads(), 6);
    // The knowledge behind the manifest is the live bundle's folder.
    assert!(std::sync::Arc::ptr_eq(
        &kb,
        &tb.knowledge().expect("knowledge")
    ));

    // One edit: the next call of each reader sees it, from one re-read.
    write(
        &bundle,
        "metrics/revenue.md",
        &concept("Revenue", "Money in, net of refunds."),
    );
    let v = call(&tb, "get_concept", json!({"id": "metrics/revenue"}));
    assert_eq!(v["description"], "Money in, net of refunds.");
    let m = manifest(&tb);
    assert!(m.contains("Money in, net of refunds."), "{m}");
    let found = kb.search("refunds", 5, None).expect("search");
    assert!(found.contains("revenue"), "{found}");
    assert_eq!(kb.reads(), 7, "one edit, one read");

    // Now the manifest first, then the tools: still one read.
    write(
        &bundle,
        "metrics/orders.md",
        &concept("Orders", "Orders placed, cancelled ones included."),
    );
    let m = manifest(&tb);
    assert!(m.contains("Orders placed, cancelled ones included."), "{m}");
    assert_eq!(
        listed(&tb)["metrics/orders"],
        "Orders placed, cancelled ones included."
    );
    assert_eq!(kb.reads(), 8, "one edit, one read");

    // An addition and a deletion: seen by both, announced once each.
    assert!(!tb.concepts_changed());
    write(
        &bundle,
        "metrics/arpu.md",
        &concept("ARPU", "Revenue per user."),
    );
    assert!(manifest(&tb).contains("Revenue per user."));
    assert!(listed(&tb).contains_key("metrics/arpu"));
    assert_eq!(kb.reads(), 9);
    assert!(tb.concepts_changed());
    assert!(!tb.concepts_changed());
    std::fs::remove_file(bundle.join("metrics/arpu.md")).expect("remove");
    assert!(!listed(&tb).contains_key("metrics/arpu"));
    assert!(!manifest(&tb).contains("Revenue per user."));
    assert_eq!(kb.reads(), 9, "a deletion reads nothing");
    assert!(tb.concepts_changed());
}

#[test]
fn the_manifest_and_the_tools_never_disagree_after_an_edit() {
    let dir = project();
    let bundle = dir.path().join("bundle");
    let tb = Toolbox::new(dir.path().to_path_buf(), &Options::default()).expect("toolbox");
    for round in 0..20 {
        let description = format!("Money in, take {round}.");
        write(
            &bundle,
            "metrics/revenue.md",
            &concept("Revenue", &description),
        );
        // Alternate which reader looks first.
        let (m, l) = if round % 2 == 0 {
            (manifest(&tb), listed(&tb))
        } else {
            let l = listed(&tb);
            (manifest(&tb), l)
        };
        assert!(m.contains(&description), "round {round}: {m}");
        assert_eq!(l["metrics/revenue"], description.as_str(), "round {round}");
    }
}

#[test]
fn a_folder_connection_shares_its_folder_with_the_bundle_tools() {
    let dir = project();
    let bundle = dir.path().join("bundle");
    let dsn = format!("okf://{}", bundle.display());
    let opts = Options {
        connection: Some(dsn),
        tools: Some(vec!["list_concepts".into(), "manifest".into()]),
        ..Options::default()
    };
    // The bundle tools discover their config from the folder: one that
    // names the folder itself.
    std::fs::write(
        bundle.join("okfit.toml"),
        "[bundle]\npath = \".\"\nprofile = \"none\"\n",
    )
    .expect("config");
    let tb = Toolbox::new(dir.path().to_path_buf(), &opts).expect("toolbox");
    assert_eq!(listed(&tb).len(), 2);
    assert!(manifest(&tb).contains("Money in."));
    let kb = tb.knowledge().expect("knowledge");
    let live = tb.live().knowledge().expect("the live bundle's folder");
    assert!(std::sync::Arc::ptr_eq(&kb, &live), "one view of the folder");
    let first = kb.reads();
    write(
        &bundle,
        "metrics/revenue.md",
        &concept("Revenue", "Money in, net of refunds."),
    );
    assert!(manifest(&tb).contains("Money in, net of refunds."));
    assert_eq!(listed(&tb)["metrics/revenue"], "Money in, net of refunds.");
    assert_eq!(kb.reads(), first + 1, "one edit, one read");
}

#[test]
fn an_edit_that_makes_or_unmakes_a_concept_is_announced() {
    let dir = project();
    let bundle = dir.path().join("bundle");
    let tb = Toolbox::new(dir.path().to_path_buf(), &Options::default()).expect("toolbox");
    assert_eq!(listed(&tb).len(), 2);
    assert!(!tb.concepts_changed());
    // An edit in place that takes the frontmatter away: no concept now.
    write(
        &bundle,
        "metrics/revenue.md",
        "# Revenue\n\nNo frontmatter.\n",
    );
    assert!(!listed(&tb).contains_key("metrics/revenue"));
    assert!(tb.concepts_changed());
    // An edit of a concept that stays one changes no id.
    write(
        &bundle,
        "metrics/orders.md",
        &concept("Orders", "Orders placed, again."),
    );
    assert_eq!(listed(&tb)["metrics/orders"], "Orders placed, again.");
    assert!(!tb.concepts_changed());
    // And back.
    write(
        &bundle,
        "metrics/revenue.md",
        &concept("Revenue", "Money in."),
    );
    assert_eq!(listed(&tb)["metrics/revenue"], "Money in.");
    assert!(tb.concepts_changed());
}
