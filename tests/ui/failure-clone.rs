#![allow(dead_code)]
use wop_sdk::{AiFailure, AiRequest, NodeCtx, NodeError, Text};


async fn handle<'run>(ctx: &NodeCtx<'run>) -> Result<(), NodeError<'run>> {
    if let Err(failure) = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await {
        let copy: AiFailure<'_> = failure.clone();
        ctx.settle_ai_failure(copy).await?;
        ctx.settle_ai_failure(failure).await?;
    }
    Ok(())
}

fn main() {}
