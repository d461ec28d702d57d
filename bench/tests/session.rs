//! The agent-session bill runs end to end: the corpus is written and
//! imported, all three strategies end every question holding its answer
//! (the program fails otherwise), and the JSON carries the bill.

use std::process::Command;

#[test]
fn session_bill_runs_and_every_strategy_answers() {
    let dir = std::env::temp_dir().join(format!("okfit-session-test-{}", std::process::id()));
    let json = dir.join("session.json");
    std::fs::create_dir_all(&dir).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_okfit-bench-session"))
        .arg("--dir")
        .arg(&dir)
        .arg("--json")
        .arg(&json)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let strategies = v["strategies"].as_array().unwrap();
    assert_eq!(strategies.len(), 3);
    for s in strategies {
        let billed = s["billed_tokens"].as_f64().unwrap();
        let calls = s["calls"].as_u64().unwrap();
        assert!(billed > 10_000.0 && calls >= 10, "{s}");
    }
    // The manifest strategy carries the manifest in its prompt; it can never
    // bill less than the manifest itself.
    let manifest = v["reads"]["manifest"].as_f64().unwrap();
    assert!(strategies[1]["billed_tokens"].as_f64().unwrap() > manifest);
    assert_eq!(v["questions"], 20);
    // The plain files were written where asked, and nothing else was removed.
    assert!(dir.join("reference/okf/index.md").exists());
    assert!(json.exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
