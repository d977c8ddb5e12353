//! Tracing: each node execution has a `wop.node` span and each call a `wop.call` span, with
//! their outcome. A binary of its own: a subscriber set for one test thread is reliably seen by
//! the span call sites only when no other test thread registers them at the same time.

use wop_sdk_test_support::trace;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use wop_sdk::prelude::*;
use wop_sdk::wire::ErrorCode;
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};

#[derive(Debug, Deserialize, Serialize, JsonSchema)]
struct Scene {
    text: String,
}

#[wop_node(type_id = "community.test.writes", version = "1.0.0")]
async fn writes(ctx: &NodeCtx<'_>, prompt: String) -> Result<String, NodeError> {
    let c = ctx.call_ai(AiRequest::<Scene>::prompt(prompt)).await?;
    Ok(c.into_output()?.text)
}

#[tokio::test]
async fn each_node_and_each_call_has_a_span_with_its_outcome() {
    let provider = ScriptedProvider::new(
        [
            Step::json(&json!({"text": "a scene"}), 5),
            Step::Error("upstream 500".into()),
        ]
        .into_iter()
        .collect(),
    );
    let host = LocalHost::rfc0248().provider(provider).build();
    let (subscriber, captured) = trace::capture();
    {
        let _guard = tracing::subscriber::set_default(subscriber);
        let ok = host.run(&Writes, json!("write")).await;
        assert_eq!(ok.result, Ok(json!("a scene")));
        let failed = host.run(&Writes, json!("again")).await;
        assert!(failed.result.is_err());
    }
    let text = captured.text();
    let closing = |needles: &[&str]| {
        text.lines()
            .any(|l| l.contains("close") && needles.iter().all(|n| l.contains(n)))
    };
    assert!(
        closing(&[
            "wop.node{",
            "wop.type_id=\"community.test.writes\"",
            "wop.outcome=\"completed\""
        ]),
        "{text}"
    );
    assert!(
        closing(&[
            "wop.call{",
            "wop.call_index=0",
            "wop.structured=true",
            "wop.outcome=\"completed\"",
            "wop.attempts=1"
        ]),
        "{text}"
    );
    let code = ErrorCode::UpstreamUnavailable.as_str();
    assert!(
        closing(&[
            "wop.call{",
            "wop.outcome=\"failed\"",
            &format!("error.type=\"{code}\"")
        ]),
        "{text}"
    );
    assert!(
        closing(&["wop.node{", "wop.outcome=\"failed\"", "error.type="]),
        "{text}"
    );
}
