//! The host's retry loop as a pure state machine (next request / observe reply), apart from its
//! I/O: no async, no journal, no provider. [`super::call`] drives it.
//!
//! For a structured call, per reply, in this order (SPEC.md, RFC 0032/0033/0248):
//! 1. a refusal is never retried: the call fails `envelope_refusal`;
//! 2. a truncation is retried with the budget multiplied (capped at the provider maximum) unless
//!    the call's policy says `growMaxTokens: false`; no corrective text is added;
//! 3. unparsable JSON or a schema violation is retried at the same budget with a corrective note;
//! 4. after the last ordinary request, one natural-language-to-JSON fallback may take the last
//!    request the cap allows.
//!
//! Provider errors: a transient one (rate limit, server error, connection refused) is retried
//! after a backoff (the server's `Retry-After` when it gave one, else exponential with jitter);
//! a permanent one ends the call. RFC 0248 accounting of them: a request that reached the
//! provider is an attempt (`attempts.count`, the `maxAttempts` cap) that reported no usage, so
//! `usageComplete` is false; one that never reached it (connection refused) is not an attempt
//! (§A.1) but still uses up the cap, so a dead server cannot keep a call looping.

use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use wop_sdk::budget::AttemptPlan;
use wop_sdk::wire::{ErrorCode, Message, StructuredOutputMode};

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

/// What the driver saw of one request, classified.
#[derive(Debug)]
pub(crate) enum Observed {
    /// The reply meets the contract.
    Accepted,
    /// The provider refused (the text is private).
    Refused(String),
    /// The reply cannot be used and must not be retried (a plain reply that is not UTF-8).
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
}

/// How the call ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum End {
    /// The last observed reply is the result.
    Completed,
    /// A terminal failure: public code and sentence, private cause.
    Failed {
        code: ErrorCode,
        message: &'static str,
        cause: String,
    },
}

/// Backoff bounds for transient provider errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Backoff {
    /// The first delay (doubled per transient error, with jitter).
    pub(crate) base: Duration,
    /// The longest delay, also the longest `Retry-After` honoured.
    pub(crate) max: Duration,
}

/// One call's retry loop.
pub(crate) struct RetryLoop {
    plan: AttemptPlan,
    /// Requests before the fallback (the cap, or the cap less one when the fallback is on).
    ordinary: u32,
    structured: bool,
    native: bool,
    schema: Option<Arc<Value>>,
    backoff: Backoff,
    messages: Vec<Message>,
    budget: u32,
    /// Requests sent (reached or not): what the cap bounds.
    sent: u32,
    /// Requests that reached the provider: `attempts.count`.
    count: u32,
    transient_errors: u32,
    delay: Duration,
    in_fallback: bool,
    usage_complete: bool,
    output_tokens: u64,
    generations: u32,
    last_miss: Option<Miss>,
    last_text: String,
    jitter: u64,
}

impl RetryLoop {
    /// A loop for a call of `messages` under `plan`. `fallback`: the host's natural-language
    /// fallback is on; `native`: the provider's own structured output is asked for; `jitter`
    /// seeds the backoff's jitter.
    pub(crate) fn new(
        plan: AttemptPlan,
        schema: Option<Arc<Value>>,
        messages: Vec<Message>,
        fallback: bool,
        native: bool,
        backoff: Backoff,
        jitter: u64,
    ) -> Self {
        let structured = schema.is_some();
        let fallback = structured && fallback && plan.requests >= 2;
        Self {
            ordinary: if fallback {
                plan.requests - 1
            } else {
                plan.requests
            },
            budget: plan.first_max_tokens,
            plan,
            structured,
            native,
            schema,
            backoff,
            messages,
            sent: 0,
            count: 0,
            transient_errors: 0,
            delay: Duration::ZERO,
            in_fallback: false,
            usage_complete: true,
            output_tokens: 0,
            generations: 0,
            last_miss: None,
            last_text: String::new(),
            jitter: jitter | 1,
        }
    }

    /// The messages of the next request (the call's own, plus corrective notes, or the
    /// fallback's conversion prompt).
    pub(crate) fn messages(&self) -> &[Message] {
        &self.messages
    }

    /// The next request, announcing the fallback when it is engaged.
    pub(crate) fn next(&mut self, emit: &mut impl FnMut(Signal)) -> Attempt {
        let fallback = self.structured && self.sent == self.ordinary && !self.in_fallback;
        if fallback {
            self.in_fallback = true;
            emit(Signal::FallbackEngaged);
            let schema = self
                .schema
                .as_deref()
                .map_or_else(String::new, Value::to_string);
            self.messages = vec![Message::user(format!(
                "Convert the following text into JSON that matches this JSON Schema. Reply with \
                 the JSON only.\nSchema: {schema}\nText: {}",
                self.last_text
            ))];
        }
        self.sent += 1;
        let mode = if !self.structured {
            None
        } else if self.in_fallback || !self.native {
            Some(StructuredOutputMode::Prompt)
        } else {
            Some(StructuredOutputMode::Native)
        };
        Attempt {
            number: self.sent,
            max_tokens: self.budget,
            mode,
            fallback: self.in_fallback,
            delay: std::mem::take(&mut self.delay),
        }
    }

