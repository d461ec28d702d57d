//! What the benchmarks of `okfit serve` share: the release `okfit` they
//! build and start, a child killed when dropped, and latency summaries.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

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

/// `okfit serve` on a unix socket of its own; killed when dropped.
pub fn serve(data: &Path, store: Option<&str>, socket: &Path) -> Result<Kill, String> {
    let _ = std::fs::remove_file(socket);
    std::fs::create_dir_all(data).map_err(|e| format!("{}: {e}", data.display()))?;
    let mut cmd = Command::new(okfit_bin());
    cmd.args(["serve", "--data"]).arg(data);
    if let Some(url) = store {
        cmd.args(["--store", url]);
    }
    let mut child = Kill(
        cmd.arg("--socket")
            .arg(socket)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| format!("{}: {e}", okfit_bin().display()))?,
    );
    // Ready once /readyz says so (the read models are warm).
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut http = Http::new(socket);
    while !matches!(http.call("GET", "/readyz", ""), Ok((200, _))) {
        if Instant::now() > deadline {
            return Err("okfit serve did not get ready".into());
        }
        if let Ok(Some(st)) = child.0.try_wait() {
            return Err(format!("okfit serve exited: {st}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(child)
}

/// A kept-alive HTTP/1.1 connection to a daemon's unix socket.
pub struct Http {
    socket: PathBuf,
    conn: Option<BufReader<UnixStream>>,
}

impl Http {
    /// A client of the daemon on `socket`; it connects on first use.
    pub fn new(socket: &Path) -> Http {
        Http {
            socket: socket.to_path_buf(),
            conn: None,
        }
    }

    /// `method path` with a JSON body; the status and the body.
    pub fn call(&mut self, method: &str, path: &str, body: &str) -> Result<(u16, String), String> {
        if self.conn.is_none() {
            let s = UnixStream::connect(&self.socket)
                .map_err(|e| format!("{}: {e}", self.socket.display()))?;
            self.conn = Some(BufReader::new(s));
        }
        let r = self.exchange(method, path, body);
        if r.is_err() {
            self.conn = None;
        }
        r
    }

    fn exchange(&mut self, method: &str, path: &str, body: &str) -> Result<(u16, String), String> {
        let conn = self.conn.as_mut().ok_or("not connected")?;
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: okfit\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        let s = conn.get_mut();
        s.write_all(head.as_bytes())
            .and_then(|_| s.write_all(body.as_bytes()))
            .map_err(|e| e.to_string())?;
        let mut line = String::new();
        conn.read_line(&mut line).map_err(|e| e.to_string())?;
        let status: u16 = line
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .ok_or(format!("bad status line {line:?}"))?;
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            conn.read_line(&mut h).map_err(|e| e.to_string())?;
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':') {
                if k.eq_ignore_ascii_case("content-length") {
                    length = v.trim().parse().map_err(|_| "bad content-length")?;
                }
            }
        }
        let mut buf = vec![0; length];
        conn.read_exact(&mut buf).map_err(|e| e.to_string())?;
        Ok((status, String::from_utf8_lossy(&buf).into_owned()))
    }
}
