use wop_sdk::ai::Provisional;
use wop_sdk::{AiRequest, NodeCtx, NodeError, wop_node};

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
pub struct Scene {
    text: String,
}

// No conversion turns a fragment into the call's typed output.
#[wop_node(type_id = "community.demo.fragment-into-typed", version = "1.0.0")]
async fn draft(ctx: &NodeCtx<'_>, input: String) -> Result<Scene, NodeError> {
    let mut stream = ctx.call_ai_stream(AiRequest::<Scene>::prompt(input));
    match stream.next().await {
        Some(Provisional::Fragment(fragment)) => Ok(Scene::from(fragment)),
        _ => Err(NodeError::new("no fragment")),
    }
}

fn main() {}
