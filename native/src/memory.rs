//! How the long-lived `okfit serve` hands memory back to the system.

/// `mi_option_purge_delay` in mimalloc v2's `mi_option_e` (`mimalloc.h`):
/// how many milliseconds freed pages wait before they go back to the
/// system (10 by default). libmimalloc-sys names no constant for it.
const PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

/// Makes mimalloc give freed pages back to the system at once rather than
/// after its default delay. A daemon holding a large tenant frees and
/// reallocates postings lists, rows and buffers on many threads as commits
/// land and searches run; pages left for a later purge add up to about
/// 60 MB of its peak RSS at 100,000 concepts on PostgreSQL. One-shot
/// commands keep the default (they exit soon, and purging costs a system
/// call per freed run of pages). An operator's own `MIMALLOC_PURGE_DELAY`
/// (mimalloc reads it at start) is left as they set it.
pub fn return_freed_memory_promptly() {
    if std::env::var_os("MIMALLOC_PURGE_DELAY").is_some() {
        return;
    }
    // SAFETY: sets one of mimalloc's options, an atomic store; any thread,
    // any time.
    unsafe { libmimalloc_sys::mi_option_set(PURGE_DELAY, 0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_option_set_is_the_purge_delay() {
        // SAFETY: reads and sets mimalloc options (atomic loads and stores).
        let default = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        return_freed_memory_promptly();
        let set = unsafe { libmimalloc_sys::mi_option_get(PURGE_DELAY) };
        assert_eq!(default, 10, "mimalloc's purge delay defaults to 10 ms");
        assert_eq!(set, 0);
    }
}
