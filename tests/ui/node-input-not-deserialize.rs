use wop_sdk::{NodeCtx, NodeError, wop_node};

#[derive(schemars::JsonSchema)]
struct Draft {
    text: String,
}

#[wop_node(type_id = "community.demo.echo", version = "1.0.0")]
async fn echo(_ctx: &NodeCtx<'_>, input: Draft) -> Result<String, NodeError> {
    Ok(input.text)
}

fn main() {}
