//! The per-call retry policy of RFC 0248 §B and the reasons a deliberate retry may give.
//!
//! A policy written as a literal in source (`retry!(max_attempts = 2)` or the `retry(...)`
//! attribute of `#[wop_node]`) is checked by the macros at compile time. A policy built from
//! runtime data goes through [`RetryPolicy::try_new`] or [`RetryPolicy::from_json`], which return
//! the same `validation_error` a host gives.

pub use crate::wire::RetryReason;
use crate::wire::{self, WireError};
use serde_json::Value;

/// The smallest `maxAttempts` a host accepts.
pub const MIN_ATTEMPTS: u8 = wop_sdk_rules::retry::MIN_ATTEMPTS;
/// The largest `maxAttempts` a host accepts (RFC 0248 §B).
pub const MAX_ATTEMPTS: u8 = wop_sdk_rules::retry::MAX_ATTEMPTS;

/// How many provider requests one call may make, and whether a truncation retry may grow the
/// output budget.
///
/// The policy narrows what a host does; it never widens it: a `max_attempts` above the host's
/// ceiling is clamped to the ceiling (§B.3). It is sent only to a host that advertises
/// `callAccounting.retryPolicy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RetryPolicy {
    max_attempts: Option<u8>,
    grow_max_tokens: bool,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self::HOST_DEFAULT
    }
}

impl RetryPolicy {
    /// Sends no `retry` field: the host's own ceiling and budget growth apply.
    pub const HOST_DEFAULT: Self = Self {
        max_attempts: None,
        grow_max_tokens: true,
    };
    /// `maxAttempts: 1`: host retries off.
    pub const NO_RETRIES: Self = Self {
        max_attempts: Some(1),
        grow_max_tokens: true,
    };

    /// A policy from runtime data. Refuses what a host refuses, with the same `validation_error`
    /// naming `retry.maxAttempts`.
    pub fn try_new(max_attempts: i64, grow_max_tokens: bool) -> Result<Self, WireError> {
        let n = i128::from(max_attempts);
        match wop_sdk_rules::retry::attempts(n) {
            Some(n) => Ok(Self {
                max_attempts: Some(n),
                grow_max_tokens,
            }),
            None => Err(WireError::validation(
                "retry.maxAttempts",
                wop_sdk_rules::retry::attempts_problem(n).unwrap_or_default(),
            )),
        }
    }

    /// A policy from the wire form `{ "maxAttempts"?: 1..16, "growMaxTokens"?: bool }`.
    pub fn from_json(value: &Value) -> Result<Self, WireError> {
        wire::Retry::from_json(value).map(Self::from_wire)
    }

    /// Used by the macros after they checked the literal at compile time. The assertion makes a
    /// bad value a compile error even if this is called by hand in a `const`.
    #[doc(hidden)]
    pub const fn __checked(max_attempts: u8, grow_max_tokens: bool) -> Self {
        assert!(
            max_attempts >= MIN_ATTEMPTS && max_attempts <= MAX_ATTEMPTS,
            "max_attempts must be in 1..=16"
        );
        Self {
            max_attempts: Some(max_attempts),
            grow_max_tokens,
        }
    }

    /// Used by the macros for `retry(grow_max_tokens = false)` without `max_attempts`.
    #[doc(hidden)]
    pub const fn __checked_growth(grow_max_tokens: bool) -> Self {
        Self {
            max_attempts: None,
            grow_max_tokens,
        }
    }

    /// The same policy with budget growth on truncation switched on or off.
    #[must_use]
    pub const fn grow_max_tokens(mut self, grow: bool) -> Self {
        self.grow_max_tokens = grow;
        self
    }

    /// The cap this policy sets, if any.
    pub const fn max_attempts(self) -> Option<u8> {
        self.max_attempts
    }

    /// Whether a truncation retry may raise `maxTokens`.
    pub const fn grows_max_tokens(self) -> bool {
        self.grow_max_tokens
    }

    /// The cap in force on a host with `ceiling`: the policy narrows, never widens (§B.3).
    pub fn effective_attempts(self, ceiling: u8) -> u8 {
        let ceiling = ceiling.clamp(MIN_ATTEMPTS, MAX_ATTEMPTS);
        self.max_attempts.map_or(ceiling, |n| n.min(ceiling))
    }

    /// The wire form, or `None` for the host default (no field sent).
    pub fn to_wire(self) -> Option<wire::Retry> {
        if self == Self::HOST_DEFAULT {
            return None;
        }
        Some(wire::Retry {
            max_attempts: self.max_attempts,
            grow_max_tokens: (!self.grow_max_tokens).then_some(false),
        })
    }

    /// The policy a wire `retry` denotes.
    pub fn from_wire(retry: wire::Retry) -> Self {
        Self {
            max_attempts: retry.max_attempts,
            grow_max_tokens: retry.grow_max_tokens.unwrap_or(true),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_constructor_refuses_what_a_host_refuses() {
        for bad in [0, 17, -1, 300] {
            let e = RetryPolicy::try_new(bad, true).expect_err("refused");
            assert_eq!(e.field, "retry.maxAttempts");
            assert_eq!(e.code, crate::wire::ErrorCode::ValidationError);
        }
        assert_eq!(
            RetryPolicy::try_new(16, false).map(RetryPolicy::max_attempts),
            Ok(Some(16))
        );
    }

    #[test]
    fn policy_narrows_never_widens() {
        assert_eq!(
            RetryPolicy::try_new(16, true).map(|p| p.effective_attempts(3)),
            Ok(3)
        );
        assert_eq!(RetryPolicy::NO_RETRIES.effective_attempts(3), 1);
        assert_eq!(RetryPolicy::HOST_DEFAULT.effective_attempts(3), 3);
    }

    #[test]
    fn host_default_sends_nothing() {
        assert_eq!(RetryPolicy::HOST_DEFAULT.to_wire(), None);
        let p = RetryPolicy::__checked(2, false);
        assert_eq!(
            serde_json::to_value(p.to_wire()).ok(),
            Some(serde_json::json!({"maxAttempts": 2, "growMaxTokens": false}))
        );
    }

    #[test]
    fn reasons_have_their_wire_names() {
        for r in RetryReason::ALL {
            assert_eq!(RetryReason::parse(r.as_str()), Some(r));
            assert_eq!(
                serde_json::to_value(r).ok(),
                Some(Value::String(r.as_str().into()))
            );
        }
        assert_eq!(RetryReason::parse("because"), None);
        let spelled: Vec<&str> = RetryReason::ALL.iter().map(|r| r.as_str()).collect();
        assert_eq!(spelled, wop_sdk_rules::sets::RETRY_REASONS);
    }
}
