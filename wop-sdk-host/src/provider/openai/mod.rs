//! An OpenAI-compatible Chat Completions provider (feature `openai`, on by default): the local
//! host against a real model, hosted (OpenAI) or local (llama.cpp, Ollama, vLLM, LM Studio).
//!
//! ```rust,no_run
//! use wop_sdk_host::provider::openai::{OpenAiConfig, OpenAiProvider};
//!
//! # async fn demo(node: &dyn wop_sdk::node::DynNode) -> Result<(), Box<dyn std::error::Error>> {
//! // OPENAI_BASE_URL (default https://api.openai.com/v1), OPENAI_API_KEY, OPENAI_MODEL
//! let provider = OpenAiProvider::new(OpenAiConfig::from_env()?)?;
//! let host = provider.local_host().build();
//! let outcome = host.run(node, serde_json::json!({"premise": "…"})).await;
//! # let _ = outcome; Ok(()) }
//! ```
//!
//! One [`Provider::generate`] is one HTTP request: `POST {base}/chat/completions`, HTTP/1.1 over
//! rustls (ring), no redirect followed, the body read up to the configured limit. How the request
//! is written is in [`request`](self#request), how the reply is read in [`reply`](self#reply),
//! and how a failure is classified in [`error`](self#errors).
//!
//! # Request
//!
//! The request's model, the system prompt then the messages, the budget as `max_tokens` or
//! `max_completion_tokens` ([`TokenLimitField`]). A structured request in `native` mode (the local
//! host's default, `LocalConfig::native_structured_output`) sends `response_format: {type:
//! "json_schema", json_schema: {name, schema, strict}}`; in `prompt` mode (for a server without
//! structured output: set `native_structured_output` to `false`) the schema goes in the system
//! message instead. The reply reports the mode that was asked for.
//!
//! # Reply
//!
//! `choices[0].message.content` is the content; a `message.refusal` is a refusal
//! (`content-filter`); `finish_reason` `stop`, `length`, `content_filter`, `tool_calls` map to
//! their OpenWOP names (anything else is `other`). A reply that gives no reason (`null`, which
//! OpenAI reads as "incomplete") is a truncation (`length`) when its output tokens reached the
//! budget sent, else `other`: the server's whole answer, its completeness unknown, never `stop`.
//! `usage.prompt_tokens` and `usage.completion_tokens` are the usage, and a reply without them reported none (so the call's
//! `usageComplete` is `false`). In `prompt` mode a reply wrapped in one code fence is unwrapped.
//!
//! # Streaming
//!
//! A streamed call ([`Provider::generate_stream`], used by the local host for
//! `NodeCtx::call_ai_stream`) sends the same request with `stream: true` and `stream_options:
//! {include_usage: true}` and reads the reply as server-sent events: each `delta.content` is
//! handed on at once as a fragment, `delta.refusal` pieces make a refusal (kept private, never a
//! fragment), the last choice's `finish_reason` is the finish reason, and the usage comes from the
//! final chunk when the server sends one (else the request reported no usage: `usageComplete`
//! is then `false`). A stream that breaks off before a finish reason or `data: [DONE]` is no
//! answer (`NoAnswer`: something was generated, how much is unknown); an `error` event is
//! `Transient` with `reached: true`. A server that ignores `stream` and answers with the whole
//! completion (not `text/event-stream`) is read as a plain reply, handed on as one chunk.
//! Statuses and connection errors are classified as for a plain request.
//!
//! # Errors
//!
//! The provider never retries: the local host's retry loop does. 408, 429 and 5xx are
//! [`ProviderError::Transient`] with the `Retry-After` wait (seconds or HTTP date; OpenAI's
//! `retry-after-ms` first) and `reached: true`; a connection that cannot be made is `Transient`
//! with `reached: false`; other statuses are [`ProviderError::Failed`]; a timeout, or a
//! connection broken after the request was sent (before or during the reply), is
//! [`ProviderError::NoAnswer`] (something may have been generated); a body over the limit or that
//! is not a chat completion is `Failed`. Error texts are private to the host's diagnostics and
//! never contain the API key.
//!
//! # Tracing
//!
//! Each request runs in a `wop.provider.request` span (level `INFO`) with the OpenTelemetry GenAI
//! attributes `gen_ai.system` (`openai`), `gen_ai.operation.name` (`chat`),
//! `gen_ai.request.model`, `gen_ai.request.max_tokens`, and once the reply is read
//! `gen_ai.response.model`, `gen_ai.response.finish_reasons` (the OpenAI spelling, one choice),
//! `gen_ai.usage.input_tokens`, `gen_ai.usage.output_tokens`; also `server.address`,
//! `http.response.status_code`, `error.type` (`transient`, `failed`, `no_answer`) and the
//! OpenWOP `wop.run_id`, `wop.node_id`, `wop.attempt`, `wop.structured_output`. Nothing the server
//! says, no prompt, no reply and no key is recorded on the span. A failed request also gives a
//! `WARN` event with `error.class` ([`FailureClass`](crate::provider::FailureClass)) and `cause`,
//! the private text (the status and the start of the server's error body, at most 512 bytes, the
//! key cut out): the operator's view, shown by the command line at `-v`. The library installs no
//! subscriber.

