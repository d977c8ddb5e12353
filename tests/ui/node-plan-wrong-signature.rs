use wop_sdk::{NodeCtx, NodeError, wop_node};

fn my_plan(_: &u32) -> wop_sdk::CallPlan {
    wop_sdk::CallPlan::default()
}

#[wop_node(type_id = "community.demo.echo", version = "1.0.0", plan = my_plan)]
async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input)
}

fn main() {}
