//! Cancellation: a call whose future is dropped (a timeout, a `select!`, an aborted task) leaves
//! nothing behind: its reservation is released (charged as its worst case, reported
//! `cancelled`), the host's in-flight entry and the run's record go, the call is recorded as the
//! terminal ambiguous failure of "redelivery is not retry" at once (no host sharing the journal
//! waits for its lease), and re-entering it replays that failure, never a second generation.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use wop_sdk::host::AttemptKey;
use wop_sdk::prelude::*;
use wop_sdk::wire::ErrorCode;
use wop_sdk_host::journal::lease::LEASE_TTL;
use wop_sdk_host::journal::{Journal, MemoryJournal, Outcome};
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Scene {
    text: String,
}

#[derive(Debug, Serialize, JsonSchema, PartialEq)]
struct Seen {
    timed_out: bool,
    reserved_after: u32,
    used_after: u32,
    second: String,
}

/// Gives up on a structured call after 50 ms (the provider hangs), then makes a plain call that
/// fits what is left of `max_calls = 4`.
#[wop_node(type_id = "community.test.impatient", version = "1.0.0", max_calls = 4)]
async fn impatient(ctx: &NodeCtx<'_>, how: String) -> Result<Seen, NodeError> {
    let slow = ctx.call_ai(AiRequest::<Scene>::prompt("slow").max_tokens(10));
    let timed_out = if how == "select" {
        tokio::select! {
            r = slow => { r?; false }
            () = tokio::time::sleep(Duration::from_millis(50)) => true,
        }
    } else {
        tokio::time::timeout(Duration::from_millis(50), slow)
            .await
            .is_err()
    };
    let budget = ctx.budget();
    let second = ctx.call_ai(AiRequest::<Text>::prompt("fast")).await?;
    Ok(Seen {
        timed_out,
        reserved_after: budget.reserved,
        used_after: budget.used,
        second: second.into_output()?.0,
    })
}

fn host() -> (LocalHost, ScriptedProvider) {
    let provider = ScriptedProvider::new(
        [
            Step::Hang,
            Step::Reply {
                content: b"done".to_vec(),
                finish_reason: wop_sdk::wire::FinishReason::Stop,
                usage: None,
                mode: None,
            },
        ]
        .into_iter()
        .collect(),
    );
    (
        LocalHost::rfc0248().provider(provider.clone()).build(),
        provider,
    )
}

async fn gives_up_by(how: &str) {
    let (host, provider) = host();
    let out = host.run(&Impatient, json!(how)).await;
    let output = out.result.unwrap_or_else(|e| panic!("{how}: {e}"));
    assert_eq!(
        output,
        json!({"timed_out": true, "reserved_after": 0, "used_after": 3, "second": "done"}),
        "{how}"
    );
    // The cancelled call is in the node's report, charged its worst case (3 requests on a
    // ceiling of 3: it may have reached the provider, how far it got is unknown to the node).
    assert_eq!(out.calls.len(), 2, "{how}: {:?}", out.calls);
    assert_eq!(out.calls[0].status, "cancelled");
    assert_eq!(out.calls[0].charged, 3);
    assert_eq!(out.calls[1].status, "ok");
    assert_eq!(out.budget.reserved, 0);
    assert_eq!(out.budget.used, 4);
    assert_eq!(provider.request_count(), 2);
    // Nothing is left in the host.
    assert_eq!(host.calls_in_flight(), 0, "{how}");
    assert_eq!(host.active_runs(), 0, "{how}");
    // The host never charged the user for the dispatch whose outcome is unknown.
    let ledger = host.ledger(Some(&out.run_id)).await.expect("ledger");
    assert_eq!(ledger.len(), 1, "{ledger:?}");
    assert_eq!(ledger[0].call_index, 1);
}

#[tokio::test]
async fn a_call_given_up_by_a_timeout_releases_its_reservation() {
    gives_up_by("timeout").await;
}

#[tokio::test]
async fn a_call_lost_in_a_select_releases_its_reservation() {
    gives_up_by("select").await;
}

