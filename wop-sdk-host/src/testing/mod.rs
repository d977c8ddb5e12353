//! Doubles for tests of a pack, a host or a wrapper, shared so that tests do not each write their
//! own: a provider made from a closure ([`from_fn`], with [`reply`] for its answers), and probes
//! that record which trait methods reached them ([`ProviderProbe`], [`HostProbe`]), for the test
//! every wrapper owes: that each method of the trait it wraps reaches the inner one.
//!
//! ```rust,no_run
//! use std::time::Duration;
//! use wop_sdk_host::local::LocalHost;
//! use wop_sdk_host::testing::{from_fn, reply};
//!
//! // Answers every request with the same line, a little late.
//! let provider = from_fn("slow", |_request| async {
//!     tokio::time::sleep(Duration::from_millis(50)).await;
//!     Ok(reply("a line"))
//! });
//! let host = LocalHost::rfc0248().provider(provider).build();
//! ```

mod probes;

pub use probes::{HostProbe, ProviderProbe};

use crate::provider::{Provider, ProviderError, ProviderReply, ProviderRequest};
use std::fmt;
use std::future::Future;
use wop_sdk::host::BoxFuture;
use wop_sdk::wire::FinishReason;

/// A complete reply (`finish_reason: stop`) with `content` and nothing else: no usage, no
/// structured-output mode, no model. Change its fields for anything more.
pub fn reply(content: impl Into<Vec<u8>>) -> ProviderReply {
    ProviderReply {
        content: content.into(),
        finish_reason: FinishReason::Stop,
        usage: None,
        mode: None,
        model: None,
    }
}

type Answer = BoxFuture<'static, Result<ProviderReply, ProviderError>>;

/// A provider named `name` whose every request is answered by `answer` (see [`from_fn`]).
pub struct FnProvider {
    name: String,
    answer: Box<dyn Fn(ProviderRequest) -> Answer + Send + Sync>,
}

impl fmt::Debug for FnProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnProvider")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// A provider named `name` that answers each request with the future `answer` makes of it: a
/// fixed reply, a reply after a delay, one that never comes (`std::future::pending()`), an
/// error. Streamed requests get the whole reply as one chunk ([`Provider::generate_stream`]'s
/// default).
pub fn from_fn<F, Fut>(name: impl Into<String>, answer: F) -> FnProvider
where
    F: Fn(ProviderRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<ProviderReply, ProviderError>> + Send + 'static,
{
    FnProvider {
        name: name.into(),
        answer: Box::new(move |request| Box::pin(answer(request))),
    }
}

impl Provider for FnProvider {
    fn name(&self) -> &str {
        &self.name
    }

    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        (self.answer)(request)
    }
}
