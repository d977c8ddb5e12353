//! Golden tests of the wire contract: the RFC's own examples, every validation rule with its
//! field, v1 spellings in and v2 out, and capability negotiation.

use serde_json::{Value, json};
use wop_sdk::wire::{
    Attempts, CallAiRequest, CallAiResult, CapabilityDocument, ErrorCode, FinishReason, RunEvent,
    Usage, normalize_type,
};
use wop_sdk::{Capabilities, Capability};

#[test]
fn the_rfc_positive_example_round_trips() {
    let example = json!({ "data": { "scene": "…" }, "usage": { "outputTokens": 1800 },
        "attempts": { "count": 2, "outputTokens": 3800, "usageComplete": true, "structuredOutput": "native" } });
    let parsed = CallAiResult::from_json(&example, true).expect("the RFC example is valid");
    assert_eq!(
        parsed.attempts,
        Some(Attempts {
            count: 2,
            output_tokens: Some(3800),
            usage_complete: true,
            structured_output: Some(wop_sdk::wire::StructuredOutputMode::Native)
        })
    );
    assert_eq!(parsed.to_json(), example);
}

fn refused(request: Value) -> (ErrorCode, String) {
    let e = CallAiRequest::from_json(&request).expect_err("refused");
    (e.code, e.field)
}

#[test]
fn the_rfc_negative_examples_are_refused_naming_the_field() {
    for bad in [json!(0), json!(2.5)] {
        let (code, field) = refused(json!({"prompt": "x", "retry": {"maxAttempts": bad}}));
        assert_eq!(
            (code, field.as_str()),
            (ErrorCode::ValidationError, "retry.maxAttempts")
        );
    }
}

#[test]
fn every_retry_rule_names_its_field() {
    let cases = [
        (json!({"maxAttempts": 17}), "retry.maxAttempts"),
        (json!({"maxAttempts": -1}), "retry.maxAttempts"),
        (json!({"maxAttempts": "3"}), "retry.maxAttempts"),
        (json!({"maxAttempts": true}), "retry.maxAttempts"),
        (json!({"growMaxTokens": "false"}), "retry.growMaxTokens"),
        (json!({"growMaxTokens": 0}), "retry.growMaxTokens"),
        (json!({"maxAttempts": 2, "extra": 1}), "retry.extra"),
        (json!(3), "retry"),
    ];
    for (retry, field) in cases {
        let (code, got) = refused(json!({"prompt": "x", "retry": retry}));
        assert_eq!(
            (code, got.as_str()),
            (ErrorCode::ValidationError, field),
            "retry = {retry}"
        );
    }
    // RFC 0248 types the keys as an integer and a boolean: `null` is malformed, not absent.
    for (retry, field) in [
        (json!({"maxAttempts": null}), "retry.maxAttempts"),
        (json!({"growMaxTokens": null}), "retry.growMaxTokens"),
        (
            json!({"maxAttempts": 2, "growMaxTokens": null}),
            "retry.growMaxTokens",
        ),
    ] {
        let e = CallAiRequest::from_json(&json!({"prompt": "x", "retry": retry}))
            .expect_err("null is refused");
        assert_eq!(
            (e.code, e.field.as_str()),
            (ErrorCode::ValidationError, field),
            "retry = {retry}"
        );
        assert!(e.rule.contains("must not be `null`"), "{}", e.rule);
    }
    let ok = CallAiRequest::from_json(
        &json!({"prompt": "x", "retry": {"maxAttempts": 16, "growMaxTokens": false}}),
    )
    .expect("valid");
    assert_eq!(ok.retry.and_then(|r| r.max_attempts), Some(16));
}

#[test]
fn lineage_comes_in_pairs_with_a_known_reason() {
    assert_eq!(
        refused(json!({"prompt": "x", "retryOfAttemptId": "a"})).1,
        "retryReason"
    );
    assert_eq!(
        refused(json!({"prompt": "x", "retryReason": "invalid_output"})).1,
        "retryOfAttemptId"
    );
    assert_eq!(
        refused(json!({"prompt": "x", "retryOfAttemptId": "a", "retryReason": "because"})).1,
        "retryReason"
    );
    let ok = CallAiRequest::from_json(
        &json!({"prompt": "x", "retryOfAttemptId": "a", "retryReason": "workflow_policy"}),
    )
    .expect("valid");
    assert_eq!(ok.to_json()["retryReason"], "workflow_policy");
}

