//! The host's retry loop as a pure state machine, apart from its I/O (no async, no journal, no
//! provider): [`RetryLoop::next`] gives the next request, [`RetryLoop::observe`] takes the
//! provider's answer to it, classifies it (`classify.rs`: the reply guard's limits and the schema
//! come in through [`ReplyChecks`], pure functions) and says whether the call goes on or how it
//! ended. [`super::call`] drives it and does the I/O.
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
//! provider and was answered with an error status is an attempt (`attempts.count`, the
//! `maxAttempts` cap) that generated nothing, so it has no usage to withhold (`usageComplete`
//! stays true). A connection that never reached the provider (refused, DNS, TLS) is not a provider
//! request (§A.1): it does not count against `maxAttempts` and takes no number; the same request
//! is tried again under the same number. Such connections have a bound of their own, as many as
//! the cap allows requests, so a dead server cannot keep a call looping.

mod classify;
mod ending;
mod types;

pub(crate) use types::{
    Accepted, Attempt, Backoff, End, Miss, ReplyChecks, Rules, Signal, Unmetered,
};

use crate::provider::class::{FailureClass, public_advice};
use crate::provider::{ProviderError, ProviderReply};
use classify::{Verdict, classify};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use wop_sdk::budget::AttemptPlan;
use wop_sdk::wire::{ErrorCode, Message, StructuredOutputMode};

/// One call's retry loop.
pub(crate) struct RetryLoop {
    plan: AttemptPlan,
    /// Requests before the fallback (the cap, or the cap less one when the fallback is on).
    ordinary: u32,
    structured: bool,
    rules: Rules,
    schema: Option<Arc<Value>>,
    backoff: Backoff,
    /// Shared with the call's request and each provider request: neither the loop nor a
    /// request costs a copy of them (a corrective note or the fallback makes a new list).
    messages: Arc<[Message]>,
    budget: u32,
    /// Provider requests numbered so far (the one in flight included): what the cap bounds. A
    /// connection that never reached the provider gives its number back.
    sent: u32,
    /// Connections that never reached the provider: bounded by the cap, apart from `sent`.
    unreached: u32,
    /// Requests that reached the provider: `attempts.count`.
    count: u32,
    transient_errors: u32,
    /// HTTP 429 answers resent below the loop for the request in flight.
    resends: u8,
    delay: Duration,
    in_fallback: bool,
    usage_complete: bool,
    output_tokens: u64,
    generations: u32,
    last_miss: Option<Miss>,
    /// The reasons of the misses so far, each once, in the order they first happened.
    reasons: Vec<&'static str>,
    last_text: String,
    jitter: u64,
    /// How the schema is conveyed in the request in flight.
    mode: Option<StructuredOutputMode>,
}

impl RetryLoop {
    /// A loop for a call of `messages` under `plan` and the host's `rules`; `jitter` seeds the
    /// backoff's jitter.
    pub(crate) fn new(
        plan: AttemptPlan,
        schema: Option<Arc<Value>>,
        messages: impl Into<Arc<[Message]>>,
        rules: Rules,
        backoff: Backoff,
        jitter: u64,
    ) -> Self {
        let structured = schema.is_some();
        let fallback = structured && rules.fallback && plan.requests >= 2;
        Self {
            ordinary: if fallback {
                plan.requests - 1
            } else {
                plan.requests
            },
            budget: plan.first_max_tokens,
            plan,
            structured,
            rules,
            schema,
            backoff,
            messages: messages.into(),
            sent: 0,
            unreached: 0,
            count: 0,
            transient_errors: 0,
            resends: 0,
            delay: Duration::ZERO,
            in_fallback: false,
            usage_complete: true,
            output_tokens: 0,
            generations: 0,
            last_miss: None,
            reasons: Vec::new(),
            last_text: String::new(),
            jitter: jitter | 1,
            mode: None,
        }
    }

