//! Answers that are ready when asked, boxed as the `Host` and `Journal` traits return them. An
//! answer that carries nothing (`()`, `Ok(())`, another constant) is a future of no size, so its
//! box allocates nothing.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use wop_sdk::host::BoxFuture;

/// `v`, ready at once (boxed: one allocation unless `T` has no size).
pub(crate) fn ready<'a, T: Send + 'a>(v: T) -> BoxFuture<'a, T> {
    Box::pin(std::future::ready(v))
}

/// A future ready with `make()`. For a constant answer `make` captures nothing, so the future
/// has no size (`std::future::ready(())` is one byte: its box would allocate).
struct Constant<F>(F);

impl<T, F: Fn() -> T + Unpin> Future for Constant<F> {
    type Output = T;

    fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<T> {
        Poll::Ready((self.0)())
    }
}

/// The answer `make()`, ready at once; without an allocation when `make` captures nothing.
pub(crate) fn constant<'a, T, F: Fn() -> T + Send + Unpin + 'a>(make: F) -> BoxFuture<'a, T> {
    Box::pin(Constant(make))
}
