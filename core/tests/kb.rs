//! The knowledge read model (`okfit_core::kb`): ids, the manifest TSV,
//! staleness, search, `get` slicing, advice and snapshots (SPEC §2,
//! reference langonrock §3.2–§3.6, §4.1–§4.3, §6, §9).
//!
//! Fixtures live in `tests/fixtures/kb/<bundle>/…` (a `sales` bundle shaped
//! like the reference's fixture and an `ops` bundle).

use okfit_core::bundle::IdError;
use okfit_core::kb::compile::compile;
use okfit_core::kb::model::{advice, Entry, Model, COLUMNS};
use okfit_core::kb::search::{doc_terms, DocTerms, Index};
use okfit_core::kb::slice::SliceOptions;
use okfit_core::kb::text;
use okfit_core::time::{self, Instant};
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;

// ---------------------------------------------------------------- helpers

const NOW: &str = "2026-06-01T00:00:00Z";

fn at(s: &str) -> Instant {
    time::parse(s).unwrap().instant()
}

fn now() -> Instant {
    at(NOW)
}

fn sha(text: &str) -> String {
    let d = Sha256::digest(text.as_bytes());
    d.iter().map(|b| format!("{b:02x}")).collect()
}

/// A model plus a complete search index, kept in step one change at a time,
/// and the source texts the body closures read.
struct Kb {
    model: Model,
    index: Index,
    texts: HashMap<(String, String), String>,
    terms: HashMap<u32, DocTerms>,
    pending: Vec<u32>,
}

impl Kb {
    fn new(tenant: &str) -> Kb {
        Kb {
            model: Model::new(tenant),
            index: Index::new(true),
            texts: HashMap::new(),
            terms: HashMap::new(),
            pending: vec![],
        }
    }

    /// Builds and settles a model from `(bundle, path, text)` triples.
    fn build(tenant: &str, docs: &[(String, String, String)]) -> Kb {
        let mut kb = Kb::new(tenant);
        for (b, p, t) in docs {
            kb.put(b, p, t);
        }
        kb.settle();
        kb
    }

    fn put(&mut self, bundle: &str, path: &str, text: &str) -> u32 {
        let (slot, _) = self
            .model
            .upsert(bundle, path, &sha(text), compile(path, text));
        self.texts
            .insert((bundle.to_string(), path.to_string()), text.to_string());
        self.pending.push(slot);
        slot
    }

    fn del(&mut self, bundle: &str, path: &str) -> Option<u32> {
        let (slot, _) = self.model.remove(bundle, path)?;
        if let Some(old) = self.terms.remove(&slot) {
            self.index.remove(slot, &old);
        }
        self.texts.remove(&(bundle.to_string(), path.to_string()));
        Some(slot)
    }

    /// Settles the model and re-indexes every changed or renamed slot;
    /// returns what `settle` reported.
    fn settle(&mut self) -> Vec<u32> {
        let renamed = self.model.settle();
        let mut todo = std::mem::take(&mut self.pending);
        todo.extend(renamed.iter().copied());
        todo.sort_unstable();
        todo.dedup();
        for slot in todo {
            if let Some(old) = self.terms.remove(&slot) {
                self.index.remove(slot, &old);
            }
            let Some(e) = self.model.entry(slot) else {
                continue;
            };
            let Some((names, fields)) = self.model.search_fields(slot) else {
                continue;
            };
            let text = &self.texts[&(e.bundle.clone(), e.path.clone())];
            let body = &text[e.compiled.body_start as usize..];
            let t = doc_terms(&names, &fields, body);
            self.index.insert(slot, &t);
            self.terms.insert(slot, t);
        }
        renamed
    }

    fn manifest(&self, bundle: Option<&str>) -> String {
        self.model.manifest(bundle, now()).unwrap().0
    }

    fn search_at(
        &self,
        q: &str,
        k: usize,
        bundle: Option<&str>,
        when: Instant,
    ) -> Result<String, String> {
        let texts = &self.texts;
        let mut body = |e: &Entry| -> Option<std::sync::Arc<str>> {
            texts
                .get(&(e.bundle.clone(), e.path.clone()))
                .map(|t| std::sync::Arc::from(t.as_str()))
        };
        self.model
            .search(&self.index, q, k, bundle, when, &mut body)
    }

    fn search(&self, q: &str, k: usize, bundle: Option<&str>) -> String {
        self.search_at(q, k, bundle, now()).unwrap()
    }

    fn get(&self, ids: &[&str], section: Option<&str>, opts: &SliceOptions) -> String {
        self.try_get(ids, section, opts).unwrap()
    }

    fn try_get(
        &self,
        ids: &[&str],
        section: Option<&str>,
        opts: &SliceOptions,
    ) -> Result<String, String> {
        let texts = &self.texts;
        let mut body = |e: &Entry| -> Option<std::sync::Arc<str>> {
            texts
                .get(&(e.bundle.clone(), e.path.clone()))
                .map(|t| std::sync::Arc::from(t.as_str()))
        };
        let ids: Vec<String> = ids.iter().map(|s| s.to_string()).collect();
        self.model.get_text(&ids, section, opts, &mut body)
    }

    fn id(&self, bundle: &str, path: &str) -> String {
        let slot = self
            .model
            .slot_of(bundle, path)
            .unwrap_or_else(|| panic!("no {bundle}/{path}"));
        self.model.entry(slot).unwrap().id.clone()
    }

    fn slot(&self, bundle: &str, path: &str) -> u32 {
        self.model.slot_of(bundle, path).unwrap()
    }
}

fn triples(docs: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    docs.iter()
        .map(|(b, p, t)| (b.to_string(), p.to_string(), t.to_string()))
        .collect()
}

/// A minimal concept text.
fn note(body: &str) -> String {
    format!("---\ntype: Note\n---\n{body}")
}

fn fixtures_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/kb")
}

fn walk(root: &Path, dir: &Path, out: &mut Vec<(String, String)>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(root, &p, out);
        } else if p.extension().is_some_and(|x| x == "md") {
            let rel = p
                .strip_prefix(root)
                .unwrap()
                .components()
                .map(|c| c.as_os_str().to_str().unwrap().to_string())
                .collect::<Vec<_>>()
                .join("/");
            out.push((rel, std::fs::read_to_string(&p).unwrap()));
        }
    }
}

/// Every fixture document as `(bundle, path, text)`, bundles and paths
/// sorted.
fn fixture_docs() -> Vec<(String, String, String)> {
    let root = fixtures_dir();
    let mut bundles: Vec<_> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    bundles.sort();
    let mut out = vec![];
    for b in bundles {
        let name = b.file_name().unwrap().to_str().unwrap().to_string();
        let mut files = vec![];
        walk(&b, &b, &mut files);
        for (p, t) in files {
            out.push((name.clone(), p, t));
        }
    }
    out
}

fn fixture() -> Kb {
    Kb::build("acme", &fixture_docs())
}

fn fixture_text(bundle: &str, path: &str) -> String {
    std::fs::read_to_string(fixtures_dir().join(bundle).join(path)).unwrap()
}

fn body_of(bundle: &str, path: &str) -> String {
    let t = fixture_text(bundle, path);
    let c = compile(path, &t);
    t[c.body_start as usize..].to_string()
}

/// Ids of a single bundle's documents, keyed by path.
fn ids_of(paths: &[&str]) -> BTreeMap<String, String> {
    let docs: Vec<(String, String, String)> = paths
        .iter()
        .map(|p| ("b".to_string(), p.to_string(), note("x\n")))
        .collect();
    let kb = Kb::build("t", &docs);
    kb.model
        .slots()
        .filter_map(|s| {
            let e = kb.model.entry(s).unwrap();
            e.is_concept().then(|| (e.path.clone(), e.id.clone()))
        })
        .collect()
}

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

/// The data rows of a manifest or search output (no `#` lines, no columns).
fn rows(text: &str) -> Vec<&str> {
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.starts_with("id\t"))
        .collect()
}

fn row_ids(text: &str) -> Vec<&str> {
    rows(text)
        .iter()
        .map(|r| r.split('\t').next().unwrap())
        .collect()
}

fn cells<'a>(text: &'a str, id: &str) -> Vec<&'a str> {
    rows(text)
        .into_iter()
        .map(|r| r.split('\t').collect::<Vec<_>>())
        .find(|c| c[0] == id)
        .unwrap_or_else(|| panic!("no row {id} in\n{text}"))
}

const HEADER: &str = "# tenant: acme\n# bundles: ops sales\n";

