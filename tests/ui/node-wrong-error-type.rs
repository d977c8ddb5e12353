use wop_sdk::{NodeCtx, wop_node};

#[wop_node(type_id = "community.demo.echo", version = "1.0.0")]
async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, String> {
    Ok(input)
}

fn main() {}
