//! Work done ahead of requests (parsing the bundle while a client is still
//! shaking hands) on a thread pool of its own, whose threads run at the
//! lowest scheduling priority where the platform allows it per thread.
//!
//! Such work used to share rayon's global pool with the requests: a
//! request arriving meanwhile queued its parallel work behind the warm-up's
//! and waited for both. On a pool of its own, at low priority, the warm-up
//! yields the cores to a request instead, and still has them all when
//! nothing else runs.

use std::sync::OnceLock;

static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();

/// Runs `f`, and the parallel work it starts, on the background pool (as
/// many threads as the global pool). When the pool cannot start, `f` runs
/// where it is called.
pub fn run<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let pool = POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .num_threads(rayon::current_num_threads())
            .thread_name(|i| format!("okfit-background-{i}"))
            .start_handler(|_| lower_priority())
            .build()
            .ok()
    });
    match pool {
        Some(p) => p.install(f),
        None => f(),
    }
}

/// Lowers the calling thread's scheduling priority to the least (nice 19).
/// Linux keeps a priority per thread; elsewhere `setpriority` would lower
/// the whole process, so the threads keep theirs.
fn lower_priority() {
    #[cfg(target_os = "linux")]
    {
        let tid = rustix::thread::gettid();
        // Best effort: a thread that cannot be lowered still does the work.
        let _ = rustix::process::setpriority_process(Some(tid), 19);
    }
}

/// The calling thread's nice value (Linux), for tests.
#[cfg(all(test, target_os = "linux"))]
fn current_nice() -> i32 {
    rustix::process::getpriority_process(Some(rustix::thread::gettid())).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;

    #[test]
    fn work_runs_on_the_background_pool_at_low_priority() {
        let names: Vec<String> = run(|| {
            (0..64)
                .into_par_iter()
                .map(|_| std::thread::current().name().unwrap_or("").to_string())
                .collect()
        });
        assert!(
            names.iter().all(|n| n.starts_with("okfit-background-")),
            "{names:?}"
        );
        #[cfg(target_os = "linux")]
        {
            let before = current_nice();
            assert_eq!(run(current_nice), 19);
            // The caller's own priority is untouched.
            assert_eq!(current_nice(), before);
        }
    }
}
