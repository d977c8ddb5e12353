//! The fixture's inputs of the eight legs: each scripts the conformance mock, one reply per
//! provider request.

use serde_json::{Value, json};

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
