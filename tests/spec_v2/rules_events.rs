//! The rules, in our words: run events, a run's log, the error envelope.

use super::*;

/// The `{code, message, details?}` of `node.failed`.
pub(crate) fn event_error_problems(e: &Value, at: &str, out: &mut Vec<String>) {
    let Some(obj) = e.as_object() else {
        out.push(format!("{at}: not an object"));
        return;
    };
    closed(obj, at, &["code", "message", "details", "retryable"], out);
    if !e["code"].as_str().is_some_and(code_ok) {
        out.push(format!(
            "{at}.code {}: neither registered nor a vendor code",
            e["code"]
        ));
    }
    if e["message"].as_str().is_none_or(str::is_empty) {
        out.push(format!("{at}.message: a non-empty string"));
    }
}

pub(crate) const FAILURE_REASONS: &[&str] = &[
    "schema-violation",
    "truncation",
    "type-drift",
    "type-mismatch",
    "refusal",
    "parse-error",
    "unknown",
];

pub(crate) fn reason_ok(r: &str) -> bool {
    FAILURE_REASONS.contains(&r)
        || r.strip_prefix("x-host-")
            .is_some_and(|rest| rest.contains('-') && rest.split('-').all(|w| segment(w, false)))
}

/// A run event document: the wrapper and the payload of each type this SDK writes.
pub(crate) fn event_problems(e: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(obj) = e.as_object() else {
        return vec!["not an object".into()];
    };
    closed(
        obj,
        "$",
        &[
            "eventId",
            "runId",
            "nodeId",
            "type",
            "payload",
            "timestamp",
            "sequence",
            "schemaVersion",
            "engineVersion",
            "causationId",
        ],
        &mut out,
    );
    if !e["eventId"].as_str().is_some_and(|i| id_chars(i, 16, 128)) {
        out.push(format!("eventId {}: not a 16..128 opaque id", e["eventId"]));
    }
    if !e["runId"].as_str().is_some_and(run_id_ok) {
        out.push(format!("runId {}: not <tenant>/<opaque>", e["runId"]));
    }
    if !e["timestamp"].as_str().is_some_and(timestamp_ok) {
        out.push(format!("timestamp {}: not RFC 3339", e["timestamp"]));
    }
    if e["sequence"].as_u64().is_none() {
        out.push("sequence: an integer from 0".into());
    }
    if e["schemaVersion"].as_u64().is_none_or(|v| v < 1) {
        out.push("schemaVersion: an integer from 1".into());
    }
    let p = &e["payload"];
    let Some(payload) = p.as_object() else {
        out.push("payload: an object".into());
        return out;
    };
    let has = |k: &str| payload.contains_key(k);
    let string = |k: &str| p[k].as_str().is_some();
    let mut need = |ok: bool, what: &str| {
        if !ok {
            out.push(format!("{}: {what}", e["type"]));
        }
    };
    match e["type"].as_str().unwrap_or("") {
        "provider.usage" => {
            need(string("provider") && string("model"), "provider and model");
            need(
                p["inputTokens"].is_u64() && p["outputTokens"].is_u64(),
                "token counts",
            );
            closed(
                payload,
                "payload",
                &[
                    "provider",
                    "model",
                    "inputTokens",
                    "outputTokens",
                    "totalTokens",
                    "nodeId",
                ],
                &mut out,
            );
        }
        "envelope.retry-attempted" => {
            need(string("nodeId"), "nodeId");
            need(
                p["attempt"].as_u64().is_some_and(|a| (1..=16).contains(&a)),
                "attempt 1..16",
            );
            need(
                p["reason"].as_str().is_some_and(reason_ok),
                "a registered reason",
            );
            closed(
                payload,
                "payload",
                &["nodeId", "attempt", "reason", "previousError"],
                &mut out,
            );
        }
        "envelope.retry-exhausted" => {
            need(string("nodeId"), "nodeId");
            need(
                p["totalAttempts"].as_u64().is_some_and(|a| a >= 1),
                "totalAttempts ≥ 1",
            );
            need(
                p["finalReason"].as_str().is_some_and(reason_ok),
                "a registered reason",
            );
            closed(
                payload,
                "payload",
                &["nodeId", "totalAttempts", "finalReason", "finalError"],
                &mut out,
            );
        }
        "envelope.truncated" => {
            need(
                string("nodeId") && string("provider") && string("model"),
                "ids",
            );
            need(
                ["max_tokens", "length", "stop_sequence", "unknown"]
                    .contains(&p["stopReason"].as_str().unwrap_or("")),
                "a v2 stopReason",
            );
            closed(
                payload,
                "payload",
                &[
                    "nodeId",
                    "provider",
                    "model",
                    "stopReason",
                    "partialPayloadAvailable",
                    "outputTokenCount",
                ],
                &mut out,
            );
        }
        "envelope.refusal" => {
            need(
                string("nodeId") && string("provider") && string("model"),
                "ids",
            );
            closed(
                payload,
                "payload",
                &[
                    "nodeId",
                    "provider",
                    "model",
                    "refusalText",
                    "safetyCategory",
                ],
                &mut out,
            );
        }
        "envelope.nl-to-format-engaged" => {
            need(string("nodeId") && string("originalEnvelopeType"), "ids");
            closed(
                payload,
                "payload",
                &["nodeId", "originalEnvelopeType", "fallbackCalls"],
                &mut out,
            );
        }
        "node.started" => {
            need(
                string("nodeId") && p["typeId"].as_str().is_some_and(type_id_ok),
                "nodeId and typeId",
            );
            closed(
                payload,
                "payload",
                &["nodeId", "typeId", "attempt"],
                &mut out,
            );
        }
        "node.completed" => {
            need(string("nodeId"), "nodeId");
            need(
                !has("outputs") || p["outputs"].is_object(),
                "outputs is a port map",
            );
            closed(
                payload,
                "payload",
                &["nodeId", "outputs", "durationMs"],
                &mut out,
            );
        }
        "node.failed" => {
            need(string("nodeId"), "nodeId");
            event_error_problems(&p["error"], "payload.error", &mut out);
            closed(
                payload,
                "payload",
                &["nodeId", "error", "attempts"],
                &mut out,
            );
        }
        // This host's event for a provider request without `provider.usage` (its usage not
        // wholly known): only the figures the provider reported.
        "wop-sdk.provider-request" => {
            need(
                string("nodeId") && string("provider"),
                "nodeId and provider",
            );
            need(
                ["withheld", "input-tokens-unknown", "error-status"]
                    .contains(&p["usage"].as_str().unwrap_or("")),
                "usage: withheld, input-tokens-unknown or error-status",
            );
            need(
                ["inputTokens", "outputTokens", "attempt"]
                    .iter()
                    .all(|k| !has(k) || p[*k].is_u64()),
                "figures are integers when present",
            );
            closed(
                payload,
                "payload",
                &[
                    "nodeId",
                    "provider",
                    "model",
                    "attempt",
                    "usage",
                    "inputTokens",
                    "outputTokens",
                ],
                &mut out,
            );
        }
        other => out.push(format!("type {other}: not a type this SDK writes")),
    }
    out
}

