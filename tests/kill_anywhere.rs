//! A kill -9 at a moment nobody chose. `tests/redelivery.rs` stops a child at each named point of
//! a call; here a child (this test binary, re-executed) runs one-call nodes back to back from
//! eight tasks on two threads, with the journal's default flush window, and is killed with
//! SIGKILL a few milliseconds after it got going, while calls are at every stage. The child
//! reports, in a file of its own, each call it dispatched (the provider was asked: its identity
//! must be durable) and each run whose result it got back (everything before it must be durable).
//! The test then opens the journal as a new process would and holds it to that:
//! - every dispatched call's identity is there, every returned run's outcome is there;
//! - no call is charged twice, and none is charged that was not dispatched;
//! - redelivering every dispatched run asks the provider nothing and charges nothing again.

use wop_sdk_test_support::child;

use child::{OneCall, Store, fresh_dir, input, spawn_self, wait_until};
use std::collections::{BTreeSet, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use wop_sdk::host::{AttemptKey, RunId};
use wop_sdk::wire::ErrorCode;
use wop_sdk_host::journal::Outcome;
use wop_sdk_host::local::{LocalHost, RunOptions, ScriptedProvider};
use wop_sdk_host::testing::{from_fn, reply};

/// Tasks running nodes at once in the child.
const TASKS: usize = 8;
/// Returned runs the parent waits for before it picks the moment.
const RETURNED_BEFORE_KILL: usize = 60;

/// Appends one line to the child's report: one `write`, which a kill cannot split.
fn report(file: &std::fs::File, line: String) {
    let mut f = file;
    let _ = f.write_all(line.as_bytes());
}

/// The child's side: does nothing unless the parent re-executed this binary for it.
#[test]
fn load_child() {
    let Ok(dir) = std::env::var("WOP_KILL_DIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    let out = Arc::new(
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join("report"))
            .expect("the report"),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dispatched = Arc::clone(&out);
        let provider = from_fn("mock", move |request| {
            // The host asks the provider only once the call's identity is durable.
            report(&dispatched, format!("D {}\n", request.run_id));
            async { Ok(reply(r#"{"title":"t"}"#)) }
        });
        let host = Arc::new(
            LocalHost::rfc0248()
                .provider(provider)
                .journal(Store::from_env().open(&dir, None))
                .build(),
        );
        let tasks: Vec<_> = (0..TASKS)
            .map(|t| {
                let (host, out) = (Arc::clone(&host), Arc::clone(&out));
                tokio::spawn(async move {
                    for i in 0u64.. {
                        let run = format!("w{t}-{i}");
                        let options = RunOptions {
                            run_id: Some(RunId::new(&run)),
                            owner: Some("owner".into()),
                            ..RunOptions::default()
                        };
                        let outcome = host.run_with(&OneCall, input(), options).await;
                        if outcome.result.is_ok() {
                            report(&out, format!("E {run}\n"));
                        }
                    }
                })
            })
            .collect();
        for t in tasks {
            let _ = t.await;
        }
    });
    panic!("the child should have been killed before finishing");
}

/// What the child reported before the kill: the runs whose call it dispatched, and those whose
/// result it got back.
fn reported(dir: &Path) -> (BTreeSet<String>, BTreeSet<String>) {
    let text = std::fs::read_to_string(dir.join("report")).unwrap_or_default();
    let (mut dispatched, mut returned) = (BTreeSet::new(), BTreeSet::new());
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("D", run)) => dispatched.insert(run.to_owned()),
            Some(("E", run)) => returned.insert(run.to_owned()),
            _ => false,
        };
    }
    (dispatched, returned)
}

/// Starts the child, waits until it has returned some runs, lets it go on for `delay`, kills it.
fn kill_under_load(store: Store, round: u32, delay: Duration) -> PathBuf {
    let dir = fresh_dir(&format!("wop-kill-anywhere-{}-{round}", store.name()));
    let mut child = spawn_self(
        "load_child",
        &[
            ("WOP_KILL_DIR", &dir),
            ("WOP_STORE", Path::new(store.name())),
        ],
    );
    wait_until(&mut child, "its first runs", || {
        reported(&dir).1.len() >= RETURNED_BEFORE_KILL
    });
    std::thread::sleep(delay);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    dir
}

