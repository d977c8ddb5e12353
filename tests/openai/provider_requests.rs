//! The provider alone: what it sends (the schema as `response_format`, or in the system message)
//! and how it reads each kind of reply.

use super::*;

#[tokio::test]
async fn native_mode_sends_the_schema_as_response_format() {
    let server = Server::start().await;
    server.push([Answer::completion(
        r#"{"text":"The light went out."}"#,
        "stop",
        Some((31, 9)),
    )]);
    let p = provider(config(&server).strict_schema(true));
    let reply = p
        .generate(request(Some(schema()), Some(StructuredOutputMode::Native)))
        .await
        .expect("reply");

    let got = server.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].request_line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(
        got[0].header("authorization"),
        Some(&*format!("Bearer {KEY}"))
    );
    assert_eq!(got[0].header("content-type"), Some("application/json"));
    assert_eq!(
        got[0].body,
        json!({
            "model": "test-model",
            "messages": [{"role": "system", "content": "You write scenes."},
                         {"role": "user", "content": "Write a scene."}],
            "max_tokens": 256,
            "response_format": {"type": "json_schema",
                "json_schema": {"name": "Scene", "schema": schema(), "strict": true}},
        })
    );
    assert_eq!(reply.content, br#"{"text":"The light went out."}"#);
    assert_eq!(reply.finish_reason, FinishReason::Stop);
    assert_eq!(reply.mode, Some(StructuredOutputMode::Native));
    assert_eq!(reply.model.as_deref(), Some("test-model"));
    assert_eq!(
        reply.usage,
        Some(Usage {
            input_tokens: Some(31),
            output_tokens: Some(9),
            total_tokens: Some(40)
        })
    );
}

#[tokio::test]
async fn prompt_mode_puts_the_schema_in_the_system_message() {
    let server = Server::start().await;
    server.push([Answer::completion(
        "```json\n{\"text\":\"Fog.\"}\n```",
        "stop",
        Some((40, 6)),
    )]);
    let p = provider(config(&server).token_limit_field(TokenLimitField::MaxCompletionTokens));
    let reply = p
        .generate(request(Some(schema()), Some(StructuredOutputMode::Prompt)))
        .await
        .expect("reply");
    let body = &server.received()[0].body;
    assert!(body.get("response_format").is_none(), "{body}");
    assert!(body.get("max_tokens").is_none(), "{body}");
    assert_eq!(body["max_completion_tokens"], 256);
    let system = body["messages"][0]["content"].as_str().expect("system");
    assert!(system.starts_with("You write scenes.\n\n"), "{system}");
    assert!(system.ends_with(&schema().to_string()), "{system}");
    assert_eq!(
        body["messages"][1],
        json!({"role": "user", "content": "Write a scene."})
    );
    // The fence a chat model adds in prompt mode is removed; the mode used is reported.
    assert_eq!(reply.content, br#"{"text":"Fog."}"#);
    assert_eq!(reply.mode, Some(StructuredOutputMode::Prompt));
}

#[tokio::test]
async fn plain_request_has_no_response_format_and_no_mode() {
    let server = Server::start().await;
    server.push([Answer::completion("Fog.", "stop", Some((4, 2)))]);
    let reply = provider(config(&server))
        .generate(request(None, None))
        .await
        .expect("reply");
    let body = &server.received()[0].body;
    assert!(body.get("response_format").is_none());
    assert_eq!(reply.mode, None);
    assert_eq!(reply.content, b"Fog.");
}

#[tokio::test]
async fn finish_reasons_refusal_and_missing_usage() {
    let server = Server::start().await;
    server.push([
        Answer::completion("{\"te", "length", Some((5, 256))),
        Answer::completion("", "tool_calls", Some((5, 3))),
        Answer::completion("x", "content_filter", None),
        Answer::json(
            200,
            &json!({"choices": [{"message": {"content": null, "refusal": "I can't help with that."},
                    "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 7}}),
        ),
        Answer::completion("{\"text\":\"ok\"}", "stop", None),
    ]);
    let p = provider(config(&server));
    let mut replies = Vec::new();
    for _ in 0..5 {
        replies.push(
            p.generate(request(Some(schema()), Some(StructuredOutputMode::Native)))
                .await
                .expect("reply"),
        );
    }
    assert_eq!(replies[0].finish_reason, FinishReason::Length);
    assert_eq!(replies[0].usage.and_then(|u| u.output_tokens), Some(256));
    assert_eq!(replies[1].finish_reason, FinishReason::ToolCall);
    assert_eq!(replies[2].finish_reason, FinishReason::ContentFilter);
    // `message.refusal` is a refusal, whatever `finish_reason` says.
    assert_eq!(replies[3].finish_reason, FinishReason::ContentFilter);
    assert_eq!(replies[3].content, b"I can't help with that.");
    // No `usage`: no usage, not zero.
    assert_eq!(replies[4].usage, None);
    assert_eq!(replies[4].finish_reason, FinishReason::Stop);
}
