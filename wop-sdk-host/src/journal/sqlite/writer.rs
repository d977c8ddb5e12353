//! The writer: it owns the connection and runs a batch of queued commands in one transaction
//! (group commit), one savepoint per command. Which thread runs it is `combine.rs`'s business.
//!
//! A command is a read, a durable write or a deferred write ([`Durability`]). A durable write is
//! answered after the commit that holds it. A deferred write is answered as soon as it ran: its
//! transaction stays open, and the commit of the next durable write (from any caller) makes it
//! durable with that write; when none comes within the flush window, the thread commits it on
//! its own. So a call's outcome rides on the next call's identity, or on the node's completion,
//! instead of costing a commit (and an fsync) of its own. Reads run on the same connection and
//! see deferred writes at once.

use crate::journal::JournalError;
use rusqlite::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use tokio::sync::oneshot;

use super::errors::sql;

/// The most commands one transaction takes.
pub(super) const MAX_BATCH: usize = 512;

/// When a command's effect is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Durability {
    /// A read: answered when it ran.
    Read,
    /// A write answered once committed (an fsync of the WAL).
    Durable,
    /// A write answered once it ran; committed with the next durable write, or at the latest
    /// when the flush window ends. A crash before that loses it as if it had not been made.
    Deferred,
}

/// A command for the writer, type-erased.
pub(super) trait Task: Send {
    fn durability(&self) -> Durability;
    /// The command writes with one statement at most (SQLite undoes a failing statement itself):
    /// it needs no savepoint of its own.
    fn one_write(&self) -> bool;
    /// Runs the command; true when it succeeded.
    fn exec(&mut self, conn: &Connection) -> bool;
    /// Answers the caller: the command's own result, or `failure` when its batch was lost.
    fn answer(self: Box<Self>, failure: Option<JournalError>);
}

pub(super) struct Job<T, F> {
    pub(super) durability: Durability,
    pub(super) one_write: bool,
    pub(super) work: Option<F>,
    pub(super) result: Option<Result<T, JournalError>>,
    pub(super) reply: oneshot::Sender<Result<T, JournalError>>,
}

impl<T, F> Task for Job<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, JournalError> + Send,
{
    fn durability(&self) -> Durability {
        self.durability
    }

    fn one_write(&self) -> bool {
        self.one_write
    }

    fn exec(&mut self, conn: &Connection) -> bool {
        let result = match self.work.take() {
            Some(work) => work(conn),
            None => Err(JournalError::Io("a journal command ran twice".into())),
        };
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn answer(self: Box<Self>, failure: Option<JournalError>) {
        let result = match (self.result, failure) {
            (Some(Err(e)), _) => Err(e),
            (_, Some(f)) => Err(f),
            (Some(ok), None) => ok,
            (None, None) => Err(JournalError::Io("a journal command did not run".into())),
        };
        let _ = self.reply.send(result);
    }
}

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
}

