//! Through the local host as a pack author runs it: a typed node, the RFC 0248 accounting, the
//! host's retries of transient failures, the key kept out of every record.

use super::*;

#[tokio::test]
async fn a_typed_node_runs_against_the_server_in_native_mode() {
    let server = Server::start().await;
    server.push([Answer::completion(
        r#"{"text":"The light went out."}"#,
        "stop",
        Some((50, 12)),
    )]);
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&DraftScene, brief()).await;
    assert_eq!(
        outcome.result.as_ref().expect("completed"),
        &json!({"text": "The light went out."})
    );
    let got = server.received();
    assert_eq!(got.len(), 1);
    let body = &got[0].body;
    // The schema the pack's type generated, sent natively; the configured model as the default.
    assert_eq!(body["response_format"]["type"], "json_schema");
    assert_eq!(body["response_format"]["json_schema"]["name"], "Scene");
    assert_eq!(
        body["response_format"]["json_schema"]["schema"]["required"],
        json!(["text"])
    );
    assert_eq!(body["model"], "test-model");
    assert_eq!(body["max_tokens"], 100);
    assert_eq!(outcome.calls[0].requests, Some(1));
    assert_eq!(outcome.calls[0].output_tokens, Some(12));
    assert_eq!(outcome.calls[0].usage_complete, Some(true));
    // One `provider.usage` per request that reported usage, named after this provider.
    let events = host.events(&outcome.run_id).await;
    let usage: Vec<Value> = events
        .iter()
        .filter(|e| e.kind() == "provider.usage")
        .map(|e| e.payload())
        .collect();
    assert_eq!(usage.len(), 1);
    assert_eq!(usage[0]["provider"], "openai");
    assert_eq!(usage[0]["model"], "test-model");
    assert_eq!(usage[0]["outputTokens"], 12);
}

#[tokio::test]
async fn prompt_mode_through_the_host_reports_prompt() {
    let server = Server::start().await;
    server.push([Answer::completion(
        r#"{"answer":"ok"}"#,
        "stop",
        Some((20, 4)),
    )]);
    let host = provider(config(&server))
        .local_host()
        .config(|c| c.native_structured_output = false)
        .build();
    let outcome = host.run(&EchoAttempts, echo_input()).await;
    assert_eq!(attempts(&outcome)["structuredOutput"], "prompt");
    let body = &server.received()[0].body;
    assert!(body.get("response_format").is_none(), "{body}");
    assert!(
        body["messages"][0]["content"]
            .as_str()
            .expect("system")
            .contains("JSON Schema"),
        "{body}"
    );
}

#[tokio::test]
async fn truncation_then_a_larger_max_tokens() {
    let server = Server::start().await;
    server.push([
        Answer::completion("{\"text\":\"The lig", "length", Some((50, 100))),
        Answer::completion(r#"{"text":"The light went out."}"#, "stop", Some((50, 140))),
    ]);
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&DraftScene, brief()).await;
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    let got = server.received();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].body["max_tokens"], 100);
    // The host doubled the budget (truncation multiplier 2) for the retry.
    assert_eq!(got[1].body["max_tokens"], 200);
    assert_eq!(outcome.calls[0].requests, Some(2));
    assert_eq!(outcome.calls[0].output_tokens, Some(240));
    let events = host.events(&outcome.run_id).await;
    assert!(events.iter().any(|e| e.kind() == "envelope.truncated"));
}

#[tokio::test]
async fn a_refusal_through_the_host_fails_the_call_and_keeps_the_text_private() {
    let server = Server::start().await;
    server.push([Answer::json(
        200,
        &json!({"choices": [{"message": {"content": null, "refusal": "I won't write that."},
                "finish_reason": "stop"}], "usage": {"prompt_tokens": 5, "completion_tokens": 6}}),
    )]);
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&DraftScene, brief()).await;
    let error = outcome.result.as_ref().expect_err("refused");
    let public = serde_json::to_string(error).expect("json");
    assert!(public.contains("envelope_refusal"), "{public}");
    assert!(!public.contains("won't"), "{public}");
    // Never retried.
    assert_eq!(server.received().len(), 1);
    let events = host.events(&outcome.run_id).await;
    let refusal = events
        .iter()
        .find(|e| e.kind() == "envelope.refusal")
        .expect("envelope.refusal");
    assert!(!refusal.payload().to_string().contains("won't"));
}

