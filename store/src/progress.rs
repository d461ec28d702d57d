//! Progress of long work (reading an import, compiling and writing a large
//! commit, exporting, verifying revisions), told to whoever listens.
//!
//! The layers that do the work report steps here; nothing is shown unless
//! the process installed a [`Reporter`] (the `okfit` CLI does, with
//! progress bars, when stderr is a terminal). Without one a step costs one
//! atomic load.

use std::sync::OnceLock;

/// Shows progress; installed once per process with [`install`].
pub trait Reporter: Send + Sync {
    /// Work named `what` begins, of `total` steps when known.
    fn begin(&self, what: &str, total: Option<u64>) -> Box<dyn Shown>;
}

/// One piece of work being shown; it ends when dropped.
pub trait Shown: Send + Sync {
    /// `n` more steps are done.
    fn advance(&self, n: u64);
}

static REPORTER: OnceLock<Box<dyn Reporter>> = OnceLock::new();

/// Installs the process's reporter (the first call wins).
pub fn install(r: Box<dyn Reporter>) {
    let _ = REPORTER.set(r);
}

/// Work being done: its steps go to the installed reporter, if any.
pub struct Task(Option<Box<dyn Shown>>);

impl Task {
    /// Begins work named `what` of `total` steps (when known).
    pub fn begin(what: &str, total: Option<u64>) -> Task {
        Task(REPORTER.get().map(|r| r.begin(what, total)))
    }

    /// `n` more steps are done.
    pub fn advance(&self, n: u64) {
        if let Some(s) = &self.0 {
            s.advance(n);
        }
    }
}
