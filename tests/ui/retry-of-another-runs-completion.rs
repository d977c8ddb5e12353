#![allow(dead_code)]
use wop_sdk::{AiRequest, Completion, NodeCtx, NodeError, RetryReason, Text};


async fn repair<'a, 'b>(ctx: &NodeCtx<'a>, earlier: &Completion<'b, Text>) -> Result<(), NodeError<'a>> {
    let retry = AiRequest::<Text>::prompt("again").retry_of(earlier, RetryReason::InvalidOutput);
    let _ = ctx.call_ai(retry).await?;
    Ok(())
}

fn main() {}