fn key(run: &str) -> AttemptKey {
    AttemptKey {
        run_id: RunId::new(run),
        node_id: "main".into(),
        call_index: 0,
    }
}

async fn killed_at_a_moment_nobody_chose_nothing_told_durable_is_lost_or_charged_twice(
    store: Store,
) {
    // The moment: a few milliseconds after the child got going, different each round and run.
    // The seed is printed; `WOP_KILL_SEED=<seed>` waits the same delays again.
    let seed = std::env::var("WOP_KILL_SEED")
        .ok()
        .and_then(|s| s.parse::<u32>().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos())
        });
    eprintln!("{}: WOP_KILL_SEED={seed}", store.name());
    for round in 0..6u32 {
        let delay = Duration::from_micros(u64::from(seed.rotate_right(round * 5) % 12_000));
        eprintln!(
            "{}: round {round}, killed {delay:?} after the first runs",
            store.name()
        );
        let dir = kill_under_load(store, round, delay);
        let (dispatched, returned) = reported(&dir);
        assert!(!dispatched.is_empty() && returned.len() >= RETURNED_BEFORE_KILL);

        let journal = store.open(&dir, None);
        for run in &dispatched {
            let entry = journal.lookup(&key(run)).await.expect("lookup");
            assert!(
                entry.is_some(),
                "{run}: the provider was asked, but the call's identity is not in the journal"
            );
        }
        for run in &returned {
            let outcome = journal
                .lookup(&key(run))
                .await
                .expect("lookup")
                .and_then(|e| e.outcome);
            assert!(
                matches!(outcome, Some(Outcome::Completed { .. })),
                "{run}: its result was returned, but its outcome is not in the journal: {outcome:?}"
            );
        }
        let charges = journal.charges(None).await.expect("charges");
        let mut per_call: HashMap<(String, String, u32), usize> = HashMap::new();
        for c in &charges {
            *per_call
                .entry((c.run_id.clone(), c.node_id.clone(), c.call_index))
                .or_default() += 1;
            assert!(
                dispatched.contains(&c.run_id),
                "{}: charged, but never dispatched",
                c.run_id
            );
        }
        assert!(
            per_call.values().all(|n| *n == 1),
            "a call charged twice: {per_call:?}"
        );
        drop(journal);

        // Redelivered by a new process: recorded results are replayed, calls whose outcome the
        // kill took are ambiguous; neither asks the provider or charges again.
        let provider = ScriptedProvider::default();
        let host = LocalHost::rfc0248()
            .provider(provider.clone())
            .journal(store.open(&dir, None))
            .build();
        for run in &dispatched {
            let outcome = host
                .redeliver(&RunId::new(run), "main", &OneCall, input())
                .await;
            match outcome.result {
                Ok(v) => assert_eq!(v["title"], "t", "{run}"),
                Err(e) => {
                    assert!(!returned.contains(run), "{run}: returned, then lost: {e:?}");
                    assert_eq!(e.error, ErrorCode::UpstreamUnavailable, "{run}: ambiguous");
                }
            }
        }
        assert_eq!(provider.request_count(), 0, "redelivery dispatched again");
        let after = host.ledger(None).await.expect("ledger");
        assert_eq!(after.len(), charges.len(), "redelivery charged again");
        eprintln!(
            "{}: round {round}: {} dispatched, {} returned, {} charged",
            store.name(),
            dispatched.len(),
            returned.len(),
            charges.len()
        );
        drop(host);
        let _ = std::fs::remove_dir_all(&dir);
    }
}

wop_sdk_test_support::on_both_stores!(
    killed_at_a_moment_nobody_chose_nothing_told_durable_is_lost_or_charged_twice,
);
