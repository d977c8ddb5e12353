use wop_sdk::{NodeCtx, NodeError, wop_node};

const ATTEMPTS: u8 = 2;

#[wop_node(type_id = "community.demo.echo", version = "1.0.0", retry(max_attempts = ATTEMPTS))]
async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input)
}

fn main() {}
