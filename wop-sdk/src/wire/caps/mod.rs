//! The parts of the host capability document (`/.well-known/openwop`) this SDK reads and writes.
//!
//! v2: the document names the protocol versions it serves (`protocolVersions`,
//! `preferredVersion`), and every family is a record with `status`, `since` and `witness` whose
//! presence advertises it. v1 says `{"supported": true}` inside records and
//! `aiProviders.supported: [...]` for the providers, and short reliability event names
//! (`retry-exhausted`). Both are read; v2 is written.
//!
//! RFC 0248 is newer than the published schema: `aiProviders.callAccounting` is read and
//! written although the schema's `aiProviders` record does not list it yet.

use super::error::WireError;
use super::read::{Obj, Side};
use serde::Serialize;
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use wop_sdk_rules::{grammar, sets};

/// The protocol version this SDK speaks.
pub const PROTOCOL_VERSION: &str = "2.0";

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
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Reliability {
    /// The host's ceiling on provider requests per call.
    pub max_retry_attempts: u8,
    /// Reliability events the host emits, by full v2 name (`envelope.retry-exhausted`, …).
    pub events: Vec<String>,
    /// Truncation handling (RFC 0033's envelope-completion contract).
    pub completion: EnvelopeCompletion,
}

/// `envelopes.reliability.completion`: the host's attestation of RFC 0033's envelope-completion
/// contract, that is whether it tells a truncated reply from a schema violation and how much it
/// grows `maxTokens` when it retries a truncation. It describes the host, not a model's answer
/// (that is [`crate::Completion`]).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvelopeCompletion {
    /// The host tells a truncation from other failures.
    pub distinguishes_truncation: bool,
    /// `maxTokens` is multiplied by this on a truncation retry: a number in 1..=8 (`1.5` is
    /// valid).
    #[serde(serialize_with = "whole_as_integer")]
    pub truncation_budget_multiplier: f64,
}

/// Writes `2.0` as `2` (the form hosts and the RFCs write), any other number as is.
fn whole_as_integer<S: serde::Serializer>(v: &f64, s: S) -> Result<S::Ok, S::Error> {
    if v.fract() == 0.0 && (0.0..=8.0).contains(v) {
        // A whole number in 0..=8 converts exactly.
        s.serialize_u64((1..=8u8).find(|n| f64::from(*n) == *v).map_or(0, u64::from))
    } else {
        s.serialize_f64(*v)
    }
}

/// What a family record says about the host's offer: `{status, since, until?, witness}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct FamilyRecord {
    /// `stable`, `experimental` or `deprecated`.
    pub status: String,
    /// The `<major>.<minor>` of this host's contract from which it serves the family.
    pub since: String,
    /// For an `experimental` or `deprecated` family: until when (`<major>.<minor>` or a date).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub until: Option<String>,
    /// How an outside party can check the claim (`witnessable-gated`, `claims-check`, …).
    pub witness: String,
}

impl FamilyRecord {
    /// A stable family served since `since`, checked as `witness` says.
    pub fn stable(since: &str, witness: &str) -> Self {
        Self {
            status: "stable".to_owned(),
            since: since.to_owned(),
            until: None,
            witness: witness.to_owned(),
        }
    }
}

/// How each family this SDK writes is witnessed (the declaration's own classification).
const FAMILY_WITNESS: &[(&str, &str)] = &[
    ("aiProviders", "witnessable-gated"),
    ("envelopes", "claims-check"),
    ("providerUsage", "witnessable-gated"),
    ("replay", "witnessable-gated"),
    ("limits", "witnessable-gated"),
];

/// `replay.effectSeamsManifest`: the one value v2 allows.
const EFFECT_SEAMS_MANIFEST: &str = "/host/effect-seams";