impl Shared {
    pub(super) fn new(window: Duration) -> Self {
        let shared = Self {
            window_ns: AtomicU64::new(0),
            commits: AtomicU64::new(0),
            syncs: AtomicU64::new(0),
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
}

/// The writer's state: the connection, the WAL it makes durable, and the transaction left open
/// by deferred writes.
pub(super) struct Writer {
    conn: Connection,
    shared: std::sync::Arc<Shared>,
    wal: WalSync,
    /// When the open transaction began, and how many deferred writes it holds.
    open: Option<(Instant, u64)>,
}

/// The WAL file, made durable by the journal after each commit.
///
/// The connection runs with `synchronous = NORMAL`: SQLite writes a commit's frames into the WAL
/// and syncs nothing at the commit (it still syncs the WAL's header at a restart, and the WAL and
/// the database around each checkpoint). The journal then calls `fdatasync` on the WAL itself,
/// before anyone is told the commit is durable. That is what `synchronous = FULL` does, with two
/// differences: the bundled SQLite calls `fsync`, which also writes the file's changed mtime to
/// the file system's journal (BENCHMARKS.md §12: 0.8x the rate of `fdatasync` here), and
/// another connection can read the commit a moment before it is on the disk (a machine crash in
/// that moment loses it for both; a process crash loses nothing, the page cache has it).
///
/// The file is opened after the first commit (SQLite has created it by then) and kept: SQLite
/// deletes the WAL only when its last connection closes, and the writer's connection stays open,
/// so the handle names the live WAL as long as the writer lives (a checkpoint that truncates or
/// restarts it writes the same file).
struct WalSync {
    path: std::path::PathBuf,
    file: Option<std::fs::File>,
}

impl WalSync {
    fn sync(&mut self) -> Result<(), JournalError> {
        let failed = |e: std::io::Error| {
            JournalError::Io(format!(
                "the journal could not make its commit durable: fdatasync of {}: {e}",
                self.path.display()
            ))
        };
        let file = match &mut self.file {
            Some(file) => file,
            None => self.file.insert(
                std::fs::OpenOptions::new()
                    .write(true)
                    .open(&self.path)
                    .map_err(failed)?,
            ),
        };
        file.sync_data().map_err(failed)
    }
}

impl Writer {
    /// `wal`: the WAL file of `conn`'s database (`<path>-wal`).
    pub(super) fn new(
        conn: Connection,
        shared: std::sync::Arc<Shared>,
        wal: std::path::PathBuf,
    ) -> Self {
        Self {
            conn,
            shared,
            wal: WalSync {
                path: wal,
                file: None,
            },
            open: None,
        }
    }

    /// When the transaction left open by deferred writes must be committed, if one is.
    pub(super) fn due(&self) -> Option<Instant> {
        self.open
            .and_then(|(since, _)| since.checked_add(self.shared.window()))
    }

    /// Commits the open transaction when its flush window has ended.
    pub(super) fn commit_if_due(&mut self) {
        if self.due().is_some_and(|due| due <= Instant::now()) {
            let _ = self.commit();
        }
    }

    /// Commits what is open and closes the connection.
    pub(super) fn close(mut self) {
        let _ = self.commit();
        let _ = self.conn.close();
    }

    /// Commits the open transaction, if any, and makes it durable (the WAL's `fdatasync`).
    fn commit(&mut self) -> Option<JournalError> {
        let (_, deferred) = self.open.take()?;
        match execute_cached(&self.conn, "COMMIT") {
            Ok(()) => {
                self.shared.commits.fetch_add(1, Ordering::Relaxed);
                // Committed but perhaps not on the disk: whoever waits for this commit is told
                // so. What it wrote stays readable; a crash may keep it or lose it.
                let synced = self.wal.sync();
                if synced.is_ok() {
                    self.shared.syncs.fetch_add(1, Ordering::Relaxed);
                } else if deferred > 0 {
                    tracing::error!(
                        deferred,
                        "the journal could not make deferred writes durable"
                    );
                }
                synced.err()
            }
            Err(e) => {
                if !self.conn.is_autocommit() {
                    let _ = self.conn.execute_batch("ROLLBACK");
                }
                Self::lose(deferred);
                Some(JournalError::Io(format!(
                    "the journal could not commit: {}",
                    message(&sql(e))
                )))
            }
        }
    }

    /// Logs deferred writes that were answered and then lost because their transaction did not
    /// commit (a storage error): each is as if it had not been made, which the next durable
    /// write's error, or a crash, would also have meant.
    fn lose(deferred: u64) {
        if deferred > 0 {
            tracing::error!(
                deferred,
                "the journal lost deferred writes: their transaction did not commit"
            );
        }
    }

    /// Runs a batch. Reads alone, outside a transaction, run as they are. Otherwise the batch
    /// joins the open transaction (or begins one), one savepoint per command; with a durable
    /// write in it (or no flush window) the transaction commits before anyone of the batch is
    /// answered, else everyone is answered and it stays open.
    pub(super) fn run_batch(&mut self, mut batch: Vec<Box<dyn Task>>) {
        let writes = batch.iter().any(|t| t.durability() != Durability::Read);
        if !writes && self.open.is_none() {
            for mut task in batch {
                task.exec(&self.conn);
                task.answer(None);
            }
            return;
        }
        if self.open.is_none() {
            if let Err(e) = execute_cached(&self.conn, "BEGIN IMMEDIATE") {
                let e = sql(e);
                for mut task in batch {
                    if task.durability() == Durability::Read {
                        task.exec(&self.conn);
                        task.answer(None);
                    } else {
                        task.answer(Some(e.clone()));
                    }
                }
                return;
            }
            self.open = Some((Instant::now(), 0));
        }
        let mut lost: Option<JournalError> = None;
        for task in &mut batch {
            let savepoint = !task.one_write();
            if savepoint && let Err(e) = execute_cached(&self.conn, "SAVEPOINT wop_cmd") {
                lost = Some(sql(e));
                break;
            }
            let ok = task.exec(&self.conn);
            if self.conn.is_autocommit() {
                // SQLite rolled the whole transaction back (full disk, I/O error).
                lost = Some(JournalError::Io(
                    "the journal transaction was rolled back by a storage error".into(),
                ));
                break;
            }
            if !savepoint {
                continue;
            }
            let end = if ok {
                execute_cached(&self.conn, "RELEASE wop_cmd")
            } else {
                self.conn
                    .execute_batch("ROLLBACK TO wop_cmd; RELEASE wop_cmd")
            };
            if let Err(e) = end {
                lost = Some(sql(e));
                break;
            }
        }
        if let Some(e) = lost {
            if !self.conn.is_autocommit() {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            if let Some((_, deferred)) = self.open.take() {
                Self::lose(deferred);
            }
            for task in batch {
                task.answer(Some(e.clone()));
            }
            return;
        }
        let durable = self.shared.window().is_zero()
            || batch.iter().any(|t| t.durability() == Durability::Durable);
        if let Some((_, deferred)) = &mut self.open {
            *deferred += batch
                .iter()
                .filter(|t| t.durability() == Durability::Deferred)
                .count() as u64;
        }
        let failure = if durable { self.commit() } else { None };
        for task in batch {
            task.answer(failure.clone());
        }
    }
}

/// Runs one statement of the writer's own (a transaction's begin, savepoint, release, commit)
/// from the connection's statement cache: it is parsed once, not once per command.
fn execute_cached(conn: &Connection, statement: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(statement)?.execute([]).map(|_| ())
}

pub(super) fn message(e: &JournalError) -> String {
    match e {
        JournalError::Corrupt(m) | JournalError::Io(m) => m.clone(),
        other => other.to_string(),
    }
}
