//! One rule set for a host's answer: a typed [`CallAiResult`] (a host reached in process) and the
//! same answer as JSON text (a host over a bridge, a journal's record) are accepted or refused
//! together, with the same error, over the whole space of the fields the rules read.

use proptest::prelude::*;
use serde_json::json;
use std::sync::Arc;
use wop_sdk::host::{AttemptKey, BoxFuture, Host, HostFailure, HostLayer, RunId};
use wop_sdk::node::execute;
use wop_sdk::wire::{
    Attempts, CallAiRequest, CallAiResult, ErrorCode, FinishReason, StructuredOutputMode, Usage,
};
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text, wop_node};
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};

/// Token counts around the values the rules compare (a final attempt's 50), and any.
fn tokens() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![
        Just(None),
        Just(Some(0)),
        Just(Some(49)),
        Just(Some(50)),
        Just(Some(51)),
        Just(Some(u64::MAX)),
        any::<u64>().prop_map(Some),
    ]
}

fn typed_result() -> impl Strategy<Value = CallAiResult> {
    let usage = prop_oneof![
        Just(None),
        (tokens(), tokens(), tokens()).prop_map(|(i, o, t)| Some(Usage {
            input_tokens: i,
            output_tokens: o,
            total_tokens: t,
        })),
    ];
    let mode = prop_oneof![
        Just(None),
        Just(Some(StructuredOutputMode::Native)),
        Just(Some(StructuredOutputMode::Prompt)),
    ];
    let attempts = prop_oneof![
        Just(None),
        (
            prop_oneof![
                Just(0u32),
                Just(1),
                Just(2),
                Just(3),
                Just(17),
                any::<u32>()
            ],
            tokens(),
            any::<bool>(),
            mode,
        )
            .prop_map(
                |(count, output_tokens, usage_complete, structured_output)| {
                    Some(Attempts {
                        count,
                        output_tokens,
                        usage_complete,
                        structured_output,
                    })
                }
            ),
    ];
    (usage, attempts, any::<bool>(), any::<bool>()).prop_map(|(usage, attempts, data, stop)| {
        CallAiResult {
            data: data.then(|| json!({"text": "a scene"})),
            content: (!data).then(|| "a scene".to_owned()),
            usage,
            finish_reason: stop.then_some(FinishReason::Stop),
            model: Some("m".to_owned()),
            attempt_id: Some("att_1".to_owned()),
            semantic_status: None,
            attempts,
        }
    })
}

/// RFC 0248 §A as the test reads it, written apart from the SDK's check: the rule a result
/// breaks, if any.
fn broken_rule(r: &CallAiResult, structured: bool) -> Option<&'static str> {
    let a = r.attempts?;
    let final_out = r.usage.and_then(|u| u.output_tokens);
    if a.count == 0 {
        Some("§A.1: a call made at least one request")
    } else if a.structured_output.is_some() && !structured {
        Some("§A.3: a mode only with `responseSchema`")
    } else if a.usage_complete && a.output_tokens.is_none() {
        Some("§A.2: complete usage has a sum")
    } else if final_out.is_some() && a.output_tokens.is_none() {
        Some("§A.2/§A.4: the final attempt reported, so the sum exists")
    } else if final_out > a.output_tokens {
        Some("§A.2/§A.4: the sum includes the final attempt")
    } else {
        None
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn a_typed_answer_and_its_json_are_accepted_or_refused_together(
        result in typed_result(),
        structured in any::<bool>(),
    ) {
        let typed = result.check(structured);
        prop_assert_eq!(typed.is_err(), broken_rule(&result, structured).is_some(), "{:?}", typed);
        let parsed = CallAiResult::from_json(&result.to_json(), structured);
        prop_assert_eq!(parsed.as_ref().map(|_| ()), typed.as_ref().map(|&()| ()));
        if let Ok(parsed) = parsed {
            prop_assert_eq!(parsed, result);
        }
        if let Err(e) = typed {
            prop_assert_eq!(e.code, ErrorCode::ProtocolError);
            prop_assert!(e.field.starts_with("attempts."), "{}", e.field);
        }
    }
}

/// The answer of issue 26: the sum over the attempts (0) is below the final attempt's 50.
fn sum_below_final() -> CallAiResult {
    CallAiResult {
        content: Some("a scene".to_owned()),
        usage: Some(Usage {
            output_tokens: Some(50),
            ..Usage::default()
        }),
        attempt_id: Some("att_1".to_owned()),
        attempts: Some(Attempts {
            count: 2,
            output_tokens: Some(0),
            usage_complete: true,
            structured_output: None,
        }),
        ..CallAiResult::default()
    }
}

#[test]
fn a_sum_below_the_final_attempt_is_refused_both_ways_with_the_same_error() {
    let typed = sum_below_final().check(false).expect_err("typed: refused");
    let text = json!({
        "content": "a scene",
        "usage": {"outputTokens": 50},
        "attemptId": "att_1",
        "attempts": {"count": 2, "outputTokens": 0, "usageComplete": true},
    });
    let parsed = CallAiResult::from_json(&text, false).expect_err("JSON: refused");
    assert_eq!(typed, parsed);
    assert_eq!(typed.field, "attempts.outputTokens");
    assert!(
        typed.rule.contains("below the final attempt"),
        "{}",
        typed.rule
    );
}

#[wop_node(type_id = "community.test.one-call", version = "1.0.0", max_calls = 5)]
async fn one_call(ctx: &NodeCtx<'_>, _input: serde_json::Value) -> Result<String, NodeError> {
    let c = ctx.call_ai(AiRequest::<Text>::prompt("write")).await?;
    Ok(c.into_output().map(|t| t.0).unwrap_or_default())
}

/// A host reached in process whose typed answers carry a doctored `attempts`.
struct Doctored {
    inner: LocalHost,
    attempts: Attempts,
}

impl HostLayer for Doctored {
    fn inner(&self) -> &dyn Host {
        &self.inner
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
    ) -> BoxFuture<'a, Result<CallAiResult, HostFailure>> {
        Box::pin(async move {
            let mut r = self.inner.call_ai(key, request).await?;
            r.attempts = Some(self.attempts);
            Ok(r)
        })
    }
}

#[tokio::test]
async fn a_node_on_a_host_in_process_that_breaks_the_rule_fails_as_a_protocol_error() {
    let attempts = sum_below_final().attempts.expect("attempts");
    let inner = LocalHost::rfc0248()
        .provider(ScriptedProvider::new(
            [Step::text("a scene", 50)].into_iter().collect(),
        ))
        .build();
    let host = Arc::new(Doctored { inner, attempts });
    let out = execute(host, RunId::new("doctored"), "main", &OneCall, json!({})).await;
    let err = out.result.expect_err("the node fails");
    assert_eq!(err.error, ErrorCode::ProtocolError);
    assert_eq!(err.field(), Some("attempts.outputTokens"));
}
