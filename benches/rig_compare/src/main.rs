//! wop-sdk against rig for the same work: one typed structured extraction of `Line` (serde +
//! schemars, from `benches/common`) against an in-process model that answers at once with the
//! canned reply `{"line":"the quick brown fox","n":7}`, no network. See BENCHMARKS.md §10 and
//! `run.sh`, which drives this binary.
//!
//! ```text
//! rig-compare count KIND N     N executions of KIND and nothing else (for callgrind: the
//!                              difference between N and 2N is the work of N executions)
//! rig-compare time [ROUNDS] [BATCH]
//!                              every kind timed side by side (default 201 rounds of 20):
//!                              each round times about BATCH calls of each kind in turn (the
//!                              order rotates) on a fresh host or extractor; prints the median
//!                              and the least over the rounds, per call, of the wall time and
//!                              of the thread's CPU time (both sides run on one thread, so
//!                              CPU time leaves out the time the shared machine preempted it)
//! rig-compare kinds            the kinds, one per line, with how many calls one execution makes
//! ```
//!
//! Kinds (one execution of each):
//! - `baseline`: the unavoidable work of a structured call, exactly `call_instructions`'s
//!   `baseline` (request to JSON text, reply parsed, validated with a pre-built validator,
//!   deserialized into `Line`);
//! - `wop`: exactly `call_instructions`'s `structured`: one `LocalHost::run` of a node making one
//!   `AiRequest::<Line>` call, in-memory journal, the `benches/common` provider;
//! - `wop_x16`: exactly `call_instructions`'s `x16`: one run making 16 such calls;
//! - `wop_min`, `wop_min_x16`: the same on the host configured for the least work it offers
//!   (no `callAccounting`, one provider request per call at most);
//! - `rig`: one `Extractor::<Line>::extract` of rig-agent over a rig `Model` whose transport
//!   (`Instant` below) answers at once with the same reply as a `submit` tool call;
//! - `rig_x16`: 16 such extractions in one execution, for symmetry with `wop_x16`.

use wop_sdk_test_support::bench as common;

use common::{Caller, GOOD, Line};
use rig_agent::extractor::{Extractor, ExtractorBuilder};
use rig_core::completion::{AssistantContent, CompletionRequest, CompletionResponse, Usage};
use rig_core::driver::{Exchange, Model, Opened, Opening, Transport};
use rig_core::message::{Origin, ToolCall, ToolFunction, ToolName};
use rig_core::test_utils::{MOCK_API, MockFrame, MockScript};
use rig_core::wire::Mode;
use serde::Deserialize;
use serde_json::Value;
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant as Clock;
use wop_sdk::AiRequest;
use wop_sdk::ai::schema_of;
use wop_sdk_host::journal::MemoryJournal;
use wop_sdk_host::local::LocalHost;

/// The prompt and output budget of both sides: `benches/common::Caller`'s request.
const PROMPT: &str = "Write one line.";
const MAX_TOKENS: u64 = 64;

/// rig's side of `benches/common::Instant`: a hand-written transport for rig's pass-through
/// completion wire (`MockScript`, whose payload is the `CompletionRequest` itself). It answers
/// every request at once with one `submit` tool call whose arguments are [`GOOD`]'s text (as an
/// OpenAI-style wire hands them over, so rig parses them), and usage 10 in, 9 out. Like
/// wop-sdk's `Instant` it keeps nothing between requests (rig's own `MockRuntime` records every
/// request and pops a script).
#[derive(Clone, Copy, Debug)]
struct Instant;

/// Requests the rig model received, to check that one extraction is one model request.
static RIG_REQUESTS: AtomicU64 = AtomicU64::new(0);

impl Transport<MockScript> for Instant {
    fn send(&self, _request: CompletionRequest, exchange: Exchange) -> Opening<MockFrame> {
        RIG_REQUESTS.fetch_add(1, Ordering::Relaxed);
        if exchange.mode != Mode::Unary {
            return Opening::failed(rig_core::ProviderError::Provider(
                "the instant model answers whole replies only".into(),
            ));
        }
        let name = match ToolName::new("submit") {
            Ok(name) => name,
            Err(e) => return Opening::failed(rig_core::ProviderError::Provider(e.to_string())),
        };
        let arguments = Value::String(String::from_utf8_lossy(GOOD).into_owned());
        let call = ToolCall::from_wire("call_1", ToolFunction::new(name, arguments));
        let response = CompletionResponse::new(
            vec![AssistantContent::ToolCall(call)],
            Usage::new().input_tokens(10).output_tokens(9),
            Origin::new(MOCK_API, "mock", "mock-1"),
            Value::Null,
        );
        Opening::ready(Opened::new(futures::stream::iter([Ok(
            MockFrame::Response(Box::new(response)),
        )])))
    }
}

