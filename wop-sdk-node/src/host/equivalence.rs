//! The per-call roads against their definitions: [`typed_request`] writes the text
//! [`host_request`] writes of the request's JSON value (or the same error), and
//! [`result_of`] reads a result as `CallAiResult::from_json` does, or leaves it to it.

use super::answer::result_of;
use super::config::NodeConfig;
use super::document::HostKind;
use super::request::host_request;
use super::typed::typed_request;
use serde_json::{Value, json};
use std::sync::Arc;
use wop_sdk::wire::{CallAiRequest, CallAiResult, Message, Retry, RetryReason, Role};

/// Every field set (a struct literal: a new field of the request fails to compile here until
/// it is written and tested).
fn full() -> CallAiRequest {
    CallAiRequest {
        provider: Some("openai".into()),
        model: Some("gpt-4o-mini".into()),
        system_prompt: Some("Be brief.\n\"Quote\" \\ back".into()),
        messages: Arc::new([
            Message::user("Write: \"responseSchema\":0 — é ✓ \u{1}"),
            Message {
                role: Role::Assistant,
                content: "{\"text\":\"draft\"}".into(),
            },
            Message {
                role: Role::System,
                content: String::new(),
            },
        ]),
        temperature: Some(0.7),
        max_tokens: Some(600),
        stop_sequences: Some(vec!["\n\n".into(), "END".into()]),
        response_schema: Some(Arc::new(json!({
            "type": "object", "required": ["text"], "__proto__": {"x": 1},
            "properties": {"text": {"type": "string", "description": "é \"q\""}, "1": {}},
        }))),
        retry: Some(Retry {
            max_attempts: Some(3),
            grow_max_tokens: Some(false),
        }),
        slot: Some("draft".into()),
        purpose: Some("scene".into()),
        beneficiary_user_ids: vec!["author-1".into(), "author-2".into()],
        retry_of_attempt_id: Some("local:known".into()),
        retry_reason: Some(RetryReason::InvalidOutput),
    }
}

fn minimal() -> CallAiRequest {
    CallAiRequest {
        messages: Arc::new([Message::user("hi")]),
        ..CallAiRequest::default()
    }
}

/// `from`, with field `i` (0..14) taken from `to`.
fn with_field(mut from: CallAiRequest, to: &CallAiRequest, i: usize) -> CallAiRequest {
    match i {
        0 => from.provider.clone_from(&to.provider),
        1 => from.model.clone_from(&to.model),
        2 => from.system_prompt.clone_from(&to.system_prompt),
        3 => from.messages.clone_from(&to.messages),
        4 => from.temperature = to.temperature,
        5 => from.max_tokens = to.max_tokens,
        6 => from.stop_sequences.clone_from(&to.stop_sequences),
        7 => from.response_schema.clone_from(&to.response_schema),
        8 => from.retry = to.retry,
        9 => from.slot.clone_from(&to.slot),
        10 => from.purpose.clone_from(&to.purpose),
        11 => from
            .beneficiary_user_ids
            .clone_from(&to.beneficiary_user_ids),
        12 => from.retry_of_attempt_id.clone_from(&to.retry_of_attempt_id),
        _ => from.retry_reason = to.retry_reason,
    }
    from
}

fn requests() -> Vec<CallAiRequest> {
    let (full, minimal) = (full(), minimal());
    let mut all = vec![full.clone(), minimal.clone()];
    for i in 0..14 {
        all.push(with_field(full.clone(), &minimal, i));
        all.push(with_field(minimal.clone(), &full, i));
    }
    let odd = |f: &dyn Fn(&mut CallAiRequest)| {
        let mut r = full.clone();
        f(&mut r);
        r
    };
    all.push(odd(&|r| r.provider = Some(String::new())));
    all.push(odd(&|r| r.model = Some(String::new())));
    all.push(odd(&|r| r.temperature = Some(f64::NAN)));
    all.push(odd(&|r| r.temperature = Some(f64::INFINITY)));
    all.push(odd(&|r| r.temperature = Some(1e-300)));
    all.push(odd(&|r| {
        r.retry_of_attempt_id = Some("local:unknown".into())
    }));
    all.push(odd(&|r| {
        r.retry = Some(Retry::default());
        r.stop_sequences = Some(Vec::new());
    }));
    all.push(odd(&|r| {
        r.response_schema = Some(Arc::new(Value::Bool(true)))
    }));
    all
}

#[test]
fn the_typed_request_is_the_text_of_its_json_value() {
    let configs = [
        NodeConfig::default(),
        NodeConfig {
            provider: Some("mock".into()),
            model: Some("mock-1".into()),
        },
    ];
    let issued = |id: &str| id == "local:known";
    let mut compared = 0;
    for request in requests() {
        for kind in [HostKind::Plain, HostKind::Accounting] {
            for config in &configs {
                let typed = typed_request(&request, kind, config, issued);
                let value = host_request(&request.to_json(), kind, config, issued);
                match (typed, value) {
                    (Ok(typed), Ok(text)) => {
                        assert_eq!(typed.full_text(), text, "{kind:?} {config:?}");
                        // The schema goes apart, its placeholder where it was.
                        assert_eq!(typed.schema.is_some(), request.response_schema.is_some());
                        if let Some((at, _)) = &typed.schema {
                            assert_eq!(&typed.text[at - 17..=*at], "\"responseSchema\":0");
                        }
                        compared += 1;
                    }
                    (Err(a), Err(b)) => assert_eq!(a, b),
                    (a, b) => panic!("{kind:?} {config:?} {request:?}: {a:?} against {b:?}"),
                }
            }
        }
    }
    assert!(compared > 60, "most of them are written: {compared}");
}

