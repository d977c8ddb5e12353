//! Running nodes on the local host: a new run, a further node of a run, a redelivery, a replay
//! fork. Each keeps the run's record while the node executes (released even when the task is
//! aborted) and readies the provider's script.

use super::host::LocalHost;
use crate::journal::{RunMeta, RunRecord};
use crate::provider::mock::Script;
use serde_json::Value;
use std::borrow::Cow;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use wop_sdk::budget::BudgetStatus;
use wop_sdk::host::{Host, RunId};
use wop_sdk::node::{DynNode, NodeOutcome, execute};
use wop_sdk::wire::{ErrorCode, ErrorEnvelope};

/// How to start a node on the local host.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The run (a new id when `None`).
    pub run_id: Option<RunId>,
    /// The node instance id (default `main`).
    pub node_id: Option<String>,
    /// The run's owner (default from the config).
    pub owner: Option<String>,
    /// A script for this run's requests (a scripted provider only; see also the input's `script`).
    pub script: Option<Script>,
}

struct Start<'a> {
    run_id: &'a RunId,
    node_id: &'a Arc<str>,
    owner: &'a Arc<str>,
    replay_of: Option<&'a RunId>,
}

static RUN_COUNTER: AtomicU64 = AtomicU64::new(1);

/// `n` as 16 lowercase hex digits into `out` (16 bytes).
fn hex16(out: &mut [u8], n: u64) {
    for (i, digit) in out.iter_mut().enumerate() {
        let shift = 4 * (15 - i);
        *digit = b"0123456789abcdef"[((n >> shift) & 0xf) as usize];
    }
}

impl LocalHost {
    /// A new v2 run id `<tenant>/<opaque>`: the tenant `local`, then the host's whole seed (time,
    /// process, host) and a counter as 32 hex characters (the protocol asks 16..=128), so runs
    /// started by two processes on one journal do not collide.
    fn new_run_id(&self) -> RunId {
        let n = RUN_COUNTER.fetch_add(1, Ordering::SeqCst);
        // Written on the stack: the id's one allocation is the shared id itself.
        let mut id = *b"local/00000000000000000000000000000000";
        let (seed, counter) = id[6..].split_at_mut(16);
        hex16(seed, self.inner.seed);
        hex16(counter, n);
        RunId::new(std::str::from_utf8(&id).unwrap_or_default())
    }

    /// This host as a node execution holds it: its parts (`Inner` is the [`Host`]), shared.
    fn as_host(&self) -> Arc<dyn Host> {
        Arc::clone(&self.inner) as Arc<dyn Host>
    }

    /// The generations already charged to `run`, when a per-run ceiling needs them.
    async fn charged_generations(&self, run: &RunId) -> u32 {
        if !self.inner.runs.counts_generations() {
            return 0;
        }
        self.inner
            .journal
            .charges(Some(run))
            .await
            .map_or(0, |rows| rows.iter().map(|r| r.charge.generations).sum())
    }

    /// Runs `node` on `input` in a new run.
    pub async fn run(&self, node: &dyn DynNode, input: Value) -> NodeOutcome {
        self.run_with(node, input, RunOptions::default()).await
    }

    /// Runs `node` on `input` with options (an existing run id: a further node of that run).
    pub async fn run_with(
        &self,
        node: &dyn DynNode,
        input: Value,
        options: RunOptions,
    ) -> NodeOutcome {
        self.run_on(self.as_host(), node, input, options).await
    }

    /// Like [`LocalHost::run_with`], but the node reaches its host through `host`: this local
    /// host prepares the run (journal record, the provider's script) and `host` (an adapter or a
    /// wrapper around this host, e.g. a test double) answers the node's calls and keeps its events.
    pub async fn run_on(
        &self,
        host: Arc<dyn Host>,
        node: &dyn DynNode,
        input: Value,
        options: RunOptions,
    ) -> NodeOutcome {
        self.start_on(host, node, input, options).await.0
    }