#[tokio::test]
async fn a_reply_without_usage_makes_usage_incomplete() {
    let server = Server::start().await;
    server.push([Answer::completion(r#"{"answer":"ok"}"#, "stop", None)]);
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&EchoAttempts, echo_input()).await;
    let a = attempts(&outcome);
    assert_eq!(a["count"], 1);
    assert_eq!(a["usageComplete"], false);
    assert_eq!(a["structuredOutput"], "native");
    let events = host.events(&outcome.run_id).await;
    assert!(!events.iter().any(|e| e.kind() == "provider.usage"));
}

/// HOST-RETRY: a 429 with `Retry-After`, then a completion. The 429 reached the provider, so it
/// is a provider request (RFC 0248 as decided: `count` 2) that reported no usage.
#[tokio::test]
async fn host_retry_429_with_retry_after_then_success() {
    let server = Server::start().await;
    server.push([
        Answer::json(
            429,
            &json!({"error": {"message": "Rate limit reached for requests"}}),
        )
        .header("retry-after", "0"),
        Answer::completion(r#"{"answer":"ok"}"#, "stop", Some((20, 4))),
    ]);
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&EchoAttempts, echo_input()).await;
    let a = attempts(&outcome);
    assert_eq!(a["count"], 2, "{a}");
    assert_eq!(a["outputTokens"], 4, "{a}");
    // The 429 generated nothing: no usage is missing.
    assert_eq!(a["usageComplete"], true, "{a}");
    assert_eq!(server.received().len(), 2);
    // What the server said stays out of the run's events.
    let events = host.events(&outcome.run_id).await;
    assert!(
        !serde_json::to_string(&events)
            .expect("json")
            .contains("Rate limit"),
        "{events:?}"
    );
}

/// HOST-RETRY: a 500, then a completion.
#[tokio::test]
async fn host_retry_500_then_success() {
    let server = Server::start().await;
    server.push([
        Answer::json(500, &json!({"error": {"message": "internal"}})),
        Answer::completion(r#"{"text":"Fog."}"#, "stop", Some((20, 4))),
    ]);
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&DraftScene, brief()).await;
    assert_eq!(
        outcome.result.as_ref().expect("completed"),
        &json!({"text": "Fog."})
    );
    assert_eq!(outcome.calls[0].requests, Some(2));
    // The 500 generated nothing: no usage is missing.
    assert_eq!(outcome.calls[0].usage_complete, Some(true));
}

/// HOST-RETRY: transient failures on every request end the call within the host's cap, with a
/// public error that says nothing of the server.
#[tokio::test]
async fn host_retry_stops_at_the_cap() {
    let server = Server::start().await;
    server.repeat(
        503,
        &json!({"error": {"message": "overloaded upstream xyz"}}),
    );
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&DraftScene, brief()).await;
    let public = serde_json::to_string(outcome.result.as_ref().expect_err("fails")).expect("json");
    // The public message says what failed and what to check; the server's words stay private.
    assert!(
        !public.contains("xyz") && public.contains("HTTP 503"),
        "{public}"
    );
    assert!(
        host.diagnostics()
            .iter()
            .any(|d| d.cause.contains("overloaded upstream xyz")),
        "the cause is in the private diagnostics"
    );
}

#[tokio::test]
async fn a_rejected_key_fails_the_call_and_stays_out_of_every_record() {
    let server = Server::start().await;
    server.repeat(
        401,
        &json!({"error": {"message": format!("Incorrect API key provided: {KEY}")}}),
    );
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&DraftScene, brief()).await;
    let public = serde_json::to_string(outcome.result.as_ref().expect_err("fails")).expect("json");
    assert!(
        !public.contains("Incorrect") && !public.contains(KEY),
        "{public}"
    );
    let events = serde_json::to_string(&host.events(&outcome.run_id).await).expect("json");
    assert!(!events.contains(KEY), "{events}");
    let diagnostics = host.diagnostics();
    assert!(
        diagnostics.iter().any(|d| d.cause.contains("401")),
        "{diagnostics:?}"
    );
    assert!(diagnostics.iter().all(|d| !d.cause.contains(KEY)));
}

