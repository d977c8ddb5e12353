#![allow(dead_code)]
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text};


async fn again<'run>(ctx: &NodeCtx<'run>) -> Result<(), NodeError<'run>> {
    let first = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await?;
    let retry = AiRequest::<Text>::prompt("hi").retry_of(&first, "invalid_output");
    let _second = ctx.call_ai(retry).await?;
    Ok(())
}

fn main() {}
