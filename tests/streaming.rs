//! Streamed calls (`callAIStream`), through the public API as a pack author writes them: the
//! provisional fragments, the one terminal result, restarts on host retries, cancellation by
//! dropping the stream, redelivery and replay, the events, and a host that cannot stream.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use wop_sdk::ai::Provisional;
use wop_sdk::host::{AttemptKey, BoxFuture, FailureToken, Host, HostFailure, RunId};
use wop_sdk::prelude::*;
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorEnvelope, Event, RunEvent,
};
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Scene {
    text: String,
}

/// What a streaming node saw: every provisional item in order, then the terminal item.
#[derive(Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
struct Seen {
    items: Vec<String>,
    /// The completion's output (the scene's text), when the call completed.
    output: Option<String>,
    /// `attempts.count`, read with the proof.
    attempts: Option<u32>,
    failed: bool,
    replay: bool,
}

async fn stream_scene<'run>(
    ctx: &NodeCtx<'run>,
    request: AiRequest<Scene>,
) -> Result<Seen, NodeError<'run>> {
    let mut seen = Seen::default();
    let mut stream = ctx.call_ai_stream(request);
    while let Some(item) = stream.next().await {
        seen.items.push(match item {
            Provisional::Fragment(f) => format!("{}:{}", f.attempt(), f.text()),
            Provisional::Restart { attempt } => format!("restart:{attempt}"),
            Provisional::Replay => "replay".to_owned(),
            _ => "other".to_owned(),
        });
    }
    seen.replay = stream.is_replay();
    match stream.finish().await {
        Ok(completion) => {
            seen.attempts = ctx
                .capabilities()
                .attempts()
                .and_then(|proof| completion.attempts(proof))
                .map(|a| a.count);
            seen.output = Some(completion.into_output()?.text);
        }
        Err(failure) => {
            seen.failed = true;
            ctx.settle_ai_failure(failure).await?;
        }
    }
    Ok(seen)
}

/// One structured streamed call; the input is the prompt.
#[wop_node(
    type_id = "community.test.stream-scene",
    version = "1.0.0",
    max_calls = 3
)]
async fn streamer(ctx: &NodeCtx<'_>, prompt: String) -> Result<Seen, NodeError> {
    stream_scene(ctx, AiRequest::<Scene>::prompt(prompt).max_tokens(100)).await
}

/// The same with host retries off: one provider request, whatever happens.
#[wop_node(
    type_id = "community.test.stream-once",
    version = "1.0.0",
    max_calls = 1,
    retry(max_attempts = 1)
)]
async fn stream_once(ctx: &NodeCtx<'_>, prompt: String) -> Result<Seen, NodeError> {
    stream_scene(ctx, AiRequest::<Scene>::prompt(prompt).max_tokens(100)).await
}

fn host_with(steps: Vec<Step>) -> (LocalHost, ScriptedProvider) {
    let provider = ScriptedProvider::new(steps.into_iter().collect());
    (
        LocalHost::rfc0248().provider(provider.clone()).build(),
        provider,
    )
}

async fn events(host: &LocalHost, run: &RunId) -> Vec<RunEvent> {
    Host::events(host, run).await
}

fn of_kind<'e>(events: &'e [RunEvent], kind: &str) -> Vec<&'e RunEvent> {
    events.iter().filter(|e| e.kind() == kind).collect()
}

