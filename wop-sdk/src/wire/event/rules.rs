//! The v2 payload rules of the events: reading an event from its type and payload (v1 spellings
//! and the first payload shapes accepted, every broken rule a `protocol_error` naming the field)
//! and checking an event built in code before a journal keeps it.

use super::*;

impl Event {
    /// Reads an event from its type and payload, accepting v1 type names and the first payload
    /// shapes. A payload that breaks its rule is a `protocol_error` naming the field.
    pub fn from_parts(kind: &str, payload: &Value) -> Result<Self, WireError> {
        let kind = normalize_type(kind);
        let p = Obj::new(payload, "payload", Side::Host)?;
        let req_str = |key: &str| {
            p.opt_str(key)?
                .ok_or_else(|| p.err(key, "is required (a string)"))
        };
        let node_id = || {
            p.opt_shared_str("nodeId")?
                .ok_or_else(|| p.err("nodeId", "is required (a string)"))
        };
        let int = |key: &str, min: u64| {
            p.opt_int(key, min, u64::from(u32::MAX))
                .map(|n| n.and_then(|n| u32::try_from(n).ok()))
        };
        let reason = |key: &str| -> Result<String, WireError> {
            let r = req_str(key)?;
            // The first payloads named a provider failure `provider-error`: not a registered
            // value, so it becomes this host's extension.
            let r = if r == "provider-error" {
                PROVIDER_FAILURE_REASON.to_owned()
            } else {
                r
            };
            match grammar::envelope_reason_problem(&r, sets::ENVELOPE_FAILURE_REASONS) {
                None => Ok(r),
                Some(problem) => Err(p.err(key, problem)),
            }
        };
        Ok(match kind.as_str() {
            kind::PROVIDER_USAGE => Self::ProviderUsage(ProviderUsage {
                provider: p
                    .opt_shared_str("provider")?
                    .ok_or_else(|| p.err("provider", "is required (a string)"))?,
                model: req_str("model")?,
                input_tokens: p.opt_int("inputTokens", 0, u64::MAX)?.unwrap_or(0),
                output_tokens: p
                    .opt_int("outputTokens", 0, u64::MAX)?
                    .ok_or_else(|| p.err("outputTokens", "is required (an integer ≥ 0)"))?,
                total_tokens: p.opt_int("totalTokens", 0, u64::MAX)?,
                node_id: p.opt_shared_str("nodeId")?,
            }),
            kind::RETRY_ATTEMPTED => Self::RetryAttempted(RetryAttempted {
                node_id: node_id()?,
                attempt: int("attempt", 1)?
                    .filter(|a| *a <= 16)
                    .ok_or_else(|| p.err("attempt", "is required (an integer in 1..=16)"))?,
                reason: reason("reason")?,
                previous_error: p.opt_str("previousError")?,
            }),
            kind::RETRY_EXHAUSTED => Self::RetryExhausted(RetryExhausted {
                node_id: node_id()?,
                total_attempts: int("totalAttempts", 1)?
                    .ok_or_else(|| p.err("totalAttempts", "is required (an integer ≥ 1)"))?,
                final_reason: reason("finalReason")?,
                final_error: p.opt_str("finalError")?,
            }),
            kind::TRUNCATED => {
                let stop_reason = req_str("stopReason")?;
                if !sets::STOP_REASONS.contains(&stop_reason.as_str()) {
                    return Err(p.err(
                        "stopReason",
                        format!(
                            "must be one of {}",
                            sets::quoted(sets::STOP_REASONS.iter().copied())
                        ),
                    ));
                }
                Self::Truncated(Truncated {
                    node_id: node_id()?,
                    provider: req_str("provider")?,
                    model: req_str("model")?,
                    stop_reason,
                    output_token_count: p.opt_int("outputTokenCount", 0, u64::MAX)?,
                })
            }
            kind::REFUSAL => Self::Refusal(Refusal {
                node_id: node_id()?,
                provider: req_str("provider")?,
                model: req_str("model")?,
            }),
            kind::NL_TO_FORMAT_ENGAGED => Self::NlToFormatEngaged(NlToFormatEngaged {
                node_id: node_id()?,
                original_envelope_type: req_str("originalEnvelopeType")?,
                fallback_calls: int("fallbackCalls", 1)?,
            }),
            kind::NODE_STARTED => Self::NodeStarted(NodeStarted {
                node_id: node_id()?,
                type_id: req_str("typeId")?.into(),
                attempt: int("attempt", 0)?,
            }),
            kind::NODE_COMPLETED => {
                let outputs = match p.get_any(&["outputs", "output"]) {
                    Some(("outputs", Value::Object(ports))) => ports.clone(),
                    Some(("outputs", _)) => {
                        return Err(p.err("outputs", "must be an object of output ports"));
                    }
                    // v1 of this SDK: the node's whole output.
                    Some((_, output)) => NodeCompleted::ports(output.clone()),
                    None => Map::new(),
                };
                Self::NodeCompleted(NodeCompleted {
                    node_id: node_id()?,
                    outputs,
                    duration_ms: p.opt_int("durationMs", 0, u64::MAX)?,
                })
            }
            kind::NODE_FAILED => {
                let e = p
                    .child("error")?
                    .ok_or_else(|| p.err("error", "is required: `{code, message}`"))?;
                // v1 of this SDK wrote the error envelope: `{error, message, details}`.
                let code = match e.get_any(&["code", "error"]) {
                    Some((key, _)) => e.opt_str(key)?.unwrap_or_default(),
                    None => String::new(),
                };
                if code.is_empty() {
                    return Err(e.err("code", "is required (a non-empty string)"));
                }
                let message = e.opt_str("message")?.unwrap_or_default();
                if message.is_empty() {
                    return Err(e.err("message", "is required (a non-empty string)"));
                }
                Self::NodeFailed(NodeFailed {
                    node_id: node_id()?,
                    error: EventError {
                        code,
                        message,
                        details: e.get("details").cloned(),
                    },
                    attempts: int("attempts", 1)?,
                })
            }
            _ => Self::Other {
                kind,
                payload: payload.clone(),
            },
        })
    }

