//! What the harness drives and what it sees: a host under test ([`ConformanceTarget`]) and what
//! an outside party observed of one fixture run ([`Observed`]).

use serde_json::Value;
use std::sync::Arc;
use wop_sdk::host::{BoxFuture, Host, RunId};
use wop_sdk::wire::{ErrorEnvelope, RunEvent};

/// What an outside party observed of one fixture run.
#[derive(Clone, Debug, PartialEq)]
pub struct Observed {
    /// The run.
    pub run_id: RunId,
    /// The fixture node's output (`node.completed`) or its error (`node.failed`).
    pub output: Result<Value, ErrorEnvelope>,
    /// The run's event log.
    pub events: Vec<RunEvent>,
    /// Each `ctx.callAI` answer exactly as the host gave it, in call order (the host's own
    /// bytes, before the SDK parsed them): a target records them at its host boundary, e.g. with
    /// [`super::Recording`]. The judges of replay and of `usage` read these.
    pub answers: Vec<Value>,
}

/// A host under test, as the harness drives it.
///
/// The methods are async (they return a [`BoxFuture`]) so that `dyn ConformanceTarget` works.
pub trait ConformanceTarget: Send + Sync {
    /// The host: its capability document gates the legs.
    fn host(&self) -> Arc<dyn Host>;

    /// Runs the fixture node `conformance.callai.echo-attempts` on `input` in a new run (the
    /// host's mock serves `input.script`), and reports what was observed.
    fn run_fixture(&self, input: Value) -> BoxFuture<'_, Observed>;

    /// Runs a replay fork of `source` (a fixture run) and reports what was observed of the fork.
    fn replay<'a>(&'a self, source: &'a RunId) -> BoxFuture<'a, Observed>;
}