/// A result's fields, each from a few spellings: good, absent, `null`, the wrong type, out of
/// its set, a v1 alias, an integer written as a float.
const FIELDS: &[(&str, &[&str])] = &[
    ("data", &[r#"{"text":"hi"}"#, "null", "[1]", "3"]),
    ("content", &[r#""hi""#, "null", "3"]),
    (
        "usage",
        &[
            r#"{"inputTokens":1,"outputTokens":2}"#,
            r#"{"promptTokens":1,"completionTokens":2,"totalTokens":3}"#,
            r#"{"inputTokens":null,"promptTokens":4,"outputTokens":2.0}"#,
            r#"{"inputTokens":1,"promptTokens":4,"outputTokens":7,"completionTokens":2}"#,
            r#"{"outputTokens":-1}"#,
            r#"{"outputTokens":"2"}"#,
            "[1,2]",
            "null",
        ],
    ),
    (
        "finishReason",
        &[
            r#""stop""#,
            r#""content_filter""#,
            r#""st\u006fp""#,
            r#""nope""#,
            "null",
        ],
    ),
    ("model", &[r#""m-1""#, "null", "1"]),
    ("attemptId", &[r#""a-1""#, "null", "{}"]),
    (
        "semanticStatus",
        &[r#""ok""#, r#""invalid_output""#, r#""bad""#],
    ),
    (
        "attempts",
        &[
            r#"{"count":1,"outputTokens":2,"usageComplete":true,"structuredOutput":"prompt"}"#,
            r#"{"count":2,"usageComplete":false}"#,
            r#"{"count":0,"outputTokens":2,"usageComplete":true}"#,
            r#"{"count":1.0,"outputTokens":2,"usageComplete":true}"#,
            r#"{"count":5000000000,"usageComplete":false}"#,
            r#"{"usageComplete":false}"#,
            r#"{"count":1,"usageComplete":true}"#,
            r#"{"count":1,"usageComplete":false,"structuredOutput":"json"}"#,
            "null",
        ],
    ),
    ("extra", &[r#"{"ignored":true}"#]),
];

/// Answers built from [`FIELDS`]: each field absent or one of its spellings, chosen by a fixed
/// sequence (so the test reads the same answers every run), and some whole answers.
fn answers() -> Vec<String> {
    let mut all: Vec<String> = [
        r#"{"error":{"code":"x","message":"m"}}"#,
        r#"{"result":null}"#,
        r#"{"result":[{"text":"x"}]}"#,
        r#"[{"result":{}}]"#,
        r#"{"result":{},"other":1}"#,
        r#"{"result":{"model":"a","model":"b"}}"#,
        r#"{"result":{}}"#,
        "not json",
    ]
    .map(str::to_owned)
    .to_vec();
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for _ in 0..3000 {
        let mut parts = Vec::new();
        for (key, spellings) in FIELDS {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let pick = usize::try_from(seed % (spellings.len() as u64 + 1)).unwrap_or(0);
            if let Some(v) = spellings.get(pick) {
                parts.push(format!("\"{key}\":{v}"));
            }
        }
        all.push(format!("{{\"result\":{{{}}}}}", parts.join(",")));
    }
    all
}

#[test]
fn a_result_read_straight_is_the_one_from_json_reads() {
    let mut straight = 0;
    for answer in answers() {
        let Some(fast) = result_of(&answer) else {
            continue;
        };
        straight += 1;
        let value: Value = serde_json::from_str(&answer).expect("it read as JSON");
        for structured in [true, false] {
            let slow = CallAiResult::from_json(&value["result"], structured);
            let fast = fast.check(structured).map(|()| fast.clone());
            assert_eq!(fast, slow, "{answer}");
        }
    }
    // The common answers take the fast road (and the odd ones above were left to `from_json`).
    let common = r#"{"result":{"data":{"text":"hi"},"usage":{"inputTokens":1,"outputTokens":1},"finishReason":"stop","model":"m","attemptId":"a-1","attempts":{"count":1,"outputTokens":1,"usageComplete":true,"structuredOutput":"prompt"}}}"#;
    assert!(result_of(common).is_some());
    assert!(result_of(r#"{"result":{"content":"hi"}}"#).is_some());
    assert!(straight > 100, "{straight} answers read straight");
    for odd in [
        r#"{"result":[{"text":"x"}]}"#,
        r#"[{"result":{}}]"#,
        r#"{"result":{"model":"a","model":"b"}}"#,
        r#"{"result":{"attempts":{"count":1.0,"usageComplete":false}}}"#,
        r#"{"result":{"finishReason":"st\u006fp"}}"#,
    ] {
        assert!(result_of(odd).is_none(), "{odd}");
    }
}
