//! The budget rule a pack is checked against before it is published (`cargo wop check`): a node
//! whose `max_calls` cannot fit its planned calls on a host without `callAccounting`.

use super::Pack;
use crate::budget::Estimate;
use crate::caps::Capabilities;
use serde_json::Value;

impl Pack {
    /// The nodes whose `max_calls` cannot fit their planned calls on a host without
    /// `aiProviders.callAccounting` (openwop-app's public snapshot), one line each, for `inputs`
    /// (`{typeId: input, ...}`, what `estimate` takes; a node without an input is not checked,
    /// since its plan depends on it). `caps` is the host the pack is meant for; the host without
    /// `callAccounting` is [`Capabilities::without_call_accounting`] of it.
    ///
    /// A compile-time warning is not possible on stable Rust (a proc macro can only fail), and
    /// the plan needs an input, so this is a check a tool runs: an empty list means every node
    /// checked fits on both kinds of host. An input the node refuses is a line too, naming the
    /// field.
    pub fn budget_warnings(&self, caps: &Capabilities, inputs: &Value) -> Vec<String> {
        let mut estimate = Estimate::new(caps);
        let mut lines = Vec::new();
        for node in self.nodes() {
            let spec = node.spec();
            let Some(input) = inputs.get(spec.type_id) else {
                continue;
            };
            match node.plan_json(input) {
                Ok(plan) => {
                    estimate.add_node(
                        caps,
                        None,
                        spec.type_id,
                        spec.type_id,
                        spec.max_calls,
                        &plan,
                    );
                }
                Err(e) => lines.push(format!(
                    "node `{}`: not checked: its input is refused (field `{}`): {}",
                    spec.type_id,
                    e.field().unwrap_or("input"),
                    e.message
                )),
            }
        }
        let ceiling = caps.without_call_accounting().max_retry_attempts();
        for n in estimate.over_without_accounting() {
            lines.push(format!(
                "node `{}`: `max_calls = {}` cannot fit its planned calls on a host without \
                 `aiProviders.callAccounting` (openwop-app): there each structured call is charged \
                 its worst case, {ceiling} requests (the ceiling and the natural-language \
                 fallback), {} in all ({} on this host); raise `max_calls` to {} or plan fewer \
                 calls, else a later call is refused `budget_exhausted` there",
                n.type_id,
                n.max_calls.unwrap_or(0),
                n.requests_without_accounting,
                n.requests,
                n.requests_without_accounting,
            ));
        }
        lines
    }
}
