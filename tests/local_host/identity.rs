//! Attempt identity and the run's records: re-entry replays or refuses, a dispatch that never
//! answers, lineage, scripts, event sequence numbers, settling in the failure's own run.

use super::*;

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
