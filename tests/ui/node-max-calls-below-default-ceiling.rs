use wop_sdk::{NodeCtx, NodeError, wop_node};

// No `max_attempts`: a structured call runs under the host's own policy, up to its default
// ceiling of 3 provider requests, which a budget of 2 cannot hold.
#[wop_node(type_id = "community.demo.echo", version = "1.0.0", max_calls = 2)]
async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input)
}

fn main() {}
