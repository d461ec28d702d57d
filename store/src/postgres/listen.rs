//! Following commits made by other processes. One connection per database
//! LISTENs on [`CHANNEL`]; each announcement (`id:seq:revision`) moves that
//! tenant's known head, so a long-lived process's reads skip the head
//! query until a commit lands anywhere.
//!
//! A head is known only while the listener is connected. When it loses
//! its connection everything known is dropped and reads query their head
//! again; when it is back, it drops what it knew once more after `LISTEN`
//! took effect, so an announcement missed in between is never a stale
//! read.

use super::pool::{connect, pg_err, shown};
use super::CHANNEL;
use crate::error::Error;
use crate::sqlite::Head;
use postgres::fallible_iterator::FallibleIterator;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

/// How long the listener waits for an announcement before it checks that
/// its connection is alive.
const PING_EVERY: Duration = Duration::from_secs(5);

/// How long that check may take.
const PING_TIMEOUT: Duration = Duration::from_secs(5);

/// The first and the longest wait before connecting again.
const RETRY: (Duration, Duration) = (Duration::from_millis(100), Duration::from_secs(5));

/// Tenants' heads as the database announced them.
#[derive(Default)]
pub(crate) struct Heads {
    /// Whether the listener is connected and listening.
    live: AtomicBool,
    /// Moves whenever what is known is dropped.
    epoch: AtomicU64,
    /// Tenant id → its head (`None`: no revision yet).
    known: Mutex<HashMap<i64, Option<Head>>>,
    /// Announcements received.
    announcements: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// Keeps `head` for `id` unless a newer one is known.
fn keep_newer(known: &mut HashMap<i64, Option<Head>>, id: i64, head: Option<Head>) {
    let older = match (known.get(&id), &head) {
        (None, _) => false,
        (Some(Some(k)), Some(h)) => h.seq <= k.seq,
        (Some(Some(_)), None) => true,
        (Some(None), _) => false,
    };
    if !older {
        known.insert(id, head);
    }
}

impl Heads {
    /// Tenant `id`'s head, when it is known to be current.
    pub(crate) fn known(&self, id: i64) -> Option<Option<Head>> {
        if !self.live.load(Ordering::Acquire) {
            return None;
        }
        lock(&self.known).get(&id).cloned()
    }

    /// The token a head read from the database is learnt with: take it
    /// before the query.
    pub(crate) fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::Acquire)
    }

    /// Records tenant `id`'s head, read by a query (or made by a commit)
    /// that started at `epoch`. Ignored when the listener is not
    /// listening, reconnected since, or knows a newer head.
    pub(crate) fn learn(&self, epoch: u64, id: i64, head: Option<Head>) {
        let mut known = lock(&self.known);
        if self.live.load(Ordering::Acquire) && self.epoch.load(Ordering::Acquire) == epoch {
            keep_newer(&mut known, id, head);
        }
    }

    /// Whether announcements are being received.
    pub(crate) fn listening(&self) -> bool {
        self.live.load(Ordering::Acquire)
    }

    /// Announcements received so far.
    pub(crate) fn announcements(&self) -> u64 {
        self.announcements.load(Ordering::Relaxed)
    }

    /// Takes in one announcement, `id:seq:revision`.
    fn announce(&self, payload: &str) {
        self.announcements.fetch_add(1, Ordering::Relaxed);
        let mut parts = payload.splitn(3, ':');
        let (Some(id), Some(seq), Some(revision)) = (parts.next(), parts.next(), parts.next())
        else {
            return;
        };
        let (Ok(id), Ok(seq)) = (id.parse::<i64>(), seq.parse::<i64>()) else {
            return;
        };
        let head = Head {
            seq,
            revision: revision.to_string(),
        };
        keep_newer(&mut lock(&self.known), id, Some(head));
    }

    /// Drops what is known; `live` says whether announcements arrive from
    /// now on.
    fn reset(&self, live: bool) {
        let mut known = lock(&self.known);
        known.clear();
        self.epoch.fetch_add(1, Ordering::AcqRel);
        self.live.store(live, Ordering::Release);
    }
}