#[tokio::test]
async fn a_stream_gives_fragments_then_the_typed_result_and_output_chunk_events() {
    let (host, provider) = host_with(vec![Step::chunks(
        ["{\"text\": \"Mara", " climbs the", " stairs\"}"],
        12,
    )]);
    let out = host.run(&Streamer, json!("the stairs")).await;
    let seen: Seen = serde_json::from_value(out.result.expect("completed")).expect("Seen");
    assert_eq!(
        seen.items,
        ["1:{\"text\": \"Mara", "1: climbs the", "1: stairs\"}"]
    );
    assert_eq!(seen.output.as_deref(), Some("Mara climbs the stairs"));
    assert_eq!(seen.attempts, Some(1));
    assert!(!seen.failed && !seen.replay);
    assert_eq!(provider.request_count(), 1);
    assert_eq!(out.calls[0].status, "ok");
    assert_eq!(out.calls[0].charged, 1);

    // One `output.chunk` per fragment with the fields the v2 `outputChunk` payload requires,
    // then the closing one (`isLast: true`, the finish reason and model in `meta`).
    let log = events(&host, &out.run_id).await;
    let chunks = of_kind(&log, "output.chunk");
    assert_eq!(chunks.len(), 4, "{log:#?}");
    for c in &chunks {
        for field in ["nodeId", "runId", "chunk", "isLast"] {
            assert!(
                c.payload().get(field).is_some(),
                "{field} in {:?}",
                c.payload()
            );
        }
        assert_eq!(c.str("runId").as_deref(), Some(out.run_id.as_str()));
        assert_eq!(c.str("nodeId").as_deref(), Some("main"));
        // Every other key is the schema's (`meta`) or under its `x-` extension rule.
        let payload = c.payload();
        let keys = payload.as_object().expect("object").keys();
        for k in keys {
            assert!(
                ["nodeId", "runId", "chunk", "isLast", "meta"].contains(&k.as_str())
                    || k.starts_with("x-"),
                "{k}"
            );
        }
    }
    let texts: Vec<String> = chunks.iter().filter_map(|c| c.str("chunk")).collect();
    assert_eq!(
        texts,
        ["{\"text\": \"Mara", " climbs the", " stairs\"}", ""]
    );
    let last = chunks[3];
    assert_eq!(last.payload()["isLast"], json!(true));
    assert_eq!(
        last.payload()["meta"],
        json!({"finishReason": "stop", "model": "mock-1"})
    );
    assert!(
        chunks[..3]
            .iter()
            .all(|c| c.payload()["isLast"] == json!(false))
    );
    // The usage event comes after the fragments it accounts for.
    let usage_at = log
        .iter()
        .position(|e| e.kind() == "provider.usage")
        .expect("usage");
    let last_fragment_at = log
        .iter()
        .position(|e| e.str("chunk").as_deref() == Some(" stairs\"}"))
        .expect("fragment");
    assert!(last_fragment_at < usage_at);
}

#[tokio::test]
async fn a_stream_that_fails_after_fragments_is_a_failure() {
    // The connection closes after two chunks: no answer, the call fails (ambiguous: never
    // repeated, never charged), whatever the fragments said.
    let (host, provider) = host_with(vec![
        Step::chunks(["{\"text\": \"Once", " upon"], 0).then(Step::Cut),
        Step::json(&json!({"text": "never sent"}), 5),
    ]);
    let out = host.run(&Streamer, json!("a tale")).await;
    let seen: Seen = serde_json::from_value(out.result.expect("the node settles")).expect("Seen");
    assert_eq!(seen.items, ["1:{\"text\": \"Once", "1: upon"]);
    assert!(seen.failed);
    assert_eq!(seen.output, None);
    assert_eq!(
        provider.request_count(),
        1,
        "an ambiguous dispatch is never repeated"
    );
    assert_eq!(
        out.calls[0].status,
        wop_sdk::wire::ErrorCode::UpstreamUnavailable.as_str()
    );
    assert!(
        host.ledger(Some(&out.run_id))
            .await
            .expect("ledger")
            .is_empty()
    );
    let log = events(&host, &out.run_id).await;
    let chunks = of_kind(&log, "output.chunk");
    let last = chunks.last().expect("a closing chunk");
    assert_eq!(last.payload()["isLast"], json!(true));
    assert_eq!(last.payload()["x-failed"], json!(true));
    assert!(last.payload().get("meta").is_none());
    assert!(of_kind(&log, "provider.usage").is_empty());

    // A provider error after some chunks, with host retries off: the same failure, and no
    // restart (there is no second request).
    let (host, provider) = host_with(vec![
        Step::chunks(["{\"text\": \"Half"], 0).then(Step::Error("503 mid-stream".into())),
    ]);
    let out = host.run(&StreamOnce, json!("a tale")).await;
    let seen: Seen = serde_json::from_value(out.result.expect("the node settles")).expect("Seen");
    assert_eq!(seen.items, ["1:{\"text\": \"Half"]);
    assert!(seen.failed);
    assert_eq!(provider.request_count(), 1);
    // The failure the node sees is the opaque one: its cause stays in the host's diagnostics.
    let diagnostics = host.diagnostics_of(&out.run_id);
    assert!(
        diagnostics
            .iter()
            .any(|d| format!("{d:?}").contains("503 mid-stream")),
        "{diagnostics:?}"
    );
}

