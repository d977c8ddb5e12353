//! Redelivery is not retry. Proved with a real crash: a child process (this test binary,
//! re-executed) runs a node against a SQLite journal and is killed with SIGKILL at a chosen point;
//! the test then reopens the same file and redelivers the node.

use wop_sdk_test_support::child;

use child::{In, Store, Title, child_runtime, fresh_dir, host_on_journal, spawn_self, wait_for};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;
use wop_sdk::host::{BoxFuture, RunId};
use wop_sdk::wire::{ErrorCode, kind};
use wop_sdk::{AiRequest, NodeCtx, NodeError, wop_node};
use wop_sdk_host::local::{
    LocalHost, Provider, ProviderError, ProviderReply, ProviderRequest, RunOptions,
    ScriptedProvider, Step,
};

#[wop_node(type_id = "community.test.one-call", version = "1.0.0")]
async fn one_call(ctx: &NodeCtx<'_>, input: In) -> Result<Title, NodeError> {
    if let Ok(dir) = std::env::var("WOP_CRASH_DIR")
        && std::env::var("WOP_CRASH_CHILD").as_deref() == Ok("before-identity")
    {
        mark(Path::new(&dir));
        std::future::pending::<()>().await;
    }
    let c = ctx
        .call_ai(AiRequest::<Title>::prompt(input.topic).beneficiaries(["ana"]))
        .await?;
    if let Ok(dir) = std::env::var("WOP_CRASH_DIR")
        && std::env::var("WOP_CRASH_CHILD").as_deref() == Ok("after-outcome")
    {
        // The node holds its completion; the outcome is deferred, not yet committed.
        mark(Path::new(&dir));
        std::future::pending::<()>().await;
    }
    c.into_output().map_err(|e| NodeError::new(e.to_string()))
}

fn mark(dir: &Path) {
    let _ = std::fs::write(dir.join("marker"), b"reached");
}

/// Tells the test it received the request, then never answers.
struct Silent(PathBuf);

impl Provider for Silent {
    fn name(&self) -> &str {
        "mock"
    }
    fn generate<'a>(
        &'a self,
        _r: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        mark(&self.0);
        Box::pin(std::future::pending())
    }
}

const RUN: &str = "crash-run";

fn input() -> serde_json::Value {
    json!({"topic": "lighthouses"})
}

/// The child's side: does nothing unless the parent re-executed this binary for it.
#[test]
fn crash_child() {
    let (Ok(mode), Ok(dir)) = (
        std::env::var("WOP_CRASH_CHILD"),
        std::env::var("WOP_CRASH_DIR"),
    ) else {
        return;
    };
    let dir = PathBuf::from(dir);
    child_runtime().block_on(async {
        // Deferred writes wait for a durable one: no flush on a timer can race the kill.
        let journal = Store::from_env().open(&dir, Some(Duration::from_secs(3600)));
        let builder = LocalHost::rfc0248().journal(journal);
        let builder = match mode.as_str() {
            "after-dispatch" => builder.provider(Silent(dir.clone())),
            "after-reply" => {
                let marker = dir.clone();
                builder
                    .provider(ScriptedProvider::new(
                        [Step::json(&json!({"title": "t"}), 9)]
                            .into_iter()
                            .collect(),
                    ))
                    // Freeze between the provider's reply and the terminal write.
                    .observer(move |e| {
                        if e.kind() == kind::PROVIDER_USAGE {
                            mark(&marker);
                            loop {
                                std::thread::sleep(Duration::from_secs(60));
                            }
                        }
                    })
            }
            "after-outcome" | "after-end" => builder.provider(ScriptedProvider::new(
                [Step::json(&json!({"title": "first"}), 9)]
                    .into_iter()
                    .collect(),
            )),
            _ => builder.provider(ScriptedProvider::default()),
        };
        let host = builder.build();
        let options = RunOptions {
            run_id: Some(RunId::new(RUN)),
            owner: Some("owner".into()),
            ..RunOptions::default()
        };
        let outcome = host.run_with(&OneCall, input(), options).await;
        if mode == "after-end" && outcome.result.is_ok() {
            // The run's result is out: everything before it must be durable now.
            mark(&dir);
            std::future::pending::<()>().await;
        }
    });
    panic!("the child should have been killed before finishing");
}

/// Runs the child until it reaches the kill point, then kills it with SIGKILL.
fn crash_at(mode: &str, store: Store) -> PathBuf {
    let dir = fresh_dir(&format!("wop-crash-{mode}-{}", store.name()));
    let mut child = spawn_self(
        "crash_child",
        &[
            ("WOP_CRASH_CHILD", Path::new(mode)),
            ("WOP_CRASH_DIR", &dir),
            ("WOP_STORE", Path::new(store.name())),
        ],
    );
    wait_for(&mut child, &dir.join("marker"), "the kill point");
    child.kill().expect("SIGKILL");
    let _ = child.wait();
    dir
}

