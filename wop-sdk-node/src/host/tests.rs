//! Unit tests of [`JsHost`](super::JsHost) against a fake `ctx.callAI`.

use super::*;
use serde_json::json;

/// A host `ctx.callAI` that records what it was sent and answers `answer`.
struct Fake {
    sent: Mutex<Vec<Value>>,
    answer: String,
}

impl JsCallAi for Fake {
    fn call(&self, request: HostRequest) -> BoxFuture<'_, Result<String, String>> {
        Box::pin(async move {
            let v = serde_json::from_str(&request.full_text()).map_err(|e| e.to_string())?;
            self.sent
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(v);
            Ok(self.answer.clone())
        })
    }
}

fn host(document: &str, answer: Value, provider: Option<&str>) -> (JsHost, Arc<Fake>) {
    let fake = Arc::new(Fake {
        sent: Mutex::new(Vec::new()),
        answer: answer.to_string(),
    });
    let document =
        CapabilityDocument::from_json(&serde_json::from_str(document).unwrap_or(Value::Null))
            .unwrap_or_else(|e| panic!("document: {e}"));
    let config = NodeConfig {
        provider: provider.map(str::to_owned),
        model: Some("m-1".to_owned()),
    };
    (JsHost::new(fake.clone(), document, config), fake)
}

fn key(i: u32) -> AttemptKey {
    AttemptKey {
        run_id: RunId::new("r"),
        node_id: "n".into(),
        call_index: i,
    }
}

const RFC_0248: &str = r#"{"aiProviders": {"providers": ["mock"], "callAccounting": {"attempts": true, "retryPolicy": true}}}"#;

#[tokio::test]
async fn a_plain_host_gets_no_retry_and_its_results_a_local_attempt_id() {
    let (host, fake) = host(
        OPENWOP_APP_SNAPSHOT,
        json!({"result": {"content": "hi"}}),
        Some("mock"),
    );
    assert_eq!(host.kind(), HostKind::Plain);
    // The ceiling and the fallback after it.
    assert_eq!(
        host.capability_document()
            .reliability
            .as_ref()
            .map(|r| r.max_retry_attempts),
        Some(4)
    );
    let request = json!({"messages": [], "retry": {"maxAttempts": 1}});
    let result = host.call_json(&key(0), &request).await.expect("a result");
    let id = result["attemptId"]
        .as_str()
        .expect("an attempt id")
        .to_owned();
    assert!(id.starts_with("local:r/n#0:"), "{id}");
    let sent = fake.sent.lock().expect("sent")[0].clone();
    assert_eq!(
        sent,
        json!({"messages": [], "provider": "mock", "model": "m-1"})
    );
    // Lineage: checked by the bridge, then removed.
    let retry = json!({"messages": [], "retryOfAttemptId": id, "retryReason": "invalid_output"});
    host.call_json(&key(1), &retry).await.expect("a known id");
    assert!(
        fake.sent.lock().expect("sent")[1]
            .get("retryOfAttemptId")
            .is_none()
    );
    let forged = json!({"messages": [], "retryOfAttemptId": "local:r/n#0:9", "retryReason": "invalid_output"});
    let refused = host.call_json(&key(2), &forged).await.expect_err("forged");
    assert_eq!(refused.public.field(), Some("retryOfAttemptId"));
    assert_eq!(fake.sent.lock().expect("sent").len(), 2, "never sent");
    // The failure settles once.
    let run = RunId::new("r");
    assert!(host.settle_ai_failure(&run, refused.token).await.is_ok());
    assert!(host.settle_ai_failure(&run, refused.token).await.is_err());
}

#[tokio::test]
async fn an_accounting_host_gets_the_request_as_the_runtime_made_it() {
    let (host, fake) = host(
        RFC_0248,
        json!({"result": {"content": "hi", "attemptId": "h-1"}}),
        Some("mock"),
    );
    assert_eq!(host.kind(), HostKind::Accounting);
    let request = json!({"messages": [], "retry": {"maxAttempts": 1}, "retryOfAttemptId": "h-0", "retryReason": "invalid_output"});
    let result = host.call_json(&key(0), &request).await.expect("a result");
    assert_eq!(result["attemptId"], "h-1");
    let sent = fake.sent.lock().expect("sent")[0].clone();
    assert_eq!(sent["retry"], json!({"maxAttempts": 1}));
    assert_eq!(sent["retryOfAttemptId"], "h-0");
}

#[tokio::test]
async fn a_call_without_provider_is_refused_before_it_is_sent() {
    let (host, fake) = host(OPENWOP_APP_SNAPSHOT, json!({"result": {}}), None);
    let e = host
        .call_json(&key(0), &json!({"messages": []}))
        .await
        .expect_err("no provider");
    assert_eq!(e.public.error, ErrorCode::ValidationError);
    assert_eq!(e.public.field(), Some("provider"));
    assert!(
        e.public.message.contains("`cargo wop build --provider …`"),
        "names the flag that sets the pack's default: {}",
        e.public.message
    );
    assert!(fake.sent.lock().expect("sent").is_empty());
    // A call that names its provider keeps it.
    let named = json!({"messages": [], "provider": "openai"});
    host.call_json(&key(1), &named).await.expect("named");
    assert_eq!(fake.sent.lock().expect("sent")[0]["provider"], "openai");
}

#[tokio::test]
async fn the_runtimes_events_are_kept_for_their_run() {
    let (host, _) = host(OPENWOP_APP_SNAPSHOT, json!({}), Some("mock"));
    let run = RunId::new("r");
    let started = |node: &str| {
        Event::NodeStarted(wop_sdk::wire::NodeStarted {
            node_id: node.into(),
            type_id: "community.x.y".into(),
            attempt: None,
        })
    };
    host.record_event(&run, started("n")).await;
    host.record_event(&RunId::new("other"), started("n")).await;
    // One that breaks a payload rule is not kept.
    host.record_event(&run, started("")).await;
    let events = host.events(&run).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].kind(), "node.started");
    assert_eq!(events[0].sequence, 0);
}

#[test]
fn a_request_with_a_bad_schema_offset_is_its_text_not_a_panic() {
    let schema = Some(Arc::new(json!({"type": "object"})));
    let at = |text: &str, at: usize| {
        HostRequest {
            text: text.to_owned(),
            schema: schema.clone().map(|s| (at, s)),
        }
        .full_text()
    };
    assert_eq!(
        at("{\"responseSchema\":0}", 18),
        "{\"responseSchema\":{\"type\":\"object\"}}"
    );
    // Inside a character, past the end, or not at a `0`: the text as it is.
    for (text, offset) in [("{\"é\":0}", 3), ("{}", 9), ("{\"a\":1}", 5)] {
        assert_eq!(at(text, offset), text);
    }
}
