//! Providers: what the local host calls to get a reply, behind [`Provider`]. A provider knows
//! nothing of the host: it takes one [`ProviderRequest`] and answers one [`ProviderReply`] or a
//! [`ProviderError`].
//!
//! - [`mock`]: the scripted provider (the conformance script), for tests and demos;
//! - [`openai`] (feature `openai`): an OpenAI-compatible Chat Completions server.

pub(crate) mod class;
mod layer;
pub mod mock;
#[cfg(feature = "openai")]
pub mod openai;

pub use class::FailureClass;
pub use layer::ProviderLayer;

/// How long a provider waits for an answer by default (the local host's `provider_timeout`):
/// 120 s, after which the dispatch's outcome is unknown.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(120);

/// The largest reply body a provider reads by default (the local host's `max_reply_bytes`):
/// 8 MiB.
pub const DEFAULT_MAX_REPLY_BYTES: usize = 8 << 20;

use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;
use wop_sdk::host::{BoxFuture, RunId};
use wop_sdk::wire::{FinishReason, Message, StructuredOutputMode, Usage};

/// One request the host sends to a provider.
#[derive(Clone, Debug, PartialEq)]
pub struct ProviderRequest {
    /// The run the call belongs to (a scripted provider serves a per-run script).
    pub run_id: RunId,
    /// The node instance (shared with the call's key, never copied).
    pub node_id: Arc<str>,
    /// The provider name (shared: the host holds it once).
    pub provider: Arc<str>,
    /// The model (shared: the host holds its default model once).
    pub model: Arc<str>,
    /// The system prompt.
    pub system_prompt: Option<String>,
    /// The messages, including any corrective note the host added.
    pub messages: Arc<[Message]>,
    /// The output budget of this request.
    pub max_tokens: u32,
    /// The sampling temperature the call asked for (`0..=2`), if any.
    pub temperature: Option<f64>,
    /// Where the model should stop, if the call gave stop sequences.
    pub stop_sequences: Option<Vec<String>>,
    /// The schema, for a structured request (shared with the call's request, never copied).
    pub response_schema: Option<Arc<Value>>,
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
/// accounting (see [`crate::local`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ProviderError {
    /// An answer that will not change on retry (a malformed request, a bad key, an unknown
    /// model): nothing was generated. The call fails.
    Failed(String),
    /// A transient answer (a rate limit, a server error, a refused connection): nothing was
    /// generated, and another request may succeed.
    Transient {
        /// What happened (private).
        message: String,
        /// The server's `Retry-After`, when it gave one.
        retry_after: Option<Duration>,
        /// Whether the request reached the provider (an answer came back): then it is an attempt
        /// under RFC 0248.
        reached: bool,
    },
    /// No complete answer came (a timeout, a connection closed mid-reply): whether anything was
    /// generated is unknown. The dispatch is ambiguous: never repeated, never charged.
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

    /// Whether a call that names provider `name` is this provider's to answer. The host refuses
    /// a call naming a provider it does not have (`validation_error` on `provider`, before any
    /// request), rather than sending it to another one. The default: `name` is this provider's.
    fn serves(&self, name: &str) -> bool {
        name == self.name()
    }

    /// Sends one request.
    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>>;

    /// Sends one request for a streamed call: each piece of text goes to `on_chunk` as it
    /// arrives, and the reply, whole, is returned at the end as [`Provider::generate`] returns
    /// it (its `content` is the chunks joined). An error after some chunks is the request's
    /// answer: the chunks were provisional.
    ///
    /// The default streams nothing until the reply is complete: one chunk, the whole reply.
    fn generate_stream<'a>(
        &'a self,
        request: ProviderRequest,
        on_chunk: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        Box::pin(async move {
            let reply = self.generate(request).await?;
            on_chunk(&String::from_utf8_lossy(&reply.content));
            Ok(reply)
        })
    }
}
