//! The durable journal: one SQLite file (bundled SQLite, WAL, `synchronous=NORMAL` and an
//! `fdatasync` of the WAL after every commit: `settle::WalSync`).
//!
//! One writer owns the connection. Every journal call becomes a command, queued and answered
//! through a oneshot; the caller that finds the writer free runs every queued command, its own
//! and others', in one transaction on its own thread (group commit: one fsync for the batch; see
//! `combine.rs`), each inside its own savepoint (unless it writes with one statement) so that a
//! failing command fails alone. A durable write therefore blocks the caller's thread for its
//! fsync, as a file write would; the fsync is made after the writer is let go, and the durable
//! writes that arrive meanwhile wait for it and commit together after it. When the commit itself
//! fails, every command waiting for it fails with [`JournalError::Io`] and nothing of it is kept.
//!
//! **What is durable when.** A write something outside the process may act on is answered only
//! after its commit: a call's identity and each announced provider request (before the request
//! is dispatched), a lease and its heartbeat (another host reads them), and a node's end
//! (`node.completed` / `node.failed`: the run's result leaves the process after it). The other
//! writes are *deferred*: a call's outcome, its charge and events ([`Journal::finish`]), a run's
//! record ([`Journal::begin_run`]) and its other events are answered as soon as they ran, and
//! become durable with the next durable write, from this caller or any other, in the same
//! commit, or on their own when the flush window ends ([`DEFAULT_FLUSH_WINDOW`],
//! [`SqliteJournal::set_flush_window`]). So a call costs one commit, its identity's, which also
//! carries the previous call's outcome, and a node's last outcome rides on its end.
//!
//! A crash before that commit loses the deferred writes as if they had not been made: the call's
//! identity stands without an outcome, and redelivery reports the call's outcome as unknown and
//! charges nothing for it (exactly as for a crash between the provider's reply and the terminal
//! write), never a second dispatch. Nothing another party saw is lost, since every result that
//! leaves the process does so after a durable write that carries what came before it.
//!
//! Opening inspects an existing file before SQLite may write to it: the header is checked by hand
//! (magic, page size, declared length against the file length, schema version), then a read-only
//! connection checks the schema and runs `PRAGMA quick_check`. A damaged, foreign or newer file is
//! refused with [`JournalError::Corrupt`] or [`JournalError::NewerSchema`] and left as it was.
//!
//! The parts: `open` (inspection, schema, migration), `writer` (the transaction and its group
//! commit), `combine` (which thread runs the writer, and the flush window's thread), `rows` (the SQL of each table), and this file (the journal over them).

mod combine;
mod errors;
mod open;
mod reads;
mod rows;
mod schema;
mod settle;
mod store;
mod task;
#[cfg(test)]
mod tests;
mod writer;

#[cfg(test)]
use reads::UNKNOWN_TIME;

use crate::journal::{JournalError, SCHEMA_VERSION};
use combine::Core;
use errors::{BUSY_TIMEOUT, opening, sql, stopped};
use open::{file_len, inspect, read_only_connection};
use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags};
use schema::{check_tables, migrate};
use settle::Shared;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;
use task::{Durability, Job};
use tokio::sync::oneshot;
use wop_sdk::host::BoxFuture;
use writer::Writer;

/// How long deferred writes wait for a durable write to carry them before the journal commits
/// them on their own: 10 ms.
pub const DEFAULT_FLUSH_WINDOW: Duration = Duration::from_millis(10);

/// Prepared statements the connection keeps: more than the journal has.
const STATEMENTS_KEPT: usize = 64;

/// A journal in one SQLite file.
pub struct SqliteJournal {
    path: PathBuf,
    read_only: bool,
    core: Arc<Core>,
    /// The flush window's thread.
    flusher: Option<JoinHandle<()>>,
}

impl fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("path", &self.path)
            .field("read_only", &self.read_only)
            .field("commits", &self.commits())
            .finish()
    }
}

impl Drop for SqliteJournal {
    fn drop(&mut self) {
        // The flush thread stops; what is open is committed and the connection closed
        // (checkpointing the WAL).
        self.core.stop();
        if let Some(handle) = self.flusher.take() {
            let _ = handle.join();
        }
        self.core.close();
    }
}