fn rig_extractor() -> Extractor<Line> {
    let model = Model::new(MockScript::new("mock").with_id("mock-1"), Instant);
    ExtractorBuilder::<Line>::new(model)
        .max_tokens(MAX_TOKENS)
        .build()
}

/// The host of `call_instructions.rs` (`host(0)`).
fn wop_host() -> LocalHost {
    LocalHost::rfc0248()
        .provider(common::Instant { fail_first: 0 })
        .journal(Arc::new(MemoryJournal::new()))
        .build()
}

/// The least work the local host can be configured to do per call: neither `callAccounting`
/// flag (no `attempts` record, no per-call `retry`), one provider request per call at most. The
/// journal, the request fingerprint, the events and the budget cannot be turned off.
fn wop_min_host() -> LocalHost {
    LocalHost::rfc0248()
        .provider(common::Instant { fail_first: 0 })
        .journal(Arc::new(MemoryJournal::new()))
        .older_host()
        .max_retry_attempts(1)
        .build()
}

/// Every kind, and how many calls one execution of it makes.
const KINDS: &[(&str, u64)] = &[
    ("baseline", 1),
    ("wop", 1),
    ("wop_x16", 16),
    ("wop_min", 1),
    ("wop_min_x16", 16),
    ("rig", 1),
    ("rig_x16", 16),
];

/// One kind, ready to execute: everything built once, outside the measured loop.
enum Work {
    Baseline {
        request: AiRequest<Line>,
        validator: jsonschema::Validator,
    },
    Wop {
        host: LocalHost,
        node: Caller,
    },
    Rig {
        extractor: Extractor<Line>,
        calls: u32,
    },
}

impl Work {
    fn new(kind: &str) -> Result<Self, String> {
        let x16 = Caller {
            calls: 16,
            plain: false,
        };
        Ok(match kind {
            "baseline" => Work::Baseline {
                request: AiRequest::<Line>::prompt(PROMPT).max_tokens(MAX_TOKENS as u32),
                validator: jsonschema::validator_for(&schema_of::<Line>())
                    .map_err(|e| format!("schema: {e}"))?,
            },
            "wop" => Work::Wop {
                host: wop_host(),
                node: Caller::ONE,
            },
            "wop_x16" => Work::Wop {
                host: wop_host(),
                node: x16,
            },
            "wop_min" => Work::Wop {
                host: wop_min_host(),
                node: Caller::ONE,
            },
            "wop_min_x16" => Work::Wop {
                host: wop_min_host(),
                node: x16,
            },
            "rig" => Work::Rig {
                extractor: rig_extractor(),
                calls: 1,
            },
            "rig_x16" => Work::Rig {
                extractor: rig_extractor(),
                calls: 16,
            },
            other => {
                return Err(format!(
                    "unknown kind `{other}`: expected one of {}",
                    KINDS.iter().map(|k| k.0).collect::<Vec<_>>().join(", ")
                ));
            }
        })
    }

    /// One execution; an error if it did not produce the canned `Line`.
    async fn once(&self) -> Result<(), String> {
        match self {
            Work::Baseline { request, validator } => {
                let text =
                    serde_json::to_string(black_box(request.wire())).map_err(|e| e.to_string())?;
                black_box(text);
                let reply: Value =
                    serde_json::from_slice(black_box(GOOD)).map_err(|e| e.to_string())?;
                if !validator.is_valid(&reply) {
                    return Err("baseline: the reply does not meet the schema".into());
                }
                let line = Line::deserialize(&reply).map_err(|e| e.to_string())?;
                check(black_box(line))
            }
            Work::Wop { host, node } => {
                let out = host.run(node, common::input()).await;
                match &out.result {
                    Ok(value) if value["calls"] == node.calls => {}
                    other => return Err(format!("wop-sdk run: {other:?}")),
                }
                black_box(out);
                Ok(())
            }
            Work::Rig { extractor, calls } => {
                for _ in 0..*calls {
                    let response = extractor
                        .extract(PROMPT)
                        .await
                        .map_err(|e| format!("rig extract: {e}"))?;
                    check(black_box(response).output)?;
                }
                Ok(())
            }
        }
    }
}

