//! The run brand: a lifetime that ties a value to the node execution that made it.

use std::marker::PhantomData;

/// Invariant in `'run`: values branded with one run cannot be used with another. The compiler
/// refuses to unify two different `'run`s, so an [`crate::AiFailure`], an
/// [`crate::AttemptId`] or a [`crate::RetryOf`] cannot cross from one node context to another.
pub(crate) type Brand<'run> = PhantomData<fn(&'run ()) -> &'run ()>;
