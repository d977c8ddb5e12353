//! The retry loop, driven by hand: no runtime, no journal, no provider.

use super::*;
use crate::provider::ProviderError;
use wop_sdk::policy::RetryPolicy;
use wop_sdk::wire::{FinishReason, Usage};

/// The checks of a host without limits, whose schema accepts any object.
pub(super) struct Lenient;

impl ReplyChecks for Lenient {
    fn oversized(&self, _reply: &ProviderReply) -> Option<String> {
        None
    }
    fn parse_json(&self, text: &str) -> Result<Value, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }
    fn validate(&mut self, data: &Value) -> Result<(), String> {
        if data.get("bad").is_some() {
            Err("at `/bad`: not allowed".into())
        } else {
            Ok(())
        }
    }
}

/// A reply with `content`, `finish` and 10 output tokens.
pub(super) fn answer(content: &str, finish: FinishReason) -> Result<ProviderReply, ProviderError> {
    Ok(ProviderReply {
        usage: Some(Usage {
            input_tokens: None,
            output_tokens: Some(10),
            total_tokens: None,
        }),
        finish_reason: finish,
        ..crate::testing::reply(content)
    })
}

fn ok() -> Result<ProviderReply, ProviderError> {
    answer("{}", FinishReason::Stop)
}

fn truncated() -> Result<ProviderReply, ProviderError> {
    answer("{", FinishReason::Length)
}

fn unparsable() -> Result<ProviderReply, ProviderError> {
    answer("{bad", FinishReason::Stop)
}

