#![allow(dead_code)]
use std::sync::Mutex;
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text};

// A failure turned into a `NodeError` keeps its run's brand: it cannot be kept past the run.
static LAST_ERROR: Mutex<Option<NodeError<'static>>> = Mutex::new(None);

async fn remember<'run>(ctx: &NodeCtx<'run>) -> Result<(), NodeError<'run>> {
    if let Err(failure) = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await {
        let error = NodeError::from(failure);
        if let Ok(mut last) = LAST_ERROR.lock() {
            *last = Some(error);
        }
    }
    Ok(())
}

fn main() {}
