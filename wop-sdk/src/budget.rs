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

/// What one call may cost: how many provider requests, at what output budgets. One plan serves
/// the estimate before a run, the node's reservation before a call, and the local host's retry
/// loop, so the three cannot disagree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttemptPlan {
    /// The most provider requests the call may make (1 for a plain call).
    pub requests: u32,
    /// The output budget of the first request.
    pub first_max_tokens: u32,
    /// Whether a truncation retry multiplies the budget.
    pub grow: bool,
    /// The truncation multiplier.
    pub multiplier: u32,
    /// The provider's largest budget, when known: growth stops there.
    pub provider_max: Option<u32>,
}

impl AttemptPlan {
    /// The plan of a call on a host whose ceiling is `ceiling` (clamped to 1..=16). `policy` is
    /// the call's policy when the host honours it (`None`: the host's own, which may grow).
    pub fn new(
        structured: bool,
        ceiling: u8,
        policy: Option<RetryPolicy>,
        max_tokens: u32,
        multiplier: u32,
        provider_max: Option<u32>,
    ) -> Self {
        let requests = if structured {
            let p = policy.unwrap_or(RetryPolicy::HOST_DEFAULT);
            u32::from(p.effective_attempts(ceiling))
        } else {
            1
        };
        let first = provider_max
            .map_or(max_tokens, |m| max_tokens.min(m))
            .max(1);
        Self {
            requests,
            first_max_tokens: first,
            grow: policy.is_none_or(RetryPolicy::grows_max_tokens),
            multiplier: multiplier.max(1),
            provider_max,
        }
    }

    /// The plan of a call as a node sees its host: the negotiated ceiling and multiplier, the
    /// call's policy only when the host advertises `retryPolicy`.
    pub fn negotiated(
        caps: &Capabilities,
        structured: bool,
        policy: RetryPolicy,
        max_tokens: u32,
    ) -> Self {
        let honoured = caps
            .has(crate::caps::Capability::RetryPolicy)
            .then_some(policy);
        Self::new(
            structured,
            caps.max_retry_attempts(),
            honoured,
            max_tokens,
            caps.truncation_multiplier(),
            None,
        )
    }

    /// The budget of the request after a truncated one sent with `budget`.
    pub fn after_truncation(&self, budget: u32) -> u32 {
        if !self.grow {
            return budget;
        }
        let grown = budget.saturating_mul(self.multiplier);
        self.provider_max.map_or(grown, |m| grown.min(m))
    }

    /// The worst-case output tokens: every request truncated at its full budget.
    pub fn worst_case_output_tokens(&self) -> u64 {
        let mut budget = self.first_max_tokens;
        let mut total = 0u64;
        for _ in 0..self.requests {
            total = total.saturating_add(u64::from(budget));
            budget = self.after_truncation(budget);
        }
        total
    }
}

/// The worst-case provider requests of one call on a host with `caps`.
pub fn worst_case_requests(caps: &Capabilities, structured: bool, policy: RetryPolicy) -> u32 {
    AttemptPlan::negotiated(caps, structured, policy, 1).requests
}

/// The worst-case output tokens of `requests` attempts starting at `max_tokens`.
pub fn worst_case_output_tokens(
    requests: u32,
    max_tokens: u32,
    grow: bool,
    multiplier: u32,
    provider_max: Option<u32>,
) -> u64 {
    AttemptPlan {
        requests,
        first_max_tokens: provider_max.map_or(max_tokens, |m| max_tokens.min(m)),
        grow,
        multiplier: multiplier.max(1),
        provider_max,
    }
    .worst_case_output_tokens()
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
        for call in &plan.calls {
            let mut own =
                AttemptPlan::negotiated(caps, call.structured, call.policy, call.max_tokens);
            own.provider_max = provider_max;
            own.first_max_tokens = provider_max.map_or(call.max_tokens, |m| call.max_tokens.min(m));
            let n = own.requests;
            // A host that does not honour `retry` may grow the budget whatever the policy says:
            // `own.grow` is then true.
            let tokens = |grow| {
                AttemptPlan { grow, ..own }
                    .worst_case_output_tokens()
                    .saturating_mul(u64::from(call.times))
            };
            est.requests = est.requests.saturating_add(n.saturating_mul(call.times));
            est.output_tokens = est.output_tokens.saturating_add(tokens(own.grow));
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
    fn a_plan_narrows_never_widens_and_grows_only_when_allowed() {
        let p = AttemptPlan::new(
            true,
            3,
            Some(RetryPolicy::__checked(16, true)),
            1000,
            2,
            None,
        );
        assert_eq!(p.requests, 3);
        assert_eq!(p.worst_case_output_tokens(), 7000);
        let p = AttemptPlan::new(
            true,
            3,
            Some(RetryPolicy::__checked(2, false)),
            1000,
            2,
            None,
        );
        assert_eq!((p.requests, p.worst_case_output_tokens()), (2, 2000));
        // A host that does not honour the policy keeps its ceiling and may grow.
        let p = AttemptPlan::new(true, 3, None, 1000, 2, Some(1500));
        assert_eq!(
            (p.requests, p.worst_case_output_tokens()),
            (3, 1000 + 1500 + 1500)
        );
        // A plain call is one request; a zero ceiling is read as 1.
        assert_eq!(AttemptPlan::new(false, 3, None, 10, 2, None).requests, 1);
        assert_eq!(AttemptPlan::new(true, 0, None, 10, 2, None).requests, 1);
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
