//! A raw JSON-lines MCP client over a child's stdio, for timing round
//! trips without a client library's own costs in the figures.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

/// A running MCP server and the next request id.
pub struct Session {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Session {
    /// Spawns `cmd` with piped stdin and stdout (stderr discarded).
    pub fn start(mut cmd: Command) -> Result<Session, String> {
        let shown = format!("{:?}", cmd.get_program());
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("cannot start {shown}: {e}"))?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        Ok(Session {
            child,
            stdin,
            stdout,
            next_id: 1,
        })
    }

    fn send(&mut self, line: &str) -> Result<(), String> {
        self.stdin
            .write_all(line.as_bytes())
            .and_then(|_| self.stdin.write_all(b"\n"))
            .and_then(|_| self.stdin.flush())
            .map_err(|e| format!("write: {e}"))
    }

    /// Sends a request and waits for the response with its id; an error
    /// response or a tool error is an `Err`.
    pub fn request(&mut self, method: &str, params: &str) -> Result<String, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":{params}}}"#
        ))?;
        let want = format!("\"id\":{id},");
        loop {
            let mut line = String::new();
            let n = self
                .stdout
                .read_line(&mut line)
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err(format!("server closed before answering {method}"));
            }
            if line.contains(&want) {
                // A JSON-RPC error answer is `{"jsonrpc":"2.0","id":N,"error":…}`;
                // the word "error" elsewhere (a schema's enum) is not one.
                let failed = line.contains(&format!("\"id\":{id},\"error\":"));
                if failed || line.contains("\"isError\":true") {
                    return Err(format!("{method} failed: {}", line.trim()));
                }
                return Ok(line);
            }
        }
    }

    /// `initialize`, then `notifications/initialized`.
    pub fn initialize(&mut self) -> Result<(), String> {
        self.request(
            "initialize",
            r#"{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"okfit-bench","version":"0"}}"#,
        )?;
        self.send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
    }

    /// The server's peak RSS (`VmHWM`) in MB, where the system reports it.
    pub fn peak_rss_mb(&self) -> Option<f64> {
        Some(crate::kbdata::peak_rss_mb(Some(self.child.id()))).filter(|x| !x.is_nan())
    }

    /// Waits until the server has used no CPU time for `quiet` (its work
    /// ahead of calls done), at most `max`; true when it settled. Reads
    /// `/proc/<pid>/stat`, so elsewhere it waits `quiet` and says no.
    pub fn wait_settled(&self, quiet: Duration, max: Duration) -> bool {
        let cpu = || -> Option<u64> {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).ok()?;
            // Fields after the command's closing parenthesis: state is
            // field 3, utime 14 and stime 15.
            let rest = stat.get(stat.rfind(')')? + 1..)?;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        };
        let deadline = Instant::now() + max;
        let Some(mut last) = cpu() else {
            std::thread::sleep(quiet);
            return false;
        };
        while Instant::now() < deadline {
            std::thread::sleep(quiet);
            let Some(now) = cpu() else {
                return false;
            };
            if now == last {
                return true;
            }
            last = now;
        }
        false
    }

    /// Closes stdin and waits up to 5 s for the server to exit (then kills
    /// it).
    pub fn close(mut self) {
        drop(self.stdin);
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
