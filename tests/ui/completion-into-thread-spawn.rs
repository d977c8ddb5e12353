#![allow(dead_code)]
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text};


async fn log_later(ctx: &NodeCtx<'_>) -> Result<(), NodeError> {
    let completion = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await?;
    std::thread::spawn(move || {
        println!("{}", completion.attempt_id());
    });
    Ok(())
}

fn main() {}
