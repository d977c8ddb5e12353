//! When the log's writes reach the disk: one `fdatasync` for every durable write made while the
//! previous one ran (group commit), and the flush window's thread for deferred writes.
//!
//! A durable write is answered once a sync that began after it returned. A caller alone (no
//! other durable write in flight, no sync under way) syncs on its own thread, as a file write
//! would: a hand-off would cost it two thread wake-ups. Under load the journal's thread syncs:
//! a durable write then waits for its answer without holding a thread, and the durable writes
//! that arrive during a sync are made durable together by the next one, which begins as soon as
//! the last ends. The disk then syncs back to back while the runtime's workers run the callers.

use crate::answers::ready;
use crate::journal::JournalError;
use std::fs::File;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard, OnceLock, PoisonError};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;
use wop_sdk::host::BoxFuture;

type Answer = oneshot::Sender<Result<(), JournalError>>;

#[derive(Default)]
struct State {
    /// Where the last write ended.
    written: u64,
    /// How far the file is on the disk.
    durable: u64,
    /// A sync is under way.
    syncing: bool,
    /// Durable writes waiting for a sync: where each ended, and its answer.
    waiting: Vec<(u64, Answer)>,
    /// The flush thread waits for a deferred write (rather than for its window to end).
    flusher_idle: bool,
    /// The journal is closing.
    stop: bool,
}

/// The log's syncs, shared by its callers and its flush thread.
pub(super) struct Syncs {
    state: Mutex<State>,
    flusher: Condvar,
    window_ns: AtomicU64,
    /// `fdatasync`s made.
    count: AtomicU64,
    /// How far the file is on the disk (as `State::durable`, read without the lock).
    durable: AtomicU64,
    /// Durable writes between their write and their answer.
    in_flight: AtomicU64,
    /// A sync failed: the file's state on the disk is unknown from then on, and nothing more is
    /// written (set under the state's lock, read without it on every write).
    failed: OnceLock<JournalError>,
}

fn stopped() -> JournalError {
    JournalError::Io("the journal closed before the write was durable".into())
}

impl Syncs {
    /// The syncs of a file durable up to `durable`.
    pub(super) fn new(durable: u64, window: Duration) -> Self {
        let syncs = Self {
            state: Mutex::new(State {
                written: durable,
                durable,
                ..State::default()
            }),
            flusher: Condvar::new(),
            window_ns: AtomicU64::new(0),
            count: AtomicU64::new(0),
            durable: AtomicU64::new(durable),
            in_flight: AtomicU64::new(0),
            failed: OnceLock::new(),
        };
        syncs.set_window(window);
        syncs
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(super) fn set_window(&self, window: Duration) {
        let ns = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        self.window_ns.store(ns, Ordering::Relaxed);
        self.flusher.notify_all();
    }

    pub(super) fn window(&self) -> Duration {
        Duration::from_nanos(self.window_ns.load(Ordering::Relaxed))
    }

    /// `fdatasync`s made so far.
    pub(super) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// How far the file is known to be on the disk.
    pub(super) fn durable(&self) -> u64 {
        self.durable.load(Ordering::Acquire)
    }

    /// The failure of an earlier sync, if one failed: nothing more is written then.
    pub(super) fn failed(&self) -> Option<JournalError> {
        self.failed.get().cloned()
    }

    /// A write ended at `end` (writes are made in order, under the log's lock).
    pub(super) fn wrote(&self, end: u64) {
        let mut s = self.lock();
        s.written = s.written.max(end);
        if s.flusher_idle && s.written > s.durable {
            s.flusher_idle = false;
            self.flusher.notify_all();
        }
    }

    /// Answers once everything up to `end` is on the disk.
    pub(super) fn settle(
        &self,
        file: &File,
        end: u64,
    ) -> BoxFuture<'static, Result<(), JournalError>> {
        let mut s = self.lock();
        if let Some(e) = self.failed.get() {
            return ready(Err(e.clone()));
        }
        if s.durable >= end {
            return ready(Ok(()));
        }
        let others = self.in_flight.fetch_add(1, Ordering::SeqCst) > 0;
        if s.syncing || others {
            // A sync under way: the next one carries this write. Others in flight: the
            // journal's thread syncs for them all.
            let (tx, rx) = oneshot::channel();
            s.waiting.push((end, tx));
            if !s.syncing {
                self.flusher.notify_all();
            }
            return Box::pin(async move { rx.await.unwrap_or_else(|_| Err(stopped())) });
        }
        s.syncing = true;
        drop(s);
        let result = self.lead(file, true);
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        ready(result)
    }

