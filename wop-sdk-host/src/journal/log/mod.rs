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
//! **Memory.** Everything the file holds is also held in memory, as the in-memory journal holds
//! it without a retention rule; the file is read whole when it is opened. A journal of many
//! runs costs its size in memory (BENCHMARKS.md §13 has the figures next to SQLite's).
//!
//! The parts: `file` (the format: frames, checksums, the tail), `ops` (a record's payload and
//! how it applies), `sync` (group commit and the flush window), `store` (the [`Journal`](super::Journal)
//! operations), and this file (opening, reading and writing under the file's lock).

mod file;
mod ops;
mod store;
mod sync;
#[cfg(test)]
mod tests;

use super::JournalError;
use super::memory::Records;
use file::{CHUNK, HEADER, Next, Tail};
use ops::Op;
use std::fmt;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, SystemTime};
use sync::Syncs;
use wop_sdk::host::BoxFuture;

/// The flush window of a journal that was not given one.
const WINDOW: Duration = Duration::from_millis(10);

/// What a journal knows of its file: the records, and where the next one goes.
struct Log {
    records: Records,
    /// Where the last record ends.
    end: u64,
    /// The next record's number.
    next_seq: u64,
    /// The file's length as last seen (it grows in steps of [`CHUNK`]).
    len: u64,
    /// A record framed: kept to be written again.
    framed: Vec<u8>,
    /// A write failed halfway and its bytes could not be zeroed: nothing more is written.
    broken: Option<JournalError>,
}

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

fn io(path: &Path, what: &str, e: &std::io::Error) -> JournalError {
    JournalError::Io(format!("{}: {what}: {e}", path.display()))
}

/// Holds the file's `flock` until dropped.
struct Locked<'a>(&'a File);

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let _ = self.0.unlock();
    }
}

fn lock<'a>(path: &Path, file: &'a File, exclusive: bool) -> Result<Locked<'a>, JournalError> {
    if exclusive {
        file.lock()
    } else {
        file.lock_shared()
    }
    .map_err(|e| io(path, "cannot lock the journal", &e))?;
    Ok(Locked(file))
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
                create(&path, &file)?;
            }
            read(&path, &file, true)?
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
            read(&path, &file, false)?
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

/// Writes a new file's header, and makes the file and its name durable.
fn create(path: &Path, file: &File) -> Result<(), JournalError> {
    file.write_all_at(&file::header(), 0)
        .and_then(|()| file::grow(file, HEADER, CHUNK))
        .and_then(|()| file.sync_all())
        .map_err(|e| io(path, "cannot write the journal's header", &e))?;
    if let Some(parent) = path.parent() {
        let dir = if parent.as_os_str().is_empty() {
            Path::new(".")
        } else {
            parent
        };
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Reads the whole file (its lock held): every record applied, the tail checked and, when
/// `repair`, a torn write zeroed.
fn read(path: &Path, file: &File, repair: bool) -> Result<Log, JournalError> {
    let mut bytes = Vec::new();
    {
        use std::io::Read;
        let mut reader = file;
        reader
            .read_to_end(&mut bytes)
            .map_err(|e| io(path, "cannot read it", &e))?;
    }
    file::check_header(path, &bytes)?;
    let mut records = Records::default();
    let (mut at, mut next_seq) = (HEADER as usize, 0u64);
    while let Some((frame, payload)) = file::record_at(&bytes, at) {
        if frame.seq != next_seq {
            break;
        }
        apply(path, &mut records, &frame, &bytes[payload], at as u64)?;
        at += frame.span() as usize;
        next_seq += 1;
    }
    match file::tail(&bytes, at) {
        Tail::Clean => {}
        Tail::Torn if repair => {
            tracing::warn!(path = %path.display(), at, "the log journal ends in a torn write: zeroed");
            file::zero_from(file, at as u64)
                .map_err(|e| io(path, "cannot zero a torn write", &e))?;
        }
        Tail::Torn => {}
        Tail::Damaged { found, durable } => {
            return Err(JournalError::Corrupt(format!(
                "{}: record {next_seq} at offset {at} is damaged: the whole record at offset \
                 {found} says the file was durable up to offset {durable}",
                path.display()
            )));
        }
    }
    if repair {
        // What was read is on the disk from here on (a record's durable end says so).
        file.sync_data().map_err(|e| io(path, "fdatasync", &e))?;
    }
    Ok(Log {
        records,
        end: at as u64,
        next_seq,
        len: bytes.len() as u64,
        framed: Vec::new(),
        broken: None,
    })
}

/// Applies the payload of record `frame` (at offset `at`) to `records`.
fn apply(
    path: &Path,
    records: &mut Records,
    frame: &file::Frame,
    payload: &[u8],
    at: u64,
) -> Result<(), JournalError> {
    let damaged = |m: String| {
        JournalError::Corrupt(format!(
            "{}: record {} at offset {at}: {m}",
            path.display(),
            frame.seq
        ))
    };
    let op: Op<'_> = serde_json::from_slice(payload).map_err(|e| damaged(e.to_string()))?;
    op.apply(records, ops::time(frame.at)).map_err(damaged)
}

/// A write under way: the log, its file locked.
struct Writing<'a> {
    shared: &'a Shared,
    log: MutexGuard<'a, Log>,
}

impl Writing<'_> {
    fn records(&mut self) -> &mut Records {
        &mut self.log.records
    }

    /// Appends `payload` (an [`Op`], `ops::encode`) as the next record, written now; answers
    /// when (its events' time).
    fn append(&mut self, payload: &[u8]) -> Result<SystemTime, JournalError> {
        let Shared {
            path,
            file,
            syncs,
            read_only,
            ..
        } = self.shared;
        if *read_only {
            return Err(JournalError::Io(format!(
                "{}: the journal is open read-only",
                path.display()
            )));
        }
        let log = &mut *self.log;
        let now = SystemTime::now();
        log.framed.clear();
        file::frame(
            &mut log.framed,
            log.next_seq,
            syncs.durable(),
            ops::nanos(now),
            payload,
        );
        let end = log.end + log.framed.len() as u64;
        if end > log.len {
            // Another process may have grown the file: it never shrinks.
            log.len = file.metadata().map_err(|e| io(path, "stat", &e))?.len();
            if end > log.len {
                let len = end.next_multiple_of(CHUNK);
                file::grow(file, log.len, len)
                    .map_err(|e| io(path, "cannot grow the journal", &e))?;
                log.len = len;
            }
        }
        if let Err(e) = file.write_all_at(&log.framed, log.end) {
            // What was written of it is zeroed, or nothing more is written.
            if let Err(z) = file::zero_from(file, log.end) {
                log.broken = Some(io(
                    path,
                    "a write failed halfway and could not be undone",
                    &z,
                ));
            }
            return Err(io(path, "cannot write to the journal", &e));
        }
        log.end = end;
        log.next_seq += 1;
        syncs.wrote(end);
        Ok(now)
    }

    /// Where the last record ends.
    fn end(&self) -> u64 {
        self.log.end
    }
}

