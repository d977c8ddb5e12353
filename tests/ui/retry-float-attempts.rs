use wop_sdk::{NodeCtx, NodeError, wop_node};

#[wop_node(type_id = "community.demo.echo", version = "1.0.0", retry(max_attempts = 2.5))]
async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input)
}

fn main() {}
