//! What a journal knows of its file ([`Log`]: the records, the index of cold runs, where the
//! next record goes), and the file's `flock`. Opening (`open.rs`) makes a `Log`; reading and
//! writing (`access.rs`) use it under the lock.

use super::index::Index;
use crate::journal::JournalError;
use crate::journal::memory::Records;
use std::fs::File;
use std::path::Path;

/// What a journal knows of its file: the records, and where the next one goes.
pub(super) struct Log {
    pub(super) records: Records,
    /// Where each run's records are, and the runs held cold (`index.rs`).
    pub(super) index: Index,
    /// Where the last record ends.
    pub(super) end: u64,
    /// The next record's number.
    pub(super) next_seq: u64,
    /// The file's length as last seen (it grows in steps of [`CHUNK`](super::file::CHUNK)).
    pub(super) len: u64,
    /// A record framed: kept to be written again.
    pub(super) framed: Vec<u8>,
    /// A write failed halfway and its bytes could not be zeroed: nothing more is written.
    pub(super) broken: Option<JournalError>,
}

pub(super) fn io(path: &Path, what: &str, e: &std::io::Error) -> JournalError {
    JournalError::Io(format!("{}: {what}: {e}", path.display()))
}

/// Holds the file's `flock` until dropped.
pub(super) struct Locked<'a>(&'a File);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

pub(super) fn lock<'a>(
    path: &Path,
    file: &'a File,
    exclusive: bool,
) -> Result<Locked<'a>, JournalError> {
    if exclusive {
        file.lock()
    } else {
        file.lock_shared()
    }
    .map_err(|e| io(path, "cannot lock the journal", &e))?;
    Ok(Locked(file))
}
