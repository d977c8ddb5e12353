//! The cost of one fragment of a streamed call (`NodeCtx::call_ai_stream`), through the public
//! API and the local host: a streamed call whose reply comes in 64 chunks against the same call
//! whose reply comes in one, so the difference divided by 63 is what each further fragment costs
//! (the provider's chunk, the host's `output.chunk` event and its copy for the journal, the
//! sink, the pack's read). The same reply through a plain call, and a baseline of the work a
//! fragment cannot avoid (copying its text into an owned string and appending it), are measured
//! in the same run for the ratios.
//!
//! `cargo bench --bench streaming` (see BENCHMARKS.md). The provider answers at once.

use wop_sdk_test_support::bench as common;

use common::{In, Out};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant as Clock};
use wop_sdk::host::BoxFuture;
use wop_sdk::wire::{FinishReason, Usage};
use wop_sdk::{AiRequest, Node, NodeCtx, NodeError, NodeSpec, Text};
use wop_sdk_host::journal::MemoryJournal;
use wop_sdk_host::local::{LocalHost, Provider, ProviderError, ProviderReply, ProviderRequest};

/// One fragment's text: 16 bytes, about the size of a few tokens.
const PIECE: &str = "the quick brown ";

/// Answers at once with `chunks` copies of [`PIECE`]: to a streamed request one chunk each, to
/// a plain request joined.
#[derive(Clone, Copy, Debug)]
struct Chunked {
    chunks: usize,
}

impl Chunked {
    fn reply(self) -> ProviderReply {
        ProviderReply {
            content: PIECE.repeat(self.chunks).into_bytes(),
            finish_reason: FinishReason::Stop,
            usage: Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(4 * self.chunks as u64),
                total_tokens: None,
            }),
            mode: None,
            model: Some("mock-1".into()),
        }
    }
}

impl Provider for Chunked {
    fn name(&self) -> &str {
        "mock"
    }

    fn generate<'a>(
        &'a self,
        _request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        Box::pin(std::future::ready(Ok(self.reply())))
    }

    fn generate_stream<'a>(
        &'a self,
        _request: ProviderRequest,
        on_chunk: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        for _ in 0..self.chunks {
            on_chunk(PIECE);
        }
        Box::pin(std::future::ready(Ok(self.reply())))
    }
}

/// How the node makes its one plain (`Text`) call.
#[derive(Clone, Copy, Debug)]
enum Mode {
    /// `call_ai`.
    Plain,
    /// `call_ai_stream`, every fragment read and appended to a preview.
    Read,
    /// `call_ai_stream`, `finish` at once (the fragments are dropped unread).
    Finish,
}

#[derive(Clone, Copy, Debug)]
struct Streamer(Mode);

impl Node for Streamer {
    type Input = In;
    type Output = Out;
    const SPEC: NodeSpec = common::spec("community.bench.streamer");

    fn run<'a, 'run>(
        &'a self,
        ctx: &'a NodeCtx<'run>,
        _input: In,
    ) -> BoxFuture<'a, Result<Out, NodeError<'run>>> {
        Box::pin(async move {
            let request = AiRequest::<Text>::prompt("Write one line.").max_tokens(4096);
            let completion = match self.0 {
                Mode::Plain => ctx.call_ai(request).await?,
                Mode::Read => {
                    let mut stream = ctx.call_ai_stream(request);
                    let mut preview = String::new();
                    while let Some(item) = stream.next().await {
                        if let wop_sdk::ai::Provisional::Fragment(f) = item {
                            preview.push_str(f.text());
                        }
                    }
                    black_box(preview.len());
                    stream.finish().await?
                }
                Mode::Finish => ctx.call_ai_stream(request).finish().await?,
            };
            black_box(completion.output().map(|t| t.0.len()).ok());
            Ok(Out { calls: 1 })
        })
    }
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn host(chunks: usize) -> LocalHost {
    LocalHost::rfc0248()
        .provider(Chunked { chunks })
        .journal(Arc::new(MemoryJournal::new()))
        .build()
}

/// Runs `iters` runs on a fresh host (its in-memory journal keeps every run's events, 65 per run
/// here: a host kept across samples would grow by gigabytes and measure the allocator).
fn run_many(rt: &tokio::runtime::Runtime, chunks: usize, mode: Mode, iters: u64) -> Duration {
    let host = host(chunks);
    rt.block_on(async {
        let start = Clock::now();
        for _ in 0..iters {
            let out = host.run(&Streamer(mode), common::input()).await;
            debug_assert!(out.result.is_ok(), "{:?}", out.result);
            black_box(out);
        }
        start.elapsed()
    })
}

fn fragments(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("stream");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));

    // What a fragment cannot avoid: its text copied into an owned string, appended to a preview.
    g.bench_function("baseline_64_fragments", |b| {
        b.iter(|| {
            let mut preview = String::new();
            for _ in 0..64 {
                let owned = black_box(PIECE).to_owned();
                preview.push_str(&owned);
            }
            black_box(preview)
        });
    });

    for chunks in [1usize, 64] {
        g.bench_function(BenchmarkId::new("plain", chunks), |b| {
            b.iter_custom(|iters| run_many(&rt, chunks, Mode::Plain, iters));
        });
        g.bench_function(BenchmarkId::new("streamed_read", chunks), |b| {
            b.iter_custom(|iters| run_many(&rt, chunks, Mode::Read, iters));
        });
        g.bench_function(BenchmarkId::new("streamed_finish", chunks), |b| {
            b.iter_custom(|iters| run_many(&rt, chunks, Mode::Finish, iters));
        });
    }
    g.finish();
}

criterion_group!(benches, fragments);
criterion_main!(benches);