#[wop_node(type_id = "community.test.waits", version = "1.0.0", max_calls = 3)]
async fn waits(ctx: &NodeCtx<'_>, prompt: String) -> Result<String, NodeError> {
    let c = ctx.call_ai(AiRequest::<Text>::prompt(prompt)).await?;
    Ok(c.into_output()?.0)
}

#[tokio::test]
async fn an_aborted_run_leaves_nothing_behind_and_is_ambiguous_on_redelivery() {
    let (host, provider) = host();
    let task = {
        let host = host.clone();
        tokio::spawn(async move { host.run(&Waits, json!("hello")).await })
    };
    // Wait until the provider holds the request, then abort the whole run.
    for _ in 0..200 {
        if provider.request_count() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(provider.request_count(), 1);
    assert_eq!(host.calls_in_flight(), 1);
    assert_eq!(host.active_runs(), 1);
    task.abort();
    assert!(task.await.expect_err("aborted").is_cancelled());
    assert_eq!(host.calls_in_flight(), 0);
    assert_eq!(host.active_runs(), 0);

    // The run's identity was persisted before dispatch and has no outcome: redelivering the node
    // is a terminal ambiguous failure, with no second generation and no charge.
    let runs = host.journal().runs().await.expect("runs");
    let run = runs[0].run_id.clone();
    let again = host.redeliver(&run, "main", &Waits, json!("hello")).await;
    let error = again.result.expect_err("ambiguous");
    assert_eq!(error.error, ErrorCode::UpstreamUnavailable);
    assert_eq!(provider.request_count(), 1, "no second generation");
    assert!(host.ledger(Some(&run)).await.expect("ledger").is_empty());
    assert!(
        host.diagnostics_of(&run).iter().any(|d| d.ambiguous),
        "{:?}",
        host.diagnostics_of(&run)
    );
}

/// A call given up mid-dispatch is recorded as the terminal ambiguous failure when it is dropped:
/// a second host sharing the journal replays that failure at once instead of waiting for the
/// first host's lease on the call to expire, and sends nothing.
#[tokio::test]
async fn a_call_given_up_is_ambiguous_at_once_for_every_host_sharing_the_journal() {
    let journal = Arc::new(MemoryJournal::new());
    let provider = ScriptedProvider::new([Step::Hang].into_iter().collect());
    let first = LocalHost::rfc0248()
        .provider(provider.clone())
        .journal(journal.clone())
        .build();
    let task = {
        let first = first.clone();
        tokio::spawn(async move { first.run(&Waits, json!("hello")).await })
    };
    for _ in 0..200 {
        if provider.request_count() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert_eq!(provider.request_count(), 1);
    task.abort();
    assert!(task.await.expect_err("aborted").is_cancelled());

    let runs = journal.runs().await.expect("runs");
    let run = runs[0].run_id.clone();
    let key = AttemptKey {
        run_id: run.clone(),
        node_id: "main".into(),
        call_index: 0,
    };
    let mut recorded = None;
    for _ in 0..200 {
        recorded = journal
            .lookup(&key)
            .await
            .expect("lookup")
            .and_then(|e| e.outcome);
        if recorded.is_some() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(
        matches!(
            recorded,
            Some(Outcome::Failed {
                ambiguous: true,
                ..
            })
        ),
        "{recorded:?}"
    );
    assert_eq!(journal.leased(&key).await.expect("lease"), None);

    let spare = ScriptedProvider::new([Step::text("never", 1)].into_iter().collect());
    let second = LocalHost::rfc0248()
        .provider(spare.clone())
        .journal(journal.clone())
        .build();
    let again = tokio::time::timeout(
        LEASE_TTL / 2,
        second.redeliver(&run, "main", &Waits, json!("hello")),
    )
    .await
    .expect("the second host does not wait for the first one's lease to expire");
    let error = again.result.expect_err("ambiguous");
    assert_eq!(error.error, ErrorCode::UpstreamUnavailable);
    assert_eq!(spare.request_count(), 0, "no second generation");
    assert!(second.ledger(Some(&run)).await.expect("ledger").is_empty());
}
