//! The answer of `ctx.callAI` read straight into a [`CallAiResult`], for the common answer: a
//! result whose every field the host wrote in its plain form.
//!
//! [`CallAiResult::from_json`] reads a JSON value and names the field of every broken rule; it
//! stays the definition. [`result_of`] takes the fast road only for an answer it reads exactly as
//! `from_json` does (the same keys, a v2 key before its v1 alias, `null` as absent, unknown keys
//! ignored); for anything else (an error answer, an integer written `3.0`, a key given twice, a
//! value of the wrong type, an unknown `finishReason`) it answers `None` and the caller reads
//! the value the slow way, which gives the same result or the named error. The rules between
//! fields are [`CallAiResult::check`]'s, which the caller runs on either result. Tested against
//! `from_json` over generated answers in `host/equivalence.rs`.

use serde::Deserialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::Value;
use std::fmt;
use std::marker::PhantomData;
use wop_sdk::wire::{
    Attempts, CallAiResult, FinishReason, SemanticStatus, StructuredOutputMode, Usage,
};

/// A `T` read from a JSON object only (a derived struct also reads an array, which `from_json`
/// refuses).
struct Object<T>(T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Map<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for Map<T> {
            type Value = T;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON object")
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(MapAccessDeserializer::new(map))
            }
        }
        d.deserialize_map(Map(PhantomData)).map(Object)
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Answer<'a> {
    #[serde(borrow)]
    result: Object<Fast<'a>>,
}

/// The closed sets (`finishReason`, …) are read borrowed: one written with an escape is read
/// the slow way.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Fast<'a> {
    data: Option<Value>,
    content: Option<String>,
    usage: Option<Object<FastUsage>>,
    finish_reason: Option<&'a str>,
    model: Option<String>,
    attempt_id: Option<String>,
    semantic_status: Option<&'a str>,
    #[serde(borrow)]
    attempts: Option<Object<FastAttempts<'a>>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FastUsage {
    input_tokens: Option<u64>,
    prompt_tokens: Option<u64>,
    output_tokens: Option<u64>,
    completion_tokens: Option<u64>,
    total_tokens: Option<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct FastAttempts<'a> {
    count: Option<u64>,
    output_tokens: Option<u64>,
    usage_complete: Option<bool>,
    structured_output: Option<&'a str>,
}

/// The result of an answer `{"result": {...}}` (JSON text, as `index.mjs` writes it), its shape
/// read as [`CallAiResult::from_json`] reads it, its rules not checked; `None` when the answer
/// is anything else or needs `from_json` to say what is wrong with it.
pub(super) fn result_of(answer: &str) -> Option<CallAiResult> {
    let Object(Answer { result: Object(f) }) = serde_json::from_str(answer).ok()?;
    let finish_reason = match f.finish_reason {
        None => None,
        Some(s) => Some(FinishReason::parse(s)?),
    };
    let semantic_status = match f.semantic_status {
        None => None,
        Some(s) => Some(SemanticStatus::parse(s)?),
    };
    let usage = f.usage.map(|Object(u)| Usage {
        // `from_json` reads the v2 key when present, else the v1 alias.
        input_tokens: u.input_tokens.or(u.prompt_tokens),
        output_tokens: u.output_tokens.or(u.completion_tokens),
        total_tokens: u.total_tokens,
    });
    let attempts = match f.attempts {
        None => None,
        Some(Object(a)) => Some(Attempts {
            count: u32::try_from(a.count?).ok()?,
            output_tokens: a.output_tokens,
            usage_complete: a.usage_complete?,
            structured_output: match a.structured_output {
                None => None,
                Some(mode) => Some(StructuredOutputMode::parse(mode)?),
            },
        }),
    };
    Some(CallAiResult {
        data: f.data.filter(|d| !d.is_null()),
        content: f.content,
        usage,
        finish_reason,
        model: f.model,
        attempt_id: f.attempt_id,
        semantic_status,
        attempts,
    })
}
