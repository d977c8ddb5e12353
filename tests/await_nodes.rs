//! Nodes that await more than their `ctx` (a timer, an HTTP request to a loopback server, spawned
//! tasks and `tokio::fs`), a node that never ends and one that panics: the same outcome on the
//! local host and through the Node bridge under the harness of openwop-app's contract, on both
//! kinds of host (openwop-app's public snapshot, without `callAccounting`, and RFC 0248). Then a
//! host that cancels a node, and many executions in one harness process (`soak`).
//!
//! The pack is `tests/await_pack`, its addon `tests/await_pack/addon` (built here, debug).

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;
use std::sync::atomic::Ordering;
use std::time::Duration;
use wop_sdk::node::DynNode;
use wop_sdk_await_pack::{Fetches, NeverEnds, Panics, Sleeps, Spawns, TICKS};
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};
use wop_sdk_host::pack::{PackOptions, write_pack};

const ROOT: &str = env!("CARGO_MANIFEST_DIR");
/// The node timeout both hosts are given (the harness as the node's `timeoutMs`) for the node
/// that never ends; the others get [`ROOMY`] (a panic's backtrace, when `RUST_BACKTRACE` is set,
/// takes a debug addon a while to print).
const TIMEOUT: Duration = Duration::from_millis(300);
const ROOMY: Duration = Duration::from_secs(30);

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| Path::new(ROOT).join("target"), PathBuf::from)
}

/// The pack folder, written once per test process (the addon built first).
fn packs_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
        let built = Command::new(cargo)
            .current_dir(ROOT)
            .args(["build", "--quiet", "-p", "wop-sdk-await-pack-addon"])
            .status()
            .expect("cargo runs");
        assert!(built.success(), "the await pack's addon builds");
        let addon = target_dir().join("debug").join(format!(
            "{}wop_sdk_await_pack_addon{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ));
        let dir = std::env::temp_dir().join(format!("wop-await-nodes-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let options = PackOptions {
            out: dir.clone(),
            addon,
            single_file: false,
            provider: Some("mock".into()),
            model: Some("mock-1".into()),
            timeout_ms: u64::try_from(ROOMY.as_millis()).expect("small"),
            other_addons: Vec::new(),
            addon_built: false,
        };
        write_pack(&wop_sdk_await_pack::pack(), &options).expect("the await pack's folder");
        dir
    })
}

/// A loopback HTTP server that answers every GET with `200 doc(<query>)`, for as long as the
/// test process lives; its base URL.
fn document_server() -> &'static str {
    static URL: OnceLock<String> = OnceLock::new();
    URL.get_or_init(|| {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}/doc", listener.local_addr().expect("bound"));
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(&stream);
                    let mut line = String::new();
                    if reader.read_line(&mut line).is_err() {
                        return;
                    }
                    let query = line
                        .split_whitespace()
                        .nth(1)
                        .and_then(|p| p.split_once("?q="))
                        .map_or("", |(_, q)| q)
                        .to_owned();
                    // The request's headers, up to the blank line.
                    let mut header = String::new();
                    while reader.read_line(&mut header).is_ok_and(|n| n > 2) {
                        header.clear();
                    }
                    let body = format!("doc({query})");
                    let _ = write!(
                        &stream,
                        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                });
            }
        });
        url
    })
}

/// What a node's execution came to, as both hosts can say it: the output, or the error's code
/// and message.
#[derive(Debug, PartialEq)]
enum Ended {
    Output(Value),
    Failed { code: String, message: String },
}

/// `replies` plain replies, the same for both hosts.
fn replies(n: usize) -> Vec<String> {
    (1..=n).map(|i| format!("reply-{i}")).collect()
}

fn local_host(
    rfc0248: bool,
    replies: &[String],
    timeout: Duration,
) -> (LocalHost, ScriptedProvider) {
    let provider = ScriptedProvider::new(replies.iter().map(|r| Step::text(r, 3)).collect());
    let builder = LocalHost::rfc0248()
        .provider(provider.clone())
        .node_timeout(timeout);
    let builder = if rfc0248 {
        builder
    } else {
        builder.older_host()
    };
    (builder.build(), provider)
}

