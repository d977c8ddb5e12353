//! Two hosts, two real processes, one journal, one call in flight. The second host waits for
//! the live owner and reattaches to its outcome (no second generation, one charge); only when
//! the owner is gone (killed with SIGKILL) is the dispatch ambiguous. The owner is this test
//! binary re-executed as a child (as in `tests/redelivery.rs`).

use wop_sdk_test_support::child;

use child::{
    OneCall, Store, child_runtime, fresh_dir, host_on_journal, input, spawn_self, wait_for,
};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::Duration;
use wop_sdk::host::{BoxFuture, RunId};
use wop_sdk::wire::{ErrorCode, FinishReason, Usage};
use wop_sdk_host::local::{
    LocalHost, Provider, ProviderError, ProviderReply, ProviderRequest, RunOptions,
    ScriptedProvider, Step,
};

const RUN: &str = "leased-run";

/// The owner's provider: says it received the request, then answers only once the test
/// writes `release` (a slow generation).
struct Gate(PathBuf);

impl Provider for Gate {
    fn name(&self) -> &str {
        "mock"
    }
    fn generate<'a>(
        &'a self,
        _r: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        let _ = std::fs::write(self.0.join("dispatched"), b"1");
        Box::pin(async move {
            while !self.0.join("release").exists() {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(ProviderReply {
                content: json!({"title": "from the owner"}).to_string().into_bytes(),
                finish_reason: FinishReason::Stop,
                usage: Some(Usage {
                    input_tokens: Some(10),
                    output_tokens: Some(6),
                    total_tokens: None,
                }),
                mode: None,
                model: Some("gate".into()),
            })
        })
    }
}

/// The owner's side: does nothing unless the parent re-executed this binary for it.
#[test]
fn lease_owner_child() {
    let Ok(dir) = std::env::var("WOP_LEASE_OWNER_DIR") else {
        return;
    };
    let dir = PathBuf::from(dir);
    child_runtime().block_on(async {
        let host = LocalHost::rfc0248()
            .journal(Store::from_env().open(&dir, None))
            .provider(Gate(dir.clone()))
            .build();
        let options = RunOptions {
            run_id: Some(RunId::new(RUN)),
            owner: Some("owner".into()),
            ..RunOptions::default()
        };
        let outcome = host.run_with(&OneCall, input(), options).await;
        let verdict = match &outcome.result {
            Ok(v) => format!("ok {v}"),
            Err(e) => format!("failed {e}"),
        };
        std::fs::write(dir.join("owner-done"), verdict).expect("write the owner's verdict");
    });
}

/// The owner process; killed if a test ends before it does, so that no child outlives a failure.
struct Owner(Child);

impl Drop for Owner {
    fn drop(&mut self) {
        if let Ok(None) = self.0.try_wait() {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
}

/// Starts the owner and waits until its provider holds the request.
fn owner_in_flight(dir: &Path, store: Store) -> Owner {
    let mut child = spawn_self(
        "lease_owner_child",
        &[
            ("WOP_LEASE_OWNER_DIR", dir),
            ("WOP_STORE", Path::new(store.name())),
        ],
    );
    wait_for(&mut child, &dir.join("dispatched"), "dispatching");
    Owner(child)
}

fn spare_provider() -> ScriptedProvider {
    ScriptedProvider::new(
        [Step::json(&json!({"title": "a second generation"}), 4)]
            .into_iter()
            .collect(),
    )
}

/// An owner in flight in a child process, and a second host in this process, on the same
/// journal file, redelivering the owner's call (its task, still waiting).
fn second_host_waiting(
    dir: &Path,
    store: Store,
) -> (
    Owner,
    ScriptedProvider,
    LocalHost,
    tokio::task::JoinHandle<wop_sdk::node::NodeOutcome>,
) {
    let owner = owner_in_flight(dir, store);
    let provider = spare_provider();
    let host = host_on_journal(dir, &provider, store);
    let waiting = tokio::spawn({
        let host = host.clone();
        async move {
            host.redeliver(&RunId::new(RUN), "main", &OneCall, input())
                .await
        }
    });
    (owner, provider, host, waiting)
}

async fn a_second_host_waits_for_a_live_owner_and_reattaches_to_its_outcome(store: Store) {
    let dir = fresh_dir(&format!("wop-lease-live-{}", store.name()));
    let (mut owner, provider, host, waiting) = second_host_waiting(&dir, store);
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert!(
        !waiting.is_finished(),
        "the second host waits while the owner is alive"
    );
    std::fs::write(dir.join("release"), b"1").expect("release the owner");
    let outcome = waiting.await.expect("the waiting task");
    assert_eq!(
        outcome.result.expect("reattached to the owner's outcome")["title"],
        "from the owner"
    );
    assert_eq!(provider.request_count(), 0, "no second generation");
    let status = owner.0.wait().expect("the owner exits");
    assert!(status.success(), "{status}");
    let verdict = std::fs::read_to_string(dir.join("owner-done")).expect("owner's verdict");
    assert!(
        verdict.starts_with("ok "),
        "the owner's own call completed: {verdict}"
    );
    let ledger = host.ledger(Some(&RunId::new(RUN))).await.expect("ledger");
    assert_eq!(ledger.len(), 1, "charged once: {ledger:?}");
    assert!(host.diagnostics().iter().all(|d| !d.ambiguous));
    let _ = std::fs::remove_dir_all(dir);
}

async fn a_second_host_waiting_on_an_owner_that_dies_reports_the_call_ambiguous(store: Store) {
    let dir = fresh_dir(&format!("wop-lease-dies-{}", store.name()));
    let (mut owner, provider, host, waiting) = second_host_waiting(&dir, store);
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(!waiting.is_finished(), "waiting while the owner lives");
    owner.0.kill().expect("SIGKILL the owner");
    let _ = owner.0.wait();
    let outcome = tokio::time::timeout(Duration::from_secs(5), waiting)
        .await
        .expect("the owner's death is seen at once, not after the lease's TTL")
        .expect("the waiting task");
    assert_eq!(
        outcome.result.expect_err("ambiguous").error,
        ErrorCode::UpstreamUnavailable
    );
    assert_eq!(provider.request_count(), 0, "never repeated");
    assert!(
        host.ledger(None).await.expect("ledger").is_empty(),
        "never charged"
    );
    assert!(host.diagnostics().iter().any(|d| d.ambiguous));
    let _ = std::fs::remove_dir_all(dir);
}

wop_sdk_test_support::on_both_stores!(
    a_second_host_waits_for_a_live_owner_and_reattaches_to_its_outcome,
    a_second_host_waiting_on_an_owner_that_dies_reports_the_call_ambiguous,
);
