//! The judges of the extra checks: each decides its check from what an outside party observed
//! of a fixture run, `Ok` or the reason it fails.

use crate::conformance::judges::{attempts_of, exhausted_totals, usage_events};
use crate::conformance::target::Observed;
use serde_json::Value;
use wop_sdk::wire::{CapabilityDocument, ErrorCode, normalize_type};

/// `extra.count-every-request` (§A.1): `attempts.count` equals the `provider.usage` events and
/// the three replies served.
pub fn count_every_request(obs: &Observed) -> Result<(), String> {
    let a = attempts_of(obs)?;
    let count = a.get("count").and_then(Value::as_u64);
    let usages = usage_events(&obs.events).len() as u64;
    if count != Some(usages) || usages != 3 {
        return Err(format!(
            "`attempts.count` is {} but the call made {usages} provider requests (a truncation \
             retry, a schema retry or fallback, and the final reply: three)",
            count.map_or_else(|| "missing".to_owned(), |c| c.to_string())
        ));
    }
    Ok(())
}

/// `extra.usage-incomplete-any-attempt` (§A.2): `usageComplete` is false, and `outputTokens`
/// (when present) sums the attempts that reported usage (7).
pub fn usage_incomplete_any_attempt(obs: &Observed) -> Result<(), String> {
    let a = attempts_of(obs)?;
    if a.get("usageComplete") != Some(&Value::Bool(false)) {
        return Err(format!(
            "`attempts.usageComplete` is {} though the first attempt reported no usage",
            a.get("usageComplete")
                .map_or("missing".into(), Value::to_string)
        ));
    }
    match a.get("outputTokens").and_then(Value::as_u64) {
        None | Some(7) => Ok(()),
        Some(n) => Err(format!(
            "`attempts.outputTokens` is {n}; the one attempt that reported usage reported 7"
        )),
    }
}

/// `extra.structured-output-final-mode` (§A.3): `prompt`, the final attempt's mode.
pub fn structured_output_final_mode(obs: &Observed) -> Result<(), String> {
    let a = attempts_of(obs)?;
    match a.get("structuredOutput").and_then(Value::as_str) {
        Some("prompt") => Ok(()),
        other => Err(format!(
            "`attempts.structuredOutput` is {} but the final attempt declared `prompt`",
            other.map_or_else(|| "absent".to_owned(), |m| format!("`{m}`"))
        )),
    }
}

/// `extra.usage-of-final-attempt` (§A.4): on the count run, the answer's `usage.outputTokens` is
/// the final scripted reply's.
pub fn usage_of_final_attempt(obs: &Observed, script: &Value) -> Result<(), String> {
    attempts_of(obs)?;
    let last = script
        .as_array()
        .and_then(|s| s.last())
        .and_then(|s| s.pointer("/usage/outputTokens"))
        .and_then(Value::as_u64);
    let answer = obs
        .answers
        .first()
        .ok_or("the target recorded no `ctx.callAI` answer for the run")?;
    let usage = answer
        .pointer("/usage/outputTokens")
        .and_then(Value::as_u64);
    if usage != last {
        return Err(format!(
            "`usage.outputTokens` is {} but the final attempt reported {}",
            usage.map_or_else(|| "absent".to_owned(), |u| u.to_string()),
            last.map_or_else(|| "none".to_owned(), |u| u.to_string())
        ));
    }
    Ok(())
}

/// Fails when the host refused a well-formed `what` as malformed.
fn refused_as_malformed(obs: &Observed, what: &str) -> Result<(), String> {
    match &obs.output {
        Err(e) if e.error == ErrorCode::ValidationError => {
            Err(format!("the host refused the well-formed `{what}`: {e}"))
        }
        _ => Ok(()),
    }
}

/// Fails when more than `cap` requests were made (by `provider.usage` or `retry-exhausted`).
fn at_most(obs: &Observed, cap: u64, what: &str) -> Result<(), String> {
    let usages = usage_events(&obs.events).len() as u64;
    if usages > cap {
        return Err(format!("{usages} `provider.usage` events under {what}"));
    }
    for total in exhausted_totals(&obs.events).into_iter().flatten() {
        if total > cap {
            return Err(format!(
                "`envelope.retry-exhausted.totalAttempts` is {total} under {what}"
            ));
        }
    }
    Ok(())
}

/// `extra.max-attempts-two` (§B.1): with `maxAttempts: 2` and three invalid replies the call
/// fails after at most two requests.
pub fn max_attempts_two(obs: &Observed) -> Result<(), String> {
    refused_as_malformed(obs, "retry: {maxAttempts: 2}")?;
    if let Ok(out) = &obs.output {
        return Err(format!(
            "the call completed ({out}): only the fourth reply is valid, beyond `maxAttempts: 2`"
        ));
    }
    at_most(obs, 2, "`maxAttempts: 2`")
}

