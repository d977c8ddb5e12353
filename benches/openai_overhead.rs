//! Per-request overhead of the OpenAI-compatible provider over the raw HTTP exchange, against the
//! loopback server of the tests (`tests/support/openai_server.rs`), all in one run:
//!
//! - `raw`: the same request bytes written by hand on one kept-alive `TcpStream`, the reply read
//!   by its `Content-Length`: the exchange itself (the server's work included);
//! - `reqwest`: the same bytes POSTed with the provider's HTTP client, the body read whole;
//! - `provider`: `Provider::generate` on a structured native request: request mapping, JSON
//!   writing, the HTTP exchange, the bounded body read, reply parsing, the tracing span.
//!
//! `cargo bench --bench openai_overhead` (see BENCHMARKS.md).

use wop_sdk_test_support::openai_server as server;

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use std::hint::black_box;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use wop_sdk::RunId;
use wop_sdk::wire::{Message, StructuredOutputMode};
use wop_sdk_host::local::{Provider, ProviderRequest};
use wop_sdk_host::provider::openai::{OpenAiConfig, OpenAiProvider};

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn schema() -> Value {
    json!({"title": "Line", "type": "object", "properties": {"line": {"type": "string"}},
           "required": ["line"]})
}

fn request() -> ProviderRequest {
    ProviderRequest {
        run_id: RunId::new("local/bench"),
        node_id: "main".into(),
        provider: "openai".into(),
        model: "bench-model".into(),
        system_prompt: Some("You write one line.".into()),
        messages: std::sync::Arc::new([Message::user("Write one line about the sea.")]),
        max_tokens: 64,
        temperature: None,
        stop_sequences: None,
        response_schema: Some(schema().into()),
        mode: Some(StructuredOutputMode::Native),
        attempt: 1,
    }
}

/// The reply every request gets: a typical small chat completion.
fn reply() -> Value {
    json!({
        "id": "chatcmpl-bench", "object": "chat.completion", "created": 1_700_000_000,
        "model": "bench-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": "{\"line\":\"The sea keeps its own counsel.\"}"}}],
        "usage": {"prompt_tokens": 42, "completion_tokens": 11, "total_tokens": 53}
    })
}

/// The body the provider sends for `request()` (read back from the server once).
fn body_of(rt: &tokio::runtime::Runtime, server: &server::Server, p: &OpenAiProvider) -> Vec<u8> {
    server.push([server::Answer::json(200, &reply())]);
    rt.block_on(p.generate(request())).expect("reply");
    server.received()[0].body.to_string().into_bytes()
}

/// One hand-written exchange on a kept-alive connection.
async fn raw_exchange(stream: &mut TcpStream, head_and_body: &[u8], buf: &mut Vec<u8>) -> usize {
    stream.write_all(head_and_body).await.expect("write");
    buf.clear();
    let mut chunk = [0u8; 16384];
    loop {
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "closed");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = std::str::from_utf8(&buf[..end]).expect("head");
            let len: usize = head
                .lines()
                .find_map(|l| l.strip_prefix("content-length: "))
                .and_then(|v| v.trim().parse().ok())
                .expect("content-length");
            if buf.len() >= end + 4 + len {
                return len;
            }
        }
    }
}

fn overhead(c: &mut Criterion) {
    let rt = runtime();
    let server = rt.block_on(server::Server::start());
    let config = OpenAiConfig::new(&server.base_url(), "bench-model").expect("config");
    let p = OpenAiProvider::new(config).expect("provider");
    let body = body_of(&rt, &server, &p);
    server.repeat(200, &reply());

    let mut g = c.benchmark_group("openai");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(4));

    let mut wire = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: {}\r\ncontent-type: application/json\r\n\
         accept: application/json\r\ncontent-length: {}\r\n\r\n",
        server.addr(),
        body.len()
    )
    .into_bytes();
    wire.extend_from_slice(&body);
    let mut stream = rt
        .block_on(TcpStream::connect(server.addr()))
        .expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut buf = Vec::new();
    g.bench_function("raw", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(raw_exchange(&mut stream, &wire, &mut buf).await);
                }
                start.elapsed()
            })
        });
    });

    let client = reqwest::Client::builder()
        .use_rustls_tls()
        .build()
        .expect("client");
    let url = format!("{}/chat/completions", server.base_url());
    g.bench_function("reqwest", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let r = client
                        .post(&url)
                        .header("content-type", "application/json")
                        .header("accept", "application/json")
                        .body(body.clone())
                        .send()
                        .await
                        .expect("send");
                    black_box(r.bytes().await.expect("body"));
                }
                start.elapsed()
            })
        });
    });

    let template = request();
    g.bench_function("provider", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    black_box(p.generate(template.clone()).await.expect("reply"));
                }
                start.elapsed()
            })
        });
    });
    g.finish();
}

criterion_group!(benches, overhead);
criterion_main!(benches);
