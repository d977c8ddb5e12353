//! The extra checks: the MUSTs and MUST NOTs of RFC 0248 §A and §B that the eight official legs
//! do not hold, each with its own fixture input and judge. They are reported apart from the
//! official legs ([`super::Report::extra`]); the table of every requirement and what holds it is
//! in the [module docs](super).
//!
//! Like the legs, each check reads only what an outside party sees: the node's output or error,
//! the run's events, and the host's answers as it gave them ([`Observed::answers`]).
//!
//! Each check has an id (here), a fixture input (`inputs`) and a judge (`judges`); `run_extra`
//! here runs them all, gated like the legs, and turns each judgement into a [`Verdict`].

mod inputs;
mod judges;

pub use inputs::{
    count_every_request_input, malformed_forms, max_attempts_clamped_input, max_attempts_two_input,
    no_growth_host_default_input, no_retry_after_refusal_input, structured_output_final_mode_input,
    usage_incomplete_any_attempt_input,
};
pub use judges::{
    advertises_retry_exhausted, count_every_request, max_attempts_clamped, max_attempts_two,
    no_growth_host_default, no_retry_after_refusal, retry_exhausted_emitted, retry_malformed_form,
    structured_output_final_mode, usage_incomplete_any_attempt, usage_of_final_attempt,
};

use super::inputs::cap_input;
use super::judges::{attempts_of, usage_events};
use super::report::Verdict;
use super::target::{ConformanceTarget, Observed};
use serde_json::{Map, Value};
use wop_sdk::caps::DEFAULT_CEILING;
use wop_sdk::wire::CapabilityDocument;

/// `extra.count-every-request` (§A.1): a truncation retry and a schema retry (or the
/// natural-language fallback) are all counted.
pub const COUNT_EVERY_REQUEST: &str = "extra.count-every-request";
/// `extra.usage-incomplete-any-attempt` (§A.2): `usageComplete` is false when an earlier attempt,
/// not only the last, reported no usage.
pub const USAGE_INCOMPLETE_ANY_ATTEMPT: &str = "extra.usage-incomplete-any-attempt";
/// `extra.structured-output-final-mode` (§A.3): `structuredOutput` is the final attempt's mode,
/// `prompt` included.
pub const STRUCTURED_OUTPUT_FINAL_MODE: &str = "extra.structured-output-final-mode";
/// `extra.usage-of-final-attempt` (§A.4): the result's `usage` is the final attempt's.
pub const USAGE_OF_FINAL_ATTEMPT: &str = "extra.usage-of-final-attempt";
/// `extra.max-attempts-two` (§B.1): a cap above 1 binds too.
pub const MAX_ATTEMPTS_TWO: &str = "extra.max-attempts-two";
/// `extra.max-attempts-clamped` (§B.3): a `maxAttempts` above the host's ceiling is clamped to
/// it, not refused and not honoured.
pub const MAX_ATTEMPTS_CLAMPED: &str = "extra.max-attempts-clamped";
/// `extra.no-growth-host-default` (§B.2): without `maxTokens`, no attempt exceeds the host
/// default under `growMaxTokens: false`.
pub const NO_GROWTH_HOST_DEFAULT: &str = "extra.no-growth-host-default";
/// `extra.no-retry-after-refusal` (§B.3, RFC 0032 §B.3): a refusal is not retried, whatever the
/// cap.
pub const NO_RETRY_AFTER_REFUSAL: &str = "extra.no-retry-after-refusal";
/// `extra.retry-exhausted-emitted` (§B.4): a host that advertises `retry-exhausted` emits it,
/// with `totalAttempts: 1`, under `maxAttempts: 1`.
pub const RETRY_EXHAUSTED_EMITTED: &str = "extra.retry-exhausted-emitted";
/// `extra.retry-malformed-every-form` (§B.5): every malformed `retry` is refused naming its key,
/// not only `maxAttempts: 0`.
pub const RETRY_MALFORMED_EVERY_FORM: &str = "extra.retry-malformed-every-form";

/// Every extra check id, in the order [`super::run_conformance`] reports them.
pub const EXTRA_IDS: [&str; 10] = [
    COUNT_EVERY_REQUEST,
    USAGE_INCOMPLETE_ANY_ATTEMPT,
    STRUCTURED_OUTPUT_FINAL_MODE,
    USAGE_OF_FINAL_ATTEMPT,
    MAX_ATTEMPTS_TWO,
    MAX_ATTEMPTS_CLAMPED,
    NO_GROWTH_HOST_DEFAULT,
    NO_RETRY_AFTER_REFUSAL,
    RETRY_EXHAUSTED_EMITTED,
    RETRY_MALFORMED_EVERY_FORM,
];

