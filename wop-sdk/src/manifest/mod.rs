//! A pack of nodes and its `pack.json` (v2): what `pack! { ... }` generates, and the checks a
//! manifest must pass.
//!
//! ```rust,no_run
//! use wop_sdk::manifest::{Pack, validate_manifest};
//! # use wop_sdk::{NodeCtx, NodeError, wop_node};
//! # #[wop_node(type_id = "community.demo.bookai.review", version = "1.0.0")]
//! # async fn review(ctx: &NodeCtx<'_>, input: String) -> Result<String, NodeError> { Ok(input) }
//! let pack = Pack::new("community.demo.bookai", "0.1.0").node(Review);
//! let json = pack.manifest();
//! assert_eq!(validate_manifest(&json), Ok(()));
//! // schemas live in files the manifest names, relative to the pack folder
//! let files = pack.schema_files();
//! assert_eq!(files[0].0, "schemas/community.demo.bookai.review.input.json");
//! assert!(pack.find("community.demo.bookai.review").is_some());
//! ```
//!
//! [`Pack`] and the writing of its `pack.json` and schema files live in `pack`; the checks of
//! [`validate_manifest`] in `validate`; the constants both share and the grammar predicates in `keys`.

mod budget;
mod keys;
mod pack;
mod validate;

pub use keys::{
    ENGINES_OPENWOP, NAMESPACES, RUNTIME_ENTRY, RUNTIME_LANGUAGE, SCHEMA_DIR, is_pack_name,
    is_semver, is_type_id,
};
pub use pack::Pack;
pub use validate::validate_manifest;