    /// Checks the rules of the v2 payload schema that the types do not hold: `attempt` in
    /// 1..=16, `totalAttempts` and `fallbackCalls` at least 1, the reasons' grammar, the
    /// truncation's `stopReason` set, a `node.failed` error with a code and a message. A journal
    /// refuses an event that breaks one (a `protocol_error` naming the field), whoever built it.
    pub fn check(&self) -> Result<(), WireError> {
        let field = |key: &str, rule: &str| WireError::protocol(format!("payload.{key}"), rule);
        let reason = |key: &str, r: &str| match grammar::envelope_reason_problem(
            r,
            sets::ENVELOPE_FAILURE_REASONS,
        ) {
            None => Ok(()),
            Some(problem) => Err(WireError::protocol(format!("payload.{key}"), problem)),
        };
        let node = |id: &str| {
            if id.is_empty() {
                Err(field("nodeId", "is required (a non-empty string)"))
            } else {
                Ok(())
            }
        };
        match self {
            Self::RetryAttempted(p) => {
                node(&p.node_id)?;
                if !(1..=16).contains(&p.attempt) {
                    return Err(field("attempt", "is required (an integer in 1..=16)"));
                }
                reason("reason", &p.reason)
            }
            Self::RetryExhausted(p) => {
                node(&p.node_id)?;
                if p.total_attempts == 0 {
                    return Err(field("totalAttempts", "is required (an integer ≥ 1)"));
                }
                reason("finalReason", &p.final_reason)
            }
            Self::Truncated(p) => {
                node(&p.node_id)?;
                if sets::STOP_REASONS.contains(&p.stop_reason.as_str()) {
                    Ok(())
                } else {
                    Err(WireError::protocol(
                        "payload.stopReason",
                        format!(
                            "must be one of {}",
                            sets::quoted(sets::STOP_REASONS.iter().copied())
                        ),
                    ))
                }
            }
            Self::NlToFormatEngaged(p) => {
                node(&p.node_id)?;
                if p.fallback_calls == Some(0) {
                    return Err(field("fallbackCalls", "must be an integer ≥ 1"));
                }
                Ok(())
            }
            Self::NodeFailed(p) => {
                node(&p.node_id)?;
                if p.error.code.is_empty() {
                    return Err(field("error.code", "is required (a non-empty string)"));
                }
                if p.error.message.is_empty() {
                    return Err(field("error.message", "is required (a non-empty string)"));
                }
                Ok(())
            }
            Self::Refusal(p) => node(&p.node_id),
            Self::NodeStarted(p) => node(&p.node_id),
            Self::NodeCompleted(p) => node(&p.node_id),
            Self::ProviderUsage(_) | Self::Other { .. } => Ok(()),
        }
    }
}
