#![allow(dead_code)]
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text};


async fn handle<'run>(ctx: &NodeCtx<'run>) -> Result<(), NodeError<'run>> {
    if let Err(failure) = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await {
        let _json = serde_json::to_string(&failure);
        ctx.settle_ai_failure(failure).await?;
    }
    Ok(())
}

fn main() {}
