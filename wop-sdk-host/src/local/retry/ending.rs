//! How a call's retries end: the exhaustion of its provider requests or of its connections, the
//! public sentence of each, and the usage signal of a reply.

use super::RetryLoop;
use super::types::{End, Miss, Signal};
use crate::provider::class::public_advice;
use wop_sdk::wire::ErrorCode;

impl RetryLoop {
    /// The end of a call whose connections failed to reach the provider as often as the cap
    /// allows requests: the attempts made before, if any, are exhausted (`retry-exhausted`), and
    /// the message counts both.
    pub(super) fn unreachable(&mut self, emit: &mut impl FnMut(Signal)) -> End {
        let connections = match self.unreached {
            1 => "1 connection".to_owned(),
            n => format!("{n} connections"),
        };
        let End::Failed {
            code,
            message,
            cause,
        } = self.exhausted(emit)
        else {
            unreachable!("exhausted always fails")
        };
        let message = if self.count == 0 {
            let advice = public_advice(&cause);
            format!("no request reached the provider ({connections} failed): {advice}")
        } else {
            format!(
                "{message}; {connections} never reached the provider (not counted against \
                 maxAttempts, which bounds provider requests: {} made)",
                self.count
            )
        };
        End::Failed {
            code,
            message,
            cause,
        }
    }

    pub(super) fn exhausted(&mut self, emit: &mut impl FnMut(Signal)) -> End {
        let last = self.last_miss.take();
        let reason = last.as_ref().map_or("unknown", Miss::reason);
        // No request reached a provider (every connection was refused): nothing was attempted
        // there, so there is no exhaustion to report (`totalAttempts` is at least 1).
        if self.count > 0 {
            emit(Signal::RetryExhausted {
                total: self.count,
                reason,
            });
        }
        let code = match &last {
            Some(Miss::Truncation) => ErrorCode::EnvelopeTruncationUnrecoverable,
            Some(Miss::Provider(_)) => ErrorCode::UpstreamUnavailable,
            _ => ErrorCode::EnvelopeInvalid,
        };
        let message = self.exhausted_message(last.as_ref());
        let cause = match last {
            Some(Miss::Parse(e) | Miss::Schema(e) | Miss::Provider(e)) => e,
            _ => reason.to_owned(),
        };
        End::Failed {
            code,
            message,
            cause,
        }
    }

    /// The public sentence of a call whose retries ran out: the reasons that happened, and
    /// for a provider failure what to check.
    fn exhausted_message(&self, last: Option<&Miss>) -> String {
        let advice = match last {
            Some(Miss::Provider(cause)) => Some(public_advice(cause)),
            _ => None,
        };
        match (self.reasons.as_slice(), advice) {
            (["truncation"], _) => "every attempt was truncated and retries ran out".into(),
            (
                ["parse-error" | "schema-violation"]
                | ["parse-error", "schema-violation"]
                | ["schema-violation", "parse-error"],
                _,
            ) => "no reply met the response schema and retries ran out".into(),
            ([_], Some(advice)) => format!("retries ran out: {advice}"),
            (reasons, advice) => {
                let mut m = format!("retries ran out after {}", reasons.join(", "));
                if let Some(advice) = advice {
                    m.push_str("; last: ");
                    m.push_str(&advice);
                }
                m
            }
        }
    }
}