/// A run that should have completed after `needed` requests but failed after fewer: the host
/// does not retry that far (its ceiling, or its rules), so the check is `blocked`.
fn blocked_short(obs: &Observed, needed: usize) -> Option<Verdict> {
    let error = obs.output.as_ref().err()?;
    let usages = usage_events(&obs.events).len();
    (usages < needed).then(|| {
        Verdict::Blocked(format!(
            "the run failed ({error}) after {usages} provider request(s); the check needs {needed}"
        ))
    })
}

/// The verdict of a check on a run that should complete after `needed` requests: blocked when
/// the host gave up sooner, else `judge` on its `attempts`.
fn judged_completed(
    obs: &Observed,
    needed: usize,
    judge: impl FnOnce(&Map<String, Value>) -> Result<(), String>,
) -> Verdict {
    if let Some(blocked) = blocked_short(obs, needed) {
        return blocked;
    }
    Verdict::judged(attempts_of(obs).and_then(judge))
}

/// Runs every extra check against `target`, gated like the legs (§A checks on
/// `callAccounting.attempts`, §B checks on `callAccounting.retryPolicy`). `count` is the official
/// count run, reused.
pub(crate) async fn run_extra(
    target: &dyn ConformanceTarget,
    doc: &CapabilityDocument,
    count: Option<(&Observed, &Value)>,
) -> Vec<(String, Verdict)> {
    let ca = doc.call_accounting.unwrap_or_default();
    let mut out = Vec::new();
    let mut push = |id: &str, v: Verdict| out.push((id.to_owned(), v));
    if ca.attempts {
        let obs = target.run_fixture(count_every_request_input()).await;
        push(
            COUNT_EVERY_REQUEST,
            judged_completed(&obs, 3, |_| count_every_request(&obs)),
        );
        let obs = target
            .run_fixture(usage_incomplete_any_attempt_input())
            .await;
        push(
            USAGE_INCOMPLETE_ANY_ATTEMPT,
            judged_completed(&obs, 1, |_| usage_incomplete_any_attempt(&obs)),
        );
        let obs = target
            .run_fixture(structured_output_final_mode_input())
            .await;
        push(
            STRUCTURED_OUTPUT_FINAL_MODE,
            judged_completed(&obs, 2, |_| structured_output_final_mode(&obs)),
        );
        push(
            USAGE_OF_FINAL_ATTEMPT,
            match count {
                Some((obs, script)) => {
                    judged_completed(obs, 2, |_| usage_of_final_attempt(obs, script))
                }
                None => Verdict::Blocked("the count run could not be judged".into()),
            },
        );
    } else {
        for id in &EXTRA_IDS[..4] {
            push(
                id,
                Verdict::Skipped("the host does not advertise `callAccounting.attempts`".into()),
            );
        }
    }
    if ca.retry_policy {
        let obs = target.run_fixture(max_attempts_two_input()).await;
        push(MAX_ATTEMPTS_TWO, Verdict::judged(max_attempts_two(&obs)));
        let ceiling = doc
            .reliability
            .as_ref()
            .map_or(DEFAULT_CEILING, |r| r.max_retry_attempts);
        let obs = target.run_fixture(max_attempts_clamped_input()).await;
        push(
            MAX_ATTEMPTS_CLAMPED,
            Verdict::judged(max_attempts_clamped(&obs, u64::from(ceiling))),
        );
        let obs = target.run_fixture(no_growth_host_default_input()).await;
        push(
            NO_GROWTH_HOST_DEFAULT,
            match no_growth_host_default(&obs) {
                Ok(Some(())) => Verdict::ExecutedPass,
                Ok(None) => Verdict::Blocked("no `provider.usage` to judge".into()),
                Err(reason) => Verdict::ExecutedFail(reason),
            },
        );
        let obs = target.run_fixture(no_retry_after_refusal_input()).await;
        push(
            NO_RETRY_AFTER_REFUSAL,
            Verdict::judged(no_retry_after_refusal(&obs)),
        );
        push(
            RETRY_EXHAUSTED_EMITTED,
            if advertises_retry_exhausted(doc) {
                let obs = target.run_fixture(cap_input()).await;
                Verdict::judged(retry_exhausted_emitted(&obs))
            } else {
                Verdict::Skipped(
                    "the host does not advertise `retry-exhausted` in `envelopes.reliability.events`"
                        .into(),
                )
            },
        );
        let mut verdict = Verdict::ExecutedPass;
        for (retry, field) in malformed_forms() {
            let obs = target.run_fixture(inputs::malformed_input(&retry)).await;
            if let Err(reason) = retry_malformed_form(&obs, &retry, field) {
                verdict = Verdict::ExecutedFail(reason);
                break;
            }
        }
        push(RETRY_MALFORMED_EVERY_FORM, verdict);
    } else {
        for id in &EXTRA_IDS[4..] {
            push(
                id,
                Verdict::Skipped("the host does not advertise `callAccounting.retryPolicy`".into()),
            );
        }
    }
    out
}
