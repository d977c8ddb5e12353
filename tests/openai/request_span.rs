//! The provider's request span: the OpenTelemetry GenAI attributes, and never a secret.

use super::*;

/// A `Write` into a shared buffer, for the subscriber.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

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
    let captured = Captured::default();
    let sink = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || sink.clone())
        .with_span_events(tracing_subscriber::fmt::format::FmtSpan::CLOSE)
        .with_ansi(false)
        .finish();
    let p = provider(config(&server));
    {
        let _guard = tracing::subscriber::set_default(subscriber);
        p.generate(request(Some(schema()), Some(StructuredOutputMode::Native)))
            .await
            .expect("reply");
        let _ = p.generate(request(None, None)).await.expect_err("429");
    }
    let text = String::from_utf8(captured.0.lock().expect("lock").clone()).expect("utf-8");
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
    assert!(!text.contains("slow down"), "{text}");
}