const OPS_ROWS: &str = "\
deploy\tops\trunbook\t-\t-\tHow to ship the orders service.\torders
orders\tops\tservice\tdeprecated\t-\tThe orders service accepts checkout requests.\t-
";

const SALES_ROWS: &str = "\
customers\tsales\tbigquery_table\t-\tcustomer_id\tRegistered customers, including churned.\ttables/orders
messy\tsales\traw_extract\t-\t-\tHas a tab and a newline plus collapsed spacing.\t-
metrics/orders\tsales\tmetric\t-\t-\tCount of completed orders in the period.\ttables/orders
orders_db\tsales\tdataset\t-\t-\tThe production sales database.\t-
tables/orders\tsales\tbigquery_table\t-\torder_id\tOne row per completed customer order.\tcustomers metrics/orders
weekly_active_users\tsales\t-\t-\t-\tDistinct user_id seen in a trailing 7 day window.\t-
";

fn slice(offset: Option<u64>, limit: Option<u64>, find: Option<&str>) -> SliceOptions {
    SliceOptions {
        offset,
        limit,
        find: find.map(str::to_owned),
    }
}

// ------------------------------------------------------------------- ids

#[test]
fn ids_shortest_unambiguous_form() {
    assert_eq!(
        ids_of(&["tables/orders.md", "metrics/wau.md"]),
        map(&[("tables/orders.md", "orders"), ("metrics/wau.md", "wau")])
    );
    assert_eq!(
        ids_of(&[
            "tables/orders.md",
            "metrics/orders.md",
            "datasets/orders_db.md"
        ]),
        map(&[
            ("tables/orders.md", "tables/orders"),
            ("metrics/orders.md", "metrics/orders"),
            ("datasets/orders_db.md", "orders_db"),
        ])
    );
    assert_eq!(
        ids_of(&["a/x/orders.md", "b/x/orders.md"]),
        map(&[
            ("a/x/orders.md", "a/x/orders"),
            ("b/x/orders.md", "b/x/orders")
        ])
    );
    assert_eq!(
        ids_of(&["orders.md", "tables/orders.md"]),
        map(&[
            ("orders.md", "orders"),
            ("tables/orders.md", "tables/orders")
        ])
    );
    assert_eq!(ids_of(&["v1.2.md"]), map(&[("v1.2.md", "v1.2")]));
}

#[test]
fn ids_strip_md_case_insensitively() {
    // Reference langonrock §3.3: "case-insensitive `.md$` stripped"; the
    // store accepts `.MD` paths (names::check_path).
    assert_eq!(
        ids_of(&["notes/Plan.MD", "other.md"]),
        map(&[("notes/Plan.MD", "Plan"), ("other.md", "other")])
    );
}

#[test]
fn reserved_names_get_no_row_and_are_case_sensitive() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "index.md", "# Index\n\n[a](a.md)\n"),
            ("b", "log.md", "# Log\n"),
            ("b", "sub/index.md", "# Sub\n"),
            ("b", "sub/log.md", "# Sub log\n"),
            ("b", "INDEX.md", "# Upper index\n\nNot reserved.\n"),
            ("b", "Log.md", "# Upper log\n\nNot reserved either.\n"),
            ("b", "a.md", &note("Alpha. [home](index.md)\n")),
        ]),
    );
    assert_eq!(kb.model.concepts(), 3);
    let m = kb.manifest(None);
    assert_eq!(row_ids(&m), ["INDEX", "Log", "a"]);
    // A link to a navigation document contributes nothing.
    assert_eq!(cells(&m, "a")[6], "-");
    assert!(kb.id("b", "index.md").is_empty());
    assert!(kb.id("b", "sub/log.md").is_empty());
    assert_eq!(kb.model.resolve("index"), Err(IdError::NotFound));
    assert_eq!(
        kb.get(&["index", "INDEX"], None, &SliceOptions::default()),
        "@@ INDEX\n# Upper index\n\nNot reserved.\n\n@@ missing\nindex"
    );
}

#[test]
fn ids_collide_across_bundles() {
    let body = |s: &str| note(s);
    let mut kb = Kb::build(
        "acme",
        &triples(&[
            (
                "sales",
                "orders.md",
                &body("Orders. See [customers](customers.md).\n"),
            ),
            (
                "sales",
                "customers.md",
                &body("Customers. They place [orders](orders.md).\n"),
            ),
            ("ops", "orders.md", &body("Ops orders.\n")),
        ]),
    );
    assert_eq!(kb.id("ops", "orders.md"), "ops/orders");
    assert_eq!(kb.id("sales", "customers.md"), "customers");
    assert_eq!(kb.id("sales", "orders.md"), "sales/orders");
    let m = kb.manifest(None);
    assert_eq!(row_ids(&m), ["ops/orders", "customers", "sales/orders"]);
    // Links are rewritten to the global ids.
    assert_eq!(cells(&m, "customers")[6], "sales/orders");
    assert_eq!(cells(&m, "sales/orders")[6], "customers");

    // A link whose target itself gets renamed follows the rename.
    let ops_customers = kb.put("ops", "customers.md", &body("Ops customers.\n"));
    let renamed = kb.settle();
    let sales_customers = kb.slot("sales", "customers.md");
    assert_eq!(kb.id("sales", "customers.md"), "sales/customers");
    assert_eq!(kb.id("ops", "customers.md"), "ops/customers");
    assert!(renamed.contains(&sales_customers), "{renamed:?}");
    assert!(renamed.contains(&ops_customers), "{renamed:?}");
    let m = kb.manifest(None);
    assert_eq!(cells(&m, "sales/orders")[6], "sales/customers");
    assert_eq!(
        row_ids(&m),
        [
            "ops/customers",
            "ops/orders",
            "sales/customers",
            "sales/orders"
        ]
    );

    // Removing it renames back.
    kb.del("ops", "customers.md");
    let renamed = kb.settle();
    assert_eq!(renamed, vec![sales_customers]);
    assert_eq!(kb.id("sales", "customers.md"), "customers");
    assert_eq!(cells(&kb.manifest(None), "sales/orders")[6], "customers");
}

#[test]
fn adding_a_file_renames_an_untouched_concept() {
    let mut kb = Kb::build(
        "acme",
        &triples(&[
            ("sales", "tables/orders.md", &note("Orders.\n")),
            (
                "sales",
                "tables/customers.md",
                &note("Customers: [orders](orders.md).\n"),
            ),
        ]),
    );
    let orders = kb.slot("sales", "tables/orders.md");
    assert_eq!(kb.id("sales", "tables/orders.md"), "orders");
    assert_eq!(cells(&kb.manifest(None), "customers")[6], "orders");

    let staging = kb.put("sales", "staging/orders.md", &note("Staging orders.\n"));
    let renamed = kb.settle();
    assert_eq!(kb.id("sales", "tables/orders.md"), "tables/orders");
    assert_eq!(kb.id("sales", "staging/orders.md"), "staging/orders");
    let mut want = vec![orders, staging];
    want.sort_unstable();
    assert_eq!(renamed, want);
    let m = kb.manifest(None);
    assert_eq!(cells(&m, "customers")[6], "tables/orders");

    kb.del("sales", "staging/orders.md");
    let renamed = kb.settle();
    assert_eq!(renamed, vec![orders]);
    assert_eq!(kb.id("sales", "tables/orders.md"), "orders");
    assert_eq!(cells(&kb.manifest(None), "customers")[6], "orders");
    // Nothing changed: nothing reported.
    assert!(kb.settle().is_empty());
}

#[test]
fn a_rename_in_one_bundle_can_unprefix_another() {
    let mut kb = Kb::build(
        "acme",
        &triples(&[
            ("sales", "tables/orders.md", &note("Sales orders.\n")),
            ("ops", "orders.md", &note("Ops orders.\n")),
        ]),
    );
    assert_eq!(kb.id("sales", "tables/orders.md"), "sales/orders");
    assert_eq!(kb.id("ops", "orders.md"), "ops/orders");
    let ops = kb.slot("ops", "orders.md");
    let sales = kb.slot("sales", "tables/orders.md");
    let staging = kb.put("sales", "staging/orders.md", &note("Staging.\n"));
    let renamed = kb.settle();
    assert_eq!(kb.id("sales", "tables/orders.md"), "tables/orders");
    assert_eq!(kb.id("ops", "orders.md"), "orders");
    let mut want = vec![ops, sales, staging];
    want.sort_unstable();
    assert_eq!(renamed, want);
}

