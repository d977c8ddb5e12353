//! The fixture node `conformance.callai.echo-attempts` (RFC 0248 §Conformance).
//!
//! It makes ONE `ctx.callAI` call and writes the result's `attempts` to its output, so the suite
//! can compare what the host says the call cost with what the script (which the suite wrote) and
//! the `provider.usage` events say. The host's conformance mock serves the input's `script`
//! (the local host's [`crate::local::ScriptedProvider`] takes it through `Provider::prepare_run`).
//!
//! Written as a hand implementation of [`Node`]; it will become a `#[wop_node]` once the macro
//! lands.

use crate::ai::{AiRequest, Text};
use crate::host::BoxFuture;
use crate::node::{Category, Node, NodeCtx, NodeError, NodeSpec, Role};
use crate::policy::RetryPolicy;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The fixture's type id.
pub const FIXTURE_TYPE_ID: &str = "conformance.callai.echo-attempts";

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
    /// malformed policy is what gets tested.
    #[serde(default)]
    pub retry: Option<Value>,
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

/// The fixture node `conformance.callai.echo-attempts`, version 1.0.0.
#[derive(Clone, Copy, Debug, Default)]
pub struct EchoAttempts;

const PROMPT: &str = "Reply with a JSON object (conformance fixture: the reply is scripted).";

impl Node for EchoAttempts {
    type Input = EchoInput;
    type Output = EchoOutput;
    const SPEC: NodeSpec = NodeSpec {
        type_id: FIXTURE_TYPE_ID,
        version: "1.0.0",
        category: Category::Chat,
        role: Role::SideEffect,
        label: Some("Echo callAI attempts"),
        description: Some(
            "RFC 0248 conformance fixture: makes one ctx.callAI call served by the host's mock \
             from the input's script, and outputs the result's `attempts`.",
        ),
        max_calls: None,
        retry: RetryPolicy::HOST_DEFAULT,
        requires: &[],
    };

    fn run<'a, 'run>(
        &'a self,
        ctx: &'a NodeCtx<'run>,
        input: Self::Input,
    ) -> BoxFuture<'a, Result<Self::Output, NodeError>> {
        Box::pin(async move {
            let proof = ctx.capabilities().attempts();
            let attempts = if input.schema.unwrap_or(true) {
                let mut request = AiRequest::<Map<String, Value>>::prompt(PROMPT);
                if let Some(n) = input.max_tokens {
                    request = request.max_tokens(n);
                }
                if let Some(raw) = input.retry {
                    request = request.raw_retry(raw);
                }
                let completion = ctx.call_ai(request).await?;
                proof.and_then(|p| completion.attempts(p))
            } else {
                let mut request = AiRequest::<Text>::prompt(PROMPT);
                if let Some(n) = input.max_tokens {
                    request = request.max_tokens(n);
                }
                if let Some(raw) = input.retry {
                    request = request.raw_retry(raw);
                }
                let completion = ctx.call_ai(request).await?;
                proof.and_then(|p| completion.attempts(p))
            };
            let attempts = attempts
                .map(serde_json::to_value)
                .transpose()
                .map_err(|e| NodeError::new(format!("`attempts` does not serialize: {e}")))?;
            Ok(EchoOutput { attempts, ok: true })
        })
    }
}
