//! The judges: pure functions, one per leg, that decide a leg from what an outside party observed
//! (the node's output or error, the run's `provider.usage` and `envelope.retry-exhausted` events)
//! and the script the suite wrote. `Ok(())` passes; `Err(reason)` fails, saying why.

use super::Observed;
use serde_json::Value;
use wop_sdk::wire::{ErrorCode, RunEvent, kind, normalize_type};

fn is(event: &RunEvent, k: &str) -> bool {
    normalize_type(event.kind()) == k
}

/// The run's `provider.usage` events.
pub fn usage_events(events: &[RunEvent]) -> Vec<&RunEvent> {
    events
        .iter()
        .filter(|e| is(e, kind::PROVIDER_USAGE))
        .collect()
}

/// The `outputTokens` summed over the run's `provider.usage` events.
pub fn usage_output_tokens(events: &[RunEvent]) -> u64 {
    usage_events(events)
        .iter()
        .filter_map(|e| e.u64("outputTokens"))
        .sum()
}

/// The `totalAttempts` of every `envelope.retry-exhausted` of the run.
pub fn exhausted_totals(events: &[RunEvent]) -> Vec<Option<u64>> {
    events
        .iter()
        .filter(|e| is(e, kind::RETRY_EXHAUSTED))
        .map(|e| e.u64("totalAttempts"))
        .collect()
}

/// The `outputTokens` the script declares, summed (a step with `usage: false` or none adds 0).
pub fn scripted_output_tokens(script: &Value) -> u64 {
    script
        .as_array()
        .map(|steps| {
            steps
                .iter()
                .filter_map(|s| s.get("usage")?.get("outputTokens")?.as_u64())
                .sum()
        })
        .unwrap_or(0)
}

/// The number of steps of the script.
pub fn script_len(script: &Value) -> usize {
    script.as_array().map_or(0, Vec::len)
}

/// The `attempts` object of a completed fixture run.
pub fn attempts_of(obs: &Observed) -> Result<&serde_json::Map<String, Value>, String> {
    let output = obs
        .output
        .as_ref()
        .map_err(|e| format!("the fixture node failed: {e}"))?;
    match output.get("attempts") {
        Some(Value::Object(a)) => Ok(a),
        Some(Value::Null) | None => {
            Err("the result carries no `attempts` (the fixture output `attempts: null`)".into())
        }
        Some(other) => Err(format!("`attempts` is not an object: {other}")),
    }
}

fn field_u64(a: &serde_json::Map<String, Value>, key: &str) -> Result<u64, String> {
    a.get(key)
        .and_then(Value::as_u64)
        .ok_or_else(|| format!("`attempts.{key}` is missing or not an integer"))
}

fn field_bool(a: &serde_json::Map<String, Value>, key: &str) -> Result<bool, String> {
    a.get(key)
        .and_then(Value::as_bool)
        .ok_or_else(|| format!("`attempts.{key}` is missing or not a boolean"))
}

/// Whether a count run (invalid JSON, then valid) could not be judged because the host did not
/// retry the schema violation: the node failed after fewer than two provider requests. Such a
/// run makes its legs `blocked`, not failed.
pub fn count_run_blocked(obs: &Observed) -> Option<String> {
    let error = obs.output.as_ref().err()?;
    let usages = usage_events(&obs.events).len();
    (usages < 2).then(|| {
        format!(
            "the count run failed ({error}) after {usages} provider request(s): the host did not \
             retry the schema violation"
        )
    })
}

/// `0248.attempts-count` (§A.1): on the count run, `attempts.count` equals the number of
/// `provider.usage` events and the requests the script served.
pub fn attempts_count(obs: &Observed, script: &Value) -> Result<(), String> {
    let a = attempts_of(obs)?;
    let count = field_u64(a, "count")?;
    let usages = usage_events(&obs.events).len() as u64;
    let scripted = script_len(script) as u64;
    if count != usages {
        return Err(format!(
            "`attempts.count` is {count} but the run has {usages} `provider.usage` events"
        ));
    }
    if count != scripted {
        return Err(format!(
            "`attempts.count` is {count} but the script served {scripted} replies"
        ));
    }
    Ok(())
}

/// `0248.output-tokens-sum` (§A.2): `attempts.outputTokens` equals the scripted usages summed
/// and the summed `provider.usage`; `usageComplete` is `true`.
pub fn output_tokens_sum(obs: &Observed, script: &Value) -> Result<(), String> {
    let a = attempts_of(obs)?;
    let tokens = field_u64(a, "outputTokens")?;
    let scripted = scripted_output_tokens(script);
    let usage = usage_output_tokens(&obs.events);
    if tokens != scripted {
        return Err(format!(
            "`attempts.outputTokens` is {tokens} but the script's usages sum to {scripted}"
        ));
    }
    if tokens != usage {
        return Err(format!(
            "`attempts.outputTokens` is {tokens} but the `provider.usage` events sum to {usage}"
        ));
    }
    if !field_bool(a, "usageComplete")? {
        return Err("`attempts.usageComplete` is false though every attempt reported usage".into());
    }
    Ok(())
}

/// `0248.usage-incomplete` (§A.2): after a reply with no usage, `usageComplete` is `false`.
pub fn usage_incomplete(obs: &Observed) -> Result<(), String> {
    let a = attempts_of(obs)?;
    if field_bool(a, "usageComplete")? {
        return Err(
            "`attempts.usageComplete` is true though the scripted reply reported no usage".into(),
        );
    }
    Ok(())
}

