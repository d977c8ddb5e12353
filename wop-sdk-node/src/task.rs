//! A node execution driven from the host's JavaScript thread.
//!
//! The node's future is polled only when JavaScript calls in: `start` polls it first; each time
//! it awaits the host, the request is handed out (`calls`), and JavaScript makes the
//! `ctx.callAI` call, then hands the answer back with `resume`, which polls again. No thread is
//! started and nothing crosses threads: a call costs two synchronous N-API calls and the JSON of
//! its request and answer. A response schema crosses once per node execution: each call names
//! it by its index, and JavaScript gives the call a copy of it.
//!
//! The one limit: a node may await only its `ctx` (calls, settling). Anything else (a timer, a
//! socket) has nothing to wake it on the host's thread; such a node fails `node_failed` with a
//! message that says so, instead of hanging.

use crate::host::{HostRequest, JsCallAi};
use crate::run::run_node;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, Waker};
use wop_sdk::host::BoxFuture;
use wop_sdk::manifest::Pack;
use wop_sdk::wire::ErrorCode;

#[derive(Default)]
struct Calls {
    next_id: u32,
    /// Made by the node since the last answer to JavaScript: (id, request).
    outgoing: Vec<(u32, HostRequest)>,
    /// The response schemas handed to JavaScript in this node execution, by index.
    schemas: Vec<Arc<Value>>,
    /// Handed out, not yet answered.
    waiting: BTreeSet<u32>,
    /// Answered, not yet taken by the node.
    answers: BTreeMap<u32, String>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// `JsCallAi` as a hand-off: the request goes out at the next answer to JavaScript, the answer
/// comes in with `resume`.
struct HandOff(Arc<Mutex<Calls>>);

enum CallState {
    Unsent(HostRequest),
    Waiting(u32),
    Done,
}

struct CallFuture {
    calls: Arc<Mutex<Calls>>,
    state: CallState,
}

impl Future for CallFuture {
    type Output = Result<String, String>;

    fn poll(mut self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let mut calls = lock(&this.calls);
        match std::mem::replace(&mut this.state, CallState::Done) {
            CallState::Unsent(request) => {
                calls.next_id += 1;
                let id = calls.next_id;
                calls.outgoing.push((id, request));
                calls.waiting.insert(id);
                this.state = CallState::Waiting(id);
                Poll::Pending
            }
            CallState::Waiting(id) => match calls.answers.remove(&id) {
                Some(answer) => Poll::Ready(Ok(answer)),
                None => {
                    this.state = CallState::Waiting(id);
                    Poll::Pending
                }
            },
            CallState::Done => Poll::Ready(Err("the call was polled after it ended".to_owned())),
        }
    }
}

impl JsCallAi for HandOff {
    fn call(&self, request: HostRequest) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(CallFuture {
            calls: Arc::clone(&self.0),
            state: CallState::Unsent(request),
        })
    }
}

struct Task {
    future: Pin<Box<dyn Future<Output = String> + Send>>,
    calls: Arc<Mutex<Calls>>,
}

/// The node executions in progress, by task id.
#[derive(Default)]
struct Tasks {
    next: u32,
    running: BTreeMap<u32, Task>,
}

static TASKS: Mutex<Tasks> = Mutex::new(Tasks {
    next: 0,
    running: BTreeMap::new(),
});

fn done(outcome: &str) -> String {
    format!("{{\"done\":{outcome}}}")
}

fn node_failed(message: &str) -> String {
    done(
        &json!({"status": "failure",
                "error": {"code": ErrorCode::NodeFailed.as_str(), "message": message}})
        .to_string(),
    )
}

/// The index of `schema` among those JavaScript has; a new one is added, and written to `new`
/// (`[index,schema]`, comma-separated).
fn schema_index(known: &mut Vec<Arc<Value>>, schema: &Arc<Value>, new: &mut String) -> usize {
    if let Some(i) = known
        .iter()
        .position(|s| Arc::ptr_eq(s, schema) || **s == **schema)
    {
        return i;
    }
    known.push(Arc::clone(schema));
    let i = known.len() - 1;
    let _ = write!(
        new,
        "{}[{i},{schema}]",
        if new.is_empty() { "" } else { "," }
    );
    i
}

