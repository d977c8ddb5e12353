#![allow(dead_code)]
use wop_sdk::{AiFailure, NodeCtx, NodeError};


async fn settle<'a, 'b>(ctx: &NodeCtx<'a>, failure: AiFailure<'b>) -> Result<(), NodeError<'a>> {
    ctx.settle_ai_failure(failure).await
}

fn main() {}
