//! The provider's request span: the OpenTelemetry GenAI attributes, and never a secret.

use super::*;

#[tokio::test]
async fn the_request_span_carries_the_gen_ai_attributes_and_no_secret() {
    let server = Server::start().await;
    server.push([
        Answer::completion("{\"text\":\"secret prose\"}", "stop", Some((31, 9))),
        Answer::json(
            429,
            &json!({"error": {"message": format!("slow down {KEY}")}}),
        ),
    ]);
    let (subscriber, captured) = trace::capture();
    let p = provider(config(&server));
    {
        let _guard = tracing::subscriber::set_default(subscriber);
        p.generate(request(Some(schema()), Some(StructuredOutputMode::Native)))
            .await
            .expect("reply");
        let _ = p.generate(request(None, None)).await.expect_err("429");
    }
    let text = captured.text();
    for needle in [
        "wop.provider.request{",
        "gen_ai.system=\"openai\"",
        "gen_ai.request.model=test-model",
        "gen_ai.request.max_tokens=256",
        "gen_ai.response.finish_reasons=\"stop\"",
        "gen_ai.usage.input_tokens=31",
        "gen_ai.usage.output_tokens=9",
        "wop.structured_output=\"native\"",
        "http.response.status_code=429",
        "error.type=\"transient\"",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    assert!(!text.contains(KEY), "{text}");
    assert!(!text.contains("secret prose"), "{text}");
    // The server's words are the operator's (the failure's WARN event, shown at -v), never a
    // field of the span.
    for line in text.lines() {
        let on_warn = line.contains("provider request failed");
        assert_eq!(line.contains("slow down"), on_warn, "{line}");
        if on_warn {
            assert!(line.contains("error.class=\"4xx\"") && line.contains("cause=\"HTTP 429"));
        }
    }
}
