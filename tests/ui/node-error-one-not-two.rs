// A node whose attribute is wrong is one error: `#[wop_node]` still emits the node type (its
// fallback), so the pack that lists it and the code that uses it add no error of their own.
use wop_sdk::prelude::*;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Brief {
    premise: String,
}

#[wop_node(type_id = "community.demo.draft-scene", version = "1.0.0", retry(max_attempts = 0))]
async fn draft_scene(ctx: &NodeCtx<'_>, brief: Brief) -> Result<String, NodeError> {
    let _ = ctx;
    Ok(brief.premise)
}

wop_sdk::pack! { name = "community.demo.tools", version = "0.1.0", nodes = [DraftScene] }

fn plan(node: &impl Node<Input = Brief, Output = String>) -> &'static str {
    let _ = node;
    DraftScene::SPEC.type_id
}

fn main() {
    let _ = pack();
    let _ = plan(&DraftScene);
}
