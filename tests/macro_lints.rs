//! The macros' expansions pass `clippy::pedantic` and strict rustc lints (checked by
//! `cargo clippy --all-targets -- -D warnings`), and the nodes they generate work.
#![deny(
    warnings,
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    unreachable_pub,
    clippy::pedantic
)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wop_sdk::{
    AiRequest, CallPlan, Node, NodeCtx, NodeError, PlannedCall, RetryPolicy, Text, pack, retry,
    wop_node,
};

/// A premise.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct Premise {
    /// The premise.
    pub premise: String,
}

/// A scene.
#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Scene {
    /// Its text.
    pub text: String,
}

const STRICT: RetryPolicy = retry!(max_attempts = 2, grow_max_tokens = false);

fn plan_draft(_: &Premise) -> CallPlan {
    CallPlan::new([PlannedCall::structured(1000, STRICT)])
}

/// Drafts a scene.
///
/// # Errors
///
/// When the model call fails or its output does not meet the contract.
#[wop_node(
    type_id = "community.lints.draft-scene",
    version = "1.0.0",
    label = "Draft",
    description = "Drafts a scene",
    max_calls = 6,
    retry(max_attempts = 2, grow_max_tokens = false),
    requires(attempts, retry_policy),
    plan = plan_draft
)]
pub async fn draft_scene(ctx: &NodeCtx<'_>, input: Premise) -> Result<Scene, NodeError> {
    let completion = ctx
        .call_ai(AiRequest::<Scene>::prompt(input.premise).retry(STRICT))
        .await?;
    completion
        .into_output()
        .map_err(|e| NodeError::new(e.to_string()))
}

/// Reviews a scene.
#[wop_node(
    type_id = "community.lints.review",
    version = "1.0.0",
    category = "data",
    role = "pure"
)]
async fn review(ctx: &NodeCtx<'_>, input: Scene) -> Result<String, NodeError> {
    let text = ctx
        .call_ai(AiRequest::<Text>::prompt(input.text).retry(retry!(grow_max_tokens = false)))
        .await?;
    text.into_output()
        .map(|t| t.0)
        .map_err(|e| NodeError::new(e.to_string()))
}

pack! { name = "community.demo.lints", version = "1.0.0", nodes = [DraftScene, Review] }

#[test]
fn generated_nodes_declare_what_they_were_given() {
    assert_eq!(DraftScene::SPEC.retry, STRICT);
    assert_eq!(Review::SPEC.retry, RetryPolicy::HOST_DEFAULT);
    let plan = DraftScene.plan(&Premise {
        premise: "a heist".to_owned(),
    });
    assert_eq!(plan.calls.len(), 1);
    assert_eq!(pack().nodes().len(), 2);
}
