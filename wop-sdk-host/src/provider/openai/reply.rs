//! A Chat Completions reply body as a [`ProviderReply`].
//!
//! - the first choice's `message.content` is the content; a non-empty `message.refusal` is a
//!   refusal (`content-filter`), its text kept as the content (the host keeps it private);
//! - `finish_reason`: `stop`, `length`, `content_filter` and `tool_calls` (or the older
//!   `function_call`) map to their OpenWOP names; anything else is `other`; none at all is
//!   `length` when the output tokens reached the budget sent, else `other` ([`finish_reason`]);
//! - `usage.prompt_tokens` / `completion_tokens` / `total_tokens` are the usage; a reply without
//!   `usage` (or without `completion_tokens`) reported no usage;
//! - the mode is the request's: the provider reports the mode it asked for;
//! - in `prompt` mode a reply wrapped in one Markdown code fence is unwrapped (chat models often
//!   fence JSON despite the instruction); nothing else is changed.

use crate::local::{ProviderError, ProviderReply, ProviderRequest};
use serde::Deserialize;
use wop_sdk::wire::{FinishReason, StructuredOutputMode, Usage};

#[derive(Deserialize)]
struct ChatCompletion {
    #[serde(default)]
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ApiUsage>,
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize)]
struct Choice {
    #[serde(default)]
    message: Option<ChoiceMessage>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct ChoiceMessage {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

/// `usage` as an OpenAI-compatible server writes it, in a whole reply or a stream's last chunk.
#[derive(Deserialize)]
pub(crate) struct ApiUsage {
    #[serde(default)]
    prompt_tokens: Option<u64>,
    #[serde(default)]
    completion_tokens: Option<u64>,
    #[serde(default)]
    total_tokens: Option<u64>,
}

impl ApiUsage {
    /// The usage it reports; none without `completion_tokens` (then the output is unknown).
    pub(crate) fn usage(self) -> Option<Usage> {
        self.completion_tokens.map(|out| Usage {
            input_tokens: self.prompt_tokens,
            output_tokens: Some(out),
            total_tokens: self.total_tokens,
        })
    }
}

/// Maps an OpenAI `finish_reason`. `usage` and `max_tokens` (the budget the request sent) decide
/// a reply that gives none (`null`, absent, or the empty string some servers write).
///
/// Without a reason the server did not say why it stopped: OpenAI's reference reads `null` as
/// "in progress or incomplete", and its whole-reply schema requires a reason, but servers omit
/// it. Such a reply arrived whole (the body was complete, or the stream ended with `[DONE]`), so
/// it is taken as the server's answer, with two honest limits:
/// - output tokens that reached the budget sent are a cut at the budget: `length`, a truncation
///   (retried as one, `envelope.truncated`), never a success;
/// - otherwise `other` (never `stop`: nothing says the model chose to stop). A structured
///   reply is still parsed and checked against its schema, so a cut one fails there.
pub(crate) fn finish_reason(
    reason: Option<&str>,
    usage: Option<&Usage>,
    max_tokens: u32,
) -> FinishReason {
    match reason.filter(|r| !r.is_empty()) {
        Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("content_filter") => FinishReason::ContentFilter,
        Some("tool_calls" | "function_call") => FinishReason::ToolCall,
        Some(_) => FinishReason::Other,
        None if usage
            .and_then(|u| u.output_tokens)
            .is_some_and(|out| out >= u64::from(max_tokens)) =>
        {
            FinishReason::Length
        }
        None => FinishReason::Other,
    }
}

/// Parses a successful reply body.
pub(crate) fn parse(
    body: &[u8],
    request: &ProviderRequest,
) -> Result<ProviderReply, ProviderError> {
    let completion: ChatCompletion = serde_json::from_slice(body).map_err(|e| {
        ProviderError::Failed(format!(
            "the reply body ({} bytes) is not a chat completion: {e}",
            body.len()
        ))
    })?;
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(ProviderError::Failed(
            "the reply has no `choices[0]`".to_owned(),
        ));
    };
    let message = choice.message.ok_or_else(|| {
        ProviderError::Failed("the reply's `choices[0]` has no `message`".to_owned())
    })?;
    let mode = request
        .response_schema
        .as_ref()
        .map(|_| request.mode.unwrap_or(StructuredOutputMode::Native));
    let usage = completion.usage.and_then(ApiUsage::usage);
    let (content, finish) = match message.refusal.filter(|r| !r.is_empty()) {
        Some(refusal) => (refusal, FinishReason::ContentFilter),
        None => {
            let text = message.content.unwrap_or_default();
            let text = match mode {
                Some(StructuredOutputMode::Prompt) => unfence(&text).to_owned(),
                _ => text,
            };
            let reason = choice.finish_reason.as_deref();
            (
                text,
                finish_reason(reason, usage.as_ref(), request.max_tokens),
            )
        }
    };
    Ok(ProviderReply {
        content: content.into_bytes(),
        finish_reason: finish,
        usage,
        mode,
        model: completion.model,
    })
}

/// The text inside one Markdown code fence (```` ```json … ``` ````), or the text as it is.
pub(crate) fn unfence(text: &str) -> &str {
    let t = text.trim();
    let Some(rest) = t.strip_prefix("```") else {
        return text;
    };
    let Some(inner) = rest.strip_suffix("```") else {
        return text;
    };
    // The info string (`json`) runs to the first line break.
    match inner.split_once('\n') {
        Some((info, body)) if !info.contains('`') => body.trim(),
        _ => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn request(mode: Option<StructuredOutputMode>) -> ProviderRequest {
        super::super::test_request(mode.map(|_| json!({"type": "object"})), mode)
    }

    fn body(v: &serde_json::Value) -> Vec<u8> {
        v.to_string().into_bytes()
    }

    #[test]
    fn finish_reasons() {
        let f = |r| finish_reason(r, None, 100);
        assert_eq!(f(Some("stop")), FinishReason::Stop);
        assert_eq!(f(Some("length")), FinishReason::Length);
        assert_eq!(f(Some("content_filter")), FinishReason::ContentFilter);
        assert_eq!(f(Some("tool_calls")), FinishReason::ToolCall);
        assert_eq!(f(Some("eos")), FinishReason::Other);
        // None given: unknown, unless the output reached the budget sent.
        assert_eq!(f(None), FinishReason::Other);
        assert_eq!(f(Some("")), FinishReason::Other);
        let used = |out| Usage {
            output_tokens: Some(out),
            ..Usage::default()
        };
        assert_eq!(
            finish_reason(None, Some(&used(99)), 100),
            FinishReason::Other
        );
        assert_eq!(
            finish_reason(None, Some(&used(100)), 100),
            FinishReason::Length
        );
        assert_eq!(
            finish_reason(Some(""), Some(&used(101)), 100),
            FinishReason::Length
        );
        // A reason given is believed.
        assert_eq!(
            finish_reason(Some("stop"), Some(&used(100)), 100),
            FinishReason::Stop
        );
    }

    #[test]
    fn usage_and_model() {
        let r = parse(
            &body(&json!({"model": "m-2", "choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5}})),
            &request(None),
        )
        .expect("reply");
        assert_eq!(r.content, b"hi");
        assert_eq!(r.model.as_deref(), Some("m-2"));
        assert_eq!(r.mode, None);
        assert_eq!(
            r.usage,
            Some(Usage {
                input_tokens: Some(3),
                output_tokens: Some(2),
                total_tokens: Some(5)
            })
        );
        let r = parse(
            &body(
                &json!({"choices": [{"message": {"content": "hi"}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 3}}),
            ),
            &request(None),
        )
        .expect("reply");
        assert_eq!(r.usage, None);
    }

    #[test]
    fn refusal_wins() {
        let r = parse(
            &body(&json!({"choices": [{"message": {"content": null, "refusal": "no"}, "finish_reason": "stop"}]})),
            &request(Some(StructuredOutputMode::Native)),
        )
        .expect("reply");
        assert_eq!(r.finish_reason, FinishReason::ContentFilter);
        assert_eq!(r.content, b"no");
        assert_eq!(r.mode, Some(StructuredOutputMode::Native));
    }

    #[test]
    fn fences_unwrapped_in_prompt_mode_only() {
        let fenced = json!({"choices": [{"message": {"content": "```json\n{\"a\":1}\n```"}, "finish_reason": "stop"}]});
        let r = parse(&body(&fenced), &request(Some(StructuredOutputMode::Prompt))).expect("r");
        assert_eq!(r.content, br#"{"a":1}"#);
        let r = parse(&body(&fenced), &request(Some(StructuredOutputMode::Native))).expect("r");
        assert_eq!(r.content, "```json\n{\"a\":1}\n```".as_bytes());
        assert_eq!(unfence("``` x"), "``` x");
    }

    #[test]
    fn malformed_bodies_are_failures() {
        for b in [
            b"<html>".to_vec(),
            body(&json!({"choices": []})),
            body(&json!({"choices": [{}]})),
            body(&json!({"error": {"message": "x"}})),
        ] {
            assert!(matches!(
                parse(&b, &request(None)),
                Err(ProviderError::Failed(_))
            ));
        }
    }
}
