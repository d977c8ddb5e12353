//! A pack declared with `pack!` and `#[wop_node]`, checked against the pack.json v2 rules.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;
use wop_sdk::manifest::validate_manifest;
use wop_sdk::{AiRequest, CallPlan, NodeCtx, NodeError, PlannedCall, Text, pack, retry, wop_node};

#[derive(Debug, Deserialize, JsonSchema)]
pub struct Premise {
    pub premise: String,
}

#[derive(Debug, Serialize, Deserialize, JsonSchema)]
pub struct Outline {
    pub chapters: Vec<String>,
}

#[derive(Debug, Serialize, JsonSchema)]
pub struct Review {
    pub notes: String,
}

/// Plans one structured call.
fn plan_outline_calls(_: &Premise) -> CallPlan {
    CallPlan::new([PlannedCall::structured(800, retry!(max_attempts = 2))])
}

#[wop_node(
    type_id = "community.demo.bookai.plan-outline",
    version = "1.0.0",
    category = "data",
    role = "pure",
    label = "Plan an outline",
    description = "Outlines a novel from a premise",
    max_calls = 4,
    retry(max_attempts = 2),
    plan = plan_outline_calls
)]
async fn plan_outline(ctx: &NodeCtx<'_>, input: Premise) -> Result<Outline, NodeError> {
    let completion = ctx
        .call_ai(AiRequest::<Outline>::prompt(input.premise))
        .await?;
    completion
        .into_output()
        .map_err(|e| NodeError::new(e.to_string()))
}

#[wop_node(
    type_id = "community.demo.bookai.draft-scene",
    version = "1.1.0-beta.1",
    max_calls = 6,
    retry(max_attempts = 2, grow_max_tokens = false),
    requires(attempts, retry_policy)
)]
async fn draft_scene(ctx: &NodeCtx<'_>, input: Outline) -> Result<String, NodeError> {
    let text = ctx
        .call_ai(AiRequest::<Text>::prompt(input.chapters.join("\n")))
        .await?;
    text.into_output()
        .map(|t| t.0)
        .map_err(|e| NodeError::new(e.to_string()))
}

#[wop_node(type_id = "community.demo.bookai.review-chapter", version = "0.3.0")]
async fn review_chapter(_ctx: &NodeCtx<'_>, input: String) -> Result<Review, NodeError> {
    Ok(Review { notes: input })
}

pack! { name = "community.demo.bookai", version = "0.1.0", nodes = [PlanOutline, DraftScene, ReviewChapter] }

#[test]
fn the_generated_manifest_is_valid_pack_json_v2() {
    let m = pack().manifest();
    assert_eq!(validate_manifest(&m), Ok(()));
    assert_eq!(m["name"], "community.demo.bookai");
    assert_eq!(m["version"], "0.1.0");
    assert_eq!(m["kind"], "node");
    // Admits today's openwop-app (protocol 1.1) and a v2 host; the registry's v2 gate wants a
    // ceiling above major 2.
    assert_eq!(m["engines"], json!({"openwop": ">=1.0.0 <3.0.0"}));
    assert_eq!(
        m["runtime"],
        json!({"language": "javascript", "entry": "index.mjs", "format": "esm"})
    );
    assert_eq!(m["peerDependencies"], json!({"aiProviders": "required"}));
    assert_eq!(
        m["peerDependenciesMeta"],
        json!({"aiProviders": {"facets": ["callAccounting"]}})
    );
}

#[test]
fn nodes_carry_their_declaration() {
    let m = pack().manifest();
    let nodes = m["nodes"].as_array().cloned().unwrap_or_default();
    assert_eq!(nodes.len(), 3);
    let outline = &nodes[0];
    assert_eq!(outline["typeId"], "community.demo.bookai.plan-outline");
    assert_eq!(outline["version"], "1.0.0");
    assert_eq!(outline["category"], "data");
    assert_eq!(outline["role"], "pure");
    assert_eq!(outline["label"], "Plan an outline");
    assert_eq!(outline["description"], "Outlines a novel from a premise");
    assert_eq!(outline["x-maxCalls"], 4);
    assert_eq!(outline["x-retry"], json!({"maxAttempts": 2}));
    assert_eq!(
        outline["inputSchemaRef"],
        "schemas/community.demo.bookai.plan-outline.input.json"
    );
    assert_eq!(
        outline["outputSchemaRef"],
        "schemas/community.demo.bookai.plan-outline.output.json"
    );
    for old in ["inputSchema", "outputSchema", "maxCalls", "retry"] {
        assert!(outline.get(old).is_none(), "{old}");
    }

    let draft = &nodes[1];
    assert_eq!(draft["category"], "chat");
    assert_eq!(draft["role"], "side-effect");
    assert_eq!(
        draft["x-retry"],
        json!({"maxAttempts": 2, "growMaxTokens": false})
    );
    assert!(draft.get("label").is_none());

    let review = &nodes[2];
    assert!(review.get("x-maxCalls").is_none());
    assert!(review.get("x-retry").is_none());
}

