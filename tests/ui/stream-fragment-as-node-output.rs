use wop_sdk::ai::{Fragment, Provisional, Text};
use wop_sdk::{AiRequest, NodeCtx, NodeError, wop_node};

// A fragment is not a result: it cannot be a node's output (the stream's terminal item is).
#[wop_node(type_id = "community.demo.fragment-as-output", version = "1.0.0")]
async fn draft(ctx: &NodeCtx<'_>, input: String) -> Result<Fragment, NodeError> {
    let mut stream = ctx.call_ai_stream(AiRequest::<Text>::prompt(input));
    match stream.next().await {
        Some(Provisional::Fragment(fragment)) => Ok(fragment),
        _ => Err(NodeError::new("no fragment")),
    }
}

fn main() {}
