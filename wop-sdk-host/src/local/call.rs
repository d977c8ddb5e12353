//! One dispatched call through the local host: drives the retry loop ([`super::retry`]) with its
//! I/O — admission, the journal's record of each request, the provider behind the reply guard,
//! classification of each reply, the call's events — and ends with the outcome, the charge and
//! the events, ready for the journal's terminal transaction.

use super::Inner;
use super::events::CallEvents;
use super::retry::{Backoff, End, Miss, Observed, RetryLoop};
use crate::journal::{Charge, Outcome};
use crate::provider::{ProviderError, ProviderReply, ProviderRequest};
use serde_json::Value;
use std::sync::Arc;
use wop_sdk::budget::AttemptPlan;
use wop_sdk::host::{AttemptKey, StreamSink};
use wop_sdk::policy::RetryPolicy;
use wop_sdk::wire::{
    Attempts, CallAiRequest, CallAiResult, ErrorCode, ErrorEnvelope, Event, FinishReason,
    SemanticStatus, StructuredOutputMode,
};

/// How a dispatched call ended.
pub(crate) struct Finished {
    pub(crate) outcome: Outcome,
    /// For a completed call, the result whose exact text `outcome` records.
    pub(crate) result: Option<CallAiResult>,
    pub(crate) charge: Option<Charge>,
    pub(crate) events: Vec<Event>,
}

/// What an accepted reply gives the result.
struct Accepted {
    data: Option<Value>,
    content: Option<String>,
    reply: ProviderReply,
    mode: Option<StructuredOutputMode>,
}

/// The plan of a call on this host: the host's ceiling, the call's policy when the host honours
/// it, the first budget.
pub(crate) fn plan(inner: &Inner, request: &CallAiRequest) -> AttemptPlan {
    let cfg = &inner.config;
    let policy = request
        .retry
        .filter(|_| cfg.retry_policy)
        .map(RetryPolicy::from_wire);
    AttemptPlan::new(
        request.is_structured(),
        cfg.max_retry_attempts,
        policy,
        request.max_tokens.unwrap_or(cfg.default_max_tokens),
        cfg.truncation_multiplier,
        Some(cfg.provider_max_tokens),
    )
}

pub(crate) struct Call<'a> {
    pub(crate) inner: &'a Inner,
    pub(crate) key: &'a AttemptKey,
    pub(crate) request: &'a CallAiRequest,
    pub(crate) attempt_id: &'a str,
    pub(crate) plan: AttemptPlan,
    /// A streamed call: where its provisional items go.
    pub(crate) sink: Option<&'a StreamSink>,
}

