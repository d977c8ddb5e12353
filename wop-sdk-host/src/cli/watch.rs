//! [`WatchedProvider`]: the command line's view of a provider, each request and its answer.

use crate::provider::{Provider, ProviderError, ProviderLayer, ProviderReply, ProviderRequest};
use std::fmt;
use std::sync::Arc;
use wop_sdk::host::BoxFuture;

/// A provider seen from outside: every request and its answer go to a callback, after the
/// provider answered and before the host reads the answer. Everything else is the inner
/// provider's, unchanged.
///
/// ```rust,no_run
/// use std::sync::Arc;
/// use wop_sdk_host::cli::{Progress, WatchedProvider};
/// use wop_sdk_host::local::{LocalHost, ScriptedProvider};
///
/// let progress = Progress::stderr();
/// let p = progress.clone();
/// let host = LocalHost::rfc0248()
///     .provider(WatchedProvider::new(
///         Arc::new(ScriptedProvider::default()),
///         move |request, answer| p.reply(request, answer),
///     ))
///     .observer(move |event| progress.event(event))
///     .build();
/// ```
pub struct WatchedProvider {
    inner: Arc<dyn Provider>,
    #[allow(clippy::type_complexity)]
    watch: Box<dyn Fn(&ProviderRequest, &Result<ProviderReply, ProviderError>) + Send + Sync>,
}

impl fmt::Debug for WatchedProvider {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WatchedProvider")
            .field("provider", &self.inner.name())
            .finish_non_exhaustive()
    }
}

impl WatchedProvider {
    /// Wraps `inner`; `watch` sees each request with its answer.
    pub fn new(
        inner: Arc<dyn Provider>,
        watch: impl Fn(&ProviderRequest, &Result<ProviderReply, ProviderError>) + Send + Sync + 'static,
    ) -> Self {
        Self {
            inner,
            watch: Box::new(watch),
        }
    }
}

// A layer: `name` and `serves` are the inner provider's (a pack that names its provider is served
// under the command line as it is without it).
impl ProviderLayer for WatchedProvider {
    fn inner(&self) -> &dyn Provider {
        &*self.inner
    }

    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        Box::pin(async move {
            let seen = request.clone();
            let answer = self.inner.generate(request).await;
            (self.watch)(&seen, &answer);
            answer
        })
    }

    fn generate_stream<'a>(
        &'a self,
        request: ProviderRequest,
        on_chunk: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        Box::pin(async move {
            let seen = request.clone();
            let answer = self.inner.generate_stream(request, on_chunk).await;
            (self.watch)(&seen, &answer);
            answer
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::ProviderProbe;
    use std::sync::atomic::{AtomicU32, Ordering};

    #[tokio::test]
    async fn every_provider_method_reaches_the_inner_provider_and_each_answer_is_watched() {
        let probe = Arc::new(ProviderProbe::new("probe"));
        let seen = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&seen);
        let watched = WatchedProvider::new(Arc::clone(&probe) as Arc<dyn Provider>, move |_, _| {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        ProviderProbe::exercise(&watched).await;
        assert_eq!(probe.reached(), ProviderProbe::METHODS);
        assert_eq!(
            seen.load(Ordering::SeqCst),
            2,
            "generate and generate_stream watched"
        );
        assert!(
            Provider::serves(&watched, "probe-alias"),
            "serves is the inner provider's, not a name match"
        );
    }
}
