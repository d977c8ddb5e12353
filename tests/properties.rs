//! Property tests: the wire parsers never panic, name the field of every rejection and
//! round-trip what they accept; the local host's accounting matches the provider's own count for
//! any script.

use proptest::prelude::*;
use serde_json::{Map, Value, json};
use wop_sdk::host::{AttemptKey, Host, RunId};
use wop_sdk::wire::{
    CallAiRequest, CallAiResult, CapabilityDocument, ErrorCode, Retry, RunEvent, kind,
};
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};

const KEYS: &[&str] = &[
    "prompt",
    "messages",
    "role",
    "content",
    "maxTokens",
    "temperature",
    "retry",
    "maxAttempts",
    "growMaxTokens",
    "responseSchema",
    "retryOfAttemptId",
    "retryReason",
    "beneficiaryUserIds",
    "slot",
    "purpose",
    "data",
    "usage",
    "attempts",
    "count",
    "outputTokens",
    "usageComplete",
    "structuredOutput",
    "finishReason",
    "attemptId",
    "semanticStatus",
    "aiProviders",
    "providers",
    "supported",
    "callAccounting",
    "retryPolicy",
    "envelopes",
    "reliability",
    "maxRetryAttempts",
    "events",
    "completion",
    "replay",
    "modes",
    "type",
    "payload",
    "seq",
    "x",
];

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        (-3i64..40).prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        (-1e3f64..1e3).prop_map(|f| json!(f)),
        prop::sample::select(vec![
            "user",
            "native",
            "stop",
            "length",
            "invalid_output",
            "ok",
            "x",
            "",
            "3"
        ])
        .prop_map(|s| Value::String(s.to_owned())),
        ".{0,8}".prop_map(Value::String),
    ]
}

fn json_value() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(4, 48, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..6).prop_map(|kv| {
                Value::Object(
                    kv.into_iter()
                        .map(|(k, v)| (k.to_owned(), v))
                        .collect::<Map<_, _>>(),
                )
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn requests_never_panic_name_the_field_and_round_trip(v in json_value()) {
        match CallAiRequest::from_json(&v) {
            Ok(r) => prop_assert_eq!(CallAiRequest::from_json(&r.to_json()), Ok(r)),
            Err(e) => {
                prop_assert_eq!(e.code, ErrorCode::ValidationError);
                prop_assert!(!e.field.is_empty());
            }
        }
    }

    #[test]
    fn retry_values_never_panic(v in json_value()) {
        match Retry::from_json(&v) {
            Ok(r) => {
                prop_assert!(r.max_attempts.is_none_or(|n| (1..=16).contains(&n)));
                prop_assert_eq!(Retry::from_json(&serde_json::to_value(r).unwrap_or_default()), Ok(r));
            }
            Err(e) => prop_assert!(e.field.starts_with("retry")),
        }
    }

    #[test]
    fn results_never_panic_name_the_field_and_round_trip(v in json_value(), structured in any::<bool>()) {
        match CallAiResult::from_json(&v, structured) {
            Ok(r) => {
                // What the JSON path accepts, the typed path accepts.
                prop_assert_eq!(r.check(structured), Ok(()));
                prop_assert_eq!(CallAiResult::from_json(&r.to_json(), structured), Ok(r));
            }
            Err(e) => {
                prop_assert_eq!(e.code, ErrorCode::ProtocolError);
                prop_assert!(!e.field.is_empty());
            }
        }
    }

    #[test]
    fn capability_documents_never_panic_and_round_trip(v in json_value()) {
        match CapabilityDocument::from_json(&v) {
            Ok(d) => prop_assert_eq!(CapabilityDocument::from_json(&d.to_json()), Ok(d)),
            Err(e) => prop_assert_eq!(e.code, ErrorCode::ProtocolError),
        }
    }

    #[test]
    fn events_never_panic_and_round_trip(v in json_value()) {
        if let Ok(e) = RunEvent::from_json(&v) {
            let back = serde_json::to_value(&e).unwrap_or_default();
            prop_assert_eq!(RunEvent::from_json(&back), Ok(e));
        }
    }
}

/// One scripted reply, described so the expected accounting can be computed.
#[derive(Clone, Debug)]
struct Reply {
    valid: bool,
    tokens: u64,
    usage: bool,
}

fn reply() -> impl Strategy<Value = Reply> {
    (any::<bool>(), 0u64..400, prop::bool::weighted(0.8)).prop_map(|(valid, tokens, usage)| Reply {
        valid,
        tokens,
        usage,
    })
}

fn step(r: &Reply) -> Step {
    let s = if r.valid {
        Step::json(&json!({"title": "t"}), r.tokens)
    } else {
        Step::text("not json", r.tokens)
    };
    if r.usage { s } else { s.without_usage() }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn accounting_matches_the_provider_for_any_script(
        script in prop::collection::vec(reply(), 1..8),
        max_attempts in prop::option::of(1u8..=16),
        grow in any::<bool>(),
        ceiling in 1u8..=5,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        rt.block_on(async {
            let provider = ScriptedProvider::new(script.iter().map(step).collect());
            let host = LocalHost::rfc0248().provider(provider.clone()).max_retry_attempts(ceiling).build();
            let mut retry = Map::new();
            if let Some(m) = max_attempts { retry.insert("maxAttempts".into(), json!(m)); }
            retry.insert("growMaxTokens".into(), json!(grow));
            let request = json!({"prompt": "p", "maxTokens": 100, "retry": retry,
                "responseSchema": {"type": "object", "required": ["title"]}});
            let run = RunId::new("prop");
            let answer = host.call_ai_json(&AttemptKey { run_id: run.clone(), node_id: "n".into(), call_index: 0 }, &request).await;
            let sent = provider.requests();
            let cap = max_attempts.map_or(ceiling, |m| m.min(ceiling));
            prop_assert!(sent.len() <= usize::from(cap), "{} requests over a cap of {cap}", sent.len());
            if !grow {
                prop_assert!(sent.iter().all(|r| r.max_tokens <= 100));
            }
            let events = host.events(&run).await;
            let usage_events: Vec<_> = events.iter().filter(|e| e.kind() == kind::PROVIDER_USAGE).collect();
            // What the provider reported, request by request (clamped to each request's budget).
            let served = &script[..sent.len().min(script.len())];
            let reported: Vec<u64> = served.iter().zip(&sent).filter(|(r, _)| r.usage)
                .map(|(r, s)| r.tokens.min(u64::from(s.max_tokens))).collect();
            prop_assert_eq!(usage_events.len(), reported.len());
            let summed: u64 = usage_events.iter().filter_map(|e| e.u64("outputTokens")).sum();
            prop_assert_eq!(summed, reported.iter().sum::<u64>());
            match answer {
                Ok(result) => {
                    let a = &result.to_json()["attempts"];
                    prop_assert_eq!(a["count"].as_u64(), Some(sent.len() as u64));
                    prop_assert_eq!(a["outputTokens"].as_u64(), Some(summed));
                    prop_assert_eq!(a["usageComplete"].as_bool(), Some(served.iter().all(|r| r.usage)));
                }
                Err(_) => {
                    let exhausted: Vec<_> = events.iter().filter(|e| e.kind() == kind::RETRY_EXHAUSTED).collect();
                    if let Some(e) = exhausted.first() {
                        prop_assert_eq!(e.u64("totalAttempts"), Some(sent.len() as u64));
                    }
                }
            }
            Ok(())
        })?;
    }
}
