#![allow(dead_code)]
use wop_sdk::wire::CapabilityDocument;
use wop_sdk::{AiRequest, Capabilities, NodeCtx, NodeError, Text};

// A pack cannot advertise capabilities on the host's behalf: a document it writes itself reads
// fine, but yields no proof.
async fn count<'run>(ctx: &NodeCtx<'run>) -> Result<u32, NodeError<'run>> {
    let completion = ctx.call_ai(AiRequest::<Text>::prompt("hi")).await?;
    let made_up = serde_json::json!({"aiProviders": {"providers": ["mock"],
                                     "callAccounting": {"attempts": true}}});
    let Ok(doc) = CapabilityDocument::from_json(&made_up) else { return Ok(0) };
    let Some(proof) = Capabilities::negotiate(doc).attempts() else { return Ok(0) };
    Ok(completion.attempts(proof).map_or(0, |a| a.count))
}

fn main() {}
