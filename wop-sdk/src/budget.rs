//! A node's `max_calls` budget, counted in provider requests, and the worst-case [`Estimate`]
//! before a run.
//!
//! # Worst case of one call
//!
//! - A plain call (no `responseSchema`) makes one provider request.
//! - A structured call makes at most the host's ceiling (`maxRetryAttempts`, default 3), narrowed
//!   by the call's `retry.maxAttempts` when the host advertises `retryPolicy`. The
//!   natural-language fallback counts inside that cap (SPEC.md).
//! - Output tokens: attempt `i` may be sent with `maxTokens × multiplierⁱ` (capped at the
//!   provider maximum when known) if every attempt truncates and growth is on, and with
//!   `maxTokens` every time when `growMaxTokens` is false. Three attempts at 1000 tokens:
//!   7000 with doubling, 3000 without.

use crate::caps::Capabilities;
use crate::policy::RetryPolicy;
use serde::Serialize;

/// The worst-case provider requests of one call on a host with `caps`.
pub fn worst_case_requests(caps: &Capabilities, structured: bool, policy: RetryPolicy) -> u32 {
    if !structured {
        return 1;
    }
    let ceiling = caps.max_retry_attempts();
    let cap = if caps.has(crate::caps::Capability::RetryPolicy) {
        policy.effective_attempts(ceiling)
    } else {
        ceiling
    };
    u32::from(cap)
}

/// The worst-case output tokens of `requests` attempts starting at `max_tokens`.
pub fn worst_case_output_tokens(
    requests: u32,
    max_tokens: u32,
    grow: bool,
    multiplier: u32,
    provider_max: Option<u32>,
) -> u64 {
    let cap = u64::from(provider_max.unwrap_or(u32::MAX));
    let mut budget = u64::from(max_tokens).min(cap);
    let mut total = 0u64;
    for _ in 0..requests {
        total = total.saturating_add(budget);
        if grow {
            budget = budget.saturating_mul(u64::from(multiplier.max(1))).min(cap);
        }
    }
    total
}

/// A node's call budget during one execution: provider requests used, reserved by calls in
/// flight, and the limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct BudgetStatus {
    /// The node's `max_calls`, if it has one.
    pub max_calls: Option<u32>,
    /// Provider requests charged so far.
    pub used: u32,
    /// Worst cases reserved by calls in flight.
    pub reserved: u32,
}

impl BudgetStatus {
    /// Requests still available (`None` without a limit).
    pub fn remaining(&self) -> Option<u32> {
        self.max_calls
            .map(|m| m.saturating_sub(self.used + self.reserved))
    }

    /// Whether a call whose worst case is `worst` can start without risking an overrun.
    pub fn admits(&self, worst: u32) -> bool {
        self.remaining().is_none_or(|r| worst <= r)
    }
}

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
}

/// Worst-case provider requests and output tokens for a planned run, per node and in total.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Estimate {
    /// The host ceiling it was computed under.
    pub ceiling: u8,
    /// The truncation multiplier it was computed under.
    pub multiplier: u32,
    /// Per node, in plan order.
    pub nodes: Vec<NodeEstimate>,
}

impl Estimate {
    /// An empty estimate for a host with `caps`.
    pub fn new(caps: &Capabilities) -> Self {
        Self {
            ceiling: caps.max_retry_attempts(),
            multiplier: caps.truncation_multiplier(),
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
        };
        let honoured = caps.has(crate::caps::Capability::RetryPolicy);
        for call in &plan.calls {
            let n = worst_case_requests(caps, call.structured, call.policy);
            let tokens = |grow| {
                worst_case_output_tokens(n, call.max_tokens, grow, self.multiplier, provider_max)
                    .saturating_mul(u64::from(call.times))
            };
            // A host that does not honour `retry` may grow the budget whatever the policy says.
            let own_growth = call.policy.grows_max_tokens() || !honoured;
            est.requests = est.requests.saturating_add(n.saturating_mul(call.times));
            est.output_tokens = est.output_tokens.saturating_add(tokens(own_growth));
            est.output_tokens_with_growth =
                est.output_tokens_with_growth.saturating_add(tokens(true));
            est.output_tokens_without_growth = est
                .output_tokens_without_growth
                .saturating_add(tokens(false));
        }
        est.fits = max_calls.is_none_or(|m| est.requests <= m);
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_of_the_issue() {
        assert_eq!(worst_case_output_tokens(3, 1000, true, 2, None), 7000);
        assert_eq!(worst_case_output_tokens(3, 1000, false, 2, None), 3000);
        assert_eq!(
            worst_case_output_tokens(3, 1000, true, 2, Some(2500)),
            1000 + 2000 + 2500
        );
    }

    #[test]
    fn budget_admits_exactly_what_fits() {
        let b = BudgetStatus {
            max_calls: Some(6),
            used: 3,
            reserved: 0,
        };
        assert!(b.admits(3));
        assert!(!b.admits(4));
        assert!(BudgetStatus::default().admits(u32::MAX));
    }
}
