//! The `wop.provider.request` span of one request, with the OpenTelemetry GenAI attribute names,
//! and what a reply or a failure records on it (never the reply's text).

use crate::provider::{ProviderError, ProviderReply, ProviderRequest};
use tracing::field::Empty;

/// The `wop.provider.request` span of one request to the server at `server`.
pub(super) fn request_span(server: &str, request: &ProviderRequest) -> tracing::Span {
    tracing::info_span!(
        "wop.provider.request",
        gen_ai.system = "openai",
        gen_ai.operation.name = "chat",
        gen_ai.request.model = %request.model,
        gen_ai.request.max_tokens = request.max_tokens,
        gen_ai.response.model = Empty,
        gen_ai.response.finish_reasons = Empty,
        gen_ai.usage.input_tokens = Empty,
        gen_ai.usage.output_tokens = Empty,
        server.address = server,
        http.response.status_code = Empty,
        error.type = Empty,
        wop.run_id = %request.run_id,
        wop.node_id = %request.node_id,
        wop.attempt = request.attempt,
        wop.structured_output = Empty,
    )
}

/// Records what the reply said (never its text) on the request's span.
pub(super) fn trace_outcome(span: &tracing::Span, result: &Result<ProviderReply, ProviderError>) {
    match result {
        Ok(reply) => {
            span.record(
                "gen_ai.response.finish_reasons",
                openai_finish_reason(reply.finish_reason),
            );
            if let Some(model) = &reply.model {
                span.record("gen_ai.response.model", model.as_str());
            }
            if let Some(mode) = reply.mode {
                span.record("wop.structured_output", mode.as_str());
            }
            if let Some(usage) = reply.usage {
                if let Some(n) = usage.input_tokens {
                    span.record("gen_ai.usage.input_tokens", n);
                }
                if let Some(n) = usage.output_tokens {
                    span.record("gen_ai.usage.output_tokens", n);
                }
            }
        }
        Err(e) => {
            let kind = match e {
                ProviderError::Transient { .. } => "transient",
                ProviderError::Failed(_) => "failed",
                ProviderError::NoAnswer(_) => "no_answer",
            };
            span.record("error.type", kind);
            // The operator's view (`-v`): the class and the private text (the status, the start
            // of the server's error body, bounded, keys cut out). Never on the span.
            tracing::warn!(
                error.type = kind,
                error.class = e.class().name(),
                cause = e.text(),
                "provider request failed"
            );
        }
    }
}

fn openai_finish_reason(reason: wop_sdk::wire::FinishReason) -> &'static str {
    use wop_sdk::wire::FinishReason as F;
    match reason {
        F::Stop => "stop",
        F::Length => "length",
        F::ContentFilter => "content_filter",
        F::ToolCall => "tool_calls",
        F::Other => "other",
    }
}