/// The capability document, normalized.
#[derive(Clone, Debug, PartialEq)]
pub struct CapabilityDocument {
    /// `protocolVersions`: every `<major>.<minor>` the host serves.
    pub protocol_versions: Vec<String>,
    /// `preferredVersion`, one of [`Self::protocol_versions`].
    pub preferred_version: String,
    /// The records read for each family, by family key. A family written without a record
    /// here gets a stable record since [`Self::preferred_version`].
    pub records: BTreeMap<String, FamilyRecord>,
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

impl Default for CapabilityDocument {
    /// A v2 document that advertises nothing.
    fn default() -> Self {
        Self {
            protocol_versions: vec![PROTOCOL_VERSION.to_owned()],
            preferred_version: PROTOCOL_VERSION.to_owned(),
            records: BTreeMap::new(),
            ai_providers: false,
            providers: Vec::new(),
            call_accounting: None,
            reliability: None,
            provider_usage: false,
            replay_modes: Vec::new(),
            schema_rounds: None,
        }
    }
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

/// The full v2 name of a reliability event: `retry-exhausted` (v1 short), `envelope.retry.exhausted`
/// and `envelope.retry-exhausted` all name `envelope.retry-exhausted`.
pub fn reliability_event_name(name: &str) -> String {
    let full = if name.starts_with("envelope.") {
        name.to_owned()
    } else {
        format!("envelope.{name}")
    };
    super::event::normalize_type(&full)
}

fn read_record(obj: &Obj<'_>) -> Result<Option<FamilyRecord>, WireError> {
    let (Some(status), Some(since), Some(witness)) = (
        obj.opt_str("status")?,
        obj.opt_str("since")?,
        obj.opt_str("witness")?,
    ) else {
        return Ok(None);
    };
    if !sets::FAMILY_STATUSES.contains(&status.as_str()) {
        return Err(obj.err(
            "status",
            format!(
                "must be one of {}",
                sets::quoted(sets::FAMILY_STATUSES.iter().copied())
            ),
        ));
    }
    if let Some(problem) = grammar::minor_version_problem(&since) {
        return Err(obj.err("since", problem));
    }
    if !sets::WITNESS_CLASSES.contains(&witness.as_str()) {
        return Err(obj.err(
            "witness",
            format!(
                "must be one of {}",
                sets::quoted(sets::WITNESS_CLASSES.iter().copied())
            ),
        ));
    }
    Ok(Some(FamilyRecord {
        status,
        since,
        until: obj.opt_str("until")?,
        witness,
    }))
}

impl CapabilityDocument {
    /// Reads a v1 or v2 document. A malformed part is a `protocol_error` naming the field.
    pub fn from_json(value: &Value) -> Result<Self, WireError> {
        let doc = Obj::new(value, "", Side::Host)?;
        let mut protocol_versions = doc.opt_str_list("protocolVersions")?.unwrap_or_default();
        for v in &protocol_versions {
            if let Some(problem) = grammar::minor_version_problem(v) {
                return Err(doc.err("protocolVersions", format!("`{v}`: {problem}")));
            }
        }
        // v1: `protocolVersion` alone.
        let preferred_version = match doc.get_any(&["preferredVersion", "protocolVersion"]) {
            Some((key, _)) => doc.opt_str(key)?.unwrap_or_default(),
            None => protocol_versions
                .last()
                .cloned()
                .unwrap_or_else(|| PROTOCOL_VERSION.to_owned()),
        };
        if protocol_versions.is_empty() {
            protocol_versions.push(preferred_version.clone());
        }
        let mut records = BTreeMap::new();
        for (family, witness) in FAMILY_WITNESS {
            if let Some(obj) = doc.child(family)?.filter(|_| advertised(doc.get(family)))
                && let Some(record) = read_record(&obj)?
                // The record this document would be written with anyway is not kept.
                && record != FamilyRecord::stable(&preferred_version, witness)
            {
                records.insert((*family).to_owned(), record);
            }
        }
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
            if advertised(ai.get("callAccounting"))
                && let Some(ca) = ai.child("callAccounting")?
            {
                call_accounting = Some(CallAccounting {
                    attempts: flag(&ca, "attempts")?,
                    retry_policy: flag(&ca, "retryPolicy")?,
                });
            }
        }
        let mut reliability = None;
        if let Some(env) = doc.child("envelopes")?
            && advertised(env.get("reliability"))
            && let Some(rel) = env.child("reliability")?
        {
            let completion = rel.child("completion")?;
            let (distinguishes_truncation, truncation_budget_multiplier) = match &completion {
                Some(c) => (
                    flag(c, "distinguishesTruncation")?,
                    c.opt_f64("truncationBudgetMultiplier", 1.0, 8.0)?
                        .unwrap_or(2.0),
                ),
                None => (false, 2.0),
            };
            reliability = Some(Reliability {
                max_retry_attempts: u8::try_from(
                    rel.opt_int("maxRetryAttempts", 1, 16)?.unwrap_or(3),
                )
                .unwrap_or(3),
                events: rel
                    .opt_str_list("events")?
                    .unwrap_or_default()
                    .iter()
                    .map(|e| reliability_event_name(e))
                    .collect(),
                completion: EnvelopeCompletion {
                    distinguishes_truncation,
                    truncation_budget_multiplier,
                },
            });
        }
        let replay_modes = match doc.child("replay")? {
            Some(r) if advertised(doc.get("replay")) => {
                r.opt_str_list("modes")?.unwrap_or_default()
            }
            _ => Vec::new(),
        };
        let schema_rounds = match doc.child("limits")? {
            Some(l) => l
                .opt_int("schemaRounds", 0, 64)?
                .map(|n| u32::try_from(n).unwrap_or(64)),
            None => None,
        };
        Ok(Self {
            protocol_versions,
            preferred_version,
            records,
            ai_providers,
            providers,
            call_accounting,
            reliability,
            provider_usage: advertised(doc.get("providerUsage")),
            replay_modes,
            schema_rounds,
        })
    }

