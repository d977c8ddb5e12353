//! What the retry machine takes and gives: the checks of a reply it is given, the next request,
//! what it announces, how a call ends, and why a request missed.

use crate::provider::ProviderReply;
use serde_json::Value;
use std::time::Duration;
use wop_sdk::wire::{ErrorCode, StructuredOutputMode, Usage};

/// The checks a reply goes through, pure (the host's reply guard and the call's schema): what
/// the machine needs of the host to judge a reply, without doing I/O itself.
pub(crate) trait ReplyChecks {
    /// Why the reply is too large to read, if it is.
    fn oversized(&self, reply: &ProviderReply) -> Option<String>;
    /// The reply's text as JSON, within the host's limits.
    fn parse_json(&self, text: &str) -> Result<Value, String>;
    /// Whether `data` meets the call's response schema.
    fn validate(&mut self, data: &Value) -> Result<(), String>;
}

/// An accepted reply and what the result takes from it.
#[derive(Debug)]
pub(crate) struct Accepted {
    /// The structured output.
    pub(crate) data: Option<Value>,
    /// The plain output.
    pub(crate) content: Option<String>,
    /// The reply itself (usage, finish reason, model).
    pub(crate) reply: ProviderReply,
    /// How the schema was conveyed (the reply's own word, else the request's).
    pub(crate) mode: Option<StructuredOutputMode>,
}

/// Why a request did not give an acceptable reply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Miss {
    /// The reply stopped at the output budget.
    Truncation,
    /// The reply is not JSON (or too large, too deep, not UTF-8).
    Parse(String),
    /// The reply does not meet the response schema.
    Schema(String),
    /// The provider answered with an error.
    Provider(String),
}

impl Miss {
    /// The reason as `envelope.retry-attempted` and `envelope.retry-exhausted` name it: a
    /// registered value, or this host's extension for a provider failure (the registry has
    /// none).
    pub(crate) fn reason(&self) -> &'static str {
        match self {
            Self::Truncation => "truncation",
            Self::Parse(_) => "parse-error",
            Self::Schema(_) => "schema-violation",
            Self::Provider(_) => wop_sdk::wire::PROVIDER_FAILURE_REASON,
        }
    }
}

/// The next provider request to send.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Attempt {
    /// 1 for the call's first request (counts every request sent, reached or not).
    pub(crate) number: u32,
    /// Its output budget.
    pub(crate) max_tokens: u32,
    /// How the schema is conveyed (`None` for a plain call).
    pub(crate) mode: Option<StructuredOutputMode>,
    /// The natural-language-to-JSON fallback.
    pub(crate) fallback: bool,
    /// Wait this long before sending (a transient provider error's backoff).
    pub(crate) delay: Duration,
}

/// Something the loop announces, for the run's events.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Signal {
    /// `envelope.retry-attempted`.
    RetryAttempted {
        /// The request about to be made (2..).
        attempt: u32,
        /// Why.
        reason: &'static str,
    },
    /// `envelope.retry-exhausted`.
    RetryExhausted {
        /// Provider requests made (`attempts.count`).
        total: u32,
        /// The last miss.
        reason: &'static str,
    },
    /// `envelope.nl-to-format-engaged`.
    FallbackEngaged,
    /// `provider.usage`: a reply reported its usage, output tokens included.
    Usage {
        /// The model that answered.
        model: String,
        /// What it reported.
        usage: Usage,
        /// Its output tokens.
        output_tokens: u64,
    },
    /// A provider request that reached the provider and whose usage is not wholly known (a reply
    /// that withheld it or left out its input tokens, or an error status): no `provider.usage`
    /// (its two figures are required, and nobody measured them), this host's
    /// `wop-sdk.provider-request` instead, so every provider request has one event.
    Unmetered {
        /// The model that answered, for a reply.
        model: Option<String>,
        /// The request's number.
        attempt: u32,
        /// Input tokens, when reported.
        input_tokens: Option<u64>,
        /// Output tokens, when reported.
        output_tokens: Option<u64>,
        /// Why the usage is not whole.
        why: Unmetered,
    },
    /// `envelope.truncated`: a structured reply stopped at its budget.
    Truncated {
        /// The model that answered.
        model: String,
        /// Its output tokens, when reported.
        output_tokens: Option<u64>,
    },
    /// `envelope.refusal`: the provider refused.
    Refusal {
        /// The model that answered.
        model: String,
    },
}

/// Why a provider request has no `provider.usage`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Unmetered {
    /// The reply reported no output tokens.
    Withheld,
    /// The reply reported its output tokens, not its input tokens.
    InputUnknown,
    /// The provider answered with an error status: nothing was generated.
    ErrorStatus,
}

impl Unmetered {
    /// The event's `usage` value.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Self::Withheld => "withheld",
            Self::InputUnknown => "input-tokens-unknown",
            Self::ErrorStatus => "error-status",
        }
    }
}

/// How the call ended.
#[derive(Debug)]
pub(crate) enum End {
    /// The reply that is the result.
    Completed(Accepted),
    /// No answer came: the dispatch's outcome is unknown (terminal, never charged, never
    /// repeated). The text is private.
    Ambiguous(String),
    /// A terminal failure: public code and sentence, private cause.
    Failed {
        code: ErrorCode,
        message: String,
        cause: String,
    },
}

/// How the host's loop spends requests: the parts of its settings the loop reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Rules {
    /// The natural-language fallback is on (its place, within the ceiling or after it, is in
    /// the call's plan).
    pub(crate) fallback: bool,
    /// The fallback only after a prose reply (one that does not start with `{`, `[` or a fence).
    pub(crate) prose_only: bool,
    /// The provider's own structured output is asked for.
    pub(crate) native: bool,
    /// HTTP 429 answers resent below the loop per request before one counts as an attempt.
    pub(crate) rate_limit_resends: u8,
}

impl Rules {
    /// The rules of a host with `config`.
    pub(crate) fn of(config: &crate::local::LocalConfig) -> Self {
        Self {
            fallback: config.nl_fallback,
            prose_only: config.fallback_for_prose_only,
            native: config.native_structured_output,
            rate_limit_resends: config.rate_limit_resends,
        }
    }
}

/// Backoff bounds for transient provider errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backoff {
    /// The first delay (doubled per transient error, with jitter).
    pub(crate) base: Duration,
    /// The longest delay, also the longest `Retry-After` honoured.
    pub(crate) max: Duration,
}

impl Signal {
    /// The usage signal of a reply to request `attempt`: `provider.usage` when the reply reported
    /// both token counts, else what it did report (never a number nobody measured).
    pub(crate) fn of_reply(reply: &ProviderReply, attempt: u32) -> Self {
        let model = reply.model.clone().unwrap_or_default();
        match reply.usage {
            Some(usage) if usage.input_tokens.is_some() && usage.output_tokens.is_some() => {
                Self::Usage {
                    model,
                    usage,
                    output_tokens: usage.output_tokens.unwrap_or_default(),
                }
            }
            usage => Self::Unmetered {
                model: Some(model),
                attempt,
                input_tokens: usage.and_then(|u| u.input_tokens),
                output_tokens: usage.and_then(|u| u.output_tokens),
                why: if usage.and_then(|u| u.output_tokens).is_some() {
                    Unmetered::InputUnknown
                } else {
                    Unmetered::Withheld
                },
            },
        }
    }
}
