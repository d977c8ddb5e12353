use wop_sdk::{NodeCtx, NodeError, wop_node};

#[wop_node(type_id = "echo", version = "1.0.0")]
async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input)
}

fn main() {}
