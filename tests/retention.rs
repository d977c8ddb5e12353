//! The in-memory journal's retention, through the local host as a pack author runs it: ended runs
//! are kept up to the bound, then dropped whole (record, calls, events, charges); a run with a
//! node executing is never dropped; replaying a dropped run is refused and says why.

use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::Notify;
use wop_sdk::RunId;
use wop_sdk::prelude::*;
use wop_sdk::wire::ErrorCode;
use wop_sdk_host::journal::{Journal, MemoryJournal, Retention};
use wop_sdk_host::local::LocalHost;
use wop_sdk_host::testing::{from_fn, reply};

#[wop_node(type_id = "community.test.echo-line", version = "1.0.0", max_calls = 3)]
async fn echo_line(ctx: &NodeCtx<'_>, topic: String) -> Result<String, NodeError> {
    let line = ctx.call_ai(AiRequest::<Text>::prompt(topic)).await?;
    Ok(line.into_output()?.0)
}

fn host(journal: Arc<MemoryJournal>) -> LocalHost {
    LocalHost::rfc0248()
        .journal(journal)
        .provider(from_fn("mock", |_| async { Ok(reply("a line")) }))
        .build()
}

fn keep(max_ended_runs: usize) -> Arc<MemoryJournal> {
    Arc::new(MemoryJournal::with_retention(Retention {
        max_ended_runs,
        max_age: None,
    }))
}

#[tokio::test]
async fn ended_runs_beyond_the_bound_are_dropped_whole_and_replaying_one_says_why() {
    let journal = keep(2);
    let host = host(Arc::clone(&journal));
    let mut runs = Vec::new();
    for topic in ["one", "two", "three"] {
        let out = host.run(&EchoLine, json!(topic)).await;
        assert_eq!(out.result, Ok(json!("a line")));
        runs.push(out.run_id);
    }
    // The oldest ended run is gone: record, calls, events and charges.
    assert_eq!(journal.run(&runs[0]).await, Ok(None));
    assert!(
        journal
            .events(&runs[0])
            .await
            .unwrap_or_default()
            .is_empty()
    );
    assert!(
        host.ledger(Some(&runs[0]))
            .await
            .unwrap_or_default()
            .is_empty()
    );
    assert_eq!(journal.call_count().await, Ok(2));
    // The two latest are whole.
    for run in &runs[1..] {
        assert!(journal.run(run).await.ok().flatten().is_some(), "{run}");
        assert_eq!(host.ledger(Some(run)).await.map(|l| l.len()), Ok(1));
        assert!(!journal.events(run).await.unwrap_or_default().is_empty());
    }
    // A replay of the latest still works; one of the dropped run is refused, naming the rule.
    let replayed = host
        .replay(&runs[2], "main", &EchoLine, json!("three"))
        .await;
    assert_eq!(replayed.result, Ok(json!("a line")));
    let refused = host.replay(&runs[0], "main", &EchoLine, json!("one")).await;
    let error = refused.result.expect_err("the source run was dropped");
    assert_eq!(error.error, ErrorCode::ReplaySourceMissing);
    assert!(error.message.contains("retention"), "{}", error.message);
}

#[tokio::test]
async fn a_run_with_its_node_executing_is_never_dropped() {
    let journal = keep(1);
    let release = Arc::new(Notify::new());
    let gate = Arc::clone(&release);
    // The first run's provider answers only when released; the other runs answer at once.
    let provider = from_fn("mock", move |request| {
        let gate = Arc::clone(&gate);
        async move {
            if request.run_id.as_str().ends_with("-slow") {
                gate.notified().await;
            }
            Ok(reply("a line"))
        }
    });
    let host = LocalHost::rfc0248()
        .journal(Arc::clone(&journal) as Arc<dyn Journal>)
        .provider(provider)
        .build();
    let slow = {
        let host = host.clone();
        tokio::spawn(async move {
            let options = wop_sdk_host::local::RunOptions {
                run_id: Some(RunId::new("held-slow")),
                ..Default::default()
            };
            host.run_with(&EchoLine, json!("slow"), options).await
        })
    };
    // Wait until the slow run's call is in flight, then end three runs past the bound of 1.
    while host.calls_in_flight() == 0 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    for topic in ["a", "b", "c"] {
        assert_eq!(
            host.run(&EchoLine, json!(topic)).await.result,
            Ok(json!("a line"))
        );
    }
    let held = RunId::new("held-slow");
    assert!(
        journal.run(&held).await.ok().flatten().is_some(),
        "dropped while executing"
    );
    release.notify_one();
    let out = slow.await.expect("the slow run");
    assert_eq!(out.result, Ok(json!("a line")));
    // Its record, call and charge are whole after it ended.
    assert_eq!(host.ledger(Some(&held)).await.map(|l| l.len()), Ok(1));
}

#[tokio::test]
async fn an_age_limit_drops_ended_runs_older_than_it() {
    let journal = Arc::new(MemoryJournal::with_retention(Retention {
        max_ended_runs: 100,
        max_age: Some(Duration::from_millis(50)),
    }));
    let host = host(Arc::clone(&journal));
    let first = host.run(&EchoLine, json!("first")).await.run_id;
    tokio::time::sleep(Duration::from_millis(80)).await;
    let second = host.run(&EchoLine, json!("second")).await.run_id;
    assert_eq!(
        journal.run(&first).await,
        Ok(None),
        "older than the age limit"
    );
    assert!(journal.run(&second).await.ok().flatten().is_some());
}
