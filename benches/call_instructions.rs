//! Instruction counts per call, for callgrind: runs N node executions of one kind and nothing
//! else, so `(I(2N) - I(N)) / N` is the work of one execution, free of start-up and of the
//! machine's load.
//!
//! ```sh
//! cargo bench --bench call_instructions --no-run
//! WOP_KIND=structured WOP_RUNS=1000 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!     target/release/deps/call_instructions-*      # note "Collected : N"
//! ```
//!
//! Below 10 000 runs the in-memory journal keeps every run (the heap grows, and the runs are
//! freed together when the host is dropped); past it each run ends by dropping the oldest, as a
//! host that runs for long does: `(I(14 000) − I(10 000)) / 4000` is that steady state (a
//! window of a few hundred runs there varies by thousands of instructions a run, as the
//! journal's maps now and then rebuild themselves).
//!
//! `WOP_KIND`: `baseline` (the unavoidable work of a structured call only), `structured`,
//! `plain`, `retries` (two schema-violation retries), `x16` (16 structured calls in one run).
//! `WOP_JOURNAL=sqlite` or `WOP_JOURNAL=log`: the host keeps its journal in a SQLite file or a
//! log journal in the temp dir (callgrind counts every thread's instructions; the disk's waits
//! are not instructions), instead of in memory.
//! Run by `cargo bench` without `WOP_KIND` it does a short smoke pass of each.

use wop_sdk_test_support::bench as common;

use common::{Caller, GOOD, Instant, Line};
use serde::Deserialize;
use serde_json::Value;
use std::hint::black_box;
use std::sync::Arc;
use wop_sdk::AiRequest;
use wop_sdk::ai::schema_of;
use wop_sdk_host::journal::{Journal, LogJournal, MemoryJournal, SqliteJournal};
use wop_sdk_host::local::LocalHost;

/// The host, and the folder of its durable journal (`WOP_JOURNAL`) to remove after it.
fn host(fail_first: u32) -> (LocalHost, Option<std::path::PathBuf>) {
    let (journal, dir): (Arc<dyn Journal>, _) = match std::env::var("WOP_JOURNAL").as_deref() {
        Ok("sqlite") => {
            let dir = common::temp_dir("call-instructions");
            let journal = SqliteJournal::open(dir.join("journal.sqlite")).expect("journal");
            (Arc::new(journal), Some(dir))
        }
        Ok("log") => {
            let dir = common::temp_dir("call-instructions");
            let journal = LogJournal::open(dir.join("journal.log")).expect("journal");
            (Arc::new(journal), Some(dir))
        }
        _ => (Arc::new(MemoryJournal::new()), None),
    };
    let host = LocalHost::rfc0248()
        .provider(Instant { fail_first })
        .journal(journal)
        .build();
    (host, dir)
}

fn run(kind: &str, n: u64) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    if kind == "baseline" {
        let request = AiRequest::<Line>::prompt("Write one line.").max_tokens(64);
        let validator = jsonschema::validator_for(&schema_of::<Line>()).expect("schema");
        for _ in 0..n {
            let text = serde_json::to_string(black_box(request.wire())).expect("serialize");
            black_box(text);
            let reply: Value = serde_json::from_slice(black_box(GOOD)).expect("parse");
            assert!(validator.is_valid(&reply));
            black_box(Line::deserialize(&reply).expect("deserialize"));
        }
        return;
    }
    let (node, fail) = match kind {
        "plain" => (
            Caller {
                calls: 1,
                plain: true,
            },
            0,
        ),
        "retries" => (Caller::ONE, 2),
        "x16" => (
            Caller {
                calls: 16,
                plain: false,
            },
            0,
        ),
        _ => (Caller::ONE, 0),
    };
    let (host, dir) = host(fail);
    rt.block_on(async {
        for _ in 0..n {
            let out = host.run(&node, common::input()).await;
            assert!(out.result.is_ok(), "{:?}", out.result);
            black_box(out);
        }
    });
    drop(host);
    if let Some(dir) = dir {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn main() {
    let n = std::env::var("WOP_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10);
    match std::env::var("WOP_KIND") {
        Ok(kind) => run(&kind, n),
        Err(_) => {
            for kind in ["baseline", "structured", "plain", "retries", "x16"] {
                run(kind, n);
            }
        }
    }
}
