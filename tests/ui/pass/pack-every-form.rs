mod nodes {
    use wop_sdk::{NodeCtx, NodeError, wop_node};

    #[wop_node(type_id = "community.demo.echo", version = "1.0.0")]
    pub async fn echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
        Ok(input)
    }

    #[wop_node(type_id = "community.demo.count", version = "1.0.0", requires(attempts))]
    pub async fn count(_ctx: &NodeCtx<'_>, input: String) -> Result<usize, NodeError> {
        Ok(input.len())
    }
}

use nodes::Count;

wop_sdk::pack! {
    name = "community.demo.tools",
    version = "0.1.0",
    nodes = [nodes::Echo, Count],
}

fn main() {
    let pack = pack();
    assert_eq!(pack.nodes().len(), 2);
    let manifest = pack.manifest();
    assert_eq!(wop_sdk::manifest::validate_manifest(&manifest), Ok(()));
    assert_eq!(manifest["peerDependenciesMeta"]["aiProviders"]["facets"][0], "callAccounting");
}