async fn redeliver(
    dir: &Path,
    store: Store,
) -> (LocalHost, ScriptedProvider, wop_sdk::node::NodeOutcome) {
    let provider = ScriptedProvider::new(
        [Step::json(&json!({"title": "fresh"}), 4)]
            .into_iter()
            .collect(),
    );
    let host = host_on_journal(dir, &provider, store);
    let outcome = host
        .redeliver(&RunId::new(RUN), "main", &OneCall, input())
        .await;
    (host, provider, outcome)
}

async fn killed_after_dispatch_the_call_fails_terminally_and_is_not_charged(store: Store) {
    let dir = crash_at("after-dispatch", store);
    let (host, provider, outcome) = redeliver(&dir, store).await;
    assert_eq!(
        outcome.result.expect_err("terminal failure").error,
        ErrorCode::UpstreamUnavailable
    );
    assert_eq!(
        provider.request_count(),
        0,
        "the provider is not asked again"
    );
    assert!(
        host.ledger(Some(&RunId::new(RUN)))
            .await
            .expect("ledger")
            .is_empty(),
        "no charge"
    );
    assert!(
        host.diagnostics().iter().any(|d| d.ambiguous),
        "marked ambiguous privately"
    );
    // A second redelivery replays the same terminal failure.
    let again = host
        .redeliver(&RunId::new(RUN), "main", &OneCall, input())
        .await;
    assert_eq!(
        again.result.expect_err("still failed").error,
        ErrorCode::UpstreamUnavailable
    );
    assert_eq!(provider.request_count(), 0);
    let _ = std::fs::remove_dir_all(dir);
}

async fn killed_before_the_identity_is_persisted_redelivery_dispatches_cleanly(store: Store) {
    let dir = crash_at("before-identity", store);
    let (host, provider, outcome) = redeliver(&dir, store).await;
    assert_eq!(
        outcome.result.expect("a clean first dispatch")["title"],
        "fresh"
    );
    assert_eq!(provider.request_count(), 1);
    let ledger = host.ledger(Some(&RunId::new(RUN))).await.expect("ledger");
    assert_eq!(ledger.len(), 1);
    assert_eq!(*ledger[0].charge.beneficiaries, ["ana"]);
    let _ = std::fs::remove_dir_all(dir);
}

async fn killed_after_the_reply_before_the_terminal_write_the_call_is_ambiguous(store: Store) {
    let dir = crash_at("after-reply", store);
    let (host, provider, outcome) = redeliver(&dir, store).await;
    assert_eq!(
        outcome.result.expect_err("ambiguous").error,
        ErrorCode::UpstreamUnavailable
    );
    assert_eq!(provider.request_count(), 0);
    assert!(
        host.ledger(None).await.expect("ledger").is_empty(),
        "the unknown generation is never charged"
    );
    let _ = std::fs::remove_dir_all(dir);
}

async fn killed_while_the_outcome_waits_for_its_sync_nothing_is_dispatched_or_charged_twice(
    store: Store,
) {
    // The node got its completion; the outcome was deferred, not yet durable, and the process
    // is killed. Either way the provider is not asked again and nothing is charged twice.
    let dir = crash_at("after-outcome", store);
    let (host, provider, outcome) = redeliver(&dir, store).await;
    assert_eq!(provider.request_count(), 0, "no second dispatch");
    let ledger = host.ledger(None).await.expect("ledger");
    match store {
        // SQLite: the outcome waited in the open transaction, which the kill lost: the same as
        // a crash before the terminal write. The call is ambiguous and never charged.
        Store::Sqlite => {
            assert_eq!(
                outcome.result.expect_err("ambiguous").error,
                ErrorCode::UpstreamUnavailable
            );
            assert!(ledger.is_empty(), "the unknown generation is never charged");
        }
        // The log: the outcome was in the file when the call returned (only a machine crash
        // before its sync could lose it): redelivery replays it, charged once.
        Store::Log => {
            assert_eq!(outcome.result.expect("replayed")["title"], "first");
            assert_eq!(ledger.len(), 1, "charged once, before the kill");
        }
    }
    let _ = std::fs::remove_dir_all(dir);
}

