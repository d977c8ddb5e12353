//! A host's `ctx.callAI` error, as the SDK sees it.

use serde_json::Value;
use wop_sdk::wire::{ErrorCode, ErrorEnvelope};

/// The host's error code → the SDK's code, with the host's code kept as `details.hostCode`.
///
/// `host_code` is the `code` of what `ctx.callAI` threw (`None` when it threw something without
/// a string `code`, e.g. a plain `Error` or a non-`Error` value); `details` are the host's
/// `details` (only `field` is carried over, for a validation error: the rest may hold provider
/// diagnostics, which stay private).
///
/// | host code (openwop-app's `AiProviderError`, or an RFC 0248 host's) | SDK code |
/// |---|---|
/// | `envelope_invalid`, `structured_output_invalid` | `envelope_invalid` |
/// | `envelope_refusal`, `safety_filter`, `content_filtered` | `envelope_refusal` |
/// | `envelope_truncation_unrecoverable` | `envelope_truncation_unrecoverable` |
/// | `provider_unavailable`, `provider_rate_limited`, `provider_timed_out`, `internal_error`, `node_timeout` (the bridge's: the call did not settle in time) | `upstream_unavailable` |
/// | `invalid_request`, `validation_error` | `validation_error` (`details.field` from the host, else `request`) |
/// | `provider_not_supported`, `model_not_supported`, `model_not_allowed`, `provider_policy_denied`, `byok_required`, `byok_required_but_unresolved`, `host_capability_missing`, `unsupported_modality`, `capability_not_provided` | `capability_not_provided` |
/// | `budget_exhausted`, `idempotency_key_mismatch`, `replay_source_missing`, `upstream_unavailable` | the same |
/// | none (a thrown value without a string `code`), `protocol_error` | `protocol_error` |
/// | another code of the SDK's, in either spelling (`wop-sdk.node_failed`, `node_failed`) | that code |
/// | any other string | `upstream_unavailable` |
pub fn map_host_error(host_code: Option<&str>, details: Option<&Value>) -> ErrorEnvelope {
    let Some(code) = host_code else {
        return ErrorEnvelope::new(
            ErrorCode::ProtocolError,
            "the host's ctx.callAI failed with a value that carries no string `code`",
        );
    };
    let (sdk, message) = match code {
        "envelope_invalid" | "structured_output_invalid" => (
            ErrorCode::EnvelopeInvalid,
            "the host found no reply that meets the response schema",
        ),
        "envelope_refusal" | "safety_filter" | "content_filtered" => {
            (ErrorCode::EnvelopeRefusal, "the provider refused")
        }
        "envelope_truncation_unrecoverable" => (
            ErrorCode::EnvelopeTruncationUnrecoverable,
            "every attempt was truncated",
        ),
        "invalid_request" | "validation_error" => {
            let field = details
                .and_then(|d| d.get("field"))
                .and_then(Value::as_str)
                .unwrap_or("request");
            return ErrorEnvelope::validation(field, "the host refused the request")
                .with_detail("hostCode", code);
        }
        "provider_not_supported"
        | "model_not_supported"
        | "model_not_allowed"
        | "provider_policy_denied"
        | "byok_required"
        | "byok_required_but_unresolved"
        | "host_capability_missing"
        | "unsupported_modality"
        | "capability_not_provided" => (
            ErrorCode::CapabilityNotProvided,
            "the host cannot serve this call (provider, model, policy or capability)",
        ),
        "budget_exhausted" => (
            ErrorCode::BudgetExhausted,
            "the host's budget refused the call",
        ),
        "idempotency_key_mismatch" => (
            ErrorCode::IdempotencyKeyMismatch,
            "the host refused a changed request under the same attempt identity",
        ),
        "replay_source_missing" => (
            ErrorCode::ReplaySourceMissing,
            "the host has no recorded outcome to replay",
        ),
        "protocol_error" => (
            ErrorCode::ProtocolError,
            "the host broke the call's contract",
        ),
        "node_timeout" => (
            ErrorCode::UpstreamUnavailable,
            "the host's ctx.callAI did not settle within the node's timeout",
        ),
        other => match ErrorCode::parse(other) {
            // A host that speaks the SDK's codes (a wop-sdk host, or an RFC 0248 host's
            // registered codes): taken as they are.
            Some(code) => (code, "the host refused the call"),
            None => (
                ErrorCode::UpstreamUnavailable,
                "the host could not get an answer from the provider",
            ),
        },
    };
    ErrorEnvelope::new(sdk, message).with_detail("hostCode", code)
}

#[cfg(test)]
mod tests {
    use super::map_host_error;
    use serde_json::json;
    use wop_sdk::wire::ErrorCode;

    #[test]
    fn keeps_the_host_code_and_maps_to_the_sdk_code() {
        let cases = [
            ("envelope_invalid", ErrorCode::EnvelopeInvalid),
            ("envelope_refusal", ErrorCode::EnvelopeRefusal),
            (
                "envelope_truncation_unrecoverable",
                ErrorCode::EnvelopeTruncationUnrecoverable,
            ),
            ("provider_rate_limited", ErrorCode::UpstreamUnavailable),
            ("model_not_allowed", ErrorCode::CapabilityNotProvided),
            ("node_timeout", ErrorCode::UpstreamUnavailable),
            ("something_new", ErrorCode::UpstreamUnavailable),
        ];
        for (host, sdk) in cases {
            let e = map_host_error(Some(host), None);
            assert_eq!(e.error, sdk, "{host}");
            assert_eq!(e.details, Some(json!({"hostCode": host})), "{host}");
        }
    }

    #[test]
    fn a_validation_error_names_the_hosts_field_and_nothing_else_of_its_details() {
        let e = map_host_error(
            Some("invalid_request"),
            Some(&json!({"field": "audio.url", "apiKeyHint": "sk-…"})),
        );
        assert_eq!(e.error, ErrorCode::ValidationError);
        assert_eq!(e.field(), Some("audio.url"));
        assert!(!e.to_string().contains("sk-"));
        assert!(!format!("{:?}", e.details).contains("sk-"));
    }

    #[test]
    fn no_code_is_a_protocol_error() {
        assert_eq!(map_host_error(None, None).error, ErrorCode::ProtocolError);
    }
}
