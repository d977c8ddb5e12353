//! The Rust side of the Node bridge, without Node: Book AI's `draft-scene` driven call by call
//! through `wop_sdk_node::{start, resume}` (what the addon's `wopStart`/`wopResume` run: the
//! node on the addon's runtime, its steps handed to this thread through a channel where the
//! addon has JavaScript's thread-safe function), each call answered at once with an RFC 0248
//! result, with 1 and with 4 scenes (one call each);
//! beside it, the same node on a `Host` that answers in Rust with the same result as a value
//! (the runtime alone: no JSON text, no bridge).
//!
//! `cargo bench --bench node_bridge` (see BENCHMARKS.md §6): with the harness's figures for the
//! whole path (N-API and the generated index.mjs included), it splits the bridge's cost per call
//! into the runtime's share and the crossing's.

use book_ai::pack;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::future::Future;
use std::hint::black_box;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, Waker};
use wop_sdk::RunId;
use wop_sdk::host::{AttemptKey, BoxFuture, FailureToken, Host, HostFailure};
use wop_sdk::manifest::Pack;
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorEnvelope, Event, RunEvent,
};

fn packs() -> &'static [Pack] {
    static PACKS: OnceLock<Vec<Pack>> = OnceLock::new();
    PACKS.get_or_init(|| vec![pack::pack()])
}

fn request(scenes: usize) -> String {
    let beats: Vec<String> = (0..scenes).map(|i| format!("beat {i}")).collect();
    json!({
        "typeId": "community.demo.bookai.draft-scene", "runId": "r", "nodeId": "draft-1",
        "inputs": {"chapter": {"number": 1, "title": "T", "characters": ["Mara Quill"], "scenes": beats},
                   "minWords": 1},
        "defaults": {"provider": "mock", "model": "mock-1"},
        "capabilities": {"aiProviders": {"providers": ["mock"],
                         "callAccounting": {"attempts": true, "retryPolicy": true}}},
    })
    .to_string()
}

const ANSWER: &str = r#"{"result":{"data":{"text":"Mara Quill waited."},"usage":{"inputTokens":1,"outputTokens":1},"finishReason":"stop","model":"mock-1","attemptId":"a-1","attempts":{"count":1,"outputTokens":1,"usageComplete":true,"structuredOutput":"prompt"}}}"#;

/// The number after `key` in a step (the ids are the first of their kind in it).
fn number_after(step: &str, key: &str) -> u32 {
    let at = step.find(key).expect("the key") + key.len();
    let digits: String = step[at..]
        .chars()
        .take_while(char::is_ascii_digit)
        .collect();
    digits.parse().expect("a number")
}

/// The steps of the executions this bench starts, as JavaScript's `onStep` would get them.
struct ToChannel(Sender<String>);

impl wop_sdk_node::StepSink for ToChannel {
    fn send(&self, step: String) -> bool {
        self.0.send(step).is_ok()
    }
}

/// One node execution, answering every call at once; whether it succeeded. The steps are not
/// parsed (JavaScript does that in the real path): the ids are read off the text.
fn drive(request: &str) -> bool {
    let (tx, rx): (Sender<String>, Receiver<String>) = channel();
    let task = wop_sdk_node::start(packs(), request.to_owned(), 60_000, ToChannel(tx));
    loop {
        let step = rx.recv().expect("the execution sends `done` at its end");
        if step.starts_with("{\"done\"") {
            // `{"done":{"outputs":…,"status":"success"}}`: the outcome's keys are in order.
            return step.ends_with("\"status\":\"success\"}}");
        }
        let call = number_after(&step, "\"id\":");
        assert!(wop_sdk_node::resume(task, call, ANSWER.to_owned()));
    }
}

/// A host that answers every call at once, in Rust.
struct InRust {
    document: CapabilityDocument,
    answer: CallAiResult,
}

impl Host for InRust {
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        Arc::new(self.document.clone())
    }
    fn call_ai<'a>(
        &'a self,
        _key: &'a AttemptKey,
        _request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move { Ok(self.answer.clone()) })
    }
    fn settle_ai_failure<'a>(
        &'a self,
        _run: &'a RunId,
        _failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        Box::pin(async { Ok(()) })
    }
    fn record_event<'a>(&'a self, _run: &'a RunId, _event: Event) -> BoxFuture<'a, ()> {
        Box::pin(async {})
    }
    fn events<'a>(&'a self, _run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        Box::pin(async { Vec::new() })
    }
}

/// The same node on `InRust`: every future is ready, so one poll runs it.
fn in_rust(host: &Arc<InRust>, input: &Value) -> bool {
    let node = packs()[0]
        .find("community.demo.bookai.draft-scene")
        .expect("node");
    let host: Arc<dyn Host> = host.clone();
    let mut run = Box::pin(wop_sdk::node::execute(
        host,
        RunId::new("r"),
        "draft-1",
        node,
        input.clone(),
    ));
    match run.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(outcome) => outcome.result.is_ok(),
        Poll::Pending => false,
    }
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("bridge_rust_side");
    let answer: Value = serde_json::from_str(ANSWER).expect("answer");
    for scenes in [1usize, 4] {
        let request = request(scenes);
        assert!(drive(&request));
        group.bench_with_input(BenchmarkId::new("draft", scenes), &request, |b, r| {
            b.iter(|| black_box(drive(r)));
        });
        let parsed: Value = serde_json::from_str(&request).expect("request");
        let host = Arc::new(InRust {
            document: CapabilityDocument::from_json(&parsed["capabilities"]).expect("caps"),
            answer: CallAiResult::from_json(&answer["result"], true).expect("a result"),
        });
        assert!(in_rust(&host, &parsed["inputs"]));
        group.bench_with_input(
            BenchmarkId::new("runtime_alone", scenes),
            &parsed["inputs"],
            |b, input| b.iter(|| black_box(in_rust(&host, input))),
        );
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
