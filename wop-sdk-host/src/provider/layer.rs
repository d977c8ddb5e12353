//! A provider that wraps another: [`ProviderLayer`] forwards every method of [`Provider`] to the
//! inner provider, so a wrapper overrides only what it changes and cannot forget one.

use super::{Provider, ProviderError, ProviderReply, ProviderRequest};
use wop_sdk::host::BoxFuture;

/// A provider that wraps another (a watcher, a recorder, a fault injector). Every [`Provider`]
/// method reaches [`ProviderLayer::inner`] unless the layer overrides it, and every
/// `ProviderLayer` is a [`Provider`]: implement this, not `Provider`, for a wrapper.
pub trait ProviderLayer: Send + Sync {
    /// The provider this one wraps.
    fn inner(&self) -> &dyn Provider;

    /// [`Provider::name`].
    fn name(&self) -> &str {
        self.inner().name()
    }

    /// [`Provider::serves`].
    fn serves(&self, name: &str) -> bool {
        self.inner().serves(name)
    }

    /// [`Provider::generate`].
    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        self.inner().generate(request)
    }

    /// [`Provider::generate_stream`].
    fn generate_stream<'a>(
        &'a self,
        request: ProviderRequest,
        on_chunk: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        self.inner().generate_stream(request, on_chunk)
    }
}

// Every method, none left to `Provider`'s defaults: a layer's `serves` is the inner provider's
// (not a comparison with the name), its `generate_stream` the inner one's streaming.
impl<L: ProviderLayer> Provider for L {
    fn name(&self) -> &str {
        ProviderLayer::name(self)
    }

    fn serves(&self, name: &str) -> bool {
        ProviderLayer::serves(self, name)
    }

    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        ProviderLayer::generate(self, request)
    }

    fn generate_stream<'a>(
        &'a self,
        request: ProviderRequest,
        on_chunk: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        ProviderLayer::generate_stream(self, request, on_chunk)
    }
}
