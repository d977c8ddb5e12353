//! The runs the host keeps while their nodes execute, and admission: the ceilings on
//! generations in flight (host-wide) and in total (per run), enforced before each provider
//! request. A refused request is not an attempt.

use super::lock::lock;
use crate::journal::Journal;
use foldhash::HashMap;
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use wop_sdk::host::RunId;
use wop_sdk::wire::{ErrorCode, ErrorEnvelope};

/// What the host keeps about a run while one of its nodes executes; dropped when the last ends,
/// so a long-lived host does not grow with the runs it has finished.
struct ActiveRun {
    /// The run's owner, as the one beneficiary of a charge: shared with the host's default
    /// owner when it is the default (most runs), and with each charge of the run's calls.
    owner: Arc<[String]>,
    replay_of: Option<RunId>,
    generations: u32,
    nodes: usize,
}

/// A request the ceilings refused: the public envelope and the private cause.
pub(crate) struct Refusal {
    pub(crate) public: ErrorEnvelope,
    pub(crate) cause: String,
}

pub(crate) struct Runs {
    runs: Mutex<HashMap<RunId, ActiveRun>>,
    generations: Arc<Semaphore>,
    max_per_run: Option<u32>,
    default_owner: Arc<[String]>,
}

/// Keeps a run active while it lives: dropped (the node ended, or its task was aborted), the run
/// is released, and when it was the run's last node executing the journal hears the run ended
/// (its retention may drop it from then on).
pub(crate) struct Active<'a> {
    runs: &'a Runs,
    journal: &'a dyn Journal,
    run: RunId,
}

impl Drop for Active<'_> {
    fn drop(&mut self) {
        let ended = {
            let mut runs = lock(&self.runs.runs);
            match runs.get_mut(&self.run) {
                Some(r) => {
                    r.nodes = r.nodes.saturating_sub(1);
                    r.nodes == 0 && runs.remove(&self.run).is_some()
                }
                None => false,
            }
        };
        if ended {
            self.journal.run_ended(&self.run);
        }
    }
}

impl Runs {
    pub(crate) fn new(
        max_concurrent: usize,
        max_per_run: Option<u32>,
        default_owner: String,
    ) -> Self {
        Self {
            runs: Mutex::default(),
            generations: Arc::new(Semaphore::new(max_concurrent)),
            max_per_run,
            default_owner: Arc::from([default_owner]),
        }
    }

    /// Whether a per-run ceiling is set (then a run's past generations must be read back).
    pub(crate) fn counts_generations(&self) -> bool {
        self.max_per_run.is_some()
    }

    /// A node of `run` starts: the run's record is kept while any of its nodes executes. The
    /// generations already charged to the run (`charged`) count against its ceiling: a
    /// redelivery does not reset it.
    pub(crate) fn activate<'a>(
        &'a self,
        journal: &'a dyn Journal,
        run: &RunId,
        owner: &str,
        replay_of: Option<RunId>,
        charged: u32,
    ) -> Active<'a> {
        let mut runs = lock(&self.runs);
        let entry = runs.entry(run.clone()).or_insert_with(|| ActiveRun {
            owner: self.shared_owner(owner),
            replay_of: None,
            generations: charged,
            nodes: 0,
        });
        if entry.owner[0] != owner {
            entry.owner = self.shared_owner(owner);
        }
        entry.replay_of = replay_of;
        entry.generations = entry.generations.max(charged);
        entry.nodes += 1;
        Active {
            runs: self,
            journal,
            run: run.clone(),
        }
    }

    /// `owner` as kept: the default owner's shared text when it is that one.
    fn shared_owner(&self, owner: &str) -> Arc<[String]> {
        if self.default_owner[0] == owner {
            Arc::clone(&self.default_owner)
        } else {
            Arc::from([owner.to_owned()])
        }
    }

    /// Who is charged for `run`'s calls that name no beneficiary: its owner, shared.
    pub(crate) fn owner(&self, run: &RunId) -> Arc<[String]> {
        let runs = lock(&self.runs);
        Arc::clone(runs.get(run).map_or(&self.default_owner, |r| &r.owner))
    }

    /// The source run when `run` is a replay fork.
    pub(crate) fn replay_source(&self, run: &RunId) -> Option<RunId> {
        lock(&self.runs).get(run).and_then(|r| r.replay_of.clone())
    }

    /// How many runs are kept.
    pub(crate) fn len(&self) -> usize {
        lock(&self.runs).len()
    }

    /// Enforces the ceilings before a provider request: the run's total, then a host-wide slot
    /// (held by the returned permit while the request is in flight).
    pub(crate) async fn admit(&self, run: &RunId) -> Result<OwnedSemaphorePermit, Refusal> {
        if let Some(max) = self.max_per_run {
            let mut runs = lock(&self.runs);
            // A run used through `Host::call_ai` outside a node execution is counted only while
            // the host keeps it.
            let used = &mut runs
                .entry(run.clone())
                .or_insert_with(|| ActiveRun {
                    owner: Arc::clone(&self.default_owner),
                    replay_of: None,
                    generations: 0,
                    nodes: 0,
                })
                .generations;
            if *used >= max {
                return Err(Refusal {
                    public: ErrorEnvelope::new(
                        ErrorCode::BudgetExhausted,
                        "the run reached the host's ceiling on total generations",
                    )
                    .with_detail("ceiling", "maxGenerationsPerRun")
                    .with_detail("limit", max),
                    cause: format!("policy: run ceiling of {max} generations reached"),
                });
            }
            *used += 1;
        }
        Arc::clone(&self.generations)
            .acquire_owned()
            .await
            .map_err(|_| Refusal {
                public: ErrorEnvelope::new(
                    ErrorCode::UpstreamUnavailable,
                    "the host is shutting down",
                ),
                cause: "semaphore closed".into(),
            })
    }
}