#[test]
fn resolve_accepts_every_id_form() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("sales", "orders.md", &note("Sales orders.\n")),
            ("sales", "tables/orders.md", &note("Order table.\n")),
            ("sales", "tables/customers.md", &note("Customers.\n")),
            ("ops", "orders.md", &note("Ops orders.\n")),
            ("ops", "runbooks/deploy.md", &note("Deploy.\n")),
        ]),
    );
    let so = kb.slot("sales", "orders.md");
    let to = kb.slot("sales", "tables/orders.md");
    let oo = kb.slot("ops", "orders.md");
    let cu = kb.slot("sales", "tables/customers.md");
    let de = kb.slot("ops", "runbooks/deploy.md");
    assert_eq!(kb.id("sales", "orders.md"), "sales/orders");
    assert_eq!(kb.id("sales", "tables/orders.md"), "tables/orders");
    assert_eq!(kb.id("ops", "orders.md"), "ops/orders");
    for (input, slot) in [
        ("sales/orders", so),
        ("/sales/orders", so),
        ("sales/orders.md", so),
        ("/sales/orders.md", so),
        ("ops/orders", oo),
        ("ops/orders.md", oo),
        ("tables/orders", to),
        ("/tables/orders.md", to),
        ("sales/tables/orders", to),
        ("/sales/tables/orders.md", to),
        ("customers", cu),
        ("customers.md", cu),
        ("tables/customers", cu),
        ("/tables/customers", cu),
        ("tables/customers.md", cu),
        ("/tables/customers.md", cu),
        ("sales/tables/customers", cu),
        ("deploy", de),
        ("runbooks/deploy", de),
        ("/runbooks/deploy.md", de),
        ("ops/runbooks/deploy.md", de),
    ] {
        assert_eq!(kb.model.resolve(input), Ok(slot), "{input}");
    }
    let amb = Err(IdError::Ambiguous(vec![
        "ops/orders".into(),
        "sales/orders".into(),
    ]));
    assert_eq!(kb.model.resolve("orders"), amb);
    assert_eq!(kb.model.resolve("/orders.md"), amb);
    assert_eq!(kb.model.resolve("nope"), Err(IdError::NotFound));
    assert_eq!(kb.model.resolve(""), Err(IdError::NotFound));
    assert_eq!(
        kb.try_get(&["orders"], None, &SliceOptions::default())
            .unwrap_err(),
        "ambiguous id \"orders\": it could be ops/orders, sales/orders; pass one of those ids"
    );
}

#[test]
fn global_ids_are_unique_even_when_a_folder_is_named_like_a_bundle() {
    // sales/orders.md and ops/orders.md collide, so both are prefixed; the
    // ops bundle also has a folder named `sales`, whose `orders.md` has the
    // local id `sales/orders`. Every row must still have its own id, and
    // each id must lead back to its own concept.
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("sales", "orders.md", &note("Sales orders.\n")),
            ("ops", "orders.md", &note("Ops orders.\n")),
            (
                "ops",
                "sales/orders.md",
                &note("Ops copy of sales orders.\n"),
            ),
        ]),
    );
    let m = kb.manifest(None);
    let ids = row_ids(&m);
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    assert_eq!(unique.len(), ids.len(), "duplicate ids in\n{m}");
    for (b, p) in [
        ("sales", "orders.md"),
        ("ops", "orders.md"),
        ("ops", "sales/orders.md"),
    ] {
        let id = kb.id(b, p);
        assert_eq!(kb.model.resolve(&id), Ok(kb.slot(b, p)), "{b}/{p} as {id}");
    }
}

#[test]
fn ids_stay_unique_when_the_clash_arrives_one_document_at_a_time() {
    // Enough other concepts that a single change looks its `b/l` holders
    // up per bundle, where loading all at once scans every local id: both
    // must give the ids a whole build gives.
    let mut docs: Vec<(String, String, String)> = (0..40)
        .map(|i| ("ops".into(), format!("n{i}.md"), note("Ops.\n")))
        .collect();
    docs.push(("ops".into(), "orders.md".into(), note("Ops orders.\n")));
    docs.push(("ops".into(), "sales/orders.md".into(), note("Copy.\n")));
    let mut kb = Kb::build("acme", &docs);
    assert_eq!(kb.id("ops", "sales/orders.md"), "sales/orders");
    let sales = (
        "sales".to_string(),
        "orders.md".to_string(),
        note("Sales.\n"),
    );
    kb.put(&sales.0, &sales.1, &sales.2);
    let renamed = kb.settle();
    assert!(renamed.contains(&kb.slot("ops", "sales/orders.md")));
    docs.push(sales);
    let whole = Kb::build("acme", &docs);
    for (b, p, _) in &docs {
        let id = kb.id(b, p);
        assert_eq!(id, whole.id(b, p), "{b}/{p}");
        assert_eq!(kb.model.resolve(&id), Ok(kb.slot(b, p)), "{b}/{p} as {id}");
    }
    assert_eq!(kb.id("sales", "orders.md"), "sales/orders");
    assert_ne!(kb.id("ops", "sales/orders.md"), "sales/orders");
}

// -------------------------------------------------------------- manifest

#[test]
fn fixture_manifest_byte_for_byte() {
    let kb = fixture();
    let (m, next) = kb.model.manifest(None, now()).unwrap();
    assert_eq!(m, format!("{HEADER}{COLUMNS}\n{OPS_ROWS}{SALES_ROWS}"));
    assert!(m.starts_with(
        "# tenant: acme\n# bundles: ops sales\nid\tbundle\tkind\tstatus\tgrain\tsummary\tlinks\n"
    ));
    assert_eq!(next, None);
    assert_eq!(kb.model.concepts(), 8);
    assert_eq!(kb.model.bundles(), ["ops", "sales"]);
}

#[test]
fn bundle_filtered_manifest() {
    let kb = fixture();
    assert_eq!(
        kb.manifest(Some("sales")),
        format!("{HEADER}{COLUMNS}\n{SALES_ROWS}")
    );
    assert_eq!(
        kb.manifest(Some("ops")),
        format!("{HEADER}{COLUMNS}\n{OPS_ROWS}")
    );
    assert_eq!(
        kb.model.manifest(Some("nope"), now()).unwrap_err(),
        "no bundle \"nope\" in this tenant: found ops, sales"
    );
    assert_eq!(
        kb.search_at("orders", 8, Some("nope"), now()).unwrap_err(),
        "no bundle \"nope\" in this tenant: found ops, sales"
    );
}

#[test]
fn manifest_is_independent_of_insertion_order() {
    let docs = fixture_docs();
    let a = Kb::build("acme", &docs);
    let mut rev = docs.clone();
    rev.reverse();
    let b = Kb::build("acme", &rev);
    // Interleaved, one settle per document.
    let mut c = Kb::new("acme");
    for i in [5usize, 0, 9, 2, 7, 1, 8, 3, 6, 4] {
        let (bn, p, t) = &docs[i];
        c.put(bn, p, t);
        c.settle();
    }
    assert_eq!(docs.len(), 10);
    assert_eq!(a.manifest(None), b.manifest(None));
    assert_eq!(a.manifest(None), c.manifest(None));
    assert_eq!(a.manifest(Some("sales")), c.manifest(Some("sales")));
}

#[test]
fn empty_model_manifest_is_only_the_header() {
    let m = Model::new("acme");
    let (text, next) = m.manifest(None, now()).unwrap();
    assert_eq!(next, None);
    let lines: Vec<&str> = text.split_terminator('\n').collect();
    assert_eq!(lines.len(), 3, "{text:?}");
    assert_eq!(lines[0], "# tenant: acme");
    assert_eq!(lines[1].trim_end(), "# bundles:");
    assert_eq!(lines[2], COLUMNS);
    assert!(text.ends_with(&format!("{COLUMNS}\n")));
}

#[test]
fn rows_sort_by_code_units() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "alpha.md", &note("x\n")),
            ("b", "Zeta.md", &note("x\n")),
            ("b", "_x.md", &note("x\n")),
            ("b", "9.md", &note("x\n")),
            ("b", "\u{FF21}.md", &note("x\n")),
            ("b", "\u{1F600}.md", &note("x\n")),
            ("a", "zz.md", &note("x\n")),
        ]),
    );
    // UTF-16: U+1F600 is D83D DE00, below U+FF21 (UTF-8 order says the
    // opposite).
    assert_eq!(
        row_ids(&kb.manifest(None)),
        ["zz", "9", "Zeta", "_x", "alpha", "\u{1F600}", "\u{FF21}"]
    );
}

