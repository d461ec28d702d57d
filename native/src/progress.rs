//! Progress bars on a terminal for the store's long work (see
//! [`okfit_store::progress`]): counts, rate and, when the total is known,
//! the time left. A bar appears only once its work has taken half a second,
//! so quick commands print nothing extra, and nothing is drawn when stderr
//! is not a terminal.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};
use okfit_store::progress::{install, Reporter, Shown};
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long work runs before its bar is drawn, unless
/// `OKFIT_PROGRESS_AFTER_MS` says otherwise.
const QUIET: Duration = Duration::from_millis(500);

fn quiet() -> Duration {
    std::env::var("OKFIT_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map_or(QUIET, Duration::from_millis)
}

/// Shows the store's progress on stderr from now on, when it is a terminal.
pub fn show_on_terminal() {
    if std::io::stderr().is_terminal() {
        install(Box::new(Bars { quiet: quiet() }));
    }
}

struct Bars {
    quiet: Duration,
}

struct Bar {
    bar: ProgressBar,
    quiet: Duration,
    started: Instant,
    drawn: AtomicBool,
}

impl Reporter for Bars {
    fn begin(&self, what: &str, total: Option<u64>) -> Box<dyn Shown> {
        let bar = ProgressBar::with_draw_target(total, ProgressDrawTarget::hidden());
        let template = if total.is_some() {
            "{msg:>24} [{bar:30}] {human_pos}/{human_len} ({rate}, {eta} left)"
        } else {
            "{msg:>24} {spinner} {human_pos} ({rate}, {elapsed})"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(
                style
                    .with_key("rate", |s: &ProgressState, w: &mut dyn std::fmt::Write| {
                        let _ = write!(w, "{:.0}/s", s.per_sec());
                    })
                    .progress_chars("=> "),
            );
        }
        bar.set_message(what.to_string());
        Box::new(Bar {
            bar,
            quiet: self.quiet,
            started: Instant::now(),
            drawn: AtomicBool::new(false),
        })
    }
}

impl Shown for Bar {
    fn advance(&self, n: u64) {
        self.bar.inc(n);
        if !self.drawn.load(Ordering::Relaxed)
            && self.started.elapsed() >= self.quiet
            && !self.drawn.swap(true, Ordering::Relaxed)
        {
            self.bar.set_draw_target(ProgressDrawTarget::stderr());
            self.bar.enable_steady_tick(Duration::from_millis(200));
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if self.drawn.load(Ordering::Relaxed) {
            self.bar.finish();
        }
    }
}
