//! The closed sets of the protocol, each written once.
//!
//! A [`Member`] carries the three names one value has: how a pack author spells it in a macro
//! argument, how the wire (pack.json, the capability document) spells it, and the variant of the
//! runtime enum the macros expand to.

/// One value of a closed set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Member {
    /// How it is written in a macro argument, e.g. `retry_policy`.
    pub spelling: &'static str,
    /// How the wire names it, e.g. `aiProviders.callAccounting.retryPolicy`.
    pub wire: &'static str,
    /// The variant of the runtime enum, e.g. `RetryPolicy`.
    pub variant: &'static str,
}

const fn same(s: &'static str, variant: &'static str) -> Member {
    Member {
        spelling: s,
        wire: s,
        variant,
    }
}

/// The categories a pack.json v2 node may have.
pub const CATEGORIES: &[Member] = &[
    same("chat", "Chat"),
    same("control", "Control"),
    same("data", "Data"),
    same("canvas", "Canvas"),
    same("coordination", "Coordination"),
    same("integration", "Integration"),
];
/// The category of a node that does not name one: it talks to a model.
pub const DEFAULT_CATEGORY: &Member = &CATEGORIES[0];

/// The roles this SDK lets a node declare. The v2 manifest takes any role of the `NodeRole`
/// taxonomy; a node written with this SDK calls a model, so it is either `pure` (no effect beyond
/// its output) or `side-effect`.
pub const ROLES: &[Member] = &[same("pure", "Pure"), same("side-effect", "SideEffect")];
/// The role of a node that does not name one: calling a model is an effect.
pub const DEFAULT_ROLE: &Member = &ROLES[1];

/// The host capabilities a node may require (`requires(...)`).
pub const CAPABILITIES: &[Member] = &[
    Member {
        spelling: "ai_providers",
        wire: "aiProviders",
        variant: "AiProviders",
    },
    Member {
        spelling: "attempts",
        wire: "aiProviders.callAccounting.attempts",
        variant: "Attempts",
    },
    Member {
        spelling: "retry_policy",
        wire: "aiProviders.callAccounting.retryPolicy",
        variant: "RetryPolicy",
    },
    Member {
        spelling: "provider_usage",
        wire: "providerUsage",
        variant: "ProviderUsage",
    },
    Member {
        spelling: "replay",
        wire: "replay.modes[replay]",
        variant: "Replay",
    },
];

/// `runtime.language` of a v2 pack.
pub const RUNTIME_LANGUAGES: &[&str] = &[
    "javascript",
    "python",
    "go",
    "wasm",
    "wasm-component",
    "remote",
];

/// The pack namespaces (the first segment of a pack name).
pub const PACK_NAMESPACES: &[&str] = &["core", "vendor", "community", "private"];

/// The facets of the `aiProviders` family a pack may name in
/// `peerDependenciesMeta.aiProviders.facets`: the family's record keys, plus `callAccounting`
/// (RFC 0248 §C, newer than the published schema).
pub const AI_PROVIDER_FACETS: &[&str] = &[
    "providers",
    "byok",
    "selfHosted",
    "speechSynthesis",
    "imageGeneration",
    "videoGeneration",
    "realtimeVoice",
    "promptPrefixCache",
    "maxInlineMediaBytes",
    "authModes",
    "policies",
    "input",
    "callAccounting",
];

/// Why a deliberate retry is made ("AI failures and retries").
pub const RETRY_REASONS: &[&str] = &[
    "invalid_output",
    "tool_validation_failed",
    "provider_failure",
    "user_requested",
    "workflow_policy",
];

/// Why a host retried, or gave up (`envelope.retry-attempted.reason`,
/// `envelope.retry-exhausted.finalReason`). A host may add its own as `x-host-<host>-<reason>`.
pub const ENVELOPE_FAILURE_REASONS: &[&str] = &[
    "schema-violation",
    "truncation",
    "type-drift",
    "type-mismatch",
    "refusal",
    "parse-error",
    "unknown",
];

/// `envelope.truncated.stopReason`. `max_tokens` is a cut at the token budget the request gave;
/// `length` a cut the model made on its own.
pub const STOP_REASONS: &[&str] = &["max_tokens", "length", "stop_sequence", "unknown"];

