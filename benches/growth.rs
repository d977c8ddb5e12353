//! Growth: the per-call cost with 1 000, 10 000 and 100 000 attempts already in the journal
//! (in memory and SQLite, measured interleaved in one run), the cost of an event appended to a
//! run that already holds 20, 2 000 and 20 000 events (SQLite: a long run's log), and the peak RSS of a host holding
//! 10 000 finished runs (each configuration in a child process of its own, so that one peak does
//! not hide another).
//!
//! `cargo bench --bench growth` (see BENCHMARKS.md). Prints figures; asserts nothing about time.
//! The SQLite journals are pre-filled through the journal API in large concurrent batches (the
//! writer groups up to 512 commands per transaction): runs of 20 calls, each call begun,
//! its request recorded, and finished with a charge and one event, as a real call leaves it.

use wop_sdk_test_support::bench as common;

use common::{Caller, Instant};
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant as Clock};
use wop_sdk::host::{AttemptKey, RunId};
use wop_sdk::wire::{Event, ProviderUsage};
use wop_sdk_host::journal::{
    Charge, Fingerprint, Journal, MemoryJournal, Outcome, RunMeta, RunRecord,
};
use wop_sdk_host::journal::{LogJournal, SqliteJournal};
use wop_sdk_host::local::LocalHost;

const SIZES: [u32; 3] = [1_000, 10_000, 100_000];
const PREFILL_CALLS_PER_RUN: u32 = 20;
const FINISHED_RUNS: u32 = 10_000;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

/// Writes `attempts` finished calls into `journal` through its API, 4 096 commands in flight.
async fn prefill(journal: Arc<dyn Journal>, attempts: u32) {
    let runs = attempts.div_ceil(PREFILL_CALLS_PER_RUN);
    let mut pending = Vec::new();
    for r in 0..runs {
        let j = Arc::clone(&journal);
        pending.push(tokio::spawn(async move {
            let run = RunId::new(format!("prefill-{r}"));
            let record = RunRecord {
                run_id: run.clone(),
                owner: "bench".into(),
                replay_of: None,
                meta: RunMeta {
                    type_id: "community.bench.caller".into(),
                    ..RunMeta::default()
                },
            };
            j.begin_run(record).await.expect("run");
            for i in 0..PREFILL_CALLS_PER_RUN {
                let key = AttemptKey {
                    run_id: run.clone(),
                    node_id: "main".into(),
                    call_index: i,
                };
                let mut fp = [0u8; 32];
                fp[..4].copy_from_slice(&r.to_be_bytes());
                fp[4..8].copy_from_slice(&i.to_be_bytes());
                let id = format!("att_{r:08x}{i:04x}");
                j.begin(&key, &Fingerprint(fp), &id).await.expect("begin");
                j.record_request(&key, 1, 64).await.expect("request");
                let outcome = Outcome::Completed {
                    result: format!(
                        r#"{{"data":{{"line":"prefill","n":{i}}},"attemptId":"{id}","semanticStatus":"ok"}}"#
                    ),
                };
                let charge = Charge {
                    beneficiaries: vec!["bench".into()].into(),
                    generations: 1,
                    output_tokens: 9,
                };
                let events = vec![Event::ProviderUsage(ProviderUsage {
                    provider: "mock".into(),
                    model: "mock-1".into(),
                    input_tokens: 0,
                    output_tokens: 9,
                    total_tokens: None,
                    node_id: Some("main".into()),
                })];
                j.finish(&key, outcome.clone(), Some(charge.clone()), events)
                    .await
                    .expect("finish");
            }
        }));
        if pending.len() >= 4096 / 3 {
            for t in pending.drain(..) {
                t.await.expect("prefill");
            }
        }
    }
    for t in pending {
        t.await.expect("prefill");
    }
}