/// A run's log: every event valid, one run, `sequence` 0, 1, 2, …, distinct ids.
pub(crate) fn log_problems(events: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = events.iter().flat_map(event_problems).collect();
    for (i, e) in events.iter().enumerate() {
        if e["sequence"].as_u64() != Some(i as u64) {
            out.push(format!(
                "event {i}: sequence {} (from 0, no gap)",
                e["sequence"]
            ));
        }
        if e["runId"] != events[0]["runId"] {
            out.push(format!("event {i}: another run"));
        }
        if events[..i].iter().any(|o| o["eventId"] == e["eventId"]) {
            out.push(format!("event {i}: eventId repeated"));
        }
    }
    out
}

/// An error envelope `{error, message, details?}`.
pub(crate) fn envelope_problems(e: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let Some(obj) = e.as_object() else {
        return vec!["not an object".into()];
    };
    closed(obj, "$", &["error", "message", "details"], &mut out);
    if !e["error"].as_str().is_some_and(code_ok) {
        out.push(format!(
            "error {}: neither registered nor a vendor code",
            e["error"]
        ));
    }
    if e["message"].as_str().is_none_or(str::is_empty) {
        out.push("message: a non-empty string".into());
    }
    if e.get("details").is_some_and(|d| !d.is_object()) {
        out.push("details: an object".into());
    }
    out
}
