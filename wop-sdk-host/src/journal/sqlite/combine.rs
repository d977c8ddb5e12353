//! Who runs the writer: the callers themselves, one at a time (flat combining), and a small
//! thread for the flush window.
//!
//! A command is queued, then its caller tries to take the writer. The one that gets it runs
//! every queued command as one batch (its own and whatever others queued meanwhile: group
//! commit, one fsync for all), lets the writer go, syncs the WAL when the batch committed
//! (`settle::Settle`), answers everyone of the batch, and looks at the queue again. A caller that
//! does not get the writer returns at once: the holder is bound to see its command, since it
//! looks at the queue after letting the writer go. So with one caller a durable write is made on
//! the caller's own thread, with no hand-off to another thread and back (BENCHMARKS.md §12a
//! measured those at 67 µs of CPU a call); under load the callers' writes are grouped.
//!
//! The sync is made without the writer, so that nobody waits for the disk to use it: while a
//! commit's sync is under way, whoever holds the writer runs the queued commands at once (reads
//! and deferred writes are answered then, as a call's outcome is), and the durable writes among
//! them wait in the open transaction; when the sync ends, they are committed together (by the
//! thread whose sync ended, or by the holder that lets the writer go after it ended), and synced.
//! So under load there is one commit per sync, holding everything that came during the last
//! sync, and deferred writes never wait for the disk. A batch is answered only after a sync that
//! began after its commit, so nobody is told a write is durable before it is; a read may see a
//! commit whose sync is under way (as another connection may), which only a machine crash, taking
//! this process with it, could undo.
//!
//! The journal's thread sleeps until the transaction left open by deferred writes is
//! due, then takes the writer (as a caller would) and commits it.

