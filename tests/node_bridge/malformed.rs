//! Malformed host answers (`hostAnswers` in the harness): each a clear node failure with a code,
//! and the same Node process then runs a node normally.

use super::{harness, scenario, step};
use serde_json::{Value, json};
use wop_sdk::wire::ErrorCode;

/// A malformed host answer: a clear node failure with a code, and the Node process lives on.
fn malformed(answers: Value, config: Value) -> Value {
    let report = harness(&scenario(
        false,
        json!([
            {"nodeId": "bad", "typeId": "community.mybook.draft-scene",
             "inputs": {"premise": "p"}, "config": config, "hostAnswers": answers},
            // The same process then runs a node normally.
            {"nodeId": "after", "typeId": "community.demo.bookai.review-chapter",
             "inputs": {"draft": {"number": 1, "scenes": []}},
             "script": [{"content": "Fine.", "usage": {"outputTokens": 2}}]},
        ]),
    ));
    assert_eq!(step(&report, "after")["outcome"]["status"], "success");
    step(&report, "bad")["outcome"].clone()
}

#[test]
fn a_result_without_data_fails_the_node_with_a_code() {
    let ok = json!({"usage": {"outputTokens": 1}, "finishReason": "stop", "model": "m"});
    let outcome = malformed(json!([{"result": ok}]), json!({}));
    assert_eq!(outcome["status"], "failure");
    assert_eq!(
        outcome["error"]["code"],
        ErrorCode::NodeFailed.as_str(),
        "{outcome:#}"
    );
    assert!(
        outcome["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("no `data`"))
    );
}

#[test]
fn a_result_of_the_wrong_types_fails_the_node_with_protocol_error() {
    for bad in [
        json!("a string"),
        json!({"data": {"text": "x"}, "usage": {"outputTokens": "many"}}),
        json!(null),
    ] {
        let outcome = malformed(json!([{"result": bad}]), json!({}));
        assert_eq!(outcome["status"], "failure");
        assert_eq!(
            outcome["error"]["code"],
            ErrorCode::ProtocolError.as_str(),
            "{bad}: {outcome:#}"
        );
    }
}

#[test]
fn a_thrown_non_error_fails_the_node_with_protocol_error() {
    for thrown in [json!("boom"), json!(42), json!({"no": "code"})] {
        let outcome = malformed(json!([{"throwValue": thrown}]), json!({}));
        assert_eq!(
            outcome["error"]["code"],
            ErrorCode::ProtocolError.as_str(),
            "{thrown}: {outcome:#}"
        );
    }
}

#[test]
fn a_host_error_keeps_its_code_and_message_behind_the_sdks() {
    // The host's own code and message reach the user (they say what to fix); a key in the
    // message does not.
    for (code, message, sdk, kept) in [
        (
            "provider_rate_limited",
            "429 from upstream, key sk-123",
            ErrorCode::UpstreamUnavailable,
            "(host: provider_rate_limited: 429 from upstream, key <redacted>)",
        ),
        (
            "byok_required",
            "No credential available for provider openai",
            ErrorCode::CapabilityNotProvided,
            "(host: byok_required: No credential available for provider openai)",
        ),
    ] {
        let outcome = malformed(
            json!([{"throwError": {"message": message, "code": code}}]),
            json!({}),
        );
        assert_eq!(outcome["error"]["code"], sdk.as_str(), "{outcome:#}");
        let said = outcome["error"]["message"].as_str().unwrap_or_default();
        assert!(said.contains(kept), "{outcome:#}");
        assert!(!outcome.to_string().contains("sk-123"), "{outcome:#}");
    }
}

#[test]
fn a_mock_call_openwop_app_finds_invalid_points_at_its_test_seam() {
    // The quickstart pack is written with `--provider mock`: on openwop-app without its test seam
    // the mock's replies fail `envelope_invalid`, and the user is told where the seam is.
    let outcome = malformed(
        json!([{"throwError": {"message": "no reply met the schema", "code": "envelope_invalid"}}]),
        json!({}),
    );
    assert_eq!(
        outcome["error"]["code"],
        ErrorCode::EnvelopeInvalid.as_str()
    );
    let said = outcome["error"]["message"].as_str().unwrap_or_default();
    assert!(
        said.contains("OPENWOP_TEST_SEAM_ENABLED=true"),
        "{outcome:#}"
    );
    // A real provider's invalid reply gets no such hint.
    let outcome = malformed(
        json!([{"throwError": {"message": "no reply met the schema", "code": "envelope_invalid"}}]),
        json!({"provider": "openai", "model": "gpt-4o-mini"}),
    );
    let said = outcome["error"]["message"].as_str().unwrap_or_default();
    assert!(!said.contains("OPENWOP_TEST_SEAM"), "{outcome:#}");
}

#[test]
fn a_call_that_never_settles_fails_at_the_nodes_timeout() {
    // A call that hangs would hang the harness too: that the outcome comes back, coded, is the
    // proof (no wall-clock limit, which a loaded machine would break). The addon drops the node
    // at its timeout, the call with it; the host's late answer (none here) would be dropped.
    let outcome = malformed(json!([{"hang": true}]), json!({"timeoutMs": 300}));
    assert_eq!(
        outcome["error"],
        json!({"code": ErrorCode::NodeTimeout.as_str(),
               "message": "the node did not end within its timeout of 300 ms"}),
        "{outcome:#}"
    );
}