#[test]
fn manifest_cells() {
    let long_desc: String = (0..13).map(|_| "abcdefghij").collect::<Vec<_>>().join(" ");
    assert_eq!(long_desc.len(), 142);
    let ten_words: String = (0..10).map(|_| "abcdefghij").collect::<Vec<_>>().join(" ");
    let kb = Kb::build(
        "acme",
        &triples(&[
            (
                "b",
                "kinds/bq.md",
                "---\ntype: BigQuery Table\n---\nBody.\n",
            ),
            (
                "b",
                "kinds/weird.md",
                "---\ntype: \"  --Weird__Type!! 2 \"\n---\nBody.\n",
            ),
            ("b", "kinds/numeric.md", "---\ntype: 42\n---\nBody.\n"),
            ("b", "kinds/symbols.md", "---\ntype: \"!!!\"\n---\nBody.\n"),
            ("b", "status/absent.md", &note("Body.\n")),
            (
                "b",
                "status/stable.md",
                "---\ntype: Note\nstatus: stable\n---\nBody.\n",
            ),
            (
                "b",
                "status/current.md",
                "---\ntype: Note\nstatus: Current\n---\nBody.\n",
            ),
            (
                "b",
                "status/deprecated.md",
                "---\ntype: Note\nstatus: deprecated\n---\nBody.\n",
            ),
            (
                "b",
                "status/draft.md",
                "---\ntype: Note\nstatus: \"in\\treview\"\n---\nBody.\n",
            ),
            (
                "b",
                "summary/long.md",
                &format!("---\ntype: Note\ndescription: {long_desc}\n---\nBody.\n"),
            ),
            (
                "b",
                "summary/nospace.md",
                &format!("---\ntype: Note\ndescription: {}\n---\nBody.\n", "x".repeat(130)),
            ),
            (
                "b",
                "summary/exact.md",
                &format!("---\ntype: Note\ndescription: {}\n---\nBody.\n", "y".repeat(120)),
            ),
            (
                "b",
                "summary/body.md",
                "---\ntype: Note\ndescription: \"  \"\n---\n# Title\n\n> A quote. Here.\n\n```\nCode. Not this.\n```\n\n| table. |\n<!-- comment. -->\n![img](x.png)\n---\n\nFirst   real\tline! Then more.\n",
            ),
            ("b", "summary/empty.md", "---\ntype: Note\n---\n# Only a heading\n"),
            (
                "b",
                "summary/question.md",
                "---\ntype: Note\n---\nIs v1.2 done? Yes.\n",
            ),
            (
                "b",
                "grain/text.md",
                "---\ntype: Note\ngrain: \"order_id,\\tday\"\n---\nBody.\n",
            ),
        ]),
    );
    let m = kb.manifest(None);
    let kind = |id: &str| cells(&m, id)[2].to_string();
    let status = |id: &str| cells(&m, id)[3].to_string();
    let summary = |id: &str| cells(&m, id)[5].to_string();
    assert_eq!(kind("bq"), "bigquery_table");
    assert_eq!(kind("weird"), "weird_type_2");
    assert_eq!(kind("numeric"), "-");
    assert_eq!(kind("symbols"), "-");
    assert_eq!(status("absent"), "-");
    assert_eq!(status("stable"), "-");
    assert_eq!(status("current"), "-");
    assert_eq!(status("deprecated"), "deprecated");
    assert_eq!(status("draft"), "in review");
    assert_eq!(summary("long"), format!("{ten_words}…"));
    assert_eq!(summary("nospace"), format!("{}…", "x".repeat(120)));
    assert_eq!(summary("exact"), "y".repeat(120));
    assert_eq!(summary("body"), "First real line!");
    assert_eq!(summary("empty"), "-");
    assert_eq!(summary("question"), "Is v1.2 done?");
    assert_eq!(cells(&m, "text")[4], "order_id, day");
    // Every row has exactly seven cells.
    for r in rows(&m) {
        assert_eq!(r.split('\t').count(), 7, "{r:?}");
    }
    // The width rule of reference §3.2 at width 12.
    let d = serde_json::Value::String("Registered customers, including churned.".into());
    assert_eq!(text::summary(Some(&d), "", 12), "Registered…");
}

#[test]
fn links_cell() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            (
                "b",
                "tables/orders.md",
                "---\ntype: Table\nresource: datasets/db.md\nsources:\n  - resource: /tables/customers.md\n  - resource: a raw descriptor\n  - resource: https://example.com/x\n---\n\
                 [c](customers.md) [c again](./customers.md#schema) [c ext](customers)\n\
                 [self](orders.md) [anchor](#top) [url](https://example.com/y) [mail](mailto:x@y.z)\n\
                 [broken](./payments.md) [outside](../../up.md) [nav](../index.md)\n\
                 [metric](../metrics/revenue.md) [root](/zeta.md?x=1)\n",
            ),
            ("b", "tables/customers.md", &note("Customers.\n")),
            ("b", "datasets/db.md", &note("Db.\n")),
            ("b", "metrics/revenue.md", &note("Revenue.\n")),
            ("b", "zeta.md", &note("Zeta.\n")),
            ("b", "index.md", "# Index\n"),
            (
                "b",
                "lonely.md",
                &note("[missing](nowhere.md) [self](lonely.md) [self2](/lonely.md)\n"),
            ),
            (
                "b",
                "metrics/uses.md",
                // File-relative first (metrics/revenue.md), then root-relative.
                &note("[r](revenue.md) [d](datasets/db.md) [z](zeta)\n"),
            ),
        ]),
    );
    let m = kb.manifest(None);
    assert_eq!(cells(&m, "orders")[6], "customers db revenue zeta");
    assert_eq!(cells(&m, "lonely")[6], "-");
    assert_eq!(cells(&m, "uses")[6], "db revenue zeta");
    assert_eq!(cells(&m, "customers")[6], "-");
}

#[test]
fn links_prefer_the_file_relative_target() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "a/x.md", &note("[y](y.md)\n")),
            ("b", "a/y.md", &note("A y.\n")),
            ("b", "y.md", &note("Root y.\n")),
            ("b", "z.md", &note("[y](a/y.md) [root y](y.md)\n")),
        ]),
    );
    let m = kb.manifest(None);
    assert_eq!(kb.id("b", "a/y.md"), "a/y");
    assert_eq!(cells(&m, "x")[6], "a/y");
    assert_eq!(cells(&m, "z")[6], "a/y y");
}

#[test]
fn an_emptied_bundle_disappears() {
    let mut kb = fixture();
    kb.del("ops", "deploy.md");
    kb.del("ops", "orders.md");
    assert!(kb.del("ops", "orders.md").is_none());
    kb.settle();
    assert_eq!(kb.model.bundles(), ["sales"]);
    let pre = "# tenant: acme\n# bundles: sales\n";
    assert_eq!(kb.manifest(None), format!("{pre}{COLUMNS}\n{SALES_ROWS}"));
    assert_eq!(
        kb.model.manifest(Some("ops"), now()).unwrap_err(),
        "no bundle \"ops\" in this tenant: found sales"
    );
    let sales: Vec<_> = fixture_docs()
        .into_iter()
        .filter(|(b, _, _)| b == "sales")
        .collect();
    let fresh = Kb::build("acme", &sales);
    assert_eq!(kb.model.snapshot(), fresh.model.snapshot());
    assert_eq!(
        kb.search("orders", 8, None),
        fresh.search("orders", 8, None)
    );
    assert!(kb
        .search("checkout", 8, None)
        .contains("# hits: 0 direct, 0 linked\n"));
}

#[test]
fn crlf_and_bom_documents() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            (
                "b",
                "crlf.md",
                "---\r\ntype: Note\r\ngrain: day\r\n---\r\n# Title\r\n\r\nFirst line. Second.\r\n## Part\r\nP\r\n",
            ),
            (
                "b",
                "bom.md",
                "\u{FEFF}---\ntype: BigQuery Table\n---\n# Bom\n\nBom body.\n",
            ),
        ]),
    );
    let m = kb.manifest(None);
    assert!(!m.contains('\r'));
    assert_eq!(
        rows(&m),
        [
            "bom\tb\tbigquery_table\t-\t-\tBom body.\t-",
            "crlf\tb\tnote\t-\tday\tFirst line.\t-",
        ]
    );
    let whole = SliceOptions::default();
    assert_eq!(
        kb.get(&["crlf"], Some("part"), &whole),
        "@@ crlf\n## Part\r\nP\r\n"
    );
    assert_eq!(
        kb.get(&["crlf"], Some("title"), &whole),
        "@@ crlf\n# Title\r\n\r\nFirst line. Second.\r\n"
    );
    assert_eq!(
        kb.get(&["bom"], None, &whole),
        "@@ bom\n# Bom\n\nBom body.\n"
    );
    assert_eq!(cells(&kb.search("second", 8, None), "crlf")[7], "0");
}