mod config;
mod error;
mod reply;
mod request;
mod span;
mod stream;

/// The request the module's tests start from: run `local/r`, node `main`, model `m`, 8 tokens,
/// no prompt, messages or sampling options; `schema` with `mode` for a structured one.
#[cfg(test)]
fn test_request(
    schema: Option<serde_json::Value>,
    mode: Option<wop_sdk::wire::StructuredOutputMode>,
) -> ProviderRequest {
    ProviderRequest {
        run_id: wop_sdk::host::RunId::new("local/r"),
        node_id: "main".into(),
        provider: "openai".into(),
        model: "m".into(),
        system_prompt: None,
        messages: std::sync::Arc::new([]),
        max_tokens: 8,
        temperature: None,
        stop_sequences: None,
        response_schema: schema.map(std::sync::Arc::new),
        mode,
        attempt: 1,
    }
}

pub use config::{
    ApiKey, DEFAULT_BASE_URL, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, OpenAiConfig,
    OpenAiConfigError, TokenLimitField,
};

use super::{Provider, ProviderError, ProviderReply, ProviderRequest};
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_LENGTH, CONTENT_TYPE, HeaderValue};
use reqwest::{Client, Response, Url};
use span::{request_span, trace_outcome};
use std::fmt;
use tracing::Instrument as _;
use wop_sdk::host::BoxFuture;

/// The OpenAI-compatible provider. Cheap to clone (the HTTP client and its connection pool are
/// shared).
#[derive(Clone)]
pub struct OpenAiProvider {
    config: OpenAiConfig,
    client: Client,
    endpoint: Url,
    authorization: Option<HeaderValue>,
}

impl fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OpenAiProvider")
            .field("config", &self.config)
            .field("endpoint", &self.endpoint.as_str())
            .finish_non_exhaustive()
    }
}

