use wop_sdk::{NodeCtx, NodeError, wop_node};

#[wop_node(type_id = "community.demo.echo", version = "1.0.0")]
async fn echo(input: String, _ctx: &NodeCtx<'_>) -> Result<String, NodeError> {
    Ok(input)
}

fn main() {}