// ------------------------------------------------------------------ stale

fn stale_kb() -> Kb {
    let doc = |fm: &str, word: &str| format!("---\ntype: Note\n{fm}---\nThe {word} concept.\n");
    Kb::build(
        "acme",
        &triples(&[
            (
                "b",
                "past.md",
                &doc("stale_after: 2026-05-01\n", "pastword"),
            ),
            (
                "b",
                "future.md",
                &doc("stale_after: 2026-07-01\n", "futureword"),
            ),
            (
                "b",
                "exact.md",
                &doc("stale_after: 2026-06-01\n", "exactword"),
            ),
            (
                "b",
                "exact2.md",
                &doc("stale_after: \"2026-06-01T02:00:00+02:00\"\n", "exact2word"),
            ),
            (
                "b",
                "soon.md",
                &doc("stale_after: 2026-06-15T12:00:00Z\n", "soonword"),
            ),
            (
                "b",
                "dep.md",
                &doc("status: deprecated\nstale_after: 2020-01-01\n", "depword"),
            ),
            (
                "b",
                "depsoon.md",
                &doc("status: draft\nstale_after: 2026-06-02\n", "depsoonword"),
            ),
            (
                "b",
                "stable.md",
                &doc("status: stable\nstale_after: 2026-01-01\n", "stableword"),
            ),
            ("b", "plain.md", &doc("", "plainword")),
            ("b", "bad.md", &doc("stale_after: soonish\n", "badword")),
            (
                "b",
                "naive.md",
                &doc("stale_after: \"2026-01-01T00:00:00\"\n", "naiveword"),
            ),
            (
                "c",
                "other.md",
                &doc("stale_after: 2026-06-10\n", "otherword"),
            ),
        ]),
    )
}

#[test]
fn stale_is_the_instant_rule() {
    let kb = stale_kb();
    let (m, next) = kb.model.manifest(None, now()).unwrap();
    let status = |id: &str| cells(&m, id)[3].to_string();
    assert_eq!(status("past"), "stale");
    assert_eq!(status("future"), "-");
    assert_eq!(status("exact"), "stale");
    assert_eq!(status("exact2"), "stale");
    assert_eq!(status("soon"), "-");
    assert_eq!(status("dep"), "deprecated");
    assert_eq!(status("depsoon"), "draft");
    assert_eq!(status("stable"), "stale");
    assert_eq!(status("plain"), "-");
    assert_eq!(status("other"), "-");
    // Earliest future stale_after of a current concept (the draft one at
    // 2026-06-02 does not count).
    assert_eq!(next, Some(at("2026-06-10T00:00:00Z").0));
    let (_, next_b) = kb.model.manifest(Some("b"), now()).unwrap();
    assert_eq!(next_b, Some(at("2026-06-15T12:00:00Z").0));

    // One millisecond before midnight the date-only values are still fresh.
    let before = Instant(now().0 - 1);
    let (m, next) = kb.model.manifest(None, before).unwrap();
    assert_eq!(cells(&m, "exact")[3], "-");
    assert_eq!(cells(&m, "exact2")[3], "-");
    assert_eq!(cells(&m, "past")[3], "stale");
    assert_eq!(next, Some(now().0));

    // Later, everything current with a stale_after has flipped.
    let (m, next) = kb.model.manifest(None, at("2027-01-01T00:00:00Z")).unwrap();
    assert_eq!(next, None);
    for id in [
        "past", "future", "exact", "exact2", "soon", "stable", "other",
    ] {
        assert_eq!(cells(&m, id)[3], "stale", "{id}");
    }
    assert_eq!(cells(&m, "depsoon")[3], "draft");
    // No usable stale_after: never stale.
    for id in ["plain", "bad", "naive"] {
        assert_eq!(cells(&m, id)[3], "-", "{id}");
    }
}

#[test]
fn stale_demotes_bundle_manifest_and_search_rows() {
    let kb = stale_kb();
    let m = kb.manifest(Some("b"));
    assert_eq!(cells(&m, "past")[3], "stale");
    assert_eq!(cells(&m, "future")[3], "-");
    assert!(rows(&m).iter().all(|r| !r.starts_with("other\t")));
    let s = kb.search("pastword", 8, None);
    assert_eq!(cells(&s, "past")[3], "stale");
    let s = kb.search("futureword", 8, Some("b"));
    assert_eq!(cells(&s, "future")[3], "-");
    let s = kb
        .search_at("futureword", 8, Some("b"), at("2026-07-01T00:00:00Z"))
        .unwrap();
    assert_eq!(cells(&s, "future")[3], "stale");
    let s = kb.search("depword", 8, None);
    assert_eq!(cells(&s, "dep")[3], "deprecated");
}

// ----------------------------------------------------------------- search

#[test]
fn search_description_only_word_and_expansion() {
    let kb = fixture();
    let s = kb.search("churned", 8, None);
    assert_eq!(
        s,
        format!(
            "{HEADER}# query: churned\n# hits: 1 direct, 1 linked\n{COLUMNS}\tpos\n\
             customers\tsales\tbigquery_table\t-\tcustomer_id\tRegistered customers, including churned.\ttables/orders\t-\n\
             tables/orders\tsales\tbigquery_table\t-\torder_id\tOne row per completed customer order.\tcustomers metrics/orders\t-\n"
        )
    );
    assert!(!s.contains("@@"));
    let s = kb.search("churned", 8, Some("sales"));
    assert!(s.starts_with(&format!(
        "{HEADER}# bundle: sales\n# query: churned\n# hits: 1 direct, 1 linked\n{COLUMNS}\tpos\n"
    )));
    // The bundle filter also applies to linked rows.
    let s = kb.search("churned", 8, Some("ops"));
    assert_eq!(
        s,
        format!(
            "{HEADER}# bundle: ops\n# query: churned\n# hits: 0 direct, 0 linked\n{COLUMNS}\tpos\n"
        )
    );
}

#[test]
fn search_no_match() {
    let kb = fixture();
    assert_eq!(
        kb.search("zzyzx", 8, None),
        format!("{HEADER}# query: zzyzx\n# hits: 0 direct, 0 linked\n{COLUMNS}\tpos\n")
    );
    assert_eq!(
        kb.search("--", 8, None),
        format!("{HEADER}# query: --\n# hits: 0 direct, 0 linked\n{COLUMNS}\tpos\n")
    );
    let s = kb.search("orders\tservice\nnow", 8, None);
    assert!(s.contains("\n# query: orders service now\n# hits: "), "{s}");
    assert_eq!(s.lines().filter(|l| l.starts_with('#')).count(), 4);
    let empty = Kb::new("acme");
    let s = empty.search("x", 8, None);
    assert!(s.ends_with(&format!(
        "# query: x\n# hits: 0 direct, 0 linked\n{COLUMNS}\tpos\n"
    )));
}

#[test]
fn search_pos_column() {
    let kb = fixture();
    // "checkout" is in the ops/orders body: a body match gives digits.
    let s = kb.search("checkout", 8, None);
    let r = cells(&s, "orders");
    assert_eq!(r.len(), 8);
    assert!(
        r[7].chars().all(|c| c.is_ascii_digit()) && !r[7].is_empty(),
        "{s}"
    );
    assert_eq!(r[7], "0");
    // Linked rows end with "-".
    let s = kb.search("pipeline", 8, None);
    assert!(s.contains("# hits: 1 direct, 1 linked\n"), "{s}");
    let rs = rows(&s);
    assert!(
        rs[0].starts_with("deploy\t") && rs[0].ends_with("\t0"),
        "{s}"
    );
    assert!(
        rs[1].starts_with("orders\tops\t") && rs[1].ends_with("\t-"),
        "{s}"
    );
    // Every direct row carries digits or "-"; k limits direct rows.
    let s = kb.search("orders", 1, None);
    assert!(s.contains("# hits: 1 direct, "), "{s}");
    for line in s.lines() {
        assert!(!line.contains('\r'));
    }
}