/// The payload announcing that tenant `id` moved to `head`.
pub(crate) fn payload(id: i64, head: &Head) -> String {
    format!("{id}:{}:{}", head.seq, head.revision)
}

/// Starts the listener of `url` on a thread of its own; it runs for the
/// life of the process.
pub(crate) fn start(url: String, heads: Arc<Heads>) {
    let spawned = std::thread::Builder::new()
        .name("okfit-pg-listen".into())
        .spawn(move || follow(&url, &heads));
    if let Err(e) = spawned {
        eprintln!("okfit: cannot follow commits on PostgreSQL ({e}); every read checks its head");
    }
}

/// Listens, reconnecting with a growing wait whenever the connection fails.
fn follow(url: &str, heads: &Heads) {
    let mut wait = RETRY.0;
    let mut lost = false;
    loop {
        let failed = listen(url, heads, &mut || {
            if lost {
                eprintln!(
                    "okfit: following commits on PostgreSQL at {} again",
                    shown(url)
                );
                lost = false;
            }
            wait = RETRY.0;
        });
        heads.reset(false);
        if !lost {
            eprintln!(
                "okfit: stopped following commits on PostgreSQL at {} ({failed}); reads check the head until it is back",
                shown(url)
            );
            lost = true;
        }
        std::thread::sleep(wait);
        wait = (wait * 2).min(RETRY.1);
    }
}

/// One listening session: returns why it ended. `up` runs once `LISTEN`
/// took effect.
fn listen(url: &str, heads: &Heads, up: &mut dyn FnMut()) -> Error {
    let mut client = match connect(url) {
        Ok(c) => c,
        Err(e) => return e,
    };
    if let Err(e) = client.batch_execute(&format!("LISTEN {CHANNEL}")) {
        return pg_err(e);
    }
    heads.reset(true);
    up();
    loop {
        {
            let mut notes = client.notifications();
            let mut waiting = notes.timeout_iter(PING_EVERY);
            loop {
                match waiting.next() {
                    Ok(Some(note)) => heads.announce(note.payload()),
                    Ok(None) => break,
                    Err(e) => return pg_err(e),
                }
            }
        }
        if let Err(e) = client.is_valid(PING_TIMEOUT) {
            return pg_err(e);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn head(seq: i64) -> Head {
        Head {
            seq,
            revision: format!("r{seq}"),
        }
    }

    #[test]
    fn nothing_is_known_unless_listening() {
        let h = Heads::default();
        h.learn(h.epoch(), 1, Some(head(3)));
        assert_eq!(h.known(1), None);
        h.reset(true);
        h.learn(h.epoch(), 1, Some(head(3)));
        assert_eq!(h.known(1), Some(Some(head(3))));
        h.reset(false);
        assert_eq!(h.known(1), None);
    }

    #[test]
    fn a_head_read_before_a_reconnect_is_not_learnt() {
        let h = Heads::default();
        h.reset(true);
        let before = h.epoch();
        h.reset(false);
        h.reset(true);
        h.learn(before, 1, Some(head(2)));
        assert_eq!(h.known(1), None);
    }

    #[test]
    fn announcements_only_move_heads_forward() {
        let h = Heads::default();
        h.reset(true);
        h.learn(h.epoch(), 7, None);
        assert_eq!(h.known(7), Some(None));
        h.announce("7:2:r2");
        h.announce("7:1:r1");
        h.learn(h.epoch(), 7, Some(head(1)));
        h.learn(h.epoch(), 7, None);
        assert_eq!(h.known(7), Some(Some(head(2))));
        h.announce("garbage");
        h.announce("7:x:r9");
        assert_eq!(h.known(7), Some(Some(head(2))));
        assert_eq!(h.announcements(), 4);
        assert_eq!(payload(7, &head(2)), "7:2:r2");
    }
}
