#![allow(dead_code)]
use std::sync::OnceLock;
use wop_sdk::{AiFailure, AiRequest, NodeCtx, NodeError, Text};


static LAST_FAILURE: OnceLock<AiFailure<'static>> = OnceLock::new();

async fn remember<'run>(ctx: &NodeCtx<'run>) -> Result<(), NodeError<'run>> {
    if let Err(failure) = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await {
        let _ = LAST_FAILURE.set(failure);
    }
    Ok(())
}

fn main() {}
