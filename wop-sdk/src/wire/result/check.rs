//! The rules of a result once it has a shape: RFC 0248 §A within `attempts` and between
//! `attempts` and `usage`. The one rule set of both paths: [`CallAiResult::check`] for a typed
//! answer (a host reached in process), and the last step of [`CallAiResult::from_json`].

use super::{Attempts, CallAiResult};
use crate::wire::error::WireError;
use wop_sdk_rules::accounting;

impl Attempts {
    /// Holds a record to §A: `count` within [`wop_sdk_rules::accounting`]'s bound (§A.1),
    /// `structuredOutput` only on a call with `responseSchema` (§A.3), and the sum present when
    /// `usageComplete` says every attempt reported it (§A.2). Every broken rule is a
    /// `protocol_error` naming the field (`attempts.…`).
    pub fn check(&self, structured: bool) -> Result<(), WireError> {
        if let Some(problem) = accounting::count_problem(u64::from(self.count)) {
            return Err(WireError::protocol("attempts.count", problem));
        }
        if self.structured_output.is_some() && !structured {
            return Err(WireError::protocol(
                "attempts.structuredOutput",
                "must be absent on a call without `responseSchema`",
            ));
        }
        if self.usage_complete && self.output_tokens.is_none() {
            return Err(WireError::protocol(
                "attempts.outputTokens",
                "is required when `usageComplete` is true (every attempt reported usage, so the \
                 sum exists)",
            ));
        }
        Ok(())
    }
}

impl CallAiResult {
    /// Holds a result to the contract, whether it came typed (a host reached in process) or as
    /// JSON ([`CallAiResult::from_json`] ends with this check): the rules of `attempts`
    /// ([`Attempts::check`]) and those between `attempts` and `usage` (§A.2, §A.4: `usage` is the
    /// final attempt's, one of the attempts summed). Every broken rule is a `protocol_error`
    /// naming the field; a typed answer and its JSON text get the same error.
    pub fn check(&self, structured: bool) -> Result<(), WireError> {
        let Some(a) = &self.attempts else {
            return Ok(());
        };
        a.check(structured)?;
        let Some(final_out) = self.usage.and_then(|u| u.output_tokens) else {
            return Ok(());
        };
        match a.output_tokens {
            None => Err(WireError::protocol(
                "attempts.outputTokens",
                format!(
                    "is absent though the final attempt reported `usage.outputTokens` \
                     {final_out}: the sum over the attempts that reported usage exists"
                ),
            )),
            Some(sum) if sum < final_out => Err(WireError::protocol(
                "attempts.outputTokens",
                format!(
                    "is {sum}, below the final attempt's `usage.outputTokens` {final_out}: the \
                     sum over the attempts includes the final one"
                ),
            )),
            Some(_) => Ok(()),
        }
    }
}