#[test]
fn search_name_outranks_body_and_title_is_searched() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "widget.md", &note("A small part.\n")),
            (
                "b",
                "catalog.md",
                &note(
                    "Catalog of parts.\n\nThe widget list: widget one, widget two, widget three.\n",
                ),
            ),
            (
                "b",
                "recipes/recipe_181.md",
                "---\ntype: Recipe\ntitle: Rabbit soup\n---\nSimmer slowly for hours.\n",
            ),
            ("b", "recipes/recipe_182.md", &note("Carrot cake.\n")),
        ]),
    );
    let s = kb.search("widget", 8, None);
    assert_eq!(row_ids(&s), ["widget", "catalog"]);
    // widget matched by name only: pos "-"; catalog's body matched.
    assert!(rows(&s)[0].ends_with("\t-"));
    assert!(rows(&s)[1].ends_with("\t0"));
    let s = kb.search("rabbit soup", 8, None);
    assert_eq!(row_ids(&s), ["recipe_181"]);
    assert!(rows(&s)[0].ends_with("\t-"));
}

#[test]
fn search_folds_accents_both_ways() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "pt.md", &note("As operações do armazém.\n")),
            ("b", "ascii.md", &note("Plain operacoes here.\n")),
            ("b", "other.md", &note("Nothing related.\n")),
        ]),
    );
    for q in ["operacoes", "operações", "OPERAÇÕES"] {
        let s = kb.search(q, 8, None);
        let mut ids = row_ids(&s);
        ids.sort();
        assert_eq!(ids, ["ascii", "pt"], "{q}: {s}");
        assert!(s.contains("# hits: 2 direct, 0 linked\n"), "{q}");
    }
    let s = kb.search("operações", 8, None);
    assert!(s.contains("# query: operações\n"));
    // pos compares words as the index does (folded and stemmed), so both
    // bodies have a position, where reference §6.5 matched words as typed.
    assert_eq!(cells(&s, "pt")[7], "0");
    assert_eq!(cells(&s, "ascii")[7], "0");
    let s = kb.search("armazem", 8, None);
    assert_eq!(row_ids(&s), ["pt"]);
}

#[test]
fn search_expansion_capped_at_k() {
    let mut docs = vec![(
        "h".to_string(),
        "hub.md".to_string(),
        note("[e](e.md) [d](d.md) [c](c.md) [b](b.md) [a](a.md)\n"),
    )];
    for n in ["a", "b", "c", "d", "e"] {
        docs.push(("h".into(), format!("{n}.md"), note("Leaf.\n")));
    }
    let kb = Kb::build("acme", &docs);
    let s = kb.search("hub", 2, None);
    assert!(s.contains("# hits: 1 direct, 2 linked\n"), "{s}");
    assert_eq!(row_ids(&s), ["hub", "a", "b"]);
    let s = kb.search("hub", 8, None);
    assert!(s.contains("# hits: 1 direct, 5 linked\n"), "{s}");
    assert_eq!(row_ids(&s), ["hub", "a", "b", "c", "d", "e"]);
    for r in &rows(&s)[1..] {
        assert!(r.ends_with("\t-"), "{r}");
    }
}

#[test]
fn search_target_linked_by_several_hits_ranks_first() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "p1.md", &note("zap [t1](t1.md) [t2](t2.md)\n")),
            // Same length as p1, so the two tie and break on id.
            ("b", "p2.md", &note("zap [t2](t2.md) [t2](t2.md)\n")),
            ("b", "t1.md", &note("One.\n")),
            ("b", "t2.md", &note("Two.\n")),
        ]),
    );
    let s = kb.search("zap", 8, None);
    assert!(s.contains("# hits: 2 direct, 2 linked\n"), "{s}");
    assert_eq!(row_ids(&s), ["p1", "p2", "t2", "t1"]);
}

#[test]
fn search_bundle_filter_applies_before_k() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("a", "x1.md", &note("apple apple apple.\n")),
            ("a", "x2.md", &note("apple apple pie.\n")),
            (
                "b",
                "y1.md",
                &note("An apple in a much longer body of text about many different things here.\n"),
            ),
        ]),
    );
    let s = kb.search("apple", 1, None);
    assert_eq!(row_ids(&s), ["x1"]);
    let s = kb.search("apple", 1, Some("b"));
    assert!(
        s.contains("# bundle: b\n# query: apple\n# hits: 1 direct, 0 linked\n"),
        "{s}"
    );
    assert_eq!(row_ids(&s), ["y1"]);
    let s = kb.search("apple", 8, Some("a"));
    assert_eq!(row_ids(&s), ["x1", "x2"]);
}

#[test]
fn search_is_deterministic() {
    let docs = fixture_docs();
    let a = Kb::build("acme", &docs);
    let mut rev = docs.clone();
    rev.reverse();
    let b = Kb::build("acme", &rev);
    for q in [
        "orders",
        "customer orders",
        "sales database",
        "the",
        "churned",
        "deploy",
    ] {
        for k in [1, 2, 8] {
            let x = a.search(q, k, None);
            assert_eq!(x, a.search(q, k, None), "{q} {k}");
            assert_eq!(x, b.search(q, k, None), "{q} {k}");
            assert_eq!(
                a.search(q, k, Some("sales")),
                b.search(q, k, Some("sales")),
                "{q} {k}"
            );
        }
    }
    // Equal scores break on id ascending.
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "m.md", &note("same words\n")),
            ("b", "c.md", &note("same words\n")),
            ("b", "x.md", &note("same words\n")),
        ]),
    );
    assert_eq!(row_ids(&kb.search("same", 8, None)), ["c", "m", "x"]);
    assert_eq!(row_ids(&kb.search("same", 2, None)), ["c", "m"]);
}

fn all_outputs(kb: &Kb) -> Vec<String> {
    let mut out = vec![kb.manifest(None), kb.model.snapshot()];
    let bundles: Vec<String> = kb.model.bundles().iter().map(|s| s.to_string()).collect();
    for b in &bundles {
        out.push(kb.manifest(Some(b)));
    }
    for q in [
        "orders",
        "customers",
        "loyalty",
        "churned",
        "deploy checkout",
        "messy",
        "sales database",
        "staging",
        // A renamed id is a searched name: "sales/customers" adds "sales".
        "sales",
        "ops customers",
    ] {
        for k in [1, 3, 8] {
            out.push(kb.search(q, k, None));
            for b in &bundles {
                out.push(kb.search(q, k, Some(b)));
            }
        }
    }
    out
}

#[test]
fn search_incremental_equals_fresh_build() {
    let mut docs = fixture_docs();
    let mut kb = Kb::build("acme", &docs);

    let set = |docs: &mut Vec<(String, String, String)>, b: &str, p: &str, t: Option<String>| {
        docs.retain(|(db, dp, _)| !(db == b && dp == p));
        if let Some(t) = t {
            docs.push((b.into(), p.into(), t));
        }
    };
    let check = |kb: &Kb, docs: &[(String, String, String)]| {
        let mut shuffled = docs.to_vec();
        shuffled.reverse();
        let fresh = Kb::build("acme", &shuffled);
        assert_eq!(all_outputs(kb), all_outputs(&fresh));
    };
    let customers_slot = kb.slot("sales", "tables/customers.md");

    // 1. Edit a body.
    let customers = fixture_text("sales", "tables/customers.md").replace(
        "One row per customer.",
        "One row per customer, with loyalty tiers.",
    );
    kb.put("sales", "tables/customers.md", &customers);
    set(&mut docs, "sales", "tables/customers.md", Some(customers));
    assert!(kb.settle().is_empty());
    check(&kb, &docs);
    assert!(kb.search("loyalty", 8, None).contains("\ncustomers\t"));

    // 2. Add a document that renames an untouched concept of another
    //    bundle, and remove one.
    let ops_customers = note("Ops view of customers. [deploy](deploy.md)\n");
    kb.put("ops", "customers.md", &ops_customers);
    set(&mut docs, "ops", "customers.md", Some(ops_customers));
    assert!(kb.del("sales", "raw/messy.md").is_some());
    set(&mut docs, "sales", "raw/messy.md", None);
    let renamed = kb.settle();
    assert!(renamed.contains(&customers_slot), "{renamed:?}");
    assert_eq!(kb.id("sales", "tables/customers.md"), "sales/customers");
    check(&kb, &docs);
    assert!(kb
        .search("loyalty", 8, None)
        .contains("\nsales/customers\t"));
    assert!(!kb.search("messy", 8, None).contains("messy\t"));

    // 3. A new document that can take the freed slot.
    let staging = note("Staging orders, loyalty flagged.\n");
    kb.put("sales", "staging/orders.md", &staging);
    set(&mut docs, "sales", "staging/orders.md", Some(staging));
    kb.settle();
    check(&kb, &docs);

    // 4. Undo the rename alone, then the body edit.
    kb.del("ops", "customers.md");
    set(&mut docs, "ops", "customers.md", None);
    assert_eq!(kb.settle(), vec![customers_slot]);
    assert_eq!(kb.id("sales", "tables/customers.md"), "customers");
    check(&kb, &docs);
    let original = fixture_text("sales", "tables/customers.md");
    kb.put("sales", "tables/customers.md", &original);
    set(&mut docs, "sales", "tables/customers.md", Some(original));
    kb.settle();
    check(&kb, &docs);
    assert!(!kb.search("loyalty", 8, None).contains("customers\t"));
}

