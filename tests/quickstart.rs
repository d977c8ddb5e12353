//! The README's quick start, compiled and run: a first node and its test.

use wop_sdk::prelude::*;
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};

/// One scene of a chapter. Doc comments become the response schema's descriptions.
#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Scene {
    /// The scene's prose.
    text: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Brief {
    premise: String,
}

#[wop_node(
    type_id = "community.mybook.draft-scene",
    version = "1.0.0",
    max_calls = 8, // two calls at the worst case of a host without RFC 0248 (3 requests + a fallback)
    retry(max_attempts = 2, grow_max_tokens = false)
)]
async fn draft_scene(ctx: &NodeCtx<'_>, brief: Brief) -> Result<Scene, NodeError> {
    let long_enough = |s: &Scene| {
        if s.text.split_whitespace().count() >= 50 {
            Ok(())
        } else {
            Err(vec!["`text` needs 50 words".into()])
        }
    };
    let request = || {
        AiRequest::<Scene>::prompt(&brief.premise)
            .max_tokens(800)
            .validate(long_enough)
    };
    let first = ctx.call_ai(request()).await?; // `?` settles a failure and fails the node
    if first.is_valid() {
        return first
            .into_output()
            .map_err(|e| NodeError::new(e.to_string()));
    }
    // A deliberate retry names the completion it retries, and why: the wire carries
    // `retryOfAttemptId` and `retryReason`.
    let again = ctx
        .call_ai(request().retry_of(&first, RetryReason::InvalidOutput))
        .await?;
    again
        .into_output()
        .map_err(|e| NodeError::new(e.to_string()))
}

#[tokio::test]
async fn drafts_a_scene() {
    let fifty_words = vec!["word"; 50].join(" ");
    let provider = ScriptedProvider::new(
        [
            Step::text("not json", 5), // the host retries this
            Step::json(&serde_json::json!({"text": "too short"}), 4), // the node repairs this
            Step::json(&serde_json::json!({"text": fifty_words}), 60),
        ]
        .into_iter()
        .collect(),
    );
    // An RFC 0248 host: it reports each call's attempts (`calls[0].requests`).
    let host = LocalHost::rfc0248().provider(provider.clone()).build();
    let outcome = host
        .run(&DraftScene, serde_json::json!({"premise": "a lighthouse"}))
        .await;
    assert!(outcome.result.is_ok());
    assert_eq!(provider.request_count(), 3);
    assert_eq!(outcome.calls[0].requests, Some(2)); // the host retried the schema violation
    assert_eq!(
        outcome.calls[1].retry_reason.as_deref(),
        Some("invalid_output")
    );
    assert_eq!(outcome.budget.used, 3); // the node was charged every provider request
}

/// The README shows this file's node and test as they are.
#[test]
fn the_readme_shows_this_file() {
    let readme = include_str!("../README.md");
    let me = include_str!("quickstart.rs");
    let start = me.find("use wop_sdk_host::local").expect("the node");
    let test = me.find("#[tokio::test]").expect("the test");
    let end = me.find("/// The README shows").expect("this test");
    assert!(
        readme.contains(me[start..test].trim_end()),
        "README's node differs from tests/quickstart.rs"
    );
    assert!(
        readme.contains(me[test..end].trim_end()),
        "README's test differs from tests/quickstart.rs"
    );
}

/// The quickstart's node as a pack: what `tests/quickstart_addon` exports to Node, for the
/// harness of openwop-app's contract (`tests/node_bridge.rs`).
#[allow(dead_code)]
pub fn pack() -> wop_sdk::manifest::Pack {
    wop_sdk::manifest::Pack::new("community.mybook.quickstart", "1.0.0").node(DraftScene)
}
