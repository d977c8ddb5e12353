use super::*;
use serde_json::json;
use wop_sdk::host::RunId;
use wop_sdk::wire::ErrorEnvelope;

/// An event of `kind` as the host emitted it.
pub(in crate::conformance) fn ev(kind: &str, payload: Value) -> RunEvent {
    let event = wop_sdk::wire::Event::from_parts(kind, &payload).expect("a valid event");
    RunEvent::new("r", 0, String::new(), event)
}

/// A `provider.usage` event reporting `out` output tokens.
pub(in crate::conformance) fn usage(out: u64) -> RunEvent {
    ev(
        kind::PROVIDER_USAGE,
        json!({"provider": "mock", "model": "m", "inputTokens": 1, "outputTokens": out, "nodeId": "main"}),
    )
}

fn done(attempts: Value, events: Vec<RunEvent>) -> Observed {
    Observed {
        run_id: RunId::new("r"),
        output: Ok(json!({"attempts": attempts, "ok": true})),
        events,
        answers: vec![json!({"data": {}, "attempts": attempts})],
    }
}

/// A run that failed with `error`.
pub(in crate::conformance) fn failed(error: ErrorEnvelope, events: Vec<RunEvent>) -> Observed {
    Observed {
        run_id: RunId::new("r"),
        output: Err(error),
        events,
        answers: Vec::new(),
    }
}

fn count_script() -> Value {
    json!([
        {"content": "not json", "usage": {"outputTokens": 5}},
        {"content": {"a": 1}, "usage": {"outputTokens": 7}}
    ])
}

fn honest_count() -> Observed {
    done(
        json!({"count": 2, "outputTokens": 12, "usageComplete": true, "structuredOutput": "native"}),
        vec![usage(5), usage(7)],
    )
}

#[test]
fn attempts_count() {
    assert_eq!(
        super::attempts_count(&honest_count(), &count_script()),
        Ok(())
    );
    let lying = done(
        json!({"count": 1, "usageComplete": true}),
        vec![usage(5), usage(7)],
    );
    assert!(super::attempts_count(&lying, &count_script()).is_err());
    // Agreeing with its own events is not enough: the script served two replies.
    let hidden = done(json!({"count": 1, "usageComplete": true}), vec![usage(7)]);
    assert!(super::attempts_count(&hidden, &count_script()).is_err());
    let none = done(Value::Null, vec![usage(5), usage(7)]);
    assert!(super::attempts_count(&none, &count_script()).is_err());
}

#[test]
fn output_tokens_sum() {
    assert_eq!(
        super::output_tokens_sum(&honest_count(), &count_script()),
        Ok(())
    );
    let final_only = done(
        json!({"count": 2, "outputTokens": 7, "usageComplete": true}),
        vec![usage(5), usage(7)],
    );
    assert!(super::output_tokens_sum(&final_only, &count_script()).is_err());
    let events_disagree = done(
        json!({"count": 2, "outputTokens": 12, "usageComplete": true}),
        vec![usage(5)],
    );
    assert!(super::output_tokens_sum(&events_disagree, &count_script()).is_err());
    let incomplete = done(
        json!({"count": 2, "outputTokens": 12, "usageComplete": false}),
        vec![usage(5), usage(7)],
    );
    assert!(super::output_tokens_sum(&incomplete, &count_script()).is_err());
}

#[test]
fn usage_incomplete() {
    let ok = done(
        json!({"count": 1, "outputTokens": 0, "usageComplete": false}),
        vec![],
    );
    assert_eq!(super::usage_incomplete(&ok), Ok(()));
    let lie = done(
        json!({"count": 1, "outputTokens": 0, "usageComplete": true}),
        vec![],
    );
    assert!(super::usage_incomplete(&lie).is_err());
}

#[test]
fn structured_output() {
    let plain = done(json!({"count": 1, "usageComplete": true}), vec![]);
    let native = done(
        json!({"count": 1, "usageComplete": true, "structuredOutput": "native"}),
        vec![],
    );
    let prompt = done(
        json!({"count": 1, "usageComplete": true, "structuredOutput": "prompt"}),
        vec![],
    );
    assert_eq!(super::structured_output(&plain, &native), Ok(()));
    assert!(super::structured_output(&native, &native).is_err());
    assert!(super::structured_output(&plain, &prompt).is_err());
    assert!(super::structured_output(&plain, &plain).is_err());
}