/// The step that hands JavaScript the calls made since the last one: `{"task": id, "schemas"?:
/// [[index, schema]], "calls": [{"id", "schema"?, "request"}]}`. A call with `schema` has the
/// placeholder `0` as its request's `responseSchema`; `schemas` holds those JavaScript has not
/// had yet in this node execution.
fn calls_step(id: u32, calls: &mut Calls) -> String {
    let outgoing = std::mem::take(&mut calls.outgoing);
    let mut new = String::new();
    let mut list = String::with_capacity(outgoing.iter().map(|(_, r)| r.text.len() + 32).sum());
    for (i, (call, request)) in outgoing.iter().enumerate() {
        let _ = write!(list, "{}{{\"id\":{call},", if i > 0 { "," } else { "" });
        if let Some((_, schema)) = &request.schema {
            let index = schema_index(&mut calls.schemas, schema, &mut new);
            let _ = write!(list, "\"schema\":{index},");
        }
        list.push_str("\"request\":");
        list.push_str(&request.text);
        list.push('}');
    }
    let mut step = String::with_capacity(list.len() + new.len() + 48);
    let _ = write!(step, "{{\"task\":{id},");
    if !new.is_empty() {
        let _ = write!(step, "\"schemas\":[{new}],");
    }
    let _ = write!(step, "\"calls\":[{list}]}}");
    step
}

/// Polls `task` once and answers JavaScript: `{"done": <outcome>}`, or the calls made since the
/// last answer ([`calls_step`]).
fn step(id: u32, mut task: Task) -> String {
    let polled = catch_unwind(AssertUnwindSafe(|| {
        task.future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
    }));
    match polled {
        Err(panic) => {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| (*s).to_owned())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_default();
            node_failed(&format!("the node panicked: {what}"))
        }
        Ok(Poll::Ready(outcome)) => done(&outcome),
        Ok(Poll::Pending) => {
            let answer = {
                let mut calls = lock(&task.calls);
                if calls.outgoing.is_empty() && calls.waiting.is_empty() {
                    return node_failed(
                        "the node awaited something other than its ctx (a timer, a socket, …): on \
                         a JavaScript host the bridge drives a node from the host's thread, \
                         through its ctx only",
                    );
                }
                calls_step(id, &mut calls)
            };
            lock(&TASKS).running.insert(id, task);
            answer
        }
    }
}

/// `wopStart`: starts one node execution (see [`run_node`] for `request`) and polls it.
pub fn start(packs: &'static [Pack], request: String) -> String {
    let calls = Arc::new(Mutex::new(Calls::default()));
    let handoff = Arc::new(HandOff(Arc::clone(&calls)));
    let future = Box::pin(async move { run_node(packs, &request, handoff).await });
    let id = {
        let mut tasks = lock(&TASKS);
        tasks.next = tasks.next.wrapping_add(1);
        tasks.next
    };
    step(id, Task { future, calls })
}

/// `wopResume`: the answer of call `call` of task `task` (see [`JsCallAi`] for its shape).
pub fn resume(task: u32, call: u32, answer: String) -> String {
    let Some(running) = lock(&TASKS).running.remove(&task) else {
        return node_failed(&format!("no node execution {task} is in progress"));
    };
    {
        let mut calls = lock(&running.calls);
        if !calls.waiting.remove(&call) {
            drop(calls);
            lock(&TASKS).running.insert(task, running);
            return json!({"error": format!("call {call} of task {task} is not awaiting an answer")})
                .to_string();
        }
        calls.answers.insert(call, answer);
    }
    step(task, running)
}