    /// [`LocalHost::run_on`], and whether the node started (`false`: the host refused the run).
    pub(super) async fn start_on(
        &self,
        host: Arc<dyn Host>,
        node: &dyn DynNode,
        input: Value,
        options: RunOptions,
    ) -> (NodeOutcome, bool) {
        let RunOptions {
            run_id,
            node_id,
            owner,
            script,
        } = options;
        let run_id = run_id.unwrap_or_else(|| self.new_run_id());
        // The host's shared defaults unless the options name others (then made shared once).
        let names = &self.inner.names;
        let node_id = node_id.map_or_else(|| Arc::clone(&names.node), Arc::from);
        let owner = owner.map_or_else(|| Arc::clone(&names.owner), Arc::from);
        let start = Start {
            run_id: &run_id,
            node_id: &node_id,
            owner: &owner,
            replay_of: None,
        };
        let charged = self.charged_generations(&run_id).await;
        let active =
            self.inner
                .runs
                .activate(self.inner.journal.as_ref(), &run_id, &owner, None, charged);
        // `cargo wop test`'s record of the run (`record.rs`), when asked for.
        let recorded = super::record::on(&self.inner).then(|| input.clone());
        let (outcome, started) = match self.prepare(start, node, &input, script).await {
            Some(refused) => (refused, false),
            None => (
                self.execute_in_time(host, run_id.clone(), node_id, node, input)
                    .await,
                true,
            ),
        };
        if let Some(input) = recorded.filter(|_| started) {
            super::record::write(&self.inner, node.spec().type_id, &input, &outcome);
        }
        drop(active);
        self.inner.diagnostics.run_finished(&run_id);
        (outcome, started)
    }

    /// [`execute`] within the host's node timeout: past it, the node's execution is dropped
    /// (its calls, reservations and spawned `JoinSet`s with it) and it fails
    /// `wop-sdk.node_timeout`, recorded as its `node.failed`.
    async fn execute_in_time(
        &self,
        host: Arc<dyn Host>,
        run_id: RunId,
        node_id: Arc<str>,
        node: &dyn DynNode,
        input: Value,
    ) -> NodeOutcome {
        let limit = self.inner.config.node_timeout;
        let running = execute(
            Arc::clone(&host),
            run_id.clone(),
            Arc::clone(&node_id),
            node,
            input,
        );
        if let Ok(outcome) = tokio::time::timeout(limit, running).await {
            return outcome;
        }
        let result = Err(ErrorEnvelope::new(
            ErrorCode::NodeTimeout,
            format!(
                "the node did not end within its timeout of {} ms",
                limit.as_millis()
            ),
        ));
        host.record_event(&run_id, wop_sdk::node::ended(Arc::clone(&node_id), &result))
            .await;
        NodeOutcome {
            run_id,
            node_id: String::from(&*node_id),
            result,
            calls: Vec::new(),
            budget: BudgetStatus::default(),
        }
    }

    /// Records the run and readies the provider; the refusal of a run that cannot start.
    async fn prepare(
        &self,
        start: Start<'_>,
        node: &dyn DynNode,
        input: &Value,
        script: Option<Script>,
    ) -> Option<NodeOutcome> {
        let Start {
            run_id,
            node_id,
            owner,
            replay_of,
        } = start;
        let record = RunRecord {
            run_id: run_id.clone(),
            owner: Arc::clone(owner),
            replay_of: replay_of.map(|r| r.as_str().to_owned()),
            meta: RunMeta {
                node_id: Arc::clone(node_id),
                type_id: Cow::Borrowed(node.spec().type_id),
                input: input.clone(),
            },
        };
        let mut refusal = self.inner.journal.begin_run(record).await.err().map(|e| {
            ErrorEnvelope::new(
                ErrorCode::UpstreamUnavailable,
                "the host could not record the run",
            )
            .with_detail("journal", e.to_string())
        });
        if refusal.is_none()
            && let Some(scripts) = &self.inner.scripts
        {
            match script {
                Some(s) => scripts.set_run_script(run_id, s),
                None => {
                    refusal = scripts
                        .install_input_script(run_id, input)
                        .err()
                        .map(|e| e.to_envelope())
                }
            }
        }
        let error = refusal?;
        let result = Err(error);
        let event = wop_sdk::node::ended(Arc::clone(node_id), &result);
        self.inner.live.observe(run_id, &event);
        let _ = self.inner.journal.append_event(run_id, event).await;
        Some(NodeOutcome {
            run_id: run_id.clone(),
            node_id: String::from(&**node_id),
            result,
            calls: Vec::new(),
            budget: BudgetStatus::default(),
        })
    }

