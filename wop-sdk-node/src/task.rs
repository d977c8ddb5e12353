//! One node execution on the addon's runtime ([`crate::runtime`]), its calls handed to the host's
//! JavaScript thread.
//!
//! `wopStart` spawns the node and returns its task id at once. From then on the addon speaks
//! only through the execution's `onStep` function (an N-API thread-safe function, so any thread
//! may queue a call to it and Node runs it on the JavaScript thread, in order):
//!
//! - `{"calls": [{"id", "schema"?, "request"}], "schemas"?: [[index, schema]]}` when the node
//!   makes a `ctx.callAI` call (a call with `schema` has the placeholder `0` as its request's
//!   `responseSchema`: JavaScript gives it a copy of schema `index`, and a schema crosses once
//!   per node execution);
//! - `{"done": <outcome>}` once, at the end (see [`run_node`] for the outcome).
//!
//! JavaScript answers each call with `wopResume(task, id, answer)`, which wakes the node's call
//! wherever it waits, and may end the execution early with `wopCancel(task)`. A call costs one
//! thread-safe call into JavaScript and one synchronous N-API call back, plus the JSON of its
//! request and answer.
//!
//! Each execution has a supervisor task beside the node's: it owns the deadline (the node's
//! `timeoutMs`), turns a panic outside the node's body into `node_failed`, and sends `done`. A
//! node that times out or is cancelled is dropped on the runtime, and with it every future it
//! awaited: its calls (their waiters are removed), its reservations (released), the tasks it
//! spawned into a `JoinSet` (aborted). The thread-safe function goes with the execution, so a
//! finished node keeps nothing alive in the host's event loop.

use crate::host::{HostRequest, JsCallAi};
use crate::run::run_node;
use napi::Status;
use napi::bindgen_prelude::Unknown;
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::oneshot;
use tokio::task::AbortHandle;
use wop_sdk::host::BoxFuture;
use wop_sdk::manifest::Pack;
use wop_sdk::wire::ErrorCode;

/// The execution's `onStep`: JavaScript's function, callable from any thread.
pub type OnStep = ThreadsafeFunction<String, Unknown<'static>, String, Status, false>;

/// Where an execution's steps go: JavaScript's [`OnStep`] in the addon; anything that can take
/// text from any thread elsewhere (the bridge's Rust-side bench hands them to a channel).
pub trait StepSink: Send + Sync + 'static {
    /// Queues `step`; `false` when it can no longer be delivered (the host's environment is
    /// closing).
    fn send(&self, step: String) -> bool;
}

impl StepSink for OnStep {
    fn send(&self, step: String) -> bool {
        self.call(step, ThreadsafeFunctionCallMode::NonBlocking) == Status::Ok
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What one execution's calls share with JavaScript.
struct Calls {
    on_step: Box<dyn StepSink>,
    state: Mutex<CallState>,
}

#[derive(Default)]
struct CallState {
    next_id: u32,
    /// The response schemas handed to JavaScript in this node execution, by index.
    schemas: Vec<Arc<Value>>,
    /// Handed out, not yet answered: where each answer goes.
    waiting: HashMap<u32, oneshot::Sender<String>>,
}

impl Calls {
    /// Queues `step` for JavaScript; `false` when the host's environment is closing.
    fn send(&self, step: String) -> bool {
        self.on_step.send(step)
    }
}

/// A call's waiter, removed when the call's future ends or is dropped (a node that gave up on
/// the call: a timeout, a `select!`, the node dropped).
struct Waiter<'a> {
    calls: &'a Calls,
    id: u32,
}

impl Drop for Waiter<'_> {
    fn drop(&mut self) {
        lock(&self.calls.state).waiting.remove(&self.id);
    }
}

/// `JsCallAi` over `onStep` and `wopResume`.
struct HandOff(Arc<Calls>);

impl JsCallAi for HandOff {
    fn call(&self, request: HostRequest) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            let (tx, rx) = oneshot::channel();
            let (id, step) = {
                let mut state = lock(&self.0.state);
                state.next_id += 1;
                let id = state.next_id;
                state.waiting.insert(id, tx);
                (id, call_step(&mut state.schemas, id, &request))
            };
            let _waiter = Waiter { calls: &self.0, id };
            if !self.0.send(step) {
                return Err(
                    "the host's JavaScript environment is closing: the call was not made"
                        .to_owned(),
                );
            }
            rx.await
                .map_err(|_| "the call's answer was dropped by the bridge".to_owned())
        })
    }
}

/// The node executions in progress: what `wopResume` and `wopCancel` reach.
struct Task {
    node: AbortHandle,
    supervisor: AbortHandle,
    calls: Arc<Calls>,
}

static TASKS: Mutex<Option<HashMap<u32, Task>>> = Mutex::new(None);
static NEXT: Mutex<u32> = Mutex::new(0);

fn with_tasks<T>(f: impl FnOnce(&mut HashMap<u32, Task>) -> T) -> T {
    f(lock(&TASKS).get_or_insert_with(HashMap::new))
}

fn done(outcome: &str) -> String {
    format!("{{\"done\":{outcome}}}")
}

fn failed(code: ErrorCode, message: &str) -> String {
    json!({"status": "failure", "error": {"code": code.as_str(), "message": message}}).to_string()
}

