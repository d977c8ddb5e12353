#![allow(dead_code)]
use wop_sdk::ai::{CallStream, Text};
use wop_sdk::{NodeCtx, NodeError};

// A stream's failure is branded with the run of the stream's context, as a plain call's is.
async fn settle<'a, 'b>(ctx: &NodeCtx<'a>, stream: CallStream<'b, Text>) -> Result<(), NodeError<'a>> {
    if let Err(failure) = stream.finish().await {
        ctx.settle_ai_failure(failure).await?;
    }
    Ok(())
}

fn main() {}
