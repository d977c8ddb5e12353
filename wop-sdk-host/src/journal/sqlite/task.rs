//! A command for the writer: what it does, when it is answered ([`Durability`]), and its
//! type-erased form the queue holds ([`Task`]).

use crate::journal::JournalError;
use rusqlite::Connection;
use tokio::sync::oneshot;

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