impl Call<'_> {
    /// Runs the loop. Each provider request is recorded in the journal before it is sent (the
    /// first with the call's identity, by the caller).
    pub(crate) async fn dispatch(self) -> Finished {
        let inner = self.inner;
        let cfg = &inner.config;
        let req = self.request;
        let provider_name = inner.provider.name();
        let mut events = CallEvents::new(
            &inner.live,
            &self.key.run_id,
            &self.key.node_id,
            provider_name,
            self.key.call_index,
        );
        let mut l = RetryLoop::new(
            self.plan,
            req.response_schema.clone(),
            req.messages.clone(),
            cfg.nl_fallback,
            cfg.native_structured_output,
            Backoff {
                base: cfg.retry_backoff,
                max: cfg.max_retry_backoff,
            },
            inner.seed ^ u64::from(self.key.call_index).rotate_left(32),
        );
        let mut validator = None;
        loop {
            let attempt = l.next(&mut |s| events.signal(s));
            if attempt.number > 1
                && let Some(sink) = self.sink
            {
                // What was streamed so far belongs to a discarded attempt.
                sink.restart(attempt.number);
            }
            if !attempt.delay.is_zero() {
                tokio::time::sleep(attempt.delay).await;
            }
            // Ceilings are enforced before dispatch: a refused request is not an attempt.
            let permit = match inner.runs.admit(&self.key.run_id).await {
                Ok(p) => p,
                Err(r) => return self.end_failed(r.public, r.cause, &l, events),
            };
            if attempt.number > 1
                && let Err(e) = inner
                    .journal
                    .record_request(self.key, attempt.number, attempt.max_tokens)
                    .await
            {
                let public = ErrorEnvelope::new(
                    ErrorCode::UpstreamUnavailable,
                    "the host could not record the provider request",
                );
                return self.end_failed(public, e.to_string(), &l, events);
            }
            let request = ProviderRequest {
                run_id: self.key.run_id.clone(),
                node_id: self.key.node_id.clone(),
                provider: req
                    .provider
                    .clone()
                    .unwrap_or_else(|| provider_name.to_owned()),
                model: req
                    .model
                    .clone()
                    .unwrap_or_else(|| cfg.default_model.clone()),
                system_prompt: req.system_prompt.clone(),
                messages: l.messages().to_vec(),
                max_tokens: attempt.max_tokens,
                temperature: req.temperature,
                stop_sequences: req.stop_sequences.clone(),
                response_schema: req.response_schema.clone(),
                mode: attempt.mode,
                attempt: attempt.number,
            };
            let answer = match self.sink {
                None => inner.guard.send(inner.provider.as_ref(), request).await,
                Some(sink) => {
                    let number = attempt.number;
                    let events = &mut events;
                    let mut forward = |chunk: &str| {
                        sink.fragment(chunk);
                        events.chunk(chunk, number);
                    };
                    let provider = inner.provider.as_ref();
                    inner
                        .guard
                        .send_stream(provider, request, &mut forward)
                        .await
                }
            };
            drop(permit);
            let mut accepted = None;
            let observed = match answer {
                // The dispatch outcome is unknown: terminal, never charged, never repeated.
                Err(ProviderError::NoAnswer(cause)) => return self.end_ambiguous(cause, events),
                Err(ProviderError::Failed(cause)) => Observed::ProviderError {
                    transient: false,
                    reached: true,
                    retry_after: None,
                    cause,
                },
                Err(ProviderError::Transient {
                    message,
                    retry_after,
                    reached,
                }) => Observed::ProviderError {
                    transient: true,
                    reached,
                    retry_after,
                    cause: message,
                },
                Ok(reply) => {
                    let output = reply.usage.and_then(|u| u.output_tokens);
                    l.usage(output);
                    let model = reply.model.clone().unwrap_or_default();
                    if let (Some(usage), Some(out)) = (reply.usage, output) {
                        events.usage(&model, &usage, out);
                    }
                    self.classify(
                        reply,
                        attempt.mode,
                        &model,
                        &mut events,
                        &mut validator,
                        &mut accepted,
                    )
                }
            };
            if let Some(end) = l.observe(observed, &mut |s| events.signal(s)) {
                return match (end, accepted) {
                    (End::Completed, Some(a)) => self.end_completed(a, &l, events),
                    (End::Completed, None) => self.end_failed(
                        ErrorEnvelope::new(ErrorCode::UpstreamUnavailable, "no reply was accepted"),
                        "retry loop completed without an accepted reply".into(),
                        &l,
                        events,
                    ),
                    (
                        End::Failed {
                            code,
                            message,
                            cause,
                        },
                        _,
                    ) => self.end_failed(ErrorEnvelope::new(code, message), cause, &l, events),
                };
            }
        }
    }

    /// Judges a reply: a refusal, an unusable or missed reply, or the accepted output.
    fn classify(
        &self,
        reply: ProviderReply,
        mode: Option<StructuredOutputMode>,
        model: &str,
        events: &mut CallEvents<'_>,
        validator: &mut Option<Arc<jsonschema::Validator>>,
        accepted: &mut Option<Accepted>,
    ) -> Observed {
        let guard = &self.inner.guard;
        if reply.finish_reason == FinishReason::ContentFilter {
            events.refusal(model);
            return Observed::Refused(String::from_utf8_lossy(&reply.content).into_owned());
        }
        let Some(schema) = &self.request.response_schema else {
            if let Some(cause) = guard.oversized(&reply) {
                return Observed::Unusable(cause);
            }
            return match String::from_utf8(reply.content.clone()) {
                Ok(content) => {
                    *accepted = Some(Accepted {
                        data: None,
                        content: Some(content),
                        reply,
                        mode: None,
                    });
                    Observed::Accepted
                }
                Err(_) => Observed::Unusable("the provider's reply is not valid UTF-8".into()),
            };
        };
        if reply.finish_reason == FinishReason::Length {
            events.truncated(model, reply.usage.and_then(|u| u.output_tokens));
            return Observed::Missed(Miss::Truncation, String::new());
        }
        if let Some(cause) = guard.oversized(&reply) {
            return Observed::Missed(Miss::Parse(cause), String::new());
        }
        let text = match std::str::from_utf8(&reply.content) {
            Ok(text) => text,
            Err(_) => {
                let lossy: String = String::from_utf8_lossy(&reply.content)
                    .chars()
                    .take(4096)
                    .collect();
                return Observed::Missed(Miss::Parse("the reply is not valid UTF-8".into()), lossy);
            }
        };
        let kept = || text.chars().take(4096).collect::<String>();
        let data = match guard.parse_json(text) {
            Ok(data) => data,
            Err(e) => return Observed::Missed(Miss::Parse(e), kept()),
        };
        let checked = match validator {
            Some(v) => super::schemas::check(v, &data),
            None => match self.inner.schemas.validator(schema) {
                Ok(v) => {
                    let r = super::schemas::check(&v, &data);
                    *validator = Some(v);
                    r
                }
                Err(e) => Err(e),
            },
        };
        match checked {
            Err(e) => Observed::Missed(Miss::Schema(e), kept()),
            Ok(()) => {
                let mode = reply.mode.or(mode);
                *accepted = Some(Accepted {
                    data: Some(data),
                    content: None,
                    reply,
                    mode,
                });
                Observed::Accepted
            }
        }
    }

    fn charge(&self, l: &RetryLoop) -> Option<Charge> {
        (l.generations() > 0).then(|| Charge {
            beneficiaries: if self.request.beneficiary_user_ids.is_empty() {
                vec![self.inner.runs.owner(&self.key.run_id)]
            } else {
                self.request.beneficiary_user_ids.clone()
            },
            generations: l.generations(),
            output_tokens: l.output_tokens(),
        })
    }

    fn end_completed(self, a: Accepted, l: &RetryLoop, mut events: CallEvents<'_>) -> Finished {
        if self.sink.is_some() {
            events.last_chunk(Some((a.reply.finish_reason, a.reply.model.as_deref())));
        }
        let structured = self.request.is_structured();
        let result = CallAiResult {
            data: a.data,
            content: a.content,
            usage: a.reply.usage,
            finish_reason: Some(a.reply.finish_reason),
            model: a.reply.model,
            attempt_id: Some(self.attempt_id.to_owned()),
            semantic_status: Some(SemanticStatus::Ok),
            attempts: self.inner.config.attempts.then_some(Attempts {
                count: l.count(),
                output_tokens: Some(l.output_tokens()),
                usage_complete: l.usage_complete(),
                structured_output: if structured { a.mode } else { None },
            }),
        };
        // The exact text a redelivery or a replay reproduces: written once, here.
        let text = result.to_text();
        Finished {
            outcome: Outcome::Completed { result: text },
            charge: self.charge(l),
            result: Some(result),
            events: events.buffer,
        }
    }

    fn end_failed(
        self,
        public: ErrorEnvelope,
        cause: String,
        l: &RetryLoop,
        mut events: CallEvents<'_>,
    ) -> Finished {
        if self.sink.is_some() {
            events.last_chunk(None);
        }
        Finished {
            outcome: Outcome::Failed {
                public,
                private_cause: cause,
                ambiguous: false,
            },
            result: None,
            charge: self.charge(l),
            events: events.buffer,
        }
    }

    fn end_ambiguous(self, cause: String, mut events: CallEvents<'_>) -> Finished {
        if self.sink.is_some() {
            events.last_chunk(None);
        }
        let public = ErrorEnvelope::new(
            ErrorCode::UpstreamUnavailable,
            "the outcome of the provider dispatch is unknown; the call is not repeated and not charged",
        );
        Finished {
            outcome: Outcome::Failed {
                public,
                private_cause: format!("ambiguous dispatch: {cause}"),
                ambiguous: true,
            },
            result: None,
            charge: None,
            events: events.buffer,
        }
    }
}
