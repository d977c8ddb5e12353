//! One call through the local host: the retry loop of SPEC.md, accounting, events, charge.

use super::Inner;
use super::provider::{ProviderError, ProviderReply, ProviderRequest};
use crate::host::AttemptKey;
use crate::journal::{Charge, Outcome};
use crate::wire::{
    Attempts, CallAiRequest, CallAiResult, ErrorCode, ErrorEnvelope, FinishReason, Message,
    SemanticStatus, StructuredOutputMode, Usage, kind,
};
use serde_json::{Value, json};
use std::sync::Arc;

/// How a dispatched call ended, ready for the journal's terminal transaction.
pub(crate) struct Finished {
    pub(crate) outcome: Outcome,
    /// For a completed call, the result whose exact text `outcome` records.
    pub(crate) result: Option<Value>,
    pub(crate) charge: Option<Charge>,
    pub(crate) events: Vec<(String, Value)>,
}

/// Why an attempt did not produce an acceptable reply.
enum Miss {
    Truncation,
    Parse(String),
    Schema(String),
    ProviderError(String),
}

impl Miss {
    fn reason(&self) -> &'static str {
        match self {
            Self::Truncation => "truncation",
            Self::Parse(_) => "parse-error",
            Self::Schema(_) => "schema-violation",
            Self::ProviderError(_) => "provider-error",
        }
    }
}

struct Tally {
    count: u32,
    generations: u32,
    output_tokens: u64,
    usage_complete: bool,
}

pub(crate) struct Call<'a> {
    pub(crate) inner: &'a Inner,
    pub(crate) key: &'a AttemptKey,
    pub(crate) request: &'a CallAiRequest,
    pub(crate) attempt_id: &'a str,
    pub(crate) owner: &'a str,
    events: Vec<(String, Value)>,
    /// The response schema's compiled validator, looked up once per call.
    validator: Option<Arc<jsonschema::Validator>>,
}

/// The output budget of a call's first provider request.
pub(crate) fn first_budget(cfg: &super::LocalConfig, req: &CallAiRequest) -> u32 {
    req.max_tokens
        .unwrap_or(cfg.default_max_tokens)
        .min(cfg.provider_max_tokens)
}

fn fail(code: ErrorCode, message: &str, cause: String) -> (ErrorEnvelope, String, bool) {
    (ErrorEnvelope::new(code, message), cause, false)
}

impl<'a> Call<'a> {
    pub(crate) fn new(
        inner: &'a Inner,
        key: &'a AttemptKey,
        request: &'a CallAiRequest,
        attempt_id: &'a str,
        owner: &'a str,
    ) -> Self {
        Self {
            inner,
            key,
            request,
            attempt_id,
            owner,
            events: Vec::new(),
            validator: None,
        }
    }

    /// Validates a reply against the response schema (none: anything goes).
    fn validate(&mut self, data: &Value) -> Result<(), String> {
        let Some(schema) = self.request.response_schema.as_ref() else {
            return Ok(());
        };
        let validator = match &self.validator {
            Some(v) => Arc::clone(v),
            None => {
                let v = self.inner.validator(schema)?;
                self.validator = Some(Arc::clone(&v));
                v
            }
        };
        super::check(&validator, data)
    }

    fn emit(&mut self, kind: &str, mut payload: Value) {
        if let Value::Object(m) = &mut payload {
            m.insert("nodeId".into(), Value::String(self.key.node_id.clone()));
        }
        self.inner.observe(&self.key.run_id, kind, &payload);
        self.events.push((kind.to_owned(), payload));
    }

