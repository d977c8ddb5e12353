use wop_sdk::{NodeCtx, NodeError, wop_node};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Secret {
    text: String,
}

#[wop_node(type_id = "community.demo.echo", version = "1.0.0")]
pub async fn echo(_ctx: &NodeCtx<'_>, input: Secret) -> Result<String, NodeError> {
    Ok(input.text)
}

fn main() {}
