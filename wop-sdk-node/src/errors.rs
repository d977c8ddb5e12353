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
/// | `provider_unavailable`, `provider_rate_limited`, `provider_timed_out`, `internal_error`, `node_timeout` (a host's call that did not settle in time) | `upstream_unavailable` |
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

/// `public` with the reason a call to the provider `mock` fails `envelope_invalid` on openwop-app:
/// its mock provider answers only what its test seam was programmed with, and the seam is on
/// only with `OPENWOP_TEST_SEAM_ENABLED=true`.
pub(crate) fn with_mock_seam_hint(mut public: ErrorEnvelope) -> ErrorEnvelope {
    public.message.push_str(
        "; the provider `mock` of openwop-app answers only through its test seam: start the host \
         with OPENWOP_TEST_SEAM_ENABLED=true and program the replies with \
         POST /v1/host/openwop-app/test/mock-ai/program, or name a real provider",
    );
    public.with_detail("hint", "openwop-app-test-seam")
}

/// How much of the host's message is kept, in characters.
pub(crate) const HOST_MESSAGE_KEPT: usize = 300;

/// `public` with the host's own message in what the user sees: the sentence ends with `(host:
/// {code}: {message})` and `details.hostMessage` holds it. The message is cut to
/// [`HOST_MESSAGE_KEPT`] characters on one line, and anything that looks like a key (a word after
/// `Bearer`, a word starting `sk-`) is replaced by `<redacted>`.
pub(crate) fn with_host_message(
    mut public: ErrorEnvelope,
    code: Option<&str>,
    message: &str,
) -> ErrorEnvelope {
    let kept = bounded(&redact_keys(message));
    if kept.is_empty() {
        return public;
    }
    public.message = match code {
        Some(code) => format!("{} (host: {code}: {kept})", public.message),
        None => format!("{} (host: {kept})", public.message),
    };
    public.with_detail("hostMessage", kept)
}

/// `text` with bearer tokens and `sk-` keys replaced.
pub(crate) fn redact_keys(text: &str) -> String {
    let mut out = Vec::new();
    let mut after_bearer = false;
    for word in text.split(' ') {
        let bare = word.trim_matches(|c: char| !c.is_ascii_alphanumeric() && c != '-' && c != '_');
        if after_bearer && !bare.is_empty() || bare.starts_with("sk-") {
            out.push(word.replace(bare, "<redacted>"));
        } else {
            out.push(word.to_owned());
        }
        after_bearer = bare.eq_ignore_ascii_case("bearer");
    }
    out.join(" ")
}

/// One line of at most [`HOST_MESSAGE_KEPT`] characters (an ellipsis marks a cut).
fn bounded(text: &str) -> String {
    let line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= HOST_MESSAGE_KEPT {
        return line;
    }
    let mut cut: String = line.chars().take(HOST_MESSAGE_KEPT - 1).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::{
        HOST_MESSAGE_KEPT, bounded, map_host_error, redact_keys, with_host_message,
        with_mock_seam_hint,
    };

    #[test]
    fn a_mock_call_the_host_found_invalid_points_at_the_test_seam() {
        let e = with_mock_seam_hint(map_host_error(Some("envelope_invalid"), None));
        assert_eq!(e.error, ErrorCode::EnvelopeInvalid);
        assert!(
            e.message.contains("OPENWOP_TEST_SEAM_ENABLED=true"),
            "{}",
            e.message
        );
        assert!(
            e.message
                .contains("/v1/host/openwop-app/test/mock-ai/program")
        );
    }
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

    #[test]
    fn the_host_message_reaches_the_user_bounded_without_keys() {
        let e = with_host_message(
            map_host_error(Some("byok_required"), None),
            Some("byok_required"),
            "No credential available for provider openai",
        );
        assert_eq!(e.error, ErrorCode::CapabilityNotProvided);
        assert!(
            e.message
                .ends_with("(host: byok_required: No credential available for provider openai)"),
            "{}",
            e.message
        );
        assert_eq!(
            e.details.as_ref().and_then(|d| d.get("hostCode")),
            Some(&json!("byok_required"))
        );
        assert_eq!(
            redact_keys("bad key sk-abc123, header Bearer tok_9.z was refused"),
            "bad key <redacted>, header Bearer <redacted> was refused"
        );
        let long = "x".repeat(5000);
        assert_eq!(bounded(&long).chars().count(), HOST_MESSAGE_KEPT);
        assert_eq!(bounded("two\nlines"), "two lines");
    }
}