impl SqliteJournal {
    /// Opens the journal at `path`, creating the parent directories and the file when missing and
    /// migrating an older schema. A damaged or foreign file gives [`JournalError::Corrupt`], a newer
    /// one [`JournalError::NewerSchema`]; either is left untouched.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|e| {
                JournalError::Io(format!("cannot create {}: {e}", parent.display()))
            })?;
        }
        if file_len(&path)?.is_some_and(|len| len > 0) {
            inspect(&path)?;
        }
        let flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let mut conn = Connection::open_with_flags(&path, flags)
            .map_err(|e| open::unwritable(&path, e).unwrap_or_else(|e| opening(&path, e)))?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
        let mode: String = conn
            .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
            .map_err(|e| open::unwritable(&path, e).unwrap_or_else(|e| opening(&path, e)))?;
        if !mode.eq_ignore_ascii_case("wal") {
            return Err(JournalError::Io(format!(
                "{}: cannot switch to WAL mode (journal_mode is {mode})",
                path.display()
            )));
        }
        // Foreign keys are turned on by `migrate`, once the schema is current.
        // The migration's commits are synced by SQLite itself; the writer's are synced by the
        // writer (below).
        conn.execute_batch("PRAGMA synchronous = FULL;")
            .map_err(sql)?;
        // Every statement the journal runs stays prepared (rusqlite keeps 16 by default, fewer
        // than the journal has: a call would prepare some of its statements again each time).
        conn.set_prepared_statement_cache_capacity(STATEMENTS_KEPT);
        // One plan per statement, whatever its bound values: without it SQLite marks a statement
        // that names a parameter twice (a run's first and last event) to be prepared again each
        // time the parameter is bound, about 79 000 instructions a run of it (BENCHMARKS.md §12g).
        conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true)
            .map_err(sql)?;
        migrate(&mut conn)?;
        check_tables(&conn)?;
        // No sync at a commit: the writer calls `fdatasync` on the WAL after each one (see
        // `settle::WalSync`), which is what `FULL` does with `fsync`.
        conn.execute_batch("PRAGMA synchronous = NORMAL;")
            .map_err(sql)?;
        Self::spawn(path, false, conn)
    }

    /// Opens an existing journal for reading only (`SQLITE_OPEN_READ_ONLY` and `query_only`):
    /// every write answers [`JournalError::Io`]. The file is never migrated or modified.
    ///
    /// A journal in a folder this user cannot write opens too: when SQLite cannot create the
    /// WAL's shared-memory side file (`-shm`) next to a cleanly closed journal (no `-wal`, `-shm`
    /// or `-journal` beside it), the file alone is the whole database and it is opened
    /// `immutable`, creating nothing. A journal whose WAL was left behind (its writer crashed or
    /// is still running) in such a folder cannot be read consistently without that index: the
    /// error then says that the folder is read-only, never that the journal is damaged.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        if file_len(&path)?.is_none_or(|len| len == 0) {
            return Err(JournalError::Io(format!(
                "{}: no journal to open read-only",
                path.display()
            )));
        }
        let version = inspect(&path)?;
        if version < SCHEMA_VERSION {
            return Err(JournalError::Io(format!(
                "{}: schema version {version} needs a migration, which a read-only open cannot do",
                path.display()
            )));
        }
        let conn = read_only_connection(&path)?;
        conn.execute_batch("PRAGMA query_only = ON;").map_err(sql)?;
        check_tables(&conn).map_err(|e| open::prefix(&path, e))?;
        Self::spawn(path, true, conn)
    }

    fn spawn(path: PathBuf, read_only: bool, conn: Connection) -> Result<Self, JournalError> {
        let wal = open::side_file(&path, "-wal");
        let shared = Arc::new(Shared::new(DEFAULT_FLUSH_WINDOW, wal));
        let core = Arc::new(Core::new(Writer::new(conn, Arc::clone(&shared)), shared));
        let thread_core = Arc::clone(&core);
        let flusher = std::thread::Builder::new()
            .name("wop-journal".into())
            .spawn(move || thread_core.flush_loop())
            .map_err(|e| {
                JournalError::Io(format!("cannot start the journal's flush thread: {e}"))
            })?;
        Ok(Self {
            path,
            read_only,
            core,
            flusher: Some(flusher),
        })
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Transactions committed so far (each batch of writes is one, with one fsync of the WAL):
    /// how well writes are grouped under load.
    pub fn commits(&self) -> u64 {
        self.core.shared.commits.load(Ordering::Relaxed)
    }

    /// How long deferred writes (a call's outcome, a run's record and its other events) may wait
    /// for a durable write to carry them before they are committed on their own
    /// ([`DEFAULT_FLUSH_WINDOW`] unless set). `Duration::ZERO` commits every write on its own, as
    /// a journal without deferred writes would: one more commit per call.
    pub fn set_flush_window(&self, window: Duration) {
        self.core.shared.set_window(window);
        self.core.window_changed();
    }

    /// Queues `work` and runs the queue on this thread unless another holds the writer
    /// (`combine.rs`); the future answers once it ran (and, for a durable write, once its batch
    /// is committed).
    fn submit<T, F>(
        &self,
        durability: Durability,
        work: F,
    ) -> BoxFuture<'static, Result<T, JournalError>>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, JournalError> + Send + 'static,
    {
        self.submit_job(durability, false, work)
    }

    /// [`SqliteJournal::submit`] for a command that writes with one statement at most: it runs
    /// without a savepoint of its own (a failing statement is undone by SQLite alone).
    fn submit_one_write<T, F>(
        &self,
        durability: Durability,
        work: F,
    ) -> BoxFuture<'static, Result<T, JournalError>>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, JournalError> + Send + 'static,
    {
        self.submit_job(durability, true, work)
    }

    /// [`SqliteJournal::submit`], or [`SqliteJournal::submit_one_write`] when `one_write`.
    fn submit_job<T, F>(
        &self,
        durability: Durability,
        one_write: bool,
        work: F,
    ) -> BoxFuture<'static, Result<T, JournalError>>
    where
        T: Send + 'static,
        F: FnOnce(&Connection) -> Result<T, JournalError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job = Box::new(Job {
            durability,
            one_write,
            work: Some(work),
            result: None,
            reply,
        });
        self.core.submit(job);
        Box::pin(async move { answer.await.unwrap_or_else(|_| Err(stopped())) })
    }
}
