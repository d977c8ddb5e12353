//! Generated code is warning-free under strict lints.
#![deny(
    warnings,
    missing_docs,
    missing_debug_implementations,
    unused_qualifications,
    unreachable_pub,
    rust_2018_idioms,
    clippy::pedantic
)]

use wop_sdk::{NodeCtx, NodeError, pack, retry, wop_node};

/// The input.
#[derive(Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct In {
    /// The text.
    pub text: String,
}

/// A node.
#[wop_node(
    type_id = "community.lints.echo",
    version = "1.0.0",
    max_calls = 4,
    retry(max_attempts = 2),
    requires(attempts, retry_policy)
)]
pub async fn echo(_ctx: &NodeCtx<'_>, input: In) -> Result<String, NodeError> {
    Ok(input.text)
}

/// Another node, private.
#[wop_node(type_id = "community.lints.shout", version = "1.0.0", retry(grow_max_tokens = false))]
async fn shout(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input.to_uppercase())
}

pack! { name = "community.demo.lints", version = "1.0.0", nodes = [Echo, Shout] }

fn main() {
    let policy = retry!(max_attempts = 3);
    assert_eq!(policy.max_attempts(), Some(3));
    assert_eq!(pack().nodes().len(), 2);
}