fn invalid() -> Result<ProviderReply, ProviderError> {
    answer(r#"{"bad": 1}"#, FinishReason::Stop)
}

fn transient(
    reached: bool,
    retry_after: Option<Duration>,
    cause: &str,
) -> Result<ProviderReply, ProviderError> {
    Err(ProviderError::Transient {
        message: cause.into(),
        retry_after,
        reached,
    })
}

const NO_WAIT: Backoff = Backoff {
    base: Duration::ZERO,
    max: Duration::ZERO,
};

fn schema() -> Option<Arc<Value>> {
    Some(Arc::new(serde_json::json!({"type": "object"})))
}

fn looped(policy: Option<RetryPolicy>, fallback: bool) -> RetryLoop {
    let plan = AttemptPlan::new(true, 3, policy, 100, 2, Some(1000));
    RetryLoop::new(
        plan,
        schema(),
        vec![Message::user("q")],
        Rules {
            fallback,
            native: true,
            ..Rules::default()
        },
        NO_WAIT,
        7,
    )
}

/// Runs the loop over `replies`, returning the budgets sent, the loop's own signals (retries,
/// exhaustion, fallback: not usage, truncation or refusal) and the end.
fn drive(
    l: &mut RetryLoop,
    replies: Vec<Result<ProviderReply, ProviderError>>,
) -> (Vec<u32>, Vec<Signal>, Option<End>) {
    let mut signals = Vec::new();
    let mut budgets = Vec::new();
    let mut emit = |s: Signal| {
        if !matches!(
            s,
            Signal::Usage { .. }
                | Signal::Unmetered { .. }
                | Signal::Truncated { .. }
                | Signal::Refusal { .. }
        ) {
            signals.push(s);
        }
    };
    for r in replies {
        let a = l.next(&mut emit);
        budgets.push(a.max_tokens);
        if let Some(end) = l.observe(r, &mut Lenient, &mut emit) {
            return (budgets, signals, Some(end));
        }
    }
    (budgets, signals, None)
}

#[test]
fn truncation_grows_the_budget_up_to_the_provider_maximum() {
    let mut l = looped(None, false);
    let (budgets, signals, end) = drive(&mut l, vec![truncated(), truncated(), ok()]);
    assert_eq!(budgets, [100, 200, 400]);
    assert!(matches!(end, Some(End::Completed(_))), "{end:?}");
    assert_eq!(signals.len(), 2);
    assert_eq!(
        (l.count(), l.output_tokens(), l.usage_complete()),
        (3, 30, true)
    );
}

#[test]
fn no_growth_keeps_every_budget_and_exhaustion_is_a_truncation_failure() {
    let mut l = looped(Some(RetryPolicy::__checked(2, false)), false);
    let (budgets, signals, end) = drive(&mut l, vec![truncated(), truncated()]);
    assert_eq!(budgets, [100, 100]);
    assert!(matches!(
        end,
        Some(End::Failed {
            code: ErrorCode::EnvelopeTruncationUnrecoverable,
            ..
        })
    ));
    assert_eq!(
        signals.last(),
        Some(&Signal::RetryExhausted {
            total: 2,
            reason: "truncation"
        })
    );
}

#[test]
fn a_schema_miss_adds_a_corrective_note_and_a_refusal_is_never_retried() {
    let mut l = looped(None, false);
    let (_, _, end) = drive(&mut l, vec![invalid()]);
    assert!(end.is_none());
    assert_eq!(l.messages().len(), 3);
    let (_, _, end) = drive(&mut l, vec![answer("no", FinishReason::ContentFilter)]);
    assert!(matches!(
        end,
        Some(End::Failed {
            code: ErrorCode::EnvelopeRefusal,
            ..
        })
    ));
    assert_eq!(l.count(), 2);
}

#[test]
fn the_fallback_takes_the_last_request_the_cap_allows() {
    let mut l = looped(None, true);
    let mut signals = Vec::new();
    let mut emit = |s| signals.push(s);
    for _ in 0..2 {
        assert!(!l.next(&mut emit).fallback);
        assert!(l.observe(unparsable(), &mut Lenient, &mut emit).is_none());
    }
    let last = l.next(&mut emit);
    assert!(last.fallback);
    assert_eq!(last.mode, Some(StructuredOutputMode::Prompt));
    assert_eq!(l.messages().len(), 1);
    assert!(l.observe(unparsable(), &mut Lenient, &mut emit).is_some());
    assert_eq!(
        signals
            .iter()
            .filter(|s| **s == Signal::FallbackEngaged)
            .count(),
        1
    );
    // One retry announced (request 2); the fallback is announced as such, not as a retry.
    assert_eq!(
        signals
            .iter()
            .filter(|s| matches!(s, Signal::RetryAttempted { .. }))
            .count(),
        1
    );
}

#[test]
fn a_cap_of_one_makes_one_request() {
    let mut l = looped(Some(RetryPolicy::__checked(1, true)), true);
    let (budgets, signals, end) = drive(&mut l, vec![unparsable()]);
    assert_eq!(budgets.len(), 1);
    assert!(end.is_some());
    assert_eq!(
        signals,
        [Signal::RetryExhausted {
            total: 1,
            reason: "parse-error"
        }]
    );
}

#[test]
fn transient_errors_count_when_they_reached_the_provider_and_wait_as_told() {
    let backoff = Backoff {
        base: Duration::from_millis(100),
        max: Duration::from_secs(5),
    };
    let plan = AttemptPlan::new(true, 3, None, 100, 2, None);
    let mut l = RetryLoop::new(
        plan,
        schema(),
        vec![Message::user("q")],
        Rules {
            native: true,
            ..Rules::default()
        },
        backoff,
        1,
    );
    let mut emit = |_| {};
    assert_eq!(l.next(&mut emit).delay, Duration::ZERO);
    let limited = transient(true, Some(Duration::from_secs(2)), "429");
    assert!(l.observe(limited, &mut Lenient, &mut emit).is_none());
    assert_eq!(l.next(&mut emit).delay, Duration::from_secs(2));
    let refused = transient(false, None, "connection refused");
    assert!(l.observe(refused, &mut Lenient, &mut emit).is_none());
    let third = l.next(&mut emit);
    assert!(third.delay >= Duration::from_millis(100) && third.delay <= Duration::from_millis(200));
    assert!(matches!(
        l.observe(ok(), &mut Lenient, &mut emit),
        Some(End::Completed(_))
    ));
    // The 429 reached the provider (an attempt that generated nothing, so no usage is missing);
    // the refused connection did not, and gave its number back.
    assert_eq!(
        (l.count(), l.sent(), l.unreached(), l.usage_complete()),
        (2, 2, 1, true)
    );
}

#[test]
fn a_permanent_provider_error_ends_the_call() {
    let mut l = looped(None, false);
    let mut emit = |_| {};
    l.next(&mut emit);
    let end = l.observe(
        Err(ProviderError::Failed("401".into())),
        &mut Lenient,
        &mut emit,
    );
    assert!(matches!(
        end,
        Some(End::Failed {
            code: ErrorCode::UpstreamUnavailable,
            ..
        })
    ));
    assert_eq!(l.count(), 1);
}

#[test]
fn no_exhaustion_is_reported_when_no_request_reached_a_provider() {
    let mut l = looped(None, false);
    let mut signals = Vec::new();
    let mut emit = |s| signals.push(s);
    let mut end = None;
    for _ in 0..3 {
        l.next(&mut emit);
        let refused = transient(false, Some(Duration::ZERO), "connection refused");
        end = l.observe(refused, &mut Lenient, &mut emit);
    }
    assert!(matches!(
        end,
        Some(End::Failed {
            code: ErrorCode::UpstreamUnavailable,
            ..
        })
    ));
    // `retry-exhausted.totalAttempts` is at least 1: with no attempt there is no event.
    assert!(
        !signals
            .iter()
            .any(|s| matches!(s, Signal::RetryExhausted { .. })),
        "{signals:?}"
    );
    assert_eq!((l.count(), l.sent(), l.unreached()), (0, 0, 3));
}