    /// The family record `family` is written with.
    fn record(&self, family: &str) -> Map<String, Value> {
        let record = self.records.get(family).cloned().unwrap_or_else(|| {
            let witness = FAMILY_WITNESS
                .iter()
                .find(|(f, _)| *f == family)
                .map_or("claims-check", |(_, w)| *w);
            FamilyRecord::stable(&self.preferred_version, witness)
        });
        match serde_json::to_value(record) {
            Ok(Value::Object(map)) => map,
            _ => Map::new(),
        }
    }

    /// The v2 JSON of this document.
    pub fn to_json(&self) -> Value {
        let mut doc = Map::new();
        doc.insert("protocolVersions".into(), json!(self.protocol_versions));
        doc.insert("preferredVersion".into(), json!(self.preferred_version));
        if self.ai_providers {
            let mut ai = self.record("aiProviders");
            ai.insert("providers".into(), json!(self.providers));
            if let Some(ca) = self.call_accounting {
                ai.insert("callAccounting".into(), json!(ca));
            }
            doc.insert("aiProviders".into(), Value::Object(ai));
        }
        if let Some(rel) = &self.reliability {
            let mut env = self.record("envelopes");
            env.insert("reliability".into(), json!(rel));
            doc.insert("envelopes".into(), Value::Object(env));
        }
        if self.provider_usage {
            doc.insert(
                "providerUsage".into(),
                Value::Object(self.record("providerUsage")),
            );
        }
        if !self.replay_modes.is_empty() {
            let mut replay = self.record("replay");
            replay.insert("modes".into(), json!(self.replay_modes));
            replay.insert("effectSeamsManifest".into(), json!(EFFECT_SEAMS_MANIFEST));
            doc.insert("replay".into(), Value::Object(replay));
        }
        if let Some(rounds) = self.schema_rounds {
            let mut limits = self.record("limits");
            limits.insert("schemaRounds".into(), json!(rounds));
            // This host asks no clarification rounds and takes one envelope per call.
            limits.insert("clarificationRounds".into(), json!(0));
            limits.insert("envelopesPerTurn".into(), json!(1));
            doc.insert("limits".into(), Value::Object(limits));
        }
        Value::Object(doc)
    }
}

#[cfg(test)]
mod tests;
