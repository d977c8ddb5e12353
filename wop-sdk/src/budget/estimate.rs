//! The worst-case [`Estimate`] of a planned run, per node, on the host it is made for and on a
//! host without `callAccounting`.

use crate::caps::Capabilities;
use crate::policy::RetryPolicy;
use serde::Serialize;

/// One call a node plans to make, for the estimate.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PlannedCall {
    /// Structured (with `responseSchema`) or plain.
    pub structured: bool,
    /// The request's `maxTokens`.
    pub max_tokens: u32,
    /// The call's retry policy.
    pub policy: RetryPolicy,
    /// How many such calls.
    pub times: u32,
}

impl PlannedCall {
    /// A structured call.
    pub fn structured(max_tokens: u32, policy: RetryPolicy) -> Self {
        Self {
            structured: true,
            max_tokens,
            policy,
            times: 1,
        }
    }

    /// A plain call.
    pub fn plain(max_tokens: u32) -> Self {
        Self {
            structured: false,
            max_tokens,
            policy: RetryPolicy::HOST_DEFAULT,
            times: 1,
        }
    }

    /// The same call made `n` times.
    #[must_use]
    pub fn times(mut self, n: u32) -> Self {
        self.times = n;
        self
    }
}

/// The calls a node plans to make for one input (`#[wop_node(plan = my_plan)]`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CallPlan {
    /// The planned calls.
    pub calls: Vec<PlannedCall>,
}

impl CallPlan {
    /// A plan with these calls.
    pub fn new(calls: impl IntoIterator<Item = PlannedCall>) -> Self {
        Self {
            calls: calls.into_iter().collect(),
        }
    }
}

/// The worst case of one node.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeEstimate {
    /// The node instance.
    pub node_id: String,
    /// Its type.
    pub type_id: String,
    /// Its budget.
    pub max_calls: Option<u32>,
    /// Worst-case provider requests.
    pub requests: u32,
    /// Worst-case output tokens under each call's own policy.
    pub output_tokens: u64,
    /// Worst-case output tokens if every call let the budget grow.
    pub output_tokens_with_growth: u64,
    /// Worst-case output tokens if no call let the budget grow.
    pub output_tokens_without_growth: u64,
    /// Whether the worst case fits `max_calls`.
    pub fits: bool,
    /// Worst-case provider requests on a host without `aiProviders.callAccounting`
    /// ([`Capabilities::without_call_accounting`]): each structured call charged its ceiling and
    /// the natural-language fallback, whatever its policy.
    pub requests_without_accounting: u32,
    /// Whether that worst case fits `max_calls`.
    pub fits_without_accounting: bool,
}

/// Worst-case provider requests and output tokens for a planned run, per node and in total.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    /// The host ceiling it was computed under.
    pub ceiling: u8,
    /// The truncation multiplier it was computed under.
    pub multiplier: u32,
    /// What a host without `callAccounting` charges a structured call: its ceiling and the
    /// natural-language fallback ([`Capabilities::without_call_accounting`]).
    pub ceiling_without_accounting: u8,
    /// Per node, in plan order.
    pub nodes: Vec<NodeEstimate>,
}

impl Estimate {
    /// An empty estimate for a host with `caps`.
    pub fn new(caps: &Capabilities) -> Self {
        Self {
            ceiling: caps.max_retry_attempts(),
            multiplier: caps.truncation_multiplier(),
            ceiling_without_accounting: caps.without_call_accounting().max_retry_attempts(),
            nodes: Vec::new(),
        }
    }

    /// Adds a node's plan.
    pub fn add_node(
        &mut self,
        caps: &Capabilities,
        provider_max: Option<u32>,
        node_id: &str,
        type_id: &str,
        max_calls: Option<u32>,
        plan: &CallPlan,
    ) -> &NodeEstimate {
        let mut est = NodeEstimate {
            node_id: node_id.to_owned(),
            type_id: type_id.to_owned(),
            max_calls,
            requests: 0,
            output_tokens: 0,
            output_tokens_with_growth: 0,
            output_tokens_without_growth: 0,
            fits: true,
            requests_without_accounting: 0,
            fits_without_accounting: true,
        };
        let older = caps.without_call_accounting();
        for call in &plan.calls {
            let own =
                caps.attempt_plan(call.structured, call.policy, call.max_tokens, provider_max);
            let n = own.requests;
            // A host that does not honour `retry` may grow the budget whatever the policy says:
            // `own.grow` is then true.
            let tokens = |grow| {
                own.with_growth(grow)
                    .worst_case_output_tokens()
                    .saturating_mul(u64::from(call.times))
            };
            est.requests = est.requests.saturating_add(n.saturating_mul(call.times));
            let charged = older
                .attempt_plan(call.structured, call.policy, 1, None)
                .requests;
            est.requests_without_accounting = est
                .requests_without_accounting
                .saturating_add(charged.saturating_mul(call.times));
            est.output_tokens = est.output_tokens.saturating_add(tokens(own.grow));
            est.output_tokens_with_growth =
                est.output_tokens_with_growth.saturating_add(tokens(true));
            est.output_tokens_without_growth = est
                .output_tokens_without_growth
                .saturating_add(tokens(false));
        }
        est.fits = max_calls.is_none_or(|m| est.requests <= m);
        est.fits_without_accounting =
            max_calls.is_none_or(|m| est.requests_without_accounting <= m);
        self.nodes.push(est);
        self.nodes.last().expect("just pushed")
    }

    /// Worst-case provider requests of the whole run.
    pub fn total_requests(&self) -> u32 {
        self.nodes.iter().map(|n| n.requests).sum()
    }

    /// Worst-case output tokens of the whole run under each call's policy.
    pub fn total_output_tokens(&self) -> u64 {
        self.nodes.iter().map(|n| n.output_tokens).sum()
    }

    /// Whether every node fits its budget.
    pub fn fits(&self) -> bool {
        self.nodes.iter().all(|n| n.fits)
    }

    /// Worst-case provider requests of the whole run on a host without `callAccounting`.
    pub fn total_requests_without_accounting(&self) -> u32 {
        self.nodes
            .iter()
            .map(|n| n.requests_without_accounting)
            .sum()
    }

    /// The nodes whose `max_calls` cannot fit their planned calls on a host without
    /// `callAccounting` (openwop-app's public snapshot): there a call is charged its worst case,
    /// so a later call of the plan is refused `budget_exhausted` before dispatch.
    pub fn over_without_accounting(&self) -> impl Iterator<Item = &NodeEstimate> {
        self.nodes.iter().filter(|n| !n.fits_without_accounting)
    }
}