/// `node` on the local host: how it ended, and the provider requests it made.
async fn on_local_host(
    rfc0248: bool,
    node: &dyn DynNode,
    input: &Value,
    replies: &[String],
    timeout: Duration,
) -> (Ended, usize) {
    let (host, provider) = local_host(rfc0248, replies, timeout);
    let outcome = host.run(node, input.clone()).await;
    let ended = match outcome.result {
        Ok(v) => Ended::Output(v),
        Err(e) => Ended::Failed {
            code: e.error.as_str().to_owned(),
            message: e.message,
        },
    };
    assert_eq!(host.active_runs(), 0, "the local host holds no run");
    assert_eq!(host.calls_in_flight(), 0, "the local host holds no call");
    (ended, provider.request_count())
}

/// `type_id` through the bridge under the harness: how it ended, and the requests it made.
fn through_the_bridge(
    rfc0248: bool,
    type_id: &str,
    input: &Value,
    replies: &[String],
    timeout: Duration,
) -> (Ended, usize) {
    let script: Vec<Value> = replies
        .iter()
        .map(|r| json!({"content": r, "usage": {"inputTokens": 1, "outputTokens": 3}}))
        .collect();
    let report = wop_sdk_test_support::harness::run(&json!({
        "packsDir": packs_dir(),
        "prefixes": ["community.test.await"],
        "rfc0248": rfc0248,
        "steps": [{"nodeId": "n", "typeId": type_id, "inputs": input, "script": script,
                   "config": {"timeoutMs": timeout.as_millis()}}],
    }));
    let step = &report["steps"][0];
    let outcome = &step["outcome"];
    let ended = if outcome["status"] == "success" {
        // The bridge's outputs are the node's output as JSON.
        Ended::Output(outcome["outputs"].clone())
    } else {
        Ended::Failed {
            code: outcome["error"]["code"].as_str().unwrap_or("").to_owned(),
            message: outcome["error"]["message"]
                .as_str()
                .unwrap_or("")
                .to_owned(),
        }
    };
    let requests = step["requests"].as_u64().expect("requests counted");
    (ended, usize::try_from(requests).expect("small"))
}

/// `node` on both hosts of each kind: one outcome and one request count for all four.
async fn the_same_everywhere(
    node: &dyn DynNode,
    input: Value,
    replies: &[String],
    timeout: Duration,
) -> (Ended, usize) {
    let type_id = node.spec().type_id;
    let mut seen = Vec::new();
    for rfc0248 in [false, true] {
        let local = on_local_host(rfc0248, node, &input, replies, timeout).await;
        let bridge = through_the_bridge(rfc0248, type_id, &input, replies, timeout);
        seen.push((format!("local host, rfc0248 {rfc0248}"), local));
        seen.push((format!("bridge, rfc0248 {rfc0248}"), bridge));
    }
    let (first_host, first) = &seen[0];
    for (host, other) in &seen[1..] {
        assert_eq!(other, first, "{type_id}: {host} differs from {first_host}");
    }
    seen.swap_remove(0).1
}

#[tokio::test]
async fn a_node_that_sleeps_between_calls() {
    let (ended, requests) =
        the_same_everywhere(&Sleeps, json!({"ms": 20}), &replies(2), ROOMY).await;
    assert_eq!(
        ended,
        Ended::Output(json!("reply-1|slept 20 ms: true|reply-2"))
    );
    assert_eq!(requests, 2);
}

#[tokio::test]
async fn a_node_that_makes_an_http_request_between_calls() {
    let input = json!({"url": document_server()});
    let (ended, requests) = the_same_everywhere(&Fetches, input, &replies(2), ROOMY).await;
    assert_eq!(ended, Ended::Output(json!("200|doc(reply-1)|reply-2")));
    assert_eq!(requests, 2);
}

#[tokio::test]
async fn a_node_that_spawns_tasks_and_uses_tokio_fs() {
    let (ended, requests) =
        the_same_everywhere(&Spawns, json!({"tasks": 10}), &replies(1), ROOMY).await;
    // 0² + … + 9² = 285, the blocking task's 1000 and the detached task's 7.
    assert_eq!(ended, Ended::Output(json!("1292|reply-1")));
    assert_eq!(requests, 1);
}