/// Mean time of one run of one call, over `n` runs in sequence.
fn per_call(rt: &tokio::runtime::Runtime, host: &LocalHost, n: u32) -> Duration {
    rt.block_on(async {
        let start = Clock::now();
        for _ in 0..n {
            let out = host.run(&Caller::ONE, common::input()).await;
            assert!(out.result.is_ok(), "{:?}", out.result);
        }
        start.elapsed() / n
    })
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn cost(bench: bool) {
    let rt = runtime();
    let dir = common::temp_dir("growth");
    let sizes: Vec<u32> = if bench {
        SIZES.to_vec()
    } else {
        vec![100, 1_000]
    };
    let mut hosts: Vec<(String, u32, LocalHost)> = Vec::new();
    for &size in &sizes {
        let mem: Arc<dyn Journal> = Arc::new(MemoryJournal::new());
        let started = Clock::now();
        rt.block_on(prefill(Arc::clone(&mem), size));
        let mem_fill = started.elapsed();
        let sql: Arc<dyn Journal> =
            Arc::new(SqliteJournal::open(dir.join(format!("j{size}.sqlite"))).expect("open"));
        let started = Clock::now();
        rt.block_on(prefill(Arc::clone(&sql), size));
        println!(
            "  pre-filled {size:>7} attempts: memory in {mem_fill:.2?}, SQLite in {:.2?}",
            started.elapsed()
        );
        for (name, j) in [("memory", mem), ("sqlite", sql)] {
            let host = LocalHost::rfc0248()
                .provider(Instant::default())
                .journal(j)
                .build();
            hosts.push((name.to_owned(), size, host));
        }
    }
    // Interleaved rounds; the median of each.
    let rounds = if bench { 5 } else { 1 };
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); hosts.len()];
    for _ in 0..rounds {
        for (i, (name, _, host)) in hosts.iter().enumerate() {
            let n = if name == "memory" { 2_000 } else { 60 };
            samples[i].push(per_call(&rt, host, if bench { n } else { 5 }));
        }
    }
    let mut first: std::collections::HashMap<String, Duration> = Default::default();
    for ((name, size, _), s) in hosts.iter().zip(samples) {
        let m = median(s);
        let base = *first.entry(name.clone()).or_insert(m);
        println!(
            "  {name:<6} {size:>7} attempts: {m:>10.2?} per call ({:.2}x the smallest)",
            m.as_secs_f64() / base.as_secs_f64()
        );
    }
    drop(hosts);
    let _ = std::fs::remove_dir_all(&dir);
}