async fn killed_after_the_run_returned_everything_before_it_is_durable(store: Store) {
    // The node's end is a durable write: it carried the deferred outcome, the charge and the
    // run's record, so redelivery replays the result and charges nothing again.
    let dir = crash_at("after-end", store);
    let (host, provider, outcome) = redeliver(&dir, store).await;
    assert_eq!(outcome.result.expect("replayed")["title"], "first");
    assert_eq!(provider.request_count(), 0, "no new provider request");
    let ledger = host.ledger(Some(&RunId::new(RUN))).await.expect("ledger");
    assert_eq!(ledger.len(), 1, "charged once, before the crash");
    assert_eq!(*ledger[0].charge.beneficiaries, ["ana"]);
    assert!(
        host.journal()
            .run(&RunId::new(RUN))
            .await
            .expect("run")
            .is_some(),
        "the run's record"
    );
    let _ = std::fs::remove_dir_all(dir);
}

async fn redelivery_after_a_completed_call_replays_the_identical_result(store: Store) {
    let dir = std::env::temp_dir().join(format!(
        "wop-redeliver-{}-{}",
        store.name(),
        std::process::id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    let provider = ScriptedProvider::new(
        [
            Step::text("not json", 3),
            Step::json(&json!({"title": "t"}), 9),
        ]
        .into_iter()
        .collect(),
    );
    let host = host_on_journal(&dir, &provider, store);
    let run = RunId::new("done-run");
    let options = RunOptions {
        run_id: Some(run.clone()),
        ..RunOptions::default()
    };
    let first = host.run_with(&OneCall, input(), options).await;
    let first_output = first.result.as_ref().expect("completes").to_string();
    let usage_events = |events: &[wop_sdk::wire::RunEvent]| {
        events
            .iter()
            .filter(|e| e.kind() == kind::PROVIDER_USAGE)
            .count()
    };
    let before = usage_events(&wop_sdk::host::Host::events(&host, &run).await);
    drop(host);

    // A new process would reopen the file: so does this host.
    let host = host_on_journal(&dir, &provider, store);
    let again = host.redeliver(&run, "main", &OneCall, input()).await;
    assert_eq!(
        again.result.as_ref().expect("replayed").to_string(),
        first_output
    );
    assert_eq!(
        again.calls[0].requests, first.calls[0].requests,
        "the same attempts"
    );
    assert_eq!(provider.request_count(), 2, "zero new provider requests");
    assert_eq!(
        usage_events(&wop_sdk::host::Host::events(&host, &run).await),
        before,
        "no new provider.usage"
    );
    assert_eq!(
        host.ledger(Some(&run)).await.expect("ledger").len(),
        1,
        "no new charge"
    );

    let changed = host
        .redeliver(&run, "main", &OneCall, json!({"topic": "lighthouseS"}))
        .await;
    assert_eq!(
        changed.result.expect_err("integrity error").error,
        ErrorCode::IdempotencyKeyMismatch
    );
    assert_eq!(provider.request_count(), 2);
    let _ = std::fs::remove_dir_all(dir);
}

async fn a_replay_fork_redelivered_by_a_new_host_is_still_served_from_the_source(store: Store) {
    let dir =
        std::env::temp_dir().join(format!("wop-fork-{}-{}", store.name(), std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let provider = ScriptedProvider::new(
        [Step::json(&json!({"title": "t"}), 9)]
            .into_iter()
            .collect(),
    );
    let host = host_on_journal(&dir, &provider, store);
    let source = RunId::new("fork-source");
    let options = RunOptions {
        run_id: Some(source.clone()),
        ..RunOptions::default()
    };
    let first = host.run_with(&OneCall, input(), options).await;
    let fork = host.replay(&source, "main", &OneCall, input()).await;
    assert_eq!(fork.result, first.result);
    assert_eq!(
        host.active_runs(),
        0,
        "finished runs leave nothing in memory"
    );
    drop(host);

    // Another process: the fork's origin comes from the journal, not from memory.
    let host = host_on_journal(&dir, &provider, store);
    let again = host
        .redeliver(&fork.run_id, "main", &OneCall, input())
        .await;
    assert_eq!(again.result, first.result);
    assert_eq!(
        provider.request_count(),
        1,
        "neither the fork nor its redelivery asked the provider"
    );
    let _ = std::fs::remove_dir_all(dir);
}

wop_sdk_test_support::on_both_stores!(
    killed_after_dispatch_the_call_fails_terminally_and_is_not_charged,
    killed_before_the_identity_is_persisted_redelivery_dispatches_cleanly,
    killed_after_the_reply_before_the_terminal_write_the_call_is_ambiguous,
    killed_while_the_outcome_waits_for_its_sync_nothing_is_dispatched_or_charged_twice,
    killed_after_the_run_returned_everything_before_it_is_durable,
    redelivery_after_a_completed_call_replays_the_identical_result,
    a_replay_fork_redelivered_by_a_new_host_is_still_served_from_the_source,
);
