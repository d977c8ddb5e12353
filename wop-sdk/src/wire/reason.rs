//! The closed set of deliberate retry reasons (`retryReason` on the wire).

use serde::{Deserialize, Serialize};
use std::fmt;

/// Why a deliberate retry is made (seed 2). The only reasons a host accepts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryReason {
    /// The completion did not meet the contract (closed-world validation failed).
    InvalidOutput,
    /// A tool call in the completion failed validation.
    ToolValidationFailed,
    /// The provider failed in a way the workflow chooses to retry.
    ProviderFailure,
    /// The user asked for another generation.
    UserRequested,
    /// The workflow's own policy asks for another generation.
    WorkflowPolicy,
}

impl RetryReason {
    /// Every reason, in wire order (the order of `wop_sdk::rules::sets::RETRY_REASONS`).
    pub const ALL: [Self; 5] = [
        Self::InvalidOutput,
        Self::ToolValidationFailed,
        Self::ProviderFailure,
        Self::UserRequested,
        Self::WorkflowPolicy,
    ];

    /// The wire spelling, e.g. `invalid_output`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::InvalidOutput => "invalid_output",
            Self::ToolValidationFailed => "tool_validation_failed",
            Self::ProviderFailure => "provider_failure",
            Self::UserRequested => "user_requested",
            Self::WorkflowPolicy => "workflow_policy",
        }
    }

    /// The reason a wire string names.
    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|r| r.as_str() == s)
    }
}

impl fmt::Display for RetryReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
