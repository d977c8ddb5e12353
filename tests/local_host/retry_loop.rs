//! The retry loop and its RFC 0248 accounting: schema violations, truncation and budget growth,
//! a refusal, the per-call `retry`, an older host, the fallback, withheld usage, a plain call.

use super::*;

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