#[tokio::test]
async fn a_retried_stream_marks_the_restart_and_counts_every_request() {
    // Attempt 1 streams prose (not JSON): the host retries. Attempt 2 declares 150 output tokens
    // on a budget of 100: the mock serves it truncated, and the host retries with a grown budget.
    // Attempt 3 is the result.
    let (host, provider) = host_with(vec![
        Step::chunks(["Sure! Here", " is the scene:"], 8),
        Step::chunks(
            ["{\"text\": \"Mara climbs", " and climbs and climbs\"}"],
            150,
        ),
        Step::chunks(["{\"text\": \"Mara", " climbs\"}"], 20),
    ]);
    let out = host.run(&Streamer, json!("the stairs")).await;
    let seen: Seen = serde_json::from_value(out.result.expect("completed")).expect("Seen");
    // The truncated reply was cut by the mock to half its bytes: the fragments a streamed call
    // received are those of the reply as served.
    let truncated = "{\"text\": \"Mara climbs and climbs and climbs\"}";
    let half = &truncated[..truncated.len() / 2];
    let (first, rest) = half.split_at("{\"text\": \"Mara climbs".len());
    let mut expected = vec![
        "1:Sure! Here".to_owned(),
        "1: is the scene:".to_owned(),
        "restart:2".to_owned(),
        format!("2:{first}"),
    ];
    if !rest.is_empty() {
        expected.push(format!("2:{rest}"));
    }
    expected.extend([
        "restart:3".to_owned(),
        "3:{\"text\": \"Mara".to_owned(),
        "3: climbs\"}".to_owned(),
    ]);
    assert_eq!(seen.items, expected);
    assert_eq!(seen.output.as_deref(), Some("Mara climbs"));
    // `attempts.count` counts every provider request, as for a plain call.
    assert_eq!(seen.attempts, Some(3));
    assert_eq!(provider.request_count(), 3);
    assert_eq!(out.calls[0].requests, Some(3));
    assert_eq!(out.calls[0].charged, 3);

    // The log tells the discarded attempts apart: `x-attempt` on each chunk, and an
    // `envelope.retry-attempted` before each restart's chunks.
    let log = events(&host, &out.run_id).await;
    let order: Vec<String> = log
        .iter()
        .filter_map(|e| match e.kind() {
            "output.chunk" if e.payload()["isLast"] == json!(false) => {
                Some(format!("chunk@{}", e.u64("x-attempt").unwrap_or(0)))
            }
            "envelope.retry-attempted" => Some(format!("retry@{}", e.u64("attempt").unwrap_or(0))),
            _ => None,
        })
        .collect();
    let chunks_of_2 = if rest.is_empty() { 1 } else { 2 };
    let mut want = vec!["chunk@1", "chunk@1", "retry@2"];
    want.extend(std::iter::repeat_n("chunk@2", chunks_of_2));
    want.extend(["retry@3", "chunk@3", "chunk@3"]);
    assert_eq!(order, want);
}

/// Reads one fragment, then drops the stream (the node gave up on the call), then makes a plain
/// call with what is left of `max_calls = 4`.
#[wop_node(
    type_id = "community.test.stream-dropper",
    version = "1.0.0",
    max_calls = 4
)]
async fn dropper(ctx: &NodeCtx<'_>, prompt: String) -> Result<Vec<u32>, NodeError> {
    let mut stream = ctx.call_ai_stream(AiRequest::<Scene>::prompt(prompt).max_tokens(100));
    let first = stream.next().await;
    if !matches!(first, Some(Provisional::Fragment(_))) {
        return Err(NodeError::new(format!(
            "expected a fragment, got {first:?}"
        )));
    }
    let during = ctx.budget();
    drop(stream);
    let after = ctx.budget();
    let plain = ctx.call_ai(AiRequest::<Text>::prompt("short")).await?;
    let _ = plain.into_output()?;
    Ok(vec![during.reserved, after.reserved, after.used])
}

#[tokio::test]
async fn dropping_the_stream_midway_leaks_nothing_and_charges_once() {
    let (host, provider) = host_with(vec![
        // The provider would send three chunks; the node stops reading after the first.
        Step::chunks(["{\"text\": ", "\"Mara", " climbs\"}"], 12),
        Step::text("done", 1),
    ]);
    let out = host.run(&Dropper, json!("the stairs")).await;
    let figures: Vec<u32> =
        serde_json::from_value(out.result.expect("completed")).expect("figures");
    // While streaming, the worst case (3) was reserved; dropped, it was charged once, as the
    // worst case, and released.
    assert_eq!(figures, [3, 0, 3]);
    assert_eq!(out.calls.len(), 2, "{:?}", out.calls);
    assert_eq!(out.calls[0].status, "cancelled");
    assert_eq!(out.calls[0].charged, 3);
    assert_eq!(out.calls[1].status, "ok");
    assert_eq!(out.budget.used, 4);
    assert_eq!(out.budget.reserved, 0);
    // Nothing left in the host, and the dispatch given up mid-stream was not charged.
    assert_eq!(host.calls_in_flight(), 0);
    assert_eq!(host.active_runs(), 0);
    assert_eq!(provider.request_count(), 2);
    let ledger = host.ledger(Some(&out.run_id)).await.expect("ledger");
    assert_eq!(ledger.len(), 1, "{ledger:?}");
    assert_eq!(ledger[0].call_index, 1);
}

