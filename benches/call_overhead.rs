//! Per-call overhead of one call through the public API and the local host, against a baseline
//! in the same run that does only the unavoidable work of a structured call: serialize the
//! request, parse the reply, validate it with a pre-built validator, deserialize into the type.
//!
//! `cargo bench --bench call_overhead` (see BENCHMARKS.md). The provider answers at once
//! (`common::Instant`), so what is measured is the SDK and the host.

use wop_sdk_test_support::bench as common;

use common::{Caller, GOOD, Instant, Line};
use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde::Deserialize;
use serde_json::Value;
use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant as Clock};
use wop_sdk::AiRequest;
use wop_sdk::ai::schema_of;
use wop_sdk_host::journal::{Journal, MemoryJournal, SqliteJournal};
use wop_sdk_host::local::LocalHost;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

fn host(journal: Arc<dyn Journal>, fail_first: u32) -> LocalHost {
    LocalHost::rfc0248()
        .provider(Instant { fail_first })
        .journal(journal)
        .build()
}

/// Runs `iters` runs of `node` one after the other on `host`; the time they took.
fn run_many(rt: &tokio::runtime::Runtime, host: &LocalHost, node: Caller, iters: u64) -> Duration {
    rt.block_on(async {
        let start = Clock::now();
        for _ in 0..iters {
            let out = host.run(&node, common::input()).await;
            debug_assert!(out.result.is_ok(), "{:?}", out.result);
            black_box(out);
        }
        start.elapsed()
    })
}

fn overhead(c: &mut Criterion) {
    let rt = runtime();
    let mut g = c.benchmark_group("call");
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));

    // The baseline: what any structured call must do.
    let request = AiRequest::<Line>::prompt("Write one line.").max_tokens(64);
    let validator = jsonschema::validator_for(&schema_of::<Line>()).expect("schema");
    g.bench_function("baseline", |b| {
        b.iter(|| {
            let text = serde_json::to_string(black_box(request.wire())).expect("serialize");
            black_box(text);
            let reply: Value = serde_json::from_slice(black_box(GOOD)).expect("parse");
            assert!(validator.is_valid(&reply));
            black_box(Line::deserialize(&reply).expect("deserialize"))
        });
    });

    let memory = host(Arc::new(MemoryJournal::new()), 0);
    g.bench_function(BenchmarkId::new("structured", "memory"), |b| {
        b.iter_custom(|iters| run_many(&rt, &memory, Caller::ONE, iters));
    });
    let plain = Caller {
        calls: 1,
        plain: true,
    };
    g.bench_function(BenchmarkId::new("plain", "memory"), |b| {
        b.iter_custom(|iters| run_many(&rt, &memory, plain, iters));
    });
    let retrying = host(Arc::new(MemoryJournal::new()), 2);
    g.bench_function(BenchmarkId::new("two_retries", "memory"), |b| {
        b.iter_custom(|iters| run_many(&rt, &retrying, Caller::ONE, iters));
    });
    // Sixteen calls in one run: the run's own cost (start, node events) shared out.
    let sixteen = Caller {
        calls: 16,
        plain: false,
    };
    g.bench_function(BenchmarkId::new("structured_x16", "memory"), |b| {
        b.iter_custom(|iters| run_many(&rt, &memory, sixteen, iters));
    });

    let dir = common::temp_dir("overhead");
    let sqlite = host(
        Arc::new(SqliteJournal::open(dir.join("journal.sqlite")).expect("journal")),
        0,
    );
    g.sample_size(10).measurement_time(Duration::from_secs(4));
    g.bench_function(BenchmarkId::new("structured", "sqlite"), |b| {
        b.iter_custom(|iters| run_many(&rt, &sqlite, Caller::ONE, iters));
    });
    g.finish();
    drop(sqlite);
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group!(benches, overhead);
criterion_main!(benches);
