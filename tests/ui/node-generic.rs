use wop_sdk::{NodeCtx, NodeError, wop_node};

#[wop_node(type_id = "community.demo.echo", version = "1.0.0")]
async fn echo<T>(_ctx: &NodeCtx<'_>, input: T) -> Result<T, NodeError> {
    Ok(input)
}

fn main() {}
