//! One node execution requested by the generated `index.mjs`.

#[cfg(doc)]
use crate::host::OPENWOP_APP_SNAPSHOT;
use crate::host::{JsCallAi, JsHost, NodeConfig, snapshot_document};
use serde_json::{Value, json};
use std::sync::Arc;
use wop_sdk::RunId;
use wop_sdk::manifest::Pack;
use wop_sdk::wire::{CapabilityDocument, ErrorCode, ErrorEnvelope};

/// The version of the contract between the addon and the generated `index.mjs` (the JSON
/// shapes of [`run_node`] and [`JsCallAi`]). `index.mjs` refuses an addon of another version.
pub const ABI_VERSION: u32 = 3;

/// The `pack.json` of each pack, as a JSON array.
pub fn manifests_json(packs: &[Pack]) -> String {
    Value::Array(packs.iter().map(Pack::manifest).collect()).to_string()
}

/// Each pack as the files of its folder, as a JSON array of
/// `{"manifest": <pack.json>, "schemas": [[path, schema], ...]}`: what `cargo wop build` reads
/// off the built addon to write the pack folder.
pub fn pack_files_json(packs: &[Pack]) -> String {
    Value::Array(
        packs
            .iter()
            .map(|p| json!({"manifest": p.manifest(), "schemas": p.schema_files()}))
            .collect(),
    )
    .to_string()
}

/// The budget check of every pack for `inputs` (a JSON object `{typeId: input, ...}`), as JSON:
/// `{"warnings": [line, ...], "unchecked": [[typeId, why], ...]}`. A warning is a node whose
/// `max_calls` cannot fit its planned calls on a host without `aiProviders.callAccounting`
/// ([`Pack::budget_warnings`], against the host the bridge assumes, [`OPENWOP_APP_SNAPSHOT`]); a
/// node is unchecked when `inputs` has none for it or its plan for the input has no calls (no
/// `#[wop_node(plan = ...)]`). What `cargo wop build` reports.
pub fn budget_check_json(packs: &[Pack], inputs: &str) -> String {
    let inputs: Value = match serde_json::from_str(inputs) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => {
            return json!({"error": "the inputs are not a JSON object {typeId: input}"})
                .to_string();
        }
        Err(e) => return json!({"error": format!("the inputs are not JSON: {e}")}).to_string(),
    };
    let caps =
        snapshot_document().map(|d| wop_sdk::Capabilities::negotiate(crate::host_document(d)));
    let Ok(caps) = caps else {
        return json!({"error": "the bridge's capability snapshot does not read"}).to_string();
    };
    let mut warnings = Vec::new();
    let mut unchecked = Vec::new();
    for pack in packs {
        warnings.extend(pack.budget_warnings(&caps, &inputs));
        for node in pack.nodes() {
            let type_id = node.spec().type_id;
            let why = match inputs.get(type_id).map(|input| node.plan_json(input)) {
                None => "no input for it in the budget inputs",
                Some(Ok(plan)) if plan.calls.is_empty() => {
                    "its plan has no calls (`#[wop_node(plan = ...)]` declares them)"
                }
                Some(_) => continue,
            };
            unchecked.push(json!([type_id, why]));
        }
    }
    json!({"warnings": warnings, "unchecked": unchecked}).to_string()
}

fn failure(error: &ErrorEnvelope) -> String {
    let mut e = json!({"code": error.error.as_str(), "message": error.message});
    if let Some(details) = &error.details {
        e["details"] = details.clone();
    }
    json!({"status": "failure", "error": e}).to_string()
}

fn request_error(field: &str, rule: &str) -> String {
    failure(
        &ErrorEnvelope::new(
            ErrorCode::ProtocolError,
            format!("the bridge's request: `{field}` {rule}"),
        )
        .with_detail("field", field),
    )
}

fn opt_string(request: &Value, pointer: &str) -> Result<Option<String>, String> {
    match request.pointer(pointer) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(request_error(
            pointer.trim_start_matches('/').replace('/', ".").as_str(),
            "must be a string",
        )),
    }
}