impl OpenAiProvider {
    /// The provider for `config`. Fails only when the key cannot be sent as a header value
    /// (`api_key`: a control character) or the HTTP client cannot start.
    pub fn new(config: OpenAiConfig) -> Result<Self, OpenAiConfigError> {
        let authorization = config
            .key()
            .map(|k| {
                let mut v =
                    HeaderValue::from_str(&format!("Bearer {}", k.expose())).map_err(|_| {
                        OpenAiConfigError {
                            field: "api_key".to_owned(),
                            message: "must be printable ASCII without line breaks (it is sent in \
                                  the `Authorization` header)"
                                .to_owned(),
                        }
                    })?;
                v.set_sensitive(true);
                Ok(v)
            })
            .transpose()?;
        let client = Client::builder()
            .use_rustls_tls()
            .timeout(config.request_timeout())
            .connect_timeout(config.connect_limit())
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| OpenAiConfigError {
                field: "http client".to_owned(),
                message: format!("cannot start: {e}"),
            })?;
        Ok(Self {
            endpoint: config.endpoint(),
            config,
            client,
            authorization,
        })
    }

    /// The configuration.
    pub fn config(&self) -> &OpenAiConfig {
        &self.config
    }

    /// Sends one request body and returns the response of a successful status; any other
    /// status is the provider's error (transient or not), its body's start kept privately.
    async fn post(
        &self,
        bytes: Vec<u8>,
        accept: &'static str,
        span: &tracing::Span,
    ) -> Result<reqwest::Response, ProviderError> {
        let key = self.config.key();
        let mut builder = self
            .client
            .post(self.endpoint.clone())
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, accept)
            .body(bytes);
        if let Some(auth) = &self.authorization {
            builder = builder.header(AUTHORIZATION, auth.clone());
        }
        let response = builder
            .send()
            .await
            .map_err(|e| error::transport(&e, key))?;
        let status = response.status();
        span.record("http.response.status_code", status.as_u16());
        if !status.is_success() {
            let headers = response.headers().clone();
            // The start of the error body, for the private text; a body that breaks off is
            // still an answer with this status.
            let excerpt = read_body(response, error::ERROR_BODY_KEPT)
                .await
                .unwrap_or_else(|(partial, _)| partial);
            return Err(error::status(status, &headers, &excerpt, key));
        }
        Ok(response)
    }

    async fn exchange(
        &self,
        request: &ProviderRequest,
        span: &tracing::Span,
    ) -> Result<ProviderReply, ProviderError> {
        let key = self.config.key();
        let bytes = serde_json::to_vec(&request::body(&self.config, request))
            .map_err(|e| ProviderError::Failed(format!("cannot write the request: {e}")))?;
        let response = self.post(bytes, "application/json", span).await?;
        let limit = self.config.reply_limit();
        let declared = response
            .headers()
            .get(CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(n) = declared.filter(|n| *n > limit as u64) {
            return Err(ProviderError::Failed(format!(
                "reply body of {n} bytes exceeds the {limit}-byte limit"
            )));
        }
        let body = match read_body(response, limit).await {
            Ok(body) if body.len() > limit => {
                return Err(ProviderError::Failed(format!(
                    "reply body exceeds the {limit}-byte limit"
                )));
            }
            Ok(body) => body,
            Err((read, e)) => return Err(error::body(&e, read.len(), key)),
        };
        reply::parse(&body, request)
    }

    /// One streamed request: `stream: true`, the reply read as server-sent events, each piece of
    /// text handed to `on_chunk` as it arrives (see [streaming](self#streaming)).
    async fn exchange_stream(
        &self,
        request: &ProviderRequest,
        span: &tracing::Span,
        on_chunk: &mut (dyn FnMut(&str) + Send),
    ) -> Result<ProviderReply, ProviderError> {
        let key = self.config.key();
        let body = stream::StreamBody {
            body: request::body(&self.config, request),
            stream: true,
            stream_options: stream::StreamOptions {
                include_usage: true,
            },
        };
        let bytes = serde_json::to_vec(&body)
            .map_err(|e| ProviderError::Failed(format!("cannot write the request: {e}")))?;
        let mut response = self.post(bytes, "text/event-stream", span).await?;
        let limit = self.config.reply_limit();
        let sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.trim_start().starts_with("text/event-stream"));
        if !sse {
            // A server that does not stream answered with the whole completion: one chunk.
            let body = match read_body(response, limit).await {
                Ok(body) if body.len() > limit => {
                    return Err(ProviderError::Failed(format!(
                        "reply body exceeds the {limit}-byte limit"
                    )));
                }
                Ok(body) => body,
                Err((read, e)) => return Err(error::body(&e, read.len(), key)),
            };
            let reply = reply::parse(&body, request)?;
            if reply.finish_reason != wop_sdk::wire::FinishReason::ContentFilter {
                on_chunk(&String::from_utf8_lossy(&reply.content));
            }
            return Ok(reply);
        }
        let mut events = stream::Events::default();
        let mut reply = stream::Reply::default();
        let mut read = 0usize;
        loop {
            match response.chunk().await {
                Ok(Some(bytes)) => {
                    read += bytes.len();
                    events.feed(&bytes, limit, &mut |data| {
                        reply.event(data, limit, &mut *on_chunk)
                    })?;
                    if reply.is_done() {
                        break;
                    }
                }
                // An event cut off before its blank line is not dispatched (the SSE rule).
                Ok(None) => break,
                Err(e) => return Err(error::body(&e, read, key)),
            }
        }
        reply.finish(request)
    }
}

/// Reads at most `limit + 1` bytes of `response` (one more than allowed tells an oversized body
/// without reading the rest). On a break (timeout, closed mid-body): what was read and why.
async fn read_body(
    mut response: Response,
    limit: usize,
) -> Result<Vec<u8>, (Vec<u8>, reqwest::Error)> {
    let mut body = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                let room = (limit + 1).saturating_sub(body.len());
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
                if body.len() > limit {
                    return Ok(body);
                }
            }
            Ok(None) => return Ok(body),
            Err(e) => return Err((body, e)),
        }
    }
}

impl Provider for OpenAiProvider {
    fn name(&self) -> &str {
        self.config.provider_name()
    }

    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        let span = request_span(self.endpoint.host_str().unwrap_or_default(), &request);
        Box::pin(
            async move {
                let span = tracing::Span::current();
                let result = self.exchange(&request, &span).await;
                trace_outcome(&span, &result);
                result
            }
            .instrument(span),
        )
    }

    fn generate_stream<'a>(
        &'a self,
        request: ProviderRequest,
        on_chunk: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        let span = request_span(self.endpoint.host_str().unwrap_or_default(), &request);
        Box::pin(
            async move {
                let span = tracing::Span::current();
                let result = self.exchange_stream(&request, &span, on_chunk).await;
                trace_outcome(&span, &result);
                result
            }
            .instrument(span),
        )
    }
}