impl Shared {
    fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads the records other processes wrote after the last one `log` knows. With `exclusive`
    /// (this journal holds the file's exclusive lock, so no one is writing) a torn write found
    /// there is zeroed; otherwise the lock is taken, shared, when a record follows.
    fn catch_up(&self, log: &mut Log, exclusive: bool) -> Result<(), JournalError> {
        let probe = file::next_at(&self.file, log.end).map_err(|e| io(&self.path, "read", &e))?;
        if matches!(probe, Next::End) {
            return Ok(());
        }
        let _shared = if exclusive {
            None
        } else {
            Some(lock(&self.path, &self.file, false)?)
        };
        loop {
            match file::next_at(&self.file, log.end).map_err(|e| io(&self.path, "read", &e))? {
                Next::End => return Ok(()),
                Next::Record(frame, payload) if frame.seq == log.next_seq => {
                    apply(&self.path, &mut log.records, &frame, &payload, log.end)?;
                    log.end += frame.span();
                    log.next_seq += 1;
                    self.syncs.wrote(log.end);
                }
                // A write another process did not finish (it was killed during it).
                Next::Record(..) | Next::Torn => {
                    if exclusive {
                        file::zero_from(&self.file, log.end)
                            .map_err(|e| io(&self.path, "cannot zero a torn write", &e))?;
                    }
                    return Ok(());
                }
            }
        }
    }

    /// Runs `read` over the records, up to date with the file.
    fn read<T>(&self, read: impl FnOnce(&Records) -> T) -> Result<T, JournalError> {
        let mut log = self.log();
        self.catch_up(&mut log, false)?;
        Ok(read(&log.records))
    }

    /// Runs `write` under the file's exclusive lock, up to date with the file; answers its
    /// answer and where the log ends after it.
    fn write<T>(
        &self,
        write: impl FnOnce(&mut Writing<'_>) -> Result<T, JournalError>,
    ) -> Result<(T, u64), JournalError> {
        let log = self.log();
        if let Some(e) = log.broken.clone().or_else(|| self.syncs.failed()) {
            return Err(e);
        }
        // Read-only, the write's check runs (a `begin` that finds its call answers) and its
        // record is refused (`Writing::append`).
        let exclusive = !self.read_only;
        let _locked = lock(&self.path, &self.file, exclusive)?;
        let mut writing = Writing { shared: self, log };
        self.catch_up(&mut writing.log, exclusive)?;
        let answer = write(&mut writing)?;
        Ok((answer, writing.end()))
    }

    /// [`Shared::write`], answered when `durable` once everything up to its end is on the
    /// disk.
    fn write_then<T: Send + 'static>(
        &self,
        durable: bool,
        write: impl FnOnce(&mut Writing<'_>) -> Result<T, JournalError>,
    ) -> BoxFuture<'static, Result<T, JournalError>> {
        let (answer, end) = match self.write(write) {
            Ok(done) => done,
            Err(e) => return Box::pin(std::future::ready(Err(e))),
        };
        let durable = durable || self.syncs.window().is_zero();
        if !durable {
            return Box::pin(std::future::ready(Ok(answer)));
        }
        let settled = self.syncs.settle(&self.file, end);
        Box::pin(async move { settled.await.map(|()| answer) })
    }
}
