//! The eight `0248.*` legs, the target they run against, and [`run_conformance`].
//!
//! Each leg drives the fixture through [`ConformanceTarget`] and reads only what an outside
//! party sees: the node's output, the run's `provider.usage` and `envelope.retry-exhausted`
//! events, and the error of a failed node. The decision is the judge's ([`super::judges`]).

use super::judges;
use super::report::{Report, Verdict};
use serde_json::{Value, json};
use std::sync::Arc;
use wop_sdk::host::{BoxFuture, Host, RunId};
use wop_sdk::wire::{ErrorEnvelope, RunEvent};

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

/// What an outside party observed of one fixture run.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// The run.
    pub run_id: RunId,
    /// The fixture node's output (`node.completed`) or its error (`node.failed`).
    pub output: Result<Value, ErrorEnvelope>,
    /// The run's event log.
    pub events: Vec<RunEvent>,
    /// Each `ctx.callAI` answer exactly as the host gave it, in call order (the host's own
    /// bytes, before the SDK parsed them): a target records them at its host boundary, e.g. with
    /// [`super::Recording`]. The judges of replay and of `usage` read these.
    pub answers: Vec<Value>,
}

/// A host under test, as the harness drives it.
///
/// The methods are async (they return a [`BoxFuture`]) so that `dyn ConformanceTarget` works.
pub trait ConformanceTarget: Send + Sync {
    /// The host: its capability document gates the legs.
    fn host(&self) -> Arc<dyn Host>;

    /// Runs the fixture node `conformance.callai.echo-attempts` on `input` in a new run (the
    /// host's mock serves `input.script`), and reports what was observed.
    fn run_fixture(&self, input: Value) -> BoxFuture<'_, Observed>;

    /// Runs a replay fork of `source` (a fixture run) and reports what was observed of the fork.
    fn replay<'a>(&'a self, source: &'a RunId) -> BoxFuture<'a, Observed>;
}

fn invalid_then_valid() -> Value {
    json!([
        {"content": "not json", "usage": {"outputTokens": 5}},
        {"content": {"answer": "ok"}, "usage": {"outputTokens": 7}}
    ])
}

/// The count run's input: invalid JSON, then valid.
pub fn count_input() -> Value {
    json!({"script": invalid_then_valid()})
}

/// `0248.usage-incomplete`'s input: one reply with `usage: false`.
pub fn usage_incomplete_input() -> Value {
    json!({"script": [{"content": {"answer": "ok"}, "usage": false}]})
}

/// `0248.structured-output`'s first input: no `responseSchema`.
pub fn plain_input() -> Value {
    json!({"schema": false, "script": [{"content": "plain text", "usage": {"outputTokens": 3}}]})
}

/// `0248.structured-output`'s second input: a reply declaring `native`.
pub fn native_input() -> Value {
    json!({"script": [{"content": {"answer": "ok"}, "usage": {"outputTokens": 4}, "mode": "native"}]})
}

/// `0248.max-attempts-cap`'s input: `maxAttempts: 1`, invalid first reply.
pub fn cap_input() -> Value {
    json!({"retry": {"maxAttempts": 1}, "script": invalid_then_valid()})
}

/// The `maxTokens` of `0248.no-budget-growth`.
pub const GROWTH_MAX_TOKENS: u64 = 100;

/// `0248.no-budget-growth`'s input: `growMaxTokens: false`, `maxTokens: 100`, a reply declaring
/// 150 output tokens (served truncated at 100), then the same reply (fits only a grown budget).
pub fn growth_input() -> Value {
    let reply = json!({
        "content": {"answer": "a reply that needs one hundred and fifty output tokens"},
        "usage": {"outputTokens": 150}
    });
    json!({
        "retry": {"growMaxTokens": false},
        "maxTokens": GROWTH_MAX_TOKENS,
        "script": [reply.clone(), reply]
    })
}

/// `0248.retry-malformed-refused`'s input: `maxAttempts: 0` (and a valid reply, which a host
/// that ignores the malformed policy would serve).
pub fn malformed_input() -> Value {
    json!({
        "retry": {"maxAttempts": 0},
        "script": [{"content": {"answer": "ok"}, "usage": {"outputTokens": 7}}]
    })
}

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