#[test]
fn other_request_fields_name_theirs() {
    assert_eq!(refused(json!({})).1, "messages");
    assert_eq!(
        refused(json!({"messages": [{"role": "robot", "content": "x"}]})).1,
        "messages[0].role"
    );
    assert_eq!(
        refused(json!({"prompt": "x", "maxTokens": 0})).1,
        "maxTokens"
    );
    assert_eq!(
        refused(json!({"prompt": "x", "temperature": 3})).1,
        "temperature"
    );
    assert_eq!(
        refused(json!({"prompt": "x", "beneficiaryUserIds": ["a", 1]})).1,
        "beneficiaryUserIds[1]"
    );
    assert_eq!(
        refused(json!({"prompt": "x", "responseSchema": "object"})).1,
        "responseSchema"
    );
    assert_eq!(refused(json!([1])).1, "$");
}

#[test]
fn prompt_is_shorthand_and_unknown_top_level_fields_are_ignored() {
    let r = CallAiRequest::from_json(&json!({"prompt": "hi", "futureField": 1})).expect("valid");
    assert_eq!(
        r.to_json(),
        json!({"messages": [{"role": "user", "content": "hi"}]})
    );
}

#[test]
fn shared_messages_are_written_as_a_json_array_text_for_text() {
    let text = r#"{"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"hé \"q\""}],"maxTokens":64}"#;
    let r = CallAiRequest::from_json(&serde_json::from_str(text).expect("JSON")).expect("valid");
    assert_eq!(r.messages.len(), 2);
    assert_eq!(serde_json::to_string(&r).expect("written"), text);
    let copy = r.clone();
    assert!(
        std::sync::Arc::ptr_eq(&copy.messages, &r.messages),
        "a copy shares them"
    );
}

fn protocol_error(result: Value, structured: bool) -> String {
    let e = CallAiResult::from_json(&result, structured).expect_err("protocol error");
    assert_eq!(e.code, ErrorCode::ProtocolError);
    e.field
}

#[test]
fn a_result_that_breaks_rfc_0248_a_is_a_protocol_error_naming_the_field() {
    let a = |attempts: Value| json!({"content": "x", "attempts": attempts});
    assert_eq!(
        protocol_error(a(json!({"count": 0, "usageComplete": true})), false),
        "attempts.count"
    );
    assert_eq!(
        protocol_error(a(json!({"count": 1.5, "usageComplete": true})), false),
        "attempts.count"
    );
    assert_eq!(
        protocol_error(
            a(json!({"count": 1, "outputTokens": -3, "usageComplete": true})),
            false
        ),
        "attempts.outputTokens"
    );
    assert_eq!(
        protocol_error(
            a(json!({"count": 1, "outputTokens": 2.5, "usageComplete": true})),
            false
        ),
        "attempts.outputTokens"
    );
    assert_eq!(
        protocol_error(
            a(json!({"count": 1, "usageComplete": true, "structuredOutput": "native"})),
            false
        ),
        "attempts.structuredOutput"
    );
    assert_eq!(
        protocol_error(
            a(json!({"count": 1, "usageComplete": true, "structuredOutput": "json"})),
            true
        ),
        "attempts.structuredOutput"
    );
    assert_eq!(
        protocol_error(a(json!({"count": 1})), false),
        "attempts.usageComplete"
    );
    assert_eq!(
        protocol_error(json!({"finishReason": "tired"}), false),
        "finishReason"
    );
}

