//! Streamed calls against an OpenAI-compatible server on 127.0.0.1 (`tests/support/
//! openai_server.rs`): the provider asks for server-sent events, hands each delta on as a
//! fragment, reads the usage from the final chunk when the server sends it, and fails a stream
//! that breaks off; through the local host as a pack author streams a call.

use wop_sdk_test_support::openai_server as server;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use server::{Answer, Server};
use wop_sdk::ai::Provisional;
use wop_sdk::prelude::*;
use wop_sdk_host::local::LocalHost;
use wop_sdk_host::provider::openai::{OpenAiConfig, OpenAiProvider};

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Scene {
    text: String,
}

#[derive(Debug, Default, Deserialize, Serialize, JsonSchema, PartialEq)]
struct Seen {
    items: Vec<String>,
    output: Option<String>,
    attempts: Option<u32>,
    output_tokens: Option<u64>,
    failed: bool,
}

#[wop_node(
    type_id = "community.test.openai-stream",
    version = "1.0.0",
    max_calls = 3
)]
async fn streamer(ctx: &NodeCtx<'_>, prompt: String) -> Result<Seen, NodeError> {
    let mut seen = Seen::default();
    let mut stream = ctx.call_ai_stream(AiRequest::<Scene>::prompt(prompt).max_tokens(100));
    while let Some(item) = stream.next().await {
        seen.items.push(match item {
            Provisional::Fragment(f) => format!("{}:{}", f.attempt(), f.text()),
            Provisional::Restart { attempt } => format!("restart:{attempt}"),
            Provisional::Replay => "replay".to_owned(),
            _ => "other".to_owned(),
        });
    }
    match stream.finish().await {
        Ok(completion) => {
            let attempts = ctx
                .capabilities()
                .attempts()
                .and_then(|proof| completion.attempts(proof));
            seen.attempts = attempts.map(|a| a.count);
            seen.output_tokens = attempts.and_then(|a| a.output_tokens);
            seen.output = Some(completion.into_output()?.text);
        }
        Err(failure) => {
            seen.failed = true;
            ctx.settle_ai_failure(failure).await?;
        }
    }
    Ok(seen)
}

/// The streamed answer of [`PIECES`]: the server's own SSE writer.
fn sse(pieces: &[&str], finish: &str, usage: Option<(u64, u64)>) -> Vec<u8> {
    match Answer::stream(pieces, finish, usage) {
        Answer::Http { body, .. } => body,
        _ => Vec::new(),
    }
}

fn streamed(body: Vec<u8>) -> Answer {
    Answer::Http {
        status: 200,
        headers: vec![("content-type".into(), "text/event-stream".into())],
        body,
    }
}

fn host(server: &Server) -> LocalHost {
    let config = OpenAiConfig::new(&server.base_url(), "test-model").expect("config");
    OpenAiProvider::new(config)
        .expect("provider")
        .local_host()
        .build()
}

async fn run(host: &LocalHost) -> (Seen, wop_sdk::node::NodeOutcome) {
    let out = host.run(&Streamer, json!("the stairs")).await;
    let seen =
        serde_json::from_value(out.result.clone().expect("the node completes")).expect("Seen");
    (seen, out)
}

const PIECES: [&str; 3] = ["{\"text\": \"Mara", " climbs the", " stairs\"}"];

#[tokio::test]
async fn a_streamed_call_reads_server_sent_events_as_fragments() {
    let server = Server::start().await;
    server.push([streamed(sse(&PIECES, "stop", Some((12, 7))))]);
    let host = host(&server);
    let (seen, out) = run(&host).await;
    assert_eq!(
        seen.items,
        ["1:{\"text\": \"Mara", "1: climbs the", "1: stairs\"}"]
    );
    assert_eq!(seen.output.as_deref(), Some("Mara climbs the stairs"));
    assert_eq!(seen.attempts, Some(1));
    assert_eq!(seen.output_tokens, Some(7), "usage from the final chunk");
    assert_eq!(out.calls[0].usage_complete, Some(true));
    // What the server was asked: a stream, with the usage chunk, as server-sent events.
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].body["stream"], json!(true));
    assert_eq!(
        received[0].body["stream_options"],
        json!({"include_usage": true})
    );
    assert_eq!(received[0].header("accept"), Some("text/event-stream"));
    assert!(
        received[0].body["response_format"].is_object(),
        "still a structured request"
    );
}

#[tokio::test]
async fn without_a_usage_chunk_the_usage_is_unknown() {
    let server = Server::start().await;
    server.push([streamed(sse(&PIECES, "stop", None))]);
    let (seen, out) = run(&host(&server)).await;
    assert_eq!(seen.output.as_deref(), Some("Mara climbs the stairs"));
    assert_eq!(seen.attempts, Some(1));
    assert_eq!(out.calls[0].usage_complete, Some(false));
}

#[tokio::test]
async fn a_stream_broken_off_mid_body_fails_after_its_fragments() {
    let server = Server::start().await;
    let whole = sse(&PIECES, "stop", Some((12, 7)));
    // Two events arrive (the role chunk and the first piece), then the connection closes.
    let text = String::from_utf8(whole.clone()).expect("utf-8");
    let cut = text
        .match_indices("\n\n")
        .nth(1)
        .map(|(i, _)| i + 2)
        .expect("two events");
    server.push([Answer::CloseMidStream {
        declared: whole.len(),
        body: whole[..cut].to_vec(),
    }]);
    let (seen, out) = run(&host(&server)).await;
    assert_eq!(seen.items, ["1:{\"text\": \"Mara"]);
    assert!(seen.failed);
    assert_eq!(
        out.calls[0].status,
        wop_sdk::wire::ErrorCode::UpstreamUnavailable.as_str()
    );
    assert_eq!(
        server.received().len(),
        1,
        "an ambiguous dispatch is never repeated"
    );
}

#[tokio::test]
async fn a_rate_limited_stream_is_retried_with_a_restart() {
    let server = Server::start().await;
    server.push([
        Answer::json(429, &json!({"error": {"message": "slow down"}})).header("retry-after", "0"),
        streamed(sse(&PIECES, "stop", Some((12, 7)))),
    ]);
    let (seen, _) = run(&host(&server)).await;
    assert_eq!(
        seen.items,
        [
            "restart:2",
            "2:{\"text\": \"Mara",
            "2: climbs the",
            "2: stairs\"}"
        ]
    );
    // The 429 reached the provider: an attempt that reported no usage.
    assert_eq!(seen.attempts, Some(2));
    assert_eq!(server.received().len(), 2);
}

#[tokio::test]
async fn a_server_that_does_not_stream_answers_in_one_chunk() {
    let server = Server::start().await;
    server.push([Answer::completion(
        "{\"text\": \"Mara climbs\"}",
        "stop",
        Some((12, 7)),
    )]);
    let (seen, _) = run(&host(&server)).await;
    assert_eq!(seen.items, ["1:{\"text\": \"Mara climbs\"}"]);
    assert_eq!(seen.output.as_deref(), Some("Mara climbs"));
    assert_eq!(seen.output_tokens, Some(7));
}
