//! Who runs the writer: the callers themselves, one at a time (flat combining), and a small
//! thread for the flush window.
//!
//! A command is queued, then its caller tries to take the writer. The one that gets it runs
//! every queued command as one batch (its own and whatever others queued meanwhile: group
//! commit, one fsync for all), answers them, lets the writer go, and looks at the queue again.
//! A caller that does not get the writer returns at once: the holder is bound to see its command,
//! since it looks at the queue after letting the writer go. So with one caller a durable write is
//! made on the caller's own thread, with no hand-off to another thread and back (BENCHMARKS.md
//! §12a measured those at 67 µs of CPU a call); under load the callers' writes are grouped as
//! the writer thread grouped them.
//!
//! The flush thread only sleeps until the transaction left open by deferred writes is due, then
//! takes the writer (as a caller would) and commits it.

use super::errors::stopped;
use super::writer::{MAX_BATCH, Shared, Task, Writer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Instant;

/// The queue, the writer, and the flush thread's alarm.
pub(super) struct Core {
    queue: Mutex<Vec<Box<dyn Task>>>,
    /// `None` once the journal is closed.
    writer: Mutex<Option<Writer>>,
    pub(super) shared: Arc<Shared>,
    /// When the open transaction is due, for the flush thread.
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

    /// Runs every queued command while holding the writer; after letting it go, looks at the
    /// queue once more (a command queued by a caller that found the writer taken).
    fn combine<'a>(&'a self, mut writer: MutexGuard<'a, Option<Writer>>) {
        loop {
            loop {
                let batch = std::mem::take(&mut *lock(&self.queue));
                if batch.is_empty() {
                    break;
                }
                run(&mut writer, batch);
            }
            let due = writer.as_ref().and_then(Writer::due);
            drop(writer);
            if let Some(due) = due {
                self.arm(due);
            }
            if lock(&self.queue).is_empty() {
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

    /// The flush window changed: the flush thread looks again.
    pub(super) fn window_changed(&self) {
        let due = lock(&self.writer).as_ref().and_then(Writer::due);
        if let Some(due) = due {
            *lock(&self.alarm) = Some(due);
        }
        self.wake.notify_one();
    }

    /// The flush thread: commits the open transaction when it is due; ends at [`Core::close`].
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
                    let mut writer = lock(&self.writer);
                    if let Some(w) = writer.as_mut() {
                        w.commit_if_due();
                    }
                    self.combine(writer);
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

/// Runs `batch` on the writer, in batches of at most [`MAX_BATCH`] commands; without a writer
/// (closed), every command fails.
fn run(writer: &mut Option<Writer>, mut batch: Vec<Box<dyn Task>>) {
    let Some(w) = writer.as_mut() else {
        for task in batch {
            task.answer(Some(stopped()));
        }
        return;
    };
    while batch.len() > MAX_BATCH {
        let rest = batch.split_off(MAX_BATCH);
        w.run_batch(batch);
        batch = rest;
    }
    w.run_batch(batch);
}
