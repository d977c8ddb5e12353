#![allow(dead_code)]
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text};


async fn count<'run>(ctx: &NodeCtx<'run>) -> Result<u32, NodeError<'run>> {
    let completion = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await?;
    Ok(completion.attempts().map_or(0, |a| a.count))
}

fn main() {}