    /// The messages of the next request (the call's own, plus corrective notes, or the
    /// fallback's conversion prompt).
    pub(crate) fn messages(&self) -> &Arc<[Message]> {
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
            self.messages = Arc::new([Message::user(format!(
                "Convert the following text into JSON that matches this JSON Schema. Reply with \
                 the JSON only.\nSchema: {schema}\nText: {}",
                self.last_text
            ))]);
        }
        self.sent += 1;
        let mode = if !self.structured {
            None
        } else if self.in_fallback || !self.rules.native {
            Some(StructuredOutputMode::Prompt)
        } else {
            Some(StructuredOutputMode::Native)
        };
        self.mode = mode;
        Attempt {
            number: self.sent,
            max_tokens: self.budget,
            mode,
            fallback: self.in_fallback,
            delay: std::mem::take(&mut self.delay),
        }
    }

    /// Takes the provider's answer to the request [`RetryLoop::next`] gave: `None` means send the
    /// next one, `Some` is how the call ended. A reply's usage is counted here, whatever the reply
    /// is worth; its `provider.usage`, a truncation and a refusal are announced through `emit`.
    pub(crate) fn observe(
        &mut self,
        answer: Result<ProviderReply, ProviderError>,
        checks: &mut impl ReplyChecks,
        emit: &mut impl FnMut(Signal),
    ) -> Option<End> {
        if self.resend_rate_limited(&answer) {
            return None;
        }
        match &answer {
            Ok(reply) => {
                // A reply: an attempt, and a generation the user is charged for.
                self.count += 1;
                self.generations += 1;
                match reply.usage.and_then(|u| u.output_tokens) {
                    Some(n) => self.output_tokens += n,
                    None => self.usage_complete = false,
                }
                emit(Signal::of_reply(reply, self.sent));
            }
            Err(ProviderError::Failed(_) | ProviderError::Transient { reached: true, .. }) => {
                emit(Signal::Unmetered {
                    model: None,
                    attempt: self.sent,
                    input_tokens: None,
                    output_tokens: None,
                    why: Unmetered::ErrorStatus,
                });
            }
            Err(_) => {}
        }
        let miss = match classify(answer, self.mode, checks, emit) {
            Verdict::Accepted(accepted) => return Some(End::Completed(accepted)),
            Verdict::NoAnswer(cause) => return Some(End::Ambiguous(cause)),
            Verdict::Refused(text) => {
                return Some(End::Failed {
                    code: ErrorCode::EnvelopeRefusal,
                    message: "the provider refused the request".into(),
                    cause: format!("refusal: {text}"),
                });
            }
            Verdict::Unusable(cause) => {
                return Some(End::Failed {
                    code: ErrorCode::UpstreamUnavailable,
                    message: "the provider's reply cannot be used".into(),
                    cause,
                });
            }
            Verdict::ProviderError {
                transient,
                reached,
                retry_after,
                cause,
            } => {
                if reached {
                    // An attempt answered with an error: it generated nothing, so there is no
                    // usage it withheld (RFC 0248 §A.2 is about replies).
                    self.count += 1;
                } else {
                    // Not a provider request (§A.1): its number is given back, and the same
                    // request is tried again, within a bound of its own.
                    self.sent -= 1;
                    self.unreached += 1;
                    let reason = Miss::Provider(String::new()).reason();
                    if !self.reasons.contains(&reason) {
                        self.reasons.push(reason);
                    }
                    self.last_miss = Some(Miss::Provider(cause.clone()));
                    if self.unreached >= self.plan.requests {
                        return Some(self.unreachable(emit));
                    }
                    self.transient_errors += 1;
                    self.delay = self.backoff_delay(retry_after);
                    return None;
                }
                if !transient {
                    return Some(End::Failed {
                        code: ErrorCode::UpstreamUnavailable,
                        message: public_advice(&cause),
                        cause,
                    });
                }
                self.transient_errors += 1;
                self.delay = self.backoff_delay(retry_after);
                Miss::Provider(cause)
            }
            Verdict::Missed(miss, text) => {
                if !matches!(miss, Miss::Truncation) {
                    self.last_text = text;
                }
                miss
            }
        };
        let reason = miss.reason();
        if !self.reasons.contains(&reason) {
            self.reasons.push(reason);
        }
        // Only a reply with text to convert goes on to the fallback; a truncation or a provider
        // error retries within the ordinary requests.
        // On a host whose fallback takes prose only, a reply that looks like JSON ends the call
        // at the ordinary requests.
        let to_fallback = !self.rules.prose_only || is_prose(&self.last_text);
        let limit = match miss {
            Miss::Parse(_) | Miss::Schema(_) if to_fallback => self.plan.requests,
            Miss::Parse(_) | Miss::Schema(_) => self.ordinary,
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
                    let note = Message::user(format!(
                        "Your reply did not match the required JSON Schema: {detail}. Reply \
                         again with JSON only, matching the schema."
                    ));
                    let then = [Message::assistant(previous), note];
                    self.messages = self.messages.iter().cloned().chain(then).collect();
                }
                Miss::Provider(_) => {}
            }
        }
        self.last_miss = Some(miss);
        None
    }

    /// Whether `answer` is an HTTP 429 the host resends below its loop (openwop-app's
    /// `fetchWith429Retry`): then the same request goes again under the same number, after the
    /// server's `Retry-After` or 1 s, 2 s, … (up to the backoff's maximum), and it is neither an
    /// attempt nor charged. Any other answer ends the request's resends.
    fn resend_rate_limited(&mut self, answer: &Result<ProviderReply, ProviderError>) -> bool {
        let retry_after = match answer {
            Err(
                e @ ProviderError::Transient {
                    reached: true,
                    retry_after,
                    ..
                },
            ) if e.class() == FailureClass::Status(429) => *retry_after,
            _ => {
                self.resends = 0;
                return false;
            }
        };
        if self.resends >= self.rules.rate_limit_resends {
            self.resends = 0;
            return false;
        }
        self.resends += 1;
        self.sent -= 1;
        let doubling =
            Duration::from_secs(1).saturating_mul(1u32 << u32::from(self.resends - 1).min(16));
        self.delay = retry_after.unwrap_or(doubling).min(self.backoff.max);
        true
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

    /// Provider requests numbered (what the journal announced).
    #[cfg(test)]
    pub(crate) fn sent(&self) -> u32 {
        self.sent
    }

    /// Connections that never reached the provider.
    #[cfg(test)]
    pub(crate) fn unreached(&self) -> u32 {
        self.unreached
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

/// Whether `text` is prose to the fallback of a host that converts prose only: it does not
/// start (after white space, within its first 16 characters) with `{`, `[` or a code fence.
fn is_prose(text: &str) -> bool {
    let head: String = text.trim_start().chars().take(16).collect();
    !head.is_empty() && !head.starts_with('{') && !head.starts_with('[') && !head.starts_with("```")
}

#[cfg(test)]
mod properties;
#[cfg(test)]
pub(super) mod tests;
