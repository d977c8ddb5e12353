//! Issue 33: the events count every provider request without inventing a figure, and a run's
//! `--json`, text and picture say the same figures.

use super::read_right::{outline_reply, run_after_refusals};
use super::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Jotting {
    text: String,
}

#[wop_node(
    type_id = "community.openai-test.note",
    version = "1.0.0",
    max_calls = 3
)]
async fn note(ctx: &NodeCtx<'_>, brief: Brief) -> Result<Value, NodeError> {
    let c = ctx
        .call_ai(AiRequest::<Jotting>::prompt(&brief.premise).max_tokens(100))
        .await?;
    let text = c
        .into_output()
        .map_err(|e| NodeError::new(e.to_string()))?
        .text;
    Ok(json!({"text": text}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_provider_request_has_one_event_and_no_invented_figure() {
    let server = Server::start().await;
    let body = |usage: Value| {
        let mut b = json!({"model": "test-model", "choices": [{"index": 0, "message":
            {"role": "assistant", "content": "{\"text\": \"x\"}"}, "finish_reason": "stop"}]});
        if !usage.is_null() {
            b["usage"] = usage;
        }
        Answer::json(200, &b)
    };
    // A 429, a reply that withheld its usage (not JSON: retried), a reply without prompt_tokens.
    server.push([
        Answer::json(429, &json!({"error": {"message": "slow"}})).header("retry-after", "0"),
        Answer::completion("not json", "stop", None),
        body(json!({"completion_tokens": 5})),
    ]);
    let host = provider(config(&server)).local_host().build();
    let outcome = host.run(&Note, brief()).await;
    assert!(outcome.result.is_ok(), "{:?}", outcome.result);
    let events = host.events(&outcome.run_id).await;
    let usage: Vec<Value> = events
        .iter()
        .filter(|e| e.kind() == "provider.usage")
        .map(|e| e.payload())
        .collect();
    let others: Vec<Value> = events
        .iter()
        .filter(|e| e.kind() == "wop-sdk.provider-request")
        .map(|e| e.payload())
        .collect();
    assert!(
        usage.is_empty(),
        "no reply reported both figures: {usage:?}"
    );
    assert_eq!(others.len(), server.received().len(), "{others:?}");
    assert_eq!(others.len(), 3);
    assert_eq!(others[0]["usage"], "error-status");
    assert_eq!(others[1]["usage"], "withheld");
    assert_eq!(others[2]["usage"], "input-tokens-unknown");
    assert_eq!(others[2]["outputTokens"], 5);
    assert!(
        others.iter().all(|p| p.get("inputTokens").is_none()),
        "{others:?}"
    );
}

/// The figures of the three views of one script: a refused connection, a 429, a reply that is
/// not JSON (5 output tokens), then the outline with its usage withheld.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_text_and_picture_agree() {
    let dir = std::env::temp_dir().join(format!("wop-t33-views-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    let answers = || {
        vec![
            Answer::json(429, &json!({"error": {"message": "slow"}})).header("retry-after", "0"),
            Answer::completion("Not JSON at all.", "stop", Some((30, 5))),
            outline_reply(json!(false)),
        ]
    };
    let (a, b) = (dir.join("a.svg"), dir.join("b.svg"));
    let (code, json_out, stderr, server) = run_after_refusals(
        1,
        answers(),
        &["--json", "-v", "--report", a.to_str().expect("a")],
    )
    .await;
    assert_eq!(code, Some(0), "{stderr}");
    assert_eq!(server.received().len(), 3);
    let (code, text, stderr, _) =
        run_after_refusals(1, answers(), &["--report", b.to_str().expect("b")]).await;
    assert_eq!(code, Some(0), "{stderr}");
    let v: Value = serde_json::from_str(&json_out).expect("JSON");
    let (p, call) = (&v["outcome"]["provider"], &v["outcome"]["calls"][0]);
    // --json, as the server logged it.
    assert_eq!(p["sent"], 3, "{v:#}");
    assert_eq!(p["requests"], 3);
    assert_eq!(p["failed"], 1);
    assert_eq!(p["notSent"], 1);
    assert_eq!(p["outputTokens"], 5);
    assert_eq!(p["usageComplete"], false);
    assert_eq!(call["requests"], 3);
    assert_eq!(call["outputTokens"], 5);
    assert_eq!(call["usageComplete"], false);
    assert_eq!(v["outcome"]["budget"]["charged"], 3);
    // The text says the same figures.
    for needle in [
        "call 0: 3 requests, at least 5 output tokens (usage withheld), ok, budget charge 3",
        "node budget: 3 charged of max_calls 4",
        "sent to the provider: 3 requests (3 answered, 1 with an error status), at least 5 \
         output tokens (usage unknown for some); never reached the provider: 1 connection",
    ] {
        assert!(text.contains(needle), "`{needle}` missing:\n{text}");
    }
    // Both pictures draw them.
    for svg in [&a, &b] {
        let picture = std::fs::read_to_string(svg).expect("svg");
        let value = |class: &str| -> String {
            let at = picture
                .find(&format!("class=\"bar {class}\""))
                .unwrap_or_else(|| panic!("no {class} bar"));
            let rest = &picture[at..];
            let v = rest.find("data-value=\"").expect("data-value") + 12;
            rest[v..].split('"').next().expect("value").to_owned()
        };
        let actual: Vec<&str> = picture
            .match_indices("class=\"bar actual\"")
            .map(|_| "")
            .collect();
        assert_eq!(actual.len(), 2, "requests and output tokens");
        assert_eq!(value("actual"), "3", "requests sent");
        assert_eq!(value("used"), "3", "budget charged");
        assert!(picture.contains("at least 5 (usage withheld)"), "{picture}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