fn check(line: Line) -> Result<(), String> {
    if line.n == 7 && line.line == "the quick brown fox" {
        Ok(())
    } else {
        Err(format!("unexpected output {line:?}"))
    }
}

fn runtime() -> Result<tokio::runtime::Runtime, String> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("runtime: {e}"))
}

fn count(kind: &str, n: u64) -> Result<(), String> {
    let rt = runtime()?;
    let work = Work::new(kind)?;
    rt.block_on(async {
        for _ in 0..n {
            work.once().await?;
        }
        Ok::<(), String>(())
    })?;
    if let Work::Rig { calls, .. } = work {
        let requests = RIG_REQUESTS.load(Ordering::Relaxed);
        if requests != n * u64::from(calls) {
            return Err(format!(
                "{} extractions made {requests} model requests",
                n * u64::from(calls)
            ));
        }
    }
    Ok(())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let mid = v.len() / 2;
    if v.len() % 2 == 1 {
        v[mid]
    } else {
        (v[mid - 1] + v[mid]) / 2.0
    }
}

/// Executions run on a fresh host or extractor before each timed batch (schema compilation and
/// first-use caches are not what is compared).
const WARM_UP: u64 = 5;

fn time(rounds: usize, batch: u64) -> Result<(), String> {
    let rt = runtime()?;
    // Per kind: (wall, thread CPU) nanoseconds per call, one sample per round.
    let mut samples: Vec<(Vec<f64>, Vec<f64>)> = vec![Default::default(); KINDS.len()];
    rt.block_on(async {
        for round in 0..rounds {
            for i in 0..KINDS.len() {
                let at = (i + round) % KINDS.len();
                let (kind, calls) = KINDS[at];
                // A fresh host or extractor per batch, dropped after it: the in-memory journal
                // keeps every run, and one process serves every kind, so a journal grown over
                // the whole run would slow every kind that follows (allocator, caches).
                let work = Work::new(kind)?;
                for _ in 0..WARM_UP {
                    work.once().await?;
                }
                // About BATCH calls per sample whatever the kind (an `x16` execution is 16),
                // so every sample is short enough to be seldom preempted.
                let executions = (batch / calls).max(1);
                let cpu = cpu_time::ThreadTime::now();
                let wall = Clock::now();
                for _ in 0..executions {
                    work.once().await?;
                }
                let wall = wall.elapsed().as_nanos() as f64;
                let cpu = cpu.elapsed().as_nanos() as f64;
                let per = (executions * calls) as f64;
                samples[at].0.push(wall / per);
                samples[at].1.push(cpu / per);
            }
        }
        Ok::<(), String>(())
    })?;
    println!("kind\twall_median_ns\twall_min_ns\tcpu_median_ns\tcpu_min_ns\trounds\tbatch");
    for ((kind, _), (wall, cpu)) in KINDS.iter().zip(samples) {
        let min = |v: &[f64]| v.iter().copied().fold(f64::INFINITY, f64::min);
        let (wall_min, cpu_min) = (min(&wall), min(&cpu));
        println!(
            "{kind}\t{:.0}\t{wall_min:.0}\t{:.0}\t{cpu_min:.0}\t{rounds}\t{batch}",
            median(wall),
            median(cpu)
        );
    }
    Ok(())
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let number = |i: usize, default: u64| -> Result<u64, String> {
        match arg(i) {
            None => Ok(default),
            Some(s) => s
                .parse()
                .map_err(|_| format!("argument {} must be a whole number, got `{s}`", i + 1)),
        }
    };
    let result = match arg(0) {
        Some("count") => match arg(1) {
            Some(kind) => number(2, 10).and_then(|n| count(kind, n)),
            None => Err("usage: rig-compare count KIND N".into()),
        },
        Some("time") => number(1, 201)
            .and_then(|r| number(2, 20).map(|b| (r, b)))
            .and_then(|(r, b)| time(r.max(1) as usize, b.max(1))),
        Some("kinds") => {
            for (kind, calls) in KINDS {
                println!("{kind}\t{calls}");
            }
            Ok(())
        }
        _ => Err("usage: rig-compare count KIND N | time [ROUNDS] [BATCH] | kinds".into()),
    };
    if let Err(e) = result {
        eprintln!("rig-compare: {e}");
        std::process::exit(1);
    }
}
