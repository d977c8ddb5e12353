use wop_sdk::{NodeCtx, NodeError, pack, wop_node};

#[wop_node(type_id = "community.demo.echo", version = "1.0.0")]
async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input)
}

pack! { name = "community.bookai", version = "0.1.0", nodes = [Echo] }

fn main() {}
