//! Providers plug into the local host behind [`Provider`].

use crate::host::{BoxFuture, RunId};
use crate::wire::{FinishReason, Message, StructuredOutputMode, Usage, WireError};
use serde_json::Value;
use std::fmt;
use std::time::Duration;

/// One request the host sends to a provider.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderRequest {
    /// The run the call belongs to (a scripted provider serves a per-run script).
    pub run_id: RunId,
    /// The node instance.
    pub node_id: String,
    /// The provider name.
    pub provider: String,
    /// The model.
    pub model: String,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// The messages, including any corrective note the host added.
    pub messages: Vec<Message>,
    /// The output budget of this request.
    pub max_tokens: u32,
    /// The schema, for a structured request.
    pub response_schema: Option<Value>,
    /// How the schema is conveyed, for a structured request.
    pub mode: Option<StructuredOutputMode>,
    /// 1 for the call's first request.
    pub attempt: u32,
}

/// A provider's reply.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderReply {
    /// The raw text the model produced (JSON text for a structured request). Raw bytes: a
    /// provider may send invalid UTF-8.
    pub content: Vec<u8>,
    /// Why it stopped.
    pub finish_reason: FinishReason,
    /// Usage, when the provider reported it.
    pub usage: Option<Usage>,
    /// The structured-output mode the provider used (defaults to the request's).
    pub mode: Option<StructuredOutputMode>,
    /// The model that answered.
    pub model: Option<String>,
}

/// A provider's failure. The text is private: it reaches only the host's diagnostics.
///
/// A provider never retries by itself: the host's retry loop owns the cap, the backoff and the
/// counting.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderError {
    /// An answer that will not change on retry (400, 401, 403, 404, 422 ...): nothing generated.
    Failed(String),
    /// A transient answer (429, 500, 502, 503, 504, connection refused/reset before a reply):
    /// nothing generated; worth another request after `retry_after` (from `Retry-After`).
    Transient {
        /// What happened (private).
        message: String,
        /// How long the provider asked to wait, when it said.
        retry_after: Option<Duration>,
        /// The request reached the provider (an HTTP status came back).
        reached: bool,
    },
    /// No complete answer (timeout, connection closed mid-body): whether anything was generated
    /// is unknown.
    NoAnswer(String),
}

impl fmt::Display for ProviderError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Failed(m) => write!(f, "provider error: {m}"),
            Self::Transient {
                message,
                retry_after,
                ..
            } => {
                write!(f, "transient provider error: {message}")?;
                match retry_after {
                    Some(d) => write!(f, " (retry after {} ms)", d.as_millis()),
                    None => Ok(()),
                }
            }
            Self::NoAnswer(m) => write!(f, "no answer from the provider: {m}"),
        }
    }
}

/// A model provider behind the local host.
pub trait Provider: Send + Sync {
    /// The provider's name (advertised in `aiProviders.providers`).
    fn name(&self) -> &str;

    /// Sends one request.
    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>>;

    /// Called when a node of `run` starts with `input`. A scripted provider takes a `script`
    /// field of the input as that run's script (the conformance fixture's contract).
    /// Gives `run` its own script; `false` from a provider that does not serve scripts.
    fn install_script(&self, run: &RunId, script: super::Script) -> bool {
        let _ = (run, script);
        false
    }

    /// A malformed script is refused with a `validation_error` naming the field.
    fn prepare_run(&self, run: &RunId, input: &Value) -> Result<(), WireError> {
        let _ = (run, input);
        Ok(())
    }
}
