//! One dispatched call through the local host: drives the retry machine ([`super::retry`]) with
//! its I/O — admission, the journal's record of each request, the provider behind the reply
//! guard, the call's events — and ends with the outcome, the charge and the events, ready for the
//! journal's terminal transaction. It is given the parts it uses ([`Parts`]), nothing more.

use super::config::LocalConfig;
use super::events::{CallEvents, Live};
use super::guard::ReplyGuard;
use super::retry::{Accepted, Backoff, End, ReplyChecks, RetryLoop, Rules};
use super::runs::Runs;
use super::schemas::{self, Schemas};
use crate::journal::{Charge, Journal, Outcome};
use crate::provider::{Provider, ProviderReply, ProviderRequest};
use serde_json::Value;
use std::sync::Arc;
use wop_sdk::budget::AttemptPlan;
use wop_sdk::host::{AttemptKey, StreamSink};
use wop_sdk::policy::RetryPolicy;
use wop_sdk::wire::{
    Attempts, CallAiRequest, CallAiResult, ErrorCode, ErrorEnvelope, Event, SemanticStatus,
};

/// How a dispatched call ended.
pub(crate) struct Finished {
    pub(crate) outcome: Outcome,
    /// For a completed call, the result whose exact text `outcome` records.
    pub(crate) result: Option<CallAiResult>,
    pub(crate) charge: Option<Charge>,
    pub(crate) events: Vec<Event>,
}

/// The texts this host names by default, held once and shared. The provider and model every
/// provider request names unless its call names others (the provider's is also the one its
/// calls' events name: `provider.usage` shares it); the owner and node id a run takes unless
/// its options name others (its record and its node's events share them).
pub(crate) struct Names {
    pub(crate) provider: Arc<str>,
    pub(crate) model: Arc<str>,
    pub(crate) owner: Arc<str>,
    /// `main`.
    pub(crate) node: Arc<str>,
}

/// The parts of the local host a dispatch uses.
#[derive(Clone, Copy)]
pub(crate) struct Parts<'a> {
    pub(crate) config: &'a LocalConfig,
    pub(crate) provider: &'a dyn Provider,
    pub(crate) journal: &'a dyn Journal,
    pub(crate) runs: &'a Runs,
    pub(crate) guard: &'a ReplyGuard,
    pub(crate) schemas: &'a Schemas,
    pub(crate) live: &'a Live,
    pub(crate) names: &'a Names,
    /// Seeds the backoff's jitter.
    pub(crate) seed: u64,
}

/// The checks of a reply on this host: the reply guard's limits, and the call's schema compiled
/// once per dispatch (from the host's cache) on the first reply that needs it.
struct Checks<'a> {
    guard: &'a ReplyGuard,
    /// openwop-app's lenient parse and schema check ([`super::lenient`]).
    lenient: bool,
    required_keys_only: bool,
    schemas: &'a Schemas,
    schema: Option<&'a Arc<Value>>,
    validator: Option<Arc<jsonschema::Validator>>,
}

impl ReplyChecks for Checks<'_> {
    fn oversized(&self, reply: &ProviderReply) -> Option<String> {
        self.guard.oversized(reply)
    }

    fn parse_json(&self, text: &str) -> Result<Value, String> {
        let direct = self.guard.parse_json(text);
        if direct.is_ok() || !self.lenient {
            return direct;
        }
        super::lenient::candidates(text)
            .skip(1)
            .find_map(|t| self.guard.parse_json(t).ok())
            .ok_or_else(|| direct.err().unwrap_or_default())
    }

    fn validate(&mut self, data: &Value) -> Result<(), String> {
        let Some(schema) = self.schema else {
            return Ok(());
        };
        if self.required_keys_only {
            return super::lenient::required_keys(data, schema);
        }
        let validator = match &self.validator {
            Some(v) => Arc::clone(v),
            None => {
                let v = self.schemas.validator(schema)?;
                self.validator = Some(Arc::clone(&v));
                v
            }
        };
        schemas::check(&validator, data)
    }
}

/// The plan of a call on this host: the host's ceiling, the call's policy when the host honours
/// it, the first budget.
pub(crate) fn plan(cfg: &LocalConfig, request: &CallAiRequest) -> AttemptPlan {
    let policy = request
        .retry
        .filter(|_| cfg.retry_policy)
        .map(RetryPolicy::from_wire);
    // On a host whose fallback comes after its ceiling, the fallback is one more request.
    let ceiling = if cfg.nl_fallback && cfg.fallback_after_ceiling {
        cfg.max_retry_attempts
            .saturating_add(wop_sdk::rules::retry::FALLBACK_AFTER_CEILING)
    } else {
        cfg.max_retry_attempts
    };
    AttemptPlan::new(
        request.is_structured(),
        ceiling,
        policy,
        request.max_tokens.unwrap_or(cfg.default_max_tokens),
        cfg.truncation_multiplier,
        Some(cfg.provider_max_tokens),
    )
}

