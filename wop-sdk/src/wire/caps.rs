//! The parts of the host capability document (`/.well-known/openwop`) this SDK reads.
//!
//! v2 advertises a family or facet by the presence of its key; v1 says `{"supported": true}` inside
//! records and `aiProviders.supported: [...]` for the providers. Both are read; v2 is written.

use super::error::WireError;
use super::read::{Obj, Side};
use serde::Serialize;
use serde_json::{Map, Value, json};

/// RFC 0248 §C: `aiProviders.callAccounting`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CallAccounting {
    /// Results carry `attempts`.
    pub attempts: bool,
    /// The host honours a per-call `retry`.
    pub retry_policy: bool,
}

/// `envelopes.reliability`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reliability {
    /// The host's ceiling on provider requests per call.
    pub max_retry_attempts: u8,
    /// Reliability events the host emits (`retry-exhausted`, `refusal`, …).
    pub events: Vec<String>,
    /// Truncation handling.
    pub completion: Completion,
}

/// `envelopes.reliability.completion`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Completion {
    /// The host tells a truncation from other failures.
    pub distinguishes_truncation: bool,
    /// `maxTokens` is multiplied by this on a truncation retry.
    pub truncation_budget_multiplier: u32,
}

/// The capability document, normalized.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CapabilityDocument {
    /// `aiProviders` is advertised.
    pub ai_providers: bool,
    /// `aiProviders.providers` (v1: `aiProviders.supported`).
    pub providers: Vec<String>,
    /// `aiProviders.callAccounting`, when advertised.
    pub call_accounting: Option<CallAccounting>,
    /// `envelopes.reliability`, when advertised.
    pub reliability: Option<Reliability>,
    /// `providerUsage` is advertised (`provider.usage` events).
    pub provider_usage: bool,
    /// `replay.modes`.
    pub replay_modes: Vec<String>,
    /// `limits.schemaRounds`.
    pub schema_rounds: Option<u32>,
}

/// A v1 or v2 "is this advertised" value: v2 presence, `true`, or v1 `{"supported": true}`.
fn advertised(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null | Value::Bool(false)) => false,
        Some(Value::Object(map)) => !matches!(map.get("supported"), Some(Value::Bool(false))),
        Some(_) => true,
    }
}

fn flag(obj: &Obj<'_>, key: &str) -> Result<bool, WireError> {
    match obj.get(key) {
        None => Ok(false),
        Some(Value::Bool(b)) => Ok(*b),
        Some(Value::Object(map)) => match map.get("supported") {
            Some(Value::Bool(b)) => Ok(*b),
            _ => Err(obj.err(key, "must be a boolean (or v1 `{\"supported\": bool}`)")),
        },
        Some(_) => Err(obj.err(key, "must be a boolean")),
    }
}

impl CapabilityDocument {
    /// Reads a v1 or v2 document. A malformed part is a `protocol_error` naming the field.
    pub fn from_json(value: &Value) -> Result<Self, WireError> {
        let doc = Obj::new(value, "", Side::Host)?;
        let ai = doc.get("aiProviders");
        let ai_providers = advertised(ai);
        let (mut providers, mut call_accounting) = (Vec::new(), None);
        if let Some(ai) = doc.child("aiProviders")?.filter(|_| ai_providers) {
            if let Some((key, _)) = ai.get_any(&["providers", "supported"]) {
                // v1 `supported` is either a list of providers or the `{"supported": true}` flag.
                if !(key == "supported" && ai.get(key).is_some_and(Value::is_boolean)) {
                    providers = ai.opt_str_list(key)?.unwrap_or_default();
                }
            }
            if advertised(ai.get("callAccounting")) {
                let ca = ai.child("callAccounting")?;
                if let Some(ca) = ca {
                    call_accounting = Some(CallAccounting {
                        attempts: flag(&ca, "attempts")?,
                        retry_policy: flag(&ca, "retryPolicy")?,
                    });
                }
            }
        }
        let mut reliability = None;
        if let Some(env) = doc.child("envelopes")?
            && advertised(env.get("reliability"))
            && let Some(rel) = env.child("reliability")?
        {
            {
                {
                    let completion = rel.child("completion")?;
                    let (distinguishes_truncation, truncation_budget_multiplier) = match &completion
                    {
                        Some(c) => (
                            flag(c, "distinguishesTruncation")?,
                            c.opt_int("truncationBudgetMultiplier", 1, 64)?.unwrap_or(2),
                        ),
                        None => (false, 2),
                    };
                    reliability = Some(Reliability {
                        max_retry_attempts: u8::try_from(
                            rel.opt_int("maxRetryAttempts", 1, 16)?.unwrap_or(3),
                        )
                        .unwrap_or(3),
                        events: rel
                            .opt_str_list("events")?
                            .unwrap_or_default()
                            .into_iter()
                            .map(|e| e.replace('.', "-"))
                            .collect(),
                        completion: Completion {
                            distinguishes_truncation,
                            truncation_budget_multiplier: u32::try_from(
                                truncation_budget_multiplier,
                            )
                            .unwrap_or(2),
                        },
                    });
                }
            }
        }
        let replay_modes = match doc.child("replay")? {
            Some(r) if advertised(doc.get("replay")) => {
                r.opt_str_list("modes")?.unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let schema_rounds = match doc.child("limits")? {
            Some(l) => l
                .opt_int("schemaRounds", 1, 64)?
                .map(|n| u32::try_from(n).unwrap_or(64)),
            None => None,
        };
        Ok(Self {
            ai_providers,
            providers,
            call_accounting,
            reliability,
            provider_usage: advertised(doc.get("providerUsage")),
            replay_modes,
            schema_rounds,
        })
    }

    /// The v2 JSON of this document.
    pub fn to_json(&self) -> Value {
        let mut doc = Map::new();
        if self.ai_providers {
            let mut ai = Map::new();
            ai.insert("providers".into(), json!(self.providers));
            if let Some(ca) = self.call_accounting {
                ai.insert("callAccounting".into(), json!(ca));
            }
            doc.insert("aiProviders".into(), Value::Object(ai));
        }
        if let Some(rel) = &self.reliability {
            doc.insert("envelopes".into(), json!({ "reliability": rel }));
        }
        if self.provider_usage {
            doc.insert("providerUsage".into(), json!({}));
        }
        if !self.replay_modes.is_empty() {
            doc.insert("replay".into(), json!({ "modes": self.replay_modes }));
        }
        if let Some(rounds) = self.schema_rounds {
            doc.insert("limits".into(), json!({ "schemaRounds": rounds }));
        }
        Value::Object(doc)
    }
}
