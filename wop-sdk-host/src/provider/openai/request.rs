//! A [`ProviderRequest`] as a Chat Completions request body.
//!
//! - `model`: the request's model (the host fills it from the call's `model` or its
//!   `default_model`).
//! - `messages`: the system prompt first, then the call's messages as they are.
//! - the budget: `max_tokens` or `max_completion_tokens`, as configured.
//! - `temperature` and `stop` (the call's stop sequences), only when the call set them: a model
//!   that refuses one of them answers 400 and the call fails with the provider's message.
//! - a structured request in `native` mode: `response_format: {type: "json_schema", json_schema:
//!   {name, schema, strict}}`, `name` from the schema's `title` (reduced to `[A-Za-z0-9_-]`, at
//!   most 64 characters) or `response`.
//! - a structured request in `prompt` mode: no `response_format`; the schema is given in the
//!   system message with the instruction to answer with the JSON value alone.

use super::config::{OpenAiConfig, TokenLimitField};
use crate::local::ProviderRequest;
use serde::Serialize;
use serde_json::Value;
use std::borrow::Cow;
use wop_sdk::wire::{Role, StructuredOutputMode};

/// The instruction that carries the schema in `prompt` mode.
pub(crate) const PROMPT_INSTRUCTION: &str = "Reply with a single JSON value that matches the \
following JSON Schema. Write nothing else: no prose, no code fence.\nJSON Schema:";

/// The request body, borrowing from the request (the schema and the messages are not copied).
#[derive(Serialize)]
pub(crate) struct Body<'a> {
    model: &'a str,
    messages: Vec<ChatMessage<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    max_completion_tokens: Option<u32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    stop: Option<&'a [String]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    response_format: Option<ResponseFormat<'a>>,
}

#[derive(Serialize)]
struct ChatMessage<'a> {
    role: &'static str,
    content: Cow<'a, str>,
}

#[derive(Serialize)]
struct ResponseFormat<'a> {
    #[serde(rename = "type")]
    kind: &'static str,
    json_schema: JsonSchemaFormat<'a>,
}

#[derive(Serialize)]
struct JsonSchemaFormat<'a> {
    name: String,
    schema: &'a Value,
    strict: bool,
}

/// The request body.
pub(crate) fn body<'a>(config: &OpenAiConfig, request: &'a ProviderRequest) -> Body<'a> {
    let schema: Option<&'a Value> = request.response_schema.as_ref().map(|s| {
        let s: &Value = s;
        s
    });
    let mode = schema.map(|_| request.mode.unwrap_or(StructuredOutputMode::Native));
    let mut system: Option<Cow<'a, str>> = request
        .system_prompt
        .as_deref()
        .filter(|s| !s.is_empty())
        .map(Cow::Borrowed);
    if let (Some(schema), Some(StructuredOutputMode::Prompt)) = (schema, mode) {
        let note = format!("{PROMPT_INSTRUCTION}\n{schema}");
        system = Some(Cow::Owned(match system {
            Some(s) => format!("{s}\n\n{note}"),
            None => note,
        }));
    }
    let mut messages = Vec::with_capacity(request.messages.len() + 1);
    if let Some(content) = system {
        messages.push(ChatMessage {
            role: "system",
            content,
        });
    }
    messages.extend(request.messages.iter().map(|m| ChatMessage {
        role: match m.role {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::System => "system",
        },
        content: Cow::Borrowed(&m.content),
    }));
    let budget = Some(request.max_tokens);
    let (max_tokens, max_completion_tokens) = match config.limit_field() {
        TokenLimitField::MaxTokens => (budget, None),
        TokenLimitField::MaxCompletionTokens => (None, budget),
    };
    let response_format = match (schema, mode) {
        (Some(schema), Some(StructuredOutputMode::Native)) => Some(ResponseFormat {
            kind: "json_schema",
            json_schema: JsonSchemaFormat {
                name: schema_name(schema),
                schema,
                strict: config.strict(),
            },
        }),
        _ => None,
    };
    Body {
        model: &request.model,
        messages,
        max_tokens,
        max_completion_tokens,
        temperature: request.temperature,
        stop: request.stop_sequences.as_deref().filter(|s| !s.is_empty()),
        response_format,
    }
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
    use serde_json::json;
    use std::sync::Arc;
    use wop_sdk::wire::Message;

    fn body(config: &OpenAiConfig, request: &ProviderRequest) -> Value {
        serde_json::to_value(super::body(config, request)).expect("serializes")
    }

    fn request(schema: Option<Value>, mode: Option<StructuredOutputMode>) -> ProviderRequest {
        ProviderRequest {
            system_prompt: Some("Be brief.".into()),
            messages: Arc::new([Message::user("Hi")]),
            max_tokens: 64,
            ..super::super::test_request(schema, mode)
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
    fn temperature_and_stop_sequences_go_only_when_the_call_set_them() {
        let mut r = request(None, None);
        r.temperature = Some(0.25);
        r.stop_sequences = Some(vec!["END".into(), "\n\n".into()]);
        let b = body(&config(), &r);
        assert_eq!(b["temperature"], 0.25);
        assert_eq!(b["stop"], json!(["END", "\n\n"]));
        // An empty list is no stop sequence at all.
        r.stop_sequences = Some(Vec::new());
        r.temperature = None;
        let b = body(&config(), &r);
        assert!(
            b.get("stop").is_none() && b.get("temperature").is_none(),
            "{b}"
        );
    }

    #[test]
    fn native_request_carries_the_schema_in_response_format() {
        let schema = json!({"title": "Scene Text", "type": "object"});
        let b = body(
            &config()
                .strict_schema(true)
                .token_limit_field(TokenLimitField::MaxCompletionTokens),
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
