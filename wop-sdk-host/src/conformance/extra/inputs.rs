//! The fixture inputs of the extra checks: what the host's mock serves (`script`) and what the
//! call asks for (`retry`, `maxTokens`), one input per check.

use serde_json::{Value, json};

/// A valid reply `{"answer": answer}` reporting `output_tokens`.
fn reply(answer: &str, output_tokens: u64) -> Value {
    json!({"content": {"answer": answer}, "usage": {"outputTokens": output_tokens}})
}

/// An invalid (not JSON) reply reporting `output_tokens`.
fn not_json(output_tokens: u64) -> Value {
    json!({"content": "not json", "usage": {"outputTokens": output_tokens}})
}

/// `extra.count-every-request`'s input: `maxTokens: 100`, a reply needing 150 tokens (served
/// truncated), then invalid JSON, then a valid reply: three requests.
pub fn count_every_request_input() -> Value {
    json!({"maxTokens": 100, "script": [
        reply("a reply that needs one hundred and fifty output tokens", 150),
        not_json(5),
        reply("ok", 7)
    ]})
}

/// `extra.usage-incomplete-any-attempt`'s input: invalid JSON without usage, then a valid reply
/// with usage.
pub fn usage_incomplete_any_attempt_input() -> Value {
    json!({"script": [{"content": "not json", "usage": false}, reply("ok", 7)]})
}

/// `extra.structured-output-final-mode`'s input: an invalid `native` reply, then a valid
/// `prompt` one.
pub fn structured_output_final_mode_input() -> Value {
    let mut first = not_json(5);
    first["mode"] = json!("native");
    let mut last = reply("ok", 7);
    last["mode"] = json!("prompt");
    json!({"script": [first, last]})
}

/// `extra.max-attempts-two`'s input: `maxAttempts: 2`, three invalid replies, then a valid one.
pub fn max_attempts_two_input() -> Value {
    json!({"retry": {"maxAttempts": 2},
           "script": [not_json(5), not_json(5), not_json(5), reply("ok", 7)]})
}

/// `extra.max-attempts-clamped`'s input: `maxAttempts: 16` (the largest valid value, above any
/// usual ceiling) and sixteen invalid replies.
pub fn max_attempts_clamped_input() -> Value {
    json!({"retry": {"maxAttempts": 16}, "script": vec![not_json(5); 16]})
}

/// `extra.no-growth-host-default`'s input: `growMaxTokens: false`, no `maxTokens`, and replies
/// declaring far more output than any default budget (each served truncated at its request's
/// budget).
pub fn no_growth_host_default_input() -> Value {
    let huge = reply("a reply that needs a million output tokens", 1_000_000);
    json!({"retry": {"growMaxTokens": false}, "script": [huge.clone(), huge.clone(), huge]})
}

/// `extra.no-retry-after-refusal`'s input: `maxAttempts: 3`, a refusal, then a valid reply.
pub fn no_retry_after_refusal_input() -> Value {
    json!({"retry": {"maxAttempts": 3}, "script": [
        {"finishReason": "content-filter", "content": "I can't help with that.",
         "usage": {"outputTokens": 2}},
        reply("ok", 7)
    ]})
}

/// The malformed `retry` values of `extra.retry-malformed-every-form`, each with the key a
/// refusal must name.
pub fn malformed_forms() -> Vec<(Value, &'static str)> {
    vec![
        (json!({"maxAttempts": 2.5}), "retry.maxAttempts"),
        (json!({"maxAttempts": 17}), "retry.maxAttempts"),
        (json!({"maxAttempts": -1}), "retry.maxAttempts"),
        (json!({"maxAttempts": "2"}), "retry.maxAttempts"),
        (json!({"maxAttempts": true}), "retry.maxAttempts"),
        (json!({"maxAttempts": null}), "retry.maxAttempts"),
        (json!({"growMaxTokens": "no"}), "retry.growMaxTokens"),
        (json!({"growMaxTokens": 0}), "retry.growMaxTokens"),
        (json!({"growMaxTokens": null}), "retry.growMaxTokens"),
    ]
}

/// `extra.retry-malformed-every-form`'s input for one malformed `retry`, with a valid reply a
/// host that ignores it would serve.
pub(super) fn malformed_input(retry: &Value) -> Value {
    json!({"retry": retry, "script": [reply("ok", 7)]})
}