use super::errors::stopped;
use super::settle::{Settle, Shared};
use super::task::Task;
use super::writer::{MAX_BATCH, Writer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Instant;

/// The queue, the writer, and what the journal's thread is asked to do.
pub(super) struct Core {
    queue: Mutex<Vec<Box<dyn Task>>>,
    /// `None` once the journal is closed.
    writer: Mutex<Option<Writer>>,
    pub(super) shared: Arc<Shared>,
    /// When the open transaction is due, for the journal's thread.
    alarm: Mutex<Option<Instant>>,
    wake: Condvar,
    stop: AtomicBool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Core {
    pub(super) fn new(writer: Writer, shared: Arc<Shared>) -> Self {
        Self {
            queue: Mutex::new(Vec::new()),
            writer: Mutex::new(Some(writer)),
            shared,
            alarm: Mutex::new(None),
            wake: Condvar::new(),
            stop: AtomicBool::new(false),
        }
    }

    /// Queues `task`, and runs the queue on this thread unless another thread holds the writer
    /// (which then runs it).
    pub(super) fn submit(&self, task: Box<dyn Task>) {
        lock(&self.queue).push(task);
        if let Some(writer) = self.try_writer() {
            self.combine(writer);
        }
    }

    fn try_writer(&self) -> Option<MutexGuard<'_, Option<Writer>>> {
        match self.writer.try_lock() {
            Ok(guard) => Some(guard),
            Err(TryLockError::Poisoned(p)) => Some(p.into_inner()),
            Err(TryLockError::WouldBlock) => None,
        }
    }

    /// Runs every queued command while holding the writer, one batch at a time; a batch that
    /// committed is synced and answered after the writer is let go. Then looks again: at the
    /// queue (a command queued by a caller that found the writer taken), and at durable writes
    /// left waiting for a commit while a sync was under way (if none is any more, they are
    /// committed now).
    fn combine<'a>(&'a self, mut writer: MutexGuard<'a, Option<Writer>>) {
        loop {
            let batch = std::mem::take(&mut *lock(&self.queue));
            let settles = if batch.is_empty() {
                writer
                    .as_mut()
                    .and_then(Writer::commit_waiting)
                    .into_iter()
                    .collect()
            } else {
                run(&mut writer, batch)
            };
            let due = writer.as_ref().and_then(Writer::due);
            drop(writer);
            if let Some(due) = due {
                self.arm(due);
            }
            for settle in settles {
                // Others wait on the journal: their callers in this batch, or commands queued.
                let others = settle.callers() > 1 || !lock(&self.queue).is_empty();
                off_worker(others, || settle.finish(&self.shared));
            }
            if lock(&self.queue).is_empty() && !self.shared.commit_due() {
                return;
            }
            match self.try_writer() {
                Some(w) => writer = w,
                None => return,
            }
        }
    }

    fn arm(&self, due: Instant) {
        let mut alarm = lock(&self.alarm);
        if alarm.is_none_or(|at| due < at) {
            *alarm = Some(due);
            self.wake.notify_one();
        }
    }

    /// The flush window changed: the journal's thread looks again.
    pub(super) fn window_changed(&self) {
        let due = lock(&self.writer).as_ref().and_then(Writer::due);
        if let Some(due) = due {
            *lock(&self.alarm) = Some(due);
        }
        self.wake.notify_one();
    }

    /// The journal's thread: commits the open transaction when it is due; ends at
    /// [`Core::close`].
    pub(super) fn flush_loop(&self) {
        let mut alarm = lock(&self.alarm);
        while !self.stop.load(Ordering::Acquire) {
            match *alarm {
                None => {
                    alarm = self
                        .wake
                        .wait(alarm)
                        .unwrap_or_else(PoisonError::into_inner);
                }
                Some(at) if at > Instant::now() => {
                    let left = at.saturating_duration_since(Instant::now());
                    alarm = self
                        .wake
                        .wait_timeout(alarm, left)
                        .unwrap_or_else(PoisonError::into_inner)
                        .0;
                }
                Some(_) => {
                    *alarm = None;
                    drop(alarm);
                    let settle = lock(&self.writer).as_mut().and_then(Writer::commit_if_due);
                    if let Some(settle) = settle {
                        settle.finish(&self.shared);
                    }
                    self.combine(lock(&self.writer));
                    alarm = lock(&self.alarm);
                }
            }
        }
    }

    /// Stops the flush thread (the caller joins it).
    pub(super) fn stop(&self) {
        self.stop.store(true, Ordering::Release);
        let _alarm = lock(&self.alarm);
        self.wake.notify_all();
    }

    /// Commits what is open and closes the connection; later commands fail.
    pub(super) fn close(&self) {
        let writer = lock(&self.writer).take();
        if let Some(writer) = writer {
            writer.close();
        }
        // Nothing can be queued by now (the journal is being dropped), but answer anything that is.
        for task in std::mem::take(&mut *lock(&self.queue)) {
            task.answer(Some(stopped()));
        }
    }
}

/// Runs `sync`, which waits for the disk. On a worker of tokio's multi-thread runtime, when
/// `others` use the journal too, it runs through `block_in_place`: the worker's other tasks (the
/// other callers, who run the next batch meanwhile) move to another thread, so no core of the
/// runtime sits idle in the fsync. A caller alone syncs on its thread as a file write would: the
/// hand-off would cost it more than it saves. (Elsewhere, on a current-thread runtime included,
/// `sync` runs as it is; `block_in_place` is not allowed there.)
fn off_worker(others: bool, sync: impl FnOnce()) {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let worker = others
        && Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if worker {
        tokio::task::block_in_place(sync);
    } else {
        sync();
    }
}

/// Runs `batch` on the writer, in batches of at most [`MAX_BATCH`] commands, each to settle;
/// without a writer (closed), every command fails.
fn run(writer: &mut Option<Writer>, mut batch: Vec<Box<dyn Task>>) -> Vec<Settle> {
    let Some(w) = writer.as_mut() else {
        for task in batch {
            task.answer(Some(stopped()));
        }
        return Vec::new();
    };
    let mut settles = Vec::new();
    while batch.len() > MAX_BATCH {
        let rest = batch.split_off(MAX_BATCH);
        settles.extend(w.run_batch(batch));
        batch = rest;
    }
    settles.extend(w.run_batch(batch));
    settles
}
