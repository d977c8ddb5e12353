//! Waiting for the disk from a task: how a durable journal syncs on a runtime's worker.

/// Runs `sync` (which waits for the disk). On a worker of tokio's multi-thread runtime, when
/// `others` use the journal too, it runs through `block_in_place`: the worker's other tasks (the
/// other callers) move to another thread, so no core of the runtime sits idle in the fsync. A
/// caller alone syncs on its thread as a file write would: the hand-off would cost it more than
/// it saves. (Elsewhere, on a current-thread runtime included, `sync` runs as it is;
/// `block_in_place` is not allowed there.)
pub(crate) fn off_worker<T>(others: bool, sync: impl FnOnce() -> T) -> T {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let worker = others
        && Handle::try_current().is_ok_and(|h| h.runtime_flavor() == RuntimeFlavor::MultiThread);
    if worker {
        tokio::task::block_in_place(sync)
    } else {
        sync()
    }
}
