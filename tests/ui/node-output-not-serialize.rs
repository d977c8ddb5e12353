use wop_sdk::{NodeCtx, NodeError, wop_node};

struct Scene {
    text: String,
}

#[wop_node(type_id = "community.demo.echo", version = "1.0.0")]
async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<Scene, NodeError> {
    Ok(Scene { text: input })
}

fn main() {}
