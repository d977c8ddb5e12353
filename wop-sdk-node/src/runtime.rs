//! The addon's async runtime: node executions run on it, so a node may await any future (tokio
//! timers, sockets, `reqwest`, `tokio::fs`, `tokio::spawn`) on a JavaScript host exactly as on
//! the local host.
//!
//! One multi-threaded tokio runtime per process, started at the first node execution and never
//! stopped: its worker threads are [`workers`] (`WOP_SDK_WORKER_THREADS`, else the machine's
//! parallelism up to 4), named `wop-sdk-node`; its blocking pool (`spawn_blocking`, `tokio::fs`)
//! holds at most [`MAX_BLOCKING_THREADS`] threads, each ended after 10 s idle. A host process
//! that runs for weeks keeps the same threads: none is started per node execution.
//!
//! Why a runtime of the bridge's own and not napi's `tokio_rt` feature: the bridge exports no
//! `async fn` to JavaScript (a node execution is driven by `wopStart`/`wopResume` and reports
//! through a thread-safe function, `task.rs`), so napi's runtime would only add its
//! lifecycle hooks; with its own, the bridge names its threads, bounds them and reads the worker
//! count from the environment, and a pack's `tokio` dependency (any 1.x) is the same crate.

use std::sync::OnceLock;
use tokio::runtime::{Builder, Handle, Runtime};

/// The most blocking-pool threads (`spawn_blocking`, `tokio::fs`) the runtime keeps at once.
pub const MAX_BLOCKING_THREADS: usize = 64;

/// The variable that sets the worker thread count (1..=256).
pub const WORKERS_VAR: &str = "WOP_SDK_WORKER_THREADS";

/// The worker thread count: `WOP_SDK_WORKER_THREADS` (1..=256) when set, else the machine's
/// available parallelism up to 4; `Err` names the variable and the rule.
pub fn workers() -> Result<usize, String> {
    match std::env::var(WORKERS_VAR) {
        Ok(v) => v
            .trim()
            .parse::<usize>()
            .ok()
            .filter(|n| (1..=256).contains(n))
            .ok_or_else(|| {
                format!("{WORKERS_VAR}=`{v}`: must be a whole number of threads in 1..=256")
            }),
        Err(_) => Ok(std::thread::available_parallelism().map_or(2, |n| n.get().min(4))),
    }
}

fn build() -> Result<Runtime, String> {
    Builder::new_multi_thread()
        .worker_threads(workers()?)
        .max_blocking_threads(MAX_BLOCKING_THREADS)
        .thread_name("wop-sdk-node")
        .enable_all()
        .build()
        .map_err(|e| format!("the addon's async runtime could not start: {e}"))
}

/// The runtime, started at the first call; `Err` says why it could not start (then every node
/// fails `node_failed` with that reason).
pub(crate) fn handle() -> Result<&'static Handle, &'static str> {
    static RUNTIME: OnceLock<Result<Runtime, String>> = OnceLock::new();
    RUNTIME
        .get_or_init(build)
        .as_ref()
        .map(Runtime::handle)
        .map_err(String::as_str)
}