/// `extra.max-attempts-clamped` (§B.3): `maxAttempts: 16` above a ceiling of `ceiling` is
/// clamped: not refused, and no more than `ceiling` requests.
pub fn max_attempts_clamped(obs: &Observed, ceiling: u64) -> Result<(), String> {
    refused_as_malformed(obs, "retry: {maxAttempts: 16}")
        .map_err(|e| format!("{e} (a value above the ceiling is clamped, not refused)"))?;
    if let Ok(out) = &obs.output {
        return Err(format!(
            "the call completed ({out}) though every reply is invalid"
        ));
    }
    at_most(
        obs,
        ceiling,
        &format!("`maxAttempts: 16` clamped to the host's ceiling {ceiling}"),
    )
}

/// `extra.no-growth-host-default` (§B.2): under `growMaxTokens: false` without `maxTokens`, no
/// `provider.usage.outputTokens` exceeds the first request's (made at the host default; the mock
/// clamps each to its request's budget), and the call does not complete.
pub fn no_growth_host_default(obs: &Observed) -> Result<Option<()>, String> {
    let outs: Vec<u64> = usage_events(&obs.events)
        .iter()
        .filter_map(|e| e.u64("outputTokens"))
        .collect();
    let Some(&first) = outs.first() else {
        return Ok(None);
    };
    if let Some(over) = outs.iter().find(|&&o| o > first) {
        return Err(format!(
            "a `provider.usage` reports {over} output tokens, above the {first} of the first \
             request at the host default: the budget grew under `growMaxTokens: false`"
        ));
    }
    if let Ok(out) = &obs.output {
        return Err(format!(
            "the call completed ({out}); every reply needs more than any default budget"
        ));
    }
    Ok(Some(()))
}

/// `extra.no-retry-after-refusal` (RFC 0032 §B.3, kept by §B.3): after a refusal the call
/// fails, after one request, whatever `maxAttempts` allows.
pub fn no_retry_after_refusal(obs: &Observed) -> Result<(), String> {
    refused_as_malformed(obs, "retry: {maxAttempts: 3}")?;
    if let Ok(out) = &obs.output {
        return Err(format!(
            "the call completed ({out}): the host retried after a refusal"
        ));
    }
    at_most(obs, 1, "a refusal (never retried)")
}

/// Whether the document advertises `retry-exhausted` among its reliability events.
pub fn advertises_retry_exhausted(doc: &CapabilityDocument) -> bool {
    doc.reliability.as_ref().is_some_and(|r| {
        r.events.iter().any(|e| {
            // v2 documents name events in full; v1 ones by their short name.
            let full = if e.starts_with("envelope.") {
                e.clone()
            } else {
                format!("envelope.{e}")
            };
            normalize_type(&full) == wop_sdk::wire::kind::RETRY_EXHAUSTED
        })
    })
}

/// `extra.retry-exhausted-emitted` (§B.4): under `maxAttempts: 1` with an invalid reply, exactly
/// one `envelope.retry-exhausted`, with `totalAttempts: 1`.
pub fn retry_exhausted_emitted(obs: &Observed) -> Result<(), String> {
    if obs.output.is_ok() {
        return Err("the call completed under `maxAttempts: 1` with an invalid reply".into());
    }
    match exhausted_totals(&obs.events).as_slice() {
        [Some(1)] => Ok(()),
        [] => Err("no `envelope.retry-exhausted` though the host advertises it".into()),
        totals => Err(format!(
            "`envelope.retry-exhausted.totalAttempts` {totals:?}; expected exactly one, 1"
        )),
    }
}