// -------------------------------------------------------------------- pos

#[test]
fn pos_centres_a_lone_word() {
    let filler = "lorem ipsum dolor sit amet ".repeat(200);
    let body = format!("{filler}zebra {filler}");
    let where_ = filler.len();
    let text = note(&body);
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "long.md", &text),
            ("b", "plain.md", &format!("# Plain\n\n{body}")),
        ]),
    );
    let s = kb.search("zebra", 8, None);
    let want = (where_ - (2000 - 5) / 2).to_string();
    assert_eq!(cells(&s, "long")[7], want);
    // Without frontmatter the body is the whole text.
    assert_eq!(cells(&s, "plain")[7], (where_ + 9 - 997).to_string());

    // Near the end the window is clamped to the end of the body.
    let body = format!("{filler}zebra end.\n");
    let kb = Kb::build("acme", &triples(&[("b", "tail.md", &note(&body))]));
    let s = kb.search("zebra", 8, None);
    assert_eq!(cells(&s, "tail")[7], (body.len() - 2000).to_string());
    // A body shorter than the window gives 0.
    let kb = Kb::build("acme", &triples(&[("b", "short.md", &note("A zebra.\n"))]));
    assert_eq!(cells(&kb.search("zebra", 8, None), "short")[7], "0");
}

// -------------------------------------------------------------------- get

#[test]
fn get_batches_in_request_order() {
    let kb = fixture();
    let whole = SliceOptions::default();
    let c = body_of("sales", "tables/customers.md");
    let o = body_of("sales", "tables/orders.md");
    assert_eq!(
        kb.get(&["customers", "tables/orders"], None, &whole),
        format!("@@ customers\n{c}\n@@ tables/orders\n{o}")
    );
    assert_eq!(
        kb.get(
            &["tables/orders", "customers", "tables/orders"],
            None,
            &whole
        ),
        format!("@@ tables/orders\n{o}\n@@ customers\n{c}")
    );
    assert_eq!(
        kb.get(&["customers", "nope", "also-missing"], None, &whole),
        format!("@@ customers\n{c}\n@@ missing\nnope also-missing")
    );
    assert_eq!(kb.get(&["nope"], None, &whole), "@@ missing\nnope");
    // A frontmatter-less body stays whole; index.md is no concept.
    assert_eq!(kb.get(&["index"], None, &whole), "@@ missing\nindex");
}

#[test]
fn get_sections() {
    let kb = fixture();
    let whole = SliceOptions::default();
    assert_eq!(
        kb.get(&["orders_db"], Some("schema"), &whole),
        "@@ orders_db\n## Schema\n\nTwo tables: orders and customers.\n\n"
    );
    let s = kb.get(&["orders_db"], Some("orders_db"), &whole);
    assert_eq!(
        s,
        "@@ orders_db\n# Orders DB\n\nThe production sales database. It holds the order and customer tables.\n\n"
    );
    let full = kb.get(&["orders_db"], None, &whole);
    assert!(s.len() < full.len() && s.contains("# Orders DB"));
    assert_eq!(
        kb.get(&["orders_db", "tables/orders", "nope"], Some("schema"), &whole),
        "@@ orders_db\n## Schema\n\nTwo tables: orders and customers.\n\n\n@@ missing\ntables/orders nope"
    );
    // A section slice counts offsets within the section.
    assert_eq!(
        kb.get(
            &["orders_db"],
            Some("schema"),
            &slice(Some(3), Some(6), None)
        ),
        "@@ orders_db [3..9 of 46]\nSchema"
    );
}

#[test]
fn get_section_names() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            (
                "b",
                "doc.md",
                &note(
                    "Intro text.\n# Setup\nA\n## Setup\nB\n```\n# not a heading\n```\n# Body\nC\n",
                ),
            ),
            ("b", "open.md", &note("# One\n```\n# Two\n")),
        ]),
    );
    let whole = SliceOptions::default();
    let sec = |id: &str, name: &str| kb.get(&[id], Some(name), &whole);
    assert_eq!(sec("doc", "body"), "@@ doc\nIntro text.\n");
    assert_eq!(sec("doc", "setup"), "@@ doc\n# Setup\nA\n");
    assert_eq!(
        sec("doc", "setup_2"),
        "@@ doc\n## Setup\nB\n```\n# not a heading\n```\n"
    );
    assert_eq!(sec("doc", "body_2"), "@@ doc\n# Body\nC\n");
    assert_eq!(sec("doc", "not_a_heading"), "@@ missing\ndoc");
    assert_eq!(sec("open", "one"), "@@ open\n# One\n```\n# Two\n");
    assert_eq!(sec("open", "two"), "@@ missing\nopen");
}

fn huge_body() -> String {
    let mut s = "a".repeat(20005);
    s.push_str("Needle");
    s.push_str(&"b".repeat(40022 - 20005 - 6));
    s
}

#[test]
fn get_slices_a_huge_body() {
    let body = huge_body();
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "huge.md", &note(&body)),
            ("b", "many.md", &note(&"ab ".repeat(30))),
        ]),
    );
    let r = kb.get(&["huge"], None, &slice(None, Some(15000), None));
    assert!(
        r.starts_with("@@ huge [0..15000 of 40022]\naaa"),
        "{}",
        &r[..40]
    );
    assert!(r.len() < 15100);
    assert!(!r.contains("Needle") && !r.contains('b'));
    let r = kb.get(&["huge"], None, &slice(Some(15000), Some(15000), None));
    assert!(r.starts_with("@@ huge [15000..30000 of 40022]\n"));
    assert_eq!(&r[r.find('\n').unwrap() + 1..], &body[15000..30000]);
    let r = kb.get(&["huge"], None, &slice(None, Some(25), None));
    assert_eq!(r, format!("@@ huge [0..25 of 40022]\n{}", "a".repeat(25)));
    let r = kb.get(&["huge"], None, &slice(None, None, Some("needle")));
    assert!(
        r.starts_with("@@ huge [19008..21008 of 40022] 1 match at 20005\n"),
        "{}",
        &r[..60]
    );
    assert!(r.len() < 3000);
    assert!(r.contains("Needle"));
    let r = kb.get(
        &["huge"],
        None,
        &slice(Some(5), Some(100), Some("haystack")),
    );
    assert_eq!(r, "@@ huge no match in 40022 chars");
    // Without a limit the whole body comes back (no cap in the model).
    let r = kb.get(&["huge"], None, &SliceOptions::default());
    assert_eq!(r, format!("@@ huge\n{body}"));

    let offsets: Vec<String> = (0..20).map(|i| (i * 3).to_string()).collect();
    let r = kb.get(&["many"], None, &slice(None, None, Some("AB")));
    assert_eq!(
        r,
        format!(
            "@@ many first 20 of 30 matches at {}\n{}",
            offsets.join(" "),
            "ab ".repeat(30)
        )
    );
    let r = kb.get(&["many"], None, &slice(None, Some(4), Some("ab b")));
    assert_eq!(r, "@@ many no match in 90 chars");
}

