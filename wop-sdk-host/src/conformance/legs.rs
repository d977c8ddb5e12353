//! The eight `0248.*` legs and [`run_conformance`]; the target they run against is in `target.rs`,
//! their inputs in `inputs.rs`.
//!
//! Each leg drives the fixture through [`ConformanceTarget`] and reads only what an outside
//! party sees: the node's output, the run's `provider.usage` and `envelope.retry-exhausted`
//! events, and the error of a failed node. The decision is the judge's ([`super::judges`]).

use super::inputs::{
    GROWTH_MAX_TOKENS, cap_input, count_input, growth_input, malformed_input, native_input,
    plain_input, usage_incomplete_input,
};
use super::judges;
use super::report::{Report, Verdict};
use super::target::{ConformanceTarget, Observed};
use serde_json::Value;

/// `0248.attempts-count`
pub const ATTEMPTS_COUNT: &str = "0248.attempts-count";
/// `0248.output-tokens-sum`
pub const OUTPUT_TOKENS_SUM: &str = "0248.output-tokens-sum";
/// `0248.usage-incomplete`
pub const USAGE_INCOMPLETE: &str = "0248.usage-incomplete";
/// `0248.structured-output`
pub const STRUCTURED_OUTPUT: &str = "0248.structured-output";
/// `0248.attempts-replayed`
pub const ATTEMPTS_REPLAYED: &str = "0248.attempts-replayed";
/// `0248.max-attempts-cap`
pub const MAX_ATTEMPTS_CAP: &str = "0248.max-attempts-cap";
/// `0248.no-budget-growth`
pub const NO_BUDGET_GROWTH: &str = "0248.no-budget-growth";
/// `0248.retry-malformed-refused`
pub const RETRY_MALFORMED_REFUSED: &str = "0248.retry-malformed-refused";

/// Every leg id, in the order [`run_conformance`] reports them.
pub const LEG_IDS: [&str; 8] = [
    ATTEMPTS_COUNT,
    OUTPUT_TOKENS_SUM,
    USAGE_INCOMPLETE,
    STRUCTURED_OUTPUT,
    ATTEMPTS_REPLAYED,
    MAX_ATTEMPTS_CAP,
    NO_BUDGET_GROWTH,
    RETRY_MALFORMED_REFUSED,
];

fn script_of(input: &Value) -> &Value {
    input.get("script").unwrap_or(&Value::Null)
}

/// Runs the eight `0248.*` legs against `target`, then the extra checks (the RFC 0248 MUSTs the
/// legs do not hold, see [`super::extra`]), and reports a verdict for each, the two kinds apart.
///
/// Gating (from the host's capability document): the attempts legs on
/// `callAccounting.attempts`, the cap, growth and malformed legs on `callAccounting.retryPolicy`,
/// the replay leg also on `replay.modes` containing `replay`. A gated-out leg is `skipped`. A
/// count run that fails because the host did not retry makes its legs `blocked`.
pub async fn run_conformance(target: &dyn ConformanceTarget) -> Report {
    let doc = target.host().capability_document();
    let ca = doc.call_accounting.unwrap_or_default();
    let replay = doc.replay_modes.iter().any(|m| m == "replay");
    let no_attempts =
        || Verdict::Skipped("the host does not advertise `callAccounting.attempts`".into());
    let no_policy =
        || Verdict::Skipped("the host does not advertise `callAccounting.retryPolicy`".into());
    let mut report = Report::default();
    let mut judged_count: Option<(Observed, Value)> = None;
    let mut push = |id: &str, v: Verdict| report.legs.push((id.to_owned(), v));

    // The count run feeds attempts-count, output-tokens-sum and attempts-replayed.
    if ca.attempts {
        let input = count_input();
        let count = target.run_fixture(input.clone()).await;
        let script = script_of(&input);
        match judges::count_run_blocked(&count) {
            Some(reason) => {
                push(ATTEMPTS_COUNT, Verdict::Blocked(reason.clone()));
                push(OUTPUT_TOKENS_SUM, Verdict::Blocked(reason.clone()));
                push(USAGE_INCOMPLETE, usage_incomplete(target).await);
                push(STRUCTURED_OUTPUT, structured_output(target).await);
                push(
                    ATTEMPTS_REPLAYED,
                    if replay {
                        Verdict::Blocked(reason)
                    } else {
                        no_replay()
                    },
                );
            }
            None => {
                push(
                    ATTEMPTS_COUNT,
                    Verdict::judged(judges::attempts_count(&count, script)),
                );
                push(
                    OUTPUT_TOKENS_SUM,
                    Verdict::judged(judges::output_tokens_sum(&count, script)),
                );
                push(USAGE_INCOMPLETE, usage_incomplete(target).await);
                push(STRUCTURED_OUTPUT, structured_output(target).await);
                let v = if replay {
                    let fork = target.replay(&count.run_id).await;
                    Verdict::judged(judges::attempts_replayed(&count, &fork))
                } else {
                    no_replay()
                };
                push(ATTEMPTS_REPLAYED, v);
                judged_count = Some((count, script.clone()));
            }
        }
    } else {
        for id in [
            ATTEMPTS_COUNT,
            OUTPUT_TOKENS_SUM,
            USAGE_INCOMPLETE,
            STRUCTURED_OUTPUT,
            ATTEMPTS_REPLAYED,
        ] {
            push(id, no_attempts());
        }
    }

    if ca.retry_policy {
        let cap = target.run_fixture(cap_input()).await;
        push(
            MAX_ATTEMPTS_CAP,
            Verdict::judged(judges::max_attempts_cap(&cap)),
        );
        let growth = target.run_fixture(growth_input()).await;
        push(
            NO_BUDGET_GROWTH,
            Verdict::judged(judges::no_budget_growth(&growth, GROWTH_MAX_TOKENS)),
        );
        let malformed = target.run_fixture(malformed_input()).await;
        push(
            RETRY_MALFORMED_REFUSED,
            Verdict::judged(judges::retry_malformed_refused(&malformed)),
        );
    } else {
        for id in [MAX_ATTEMPTS_CAP, NO_BUDGET_GROWTH, RETRY_MALFORMED_REFUSED] {
            push(id, no_policy());
        }
    }
    report.extra = super::extra::run_extra(
        target,
        &doc,
        judged_count.as_ref().map(|(obs, script)| (obs, script)),
    )
    .await;
    report
}

fn no_replay() -> Verdict {
    Verdict::Skipped("the host does not advertise `replay.modes: [\"replay\"]`".into())
}

async fn usage_incomplete(target: &dyn ConformanceTarget) -> Verdict {
    let obs = target.run_fixture(usage_incomplete_input()).await;
    Verdict::judged(judges::usage_incomplete(&obs))
}

async fn structured_output(target: &dyn ConformanceTarget) -> Verdict {
    let plain = target.run_fixture(plain_input()).await;
    let native = target.run_fixture(native_input()).await;
    Verdict::judged(judges::structured_output(&plain, &native))
}