    /// Syncs until no durable write waits (the caller set `syncing`); clears `syncing`. A
    /// caller (`caller`) syncs once, for its write and those before it, and leaves the writes
    /// that arrived meanwhile to the journal's thread rather than hold its own.
    fn lead(&self, file: &File, caller: bool) -> Result<(), JournalError> {
        loop {
            let target = self.lock().written;
            let synced = file.sync_data();
            let mut s = self.lock();
            match synced {
                Err(e) => {
                    let e = JournalError::Io(format!(
                        "the journal could not make its writes durable (fdatasync): {e}; \
                         nothing more is written to it: open it again"
                    ));
                    tracing::error!(error = %e, "a sync of the log journal failed");
                    let _ = self.failed.set(e.clone());
                    s.syncing = false;
                    for (_, answer) in s.waiting.drain(..) {
                        self.in_flight.fetch_sub(1, Ordering::SeqCst);
                        let _ = answer.send(Err(e.clone()));
                    }
                    return Err(e);
                }
                Ok(()) => {
                    self.count.fetch_add(1, Ordering::Relaxed);
                    s.durable = s.durable.max(target);
                    self.durable.store(s.durable, Ordering::Release);
                    let durable = s.durable;
                    let mut i = 0;
                    while i < s.waiting.len() {
                        if s.waiting[i].0 <= durable {
                            let (_, answer) = s.waiting.swap_remove(i);
                            self.in_flight.fetch_sub(1, Ordering::SeqCst);
                            let _ = answer.send(Ok(()));
                        } else {
                            i += 1;
                        }
                    }
                    if s.waiting.is_empty() || caller {
                        s.syncing = false;
                        let deferred = s.flusher_idle && s.written > s.durable;
                        if !s.waiting.is_empty() || deferred {
                            // Durable writes that arrived during the sync, or deferred ones:
                            // the journal's thread's.
                            s.flusher_idle = false;
                            self.flusher.notify_all();
                        }
                        return Ok(());
                    }
                }
            }
        }
    }

    /// The journal's thread: syncs for the durable writes that wait (under load), and syncs
    /// deferred writes a window after it found them, unless a durable write's sync carried them
    /// first; syncs what is left when the journal closes.
    pub(super) fn flush_loop(&self, file: &File) {
        let mut s = self.lock();
        // The writes not durable when the window began (`mark`), and when it ends.
        let mut window: Option<(u64, Instant)> = None;
        while !s.stop {
            if !s.syncing && self.failed.get().is_none() {
                let now = Instant::now();
                let window_due =
                    window.is_some_and(|(mark, deadline)| now >= deadline && s.durable < mark);
                if !s.waiting.is_empty() || window_due {
                    s.syncing = true;
                    drop(s);
                    let _ = self.lead(file, false);
                    s = self.lock();
                    continue;
                }
            }
            if let Some((mark, deadline)) = window
                && (s.durable >= mark || Instant::now() >= deadline)
            {
                window = None;
            }
            if window.is_none() && s.written > s.durable && self.failed.get().is_none() {
                window = Some((s.written, Instant::now() + self.window()));
            }
            // Without a window, a deferred write wakes this thread (`wrote`).
            s.flusher_idle = window.is_none();
            s = match window {
                None => self.flusher.wait(s).unwrap_or_else(PoisonError::into_inner),
                Some((_, deadline)) => {
                    let left = deadline.saturating_duration_since(Instant::now());
                    self.flusher
                        .wait_timeout(s, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0
                }
            };
            s.flusher_idle = false;
        }
        while s.syncing {
            drop(s);
            std::thread::yield_now();
            s = self.lock();
        }
        if (s.written > s.durable || !s.waiting.is_empty()) && self.failed.get().is_none() {
            s.syncing = true;
            drop(s);
            let _ = self.lead(file, false);
        }
    }

    /// Stops the flush thread (which syncs what is left).
    pub(super) fn stop(&self) {
        self.lock().stop = true;
        self.flusher.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp_file(name: &str) -> (std::path::PathBuf, File) {
        let path = std::env::temp_dir().join(format!("wop-syncs-{}-{name}", std::process::id()));
        let file = File::create(&path).expect("file");
        (path, file)
    }

    #[tokio::test]
    async fn a_caller_alone_syncs_on_its_own_thread_and_is_answered_at_once() {
        let (path, file) = temp_file("alone");
        let syncs = Syncs::new(0, Duration::from_secs(3600));
        syncs.wrote(100);
        let answer = syncs.settle(&file, 100);
        // The sync was made before `settle` returned.
        assert_eq!(syncs.count(), 1);
        assert_eq!(syncs.durable(), 100);
        assert_eq!(answer.await, Ok(()));
        // Already durable: no sync.
        assert_eq!(syncs.settle(&file, 50).await, Ok(()));
        assert_eq!(syncs.count(), 1);
        let _ = std::fs::remove_file(path);
    }

    #[tokio::test]
    async fn durable_writes_made_during_a_sync_share_the_next_one() {
        let (path, file) = temp_file("grouped");
        let syncs = Syncs::new(0, Duration::from_secs(3600));
        // A sync under way (its leader is elsewhere).
        syncs.lock().syncing = true;
        let mut answers = Vec::new();
        for end in [100, 200, 300] {
            syncs.wrote(end);
            answers.push(syncs.settle(&file, end));
        }
        assert_eq!(syncs.count(), 0, "nobody answered before a sync");
        assert_eq!(syncs.lock().waiting.len(), 3);
        // The leader's next sync carries all three.
        assert_eq!(syncs.lead(&file, false), Ok(()));
        assert_eq!(syncs.count(), 1, "one sync for three durable writes");
        for answer in answers {
            assert_eq!(answer.await, Ok(()));
        }
        assert!(!syncs.lock().syncing);
        let _ = std::fs::remove_file(path);
    }
}
