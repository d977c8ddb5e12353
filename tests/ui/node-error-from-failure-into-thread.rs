#![allow(dead_code)]
use wop_sdk::{AiRequest, NodeCtx, NodeError, Text, wop_node};

// Nor can it be sent to a thread that may outlive the run.
#[wop_node(type_id = "community.demo.leaky", version = "1.0.0")]
async fn leaky(ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    if let Err(failure) = ctx.call_ai(AiRequest::<Text>::prompt(input)).await {
        let error: NodeError<'_> = failure.into();
        std::thread::spawn(move || drop(error));
    }
    Ok(String::new())
}

fn main() {}