pub(crate) struct Call<'a> {
    pub(crate) parts: Parts<'a>,
    pub(crate) key: &'a AttemptKey,
    pub(crate) request: &'a CallAiRequest,
    /// The call's attempt id: it moves into a completed call's result.
    pub(crate) attempt_id: String,
    pub(crate) plan: AttemptPlan,
    /// A streamed call: where its provisional items go.
    pub(crate) sink: Option<&'a StreamSink>,
}

impl Call<'_> {
    /// Runs the loop. Each provider request is recorded in the journal before it is sent (the
    /// first with the call's identity, by the caller).
    pub(crate) async fn dispatch(self) -> Finished {
        let parts = self.parts;
        let cfg = parts.config;
        let req = self.request;
        let mut events = CallEvents::new(
            parts.live,
            &self.key.run_id,
            &self.key.node_id,
            &parts.names.provider,
            self.key.call_index,
        );
        let mut l = RetryLoop::new(
            self.plan,
            req.response_schema.clone(),
            Arc::clone(&req.messages),
            Rules::of(cfg),
            Backoff {
                base: cfg.retry_backoff,
                max: cfg.max_retry_backoff,
            },
            parts.seed ^ u64::from(self.key.call_index).rotate_left(32),
        );
        let mut checks = Checks {
            guard: parts.guard,
            lenient: cfg.lenient_json,
            required_keys_only: cfg.required_keys_only,
            schemas: parts.schemas,
            schema: req.response_schema.as_ref(),
            validator: None,
        };
        loop {
            let attempt = l.next(&mut |s| events.signal(s));
            if attempt.number > 1
                && let Some(sink) = self.sink
            {
                // What was streamed so far belongs to a discarded attempt.
                sink.restart(attempt.number);
            }
            if !attempt.delay.is_zero() {
                // The operator's view (-v): how long, before which request.
                tracing::info!(
                    wait_ms = u64::try_from(attempt.delay.as_millis()).unwrap_or(u64::MAX),
                    request = attempt.number,
                    "waiting before the next provider request (Retry-After or backoff)"
                );
                tokio::time::sleep(attempt.delay).await;
            }
            // Ceilings are enforced before dispatch: a refused request is not an attempt.
            let permit = match parts.runs.admit(&self.key.run_id).await {
                Ok(p) => p,
                Err(r) => return self.end_failed(r.public, r.cause, &l, events),
            };
            if attempt.number > 1
                && let Err(e) = parts
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
                node_id: Arc::clone(&self.key.node_id),
                provider: req
                    .provider
                    .as_deref()
                    .map_or_else(|| Arc::clone(&parts.names.provider), Arc::from),
                model: req
                    .model
                    .as_deref()
                    .map_or_else(|| Arc::clone(&parts.names.model), Arc::from),
                system_prompt: req.system_prompt.clone(),
                messages: Arc::clone(l.messages()),
                max_tokens: attempt.max_tokens,
                temperature: req.temperature,
                stop_sequences: req.stop_sequences.clone(),
                response_schema: req.response_schema.clone(),
                mode: attempt.mode,
                attempt: attempt.number,
            };
            let answer = match self.sink {
                None => parts.guard.send(parts.provider, request).await,
                Some(sink) => {
                    let number = attempt.number;
                    let events = &mut events;
                    let mut forward = |chunk: &str| {
                        sink.fragment(chunk);
                        events.chunk(chunk, number);
                    };
                    parts
                        .guard
                        .send_stream(parts.provider, request, &mut forward)
                        .await
                }
            };
            drop(permit);
            let end = l.observe(answer, &mut checks, &mut |s| events.signal(s));
            match end {
                None => {}
                Some(End::Completed(accepted)) => return self.end_completed(accepted, &l, events),
                Some(End::Ambiguous(cause)) => return self.end_ambiguous(cause, events),
                Some(End::Failed {
                    code,
                    message,
                    cause,
                }) => return self.end_failed(ErrorEnvelope::new(code, message), cause, &l, events),
            }
        }
    }

    fn charge(&self, l: &RetryLoop) -> Option<Charge> {
        (l.generations() > 0).then(|| Charge {
            beneficiaries: if self.request.beneficiary_user_ids.is_empty() {
                self.parts.runs.owner(&self.key.run_id)
            } else {
                Arc::from(self.request.beneficiary_user_ids.as_slice())
            },
            generations: l.generations(),
            output_tokens: l.output_tokens(),
        })
    }

    fn end_completed(mut self, a: Accepted, l: &RetryLoop, mut events: CallEvents<'_>) -> Finished {
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
            attempt_id: Some(std::mem::take(&mut self.attempt_id)),
            semantic_status: Some(SemanticStatus::Ok),
            attempts: self.parts.config.attempts.then_some(Attempts {
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
        // The class of what happened (timed out, connection broken), then what it means.
        let public = ErrorEnvelope::new(
            ErrorCode::UpstreamUnavailable,
            format!(
                "{}; the request was sent and no answer came, so the provider may have received \
                 it: the outcome is unknown, the call is not repeated and not billed to the user",
                crate::provider::class::public_advice(&cause)
            ),
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