/// HOST-RETRY: a server that cannot be reached. Such a request never reached the provider (with
/// issue 16 it is not an attempt, yet consumes the call's cap); either way the call ends, and the
/// cause stays private.
#[tokio::test]
async fn host_retry_an_unreachable_server_ends_the_call() {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .expect("addr");
    let host = provider(OpenAiConfig::new(&format!("http://{addr}/v1"), "m").expect("config"))
        .local_host()
        .build();
    let outcome = host.run(&DraftScene, brief()).await;
    let public = serde_json::to_string(outcome.result.as_ref().expect_err("fails")).expect("json");
    // What to check, without the address or the system's error text.
    assert!(
        !public.contains("127.0.0.1")
            && !public.contains("os error")
            && public.contains("base URL"),
        "{public}"
    );
    assert!(
        host.diagnostics()
            .iter()
            .any(|d| d.cause.contains("127.0.0.1")),
        "{:?}",
        host.diagnostics()
    );
}

#[tokio::test]
async fn a_server_that_never_answers_makes_the_call_ambiguous() {
    let server = Server::start().await;
    server.push([Answer::Hang]);
    let host = provider(config(&server).timeout(Duration::from_millis(300)))
        .local_host()
        .build();
    let outcome = host.run(&DraftScene, brief()).await;
    assert!(outcome.result.is_err());
    // One request only: an unknown outcome is never repeated.
    assert_eq!(server.received().len(), 1);
    assert!(host.diagnostics().iter().any(|d| d.ambiguous));
}

/// Names its provider and sets the sampling options: what a pack written for a named server does.
#[wop_node(type_id = "community.openai-test.named", version = "1.0.0")]
async fn named_call(ctx: &NodeCtx<'_>, provider: String) -> Result<String, NodeError> {
    let request = AiRequest::<wop_sdk::Text>::prompt("One line.")
        .provider(provider)
        .temperature(0.2)
        .stop_sequences(["END"]);
    Ok(ctx.call_ai(request).await?.into_output()?.0)
}

#[tokio::test]
async fn a_server_named_by_the_pack_gets_its_call_with_temperature_and_stop() {
    let server = Server::start().await;
    server.push([Answer::completion("a line", "stop", Some((5, 2)))]);
    let config = config(&server).name("ollama").expect("a valid name");
    let host = provider(config).local_host().build();
    assert_eq!(host.capabilities().providers, vec!["ollama".to_owned()]);

    let served = host.run(&NamedCall, json!("ollama")).await;
    assert_eq!(served.result, Ok(json!("a line")));
    let got = server.received();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].body["temperature"], 0.2);
    assert_eq!(got[0].body["stop"], json!(["END"]));
    let events = host.events(&served.run_id).await;
    let usage = events.iter().find(|e| e.kind() == "provider.usage");
    assert_eq!(
        usage.map(|e| e.payload()["provider"].clone()),
        Some(json!("ollama"))
    );

    // A call naming a provider this host does not have never reaches the server.
    let refused = host.run(&NamedCall, json!("openai")).await;
    let error = refused.result.expect_err("refused");
    assert_eq!(error.error, wop_sdk::wire::ErrorCode::ValidationError);
    assert_eq!(error.field(), Some("provider"));
    assert_eq!(server.received().len(), 1);
}