/// `attempts` must agree with itself and with `usage` (§A.2, §A.4): complete usage has a sum,
/// and the sum includes the final attempt's own `usage.outputTokens`.
#[test]
fn a_result_whose_attempts_contradict_themselves_is_a_protocol_error() {
    assert_eq!(
        protocol_error(
            json!({"content": "x", "attempts": {"count": 2, "usageComplete": true}}),
            false
        ),
        "attempts.outputTokens"
    );
    assert_eq!(
        protocol_error(
            json!({"content": "x", "usage": {"outputTokens": 900},
                   "attempts": {"count": 2, "outputTokens": 800, "usageComplete": true}}),
            false
        ),
        "attempts.outputTokens"
    );
    assert_eq!(
        protocol_error(
            json!({"content": "x", "usage": {"outputTokens": 9},
                   "attempts": {"count": 2, "usageComplete": false}}),
            false
        ),
        "attempts.outputTokens"
    );
    assert_eq!(
        protocol_error(
            json!({"content": "x", "attempts": {"count": 0, "outputTokens": 0, "usageComplete": true}}),
            false
        ),
        "attempts.count"
    );
    // Consistent answers are accepted: incomplete usage without a sum (no attempt reported
    // any), and a sum that covers the final attempt.
    for ok in [
        json!({"content": "x", "attempts": {"count": 1, "usageComplete": false}}),
        json!({"content": "x", "usage": {"outputTokens": 7},
               "attempts": {"count": 2, "outputTokens": 7, "usageComplete": false}}),
        json!({"content": "x", "usage": {"outputTokens": 7},
               "attempts": {"count": 2, "outputTokens": 12, "usageComplete": true}}),
    ] {
        assert!(CallAiResult::from_json(&ok, false).is_ok(), "{ok}");
    }
}

#[test]
fn v1_spellings_are_accepted_and_v2_written() {
    let u: Usage = serde_json::from_value(json!({"promptTokens": 3, "completionTokens": 4}))
        .expect("v1 usage");
    assert_eq!(
        serde_json::to_value(u).ok(),
        Some(json!({"inputTokens": 3, "outputTokens": 4}))
    );
    let r = CallAiResult::from_json(
        &json!({"content": "x", "finishReason": "content_filter"}),
        false,
    )
    .expect("v1");
    assert_eq!(r.finish_reason, Some(FinishReason::ContentFilter));
    assert_eq!(r.to_json()["finishReason"], "content-filter");
    assert_eq!(
        normalize_type("envelope.retry.exhausted"),
        "envelope.retry-exhausted"
    );
    let e = RunEvent::from_json(&json!({"type": "envelope.retry.exhausted",
                "payload": {"nodeId": "n", "totalAttempts": 1, "finalReason": "parse-error"}}))
    .expect("v1 event");
    assert_eq!(
        (e.kind(), e.u64("totalAttempts")),
        ("envelope.retry-exhausted", Some(1))
    );
}

fn v2_doc() -> Value {
    json!({ "protocolVersions": ["2.0"], "preferredVersion": "2.0",
      "aiProviders": { "status": "stable", "since": "2.0", "witness": "witnessable-gated",
                       "providers": ["mock"], "callAccounting": {"attempts": true, "retryPolicy": true} },
      "envelopes": { "status": "stable", "since": "2.0", "witness": "claims-check",
                     "reliability": { "maxRetryAttempts": 3, "events": ["envelope.retry-exhausted", "envelope.refusal"],
                                      "completion": {"distinguishesTruncation": true, "truncationBudgetMultiplier": 2} } },
      "providerUsage": { "status": "stable", "since": "2.0", "witness": "witnessable-gated" },
      "replay": { "status": "stable", "since": "2.0", "witness": "witnessable-gated",
                  "modes": ["replay"], "effectSeamsManifest": "/host/effect-seams" },
      "limits": { "status": "stable", "since": "2.0", "witness": "witnessable-gated",
                  "schemaRounds": 3, "clarificationRounds": 0, "envelopesPerTurn": 1 } })
}

/// The first reading of v2 (before the family records): presence advertises, short event names.
fn draft_doc() -> Value {
    json!({ "aiProviders": { "providers": ["mock"], "callAccounting": {"attempts": true, "retryPolicy": true} },
      "envelopes": { "reliability": { "maxRetryAttempts": 3, "events": ["retry-exhausted", "refusal"],
                                      "completion": {"distinguishesTruncation": true, "truncationBudgetMultiplier": 2} } },
      "providerUsage": {}, "replay": {"modes": ["replay"]}, "limits": {"schemaRounds": 3} })
}