/// In a child process: the peak RSS before and after `runs` finished runs of one call each.
fn rss_child(kind: &str, runs: u32) {
    let rt = runtime();
    let dir = common::temp_dir(&format!("rss-{kind}"));
    let journal: Arc<dyn Journal> = match kind {
        "memory" => Arc::new(MemoryJournal::new()),
        "log" => Arc::new(LogJournal::open(dir.join("journal.log")).expect("open")),
        _ => Arc::new(SqliteJournal::open(dir.join("journal.sqlite")).expect("open")),
    };
    let host = LocalHost::rfc0248()
        .provider(Instant::default())
        .journal(journal)
        .max_concurrent_generations(64)
        .build();
    // One run first: the code paths and caches warm, so the delta is what the runs hold.
    rt.block_on(host.run(&Caller::ONE, common::input()));
    let before = common::peak_rss_kib().unwrap_or(0);
    rt.block_on(async {
        let tasks: Vec<_> = (0..16u32)
            .map(|_| {
                let host = host.clone();
                tokio::spawn(async move {
                    for _ in 0..runs / 16 {
                        let out = host.run(&Caller::ONE, common::input()).await;
                        assert!(out.result.is_ok());
                    }
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("runner");
        }
    });
    let after = common::peak_rss_kib().unwrap_or(0);
    println!("RSS_KIB {before} {after}");
    drop(host);
    let _ = std::fs::remove_dir_all(&dir);
}

/// In a child process: `calls` runs of one call each on one host, printing the resident set at
/// every tenth. `kind` is the journal: `memory` (its default retention, the last 10 000 ended
/// runs), `sqlite` (a file in a temp dir; the line also has the commits per call so far) or
/// `log` (a log journal in a temp dir, which holds everything in memory).
fn rss_long(calls: u32, kind: &str) {
    let rt = runtime();
    let dir = common::temp_dir("rss-long");
    let sqlite = (kind == "sqlite")
        .then(|| Arc::new(SqliteJournal::open(dir.join("journal.sqlite")).expect("open")));
    let journal: Arc<dyn Journal> = match (&sqlite, kind) {
        (Some(j), _) => j.clone(),
        (None, "log") => Arc::new(LogJournal::open(dir.join("journal.log")).expect("open")),
        (None, _) => Arc::new(MemoryJournal::new()),
    };
    let host = LocalHost::rfc0248()
        .provider(Instant::default())
        .journal(journal)
        .max_concurrent_generations(64)
        .build();
    rt.block_on(async {
        let step = (calls / 10).max(1);
        let mut done = 0;
        while done < calls {
            let batch = step.min(calls - done);
            let tasks: Vec<_> = (0..16u32)
                .map(|t| {
                    let host = host.clone();
                    let n = batch / 16 + u32::from(t < batch % 16);
                    tokio::spawn(async move {
                        for _ in 0..n {
                            let out = host.run(&Caller::ONE, common::input()).await;
                            assert!(out.result.is_ok());
                        }
                    })
                })
                .collect();
            for t in tasks {
                t.await.expect("runner");
            }
            done += batch;
            let commits = sqlite.as_ref().map_or(String::new(), |j| {
                format!(" {:.3}", j.commits() as f64 / f64::from(done))
            });
            println!("RSS_AT {done} {}{commits}", common::rss_kib().unwrap_or(0));
        }
    });
    drop(host);
    drop(sqlite);
    let _ = std::fs::remove_dir_all(&dir);
}

fn rss(bench: bool) {
    let calls = if bench { 1_000_000 } else { 2_000 };
    let exe = std::env::current_exe().expect("exe");
    let out = std::process::Command::new(&exe)
        .args(["--rss-long", &calls.to_string()])
        .output()
        .expect("child");
    let points: Vec<(u64, u64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut w = l.strip_prefix("RSS_AT ")?.split_whitespace();
            Some((w.next()?.parse().ok()?, w.next()?.parse().ok()?))
        })
        .collect();
    let shown: Vec<String> = points
        .iter()
        .map(|(n, kib)| format!("{n}: {:.1} MiB", *kib as f64 / 1024.0))
        .collect();
    println!(
        "  memory journal, default retention, {calls} calls (one per run): resident set {}",
        shown.join(", ")
    );
    if let (Some(mid), Some(last)) = (points.get(points.len() / 2), points.last()) {
        println!(
            "  from the middle to the end: {:.2}x (flat is 1.00x)",
            last.1 as f64 / mid.1.max(1) as f64
        );
    }
    let runs = if bench { FINISHED_RUNS } else { 160 };
    let exe = std::env::current_exe().expect("exe");
    for kind in ["memory", "sqlite", "log"] {
        let out = std::process::Command::new(&exe)
            .args(["--rss-child", kind, &runs.to_string()])
            .output()
            .expect("child");
        let text = String::from_utf8_lossy(&out.stdout);
        let Some(line) = text.lines().find(|l| l.starts_with("RSS_KIB")) else {
            println!(
                "  {kind}: the child failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            continue;
        };
        let v: Vec<u64> = line
            .split_whitespace()
            .skip(1)
            .filter_map(|s| s.parse().ok())
            .collect();
        let (before, after) = (v[0], v[1]);
        println!(
            "  {kind:<6} host holding {runs} finished runs: peak RSS {:.1} MiB ({:.1} MiB after one run; {:.0} bytes per run)",
            after as f64 / 1024.0,
            before as f64 / 1024.0,
            (after.saturating_sub(before) * 1024) as f64 / f64::from(runs)
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--rss-child") {
        let runs = args
            .get(i + 2)
            .and_then(|s| s.parse().ok())
            .unwrap_or(FINISHED_RUNS);
        rss_child(&args[i + 1], runs);
        return;
    }
    if let Some(i) = args.iter().position(|a| a == "--rss-long") {
        let calls = args
            .get(i + 1)
            .and_then(|s| s.parse().ok())
            .unwrap_or(1_000_000);
        let kind = args.get(i + 2).map_or("memory", String::as_str);
        rss_long(calls, kind);
        return;
    }
    let bench = args.iter().any(|a| a == "--bench");
    println!("growth");
    cost(bench);
    long_run(bench);
    rss(bench);
}

/// An event appended to one run whose log grows: the time of 500 appends (deferred writes: the
/// journal's CPU, no sync) after 20, 2 000 and 20 000 events. A flat line: the next key is read
/// at the log's ends, whatever its length.
fn long_run(bench: bool) {
    let rt = runtime();
    let dir = common::temp_dir("growth-long-run");
    let j = SqliteJournal::open(dir.join("long.sqlite")).expect("open");
    let run = RunId::new("local/long-run");
    let event = || {
        Event::from_parts(
            "node.started",
            &json!({"nodeId": "main", "typeId": "community.demo.x"}),
        )
    };
    let (sizes, timed) = if bench {
        (vec![20u64, 2_000, 20_000], 500)
    } else {
        (vec![20, 200], 20)
    };
    let mut held = 0u64;
    let mut first = None;
    for size in sizes {
        while held < size {
            let e = event().expect("event");
            held = rt.block_on(j.append_event(&run, e)).expect("append") + 1;
        }
        let started = Clock::now();
        for _ in 0..timed {
            let e = event().expect("event");
            held = rt.block_on(j.append_event(&run, e)).expect("append") + 1;
        }
        let each = started.elapsed() / timed;
        let base = *first.get_or_insert(each);
        println!(
            "  sqlite one run holding {size:>6} events: {each:>10.2?} an event appended ({:.2}x the smallest)",
            each.as_secs_f64() / base.as_secs_f64()
        );
    }
    drop(j);
    let _ = std::fs::remove_dir_all(&dir);
}