#[tokio::test]
async fn redelivery_after_a_streamed_completion_replays_without_a_provider_request() {
    let (host, provider) = host_with(vec![Step::chunks(["{\"text\": \"Mara", " climbs\"}"], 12)]);
    let first = host.run(&Streamer, json!("the stairs")).await;
    let seen: Seen = serde_json::from_value(first.result.expect("completed")).expect("Seen");
    assert_eq!(seen.items.len(), 2);
    assert_eq!(provider.request_count(), 1);
    let chunks_before = of_kind(&events(&host, &first.run_id).await, "output.chunk").len();

    let again = host
        .redeliver(&first.run_id, "main", &Streamer, json!("the stairs"))
        .await;
    let replayed: Seen = serde_json::from_value(again.result.expect("replayed")).expect("Seen");
    // No fragment, the replay marker, the same terminal result; no provider request, no charge.
    assert_eq!(replayed.items, ["replay"]);
    assert!(replayed.replay);
    assert_eq!(replayed.output, seen.output);
    assert_eq!(
        replayed.attempts,
        Some(1),
        "the recorded `attempts`, not a new count"
    );
    assert_eq!(provider.request_count(), 1, "never a new generation");
    let ledger = host.ledger(Some(&first.run_id)).await.expect("ledger");
    assert_eq!(ledger.len(), 1);
    // A replay makes no new chunks.
    let chunks_after = of_kind(&events(&host, &first.run_id).await, "output.chunk").len();
    assert_eq!(chunks_after, chunks_before);

    // A replay fork of the run: the same.
    let fork = host
        .replay(&first.run_id, "main", &Streamer, json!("the stairs"))
        .await;
    let forked: Seen = serde_json::from_value(fork.result.expect("replayed")).expect("Seen");
    assert_eq!(forked.items, ["replay"]);
    assert_eq!(forked.output, seen.output);
    assert_eq!(provider.request_count(), 1);
}

/// A host that cannot stream: it implements only what the trait requires (the local host behind
/// it answers), so `call_ai_stream` is the trait's default.
struct Plain(LocalHost);

impl Host for Plain {
    fn capability_document(&self) -> Arc<CapabilityDocument> {
        self.0.capability_document()
    }
    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        self.0.call_ai(key, request)
    }
    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        self.0.settle_ai_failure(run, failure)
    }
    fn record_event<'a>(&'a self, run: &'a RunId, event: Event) -> BoxFuture<'a, ()> {
        self.0.record_event(run, event)
    }
    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        Host::events(&self.0, run)
    }
}

#[tokio::test]
async fn on_a_host_that_cannot_stream_the_terminal_item_is_the_only_item() {
    let (local, provider) = host_with(vec![Step::chunks(["{\"text\": \"Mara", " climbs\"}"], 12)]);
    let plain: Arc<dyn Host> = Arc::new(Plain(local.clone()));
    let out = local
        .run_on(plain, &Streamer, json!("the stairs"), Default::default())
        .await;
    let seen: Seen = serde_json::from_value(out.result.expect("completed")).expect("Seen");
    assert!(seen.items.is_empty(), "{:?}", seen.items);
    assert_eq!(seen.output.as_deref(), Some("Mara climbs"));
    assert_eq!(seen.attempts, Some(1));
    assert_eq!(provider.request_count(), 1);
    // A plain call made no chunk events.
    let log = events(&local, &out.run_id).await;
    assert!(of_kind(&log, "output.chunk").is_empty());
}

#[wop_node(type_id = "community.test.stream-finish", version = "1.0.0")]
async fn finisher(ctx: &NodeCtx<'_>, prompt: String) -> Result<String, NodeError> {
    let stream = ctx.call_ai_stream(AiRequest::<Scene>::prompt(prompt));
    Ok(stream.finish().await?.into_output()?.text)
}

#[tokio::test]
async fn finishing_without_reading_discards_the_fragments_and_gives_the_result() {
    let (host, _) = host_with(vec![Step::chunks(["{\"text\": \"Mara", " climbs\"}"], 12)]);
    let out = host.run(&Finisher, json!("the stairs")).await;
    assert_eq!(out.result.expect("completed"), json!("Mara climbs"));
}
