use wop_sdk::{AiFailure, AiRequest, NodeCtx, NodeError, Text, wop_node};

#[wop_node(type_id = "community.demo.leak", version = "1.0.0")]
async fn leak(ctx: &NodeCtx<'_>, input: String) -> Result<AiFailure<'static>, NodeError> {
    match ctx.call_ai(AiRequest::<Text>::prompt(input)).await {
        Ok(_) => Err(NodeError::new("no failure to leak")),
        Err(failure) => Ok(failure),
    }
}

fn main() {}
