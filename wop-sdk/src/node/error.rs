//! A node's failure: its own error, or a call's failure propagated with `?` (settled by the
//! runtime), or an invalid output.

use crate::wire::{ErrorCode, ErrorEnvelope};
use std::fmt;
use std::marker::PhantomData;

pub(crate) enum NodeErrorKind {
    Own(ErrorEnvelope),
    /// A propagated AI failure: its id in the failure book of the node execution it came from.
    Ai {
        id: u64,
        book: std::sync::Arc<crate::failure::FailureBook>,
    },
}

/// Why a node failed: its own error, or an AI failure propagated with `?` (settled on the way).
///
/// A propagated AI failure stays opaque here too: `Debug` and `Display` say only that an AI call
/// failed; the node's `node.failed` event carries the failure's public error code.
///
/// Branded with its run, like the [`crate::AiFailure`] it may carry: a failure turned into a
/// `NodeError` cannot leave its run either (no `'static` storage, no thread outside the run).
/// In a `#[wop_node]` fn write `Result<Out, NodeError>`: the macro names the brand. A helper
/// that returns one names it with its context, `fn helper<'run>(ctx: &NodeCtx<'run>) ->
/// Result<(), NodeError<'run>>`; one without a context returns `NodeError<'static>`, which
/// converts to any run's.
pub struct NodeError<'run> {
    pub(crate) kind: NodeErrorKind,
    _run: PhantomData<&'run ()>,
}

impl NodeError<'_> {
    /// The node's own failure (`node_failed`).
    pub fn new(message: impl Into<String>) -> Self {
        Self::from_envelope(ErrorEnvelope::new(ErrorCode::NodeFailed, message))
    }

    /// The node refuses its input: `validation_error` naming `field`.
    pub fn invalid_input(field: impl Into<String>, rule: impl Into<String>) -> Self {
        Self::from_envelope(ErrorEnvelope::validation(field, rule))
    }

    /// A failure with an explicit envelope.
    pub fn from_envelope(envelope: ErrorEnvelope) -> Self {
        Self {
            kind: NodeErrorKind::Own(envelope),
            _run: PhantomData,
        }
    }

    /// Whether this is a propagated AI failure.
    pub fn is_ai_failure(&self) -> bool {
        matches!(self.kind, NodeErrorKind::Ai { .. })
    }
}

impl fmt::Debug for NodeError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            NodeErrorKind::Own(e) => f.debug_tuple("NodeError").field(e).finish(),
            NodeErrorKind::Ai { .. } => f.write_str("NodeError(AiFailure(opaque, settled))"),
        }
    }
}

impl fmt::Display for NodeError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            NodeErrorKind::Own(e) => e.fmt(f),
            NodeErrorKind::Ai { .. } => {
                f.write_str("an AI call failed (settled; its cause is private to the host)")
            }
        }
    }
}

impl std::error::Error for NodeError<'_> {}

impl<'run> From<crate::ai::AiFailure<'run>> for NodeError<'run> {
    /// Propagating a failure with `?` settles it; the error keeps the failure's run brand.
    fn from(failure: crate::ai::AiFailure<'run>) -> Self {
        Self {
            kind: NodeErrorKind::Ai {
                id: failure.id,
                book: failure.book,
            },
            _run: PhantomData,
        }
    }
}

impl From<crate::ai::InvalidOutput> for NodeError<'_> {
    /// An output that does not meet the contract fails the node (`node_failed`), its errors in
    /// the message: `completion.into_output()?`.
    fn from(invalid: crate::ai::InvalidOutput) -> Self {
        Self::new(invalid.to_string())
    }
}