/// The index of `schema` among those JavaScript has; a new one is added, and written to `new`
/// (`[index,schema]`).
fn schema_index(known: &mut Vec<Arc<Value>>, schema: &Arc<Value>, new: &mut String) -> usize {
    if let Some(i) = known
        .iter()
        .position(|s| Arc::ptr_eq(s, schema) || **s == **schema)
    {
        return i;
    }
    known.push(Arc::clone(schema));
    let i = known.len() - 1;
    let _ = write!(new, "[{i},{schema}]");
    i
}

/// The step that hands JavaScript call `id` (see the module's docs).
fn call_step(schemas: &mut Vec<Arc<Value>>, id: u32, request: &HostRequest) -> String {
    let mut new = String::new();
    let mut step = String::with_capacity(request.text.len() + 48);
    let _ = write!(step, "{{\"calls\":[{{\"id\":{id},");
    if let Some((_, schema)) = &request.schema {
        let index = schema_index(schemas, schema, &mut new);
        let _ = write!(step, "\"schema\":{index},");
    }
    step.push_str("\"request\":");
    step.push_str(&request.text);
    step.push_str("}]");
    if !new.is_empty() {
        let _ = write!(step, ",\"schemas\":[{new}]");
    }
    step.push('}');
    step
}

fn panic_text(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<&str>()
        .copied()
        .or_else(|| panic.downcast_ref::<String>().map(String::as_str))
        .unwrap_or("a panic payload that is not text")
}

/// `wopStart`: starts one node execution (see [`run_node`] for `request`) that must end within
/// `timeout_ms`, and answers its task id; everything else comes through `on_step`.
pub fn start(
    packs: &'static [Pack],
    request: String,
    timeout_ms: u32,
    on_step: impl StepSink,
) -> u32 {
    let id = {
        let mut next = lock(&NEXT);
        *next = next.wrapping_add(1).max(1);
        *next
    };
    let calls = Arc::new(Calls {
        on_step: Box::new(on_step),
        state: Mutex::default(),
    });
    let runtime = match crate::runtime::handle() {
        Ok(runtime) => runtime,
        Err(why) => {
            calls.send(done(&failed(ErrorCode::NodeFailed, why)));
            return id;
        }
    };
    let handoff = Arc::new(HandOff(Arc::clone(&calls)));
    let deadline = Duration::from_millis(u64::from(timeout_ms.max(1)));
    // Registered before either task can end (the supervisor removes it), under the lock.
    with_tasks(|tasks| {
        let mut node = runtime.spawn(async move { run_node(packs, &request, handoff).await });
        let node_abort = node.abort_handle();
        let supervised = Arc::clone(&calls);
        let supervisor = runtime.spawn(async move {
            let outcome = match tokio::time::timeout(deadline, &mut node).await {
                Ok(Ok(outcome)) => outcome,
                Ok(Err(e)) if e.is_panic() => {
                    let panic = e.into_panic();
                    failed(
                        ErrorCode::NodeFailed,
                        &format!("the node panicked: {}", panic_text(&*panic)),
                    )
                }
                // Cancelled by `wopCancel`: JavaScript gave up on it and waits for nothing.
                Ok(Err(_)) => return,
                Err(_) => {
                    node.abort();
                    failed(
                        ErrorCode::NodeTimeout,
                        &format!("the node did not end within its timeout of {timeout_ms} ms"),
                    )
                }
            };
            with_tasks(|tasks| tasks.remove(&id));
            supervised.send(done(&outcome));
        });
        tasks.insert(
            id,
            Task {
                node: node_abort,
                supervisor: supervisor.abort_handle(),
                calls: Arc::clone(&calls),
            },
        );
    });
    id
}

/// `wopResume`: the answer of call `call` of task `task` (see [`JsCallAi`] for its shape).
/// Answers whether the call was waiting for it (`false`: the call or the execution ended first,
/// as after a timeout; the answer is dropped).
pub fn resume(task: u32, call: u32, answer: String) -> bool {
    let Some(calls) = with_tasks(|tasks| tasks.get(&task).map(|t| Arc::clone(&t.calls))) else {
        return false;
    };
    let waiter = lock(&calls.state).waiting.remove(&call);
    waiter.is_some_and(|tx| tx.send(answer).is_ok())
}

/// `wopCancel`: ends a node execution JavaScript gave up on; no `done` follows. Answers whether
/// it was running.
pub fn cancel(task: u32) -> bool {
    let Some(t) = with_tasks(|tasks| tasks.remove(&task)) else {
        return false;
    };
    t.supervisor.abort();
    t.node.abort();
    true
}

/// The node executions in progress in this process (what a leak test reads).
pub fn in_progress() -> usize {
    with_tasks(|tasks| tasks.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_step_carries_a_new_schema_once() {
        let schema = Arc::new(json!({"type": "object"}));
        let request = HostRequest {
            text: "{\"responseSchema\":0}".to_owned(),
            schema: Some((0, Arc::clone(&schema))),
        };
        let mut known = Vec::new();
        let first: Value = serde_json::from_str(&call_step(&mut known, 1, &request)).expect("JSON");
        assert_eq!(
            first,
            json!({"calls": [{"id": 1, "schema": 0, "request": {"responseSchema": 0}}],
                   "schemas": [[0, {"type": "object"}]]})
        );
        let second: Value =
            serde_json::from_str(&call_step(&mut known, 2, &request)).expect("JSON");
        assert!(second.get("schemas").is_none(), "{second}");
        assert_eq!(second["calls"][0]["schema"], 0);
    }
}