/// `wopCancel`: drops a node execution JavaScript gave up on. Answers whether it was running.
pub fn cancel(task: u32) -> bool {
    lock(&TASKS).running.remove(&task).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;
    use std::sync::OnceLock;
    use wop_sdk::{AiRequest, NodeCtx, NodeError, Text, wop_node};

    #[wop_node(type_id = "community.test.two-calls", version = "1.0.0")]
    async fn two_calls(ctx: &NodeCtx<'_>, prompt: String) -> Result<String, NodeError> {
        let a = ctx
            .call_ai(AiRequest::<Text>::prompt(prompt.clone()))
            .await?;
        let b = ctx.call_ai(AiRequest::<Text>::prompt(prompt)).await?;
        let (Ok(Text(a)), Ok(Text(b))) = (a.into_output(), b.into_output()) else {
            return Err(NodeError::new("no text"));
        };
        Ok(format!("{a}+{b}"))
    }

    #[derive(serde::Deserialize, schemars::JsonSchema)]
    struct Line {
        text: String,
    }

    #[wop_node(type_id = "community.test.two-lines", version = "1.0.0")]
    async fn two_lines(ctx: &NodeCtx<'_>, prompt: String) -> Result<String, NodeError> {
        let mut lines = Vec::new();
        for _ in 0..2 {
            let c = ctx
                .call_ai(AiRequest::<Line>::prompt(prompt.clone()))
                .await?;
            lines.push(c.into_output().map(|l| l.text).unwrap_or_default());
        }
        Ok(lines.join("+"))
    }

    fn packs() -> &'static [Pack] {
        static PACKS: OnceLock<Vec<Pack>> = OnceLock::new();
        PACKS.get_or_init(|| {
            vec![
                Pack::new("community.test.pack", "1.0.0")
                    .node(TwoCalls)
                    .node(TwoLines),
            ]
        })
    }

    fn request() -> String {
        json!({"typeId": "community.test.two-calls", "runId": "r", "nodeId": "n", "inputs": "hi",
               "defaults": {"provider": "mock", "model": "m"}})
        .to_string()
    }

    fn parse(s: &str) -> Value {
        serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
    }

    #[test]
    fn a_node_runs_call_by_call_and_leaves_nothing_behind() {
        let first = parse(&start(packs(), request()));
        let task = u32::try_from(first["task"].as_u64().expect("a task")).expect("u32");
        assert_eq!(first["calls"][0]["request"]["messages"][0]["content"], "hi");
        let answer = json!({"result": {"content": "one"}}).to_string();
        let second = parse(&resume(task, 1, answer));
        assert_eq!(second["calls"][0]["id"], 2);
        // An answer to a call that is not waiting is refused; the task goes on.
        assert!(parse(&resume(task, 1, "{}".to_owned()))["error"].is_string());
        let answer = json!({"result": {"content": "two"}}).to_string();
        let third = parse(&resume(task, 2, answer));
        assert_eq!(
            third["done"],
            json!({"status": "success", "outputs": "one+two"})
        );
        assert!(!cancel(task), "an ended task is gone");
    }

    #[test]
    fn a_cancelled_task_is_dropped() {
        let first = parse(&start(packs(), request()));
        let task = u32::try_from(first["task"].as_u64().expect("a task")).expect("u32");
        assert!(cancel(task));
        assert_eq!(
            parse(&resume(task, 1, "{}".to_owned()))["done"]["error"]["code"],
            ErrorCode::NodeFailed.as_str()
        );
    }

    #[test]
    fn a_response_schema_crosses_once_per_node_execution() {
        let request = request().replace("two-calls", "two-lines");
        let first = parse(&start(packs(), request));
        let task = u32::try_from(first["task"].as_u64().expect("a task")).expect("u32");
        let schema = &first["schemas"][0];
        assert_eq!(schema[0], 0);
        assert_eq!(schema[1]["properties"]["text"]["type"], "string", "{first}");
        let call = &first["calls"][0];
        assert_eq!(
            (&call["schema"], &call["request"]["responseSchema"]),
            (&json!(0), &json!(0))
        );
        let answer = |t: &str| json!({"result": {"data": {"text": t}}}).to_string();
        let second = parse(&resume(task, 1, answer("a")));
        // The second call of the same output type names the schema JavaScript has.
        assert!(second.get("schemas").is_none(), "{second}");
        assert_eq!(second["calls"][0]["schema"], 0);
        let third = parse(&resume(task, 2, answer("b")));
        assert_eq!(
            third["done"],
            json!({"status": "success", "outputs": "a+b"})
        );
    }
}
