//! SQLite's errors as the journal's (a damaged file is `Corrupt`, the rest `Io`), and how long
//! a connection waits for another writer.

use crate::journal::JournalError;
use rusqlite::ErrorCode;
use std::path::Path;
use std::time::Duration;

/// How long a statement waits for a lock held by another process before failing.
pub(super) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A SQLite error as a journal error: damage is [`JournalError::Corrupt`], the rest I/O.
pub(super) fn sql(e: rusqlite::Error) -> JournalError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            JournalError::Corrupt(e.to_string())
        }
        _ => JournalError::Io(e.to_string()),
    }
}

pub(super) fn opening(path: &Path, e: rusqlite::Error) -> JournalError {
    match sql(e) {
        JournalError::Corrupt(m) => JournalError::Corrupt(format!("{}: {m}", path.display())),
        JournalError::Io(m) => JournalError::Io(format!("{}: {m}", path.display())),
        other => other,
    }
}

/// The answer of a command the journal could no longer run (it was closed).
pub(super) fn stopped() -> JournalError {
    JournalError::Io("the attempt journal is closed".into())
}
