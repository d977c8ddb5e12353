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
//!
//! # Two kinds of host
//!
//! A host that advertises `aiProviders.callAccounting` reports each call's `attempts`, so a node
//! is charged what its calls really made. A host without it reports nothing: each call is
//! charged its worst case, and that host adds its natural-language fallback after its ceiling
//! (openwop-app: 3 requests, then the fallback, 4 in all) and ignores a call's `retry`. An
//! [`Estimate`] gives both: `requests` on the host it was made for, `requests_without_accounting`
//! on such a host ([`Capabilities::without_call_accounting`]).

mod estimate;

pub use estimate::{CallPlan, Estimate, NodeEstimate, PlannedCall};

use crate::policy::RetryPolicy;
use serde::Serialize;

/// What one call may cost: how many provider requests, at what output budgets. One plan serves
/// the estimate before a run, the node's reservation before a call, and the local host's retry
/// loop, so the three cannot disagree.
///
/// It has one constructor, [`AttemptPlan::new`]; a node's view of its host goes through
/// [`crate::caps::Capabilities::attempt_plan`], which reads the inputs off the negotiated capabilities.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
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

    /// The same plan with budget growth on or off (a host that does not honour `retry` may grow
    /// whatever the call's policy says).
    pub fn with_growth(self, grow: bool) -> Self {
        Self { grow, ..self }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn worked_example_of_the_issue() {
        let plan = |grow, provider_max| {
            AttemptPlan::new(true, 3, None, 1000, 2, provider_max).with_growth(grow)
        };
        assert_eq!(plan(true, None).worst_case_output_tokens(), 7000);
        assert_eq!(plan(false, None).worst_case_output_tokens(), 3000);
        assert_eq!(
            plan(true, Some(2500)).worst_case_output_tokens(),
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
