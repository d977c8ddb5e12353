#![allow(dead_code)]
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text};


async fn log_later<'run>(ctx: &NodeCtx<'run>) -> Result<(), NodeError<'run>> {
    let completion = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await?;
    std::thread::spawn(move || {
        println!("{}", completion.attempt_id());
    });
    Ok(())
}

fn main() {}
