use wop_sdk::ai::Provisional;
use wop_sdk::{AiRequest, NodeCtx, NodeError, wop_node};

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
pub struct Scene {
    text: String,
}

// A fragment is provisional text: it has no typed output to take.
#[wop_node(type_id = "community.demo.fragment-output", version = "1.0.0")]
async fn draft(ctx: &NodeCtx<'_>, input: String) -> Result<Scene, NodeError> {
    let mut stream = ctx.call_ai_stream(AiRequest::<Scene>::prompt(input));
    match stream.next().await {
        Some(Provisional::Fragment(fragment)) => Ok(fragment.into_output()?),
        _ => Err(NodeError::new("no fragment")),
    }
}

fn main() {}
