//! What a successful call gives back: [`Completion`], its [`AttemptId`], and [`InvalidOutput`].

use crate::brand::Brand;
use crate::caps::AttemptsProof;
use crate::wire::{Attempts, FinishReason, Usage};
use serde_json::Value;
use std::fmt;
use std::marker::PhantomData;

/// The identity the host persisted for a successful call. Exists only inside a [`Completion`];
/// there is no way to make one from a string. Branded to its run.
pub struct AttemptId<'run> {
    pub(crate) id: String,
    _brand: Brand<'run>,
}

impl AttemptId<'_> {
    /// The id as the host wrote it (for logs).
    pub fn as_str(&self) -> &str {
        &self.id
    }
}

impl fmt::Debug for AttemptId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AttemptId({})", self.id)
    }
}

impl fmt::Display for AttemptId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id)
    }
}

/// Why an output does not meet the contract (`semanticStatus: invalid_output`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidOutput {
    /// What is wrong, one line each; fit to feed back into a repair prompt.
    pub errors: Vec<String>,
    /// The raw output as the host returned it.
    pub raw: Value,
}

impl fmt::Display for InvalidOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid_output: {}", self.errors.join("; "))
    }
}

/// A successful call: the host produced a completion. Its output may still be
/// `invalid_output` (closed-world validation), in which case the pack can repair it with a
/// deliberate retry ([`crate::AiRequest::retry_of`]).
pub struct Completion<'run, T> {
    pub(crate) attempt_id: AttemptId<'run>,
    pub(crate) output: Result<T, InvalidOutput>,
    pub(crate) usage: Option<Usage>,
    pub(crate) attempts: Option<Attempts>,
    pub(crate) finish_reason: Option<FinishReason>,
    pub(crate) model: Option<String>,
    pub(crate) policy_honoured: bool,
}

impl<T: fmt::Debug> fmt::Debug for Completion<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("attempt_id", &self.attempt_id)
            .field("output", &self.output)
            .field("usage", &self.usage)
            .field("finish_reason", &self.finish_reason)
            .finish_non_exhaustive()
    }
}

impl<'run, T> Completion<'run, T> {
    pub(crate) fn new(
        attempt_id: String,
        output: Result<T, InvalidOutput>,
        usage: Option<Usage>,
        attempts: Option<Attempts>,
        finish_reason: Option<FinishReason>,
        model: Option<String>,
        policy_honoured: bool,
    ) -> Self {
        Self {
            attempt_id: AttemptId {
                id: attempt_id,
                _brand: PhantomData,
            },
            output,
            usage,
            attempts,
            finish_reason,
            model,
            policy_honoured,
        }
    }

    /// The identity of this call.
    pub fn attempt_id(&self) -> &AttemptId<'run> {
        &self.attempt_id
    }

    /// The typed output, or why it does not meet the contract.
    pub fn output(&self) -> Result<&T, &InvalidOutput> {
        self.output.as_ref()
    }

    /// The typed output by value.
    pub fn into_output(self) -> Result<T, InvalidOutput> {
        self.output
    }

    /// Whether the output meets the contract (`semanticStatus: ok`).
    pub fn is_valid(&self) -> bool {
        self.output.is_ok()
    }

    /// Usage of the attempt whose output this is (RFC 0248 §A.4).
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// Why the final attempt stopped.
    pub fn finish_reason(&self) -> Option<FinishReason> {
        self.finish_reason
    }

    /// The model that answered.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// RFC 0248 §A: the call's real provider attempts. Needs the proof that the host advertises
    /// them (`ctx.capabilities().attempts()`). The runtime refuses a result without `attempts`
    /// from a host that advertises them, so this is `None` only when the proof was negotiated
    /// with a different host than the one that answered this call.
    pub fn attempts(&self, proof: AttemptsProof) -> Option<Attempts> {
        let _: AttemptsProof = proof;
        self.attempts
    }

    /// Whether the call's retry policy was sent to a host that honours it. `false` on a host
    /// that does not advertise `retryPolicy` (use [`crate::AiRequest::require_retry_policy`] to refuse
    /// such a host instead).
    pub fn policy_honoured(&self) -> bool {
        self.policy_honoured
    }
}
