//! The writer thread: it owns the connection, drains the commands already queued and runs them
//! in one transaction (group commit), one savepoint per command, answering after the commit.

use crate::journal::JournalError;
use rusqlite::Connection;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use tokio::sync::oneshot;

use super::errors::sql;

/// The most commands one transaction takes.
pub(super) const MAX_BATCH: usize = 512;

/// A command for the journal thread, type-erased.
pub(super) trait Task: Send {
    fn is_write(&self) -> bool;
    /// Runs the command; true when it succeeded.
    fn exec(&mut self, conn: &Connection) -> bool;
    /// Answers the caller: the command's own result, or `failure` when its batch was lost.
    fn answer(self: Box<Self>, failure: Option<JournalError>);
}

pub(super) struct Job<T, F> {
    pub(super) write: bool,
    pub(super) work: Option<F>,
    pub(super) result: Option<Result<T, JournalError>>,
    pub(super) reply: oneshot::Sender<Result<T, JournalError>>,
}

impl<T, F> Task for Job<T, F>
where
    T: Send,
    F: FnOnce(&Connection) -> Result<T, JournalError> + Send,
{
    fn is_write(&self) -> bool {
        self.write
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

pub(super) fn writer_loop(
    conn: Connection,
    rx: mpsc::Receiver<Box<dyn Task>>,
    commits: &AtomicU64,
) {
    while let Ok(first) = rx.recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match rx.try_recv() {
                Ok(task) => batch.push(task),
                Err(_) => break,
            }
        }
        run_batch(&conn, batch, commits);
    }
    let _ = conn.close();
}

/// Runs a batch: reads alone run as they are; with a write, the whole batch is one transaction,
/// one savepoint per command, answered after the commit.
pub(super) fn run_batch(conn: &Connection, mut batch: Vec<Box<dyn Task>>, commits: &AtomicU64) {
    if !batch.iter().any(|t| t.is_write()) {
        for mut task in batch {
            task.exec(conn);
            task.answer(None);
        }
        return;
    }
    if let Err(e) = conn.execute_batch("BEGIN IMMEDIATE") {
        let e = sql(e);
        for mut task in batch {
            if task.is_write() {
                task.answer(Some(e.clone()));
            } else {
                task.exec(conn);
                task.answer(None);
            }
        }
        return;
    }
    let mut lost: Option<JournalError> = None;
    for task in &mut batch {
        if let Err(e) = conn.execute_batch("SAVEPOINT wop_cmd") {
            lost = Some(sql(e));
            break;
        }
        let ok = task.exec(conn);
        if conn.is_autocommit() {
            // SQLite rolled the whole transaction back (full disk, I/O error).
            lost = Some(JournalError::Io(
                "the journal transaction was rolled back by a storage error".into(),
            ));
            break;
        }
        let end = if ok {
            "RELEASE wop_cmd"
        } else {
            "ROLLBACK TO wop_cmd; RELEASE wop_cmd"
        };
        if let Err(e) = conn.execute_batch(end) {
            lost = Some(sql(e));
            break;
        }
    }
    let failure = match lost {
        Some(e) => Some(e),
        None => match conn.execute_batch("COMMIT") {
            Ok(()) => {
                commits.fetch_add(1, Ordering::Relaxed);
                None
            }
            Err(e) => Some(JournalError::Io(format!(
                "the journal could not commit: {}",
                message(&sql(e))
            ))),
        },
    };
    if failure.is_some() && !conn.is_autocommit() {
        let _ = conn.execute_batch("ROLLBACK");
    }
    for task in batch {
        task.answer(failure.clone());
    }
}

pub(super) fn message(e: &JournalError) -> String {
    match e {
        JournalError::Corrupt(m) | JournalError::Io(m) => m.clone(),
        other => other.to_string(),
    }
}
