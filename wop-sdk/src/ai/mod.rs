//! The typed call: [`AiRequest`], [`Completion`], the opaque [`AiFailure`] and retry lineage.
//!
//! - [`request`]: what a node asks ([`AiRequest`], [`RetryOf`]);
//! - [`completion`]: what a successful call gives back ([`Completion`], [`AttemptId`],
//!   [`InvalidOutput`]);
//! - [`stream`]: a streamed call ([`CallStream`], its provisional [`Fragment`]s);
//! - failures ([`AiFailure`]) live with their book and settling in the crate-private `failure` module.

pub mod completion;
mod output;
pub mod request;
pub mod stream;

pub use crate::failure::AiFailure;
pub use completion::{AttemptId, Completion, InvalidOutput};
pub use output::{Output, SchemaDigest, Text, schema_digest, schema_of};
pub use request::{AiRequest, IntoCall, RetryOf};
pub use stream::{CallStream, Fragment, Provisional};