/// `extra.retry-malformed-every-form` (§B.5): one malformed form's run fails
/// `validation_error` naming `field`.
pub fn retry_malformed_form(obs: &Observed, retry: &Value, field: &str) -> Result<(), String> {
    match &obs.output {
        Ok(out) => Err(format!(
            "`retry: {retry}` was ignored, not refused (the node completed: {out})"
        )),
        Err(e) if e.error != ErrorCode::ValidationError => Err(format!(
            "`retry: {retry}` failed `{}`, not `validation_error`",
            e.error
        )),
        Err(e) if e.field() != Some(field) => Err(format!(
            "`retry: {retry}` was refused naming {}, not `{field}`",
            e.field()
                .map_or_else(|| "no field".to_owned(), |f| format!("`{f}`"))
        )),
        Err(_) => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::judges::tests::{failed, usage};
    use serde_json::json;
    use wop_sdk::host::RunId;
    use wop_sdk::wire::{ErrorEnvelope, RunEvent};

    fn done(attempts: Value, events: Vec<RunEvent>, answer: Value) -> Observed {
        Observed {
            run_id: RunId::new("r"),
            output: Ok(json!({"attempts": attempts, "ok": true})),
            events,
            answers: vec![answer],
        }
    }

    #[test]
    fn every_request_is_counted() {
        let three = vec![usage(100), usage(5), usage(7)];
        let honest = done(
            json!({"count": 3, "usageComplete": true}),
            three.clone(),
            json!({}),
        );
        assert_eq!(count_every_request(&honest), Ok(()));
        let short = done(json!({"count": 2, "usageComplete": true}), three, json!({}));
        assert!(count_every_request(&short).is_err());
    }

    #[test]
    fn usage_is_incomplete_when_an_earlier_attempt_had_none() {
        let ok = done(
            json!({"count": 2, "outputTokens": 7, "usageComplete": false}),
            vec![usage(7)],
            json!({}),
        );
        assert_eq!(usage_incomplete_any_attempt(&ok), Ok(()));
        let lie = done(
            json!({"count": 2, "outputTokens": 7, "usageComplete": true}),
            vec![usage(7)],
            json!({}),
        );
        assert!(usage_incomplete_any_attempt(&lie).is_err());
    }

    #[test]
    fn usage_is_the_final_attempts_on_the_hosts_answer() {
        let script = json!([{"usage": {"outputTokens": 5}}, {"usage": {"outputTokens": 7}}]);
        let a = json!({"count": 2, "outputTokens": 12, "usageComplete": true});
        let final_usage = done(a.clone(), vec![], json!({"usage": {"outputTokens": 7}}));
        assert_eq!(usage_of_final_attempt(&final_usage, &script), Ok(()));
        let summed = done(a, vec![], json!({"usage": {"outputTokens": 12}}));
        assert!(usage_of_final_attempt(&summed, &script).is_err());
    }

    #[test]
    fn a_cap_above_the_ceiling_is_clamped_not_refused_nor_honoured() {
        let invalid = || ErrorEnvelope::new(ErrorCode::EnvelopeInvalid, "no");
        let clamped = failed(invalid(), vec![usage(5), usage(5), usage(5)]);
        assert_eq!(max_attempts_clamped(&clamped, 3), Ok(()));
        let widened = failed(invalid(), vec![usage(5); 4]);
        assert!(max_attempts_clamped(&widened, 3).is_err());
        let refused = failed(ErrorEnvelope::validation("retry.maxAttempts", "no"), vec![]);
        assert!(max_attempts_clamped(&refused, 3).is_err());
    }

    #[test]
    fn the_budget_does_not_grow_past_the_first_request() {
        let trunc = || ErrorEnvelope::new(ErrorCode::EnvelopeTruncationUnrecoverable, "no");
        let kept = failed(trunc(), vec![usage(1024), usage(1024)]);
        assert_eq!(no_growth_host_default(&kept), Ok(Some(())));
        let grown = failed(trunc(), vec![usage(1024), usage(2048)]);
        assert!(no_growth_host_default(&grown).is_err());
        assert_eq!(no_growth_host_default(&failed(trunc(), vec![])), Ok(None));
    }

    #[test]
    fn each_malformed_form_names_its_key() {
        let retry = json!({"maxAttempts": null});
        let ok = failed(
            ErrorEnvelope::validation("retry.maxAttempts", "no null"),
            vec![],
        );
        assert_eq!(
            retry_malformed_form(&ok, &retry, "retry.maxAttempts"),
            Ok(())
        );
        let wrong = failed(ErrorEnvelope::validation("retry", "bad"), vec![]);
        assert!(retry_malformed_form(&wrong, &retry, "retry.maxAttempts").is_err());
        let ignored = done(
            json!({"count": 1, "usageComplete": true}),
            vec![],
            json!({}),
        );
        assert!(retry_malformed_form(&ignored, &retry, "retry.maxAttempts").is_err());
    }

    #[test]
    fn retry_exhausted_is_advertised_in_either_spelling() {
        let doc = |events: &[&str]| {
            CapabilityDocument::from_json(&json!({"envelopes": {"reliability": {
                "maxRetryAttempts": 3, "events": events,
                "completion": {"distinguishesTruncation": true, "truncationBudgetMultiplier": 2}}}}))
            .expect("valid")
        };
        assert!(advertises_retry_exhausted(&doc(&["retry-exhausted"])));
        assert!(advertises_retry_exhausted(&doc(&["retry.exhausted"])));
        assert!(!advertises_retry_exhausted(&doc(&["refusal"])));
    }
}
