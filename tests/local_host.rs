//! The embedded local host, rule by rule (SPEC.md §The host's retry loop, §Run events, §Replay),
//! through the public `Host` boundary as a production host would be driven.

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use wop_sdk::host::{AttemptKey, Host, RunId};
use wop_sdk::local::{LocalHost, Script, ScriptedProvider, Step};
use wop_sdk::wire::{ErrorCode, FinishReason, RunEvent, StructuredOutputMode, kind};

fn schema() -> Value {
    json!({"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}})
}

fn key(run: &str, i: u32) -> AttemptKey {
    AttemptKey {
        run_id: RunId::new(run),
        node_id: "n".into(),
        call_index: i,
    }
}

fn valid() -> Step {
    Step::json(&json!({"title": "ok"}), 7)
}

fn host_with(
    steps: Vec<Step>,
    f: impl FnOnce(wop_sdk::local::LocalHostBuilder) -> wop_sdk::local::LocalHostBuilder,
) -> (LocalHost, ScriptedProvider) {
    let provider = ScriptedProvider::new(steps.into_iter().collect());
    let host = f(LocalHost::builder().provider(provider.clone())).build();
    (host, provider)
}

async fn events(host: &LocalHost, run: &str) -> Vec<RunEvent> {
    host.events(&RunId::new(run)).await
}

fn count(events: &[RunEvent], k: &str) -> usize {
    events.iter().filter(|e| e.kind() == k).count()
}

#[tokio::test]
async fn schema_violation_is_retried_and_every_request_is_counted() {
    let (host, provider) = host_with(
        vec![
            Step::text("not json", 5),
            Step::json(&json!({"nope": 1}), 6),
            valid(),
        ],
        |b| b,
    );
    let r = host
        .call_ai_json(
            &key("r1", 0),
            &json!({"prompt": "t", "responseSchema": schema(), "maxTokens": 100}),
        )
        .await
        .map(|r| r.to_json())
        .expect("completes on the third request");
    assert_eq!(
        r["attempts"],
        json!({"count": 3, "outputTokens": 18, "usageComplete": true, "structuredOutput": "native"})
    );
    assert_eq!(
        r["usage"]["outputTokens"], 7,
        "usage describes the final attempt only"
    );
    assert_eq!(provider.request_count(), 3);
    let ev = events(&host, "r1").await;
    assert_eq!(count(&ev, kind::PROVIDER_USAGE), 3);
    assert_eq!(count(&ev, kind::RETRY_ATTEMPTED), 2);
    // The retry after a schema violation carries a corrective note; the budget is unchanged.
    let sent = provider.requests();
    assert!(sent[2].messages.len() > sent[0].messages.len());
    assert!(sent.iter().all(|r| r.max_tokens == 100));
}

#[tokio::test]
async fn truncation_grows_the_budget_unless_growth_is_off() {
    // A reply declaring 150 tokens fits only a budget grown from 100 to 200.
    let big = || Step::json(&json!({"title": "a long scene"}), 150);
    let (host, provider) = host_with(vec![big(), big()], |b| b);
    let r = host
        .call_ai_json(
            &key("grow", 0),
            &json!({"prompt": "t", "responseSchema": schema(), "maxTokens": 100}),
        )
        .await
        .map(|r| r.to_json())
        .expect("completes with a grown budget");
    assert_eq!(r["attempts"]["count"], 2);
    let budgets: Vec<u32> = provider.requests().iter().map(|r| r.max_tokens).collect();
    assert_eq!(budgets, [100, 200]);
    assert_eq!(count(&events(&host, "grow").await, kind::TRUNCATED), 1);

    let (host, provider) = host_with(vec![big(), big(), big()], |b| b);
    let failure = host
        .call_ai_json(
            &key("fixed", 0),
            &json!({"prompt": "t", "responseSchema": schema(), "maxTokens": 100, "retry": {"growMaxTokens": false}}),
        )
        .await.map(|r| r.to_json())
        .expect_err("never completes without growth");
    assert_eq!(
        failure.public.error,
        ErrorCode::EnvelopeTruncationUnrecoverable
    );
    assert!(
        provider.requests().iter().all(|r| r.max_tokens <= 100),
        "no request above maxTokens"
    );
    let ev = events(&host, "fixed").await;
    assert!(
        ev.iter()
            .filter(|e| e.kind() == kind::PROVIDER_USAGE)
            .all(|e| e.u64("outputTokens") <= Some(100))
    );
    let exhausted: Vec<_> = ev
        .iter()
        .filter(|e| e.kind() == kind::RETRY_EXHAUSTED)
        .collect();
    assert_eq!(exhausted.len(), 1);
    assert_eq!(exhausted[0].u64("totalAttempts"), Some(3));
}

#[tokio::test]
async fn growth_stops_at_the_provider_maximum() {
    let big = || Step::json(&json!({"title": "x"}), 10_000);
    let (host, provider) = host_with(vec![big(), big(), big()], |b| b.provider_max_tokens(300));
    let _ = host
        .call_ai_json(
            &key("cap", 0),
            &json!({"prompt": "t", "responseSchema": schema(), "maxTokens": 100}),
        )
        .await
        .map(|r| r.to_json());
    let budgets: Vec<u32> = provider.requests().iter().map(|r| r.max_tokens).collect();
    assert_eq!(budgets, [100, 200, 300]);
}

#[tokio::test]
async fn a_refusal_makes_exactly_one_request_and_its_text_stays_private() {
    let refusal = Step::text("I refuse: SECRET-POLICY-7", 3).finish(FinishReason::ContentFilter);
    let (host, provider) = host_with(vec![refusal, valid(), valid()], |b| b);
    let f = host
        .call_ai_json(
            &key("ref", 0),
            &json!({"prompt": "t", "responseSchema": schema()}),
        )
        .await
        .map(|r| r.to_json())
        .expect_err("refused");
    assert_eq!(f.public.error, ErrorCode::EnvelopeRefusal);
    assert_eq!(provider.request_count(), 1);
    let ev = events(&host, "ref").await;
    assert_eq!(count(&ev, kind::REFUSAL), 1);
    assert!(
        !serde_json::to_string(&ev.iter().map(|e| e.payload()).collect::<Vec<_>>())
            .unwrap_or_default()
            .contains("SECRET")
    );
    assert!(!f.public.message.contains("SECRET"));
    assert!(
        host.diagnostics()
            .iter()
            .any(|d| d.cause.contains("SECRET-POLICY-7")),
        "the cause is kept privately"
    );
}

#[tokio::test]
async fn max_attempts_is_clamped_to_the_ceiling_and_one_turns_retries_off() {
    let bad = || Step::text("not json", 1);
    let (host, provider) = host_with((0..20).map(|_| bad()).collect(), |b| b);
    let f = host
        .call_ai_json(
            &key("clamp", 0),
            &json!({"prompt": "t", "responseSchema": schema(), "retry": {"maxAttempts": 16}}),
        )
        .await
        .map(|r| r.to_json())
        .expect_err("invalid every time");
    assert_eq!(f.public.error, ErrorCode::EnvelopeInvalid);
    assert_eq!(provider.request_count(), 3, "the ceiling of 3 holds");

    let (host, provider) = host_with(vec![bad(), valid()], |b| b);
    let _ = host
        .call_ai_json(
            &key("one", 0),
            &json!({"prompt": "t", "responseSchema": schema(), "retry": {"maxAttempts": 1}}),
        )
        .await
        .map(|r| r.to_json())
        .expect_err("no retry");
    assert_eq!(provider.request_count(), 1);
    let ev = events(&host, "one").await;
    let ex: Vec<_> = ev
        .iter()
        .filter(|e| e.kind() == kind::RETRY_EXHAUSTED)
        .collect();
    assert_eq!(ex[0].u64("totalAttempts"), Some(1));
}

#[tokio::test]
async fn a_malformed_retry_is_refused_before_any_request() {
    for (retry, field) in [
        (json!({"maxAttempts": 0}), "retry.maxAttempts"),
        (json!({"maxAttempts": 17}), "retry.maxAttempts"),
        (json!({"maxAttempts": 2.5}), "retry.maxAttempts"),
        (json!({"maxAttempts": "3"}), "retry.maxAttempts"),
        (json!({"growMaxTokens": "no"}), "retry.growMaxTokens"),
        (json!({"maxAttempt": 2}), "retry.maxAttempt"),
    ] {
        let (host, provider) = host_with(vec![valid()], |b| b);
        let f = host
            .call_ai_json(
                &key("bad", 0),
                &json!({"prompt": "t", "responseSchema": schema(), "retry": retry}),
            )
            .await
            .map(|r| r.to_json())
            .expect_err("refused");
        assert_eq!(f.public.error, ErrorCode::ValidationError);
        assert_eq!(f.public.field(), Some(field));
        assert_eq!(provider.request_count(), 0);
    }
}

#[tokio::test]
async fn an_older_host_ignores_retry_and_reports_no_attempts() {
    let (host, provider) = host_with(vec![Step::text("x", 1), valid()], |b| b.older_host());
    let r = host
        .call_ai_json(
            &key("old", 0),
            &json!({"prompt": "t", "responseSchema": schema(), "retry": {"maxAttempts": 0}}),
        )
        .await
        .map(|r| r.to_json())
        .expect("an older host ignores the unknown field");
    assert!(r.get("attempts").is_none());
    assert_eq!(provider.request_count(), 2);
    assert!(host.capabilities().call_accounting.is_none());
}

#[tokio::test]
async fn the_fallback_request_is_counted_in_attempts_and_in_the_cap() {
    let bad = || Step::text("not json", 2);
    let (host, provider) = host_with(
        vec![bad(), bad(), valid().mode(StructuredOutputMode::Prompt)],
        |b| b.nl_fallback(true),
    );
    let r = host
        .call_ai_json(
            &key("fb", 0),
            &json!({"prompt": "t", "responseSchema": schema()}),
        )
        .await
        .map(|r| r.to_json())
        .expect("fallback");
    assert_eq!(r["attempts"]["count"], 3);
    assert_eq!(r["attempts"]["structuredOutput"], "prompt");
    assert_eq!(provider.request_count(), 3);
    assert_eq!(
        count(&events(&host, "fb").await, kind::NL_TO_FORMAT_ENGAGED),
        1
    );
}

#[tokio::test]
async fn usage_withheld_makes_usage_incomplete_and_emits_no_usage_event() {
    let (host, _) = host_with(vec![Step::text("x", 4).without_usage(), valid()], |b| b);
    let r = host
        .call_ai_json(
            &key("u", 0),
            &json!({"prompt": "t", "responseSchema": schema()}),
        )
        .await
        .map(|r| r.to_json())
        .expect("ok");
    assert_eq!(
        r["attempts"],
        json!({"count": 2, "outputTokens": 7, "usageComplete": false, "structuredOutput": "native"})
    );
    assert_eq!(count(&events(&host, "u").await, kind::PROVIDER_USAGE), 1);
}

#[tokio::test]
async fn a_plain_call_is_one_request_without_structured_output() {
    let (host, provider) = host_with(vec![Step::text("hello", 2), valid()], |b| b);
    let r = host
        .call_ai_json(&key("p", 0), &json!({"prompt": "t"}))
        .await
        .map(|r| r.to_json())
        .expect("ok");
    assert_eq!(r["content"], "hello");
    assert_eq!(
        r["attempts"],
        json!({"count": 1, "outputTokens": 2, "usageComplete": true})
    );
    assert_eq!(provider.request_count(), 1);
}

#[tokio::test]
async fn concurrent_calls_never_exceed_the_generation_cap() {
    let (host, provider) = host_with((0..40).map(|_| valid()).collect(), |b| {
        b.max_concurrent_generations(3)
    });
    let host = Arc::new(host);
    let mut tasks = Vec::new();
    for i in 0..40 {
        let host = Arc::clone(&host);
        tasks.push(tokio::spawn(async move {
            host.call_ai_json(
                &key("conc", i),
                &json!({"prompt": "t", "responseSchema": schema()}),
            )
            .await
            .map(|r| r.to_json())
            .is_ok()
        }));
    }
    for t in tasks {
        assert!(t.await.expect("task"));
    }
    assert_eq!(provider.request_count(), 40);
    assert!(
        provider.max_in_flight() <= 3,
        "saw {} in flight",
        provider.max_in_flight()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_generation_cap_holds_on_a_multi_thread_runtime() {
    let (host, provider) = host_with((0..64).map(|_| valid()).collect(), |b| {
        b.max_concurrent_generations(2)
    });
    let host = Arc::new(host);
    let tasks: Vec<_> = (0..64)
        .map(|i| {
            let host = Arc::clone(&host);
            tokio::spawn(async move {
                host.call_ai_json(
                    &key("mt", i),
                    &json!({"prompt": "t", "responseSchema": schema()}),
                )
                .await
                .map(|r| r.to_json())
                .is_ok()
            })
        })
        .collect();
    for t in tasks {
        assert!(t.await.expect("task"));
    }
    assert!(provider.max_in_flight() <= 2);
    assert!(provider.max_in_flight() >= 1);
}

#[tokio::test]
async fn the_run_ceiling_refuses_before_dispatch_and_the_refusal_is_not_charged() {
    let (host, provider) = host_with((0..5).map(|_| Step::text("x", 1)).collect(), |b| {
        b.max_generations_per_run(2)
    });
    let _ = host
        .call_ai_json(&key("ceil", 0), &json!({"prompt": "a"}))
        .await
        .map(|r| r.to_json())
        .expect("1");
    let _ = host
        .call_ai_json(&key("ceil", 1), &json!({"prompt": "b"}))
        .await
        .map(|r| r.to_json())
        .expect("2");
    let f = host
        .call_ai_json(&key("ceil", 2), &json!({"prompt": "c"}))
        .await
        .map(|r| r.to_json())
        .expect_err("refused");
    assert_eq!(f.public.error, ErrorCode::BudgetExhausted);
    assert_eq!(provider.request_count(), 2);
    let ledger = host
        .ledger(Some(&RunId::new("ceil")))
        .await
        .expect("ledger");
    assert_eq!(ledger.len(), 2);
}

#[tokio::test]
async fn charges_go_to_the_beneficiaries_or_the_owner() {
    let (host, _) = host_with(vec![Step::text("x", 5), Step::text("y", 6)], |b| b);
    let _ = host
        .call_ai_json(
            &key("bill", 0),
            &json!({"prompt": "a", "beneficiaryUserIds": ["ana", "bo"]}),
        )
        .await
        .map(|r| r.to_json())
        .expect("ok");
    let _ = host
        .call_ai_json(&key("bill", 1), &json!({"prompt": "b"}))
        .await
        .map(|r| r.to_json())
        .expect("ok");
    let by = host
        .charges_by_beneficiary(Some(&RunId::new("bill")))
        .await
        .expect("ledger");
    assert_eq!(by.get("ana"), Some(&(1, 5)));
    assert_eq!(by.get("bo"), Some(&(1, 5)));
    assert_eq!(by.get("local-user"), Some(&(1, 6)));
}

#[tokio::test]
async fn re_entry_replays_the_exact_result_and_a_changed_request_is_refused() {
    let (host, provider) = host_with(vec![Step::text("not json", 1), valid()], |b| b);
    let req = json!({"prompt": "t", "responseSchema": schema()});
    let first = host
        .call_ai_json(&key("re", 0), &req)
        .await
        .map(|r| r.to_json())
        .expect("ok");
    let usage_events = count(&events(&host, "re").await, kind::PROVIDER_USAGE);
    let again = host
        .call_ai_json(&key("re", 0), &req)
        .await
        .map(|r| r.to_json())
        .expect("replayed");
    assert_eq!(first.to_string(), again.to_string(), "byte-identical");
    assert_eq!(provider.request_count(), 2, "no new provider request");
    assert_eq!(
        count(&events(&host, "re").await, kind::PROVIDER_USAGE),
        usage_events,
        "no new usage event"
    );
    assert_eq!(
        host.ledger(Some(&RunId::new("re")))
            .await
            .expect("ledger")
            .len(),
        1,
        "no new charge"
    );
    let changed = json!({"prompt": "t!", "responseSchema": schema()});
    let f = host
        .call_ai_json(&key("re", 0), &changed)
        .await
        .map(|r| r.to_json())
        .expect_err("integrity error");
    assert_eq!(f.public.error, ErrorCode::IdempotencyKeyMismatch);
}

#[tokio::test]
async fn a_provider_that_never_answers_is_an_ambiguous_terminal_failure() {
    let (host, provider) = host_with(vec![Step::Hang, valid()], |b| {
        b.provider_timeout(Duration::from_millis(50))
    });
    let req = json!({"prompt": "t", "responseSchema": schema(), "beneficiaryUserIds": ["ana"]});
    let f = host
        .call_ai_json(&key("amb", 0), &req)
        .await
        .map(|r| r.to_json())
        .expect_err("ambiguous");
    assert_eq!(f.public.error, ErrorCode::UpstreamUnavailable);
    assert_eq!(
        provider.request_count(),
        1,
        "never a second generation on its own"
    );
    assert!(
        host.ledger(Some(&RunId::new("amb")))
            .await
            .expect("ledger")
            .is_empty(),
        "never charged"
    );
    assert!(host.diagnostics().iter().any(|d| d.ambiguous));
    // Re-entry replays the terminal failure, still without a provider request.
    let f = host
        .call_ai_json(&key("amb", 0), &req)
        .await
        .map(|r| r.to_json())
        .expect_err("still failed");
    assert_eq!(f.public.error, ErrorCode::UpstreamUnavailable);
    assert_eq!(provider.request_count(), 1);
}

#[tokio::test]
async fn lineage_must_name_a_completed_attempt_of_the_same_run() {
    let (host, _) = host_with(vec![valid(), valid(), valid()], |b| b);
    let first = host
        .call_ai_json(
            &key("lin", 0),
            &json!({"prompt": "t", "responseSchema": schema()}),
        )
        .await
        .map(|r| r.to_json())
        .expect("ok");
    let id = first["attemptId"].as_str().expect("attempt id").to_owned();
    let retry = json!({"prompt": "t2", "responseSchema": schema(), "retryOfAttemptId": id, "retryReason": "invalid_output"});
    host.call_ai_json(&key("lin", 1), &retry)
        .await
        .map(|r| r.to_json())
        .expect("a deliberate retry is a new call");
    let f = host
        .call_ai_json(&key("other-run", 0), &retry)
        .await
        .map(|r| r.to_json())
        .expect_err("another run's attempt");
    assert_eq!(f.public.field(), Some("retryOfAttemptId"));
    let f = host
        .call_ai_json(&key("lin", 2), &json!({"prompt": "t", "retryOfAttemptId": "att_madeup", "retryReason": "user_requested"}))
        .await.map(|r| r.to_json())
        .expect_err("made up");
    assert_eq!(f.public.field(), Some("retryOfAttemptId"));
    assert_eq!(
        host.ledger(Some(&RunId::new("lin")))
            .await
            .expect("ledger")
            .len(),
        2,
        "the retry is charged again"
    );
}

#[tokio::test]
async fn a_script_loads_from_json_with_errors_that_name_the_field() {
    let s = Script::from_json(
        &json!([{"content": {"a": 1}, "usage": false}, {"error": "503"}, {"hang": true}]),
    )
    .expect("valid");
    assert_eq!(s.0.len(), 3);
    let e = Script::from_json(&json!([{"content": "x"}, {"usage": 3}])).expect_err("bad");
    assert_eq!(e.field, "script[1].usage");
}

#[tokio::test]
async fn events_carry_sequence_numbers_in_order() {
    let (host, _) = host_with(vec![Step::text("x", 1), valid()], |b| b);
    let _ = host
        .call_ai_json(
            &key("seq", 0),
            &json!({"prompt": "t", "responseSchema": schema()}),
        )
        .await
        .map(|r| r.to_json());
    let ev = events(&host, "seq").await;
    let seqs: Vec<u64> = ev.iter().map(|e| e.sequence).collect();
    assert_eq!(seqs, (0..ev.len() as u64).collect::<Vec<_>>());
}

#[tokio::test]
async fn a_failure_is_settled_only_in_its_own_run() {
    let (host, _) = host_with(vec![Step::Error("boom".into())], |b| b);
    let f = host
        .call_ai_json(&key("mine", 0), &json!({"prompt": "t"}))
        .await
        .map(|r| r.to_json())
        .expect_err("fails");
    let refused = host
        .settle_ai_failure(&RunId::new("theirs"), f.token)
        .await
        .expect_err("another run");
    assert_eq!(refused.error, ErrorCode::ValidationError);
    assert!(!host.diagnostics()[0].settled);
    host.settle_ai_failure(&RunId::new("mine"), f.token)
        .await
        .expect("its own run");
    assert!(host.diagnostics()[0].settled);
}

#[tokio::test]
async fn the_run_ceiling_holds_across_node_executions_of_the_run() {
    use schemars::JsonSchema;
    use wop_sdk::{AiRequest, NodeCtx, NodeError, Text, wop_node};

    #[derive(serde::Deserialize, JsonSchema)]
    struct Nothing {}

    #[wop_node(type_id = "community.test.twice", version = "1.0.0")]
    async fn twice(ctx: &NodeCtx<'_>, _input: Nothing) -> Result<u32, NodeError> {
        let topic = std::env::var("WOP_TEST_TOPIC").unwrap_or_default();
        ctx.call_ai(AiRequest::<Text>::prompt(format!("one {topic}")))
            .await?;
        ctx.call_ai(AiRequest::<Text>::prompt("two")).await?;
        Ok(2)
    }

    let (host, provider) = host_with((0..6).map(|_| Step::text("x", 1)).collect(), |b| {
        b.max_generations_per_run(3)
    });
    let run = RunId::new("ceiling-redelivered");
    let options = wop_sdk::local::RunOptions {
        run_id: Some(run.clone()),
        ..Default::default()
    };
    let first = host.run_with(&Twice, json!({}), options).await;
    assert_eq!(first.result, Ok(json!(2)));
    // Another node of the same run: one generation left under the ceiling of 3.
    let options = wop_sdk::local::RunOptions {
        run_id: Some(run.clone()),
        node_id: Some("second".into()),
        ..Default::default()
    };
    let second = host.run_with(&Twice, json!({}), options).await;
    assert_eq!(
        second.result.expect_err("the ceiling").error,
        ErrorCode::BudgetExhausted
    );
    assert_eq!(provider.request_count(), 3);
    assert_eq!(host.active_runs(), 0);
}
