#![allow(dead_code)]
use wop_sdk::{AiRequest, AttemptsProof, NodeCtx, NodeError, Text};


async fn count<'run>(ctx: &NodeCtx<'run>) -> Result<u32, NodeError<'run>> {
    let completion = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await?;
    let proof = AttemptsProof { _negotiated: () };
    Ok(completion.attempts(proof).map_or(0, |a| a.count))
}

fn main() {}