#[test]
fn attempts_replayed() {
    assert_eq!(
        super::attempts_replayed(&honest_count(), &honest_count()),
        Ok(())
    );
    let redispatched = done(
        json!({"count": 1, "outputTokens": 7, "usageComplete": true, "structuredOutput": "native"}),
        vec![usage(7)],
    );
    assert!(super::attempts_replayed(&honest_count(), &redispatched).is_err());
    let missing = failed(
        ErrorEnvelope::new(ErrorCode::ReplaySourceMissing, "gone"),
        vec![],
    );
    assert!(super::attempts_replayed(&honest_count(), &missing).is_err());
    // The host's own bytes are judged: `2.0` is not `2`, though both parse to the same count.
    let mut reworded = honest_count();
    reworded.answers[0]["attempts"]["count"] = json!(2.0);
    assert!(super::attempts_replayed(&honest_count(), &reworded).is_err());
    let mut unrecorded = honest_count();
    unrecorded.answers.clear();
    assert!(super::attempts_replayed(&honest_count(), &unrecorded).is_err());
}

fn exhausted(total: u64) -> RunEvent {
    ev(
        "envelope.retry.exhausted", // the v1 spelling is read too
        json!({"nodeId": "main", "totalAttempts": total, "finalReason": "parse-error"}),
    )
}

#[test]
fn max_attempts_cap() {
    let invalid = || ErrorEnvelope::new(ErrorCode::EnvelopeInvalid, "no");
    assert_eq!(
        super::max_attempts_cap(&failed(invalid(), vec![usage(5), exhausted(1)])),
        Ok(())
    );
    // retry-exhausted is judged only when emitted.
    assert_eq!(
        super::max_attempts_cap(&failed(invalid(), vec![usage(5)])),
        Ok(())
    );
    assert!(super::max_attempts_cap(&failed(invalid(), vec![usage(5), usage(7)])).is_err());
    assert!(super::max_attempts_cap(&failed(invalid(), vec![usage(5), exhausted(2)])).is_err());
    assert!(super::max_attempts_cap(&honest_count()).is_err());
    let refused = ErrorEnvelope::validation("retry.maxAttempts", "no");
    assert!(super::max_attempts_cap(&failed(refused, vec![])).is_err());
}

#[test]
fn no_budget_growth() {
    let trunc = || ErrorEnvelope::new(ErrorCode::EnvelopeTruncationUnrecoverable, "no");
    assert_eq!(
        super::no_budget_growth(&failed(trunc(), vec![usage(100), usage(100)]), 100),
        Ok(())
    );
    assert!(super::no_budget_growth(&failed(trunc(), vec![usage(100), usage(150)]), 100).is_err());
    let completed = done(json!({"count": 2, "usageComplete": true}), vec![usage(100)]);
    assert!(super::no_budget_growth(&completed, 100).is_err());
}

#[test]
fn retry_malformed_refused() {
    let ok = failed(
        ErrorEnvelope::validation("retry.maxAttempts", "1..=16"),
        vec![],
    );
    assert_eq!(super::retry_malformed_refused(&ok), Ok(()));
    let wrong_field = failed(ErrorEnvelope::validation("retry", "bad"), vec![]);
    assert!(super::retry_malformed_refused(&wrong_field).is_err());
    let wrong_code = failed(ErrorEnvelope::new(ErrorCode::EnvelopeInvalid, "no"), vec![]);
    assert!(super::retry_malformed_refused(&wrong_code).is_err());
    assert!(super::retry_malformed_refused(&honest_count()).is_err());
}

#[test]
fn a_count_run_without_retry_is_blocked() {
    let no_retry = failed(
        ErrorEnvelope::new(ErrorCode::EnvelopeInvalid, "no"),
        vec![usage(5), exhausted(1)],
    );
    assert!(count_run_blocked(&no_retry).is_some());
    assert!(count_run_blocked(&honest_count()).is_none());
    let retried_then_failed = failed(
        ErrorEnvelope::new(ErrorCode::EnvelopeInvalid, "no"),
        vec![usage(5), usage(7)],
    );
    assert!(count_run_blocked(&retried_then_failed).is_none());
}