/// The reliability events a host may list in `envelopes.reliability.events`, by v2 name.
pub const RELIABILITY_EVENTS: &[&str] = &[
    "envelope.retry-attempted",
    "envelope.retry-exhausted",
    "envelope.refusal",
    "envelope.truncated",
    "envelope.nl-to-format-engaged",
    "envelope.recovery-applied",
];

/// The two reliability events a host advertising `envelopes.reliability` must list.
pub const REQUIRED_RELIABILITY_EVENTS: &[&str] = &["envelope.retry-exhausted", "envelope.refusal"];

/// `status` of a capability family record.
pub const FAMILY_STATUSES: &[&str] = &["stable", "experimental", "deprecated"];

/// `witness` of a capability family record: how an outside party can check the claim.
pub const WITNESS_CLASSES: &[&str] = &[
    "witnessable-unaided",
    "witnessable-gated",
    "seam-gated",
    "claims-check",
    "negative-existence",
];

/// Codes of the v2 error registry that this SDK writes, with what each means here. Everything
/// else the SDK writes is in the vendor form ([`crate::grammar::vendor_code_problem`]).
pub const REGISTERED_ERROR_CODES: &[(&str, &str)] = &[
    (
        "validation_error",
        "a request field breaks its rule; details.field names it",
    ),
    (
        "capability_not_provided",
        "the node needs a capability the host does not advertise",
    ),
    (
        "envelope_invalid",
        "no reply met the schema before the attempts ran out",
    ),
    ("envelope_refusal", "the provider refused; never retried"),
    (
        "envelope_truncation_unrecoverable",
        "every reply was cut before it was complete",
    ),
    (
        "idempotency_key_mismatch",
        "an attempt identity came back with a changed request",
    ),
    (
        "replay_source_missing",
        "a replay found no recorded outcome for a call",
    ),
];

/// Whether `code` is one of [`REGISTERED_ERROR_CODES`].
pub fn is_registered_error_code(code: &str) -> bool {
    REGISTERED_ERROR_CODES.iter().any(|(c, _)| *c == code)
}

/// The member of `set` spelled `spelling` in a macro argument.
pub fn find(set: &'static [Member], spelling: &str) -> Option<&'static Member> {
    set.iter().find(|m| m.spelling == spelling)
}

/// The member of `set` the wire names `wire`.
pub fn find_wire(set: &'static [Member], wire: &str) -> Option<&'static Member> {
    set.iter().find(|m| m.wire == wire)
}

/// The macro spellings of `set` for an error message: "`a`, `b`, `c`".
pub fn list(set: &[Member]) -> String {
    quoted(set.iter().map(|m| m.spelling))
}

/// The wire spellings of `set` for an error message: "`a`, `b`, `c`".
pub fn list_wire(set: &[Member]) -> String {
    quoted(set.iter().map(|m| m.wire))
}

/// `items` for an error message: "`a`, `b`, `c`".
pub fn quoted<'a>(items: impl IntoIterator<Item = &'a str>) -> String {
    items
        .into_iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_members() {
        assert_eq!(DEFAULT_CATEGORY.spelling, "chat");
        assert_eq!(DEFAULT_ROLE.spelling, "side-effect");
    }

    #[test]
    fn lookups() {
        assert_eq!(
            find(CAPABILITIES, "retry_policy").map(|m| m.variant),
            Some("RetryPolicy")
        );
        assert_eq!(
            find_wire(CAPABILITIES, "providerUsage").map(|m| m.spelling),
            Some("provider_usage")
        );
        assert_eq!(find(CATEGORIES, "chatty"), None);
        assert_eq!(list(ROLES), "`pure`, `side-effect`");
        assert!(is_registered_error_code("validation_error"));
        assert!(!is_registered_error_code("budget_exhausted"));
    }

    #[test]
    fn sets_have_no_duplicates() {
        for set in [CATEGORIES, ROLES, CAPABILITIES] {
            for (i, m) in set.iter().enumerate() {
                assert!(
                    set[..i]
                        .iter()
                        .all(|o| o.spelling != m.spelling && o.wire != m.wire)
                );
            }
        }
    }
}
