//! The run brand of `NodeError` costs a pack author nothing in a `#[wop_node]` fn, and helpers
//! name it once: with their context's lifetime, or `'static` when they have no context.
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text, wop_node};

fn check(topic: &str) -> Result<(), NodeError<'static>> {
    if topic.is_empty() {
        return Err(NodeError::invalid_input("input", "must not be empty"));
    }
    Ok(())
}

async fn ask<'run>(ctx: &NodeCtx<'run>, topic: &str) -> Result<String, NodeError<'run>> {
    let completion = ctx.call_ai(AiRequest::<Text>::prompt(topic)).await?;
    completion
        .into_output()
        .map(|t| t.0)
        .map_err(|e| NodeError::new(e.to_string()))
}

#[wop_node(type_id = "community.demo.branded", version = "1.0.0")]
async fn branded(ctx: &NodeCtx<'_>, topic: String) -> Result<String, NodeError> {
    check(&topic)?;
    let text = ask(ctx, &topic).await?;
    // Within the run, a scoped thread may hold the error.
    let error = NodeError::new("kept within the run");
    let shown = std::thread::scope(|s| s.spawn(|| error.to_string()).join());
    Ok(format!("{text} {}", shown.unwrap_or_default()))
}

#[wop_node(type_id = "community.demo.named", version = "1.0.0")]
async fn named<'r>(ctx: &NodeCtx<'r>, topic: String) -> Result<String, NodeError<'r>> {
    ask(ctx, &topic).await
}

fn main() {
    let _ = (Branded, Named);
}
