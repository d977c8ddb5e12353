//! The RFC 0248 conformance harness: the eight `0248.*` legs as a reusable harness that runs
//! against any [`crate::host::Host`], the judges that decide each leg, and the fixture node
//! `conformance.callai.echo-attempts`.
//!
//! ```rust,no_run
//! # async fn demo() {
//! use wop_sdk::conformance::run_conformance;
//! use wop_sdk::local::LocalHost;
//!
//! let host = LocalHost::builder().build();
//! let report = run_conformance(&host).await;
//! println!("{report}");
//! assert!(report.all_passed());
//! # }
//! ```
//!
//! A host implementer implements [`ConformanceTarget`] for their host (or, for a wrapper around
//! the local host, uses [`LocalTarget::through`]).

mod fixture;
pub mod judges;
mod legs;
#[cfg(feature = "local")]
mod local_target;
mod report;

pub use fixture::{EchoAttempts, EchoInput, EchoOutput, FIXTURE_TYPE_ID};
pub use legs::{
    ATTEMPTS_COUNT, ATTEMPTS_REPLAYED, ConformanceTarget, GROWTH_MAX_TOKENS, LEG_IDS,
    MAX_ATTEMPTS_CAP, NO_BUDGET_GROWTH, OUTPUT_TOKENS_SUM, Observed, RETRY_MALFORMED_REFUSED,
    STRUCTURED_OUTPUT, USAGE_INCOMPLETE, cap_input, count_input, growth_input, malformed_input,
    native_input, plain_input, run_conformance, usage_incomplete_input,
};
#[cfg(feature = "local")]
pub use local_target::LocalTarget;
pub use report::{Report, Verdict};
