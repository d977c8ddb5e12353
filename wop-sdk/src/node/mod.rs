//! Nodes: the [`Node`] trait the `#[wop_node]` macro implements, the node context, node errors
//! and the runner that executes one node against a [`crate::host::Host`].

mod call;
mod ctx;
mod error;
mod runner;
mod spec;
mod state;
mod unwind;

pub use ctx::NodeCtx;
pub use error::NodeError;
#[doc(hidden)]
pub use runner::ended;
pub use runner::{NodeOutcome, execute};
pub use spec::{Category, DynNode, Node, NodeSpec, Role};
pub use state::CallReport;
