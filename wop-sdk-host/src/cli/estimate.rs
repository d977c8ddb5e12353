//! `estimate`, and `run`'s check before it starts: a pack's worst case for its inputs, and
//! whether each node fits its `max_calls`.

use super::error::CliError;
use super::inputs::plan_of;
use crate::local::LocalHost;
use serde_json::Value;
use wop_sdk::budget::Estimate;
use wop_sdk::caps::Capabilities;
use wop_sdk::manifest::Pack;

/// The estimate of a pack for `{typeId: input, ...}`.
pub(super) fn estimate_pack(
    pack: &Pack,
    input: &Value,
    origin: &str,
) -> Result<Estimate, CliError> {
    let Value::Object(map) = input else {
        return Err(CliError::usage(format!(
            "{origin}: must be an object mapping node type ids to their inputs, e.g. {{\"{}\": {{...}}}}",
            pack.type_ids().first().copied().unwrap_or("typeId")
        )));
    };
    if map.is_empty() {
        return Err(CliError::usage(format!(
            "{origin}: names no node; its keys must be node type ids ({})",
            pack.type_ids().join(", ")
        )));
    }
    let host = LocalHost::rfc0248().build();
    let caps = Capabilities::negotiate(host.capabilities());
    let mut estimate = Estimate::new(&caps);
    if let Some(unknown) = map.keys().find(|k| pack.find(k).is_none()) {
        return Err(CliError::usage(format!(
            "{origin}: field `{unknown}`: no such node in the pack (its nodes: {})",
            pack.type_ids().join(", ")
        )));
    }
    // In the pack's order, whatever the order of the input's keys.
    for node in pack.nodes().iter().map(AsRef::as_ref) {
        let type_id = node.spec().type_id;
        let Some(node_input) = map.get(type_id) else {
            continue;
        };
        let plan = plan_of(node, node_input, origin, type_id)?;
        let s = node.spec();
        // The node's row is named by the last segment of its type id (`draft-scene`).
        let short = type_id.rsplit('.').next().unwrap_or(type_id);
        estimate.add_node(
            &caps,
            Some(host.config().provider_max_tokens),
            short,
            s.type_id,
            s.max_calls,
            &plan,
        );
    }
    Ok(estimate)
}

pub(super) fn fits(estimate: &Estimate) -> Result<(), CliError> {
    let over: Vec<String> = estimate
        .nodes
        .iter()
        .filter(|n| !n.fits)
        .map(|n| {
            format!(
                "node `{}` may make {} provider requests, but its max_calls is {}",
                n.node_id,
                n.requests,
                n.max_calls.unwrap_or(0)
            )
        })
        .collect();
    if over.is_empty() {
        Ok(())
    } else {
        Err(CliError::failed(format!(
            "the run would not fit its budget: {}",
            over.join("; ")
        )))
    }
}
