//! The log journal: one file of checksummed records, written in order and synced with
//! `fdatasync`, and what it holds kept in memory ([`Records`], as the in-memory journal keeps
//! it). A durable call costs one `pwrite` and one `fdatasync` (shared with every other durable
//! write made meanwhile: `sync.rs`), and no page of a B-tree, no WAL index and no lock file.
//!
//! **What is durable when** is what the SQLite journal promises (see the [`Journal`](super::Journal) trait): a
//! call's identity and each announced provider request, a lease and its heartbeat, and a node's
//! end are answered after an `fdatasync` that began after them (and made everything written
//! before them durable too). A call's outcome, charge and events, a run's record and its other
//! events are *deferred*: written to the file at once (another process reads them at once, and a
//! crash of the process loses none of them) and on the disk with the next sync, at the latest
//! when the flush window ends ([`DEFAULT_FLUSH_WINDOW`](crate::journal::DEFAULT_FLUSH_WINDOW),
//! [`LogJournal::set_flush_window`]). A machine crash before that sync loses them as if they had
//! not been made: the call is then ambiguous and never charged.
//!
//! **Two processes, one file.** Each write is made under an exclusive `flock` of the file, after
//! reading the records another process wrote since this one last looked; each read first looks
//! whether a record follows the last one it knows (one `pread`) and, when one does, reads it
//! under a shared lock. So a second host sees a call's lease, heartbeat and outcome as soon as
//! they are written, as with the SQLite journal.
//!
//! **Opening.** A new file gets its header; an existing one is read whole under the exclusive
//! lock, its records applied in order. A file that is not a log journal, or of a newer format,
//! is refused and left as it is. Reading stops at the first byte that is not the next whole
//! record: zeros there are the end; a torn write (a crash while writing records no one was told
//! were durable) is zeroed before anything is written after it; and bytes that were durable
//! (`file.rs` explains how that is known) are damage, refused as [`JournalError::Corrupt`] with
//! the file untouched. A record that is whole but does not fit the ones before it (a call
//! recorded twice) is damage too.
//!
//! **Memory.** The records of runs with a node executing are held in memory, as the in-memory
//! journal holds them. A run whose nodes ended ([`Journal::run_ended`](super::Journal::run_ended),
//! or found ended when the file is opened) is held *cold*: only the offsets of its records,
//! about 150 bytes, and it is read back from the file when something asks for it (`index.rs`).
//! Opening reads the file whole once. BENCHMARKS.md §13 has the figures next to SQLite's.
//!
//! The parts: `file` (the format: frames, checksums, the tail), `ops` (a record's payload and
//! how it applies), `state` (what a journal knows of its file, and the file's lock), `index`
//! (where each run's records are, and the runs held cold), `open` (a new file, and an existing
//! one read whole), `access` (reading and writing under the file's lock, catching up with
//! another process), `sync` (group commit and the flush window), `store` (the
//! [`Journal`](super::Journal) operations), and this file (the journal and what it shares with
//! its thread).

mod access;
mod file;
mod index;
mod open;
mod ops;
mod state;
mod store;
mod sync;
#[cfg(test)]
mod tests;

use super::JournalError;
use state::{Log, io, lock};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;
use sync::Syncs;

/// The flush window of a journal that was not given one.
const WINDOW: Duration = Duration::from_millis(10);

/// What the journal and its flush thread share.
struct Shared {
    path: PathBuf,
    file: File,
    read_only: bool,
    log: Mutex<Log>,
    syncs: Syncs,
}

/// A journal in one append-only file of checksummed records.
pub struct LogJournal {
    shared: Arc<Shared>,
    flusher: Option<JoinHandle<()>>,
}

impl fmt::Debug for LogJournal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LogJournal")
            .field("path", &self.shared.path)
            .field("read_only", &self.shared.read_only)
            .field("syncs", &self.commits())
            .finish()
    }
}

impl Drop for LogJournal {
    fn drop(&mut self) {
        // The flush thread syncs what is left, then stops.
        self.shared.syncs.stop();
        if let Some(handle) = self.flusher.take() {
            let _ = handle.join();
        }
    }
}

impl LogJournal {
    /// Opens the journal at `path`, creating the parent directories and the file when missing.
    /// A foreign or damaged file gives [`JournalError::Corrupt`], a newer format
    /// [`JournalError::NewerSchema`]; either is left untouched. A torn write at its end (a crash
    /// during a write no one was told was durable) is zeroed.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        if let Some(parent) = path.parent()
            && !parent.as_os_str().is_empty()
        {
            std::fs::create_dir_all(parent).map_err(|e| io(parent, "cannot create it", &e))?;
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| io(&path, "cannot open it for writing", &e))?;
        let log = {
            let _locked = lock(&path, &file, true)?;
            if file.metadata().map_err(|e| io(&path, "stat", &e))?.len() == 0 {
                open::create(&path, &file)?;
            }
            open::read(&path, &file, true)?
        };
        Self::start(path, file, false, log)
    }

    /// Opens an existing journal for reading only: every write answers [`JournalError::Io`],
    /// and the file is never modified (a torn write at its end is read past, not zeroed). A
    /// journal in a folder this user cannot write opens too.
    pub fn open_read_only(path: impl AsRef<Path>) -> Result<Self, JournalError> {
        let path = path.as_ref().to_path_buf();
        let file = File::open(&path).map_err(|e| io(&path, "cannot open it", &e))?;
        let log = {
            let _locked = lock(&path, &file, false)?;
            if file.metadata().map_err(|e| io(&path, "stat", &e))?.len() == 0 {
                return Err(JournalError::Io(format!(
                    "{}: no journal to open read-only",
                    path.display()
                )));
            }
            open::read(&path, &file, false)?
        };
        Self::start(path, file, true, log)
    }

    fn start(path: PathBuf, file: File, read_only: bool, log: Log) -> Result<Self, JournalError> {
        let shared = Arc::new(Shared {
            syncs: Syncs::new(log.end, WINDOW),
            path,
            file,
            read_only,
            log: Mutex::new(log),
        });
        let flusher = if read_only {
            None
        } else {
            let thread = Arc::clone(&shared);
            Some(
                std::thread::Builder::new()
                    .name("wop-journal".into())
                    .spawn(move || thread.syncs.flush_loop(&thread.file))
                    .map_err(|e| {
                        JournalError::Io(format!("cannot start the journal's flush thread: {e}"))
                    })?,
            )
        };
        Ok(Self { shared, flusher })
    }

    /// Whether the file at `path` is a log journal: it starts with the log's header (a new,
    /// empty file is not one).
    pub fn is_log(path: impl AsRef<Path>) -> bool {
        let mut first = [0u8; 8];
        File::open(path)
            .and_then(|f| f.read_exact_at(&mut first, 0))
            .is_ok_and(|()| &first == file::MAGIC)
    }

    /// The journal file.
    pub fn path(&self) -> &Path {
        &self.shared.path
    }

    /// `fdatasync`s made so far (each makes every write before it durable): how well durable
    /// writes are grouped under load. Named as [`SqliteJournal::commits`](crate::journal::SqliteJournal::commits), whose
    /// commits are one sync each.
    pub fn commits(&self) -> u64 {
        self.shared.syncs.count()
    }

    /// How long deferred writes (a call's outcome, a run's record and its other events) may wait
    /// for a durable write's sync before they are synced on their own (10 ms unless set).
    /// `Duration::ZERO` syncs every write on its own.
    pub fn set_flush_window(&self, window: Duration) {
        self.shared.syncs.set_window(window);
    }
}
