//! The local host as a conformance target, alone ([`LocalHost`] implements
//! [`ConformanceTarget`]) or behind a wrapper ([`LocalTarget::through`]).

use super::fixture::EchoAttempts;
use super::recording::Recording;
use super::target::{ConformanceTarget, Observed};
use crate::local::{LocalHost, RunOptions};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;
use wop_sdk::host::{BoxFuture, Host, RunId};
use wop_sdk::node::NodeOutcome;
use wop_sdk::wire::{ErrorCode, ErrorEnvelope};

/// The local host prepares each run (journal, the mock's script) while `host` answers the
/// fixture's calls and keeps its events: the local host itself, or a wrapper around it (an
/// adapter, or a test double that alters what the local host answers).
#[derive(Clone)]
pub struct LocalTarget {
    local: LocalHost,
    host: Arc<dyn Host>,
}

impl fmt::Debug for LocalTarget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalTarget")
            .field("local", &self.local)
            .finish_non_exhaustive()
    }
}

impl LocalTarget {
    /// The local host alone.
    pub fn new(local: LocalHost) -> Self {
        let host: Arc<dyn Host> = Arc::new(local.clone());
        Self { local, host }
    }

    /// The local host behind `host`, which answers the node's calls and keeps its events.
    pub fn through(local: LocalHost, host: Arc<dyn Host>) -> Self {
        Self { local, host }
    }
}

async fn observe(recording: &Recording, outcome: NodeOutcome) -> Observed {
    let events = recording.events(&outcome.run_id).await;
    Observed {
        run_id: outcome.run_id,
        output: outcome.result,
        events,
        answers: recording.answers(),
    }
}

async fn run(local: &LocalHost, host: Arc<dyn Host>, input: Value) -> Observed {
    let recording = Arc::new(Recording::new(host));
    let outcome = local
        .run_on(
            Arc::clone(&recording) as Arc<dyn Host>,
            &EchoAttempts,
            input,
            RunOptions::default(),
        )
        .await;
    observe(&recording, outcome).await
}

async fn replay(local: &LocalHost, host: Arc<dyn Host>, source: &RunId) -> Observed {
    // The source's node and input, as the local host recorded them when the run started.
    let meta = match local.journal().run(source).await {
        Ok(Some(record)) => record.meta,
        _ => {
            return Observed {
                run_id: source.clone(),
                output: Err(ErrorEnvelope::new(
                    ErrorCode::ReplaySourceMissing,
                    "the source run is not recorded",
                )),
                events: Vec::new(),
                answers: Vec::new(),
            };
        }
    };
    let (node_id, input) = (meta.node_id, meta.input);
    let recording = Arc::new(Recording::new(host));
    let outcome = local
        .replay_on(
            Arc::clone(&recording) as Arc<dyn Host>,
            source,
            &node_id,
            &EchoAttempts,
            input,
        )
        .await;
    observe(&recording, outcome).await
}

impl ConformanceTarget for LocalTarget {
    fn host(&self) -> Arc<dyn Host> {
        Arc::clone(&self.host)
    }

    fn run_fixture(&self, input: Value) -> BoxFuture<'_, Observed> {
        Box::pin(run(&self.local, Arc::clone(&self.host), input))
    }

    fn replay<'a>(&'a self, source: &'a RunId) -> BoxFuture<'a, Observed> {
        Box::pin(replay(&self.local, Arc::clone(&self.host), source))
    }
}

impl ConformanceTarget for LocalHost {
    fn host(&self) -> Arc<dyn Host> {
        Arc::new(self.clone())
    }

    fn run_fixture(&self, input: Value) -> BoxFuture<'_, Observed> {
        Box::pin(run(self, Arc::new(self.clone()), input))
    }

    fn replay<'a>(&'a self, source: &'a RunId) -> BoxFuture<'a, Observed> {
        Box::pin(replay(self, Arc::new(self.clone()), source))
    }
}
