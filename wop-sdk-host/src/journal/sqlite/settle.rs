//! What the writer shares with the journal and its callers ([`Shared`]: the flush window, the
//! counts, the WAL and the syncs under way), and the answer of a committed batch after the WAL's
//! `fdatasync` ([`Settle`]), made without the writer.

use super::task::Task;
use crate::journal::JournalError;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What the journal and its thread share: the flush window the journal sets and the commits the
/// thread counts.
#[derive(Debug)]
pub(super) struct Shared {
    /// The flush window, in nanoseconds.
    window_ns: AtomicU64,
    /// Transactions committed.
    pub(super) commits: AtomicU64,
    /// `fdatasync`s of the WAL made after a commit: one per commit.
    pub(super) syncs: AtomicU64,
    /// The WAL, synced after each commit.
    wal: WalSync,
    /// Commits whose sync is under way. While one is, durable writes wait in the open
    /// transaction (`Writer::waiting`) for the next commit instead of committing alone.
    in_flight: AtomicU64,
    /// Durable writes that ran and wait for a commit (`Writer::waiting`'s length).
    waiting: AtomicU64,
}

impl Shared {
    /// `wal`: the WAL file of the writer's database (`<path>-wal`).
    pub(super) fn new(window: Duration, wal: std::path::PathBuf) -> Self {
        let shared = Self {
            window_ns: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
            wal: WalSync {
                path: wal,
                file: Mutex::new(None),
            },
            in_flight: AtomicU64::new(0),
            waiting: AtomicU64::new(0),
        };
        shared.set_window(window);
        shared
    }

    pub(super) fn set_window(&self, window: Duration) {
        let ns = u64::try_from(window.as_nanos()).unwrap_or(u64::MAX);
        self.window_ns.store(ns, Ordering::Relaxed);
    }

    pub(super) fn window(&self) -> Duration {
        Duration::from_nanos(self.window_ns.load(Ordering::Relaxed))
    }

    /// Makes every commit made so far durable: an `fdatasync` of the WAL.
    fn sync(&self) -> Result<(), JournalError> {
        self.wal.sync()?;
        self.syncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A commit's sync is under way: durable writes wait for the next commit.
    pub(super) fn sync_under_way(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) > 0
    }

    /// How many durable writes wait in the open transaction for its commit.
    pub(super) fn set_waiting(&self, n: usize) {
        self.waiting.store(n as u64, Ordering::SeqCst);
    }

    /// Durable writes wait for a commit, and no sync is under way: whoever can take the writer
    /// should commit them.
    pub(super) fn commit_due(&self) -> bool {
        self.waiting.load(Ordering::SeqCst) > 0 && !self.sync_under_way()
    }
}

/// A batch that ran, waiting to be answered: after an `fdatasync` of the WAL when it committed.
/// The sync is made without the writer (`combine.rs`), so that the next batch can run on it
/// meanwhile.
#[must_use = "a batch's callers are answered by `Settle::finish`"]
pub(super) struct Settle {
    tasks: Vec<Box<dyn Task>>,
    /// The batch's failure (its commit's, say): everyone is answered with it.
    failure: Option<JournalError>,
    /// Deferred writes the commit carried (for the log, when the sync fails).
    deferred: u64,
    /// The batch committed: its callers wait for the sync.
    committed: bool,
}

impl Settle {
    /// The batch of `tasks` after its commit (`failure`: the commit's, if it failed); `deferred`:
    /// the deferred writes the commit carried. A commit that wrote something is counted as a
    /// sync under way before the writer is let go, so that a holder after this one sees it.
    pub(super) fn after_commit(
        shared: &Shared,
        tasks: Vec<Box<dyn Task>>,
        deferred: u64,
        failure: Option<JournalError>,
    ) -> Self {
        let committed = failure.is_none() && deferred + tasks.len() as u64 > 0;
        if committed {
            shared.in_flight.fetch_add(1, Ordering::SeqCst);
        }
        Self {
            tasks,
            failure,
            deferred,
            committed,
        }
    }

    /// How many callers wait for this batch's answer.
    pub(super) fn callers(&self) -> usize {
        self.tasks.len()
    }

    /// A batch whose transaction was lost: everyone is answered with `e`.
    pub(super) fn lost(tasks: Vec<Box<dyn Task>>, e: JournalError) -> Self {
        Self {
            tasks,
            failure: Some(e),
            deferred: 0,
            committed: false,
        }
    }

    /// Syncs the WAL when the batch committed, then answers everyone of it.
    pub(super) fn finish(self, shared: &Shared) {
        let failure = match self.failure {
            Some(f) => Some(f),
            None if self.committed => {
                let failure = sync_or_log(shared, self.deferred);
                shared.in_flight.fetch_sub(1, Ordering::SeqCst);
                failure
            }
            None => None,
        };
        for task in self.tasks {
            task.answer(failure.clone());
        }
    }
}

/// [`Shared::sync`]; a failure is logged when it leaves deferred writes not durable (their
/// callers were answered already), and returned.
fn sync_or_log(shared: &Shared, deferred: u64) -> Option<JournalError> {
    let failure = shared.sync().err();
    if failure.is_some() && deferred > 0 {
        tracing::error!(
            deferred,
            "the journal could not make deferred writes durable"
        );
    }
    failure
}

/// The WAL file, made durable by the journal after each commit.
///
/// The connection runs with `synchronous = NORMAL`: SQLite writes a commit's frames into the WAL
/// and syncs nothing at the commit (it still syncs the WAL's header at a restart, and the WAL and
/// the database around each checkpoint). The journal then calls `fdatasync` on the WAL itself,
/// before anyone is told the commit is durable. That is what `synchronous = FULL` does, with two
/// differences: the bundled SQLite calls `fsync`, which also writes the file's changed mtime to
/// the file system's journal (on this project's ext4 machine the two cost about the same,
/// BENCHMARKS.md §12g; on others the metadata write is dearer), and the sync can be made after
/// the writer is let go, so another connection (or this one's next batch) can read the commit a
/// moment before it is on the disk (a machine crash in that moment loses it for all of them; a
/// process crash loses nothing, the page cache has it).
///
/// The file is opened after the first commit (SQLite has created it by then) and kept: SQLite
/// deletes the WAL only when its last connection closes, and the writer's connection stays open,
/// so the handle names the live WAL as long as the writer lives (a checkpoint that truncates or
/// restarts it writes the same file). Two threads may sync at once (the batch before and the
/// batch after, `combine.rs`): each `fdatasync` covers every commit made before it began.
#[derive(Debug)]
struct WalSync {
    path: std::path::PathBuf,
    file: Mutex<Option<Arc<std::fs::File>>>,
}

impl WalSync {
    fn sync(&self) -> Result<(), JournalError> {
        let failed = |e: std::io::Error| {
            JournalError::Io(format!(
                "the journal could not make its commit durable: fdatasync of {}: {e}",
                self.path.display()
            ))
        };
        let file = {
            let mut slot = self.file.lock().unwrap_or_else(PoisonError::into_inner);
            match &*slot {
                Some(file) => Arc::clone(file),
                None => {
                    let file = Arc::new(
                        std::fs::OpenOptions::new()
                            .write(true)
                            .open(&self.path)
                            .map_err(failed)?,
                    );
                    *slot = Some(Arc::clone(&file));
                    file
                }
            }
        };
        file.sync_data().map_err(failed)
    }
}
