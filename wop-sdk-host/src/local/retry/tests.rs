//! The retry loop, driven by hand: no runtime, no journal, no provider.

use super::*;
use wop_sdk::policy::RetryPolicy;

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
        fallback,
        true,
        NO_WAIT,
        7,
    )
}

fn miss(m: Miss) -> Observed {
    Observed::Missed(m, "{bad".into())
}

/// Runs the loop over `replies` (usage 10 each), returning the budgets sent, the signals and
/// the end.
fn drive(l: &mut RetryLoop, replies: Vec<Observed>) -> (Vec<u32>, Vec<Signal>, Option<End>) {
    let mut signals = Vec::new();
    let mut budgets = Vec::new();
    let mut emit = |s| signals.push(s);
    for r in replies {
        let a = l.next(&mut emit);
        budgets.push(a.max_tokens);
        if !matches!(r, Observed::ProviderError { .. }) {
            l.usage(Some(10));
        }
        if let Some(end) = l.observe(r, &mut emit) {
            return (budgets, signals, Some(end));
        }
    }
    (budgets, signals, None)
}

#[test]
fn truncation_grows_the_budget_up_to_the_provider_maximum() {
    let mut l = looped(None, false);
    let (budgets, signals, end) = drive(
        &mut l,
        vec![
            miss(Miss::Truncation),
            miss(Miss::Truncation),
            Observed::Accepted,
        ],
    );
    assert_eq!(budgets, [100, 200, 400]);
    assert_eq!(end, Some(End::Completed));
    assert_eq!(signals.len(), 2);
    assert_eq!(
        (l.count(), l.output_tokens(), l.usage_complete()),
        (3, 30, true)
    );
}

#[test]
fn no_growth_keeps_every_budget_and_exhaustion_is_a_truncation_failure() {
    let mut l = looped(Some(RetryPolicy::__checked(2, false)), false);
    let (budgets, signals, end) =
        drive(&mut l, vec![miss(Miss::Truncation), miss(Miss::Truncation)]);
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
    let (_, _, end) = drive(&mut l, vec![miss(Miss::Schema("at ``: x".into()))]);
    assert_eq!(end, None);
    assert_eq!(l.messages().len(), 3);
    let (_, _, end) = drive(&mut l, vec![Observed::Refused("no".into())]);
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
        l.usage(Some(1));
        assert_eq!(l.observe(miss(Miss::Parse("x".into())), &mut emit), None);
    }
    let last = l.next(&mut emit);
    assert!(last.fallback);
    assert_eq!(last.mode, Some(StructuredOutputMode::Prompt));
    assert_eq!(l.messages().len(), 1);
    l.usage(Some(1));
    assert!(
        l.observe(miss(Miss::Parse("x".into())), &mut emit)
            .is_some()
    );
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
    let (budgets, signals, end) = drive(&mut l, vec![miss(Miss::Parse("x".into()))]);
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
        false,
        true,
        backoff,
        1,
    );
    let mut emit = |_| {};
    assert_eq!(l.next(&mut emit).delay, Duration::ZERO);
    let limited = Observed::ProviderError {
        transient: true,
        reached: true,
        retry_after: Some(Duration::from_secs(2)),
        cause: "429".into(),
    };
    assert_eq!(l.observe(limited, &mut emit), None);
    assert_eq!(l.next(&mut emit).delay, Duration::from_secs(2));
    let refused = Observed::ProviderError {
        transient: true,
        reached: false,
        retry_after: None,
        cause: "connection refused".into(),
    };
    assert_eq!(l.observe(refused, &mut emit), None);
    let third = l.next(&mut emit);
    assert!(third.delay >= Duration::from_millis(100) && third.delay <= Duration::from_millis(200));
    l.usage(Some(5));
    assert_eq!(
        l.observe(Observed::Accepted, &mut emit),
        Some(End::Completed)
    );
    // The 429 reached the provider (an attempt without usage); the refused connection did not.
    assert_eq!((l.count(), l.sent(), l.usage_complete()), (2, 3, false));
}

#[test]
fn a_permanent_provider_error_ends_the_call() {
    let mut l = looped(None, false);
    let mut emit = |_| {};
    l.next(&mut emit);
    let end = l.observe(
        Observed::ProviderError {
            transient: false,
            reached: true,
            retry_after: None,
            cause: "401".into(),
        },
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
        let refused = Observed::ProviderError {
            transient: true,
            reached: false,
            retry_after: Some(Duration::ZERO),
            cause: "connection refused".into(),
        };
        end = l.observe(refused, &mut emit);
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
    assert_eq!((l.count(), l.sent()), (0, 3));
}
