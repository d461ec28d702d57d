//! Running a child process while measuring its wall time and peak RSS.
//!
//! The child is spawned with [`std::process::Command`] and reaped with
//! `wait4(2)`, whose `rusage.ru_maxrss` is the child's peak resident set size
//! (including any of its own children it waited for).

use std::io::{self, Read};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// `s` as one shell word: as it is when it needs no quoting, else in
/// single quotes (for the command lines the reports print).
pub fn shell_quote(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./,=:+@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}

/// How a measured child ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exit {
    /// Exited normally with this code.
    Code(i32),
    /// Killed by this signal.
    Signal(i32),
}

impl Exit {
    /// The exit code, if the child exited normally.
    pub fn code(self) -> Option<i32> {
        match self {
            Exit::Code(c) => Some(c),
            Exit::Signal(_) => None,
        }
    }
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Exit::Code(c) => write!(f, "{c}"),
            Exit::Signal(s) => write!(f, "sig{s}"),
        }
    }
}

/// The outcome of one measured run.
#[derive(Clone, Debug)]
pub struct RunResult {
    /// Wall time from just before spawning to the return of `wait4`.
    pub wall: Duration,
    /// Peak resident set size of the child in KiB.
    pub max_rss_kib: u64,
    /// How the child ended.
    pub exit: Exit,
    /// Captured standard output (only when asked for; otherwise it went to `/dev/null`).
    pub stdout: Option<Vec<u8>>,
    /// Captured standard error.
    pub stderr: Vec<u8>,
}

fn drain<R: Read>(reader: Option<R>) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(mut r) = reader {
        // A read error only truncates what we show; the run itself is still measured.
        let _ = r.read_to_end(&mut buf);
    }
    buf
}

/// Runs `cmd` to completion with stdin closed, stdout sent to `/dev/null`
/// (or captured when `capture_stdout`), stderr captured, and measures it.
///
/// Errors: the command cannot be spawned, or `wait4` fails.
#[cfg(unix)]
pub fn run(cmd: &mut Command, capture_stdout: bool) -> io::Result<RunResult> {
    cmd.stdin(Stdio::null()).stderr(Stdio::piped());
    if capture_stdout {
        cmd.stdout(Stdio::piped());
    } else {
        cmd.stdout(Stdio::null());
    }
    let start = Instant::now();
    let mut child = cmd.spawn()?;
    let pid = libc::pid_t::try_from(child.id())
        .map_err(|_| io::Error::other("child pid does not fit pid_t"))?;
    let out = child.stdout.take();
    let err = child.stderr.take();
    let out_thread = thread::spawn(move || drain(out));
    let err_thread = thread::spawn(move || drain(err));

    let mut status: libc::c_int = 0;
    // SAFETY: `rusage` is a plain C struct for which all-zero bytes are valid.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    loop {
        // SAFETY: `pid` is our own unreaped child; both out-pointers are valid
        // for writes for the duration of the call.
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == pid {
            break;
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
    let wall = start.elapsed();
    // The child is reaped: `child` must not be waited on again; dropping it is fine.
    drop(child);

    let exit = if libc::WIFEXITED(status) {
        Exit::Code(libc::WEXITSTATUS(status))
    } else if libc::WIFSIGNALED(status) {
        Exit::Signal(libc::WTERMSIG(status))
    } else {
        Exit::Signal(0)
    };
    let stdout = out_thread.join().unwrap_or_default();
    let stderr = err_thread.join().unwrap_or_default();
    let raw_rss = u64::try_from(usage.ru_maxrss).unwrap_or(0);
    // Linux reports KiB, macOS bytes.
    let max_rss_kib = if cfg!(target_os = "macos") {
        raw_rss / 1024
    } else {
        raw_rss
    };
    Ok(RunResult {
        wall,
        max_rss_kib,
        exit,
        stdout: capture_stdout.then_some(stdout),
        stderr,
    })
}

/// Unsupported off Unix: peak RSS needs `wait4`.
#[cfg(not(unix))]
pub fn run(_cmd: &mut Command, _capture_stdout: bool) -> io::Result<RunResult> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "measuring peak RSS needs wait4(2), which only Unix has",
    ))
}

/// Summary statistics of a set of wall times, in seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stats {
    /// Fastest run.
    pub min: f64,
    /// Median run (mean of the middle two for an even count).
    pub median: f64,
    /// Slowest run.
    pub max: f64,
}

/// Computes [`Stats`] of `secs`; `None` when empty.
pub fn stats(secs: &[f64]) -> Option<Stats> {
    if secs.is_empty() {
        return None;
    }
    let mut v = secs.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let median = if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    };
    Some(Stats {
        min: v[0],
        median,
        max: v[n - 1],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_odd_even() {
        assert!(stats(&[]).is_none());
        let s = stats(&[3.0, 1.0, 2.0]).unwrap();
        assert_eq!((s.min, s.median, s.max), (1.0, 2.0, 3.0));
        let s = stats(&[4.0, 1.0, 2.0, 3.0]).unwrap();
        assert_eq!(s.median, 2.5);
    }

    #[cfg(unix)]
    #[test]
    fn measures_exit_code_stderr_and_rss() {
        let mut cmd = Command::new("sh");
        cmd.args(["-c", "echo out; echo err >&2; exit 3"]);
        let r = run(&mut cmd, true).unwrap();
        assert_eq!(r.exit, Exit::Code(3));
        assert_eq!(r.stdout.as_deref(), Some(&b"out\n"[..]));
        assert_eq!(r.stderr, b"err\n");
        assert!(r.max_rss_kib > 0);
    }
}