    /// Runs the loop. Each provider request is recorded in the journal before it is sent.
    pub(crate) async fn dispatch(mut self) -> Finished {
        let cfg = &self.inner.config;
        let req = self.request;
        let structured = req.response_schema.is_some();
        let retry = req.retry.unwrap_or_default();
        let ceiling = u32::from(cfg.max_retry_attempts);
        let cap = if structured {
            retry
                .max_attempts
                .map_or(ceiling, |m| u32::from(m).min(ceiling))
        } else {
            1
        };
        let grow = retry.grow_max_tokens.unwrap_or(true);
        let mut budget = first_budget(cfg, req);
        // With the fallback on, the last request the cap allows is kept for it.
        let fallback = structured && cfg.nl_fallback && cap >= 2;
        let normal_limit = if fallback { cap - 1 } else { cap };
        let mut messages = req.messages.clone();
        let mode = structured.then_some(if cfg.native_structured_output {
            StructuredOutputMode::Native
        } else {
            StructuredOutputMode::Prompt
        });
        let mut t = Tally {
            count: 0,
            generations: 0,
            output_tokens: 0,
            usage_complete: true,
        };
        let mut last_miss: Option<Miss>;
        let mut last_text = String::new();
        loop {
            let is_fallback = t.count == normal_limit;
            if is_fallback {
                self.emit(
                    kind::NL_TO_FORMAT_ENGAGED,
                    json!({"originalEnvelopeType": "structured", "fallbackCalls": 1}),
                );
                messages = vec![Message::user(format!(
                    "Convert the following text into JSON that matches this JSON Schema. Reply with the JSON only.\n\
                     Schema: {}\nText: {last_text}",
                    req.response_schema
                        .as_ref()
                        .map_or_else(String::new, Value::to_string)
                ))];
            }
            let this_mode = if is_fallback {
                Some(StructuredOutputMode::Prompt)
            } else {
                mode
            };
            let attempt = t.count + 1;
            let request = ProviderRequest {
                run_id: self.key.run_id.clone(),
                node_id: self.key.node_id.clone(),
                provider: req
                    .provider
                    .clone()
                    .unwrap_or_else(|| self.inner.provider.name().to_owned()),
                model: req
                    .model
                    .clone()
                    .unwrap_or_else(|| cfg.default_model.clone()),
                system_prompt: req.system_prompt.clone(),
                messages: messages.clone(),
                max_tokens: budget,
                response_schema: req.response_schema.clone(),
                mode: this_mode,
                attempt,
            };
            // Ceilings are enforced before dispatch: a refused request is not an attempt.
            let permit = match self.inner.admit(&self.key.run_id).await {
                Ok(p) => p,
                Err(e) => return self.end_failed(e, &t),
            };
            // Request 1 was recorded with the identity (`Journal::begin_first_request`).
            let recorded = if attempt == 1 {
                Ok(())
            } else {
                self.inner
                    .journal
                    .record_request(self.key, attempt, budget)
                    .await
            };
            if let Err(e) = recorded {
                drop(permit);
                return self.end_failed(
                    fail(
                        ErrorCode::UpstreamUnavailable,
                        "the host could not record the provider request",
                        e.to_string(),
                    ),
                    &t,
                );
            }
            t.count = attempt;
            let answer = self.inner.send(request).await;
            drop(permit);
            let reply = match answer {
                Err(ProviderError::NoAnswer(cause)) => {
                    // The dispatch outcome is unknown: terminal, never charged, never repeated.
                    return self.end_ambiguous(cause);
                }
                // Until the host's backoff lands (issue 16), a transient answer is retried
                // like a failed one, at once and within the cap.
                Err(
                    ProviderError::Failed(cause) | ProviderError::Transient { message: cause, .. },
                ) => {
                    t.usage_complete = false;
                    last_miss = Some(Miss::ProviderError(cause));
                    if t.count < normal_limit {
                        self.emit(
                            kind::RETRY_ATTEMPTED,
                            json!({"attempt": t.count + 1, "reason": "provider-error"}),
                        );
                        continue;
                    }
                    break;
                }
                Ok(r) => r,
            };
            t.generations += 1;
            self.account(&reply, &mut t);
            let reply_mode = reply.mode.or(this_mode);
            if reply.finish_reason == FinishReason::ContentFilter {
                let model = reply.model.clone().unwrap_or_default();
                self.emit(
                    kind::REFUSAL,
                    json!({"provider": self.inner.provider.name(), "model": model}),
                );
                let text = String::from_utf8_lossy(&reply.content).into_owned();
                return self.end_failed(
                    fail(
                        ErrorCode::EnvelopeRefusal,
                        "the provider refused the request",
                        format!("refusal: {text}"),
                    ),
                    &t,
                );
            }
            if !structured {
                let Ok(content) = String::from_utf8(reply.content.clone()) else {
                    return self.end_failed(
                        fail(
                            ErrorCode::UpstreamUnavailable,
                            "the provider's reply is not valid UTF-8",
                            "invalid UTF-8 reply".into(),
                        ),
                        &t,
                    );
                };
                let result = CallAiResult {
                    content: Some(content),
                    ..self.result_base(&reply, &t, None)
                };
                return self.end_completed(&result, &t);
            }
            if reply.finish_reason == FinishReason::Length {
                let out = reply.usage.and_then(|u| u.output_tokens);
                let model = reply.model.clone().unwrap_or_default();
                let mut p = json!({"provider": self.inner.provider.name(), "model": model, "stopReason": "length"});
                if let Some(o) = out {
                    p["outputTokenCount"] = json!(o);
                }
                self.emit(kind::TRUNCATED, p);
                last_miss = Some(Miss::Truncation);
                if t.count < normal_limit {
                    self.emit(
                        kind::RETRY_ATTEMPTED,
                        json!({"attempt": t.count + 1, "reason": "truncation"}),
                    );
                    if grow {
                        budget = budget
                            .saturating_mul(cfg.truncation_multiplier)
                            .min(cfg.provider_max_tokens);
                    }
                    // No schema-correction text on a truncation retry.
                    continue;
                }
                break;
            }
            let miss = match std::str::from_utf8(&reply.content) {
                Err(_) => Miss::Parse("the reply is not valid UTF-8".into()),
                Ok(text) => {
                    last_text = text.chars().take(4096).collect();
                    match self.inner.parse_json(text) {
                        Err(e) => Miss::Parse(e),
                        Ok(data) => match self.validate(&data) {
                            Ok(()) => {
                                let result = CallAiResult {
                                    data: Some(data),
                                    ..self.result_base(&reply, &t, reply_mode)
                                };
                                return self.end_completed(&result, &t);
                            }
                            Err(errors) => Miss::Schema(errors),
                        },
                    }
                }
            };
            let detail = match &miss {
                Miss::Parse(e) | Miss::Schema(e) => e.clone(),
                _ => String::new(),
            };
            let reason = miss.reason();
            last_miss = Some(miss);
            if is_fallback || t.count >= cap {
                break;
            }
            if t.count < normal_limit {
                self.emit(
                    kind::RETRY_ATTEMPTED,
                    json!({"attempt": t.count + 1, "reason": reason}),
                );
                let previous = String::from_utf8_lossy(&reply.content)
                    .chars()
                    .take(4096)
                    .collect::<String>();
                messages.push(Message::assistant(previous));
                messages.push(Message::user(format!(
                    "Your reply did not match the required JSON Schema: {detail}. Reply again with JSON only, matching the schema."
                )));
            }
            // Otherwise the loop goes on to the fallback (t.count == normal_limit < cap).
        }
        let (code, message) = match &last_miss {
            Some(Miss::Truncation) => (
                ErrorCode::EnvelopeTruncationUnrecoverable,
                "every attempt was truncated and retries ran out",
            ),
            Some(Miss::ProviderError(_)) => (
                ErrorCode::UpstreamUnavailable,
                "the provider failed and retries ran out",
            ),
            _ => (
                ErrorCode::EnvelopeInvalid,
                "no reply met the response schema and retries ran out",
            ),
        };
        let final_reason = last_miss.as_ref().map_or("unknown", Miss::reason);
        self.emit(
            kind::RETRY_EXHAUSTED,
            json!({"totalAttempts": t.count, "finalReason": final_reason}),
        );
        let cause = match last_miss {
            Some(Miss::Parse(e) | Miss::Schema(e) | Miss::ProviderError(e)) => e,
            _ => final_reason.to_owned(),
        };
        self.end_failed(fail(code, message, cause), &t)
    }