#[test]
fn schema_files_are_the_files_the_manifest_names() {
    let p = pack();
    let m = p.manifest();
    let files = p.schema_files();
    assert_eq!(files.len(), 6);
    for node in m["nodes"].as_array().cloned().unwrap_or_default() {
        for key in ["inputSchemaRef", "outputSchemaRef"] {
            let path = node[key].as_str().unwrap_or_default();
            assert!(
                path.starts_with("schemas/") && path.ends_with(".json"),
                "{path}"
            );
            assert!(files.iter().any(|(f, _)| f == path), "{path} has no file");
        }
    }
    let schema = |path: &str| {
        files
            .iter()
            .find(|(f, _)| f == path)
            .map(|(_, s)| s.clone())
    };
    let outline_in = schema("schemas/community.demo.bookai.plan-outline.input.json");
    assert_eq!(
        outline_in.map(|s| s["properties"]["premise"]["type"].clone()),
        Some(json!("string"))
    );
    let outline_out = schema("schemas/community.demo.bookai.plan-outline.output.json");
    assert_eq!(
        outline_out.map(|s| s["properties"]["chapters"]["type"].clone()),
        Some(json!("array"))
    );
    let review_in = schema("schemas/community.demo.bookai.review-chapter.input.json");
    assert_eq!(review_in.map(|s| s["type"].clone()), Some(json!("string")));
}

// Type ids the v2 grammar admits beyond the `namespace.owner.node` habit: camelCase after the
// first segment, and `_` in a segment (a pack `vendor.acme.my_tools`). That these compile is the
// test; the manifest then carries them as written.
#[wop_node(type_id = "core.ai.callPrompt", version = "1.0.0")]
async fn call_prompt(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input)
}

#[wop_node(type_id = "vendor.acme.my_tools.echo", version = "1.0.0")]
async fn my_echo(_ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> {
    Ok(input)
}

#[test]
fn camel_case_and_underscore_type_ids_are_valid() {
    let m = wop_sdk::manifest::Pack::new("vendor.acme.my_tools", "1.0.0")
        .node(CallPrompt)
        .node(MyEcho)
        .manifest();
    assert_eq!(validate_manifest(&m), Ok(()));
    assert_eq!(m["nodes"][0]["typeId"], "core.ai.callPrompt");
    assert_eq!(m["nodes"][1]["typeId"], "vendor.acme.my_tools.echo");
}

#[test]
fn facets_only_when_a_node_requires_call_accounting() {
    let m = wop_sdk::manifest::Pack::new("community.demo.plain", "1.0.0")
        .node(ReviewChapter)
        .manifest();
    assert_eq!(validate_manifest(&m), Ok(()));
    assert_eq!(m["peerDependencies"], json!({"aiProviders": "required"}));
    assert!(m.get("peerDependenciesMeta").is_none());
}

#[test]
fn the_pack_finds_nodes_and_their_specs() {
    let p = pack();
    assert_eq!(p.name(), "community.demo.bookai");
    assert_eq!(p.nodes().len(), 3);
    let draft = p
        .find("community.demo.bookai.draft-scene")
        .map(|n| n.spec());
    assert_eq!(draft.map(|s| s.max_calls), Some(Some(6)));
    assert_eq!(
        draft.map(|s| s.requires),
        Some(
            &[
                wop_sdk::Capability::Attempts,
                wop_sdk::Capability::RetryPolicy
            ][..]
        )
    );
    assert!(p.find("community.demo.bookai.missing").is_none());
    let plan = p
        .find("community.demo.bookai.plan-outline")
        .map(|n| n.plan_json(&json!({"premise": "a heist"})));
    assert!(matches!(plan, Some(Ok(ref c)) if c.calls.len() == 1));
}

#[test]
fn validate_manifest_catches_a_broken_manifest() {
    let mut m = pack().manifest();
    m["nodes"][0]["typeId"] = json!("community.2fa.plan");
    m["nodes"][1]["category"] = json!("prose");
    m["engines"]["openwop"] = json!(">=1.0");
    let errors = validate_manifest(&m).err().unwrap_or_default();
    assert_eq!(errors.len(), 3, "{errors:#?}");
}
