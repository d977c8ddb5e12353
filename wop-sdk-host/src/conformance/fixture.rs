//! The fixture node `conformance.callai.echo-attempts` (RFC 0248 §Conformance).
//!
//! It makes ONE `ctx.callAI` call and writes the result's `attempts` to its output, so the suite
//! can compare what the host says the call cost with what the script (which the suite wrote) and
//! the `provider.usage` events say. The host's conformance mock serves the input's `script`
//! (the local host's [`crate::local::ScriptedProvider`] takes it from the node's input).
//!

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use wop_sdk::ai::{AiRequest, Text};
use wop_sdk::node::{NodeCtx, NodeError};
use wop_sdk::policy::RetryPolicy;
use wop_sdk::wop_node;

/// The fixture's type id.
pub const FIXTURE_TYPE_ID: &str = <EchoAttempts as wop_sdk::node::Node>::SPEC.type_id;

/// The fixture's input.
#[derive(Clone, Debug, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct EchoInput {
    /// The mock's script for this run: one reply per provider request (the host's mock reads
    /// it; the node does not).
    pub script: Value,
    /// Send a `responseSchema` (a structured call). Default `true`.
    #[serde(default)]
    pub schema: Option<bool>,
    /// The request's `maxTokens`; the host default when absent.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// A `retry` sent to the host as is, unvalidated, so that the host's own refusal of a
    /// malformed policy is what gets tested. On a streamed call it is read as a typed policy
    /// first (a malformed one fails the node before any call).
    #[serde(default)]
    pub retry: Option<Value>,
    /// Stream the call (`ctx.call_ai_stream`): fragments drained, the terminal result kept.
    /// Default `false`.
    #[serde(default)]
    pub stream: Option<bool>,
}

/// The fixture's output: the result's `attempts` as the host sent them (`null` from a host that
/// does not advertise `callAccounting.attempts`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EchoOutput {
    /// The call's `attempts`, or `null`.
    pub attempts: Option<Value>,
    /// Always `true`: the call completed.
    pub ok: bool,
}

const PROMPT: &str = "Reply with a JSON object (conformance fixture: the reply is scripted).";

/// The fixture node `conformance.callai.echo-attempts`, version 1.0.0 (the generated node type is
/// [`EchoAttempts`]).
#[wop_node(
    type_id = "conformance.callai.echo-attempts",
    version = "1.0.0",
    label = "Echo callAI attempts",
    description = "RFC 0248 conformance fixture: makes one ctx.callAI call served by the host's mock from the input's script, and outputs the result's `attempts`."
)]
pub async fn echo_attempts(ctx: &NodeCtx<'_>, input: EchoInput) -> Result<EchoOutput, NodeError> {
    let attempts = if input.schema.unwrap_or(true) {
        call::<Map<String, Value>>(ctx, &input).await?
    } else {
        call::<Text>(ctx, &input).await?
    };
    let attempts = attempts
        .map(serde_json::to_value)
        .transpose()
        .map_err(|e| NodeError::new(format!("`attempts` does not serialize: {e}")))?;
    Ok(EchoOutput { attempts, ok: true })
}

/// The fixture's one call, structured or plain, and the `attempts` its result carries.
async fn call<'run, T: wop_sdk::ai::Output>(
    ctx: &NodeCtx<'run>,
    input: &EchoInput,
) -> Result<Option<wop_sdk::wire::Attempts>, NodeError<'run>> {
    let mut request = AiRequest::<T>::prompt(PROMPT);
    if let Some(n) = input.max_tokens {
        request = request.max_tokens(n);
    }
    let completion = if input.stream.unwrap_or(false) {
        if let Some(raw) = &input.retry {
            let policy = RetryPolicy::from_json(raw)
                .map_err(|e| NodeError::new(format!("the input's `retry`: {e}")))?;
            request = request.retry(policy);
        }
        let mut stream = ctx.call_ai_stream(request);
        while stream.next().await.is_some() {}
        stream.finish().await?
    } else {
        match &input.retry {
            // Sent as is through the host's JSON edge, so the host's own refusal is what is
            // tested.
            Some(raw) => ctx.call_ai_with_raw_retry(request, raw.clone()).await?,
            None => ctx.call_ai(request).await?,
        }
    };
    Ok(ctx
        .capabilities()
        .attempts()
        .and_then(|p| completion.attempts(p)))
}
