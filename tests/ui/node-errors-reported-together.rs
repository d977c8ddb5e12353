use wop_sdk::{NodeCtx, NodeError, wop_node};

#[wop_node(type_id = "echo", version = "one", max_calls = 0, retry(max_attempts = 99), colour = "red")]
async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input)
}

fn main() {}
