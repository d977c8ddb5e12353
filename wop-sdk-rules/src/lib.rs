//! Implementation detail of `wop-sdk`: the rules of the OpenWOP v2 protocol written once, so that
//! the compile errors of `#[wop_node]` / `pack!` and the runtime's `validate_manifest` say the
//! same thing (serde keeps the same split with `serde_derive_internals`).
//!
//! - [`grammar`]: type ids, pack names, versions, facet names, extension keys, error codes and
//!   run ids, each check returning the reason a value is refused;
//! - [`sets`]: the closed sets a pack author picks from (categories, roles, capabilities) and the
//!   ones the wire uses (runtime languages, `aiProviders` facets, retry reasons);
//! - [`retry`]: the bounds of a per-call retry policy (RFC 0248 §B);
//! - [`accounting`]: the bounds of the `attempts` record on a result (RFC 0248 §A).
//!
//! No dependencies, no I/O, nothing that can panic.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod accounting;
pub mod grammar;
pub mod retry;
pub mod sets;
