use wop_sdk::{AiRequest, NodeCtx, NodeError, Text};

// A stream has exactly one terminal item: `finish` takes the stream.
async fn twice<'run>(ctx: &NodeCtx<'run>) -> Result<(), NodeError<'run>> {
    let stream = ctx.call_ai_stream(AiRequest::<Text>::prompt("once"));
    let first = stream.finish().await;
    let second = stream.finish().await;
    drop((first, second));
    Ok(())
}

fn main() {}