    /// Delivers `node` of an existing run again (an at-least-once queue, a worker crash): its
    /// calls re-enter with the same identities, so recorded outcomes are replayed, a changed
    /// request is refused, and an interrupted dispatch is a terminal failure.
    pub async fn redeliver(
        &self,
        run_id: &RunId,
        node_id: &str,
        node: &dyn DynNode,
        input: Value,
    ) -> NodeOutcome {
        let (owner, replay_of) = match self.inner.journal.run(run_id).await {
            Ok(Some(r)) => (r.owner, r.replay_of.map(RunId::new)),
            _ => (Arc::clone(&self.inner.names.owner), None),
        };
        let charged = self.charged_generations(run_id).await;
        let active = self.inner.runs.activate(
            self.inner.journal.as_ref(),
            run_id,
            &owner,
            replay_of,
            charged,
        );
        let outcome = execute(self.as_host(), run_id.clone(), node_id, node, input).await;
        drop(active);
        self.inner.diagnostics.run_finished(run_id);
        outcome
    }

    /// A replay fork of `source`: a new run whose calls are served from the source's recorded
    /// outcomes, with no provider request (`replay_source_missing` when one is not recorded).
    pub async fn replay(
        &self,
        source: &RunId,
        node_id: &str,
        node: &dyn DynNode,
        input: Value,
    ) -> NodeOutcome {
        self.replay_on(self.as_host(), source, node_id, node, input)
            .await
    }

    /// Like [`LocalHost::replay`], but the fork's node reaches its host through `host` (see
    /// [`LocalHost::run_on`]).
    pub async fn replay_on(
        &self,
        host: Arc<dyn Host>,
        source: &RunId,
        node_id: &str,
        node: &dyn DynNode,
        input: Value,
    ) -> NodeOutcome {
        // A fork id no run of the journal has: with a durable journal, another process may have
        // made forks of the same source already (its counter started at 1 too).
        let fork = loop {
            let candidate = RunId::new(format!(
                "{source}.replay-{}",
                RUN_COUNTER.fetch_add(1, Ordering::SeqCst)
            ));
            if !matches!(self.inner.journal.run(&candidate).await, Ok(Some(_))) {
                break candidate;
            }
        };
        let owner = match self.inner.journal.run(source).await {
            Ok(Some(r)) => r.owner,
            // Never recorded here, or dropped by the journal's retention: nothing to replay.
            Ok(None) => {
                let error = ErrorEnvelope::new(
                    ErrorCode::ReplaySourceMissing,
                    format!(
                        "run `{source}` is not in the journal: it was never recorded here, or the \
                         journal's retention dropped it after it ended (an in-memory journal keeps \
                         the last `Retention::max_ended_runs` ended runs)"
                    ),
                )
                .with_detail("runId", source.as_str());
                return NodeOutcome {
                    run_id: fork,
                    node_id: node_id.to_owned(),
                    result: Err(error),
                    calls: Vec::new(),
                    budget: BudgetStatus::default(),
                };
            }
            Err(_) => Arc::clone(&self.inner.names.owner),
        };
        let node_id = Arc::from(node_id);
        let start = Start {
            run_id: &fork,
            node_id: &node_id,
            owner: &owner,
            replay_of: Some(source),
        };
        let active = self.inner.runs.activate(
            self.inner.journal.as_ref(),
            &fork,
            &owner,
            Some(source.clone()),
            0,
        );
        let outcome = match self
            .prepare(start, node, &input, Some(Script::default()))
            .await
        {
            Some(refused) => refused,
            None => execute(host, fork.clone(), node_id, node, input).await,
        };
        drop(active);
        self.inner.diagnostics.run_finished(&fork);
        outcome
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn hex16_writes_the_digits_format_writes() {
        for n in [0u64, 1, 0xabc, 0x0123_4567_89ab_cdef, u64::MAX] {
            let mut out = [0u8; 16];
            super::hex16(&mut out, n);
            assert_eq!(
                std::str::from_utf8(&out).ok(),
                Some(format!("{n:016x}").as_str())
            );
        }
    }
}
