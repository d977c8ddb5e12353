//! The writer: it owns the connection and runs a batch of queued commands in one transaction
//! (group commit), one savepoint per command that writes with more than one statement. Which
//! thread runs it, and syncs its commits, is `combine.rs`'s business.
//!
//! A command is a read, a durable write or a deferred write ([`Durability`]). A durable write is
//! answered after the commit that holds it is synced ([`Settle`]); while another commit's sync is
//! under way it waits in the open transaction for the next commit. A deferred write is answered
//! as soon as it ran: its transaction stays open, and the commit of the next durable write (from
//! any caller) makes it durable with that write; when none comes within the flush window, the
//! journal's thread commits it on its own. So a call's outcome rides on the next call's identity, or on the node's completion,
//! instead of costing a commit (and an fsync) of its own. Reads run on the same connection and
//! see deferred writes at once.

use super::errors::sql;
use super::settle::{Settle, Shared};
use super::task::{Durability, Task};
use crate::journal::JournalError;
use rusqlite::Connection;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The most commands one transaction takes.
pub(super) const MAX_BATCH: usize = 512;

/// The writer's state: the connection, and the transaction left open by deferred writes.
pub(super) struct Writer {
    conn: Connection,
    shared: Arc<Shared>,
    /// When the open transaction began, and how many deferred writes it holds.
    open: Option<(Instant, u64)>,
    /// Durable writes that ran in the open transaction and wait for its commit (made when no
    /// sync is under way).
    waiting: Vec<Box<dyn Task>>,
}

impl Writer {
    pub(super) fn new(conn: Connection, shared: Arc<Shared>) -> Self {
        Self {
            conn,
            shared,
            open: None,
            waiting: Vec::new(),
        }
    }

    /// When the transaction left open by deferred writes must be committed, if one is.
    pub(super) fn due(&self) -> Option<Instant> {
        self.open
            .and_then(|(since, _)| since.checked_add(self.shared.window()))
    }

    /// Commits the open transaction when its flush window has ended; returns it to settle (its
    /// sync, and the durable writes waiting in it), if it committed.
    pub(super) fn commit_if_due(&mut self) -> Option<Settle> {
        if self.due().is_none_or(|due| due > Instant::now()) {
            return None;
        }
        Some(self.settle_commit())
    }

    /// Commits the durable writes waiting in the open transaction, unless a sync is under way
    /// (they then wait for the next commit: `combine.rs` makes it when that sync ends).
    pub(super) fn commit_waiting(&mut self) -> Option<Settle> {
        if self.waiting.is_empty() || self.shared.sync_under_way() {
            return None;
        }
        Some(self.settle_commit())
    }

    /// Commits the open transaction; its durable writes are answered once it is synced.
    fn settle_commit(&mut self) -> Settle {
        let deferred = self.open.map_or(0, |(_, n)| n);
        let failure = self.commit();
        let tasks = std::mem::take(&mut self.waiting);
        self.shared.set_waiting(0);
        Settle::after_commit(&self.shared, tasks, deferred, failure)
    }

    /// Commits what is open, makes it durable, answers what waited for it, and closes the
    /// connection.
    pub(super) fn close(mut self) {
        if self.open.is_some() {
            let settle = self.settle_commit();
            settle.finish(&self.shared);
        }
        let _ = self.conn.close();
    }

    /// Commits the open transaction, if any. The commit is durable once the WAL is synced
    /// ([`Settle::finish`]); until then it is readable (by this connection and others) and a
    /// machine crash may lose it.
    fn commit(&mut self) -> Option<JournalError> {
        let (_, deferred) = self.open.take()?;
        match execute_cached(&self.conn, "COMMIT") {
            Ok(()) => {
                self.shared.commits.fetch_add(1, Ordering::Relaxed);
                None
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
    /// joins the open transaction (or begins one), one savepoint per command. Reads, deferred
    /// writes and commands that failed are answered at once; durable writes (every write, with no
    /// flush window) wait in the transaction for its commit, made now unless a sync is under way
    /// ([`Writer::commit_waiting`]), and are answered once it is synced ([`Settle::finish`],
    /// made without the writer).
    pub(super) fn run_batch(&mut self, mut batch: Vec<Box<dyn Task>>) -> Option<Settle> {
        let writes = batch.iter().any(|t| t.durability() != Durability::Read);
        if !writes && self.open.is_none() {
            for mut task in batch {
                task.exec(&self.conn);
                task.answer(None);
            }
            return None;
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
                return None;
            }
            self.open = Some((Instant::now(), 0));
        }
        let mut lost: Option<JournalError> = None;
        let mut ran = Vec::with_capacity(batch.len());
        for task in &mut batch {
            let savepoint = !task.one_write();
            if savepoint && let Err(e) = execute_cached(&self.conn, "SAVEPOINT wop_cmd") {
                lost = Some(sql(e));
                break;
            }
            let ok = task.exec(&self.conn);
            ran.push(ok);
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
            // The transaction is gone, with the durable writes that waited in it.
            if !self.conn.is_autocommit() {
                let _ = self.conn.execute_batch("ROLLBACK");
            }
            if let Some((_, deferred)) = self.open.take() {
                Self::lose(deferred);
            }
            let mut tasks = std::mem::take(&mut self.waiting);
            self.shared.set_waiting(0);
            tasks.append(&mut batch);
            return Some(Settle::lost(tasks, e));
        }
        let every_write_durable = self.shared.window().is_zero();
        for (task, ok) in batch.into_iter().zip(ran) {
            let waits = ok
                && match task.durability() {
                    Durability::Read => false,
                    Durability::Durable => true,
                    Durability::Deferred => every_write_durable,
                };
            if waits {
                self.waiting.push(task);
                continue;
            }
            if task.durability() == Durability::Deferred
                && let Some((_, deferred)) = &mut self.open
            {
                *deferred += 1;
            }
            task.answer(None);
        }
        self.shared.set_waiting(self.waiting.len());
        self.commit_waiting()
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
