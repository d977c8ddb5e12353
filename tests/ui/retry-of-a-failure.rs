#![allow(dead_code)]
use wop_sdk::{AiRequest, NodeCtx, NodeError, RetryReason, Text};


async fn again<'run>(ctx: &NodeCtx<'run>) -> Result<(), NodeError<'run>> {
    if let Err(failure) = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await {
        let retry = AiRequest::<Text>::prompt("hi").retry_of(&failure, RetryReason::ProviderFailure);
        let _second = ctx.call_ai(retry).await?;
    }
    Ok(())
}

fn main() {}