#[tokio::test]
async fn a_node_that_never_ends_is_ended_at_its_timeout_and_its_tasks_with_it() {
    let (ended, requests) = the_same_everywhere(&NeverEnds, json!({}), &replies(1), TIMEOUT).await;
    assert_eq!(
        ended,
        Ended::Failed {
            code: "wop-sdk.node_timeout".into(),
            message: "the node did not end within its timeout of 300 ms".into(),
        }
    );
    assert_eq!(requests, 1);
    // The local host dropped the node, and its JoinSet aborted the ticking task.
    let ticks = TICKS.load(Ordering::Relaxed);
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(
        TICKS.load(Ordering::Relaxed),
        ticks,
        "the node's task still ticks"
    );
}

#[tokio::test]
async fn a_node_that_panics_fails_with_the_panic_on_every_host() {
    let (ended, requests) = the_same_everywhere(&Panics, json!({}), &replies(1), ROOMY).await;
    assert_eq!(
        ended,
        Ended::Failed {
            code: "wop-sdk.node_failed".into(),
            message: "the node panicked: the node broke after `reply-1`".into(),
        }
    );
    assert_eq!(requests, 1);
}

/// A host that cancels a node (openwop-app's `ctx.signal`): the node ends with
/// `wop-sdk.node_cancelled` at once, and the addon holds nothing of it.
#[test]
fn a_node_the_host_cancels_ends_with_node_cancelled() {
    let report = wop_sdk_test_support::harness::run(&json!({
        "packsDir": packs_dir(),
        "prefixes": ["community.test.await"],
        "steps": [{"nodeId": "n", "typeId": "community.test.await.sleeps", "inputs": {"ms": 60_000},
                   "config": {"timeoutMs": 120_000}, "abortAfterMs": 100,
                   "script": [{"content": "reply-1"}]}],
        "soak": {"typeId": "community.test.await.sleeps", "inputs": {"ms": 0}, "executions": 1, "samples": 1},
    }));
    let outcome = &report["steps"][0]["outcome"];
    assert_eq!(outcome["status"], "failure", "{report:#}");
    assert_eq!(
        outcome["error"]["code"], "wop-sdk.node_cancelled",
        "{report:#}"
    );
    assert_eq!(report["soak"]["samples"][0]["inProgress"], 0, "{report:#}");
}

/// On the local host, a node whose future the caller drops (a cancelled run) leaves no run
/// and no call behind.
#[tokio::test]
async fn a_node_dropped_on_the_local_host_leaves_nothing() {
    let (host, _) = local_host(false, &replies(2), ROOMY);
    let running = host.run(&Sleeps, json!({"ms": 60_000}));
    assert!(
        tokio::time::timeout(Duration::from_millis(100), running)
            .await
            .is_err(),
        "the node sleeps"
    );
    assert_eq!(host.active_runs(), 0);
    assert_eq!(host.calls_in_flight(), 0);
}

/// Many executions of an awaiting node in one harness process: the threads stay those of the
/// first sample, give or take the two blocking threads the node can use at once (its
/// `spawn_blocking` and a `tokio::fs` operation: tokio's blocking pool keeps an idle thread
/// 10 s), and the addon holds no execution at the end. RSS is reported; the figures for
/// 100 000 executions are in BENCHMARKS.md.
#[test]
fn many_executions_in_one_process_keep_threads_flat_and_hold_nothing() {
    let report = wop_sdk_test_support::harness::run(&json!({
        "packsDir": packs_dir(),
        "prefixes": ["community.test.await"],
        "steps": [],
        "soak": {"typeId": "community.test.await.spawns", "inputs": {"tasks": 2}, "executions": 2000, "samples": 4},
    }));
    let samples = report["soak"]["samples"].as_array().expect("samples");
    assert_eq!(samples.len(), 4, "{report:#}");
    let threads: Vec<u64> = samples
        .iter()
        .map(|s| s["threads"].as_u64().expect("Linux counts threads"))
        .collect();
    assert!(
        threads.iter().all(|t| *t <= threads[0] + 2),
        "threads: {threads:?}"
    );
    assert_eq!(samples[3]["inProgress"], 0, "{report:#}");
}