/// Runs one node of `packs` and answers its outcome as JSON text.
///
/// `request` (JSON text, made by `index.mjs`):
/// `{"typeId", "runId", "nodeId", "inputs", "config": {"provider"?, "model"?},
///   "defaults": {"provider"?, "model"?}, "capabilities": <capability document> | null}`.
/// `capabilities: null` means [`OPENWOP_APP_SNAPSHOT`].
///
/// The answer: `{"status": "success", "outputs": <the node's output>}` or
/// `{"status": "failure", "error": {"code", "message", "details"?}}`. It never panics and
/// never fails to answer: a malformed request is a `protocol_error` naming the field.
pub async fn run_node(packs: &[Pack], request: &str, call: Arc<dyn JsCallAi>) -> String {
    let request: Value = match serde_json::from_str(request) {
        Ok(v) => v,
        Err(e) => return request_error("request", &format!("is not JSON: {e}")),
    };
    let strings = (|| {
        Ok::<_, String>((
            opt_string(&request, "/typeId")?,
            opt_string(&request, "/runId")?,
            opt_string(&request, "/nodeId")?,
            opt_string(&request, "/config/provider")?,
            opt_string(&request, "/config/model")?,
            opt_string(&request, "/defaults/provider")?,
            opt_string(&request, "/defaults/model")?,
        ))
    })();
    let (type_id, run_id, node_id, provider, model, default_provider, default_model) = match strings
    {
        Ok(s) => s,
        Err(answer) => return answer,
    };
    let Some(type_id) = type_id else {
        return request_error("typeId", "is required");
    };
    let Some(node) = packs.iter().find_map(|p| p.find(&type_id)) else {
        let known: Vec<&str> = packs.iter().flat_map(Pack::type_ids).collect();
        return failure(&ErrorEnvelope::validation(
            "typeId",
            format!(
                "`{type_id}` is not a node of this addon (its nodes: {})",
                known.join(", ")
            ),
        ));
    };
    let document = match request.get("capabilities") {
        None | Some(Value::Null) => snapshot_document(),
        Some(doc) => CapabilityDocument::from_json(doc),
    };
    let document = match document {
        Ok(d) => d,
        Err(e) => {
            return failure(
                &ErrorEnvelope::new(
                    ErrorCode::ProtocolError,
                    format!("WOP_SDK_HOST_CAPABILITIES is not a usable capability document: {e}"),
                )
                .with_detail("field", format!("WOP_SDK_HOST_CAPABILITIES.{}", e.field)),
            );
        }
    };
    let config = NodeConfig {
        provider: provider.or(default_provider),
        model: model.or(default_model),
    };
    let host = Arc::new(JsHost::new(call, document, config));
    let input = request.get("inputs").cloned().unwrap_or(Value::Null);
    let outcome = wop_sdk::node::execute(
        host,
        RunId::new(run_id.unwrap_or_else(|| "run".to_owned())),
        node_id.as_deref().unwrap_or(&type_id),
        node,
        input,
    )
    .await;
    match outcome.result {
        // `{"outputs": …, "status": "success"}`, written without a copy of the outputs (and
        // with `to_string`, which writes to a buffer, not through a formatter).
        Ok(outputs) => match serde_json::to_string(&outputs) {
            Ok(outputs) => format!("{{\"outputs\":{outputs},\"status\":\"success\"}}"),
            Err(e) => failure(&ErrorEnvelope::new(
                ErrorCode::NodeFailed,
                format!("the node's output cannot be written as JSON: {e}"),
            )),
        },
        Err(error) => failure(&error),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wop_sdk::budget::{CallPlan, PlannedCall};
    use wop_sdk::{AiRequest, Node, NodeCtx, NodeError, Text, wop_node};

    fn two_plan(_input: &String) -> CallPlan {
        CallPlan::new([PlannedCall::structured(100, Tight::SPEC.retry).times(2)])
    }

    /// Two structured calls of at most 2 requests: 4 on an RFC 0248 host, 8 without it.
    #[wop_node(
        type_id = "community.test.tight",
        version = "1.0.0",
        max_calls = 4,
        retry(max_attempts = 2),
        plan = two_plan
    )]
    async fn tight(ctx: &NodeCtx<'_>, prompt: String) -> Result<String, NodeError> {
        let c = ctx.call_ai(AiRequest::<Text>::prompt(prompt)).await?;
        Ok(c.into_output().map(|t| t.0).unwrap_or_default())
    }

    #[wop_node(type_id = "community.test.unplanned", version = "1.0.0")]
    async fn unplanned(ctx: &NodeCtx<'_>, prompt: String) -> Result<String, NodeError> {
        let c = ctx.call_ai(AiRequest::<Text>::prompt(prompt)).await?;
        Ok(c.into_output().map(|t| t.0).unwrap_or_default())
    }

    #[test]
    fn the_budget_check_warns_lists_what_it_did_not_check_and_names_bad_inputs() {
        let packs = [Pack::new("community.test.pack", "1.0.0")
            .node(Tight)
            .node(Unplanned)];
        let all = r#"{"community.test.tight": "x", "community.test.unplanned": "x"}"#;
        let v: Value = serde_json::from_str(&budget_check_json(&packs, all)).expect("JSON");
        let warnings = v["warnings"].as_array().expect("warnings");
        assert_eq!(warnings.len(), 1, "{v}");
        let w = warnings[0].as_str().unwrap_or_default();
        assert!(
            w.starts_with("node `community.test.tight`: `max_calls = 4` cannot fit"),
            "{w}"
        );
        assert!(w.contains("raise `max_calls` to 8"), "{w}");
        assert_eq!(v["unchecked"][0][0], "community.test.unplanned");
        assert!(
            v["unchecked"][0][1]
                .as_str()
                .is_some_and(|s| s.contains("plan has no calls"))
        );

        let none: Value = serde_json::from_str(&budget_check_json(&packs, "{}")).expect("JSON");
        assert_eq!(none["warnings"], json!([]));
        assert_eq!(none["unchecked"].as_array().map(Vec::len), Some(2));
        assert!(
            none["unchecked"][0][1]
                .as_str()
                .is_some_and(|s| s.contains("no input"))
        );

        for bad in ["[]", "{"] {
            let e: Value = serde_json::from_str(&budget_check_json(&packs, bad)).expect("JSON");
            assert!(
                e["error"].as_str().is_some_and(|m| m.contains("inputs")),
                "{e}"
            );
        }
    }
}
