//! The RFC 0248 conformance harness: the eight `0248.*` legs as a reusable harness that runs
//! against any [`wop_sdk::host::Host`], the judges that decide each leg, and the fixture node
//! `conformance.callai.echo-attempts`.
//!
//! ```rust,no_run
//! # async fn demo() {
//! use wop_sdk_host::conformance::run_conformance;
//! use wop_sdk_host::local::LocalHost;
//!
//! let host = LocalHost::rfc0248().build();
//! let report = run_conformance(&host).await;
//! println!("{report}");
//! assert!(report.all_passed());
//! # }
//! ```
//!
//! A host implementer implements [`ConformanceTarget`] for their host (or, for a wrapper around
//! the local host, uses [`LocalTarget::through`]), recording the host's answers with
//! [`Recording`] so that replay and `usage` are judged on the host's own bytes.
//!
//! # Every MUST of RFC 0248 §A and §B, and what holds it
//!
//! The eight official `0248.*` legs sample the RFC; the extra checks ([`extra`], reported apart
//! in [`Report::extra`]) hold the requirements the legs let through, and the [`sweep`] holds
//! §A.1 to §A.5, §B.1 and §B.3 over a generated space (calls of 1 to 4 requests, usage withheld
//! at every position, every `maxAttempts`, plain and structured, fresh and replayed). Each extra
//! check has a lying host in `tests/conformance.rs` that passes all eight legs and fails only
//! that check; each MUST of the sweep one in `tests/conformance_sweep.rs` that passes the legs
//! and the extra checks and breaks the MUST in one corner of the space, where the sweep finds it.
//!
//! | Requirement | Held by |
//! |---|---|
//! | §A: a host advertising `attempts` MUST add `attempts` to every result | every leg and check that reads `attempts` (plain and structured calls, one or more attempts); the runtime refuses a result without them as `protocol_error` |
//! | §A.1 `count` MUST equal the requests sent: schema-violation retries | `0248.attempts-count` |
//! | §A.1 … truncation retries and the natural-language fallback | `extra.count-every-request` |
//! | §A.1 a request refused before reaching the provider is not an attempt | not witnessable from outside without a policy seam (the RFC's falsifiability table lists none) |
//! | §A.2 `outputTokens` MUST be the sum over the attempts | `0248.output-tokens-sum` |
//! | §A.2 `usageComplete` MUST be false when any attempt reported none: a single attempt | `0248.usage-incomplete` |
//! | §A.2 … an earlier attempt, the final one reporting usage | `extra.usage-incomplete-any-attempt` |
//! | §A.3 `structuredOutput` absent without `responseSchema`; `native` | `0248.structured-output` |
//! | §A.3 … the FINAL attempt's mode, `prompt` included | `extra.structured-output-final-mode` |
//! | §A.4 `usage` describes the attempt whose output the result carries | `extra.usage-of-final-attempt` (on the host's answer) |
//! | §A.5 on replay `attempts` MUST equal the recorded value, byte for byte | `0248.attempts-replayed`, judged on the host's own answers ([`Observed::answers`]) |
//! | §A.6 a failed call carries no result | by construction: a failed call is `Err(HostFailure)`, never a result |
//! | §B.1 MUST NOT send more than `maxAttempts` requests: `1` | `0248.max-attempts-cap` |
//! | §B.1 … a cap above 1 | `extra.max-attempts-two` |
//! | §B.2 with `growMaxTokens: false`, MUST NOT exceed the request's `maxTokens` | `0248.no-budget-growth` |
//! | §B.2 … nor the host default when the request names none | `extra.no-growth-host-default` |
//! | §B.3 a `maxAttempts` above the ceiling is clamped, not refused (and not honoured) | `extra.max-attempts-clamped` |
//! | §B.3 RFC 0032 §B.3 (no retry after a refusal) is unaffected | `extra.no-retry-after-refusal` |
//! | §B.4 RFC 0032 events still fire: `retry-exhausted {totalAttempts: 1}` under `maxAttempts: 1` | `0248.max-attempts-cap` (when emitted); `extra.retry-exhausted-emitted` (required when advertised) |
//! | §B.5 a malformed `retry` MUST be refused with `validation_error` naming the key: `maxAttempts: 0` | `0248.retry-malformed-refused` |
//! | §B.5 … every other form (non-integer, out of range, wrong type, `null`), MUST NOT be ignored | `extra.retry-malformed-every-form` |
//! | §C a pack MUST NOT rely on a field its flag does not advertise | the SDK, not the host: the runtime drops `attempts` from a host that does not advertise them, and the proofs of [`wop_sdk::caps`] gate reading them |

pub mod extra;
mod fixture;
mod inputs;
pub mod judges;
mod legs;
mod local_target;
mod recording;
mod report;
pub mod sweep;
mod target;

pub use extra::EXTRA_IDS;
pub use fixture::{EchoAttempts, EchoInput, EchoOutput, FIXTURE_TYPE_ID};
pub use inputs::{
    GROWTH_MAX_TOKENS, cap_input, count_input, growth_input, malformed_input, native_input,
    plain_input, usage_incomplete_input,
};
pub use legs::{
    ATTEMPTS_COUNT, ATTEMPTS_REPLAYED, LEG_IDS, MAX_ATTEMPTS_CAP, NO_BUDGET_GROWTH,
    OUTPUT_TOKENS_SUM, RETRY_MALFORMED_REFUSED, STRUCTURED_OUTPUT, USAGE_INCOMPLETE,
    run_conformance,
};
pub use local_target::LocalTarget;
pub use recording::Recording;
pub use report::{Report, Verdict};
pub use target::{ConformanceTarget, Observed};
