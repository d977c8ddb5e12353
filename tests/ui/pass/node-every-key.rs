use wop_sdk::{AiRequest, CallPlan, Capability, Category, Node, NodeCtx, NodeError, PlannedCall, Role, Text, retry, wop_node};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct DraftIn {
    pub scene: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
pub struct DraftOut {
    pub text: String,
}

mod plans {
    pub fn draft(input: &super::DraftIn) -> wop_sdk::CallPlan {
        wop_sdk::CallPlan::new([wop_sdk::PlannedCall::plain(u32::try_from(input.scene.len()).unwrap_or(1))])
    }
}

fn unused_plan(_: &DraftIn) -> CallPlan {
    CallPlan::new([PlannedCall::structured(100, retry!())])
}

#[wop_node(
    type_id = "community.demo.bookai.draft-scene",
    version = "1.0.0-rc.1+build.7",
    category = "integration",
    role = "pure",
    label = "Draft a scene",
    description = "Drafts one scene",
    max_calls = 6,
    retry(max_attempts = 2, grow_max_tokens = false),
    requires(ai_providers, attempts, retry_policy, provider_usage, replay),
    plan = plans::draft,
)]
pub async fn draft_scene(ctx: &NodeCtx<'_>, input: DraftIn) -> Result<DraftOut, NodeError> {
    let text = ctx.call_ai(AiRequest::<Text>::prompt(input.scene)).await?;
    Ok(DraftOut {
        text: text.into_output().map_err(|e| NodeError::new(e.to_string()))?.0,
    })
}

fn main() {
    let spec = DraftScene::SPEC;
    assert_eq!(spec.type_id, "community.demo.bookai.draft-scene");
    assert_eq!(spec.version, "1.0.0-rc.1+build.7");
    assert_eq!(spec.category, Category::Integration);
    assert_eq!(spec.role, Role::Pure);
    assert_eq!(spec.label, Some("Draft a scene"));
    assert_eq!(spec.description, Some("Drafts one scene"));
    assert_eq!(spec.max_calls, Some(6));
    assert_eq!(spec.retry, retry!(max_attempts = 2, grow_max_tokens = false));
    assert_eq!(
        spec.requires,
        [Capability::AiProviders, Capability::Attempts, Capability::RetryPolicy, Capability::ProviderUsage, Capability::Replay]
    );
    let plan = DraftScene.plan(&DraftIn { scene: "abc".into() });
    assert_eq!(plan.calls.len(), 1);
    let _ = unused_plan;
}
