//! Work made ahead of calls (a server validating its bundle as it starts)
//! that a call arriving meanwhile waits for, rather than doing the same
//! work again beside it on the same cores.

use std::sync::{Condvar, Mutex, MutexGuard};

/// Whether a piece of work made ahead of calls is under way.
#[derive(Default)]
pub(crate) struct Ahead {
    busy: Mutex<bool>,
    done: Condvar,
}

/// The work marked under way until this is dropped (also when the work
/// fails or panics).
pub(crate) struct Underway<'a>(&'a Ahead);

impl Ahead {
    fn state(&self) -> MutexGuard<'_, bool> {
        self.busy.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Marks the work begun; `None` when it is under way already.
    pub(crate) fn begin(&self) -> Option<Underway<'_>> {
        let mut busy = self.state();
        if *busy {
            return None;
        }
        *busy = true;
        Some(Underway(self))
    }

    /// Waits until no such work is under way.
    pub(crate) fn wait(&self) {
        let mut busy = self.state();
        while *busy {
            busy = self.done.wait(busy).unwrap_or_else(|p| p.into_inner());
        }
    }
}

impl Drop for Underway<'_> {
    fn drop(&mut self) {
        *self.0.state() = false;
        self.0.done.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_caller_waits_for_the_work_under_way_and_no_longer() {
        let ahead = Arc::new(Ahead::default());
        let finished = Arc::new(AtomicBool::new(false));
        let underway = ahead.begin().expect("nothing under way yet");
        assert!(ahead.begin().is_none(), "one piece of work at a time");
        let (a, f) = (ahead.clone(), finished.clone());
        let waiter = std::thread::spawn(move || {
            a.wait();
            f.load(Ordering::SeqCst)
        });
        std::thread::sleep(std::time::Duration::from_millis(50));
        finished.store(true, Ordering::SeqCst);
        drop(underway);
        assert!(
            waiter.join().expect("the waiter ends"),
            "woke before the end"
        );
        // Nothing under way: no wait, and the work may begin again.
        ahead.wait();
        assert!(ahead.begin().is_some());
    }

    #[test]
    fn work_that_panics_still_ends() {
        let ahead = Arc::new(Ahead::default());
        let a = ahead.clone();
        let failed = std::thread::spawn(move || {
            let _underway = a.begin();
            panic!("the work failed");
        })
        .join();
        assert!(failed.is_err());
        ahead.wait();
        assert!(ahead.begin().is_some());
    }
}