    /// A reply that reached the provider reported `output_tokens` (or nothing).
    pub(crate) fn usage(&mut self, output_tokens: Option<u64>) {
        self.count += 1;
        self.generations += 1;
        match output_tokens {
            Some(n) => self.output_tokens += n,
            None => self.usage_complete = false,
        }
    }

    /// Observes the outcome of the request [`RetryLoop::next`] gave: `None` means send the
    /// next one. A reply's usage is reported first with [`RetryLoop::usage`].
    pub(crate) fn observe(
        &mut self,
        observed: Observed,
        emit: &mut impl FnMut(Signal),
    ) -> Option<End> {
        let miss = match observed {
            Observed::Accepted => return Some(End::Completed),
            Observed::Refused(text) => {
                return Some(End::Failed {
                    code: ErrorCode::EnvelopeRefusal,
                    message: "the provider refused the request",
                    cause: format!("refusal: {text}"),
                });
            }
            Observed::Unusable(cause) => {
                return Some(End::Failed {
                    code: ErrorCode::UpstreamUnavailable,
                    message: "the provider's reply cannot be used",
                    cause,
                });
            }
            Observed::ProviderError {
                transient,
                reached,
                retry_after,
                cause,
            } => {
                if reached {
                    // An attempt that reported no usage (RFC 0248 §A.2).
                    self.count += 1;
                    self.usage_complete = false;
                }
                if !transient {
                    return Some(End::Failed {
                        code: ErrorCode::UpstreamUnavailable,
                        message: "the provider refused to serve the request",
                        cause,
                    });
                }
                self.transient_errors += 1;
                self.delay = self.backoff_delay(retry_after);
                Miss::Provider(cause)
            }
            Observed::Missed(miss, text) => {
                if !matches!(miss, Miss::Truncation) {
                    self.last_text = text;
                }
                miss
            }
        };
        let reason = miss.reason();
        // Only a reply with text to convert goes on to the fallback; a truncation or a provider
        // error retries within the ordinary requests.
        let limit = match miss {
            Miss::Parse(_) | Miss::Schema(_) => self.plan.requests,
            Miss::Truncation | Miss::Provider(_) => self.ordinary,
        };
        let can_retry = !self.in_fallback && self.sent < limit;
        if !can_retry {
            self.last_miss = Some(miss);
            return Some(self.exhausted(emit));
        }
        // The next request is the fallback when the ordinary ones are used up: no retry is
        // announced for it (the fallback is), and no corrective note is added.
        if self.sent < self.ordinary {
            emit(Signal::RetryAttempted {
                attempt: self.sent + 1,
                reason,
            });
            match &miss {
                Miss::Truncation => self.budget = self.plan.after_truncation(self.budget),
                Miss::Parse(detail) | Miss::Schema(detail) => {
                    let previous: String = self.last_text.chars().take(4096).collect();
                    self.messages.push(Message::assistant(previous));
                    self.messages.push(Message::user(format!(
                        "Your reply did not match the required JSON Schema: {detail}. Reply \
                         again with JSON only, matching the schema."
                    )));
                }
                Miss::Provider(_) => {}
            }
        }
        self.last_miss = Some(miss);
        None
    }

    fn exhausted(&mut self, emit: &mut impl FnMut(Signal)) -> End {
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
        let (code, message) = match &last {
            Some(Miss::Truncation) => (
                ErrorCode::EnvelopeTruncationUnrecoverable,
                "every attempt was truncated and retries ran out",
            ),
            Some(Miss::Provider(_)) => (
                ErrorCode::UpstreamUnavailable,
                "the provider failed and retries ran out",
            ),
            _ => (
                ErrorCode::EnvelopeInvalid,
                "no reply met the response schema and retries ran out",
            ),
        };
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

    /// The delay before the request after a transient error: the server's `Retry-After` (up to
    /// the maximum), else `base × 2^(n-1)` with "equal jitter" (half fixed, half random).
    fn backoff_delay(&mut self, retry_after: Option<Duration>) -> Duration {
        if let Some(after) = retry_after {
            return after.min(self.backoff.max);
        }
        let exp = self.transient_errors.saturating_sub(1).min(16);
        let full = self
            .backoff
            .base
            .saturating_mul(1 << exp)
            .min(self.backoff.max);
        // xorshift64: enough for jitter; deterministic for a given seed.
        self.jitter ^= self.jitter << 13;
        self.jitter ^= self.jitter >> 7;
        self.jitter ^= self.jitter << 17;
        let half = full / 2;
        let nanos = u64::try_from(half.as_nanos()).unwrap_or(u64::MAX);
        half + Duration::from_nanos(if nanos == 0 { 0 } else { self.jitter % nanos })
    }

    /// Provider requests that reached the provider (`attempts.count`).
    pub(crate) fn count(&self) -> u32 {
        self.count
    }

    /// Requests sent, reached or not (what the journal announced).
    #[cfg(test)]
    pub(crate) fn sent(&self) -> u32 {
        self.sent
    }

    /// Output tokens summed over the attempts that reported them.
    pub(crate) fn output_tokens(&self) -> u64 {
        self.output_tokens
    }

    /// Whether every attempt reported usage.
    pub(crate) fn usage_complete(&self) -> bool {
        self.usage_complete
    }

    /// Replies generated (charged).
    pub(crate) fn generations(&self) -> u32 {
        self.generations
    }
}

#[cfg(test)]
mod tests;
