//! Running a node on its own types: [`LocalHost::run_typed`] and the error that says why a run
//! gave no output ([`RunError`]).

use super::host::LocalHost;
use super::nodes::RunOptions;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use wop_sdk::host::RunId;
use wop_sdk::node::Node;
use wop_sdk::wire::{ErrorCode, ErrorEnvelope};

/// Why [`LocalHost::run_typed`] gave no output.
///
/// Each case says where the run stopped and keeps what a caller acts on: the run id (to read
/// the run's events, ledger or diagnostics), and for a failure the public error of `node.failed`
/// with its code ([`RunError::code`]).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum RunError {
    /// The input did not serialize to JSON (for example a map with non-string keys). Nothing
    /// ran and no run was recorded.
    Input {
        /// What serde said.
        message: String,
    },
    /// The host refused to start the run before the node ran: it could not record the run in
    /// its journal, or the run's provider script is invalid. The run's record holds the
    /// refusal as its `node.failed`.
    Refused {
        /// The run.
        run_id: RunId,
        /// The node instance.
        node_id: String,
        /// The refusal, e.g. `wop-sdk.upstream_unavailable` or `validation_error` naming the
        /// script's field.
        error: ErrorEnvelope,
    },
    /// The node ran and failed: its own error, a failed AI call it propagated with `?` (the
    /// failure's public code), a call the ceilings or its budget refused, its input refused
    /// (`validation_error` naming the field), or a capability it requires that the host lacks.
    NodeFailed {
        /// The run.
        run_id: RunId,
        /// The node instance.
        node_id: String,
        /// The public error of `node.failed`: code, message and details.
        error: ErrorEnvelope,
    },
    /// The node completed, but its recorded output does not read back as the node's output
    /// type (its `Serialize` and `Deserialize` disagree).
    Output {
        /// The run.
        run_id: RunId,
        /// The node instance.
        node_id: String,
        /// The output as the run recorded it.
        output: Value,
        /// What serde said, with the path of the offending key.
        message: String,
    },
}

impl RunError {
    /// The run, when one was started.
    pub fn run_id(&self) -> Option<&RunId> {
        match self {
            Self::Input { .. } => None,
            Self::Refused { run_id, .. }
            | Self::NodeFailed { run_id, .. }
            | Self::Output { run_id, .. } => Some(run_id),
        }
    }

    /// The public error the run recorded (`node.failed`), when it failed or was refused.
    pub fn envelope(&self) -> Option<&ErrorEnvelope> {
        match self {
            Self::Refused { error, .. } | Self::NodeFailed { error, .. } => Some(error),
            Self::Input { .. } | Self::Output { .. } => None,
        }
    }

    /// The error code the run recorded, when it failed or was refused: `wop-sdk.node_failed` for
    /// the node's own error, a failed AI call's public code (`envelope_refusal`, …), …
    pub fn code(&self) -> Option<ErrorCode> {
        self.envelope().map(|e| e.error)
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Input { message } => {
                write!(f, "the node input does not serialize to JSON: {message}")
            }
            Self::Refused {
                run_id,
                node_id,
                error,
            } => write!(
                f,
                "the host refused to start node `{node_id}` of run `{run_id}`: {error}"
            ),
            Self::NodeFailed {
                run_id,
                node_id,
                error,
            } => write!(f, "node `{node_id}` of run `{run_id}` failed: {error}"),
            Self::Output {
                run_id,
                node_id,
                message,
                ..
            } => write!(
                f,
                "node `{node_id}` of run `{run_id}` completed, but its output does not read back \
                 as the node's output type: {message}"
            ),
        }
    }
}

impl std::error::Error for RunError {}

impl LocalHost {
    /// Runs `node` on its typed `input` in a new run and gives its typed output: the typed form
    /// of [`LocalHost::run`].
    ///
    /// Named `run_typed` and called like `run` (`host.run_typed(&node, input)`, the node by
    /// reference, the input its own type): the two read the same, and the type of `input` picks
    /// the node's types, so no turbofish is needed. Use [`LocalHost::run`] when you need the
    /// whole [`wop_sdk::node::NodeOutcome`] (the call reports, the budget) as well as the output.
    ///
    /// The run is the one [`LocalHost::run`] makes: the input is written as JSON once, as the
    /// run's record keeps it, and the output is read back from the JSON `node.completed`
    /// recorded, so what you get is what the run recorded and a replay reproduces. That is why
    /// `N::Input` must be `Serialize` and `N::Output` `Deserialize`.
    ///
    /// ```rust,no_run
    /// # use wop_sdk_host::local::{LocalHost, RunError};
    /// # use wop_sdk::{NodeCtx, NodeError, wop_node};
    /// #[wop_node(type_id = "community.example.shout", version = "1.0.0")]
    /// async fn shout(ctx: &NodeCtx<'_>, text: String) -> Result<String, NodeError> {
    ///     Ok(text.to_uppercase())
    /// }
    /// # async fn demo() -> Result<(), RunError> {
    /// let host = LocalHost::builder().build();
    /// assert_eq!(host.run_typed(&Shout, "hey".to_owned()).await?, "HEY");
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run_typed<N>(&self, node: &N, input: N::Input) -> Result<N::Output, RunError>
    where
        N: Node,
        N::Input: Serialize,
        N::Output: DeserializeOwned,
    {
        self.run_typed_with(node, input, RunOptions::default())
            .await
    }

    /// [`LocalHost::run_typed`] with options (an existing run id: a further node of that run).
    pub async fn run_typed_with<N>(
        &self,
        node: &N,
        input: N::Input,
        options: RunOptions,
    ) -> Result<N::Output, RunError>
    where
        N: Node,
        N::Input: Serialize,
        N::Output: DeserializeOwned,
    {
        let input = serde_json::to_value(&input).map_err(|e| RunError::Input {
            message: e.to_string(),
        })?;
        let (outcome, started) = self
            .start_on(Arc::new(self.clone()), node, input, options)
            .await;
        let run_id = outcome.run_id;
        let node_id = outcome.node_id;
        match outcome.result {
            Ok(output) => match serde_path_to_error::deserialize(&output) {
                Ok(typed) => Ok(typed),
                Err(e) => {
                    let path = e.path().to_string();
                    let error = e.into_inner();
                    Err(RunError::Output {
                        message: if path == "." {
                            error.to_string()
                        } else {
                            format!("at `{path}`: {error}")
                        },
                        run_id,
                        node_id,
                        output,
                    })
                }
            },
            Err(error) if started => Err(RunError::NodeFailed {
                run_id,
                node_id,
                error,
            }),
            Err(error) => Err(RunError::Refused {
                run_id,
                node_id,
                error,
            }),
        }
    }
}
