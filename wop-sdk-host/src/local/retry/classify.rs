//! What one provider answer is worth to the call, decided without I/O: accepted (with its output),
//! refused, unusable, a miss worth another request (truncation, parse error, schema violation),
//! a provider error, or no answer at all (the dispatch's outcome is unknown).

use super::types::{Accepted, Miss, ReplyChecks, Signal};
use crate::provider::{ProviderError, ProviderReply};
use std::time::Duration;
use wop_sdk::wire::{FinishReason, StructuredOutputMode};

/// The verdict on one answer.
#[derive(Debug)]
pub(super) enum Verdict {
    /// The reply meets the contract.
    Accepted(Accepted),
    /// The provider refused (the text is private).
    Refused(String),
    /// The reply cannot be used and must not be retried (a plain reply that is not UTF-8, or
    /// too large).
    Unusable(String),
    /// The reply missed; the text (at most 4 KiB) is kept for a corrective note or the fallback.
    Missed(Miss, String),
    /// The provider answered with an error.
    ProviderError {
        /// Worth another request.
        transient: bool,
        /// The request reached the provider (it is an attempt).
        reached: bool,
        /// The server's `Retry-After`.
        retry_after: Option<Duration>,
        /// Private.
        cause: String,
    },
    /// No answer: the dispatch's outcome is unknown.
    NoAnswer(String),
}

/// The text kept of a missed reply: at most 4 KiB of characters.
fn kept(text: &str) -> String {
    text.chars().take(4096).collect()
}

/// Classifies `answer`, the answer to a request sent in `mode` (`None`: a plain call).
/// A reply's usage, a truncation and a refusal are announced through `emit`.
pub(super) fn classify(
    answer: Result<ProviderReply, ProviderError>,
    mode: Option<StructuredOutputMode>,
    checks: &mut impl ReplyChecks,
    emit: &mut impl FnMut(Signal),
) -> Verdict {
    let mut reply = match answer {
        Err(ProviderError::NoAnswer(cause)) => return Verdict::NoAnswer(cause),
        Err(ProviderError::Failed(cause)) => {
            return Verdict::ProviderError {
                transient: false,
                reached: true,
                retry_after: None,
                cause,
            };
        }
        Err(ProviderError::Transient {
            message,
            retry_after,
            reached,
        }) => {
            return Verdict::ProviderError {
                transient: true,
                reached,
                retry_after,
                cause: message,
            };
        }
        Ok(reply) => reply,
    };
    // The answering model, for an event: copied only when one is emitted. The reply's usage was
    // announced by the loop before this.
    let model = |reply: &ProviderReply| reply.model.clone().unwrap_or_default();
    if reply.finish_reason == FinishReason::ContentFilter {
        emit(Signal::Refusal {
            model: model(&reply),
        });
        return Verdict::Refused(String::from_utf8_lossy(&reply.content).into_owned());
    }
    let Some(mode) = mode else {
        if let Some(cause) = checks.oversized(&reply) {
            return Verdict::Unusable(cause);
        }
        // The text moves out of the reply: nothing reads the reply's bytes after this.
        return match String::from_utf8(std::mem::take(&mut reply.content)) {
            Ok(content) => Verdict::Accepted(Accepted {
                data: None,
                content: Some(content),
                reply,
                mode: None,
            }),
            Err(_) => Verdict::Unusable("the provider's reply is not valid UTF-8".into()),
        };
    };
    if reply.finish_reason == FinishReason::Length {
        emit(Signal::Truncated {
            model: model(&reply),
            output_tokens: reply.usage.and_then(|u| u.output_tokens),
        });
        return Verdict::Missed(Miss::Truncation, String::new());
    }
    if let Some(cause) = checks.oversized(&reply) {
        return Verdict::Missed(Miss::Parse(cause), String::new());
    }
    let Ok(text) = std::str::from_utf8(&reply.content) else {
        let lossy = kept(&String::from_utf8_lossy(&reply.content));
        return Verdict::Missed(Miss::Parse("the reply is not valid UTF-8".into()), lossy);
    };
    let data = match checks.parse_json(text) {
        Ok(data) => data,
        Err(e) => return Verdict::Missed(Miss::Parse(e), kept(text)),
    };
    if let Err(e) = checks.validate(&data) {
        return Verdict::Missed(Miss::Schema(e), kept(text));
    }
    let mode = reply.mode.or(Some(mode));
    Verdict::Accepted(Accepted {
        data: Some(data),
        content: None,
        reply,
        mode,
    })
}