#[test]
fn get_is_surrogate_safe() {
    let kb = Kb::build(
        "acme",
        &triples(&[
            ("b", "emoji.md", &note(&"😀".repeat(10))),
            ("b", "mixed.md", &note("😀😀😀x😀😀😀")),
        ]),
    );
    assert_eq!(
        kb.get(&["emoji"], None, &slice(Some(1), Some(4), None)),
        "@@ emoji [0..6 of 20]\n😀😀😀"
    );
    assert_eq!(
        kb.get(&["emoji"], None, &slice(Some(3), Some(1), None)),
        "@@ emoji [2..4 of 20]\n😀"
    );
    for off in 0..22u64 {
        for lim in 1..6u64 {
            let r = kb.get(&["emoji"], None, &slice(Some(off), Some(lim), None));
            let (frame, text) = r.split_once('\n').unwrap_or((r.as_str(), ""));
            assert!(!text.contains('\u{FFFD}'));
            if frame == "@@ emoji" {
                assert_eq!(text, "😀".repeat(10));
                continue;
            }
            let range = frame
                .strip_prefix("@@ emoji [")
                .and_then(|f| f.strip_suffix(" of 20]"))
                .unwrap_or_else(|| panic!("{frame}"));
            let (s, e) = range.split_once("..").unwrap();
            let (s, e): (usize, usize) = (s.parse().unwrap(), e.parse().unwrap());
            assert!(s % 2 == 0 && e % 2 == 0, "{frame}");
            assert!(s <= off as usize || off >= 20, "{frame}");
            assert_eq!(text.encode_utf16().count(), e - s, "{frame}");
            assert_eq!(text, "😀".repeat((e - s) / 2));
        }
    }
    assert_eq!(
        kb.get(&["mixed"], None, &slice(None, Some(4), Some("x"))),
        "@@ mixed [4..9 of 13] 1 match at 6\n😀x😀"
    );
}

// ----------------------------------------------------------------- advice

fn manifest_with(n: usize) -> String {
    let mut kb = Kb::new("acme");
    for i in 0..n {
        let text = format!(
            "---\ntype: Table\ngrain: row_id\ndescription: Concept number {i} of the generated tenant, with a short summary.\n---\nBody {i}.\n"
        );
        kb.put("gen", &format!("c/concept_{i:05}.md"), &text);
    }
    kb.settle();
    kb.manifest(None)
}

fn expected_tokens(manifest: &str) -> String {
    let n = manifest.encode_utf16().count().div_ceil(4) as u64;
    let r = if n < 100 {
        n
    } else {
        let p = 10u64.pow(n.to_string().len() as u32 - 2);
        (n + p / 2) / p * p
    };
    let s = r.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// The `~[\d,]+ tokens` part of an advice sentence.
fn token_part(sentence: &str) -> &str {
    let start = sentence.find('~').expect("~");
    let rest = &sentence[start + 1..];
    let end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == ','))
        .unwrap();
    assert!(end > 0);
    assert!(rest[end..].starts_with(" tokens"), "{sentence}");
    &rest[..end]
}

#[test]
fn advice_reads_small_manifests_whole() {
    let m = manifest_with(20);
    assert_eq!(rows(&m).len(), 20);
    let a = advice(&m);
    assert_eq!(
        a,
        format!(
            "This tenant's manifest measures ~{} tokens; reading it whole is cheaper than searching.",
            expected_tokens(&m)
        )
    );
    assert_eq!(token_part(&a), expected_tokens(&m));
    assert_eq!(a, advice(&m));
    let empty = Model::new("acme").manifest(None, now()).unwrap().0;
    assert!(advice(&empty).ends_with("reading it whole is cheaper than searching."));
}

#[test]
fn advice_prefers_search_for_large_manifests() {
    let m = manifest_with(2000);
    assert_eq!(rows(&m).len(), 2000);
    let a = advice(&m);
    assert_eq!(
        a,
        format!(
            "This tenant's manifest measures ~{} tokens; prefer \"search\" over reading it whole.",
            expected_tokens(&m)
        )
    );
    let t = token_part(&a);
    assert!(t.contains(','), "{t}");
    assert_eq!(a, advice(&m));
}

// --------------------------------------------------------------- snapshot

#[test]
fn snapshot_digest() {
    let docs = fixture_docs();
    let a = Kb::build("acme", &docs);
    let mut rev = docs.clone();
    rev.reverse();
    let b = Kb::build("acme", &rev);
    let d = a.model.snapshot();
    assert_eq!(d.len(), 64);
    assert!(d
        .chars()
        .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
    assert_eq!(d, b.model.snapshot());
    // Any byte change of any document changes the digest.
    let mut kb = Kb::build("acme", &docs);
    let orig = fixture_text("sales", "tables/orders.md");
    let changed = orig.replacen("Orders", "Ordera", 1);
    kb.put("sales", "tables/orders.md", &changed);
    kb.settle();
    assert_ne!(kb.model.snapshot(), d);
    // A one-byte change anywhere, navigation documents included.
    kb.put("sales", "tables/orders.md", &orig);
    kb.settle();
    assert_eq!(kb.model.snapshot(), d);
    let idx = fixture_text("sales", "index.md");
    kb.put("sales", "index.md", &format!("{idx} "));
    kb.settle();
    assert_ne!(kb.model.snapshot(), d);
    kb.put("sales", "index.md", &idx);
    kb.settle();
    assert_eq!(kb.model.snapshot(), d);
    // Remove and re-add restores the digest.
    kb.del("ops", "deploy.md");
    kb.settle();
    let without = kb.model.snapshot();
    assert_ne!(without, d);
    kb.put("ops", "deploy.md", &fixture_text("ops", "deploy.md"));
    kb.settle();
    assert_eq!(kb.model.snapshot(), d);
    // The same bytes under another path or bundle are a different snapshot.
    let mut kb = Kb::build("acme", &triples(&[("x", "a.md", &note("A.\n"))]));
    let one = kb.model.snapshot();
    kb.del("x", "a.md");
    kb.put("x", "b.md", &note("A.\n"));
    kb.settle();
    assert_ne!(kb.model.snapshot(), one);
    let kb2 = Kb::build("acme", &triples(&[("y", "a.md", &note("A.\n"))]));
    assert_ne!(kb2.model.snapshot(), one);
}

// ------------------------------------------------- bulk loading of rows

type Row = (
    u32,
    String,
    String,
    String,
    okfit_core::kb::compile::Compiled,
);

/// Rows at scattered slots (with gaps, out of order), as a store holds.
fn stored_rows(docs: &[(String, String, String)]) -> Vec<Row> {
    let n = docs.len() as u32;
    docs.iter()
        .enumerate()
        .map(|(i, (b, p, t))| {
            let slot = (i as u32 * 7 + 3) % (2 * n + 1);
            (slot, b.clone(), p.clone(), sha(t), compile(p, t))
        })
        .collect()
}

/// A slot's `(bundle, path, id)`.
type Held = Option<(String, String, String)>;

/// What a model shows: its manifest, snapshot and every slot's document.
fn shown(m: &mut Model) -> (String, String, Vec<Held>) {
    m.settle();
    let slots = (0..200)
        .map(|s| {
            m.entry(s)
                .map(|e| (e.bundle.clone(), e.path.clone(), e.id.clone()))
        })
        .collect();
    (m.manifest(None, now()).unwrap().0, m.snapshot(), slots)
}

fn one_by_one(rows: &[Row]) -> Model {
    let mut m = Model::new("acme");
    for (slot, b, p, h, c) in rows.iter().cloned() {
        m.upsert_at(slot, &b, &p, &h, c);
    }
    m
}

#[test]
fn filling_a_model_equals_upserting_each_row() {
    let docs = fixture_docs();
    let rows = stored_rows(&docs);
    assert!(rows.len() > 5, "{}", rows.len());
    // Distinct slots and paths, a path given twice (the later row wins),
    // a slot given twice, and a model that holds documents already.
    let mut path_twice = rows.clone();
    let mut again = rows[2].clone();
    again.0 = 150;
    path_twice.push(again);
    let mut slot_twice = rows.clone();
    let mut other = rows[4].clone();
    other.0 = rows[1].0;
    slot_twice.push(other);
    let text = note("A later note.");
    for rows in [rows.clone(), path_twice, slot_twice] {
        let mut filled = Model::new("acme");
        filled.fill(rows.clone());
        let mut each = one_by_one(&rows);
        assert_eq!(shown(&mut filled), shown(&mut each));
        // Both reuse the same free slots afterwards.
        for m in [&mut filled, &mut each] {
            m.upsert("sales", "later.md", &sha(&text), compile("later.md", &text));
        }
        assert_eq!(shown(&mut filled), shown(&mut each));
    }
    let (first, rest) = rows.split_at(5);
    let mut filled = one_by_one(first);
    filled.fill(rest.to_vec());
    assert_eq!(shown(&mut filled), shown(&mut one_by_one(&rows)));
}