fn v1_doc() -> Value {
    json!({ "aiProviders": { "supported": ["mock"],
                             "callAccounting": {"attempts": {"supported": true}, "retryPolicy": {"supported": true}} },
      "envelopes": { "reliability": { "supported": true, "maxRetryAttempts": 3, "events": ["retry.exhausted", "refusal"],
                                      "completion": {"distinguishesTruncation": {"supported": true}, "truncationBudgetMultiplier": 2} } },
      "providerUsage": {"supported": true}, "replay": {"supported": true, "modes": ["replay"]}, "limits": {"schemaRounds": 3} })
}

#[test]
fn a_v1_and_a_v2_document_negotiate_to_the_same_capabilities() {
    let v1 = CapabilityDocument::from_json(&v1_doc()).expect("v1");
    let v2 = CapabilityDocument::from_json(&v2_doc()).expect("v2");
    let draft = CapabilityDocument::from_json(&draft_doc()).expect("draft");
    assert_eq!(v1, v2);
    assert_eq!(draft, v2);
    assert_eq!(v2.to_json(), v2_doc(), "v2 is written back unchanged");
    let caps = Capabilities::negotiate(v1);
    assert!(caps.has(Capability::Attempts) && caps.has(Capability::RetryPolicy));
    assert_eq!(
        (caps.max_retry_attempts(), caps.truncation_multiplier()),
        (3, 2)
    );
    assert_eq!(caps.providers(), ["mock"]);
    assert!(caps.provider_usage());
    assert_eq!(caps.replay_modes(), ["replay"]);
}

#[test]
fn a_document_without_call_accounting_yields_no_proof() {
    let mut doc = v2_doc();
    doc["aiProviders"]
        .as_object_mut()
        .map(|m| m.remove("callAccounting"));
    let caps = Capabilities::negotiate(CapabilityDocument::from_json(&doc).expect("valid"));
    assert!(!caps.has(Capability::Attempts));
    assert!(!caps.has(Capability::RetryPolicy));
    let v1_off =
        json!({"aiProviders": {"supported": ["mock"], "callAccounting": {"supported": false}}});
    let caps = Capabilities::negotiate(CapabilityDocument::from_json(&v1_off).expect("valid"));
    assert!(!caps.has(Capability::Attempts));
}

#[test]
fn a_malformed_document_names_the_field() {
    let e = CapabilityDocument::from_json(
        &json!({"aiProviders": {"callAccounting": {"attempts": "yes"}}}),
    )
    .expect_err("bad");
    assert_eq!(
        (e.code, e.field.as_str()),
        (
            ErrorCode::ProtocolError,
            "aiProviders.callAccounting.attempts"
        )
    );
}

#[test]
fn a_family_advertised_as_unsupported_contributes_nothing() {
    let doc = json!({"aiProviders": {"supported": false, "providers": ["mock"],
                                     "callAccounting": {"attempts": true, "retryPolicy": true}}});
    let parsed = CapabilityDocument::from_json(&doc).expect("valid");
    assert!(
        !parsed.ai_providers && parsed.providers.is_empty() && parsed.call_accounting.is_none()
    );
    assert_eq!(
        CapabilityDocument::from_json(&parsed.to_json()),
        Ok(parsed.clone())
    );
    assert!(!Capabilities::negotiate(parsed).has(Capability::Attempts));
}

#[test]
fn a_run_id_is_written_and_read_as_its_text() {
    let id = wop_sdk::RunId::new("local/0123456789abcdef");
    let text = serde_json::to_string(&id).expect("serialize");
    assert_eq!(text, r#""local/0123456789abcdef""#);
    let back: wop_sdk::RunId = serde_json::from_str(&text).expect("deserialize");
    assert_eq!(back, id);
    let escaped: wop_sdk::RunId = serde_json::from_str(r#""local/a\u002fb""#).expect("escaped");
    assert_eq!(escaped.as_str(), "local/a/b");
    let err = serde_json::from_value::<wop_sdk::RunId>(json!(7)).expect_err("a number");
    assert!(err.to_string().contains("a run id (a string)"), "{err}");
}