/// `0248.structured-output` (§A.3): absent on a call without `responseSchema`; the mode the
/// script declared (`native`) on a structured call.
pub fn structured_output(plain: &Observed, native: &Observed) -> Result<(), String> {
    let a = attempts_of(plain).map_err(|e| format!("the call without a schema: {e}"))?;
    if let Some(mode) = a.get("structuredOutput") {
        return Err(format!(
            "`attempts.structuredOutput` is {mode} on a call without `responseSchema`"
        ));
    }
    let a = attempts_of(native).map_err(|e| format!("the structured call: {e}"))?;
    match a.get("structuredOutput").and_then(Value::as_str) {
        Some("native") => Ok(()),
        Some(other) => Err(format!(
            "`attempts.structuredOutput` is `{other}` but the mock declared `native`"
        )),
        None => Err("`attempts.structuredOutput` is absent on a structured call".into()),
    }
}

/// The `attempts` of the run's first `ctx.callAI` answer as the host gave it (its own bytes,
/// not the fixture's re-serialization), as JSON text.
pub fn answered_attempts(obs: &Observed) -> Result<String, String> {
    attempts_of(obs)?;
    let answer = obs
        .answers
        .first()
        .ok_or("the target recorded no `ctx.callAI` answer for the run")?;
    answer
        .get("attempts")
        .map(Value::to_string)
        .ok_or_else(|| "the host's answer carries no `attempts`".to_owned())
}

/// `0248.attempts-replayed` (§A.5): the fork's `attempts` are byte-equal to the source's, as the
/// host answered them (not as the fixture re-serialized them).
pub fn attempts_replayed(source: &Observed, fork: &Observed) -> Result<(), String> {
    let s = answered_attempts(source).map_err(|e| format!("the source run: {e}"))?;
    let f = answered_attempts(fork).map_err(|e| format!("the replay fork: {e}"))?;
    if s != f {
        return Err(format!(
            "the fork's `attempts` {f} differ from the source's {s}"
        ));
    }
    Ok(())
}

/// `0248.max-attempts-cap` (§B.1, §B.4): with `maxAttempts: 1` and an invalid first reply the
/// call fails (not refused as malformed), with at most one `provider.usage`, and
/// `retry-exhausted.totalAttempts: 1` when emitted.
pub fn max_attempts_cap(obs: &Observed) -> Result<(), String> {
    let error = match &obs.output {
        Ok(out) => {
            return Err(format!(
                "the call completed ({out}) though `maxAttempts: 1` allowed only the invalid first reply"
            ));
        }
        Err(e) => e,
    };
    if error.error == ErrorCode::ValidationError {
        return Err(format!(
            "the host refused the well-formed `retry: {{maxAttempts: 1}}`: {error}"
        ));
    }
    let usages = usage_events(&obs.events).len();
    if usages > 1 {
        return Err(format!(
            "{usages} `provider.usage` events under `maxAttempts: 1`"
        ));
    }
    for total in exhausted_totals(&obs.events) {
        if total != Some(1) {
            return Err(format!(
                "`envelope.retry-exhausted.totalAttempts` is {} under `maxAttempts: 1`",
                total.map_or_else(|| "missing".to_owned(), |t| t.to_string())
            ));
        }
    }
    Ok(())
}

/// `0248.no-budget-growth` (§B.2): with `growMaxTokens: false`, a truncated reply then one that
/// fits only a grown budget: the call does not complete, and no `provider.usage.outputTokens`
/// exceeds `max_tokens` (the mock clamps each to its request's budget).
pub fn no_budget_growth(obs: &Observed, max_tokens: u64) -> Result<(), String> {
    if let Some(over) = usage_events(&obs.events)
        .iter()
        .filter_map(|e| e.u64("outputTokens"))
        .find(|&o| o > max_tokens)
    {
        return Err(format!(
            "a `provider.usage` reports {over} output tokens, above `maxTokens: {max_tokens}`: \
             the budget grew under `growMaxTokens: false`"
        ));
    }
    if let Ok(out) = &obs.output {
        return Err(format!(
            "the call completed ({out}); the scripted reply fits only a grown budget"
        ));
    }
    Ok(())
}

/// `0248.retry-malformed-refused` (§B.5): `retry: {maxAttempts: 0}` fails the node with
/// `validation_error`, `details.field: "retry.maxAttempts"`.
pub fn retry_malformed_refused(obs: &Observed) -> Result<(), String> {
    let error = match &obs.output {
        Ok(out) => {
            return Err(format!(
                "the node completed ({out}): the malformed `retry` was ignored, not refused"
            ));
        }
        Err(e) => e,
    };
    if error.error != ErrorCode::ValidationError {
        return Err(format!(
            "the node failed `{}`, not `validation_error`",
            error.error
        ));
    }
    match error.field() {
        Some("retry.maxAttempts") => Ok(()),
        other => Err(format!(
            "`details.field` is {}, not `retry.maxAttempts`",
            other.map_or_else(|| "absent".to_owned(), |f| format!("`{f}`"))
        )),
    }
}

/// Also the extra checks' tests: the events and runs they build are the same.
#[cfg(test)]
pub(super) mod tests;
