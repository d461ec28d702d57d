//! What the benchmarks of `okfit serve` share: the release `okfit` they
//! build and start, a child killed when dropped, and latency summaries.

use serde_json::{json, Value};
use std::path::PathBuf;
use std::process::{Child, Command};

/// A child process, killed and waited for when dropped.
pub struct Kill(pub Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The workspace's `target/` (or `CARGO_TARGET_DIR`).
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target"))
}

/// The release `okfit` binary.
pub fn okfit_bin() -> PathBuf {
    target_dir().join("release").join("okfit")
}

/// Builds the release `okfit` binaries. Without the variables `cargo run`
/// set for the calling benchmark: ring's build script reruns when
/// `CARGO_MANIFEST_DIR` or `CARGO_PKG_*` change, so with them every run
/// (and the next `cargo run`) would rebuild okfit.
pub fn build_okfit() -> Result<(), String> {
    let mut build = Command::new(env!("CARGO"));
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if k.starts_with("CARGO_PKG_")
            || k.starts_with("CARGO_MANIFEST_")
            || [
                "CARGO_CRATE_NAME",
                "CARGO_BIN_NAME",
                "CARGO_PRIMARY_PACKAGE",
                "OUT_DIR",
            ]
            .contains(&k.as_ref())
        {
            build.env_remove(k.as_ref());
        }
    }
    let st = build
        .args(["build", "--release", "-p", "okfit", "--bins"])
        .current_dir(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".."))
        .status()
        .map_err(|e| e.to_string())?;
    st.success()
        .then_some(())
        .ok_or_else(|| "cargo build failed".into())
}

/// `sorted[floor(len * q)]`; NaN when empty.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((sorted.len() as f64 * q) as usize).min(sorted.len() - 1)]
}

/// `{"p50", "p95", "p99", "max", "runs"}` of latencies `v` (ms).
pub fn latency(mut v: Vec<f64>) -> Value {
    v.sort_by(|a, b| a.total_cmp(b));
    json!({
        "p50": quantile(&v, 0.5),
        "p95": quantile(&v, 0.95),
        "p99": quantile(&v, 0.99),
        "max": v.last().copied().unwrap_or(f64::NAN),
        "runs": v.len(),
    })
}
