//! A [`ProviderRequest`] as a Chat Completions request body.
//!
//! - `model`: the request's model (the host fills it from the call's `model` or its
//!   `default_model`).
//! - `messages`: the system prompt first, then the call's messages as they are.
//! - the budget: `max_tokens` or `max_completion_tokens`, as configured.
//! - a structured request in `native` mode: `response_format: {type: "json_schema", json_schema:
//!   {name, schema, strict}}`, `name` from the schema's `title` (reduced to `[A-Za-z0-9_-]`, at
//!   most 64 characters) or `response`.
//! - a structured request in `prompt` mode: no `response_format`; the schema is given in the
//!   system message with the instruction to answer with the JSON value alone.

use super::config::OpenAiConfig;
use crate::local::ProviderRequest;
use crate::wire::{Role, StructuredOutputMode};
use serde_json::{Map, Value, json};

/// The instruction that carries the schema in `prompt` mode.
pub(crate) const PROMPT_INSTRUCTION: &str = "Reply with a single JSON value that matches the \
following JSON Schema. Write nothing else: no prose, no code fence.\nJSON Schema:";

/// The request body.
pub(crate) fn body(config: &OpenAiConfig, request: &ProviderRequest) -> Value {
    let schema: Option<&Value> = request.response_schema.as_ref().map(|s| {
        let s: &Value = s;
        s
    });
    let mode = schema.map(|_| request.mode.unwrap_or(StructuredOutputMode::Native));
    let mut system = request.system_prompt.clone().filter(|s| !s.is_empty());
    if let (Some(schema), Some(StructuredOutputMode::Prompt)) = (schema, mode) {
        let note = format!("{PROMPT_INSTRUCTION}\n{schema}");
        system = Some(match system {
            Some(s) => format!("{s}\n\n{note}"),
            None => note,
        });
    }
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(s) = system {
        messages.push(json!({"role": "system", "content": s}));
    }
    for m in &request.messages {
        let role = match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        };
        messages.push(json!({"role": role, "content": m.content}));
    }
    let mut body = Map::new();
    body.insert("model".into(), Value::String(request.model.clone()));
    body.insert("messages".into(), Value::Array(messages));
    body.insert(
        config.limit_field().as_str().into(),
        Value::from(request.max_tokens),
    );
    if let (Some(schema), Some(StructuredOutputMode::Native)) = (schema, mode) {
        body.insert(
            "response_format".into(),
            json!({
                "type": "json_schema",
                "json_schema": {
                    "name": schema_name(schema),
                    "schema": schema,
                    "strict": config.strict(),
                }
            }),
        );
    }
    Value::Object(body)
}

/// The `json_schema.name`: the schema's `title` reduced to the characters OpenAI accepts
/// (`[A-Za-z0-9_-]{1,64}`), or `response`.
pub(crate) fn schema_name(schema: &Value) -> String {
    let name: String = schema
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(64)
        .collect();
    if name.trim_matches('_').is_empty() {
        "response".to_owned()
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::host::RunId;
    use crate::wire::Message;

    // `.into()`: the field is `Option<Value>` now and `Option<Arc<Value>>` after issue 16.
    #[allow(clippy::useless_conversion)]
    fn request(schema: Option<Value>, mode: Option<StructuredOutputMode>) -> ProviderRequest {
        ProviderRequest {
            run_id: RunId::new("local/r"),
            node_id: "main".into(),
            provider: "openai".into(),
            model: "m".into(),
            system_prompt: Some("Be brief.".into()),
            messages: vec![Message::user("Hi")],
            max_tokens: 64,
            response_schema: schema.map(Into::into),
            mode,
            attempt: 1,
        }
    }

    fn config() -> OpenAiConfig {
        OpenAiConfig::new("http://127.0.0.1:1/v1", "m").expect("config")
    }

    #[test]
    fn plain_request() {
        let b = body(&config(), &request(None, None));
        assert_eq!(
            b,
            json!({"model": "m", "max_tokens": 64, "messages": [
                {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]})
        );
    }

    #[test]
    fn native_request_carries_the_schema_in_response_format() {
        let schema = json!({"title": "Scene Text", "type": "object"});
        let b = body(
            &config()
                .strict_schema(true)
                .token_limit_field(super::super::TokenLimitField::MaxCompletionTokens),
            &request(Some(schema.clone()), Some(StructuredOutputMode::Native)),
        );
        assert_eq!(b["max_completion_tokens"], 64);
        assert!(b.get("max_tokens").is_none());
        assert_eq!(
            b["response_format"],
            json!({"type": "json_schema", "json_schema": {"name": "Scene_Text", "schema": schema, "strict": true}})
        );
        assert_eq!(b["messages"][0]["content"], "Be brief.");
    }

    #[test]
    fn prompt_request_carries_the_schema_in_the_system_message() {
        let schema = json!({"type": "object"});
        let b = body(
            &config(),
            &request(Some(schema), Some(StructuredOutputMode::Prompt)),
        );
        assert!(b.get("response_format").is_none());
        let system = b["messages"][0]["content"].as_str().expect("system");
        assert!(system.starts_with("Be brief.\n\n"));
        assert!(system.ends_with("JSON Schema:\n{\"type\":\"object\"}"));
    }

    #[test]
    fn schema_names() {
        assert_eq!(schema_name(&json!({})), "response");
        assert_eq!(schema_name(&json!({"title": "?!"})), "response");
        assert_eq!(schema_name(&json!({"title": "a".repeat(80)})).len(), 64);
    }
}