    fn account(&mut self, reply: &ProviderReply, t: &mut Tally) {
        match reply.usage.and_then(|u| u.output_tokens.map(|o| (u, o))) {
            Some((u, out)) => {
                t.output_tokens += out;
                let mut p = json!({
                    "provider": self.inner.provider.name(),
                    "model": reply.model.clone().unwrap_or_default(),
                    "inputTokens": u.input_tokens.unwrap_or(0),
                    "outputTokens": out,
                });
                if let Some(total) = u.total_tokens {
                    p["totalTokens"] = json!(total);
                }
                self.emit(kind::PROVIDER_USAGE, p);
            }
            None => t.usage_complete = false,
        }
    }

    fn result_base(
        &self,
        reply: &ProviderReply,
        t: &Tally,
        mode: Option<StructuredOutputMode>,
    ) -> CallAiResult {
        let attempts = self.inner.config.attempts.then_some(Attempts {
            count: t.count,
            output_tokens: Some(t.output_tokens),
            usage_complete: t.usage_complete,
            structured_output: if self.request.response_schema.is_some() {
                mode
            } else {
                None
            },
        });
        CallAiResult {
            data: None,
            content: None,
            usage: reply.usage.map(|u| Usage {
                total_tokens: u.total_tokens,
                ..u
            }),
            finish_reason: Some(reply.finish_reason),
            model: reply.model.clone(),
            attempt_id: Some(self.attempt_id.to_owned()),
            semantic_status: Some(SemanticStatus::Ok),
            attempts,
        }
    }

    fn charge(&self, t: &Tally) -> Option<Charge> {
        (t.generations > 0).then(|| Charge {
            beneficiaries: if self.request.beneficiary_user_ids.is_empty() {
                vec![self.owner.to_owned()]
            } else {
                self.request.beneficiary_user_ids.clone()
            },
            generations: t.generations,
            output_tokens: t.output_tokens,
        })
    }

    fn end_completed(self, result: &CallAiResult, t: &Tally) -> Finished {
        let charge = self.charge(t);
        let result = result.to_json();
        Finished {
            outcome: Outcome::Completed {
                result: result.to_string(),
            },
            result: Some(result),
            charge,
            events: self.events,
        }
    }

    fn end_failed(
        self,
        (public, cause, ambiguous): (ErrorEnvelope, String, bool),
        t: &Tally,
    ) -> Finished {
        let charge = if ambiguous { None } else { self.charge(t) };
        Finished {
            outcome: Outcome::Failed {
                public,
                private_cause: cause,
                ambiguous,
            },
            result: None,
            charge,
            events: self.events,
        }
    }

    fn end_ambiguous(self, cause: String) -> Finished {
        let t = Tally {
            count: 0,
            generations: 0,
            output_tokens: 0,
            usage_complete: false,
        };
        let public = ErrorEnvelope::new(
            ErrorCode::UpstreamUnavailable,
            "the outcome of the provider dispatch is unknown; the call is not repeated and not charged",
        );
        self.end_failed((public, format!("ambiguous dispatch: {cause}"), true), &t)
    }
}
