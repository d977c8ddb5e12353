//! Who runs the writer: the callers themselves, one at a time (flat combining), and a small
//! thread for the flush window and for running the queue while a caller waits for the disk.
//!
//! A command is queued, then its caller tries to take the writer. The one that gets it runs
//! every queued command as one batch (its own and whatever others queued meanwhile: group
//! commit, one fsync for all), lets the writer go, syncs the WAL when the batch committed
//! (`writer::Settle`), answers everyone of the batch, and looks at the queue again. A caller that
//! does not get the writer returns at once: the holder is bound to see its command, since it
//! looks at the queue after letting the writer go. So with one caller a durable write is made on
//! the caller's own thread, with no hand-off to another thread and back (BENCHMARKS.md §12a
//! measured those at 67 µs of CPU a call); under load the callers' writes are grouped.
//!
//! The sync is made without the writer, so the next batch need not wait for the disk: a holder
//! that lets the writer go with commands queued behind it wakes the journal's thread, which runs
//! them (and syncs them) while the holder's own sync is under way. Each sync covers every commit
//! made before it began, and a batch is answered only after its own sync, so nobody is told a
//! write is durable before it is; a read of the next batch may see a commit whose sync is still
//! under way (as another connection may), which only a machine crash, taking this process with it,
//! could undo.
//!
//! The journal's thread otherwise sleeps until the transaction left open by deferred writes is
//! due, then takes the writer (as a caller would) and commits it.

use super::errors::stopped;
use super::writer::{MAX_BATCH, Settle, Shared, Task, Writer};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Instant;

/// The queue, the writer, and what the journal's thread is asked to do.
pub(super) struct Core {
    queue: Mutex<Vec<Box<dyn Task>>>,
    /// `None` once the journal is closed.
    writer: Mutex<Option<Writer>>,
    pub(super) shared: Arc<Shared>,
    alarm: Mutex<Alarm>,
    wake: Condvar,
    stop: AtomicBool,
}

/// The journal's thread's work.
#[derive(Default)]
struct Alarm {
    /// When the open transaction is due.
    due: Option<Instant>,
    /// Commands wait in the queue while their writer's last holder syncs.
    run_queue: bool,
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
            alarm: Mutex::new(Alarm::default()),
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

    /// Runs every queued command while holding the writer, one batch at a time: each batch is
    /// synced and answered after the writer is let go, then the queue is looked at again (a
    /// command queued by a caller that found the writer taken).
    fn combine<'a>(&'a self, mut writer: MutexGuard<'a, Option<Writer>>) {
        loop {
            let batch = std::mem::take(&mut *lock(&self.queue));
            let settles = if batch.is_empty() {
                Vec::new()
            } else {
                run(&mut writer, batch)
            };
            let due = writer.as_ref().and_then(Writer::due);
            drop(writer);
            if let Some(due) = due {
                self.arm(due);
            }
            if settles.iter().any(Settle::syncs) && !lock(&self.queue).is_empty() {
                // The next batch runs on the journal's thread while this one waits for the disk.
                self.run_queue_elsewhere();
            }
            for settle in settles {
                settle.finish(&self.shared);
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
        if alarm.due.is_none_or(|at| due < at) {
            alarm.due = Some(due);
            self.wake.notify_one();
        }
    }

    fn run_queue_elsewhere(&self) {
        let mut alarm = lock(&self.alarm);
        if !alarm.run_queue {
            alarm.run_queue = true;
            self.wake.notify_one();
        }
    }

    /// The flush window changed: the journal's thread looks again.
    pub(super) fn window_changed(&self) {
        let due = lock(&self.writer).as_ref().and_then(Writer::due);
        if let Some(due) = due {
            lock(&self.alarm).due = Some(due);
        }
        self.wake.notify_one();
    }

    /// The journal's thread: runs the queue when asked, commits the open transaction when it is
    /// due; ends at [`Core::close`].
    pub(super) fn flush_loop(&self) {
        let mut alarm = lock(&self.alarm);
        while !self.stop.load(Ordering::Acquire) {
            if alarm.run_queue {
                alarm.run_queue = false;
                drop(alarm);
                // Taken by another: its holder will see the queue.
                if let Some(writer) = self.try_writer() {
                    self.combine(writer);
                }
                alarm = lock(&self.alarm);
                continue;
            }
            match alarm.due {
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
                    alarm.due = None;
                    drop(alarm);
                    let mut writer = lock(&self.writer);
                    let settle = writer.as_mut().and_then(Writer::commit_if_due);
                    if let Some(settle) = settle {
                        // Nobody waits for it: synced with the writer held, which is simpler.
                        settle.finish(&self.shared);
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

/// Runs `batch` on the writer, in batches of at most [`MAX_BATCH`] commands, each to settle;
/// without a writer (closed), every command fails.
fn run(writer: &mut Option<Writer>, mut batch: Vec<Box<dyn Task>>) -> Vec<Settle> {
    let Some(w) = writer.as_mut() else {
        for task in batch {
            task.answer(Some(stopped()));
        }
        return Vec::new();
    };
    let mut settles = Vec::with_capacity(1);
    while batch.len() > MAX_BATCH {
        let rest = batch.split_off(MAX_BATCH);
        settles.push(w.run_batch(batch));
        batch = rest;
    }
    settles.push(w.run_batch(batch));
    settles
}
