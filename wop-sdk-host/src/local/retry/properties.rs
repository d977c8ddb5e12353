//! Properties of the retry machine over generated calls: any plan (plain or structured, any
//! ceiling, any policy, any budget, growth or not, the fallback or not) against any sequence of
//! provider answers. Requests sent never exceed the plan; the budgets sent never exceed the
//! plan's worst case (nor the request's own budget without growth, nor the provider's maximum);
//! every path ends within the plan; what is counted agrees with what was sent.

use super::tests::{Lenient, answer};
use super::*;
use crate::provider::ProviderError;
use proptest::prelude::*;
use wop_sdk::policy::RetryPolicy;
use wop_sdk::wire::FinishReason;

#[derive(Clone, Debug)]
enum Kind {
    Ok,
    OkWithoutUsage,
    Truncated,
    Unparsable,
    Invalid,
    Refusal,
    Transient { reached: bool },
    Failed,
    NoAnswer,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        1 => Just(Kind::Ok),
        1 => Just(Kind::OkWithoutUsage),
        4 => Just(Kind::Truncated),
        4 => Just(Kind::Unparsable),
        4 => Just(Kind::Invalid),
        1 => Just(Kind::Refusal),
        3 => any::<bool>().prop_map(|reached| Kind::Transient { reached }),
        1 => Just(Kind::Failed),
        1 => Just(Kind::NoAnswer),
    ]
}

fn make(kind: &Kind, structured: bool) -> Result<ProviderReply, ProviderError> {
    let body = if structured { "{}" } else { "plain text" };
    match kind {
        Kind::Ok => answer(body, FinishReason::Stop),
        Kind::OkWithoutUsage => Ok(crate::testing::reply(body)),
        Kind::Truncated => answer(body, FinishReason::Length),
        Kind::Unparsable => answer("{not json", FinishReason::Stop),
        Kind::Invalid => answer(r#"{"bad": true}"#, FinishReason::Stop),
        Kind::Refusal => answer("no", FinishReason::ContentFilter),
        Kind::Transient { reached } => Err(ProviderError::Transient {
            message: "503".into(),
            retry_after: None,
            reached: *reached,
        }),
        Kind::Failed => Err(ProviderError::Failed("401".into())),
        Kind::NoAnswer => Err(ProviderError::NoAnswer("timed out".into())),
    }
}

#[derive(Debug)]
struct Call {
    structured: bool,
    ceiling: u8,
    policy: Option<(i64, bool)>,
    max_tokens: u32,
    multiplier: u32,
    provider_max: Option<u32>,
    fallback: bool,
    native: bool,
    answers: Vec<Kind>,
}

fn call() -> impl Strategy<Value = Call> {
    (
        any::<bool>(),
        1u8..=16,
        proptest::option::of((1i64..=20, any::<bool>())),
        1u32..=5000,
        1u32..=8,
        proptest::option::of(1u32..=40_000),
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec(kind(), 0..24),
    )
        .prop_map(
            |(
                structured,
                ceiling,
                policy,
                max_tokens,
                multiplier,
                provider_max,
                fallback,
                native,
                answers,
            )| Call {
                structured,
                ceiling,
                policy,
                max_tokens,
                multiplier,
                provider_max,
                fallback,
                native,
                answers,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn requests_and_budgets_stay_within_the_plan_and_every_path_ends(c in call()) {
        // A `maxAttempts` above 16 is refused by the policy's constructor, as a host refuses it.
        let policy = c.policy.and_then(|(n, grow)| RetryPolicy::try_new(n, grow).ok());
        let plan = AttemptPlan::new(
            c.structured, c.ceiling, policy, c.max_tokens, c.multiplier, c.provider_max,
        );
        let schema = c.structured.then(|| Arc::new(serde_json::json!({"type": "object"})));
        let backoff = Backoff { base: Duration::ZERO, max: Duration::ZERO };
        let mut l = RetryLoop::new(
            plan, schema, vec![Message::user("q")],
            Rules { fallback: c.fallback, native: c.native, ..Rules::default() }, backoff, 9,
        );
        let mut exhausted = Vec::new();
        let mut emit = |s: Signal| {
            if let Signal::RetryExhausted { total, .. } = s {
                exhausted.push(total);
            }
        };
        let mut budgets: Vec<u32> = Vec::new();
        let mut end = None;
        let mut numbered = 0u32;
        // More answers than any plan allows: after the generated ones, every reply misses. A
        // connection that never reached the provider takes no number (the same request is tried
        // again) and is bounded apart, by the cap.
        for i in 0..(2 * plan.requests as usize + 8) {
            let attempt = l.next(&mut emit);
            prop_assert_eq!(attempt.number, numbered + 1);
            prop_assert!(attempt.number <= plan.requests, "request {} beyond the plan's {}", attempt.number, plan.requests);
            prop_assert_eq!(attempt.mode.is_some(), c.structured);
            let kind = c.answers.get(i).cloned().unwrap_or(Kind::Unparsable);
            if !matches!(kind, Kind::Transient { reached: false }) {
                numbered += 1;
                budgets.push(attempt.max_tokens);
            }
            if let Some(e) = l.observe(make(&kind, c.structured), &mut Lenient, &mut emit) {
                end = Some(e);
                break;
            }
        }
        prop_assert!(end.is_some(), "the call did not end within {} requests and as many unreached connections", plan.requests);
        prop_assert!(l.sent() <= plan.requests);
        prop_assert!(l.unreached() <= plan.requests);
        prop_assert_eq!(l.sent(), numbered);
        prop_assert!(l.count() <= l.sent(), "counted {} of {} sent", l.count(), l.sent());
        prop_assert!(l.generations() <= l.count());
        let sum: u64 = budgets.iter().map(|&b| u64::from(b)).sum();
        prop_assert!(sum <= plan.worst_case_output_tokens(), "budgets {:?} above the worst case {}", budgets, plan.worst_case_output_tokens());
        if !plan.grow {
            prop_assert!(budgets.iter().all(|&b| b <= plan.first_max_tokens), "{:?} grew", budgets);
        }
        if let Some(max) = c.provider_max {
            prop_assert!(budgets.iter().all(|&b| b <= max), "{:?} above the provider's {}", budgets, max);
        }
        // `retry-exhausted` at most once, and then with the requests that reached the provider.
        prop_assert!(exhausted.len() <= 1);
        if let Some(&total) = exhausted.first() {
            prop_assert_eq!(total, l.count());
            prop_assert!(total >= 1);
        }
    }
}
