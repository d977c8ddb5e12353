//! Reading and writing the log under the file's `flock`: a read first catches up with the
//! records another process appended; a write catches up, checks, appends its record and applies
//! it, all under the exclusive lock; a durable write is then answered after its sync.

use super::Shared;
use super::file::{self, CHUNK, Next};
use super::index::Index;
use super::open::{self, apply};
use super::ops;
use super::state::{Log, io, lock};
use crate::answers::ready;
use crate::journal::JournalError;
use crate::journal::memory::Records;
use std::os::unix::fs::FileExt;
use std::sync::{MutexGuard, PoisonError};
use std::time::SystemTime;
use wop_sdk::host::{BoxFuture, RunId};

/// A write under way: the log, its file locked.
pub(super) struct Writing<'a> {
    shared: &'a Shared,
    log: MutexGuard<'a, Log>,
    /// The run written to.
    run: &'a str,
}

impl Writing<'_> {
    pub(super) fn records(&mut self) -> &mut Records {
        &mut self.log.records
    }

    /// Appends `payload` (an [`Op`](super::ops::Op), `ops::encode`) as the next record, written now; answers
    /// when (its events' time).
    pub(super) fn append(&mut self, payload: &[u8]) -> Result<SystemTime, JournalError> {
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
        log.index.note(self.run, log.end);
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
    pub(super) fn log(&self) -> MutexGuard<'_, Log> {
        self.log.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Reads the records other processes wrote after the last one `log` knows. With `exclusive`
    /// (this journal holds the file's exclusive lock, so no one is writing) a torn write found
    /// there is zeroed; otherwise the lock is taken, shared, when a record follows.
    fn catch_up(&self, log: &mut Log, exclusive: bool) -> Result<(), JournalError> {
        // Without the exclusive lock, one `pread` says whether anything follows before the shared
        // lock is taken (with it, the loop's first read says the same).
        let _shared = if exclusive {
            None
        } else {
            let probe =
                file::next_at(&self.file, log.end).map_err(|e| io(&self.path, "read", &e))?;
            if matches!(probe, Next::End) {
                return Ok(());
            }
            Some(lock(&self.path, &self.file, false)?)
        };
        loop {
            match file::next_at(&self.file, log.end).map_err(|e| io(&self.path, "read", &e))? {
                Next::End => return Ok(()),
                Next::Record(frame, payload) if frame.seq == log.next_seq => {
                    let Log {
                        records,
                        index,
                        end,
                        ..
                    } = &mut *log;
                    apply(&self.path, records, index, &frame, &payload, *end)?;
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

    /// Reads `run` back into memory when it is held cold; answers whether it was.
    fn thaw(&self, log: &mut Log, run: &str) -> Result<bool, JournalError> {
        let Some((offsets, calls)) = log.index.thaw(run) else {
            return Ok(false);
        };
        if let Err(e) = open::thaw(&self.path, &self.file, &mut log.records, &offsets) {
            // Nothing of it stays half read.
            log.records.drop_run(&RunId::new(run));
            log.index.freeze(run, calls);
            return Err(e);
        }
        Ok(true)
    }

    /// Runs `read` over the records of `run` (read back for the while when it is held cold),
    /// up to date with the file.
    pub(super) fn read_run<T>(
        &self,
        run: &RunId,
        read: impl FnOnce(&Records) -> T,
    ) -> Result<T, JournalError> {
        let mut log = self.log();
        self.catch_up(&mut log, false)?;
        let thawed = self.thaw(&mut log, run.as_str())?;
        let answer = read(&log.records);
        if thawed {
            let Log { records, index, .. } = &mut *log;
            open::freeze(records, index, run);
        }
        Ok(answer)
    }

    /// Runs `read` over every run's records (the cold ones read back for the while), up to
    /// date with the file.
    pub(super) fn read_all<T>(
        &self,
        read: impl FnOnce(&Records, &Index) -> T,
    ) -> Result<T, JournalError> {
        let mut log = self.log();
        self.catch_up(&mut log, false)?;
        let cold = log.index.cold();
        let mut thawed = Vec::with_capacity(cold.len());
        let mut failed = None;
        for run in cold {
            match self.thaw(&mut log, run.as_str()) {
                Ok(_) => thawed.push(run),
                Err(e) => {
                    failed = Some(e);
                    break;
                }
            }
        }
        let answer = match failed {
            Some(e) => Err(e),
            None => Ok(read(&log.records, &log.index)),
        };
        let Log { records, index, .. } = &mut *log;
        for run in &thawed {
            open::freeze(records, index, run);
        }
        answer
    }

    /// The calls the journal holds, the cold runs' included.
    pub(super) fn call_count(&self) -> Result<u64, JournalError> {
        let mut log = self.log();
        self.catch_up(&mut log, false)?;
        Ok(log.records.call_count() + log.index.cold_calls())
    }

    /// The host says `run` has no node executing: held cold once none of its calls is
    /// unfinished.
    pub(super) fn run_ended(&self, run: &RunId) {
        let mut log = self.log();
        let Log { records, index, .. } = &mut *log;
        open::freeze(records, index, run);
    }

    /// Runs `write` on `run` under the file's exclusive lock, up to date with the file (the run
    /// read back when it is held cold); answers its answer and where the log ends after it.
    fn write<T>(
        &self,
        run: &str,
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
        let mut writing = Writing {
            shared: self,
            log,
            run,
        };
        self.catch_up(&mut writing.log, exclusive)?;
        self.thaw(&mut writing.log, run)?;
        let answer = write(&mut writing)?;
        Ok((answer, writing.end()))
    }

    /// [`Shared::write`], answered when `durable` once everything up to its end is on the
    /// disk.
    pub(super) fn write_then<T: Send + 'static>(
        &self,
        durable: bool,
        run: &str,
        write: impl FnOnce(&mut Writing<'_>) -> Result<T, JournalError>,
    ) -> BoxFuture<'static, Result<T, JournalError>> {
        let (answer, end) = match self.write(run, write) {
            Ok(done) => done,
            Err(e) => return ready(Err(e)),
        };
        let durable = durable || self.syncs.window().is_zero();
        if !durable {
            return ready(Ok(answer));
        }
        let settled = self.syncs.settle(&self.file, end);
        Box::pin(async move { settled.await.map(|()| answer) })
    }
}
