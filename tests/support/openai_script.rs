//! The loopback server's answer to one step of the conformance script, as an OpenAI-compatible
//! server would give it.

use crate::openai_server::Answer;
use serde_json::{Value, json};

/// The answer to a request for one step of the conformance script (the `ScriptedProvider`'s
/// format), as an OpenAI-compatible server would give it: the reply's declared `outputTokens`
/// are clamped to the request's `max_tokens`, and a reply that does not fit is cut in half and
/// ends with `length`, as the mock does; `usage: false` is a reply without `usage`; `error` is a
/// 400; `hang` never answers; `finishReason: content-filter` is a `message.refusal`. A request
/// with `stream: true` is answered with server-sent events: the step's `chunks` (cut where the
/// reply was cut), or its content as one chunk.
pub fn scripted(step: &Value) -> Answer {
    if let Some(e) = step.get("error") {
        return Answer::json(400, &json!({"error": {"message": e}}));
    }
    if step.get("hang").and_then(Value::as_bool) == Some(true) {
        return Answer::Hang;
    }
    let step = step.clone();
    Answer::with(move |request| {
        let budget = request
            .get("max_tokens")
            .or_else(|| request.get("max_completion_tokens"))
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX);
        let chunks: Option<Vec<String>> = step.get("chunks").and_then(Value::as_array).map(|c| {
            c.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        });
        let mut content = match (&chunks, step.get("content")) {
            (Some(c), _) => c.concat(),
            (None, Some(Value::String(s))) => s.clone(),
            (None, Some(v)) => v.to_string(),
            (None, None) => String::new(),
        };
        let mut finish = match step.get("finishReason").and_then(Value::as_str) {
            Some("length") => "length",
            Some("content-filter") => "content_filter",
            _ => "stop",
        };
        let usage = step.get("usage").filter(|u| u.is_object()).map(|u| {
            let input = u.get("inputTokens").and_then(Value::as_u64).unwrap_or(0);
            let mut output = u.get("outputTokens").and_then(Value::as_u64).unwrap_or(0);
            if output > budget {
                output = budget;
                finish = "length";
                let mut cut = content.len() / 2;
                while !content.is_char_boundary(cut) {
                    cut -= 1;
                }
                content.truncate(cut);
            }
            (input, output)
        });
        if finish == "content_filter" {
            let mut body = json!({
                "model": "test-model",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": null,
                             "refusal": content}, "finish_reason": "stop"}],
            });
            if let Some((i, o)) = usage {
                body["usage"] = json!({"prompt_tokens": i, "completion_tokens": o});
            }
            return Answer::json(200, &body);
        }
        if request.get("stream") == Some(&Value::Bool(true)) {
            let mut left = content.len();
            let pieces: Vec<String> = chunks
                .unwrap_or_else(|| vec![content.clone()])
                .into_iter()
                .map(|piece| {
                    let mut cut = piece.len().min(left);
                    while !piece.is_char_boundary(cut) {
                        cut -= 1;
                    }
                    left -= cut;
                    piece[..cut].to_owned()
                })
                .filter(|piece| !piece.is_empty())
                .collect();
            return Answer::stream(&pieces, finish, usage);
        }
        Answer::completion(&content, finish, usage)
    })
}
