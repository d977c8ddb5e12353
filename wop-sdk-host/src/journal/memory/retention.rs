//! How long the in-memory journal keeps a run once no node of it is executing: up to a number of
//! ended runs and, optionally, up to an age. The oldest ended runs go first.

use foldhash::HashMap;
use std::collections::VecDeque;
use std::time::{Duration, Instant};
use wop_sdk::host::RunId;

/// What the in-memory journal keeps of ended runs (runs with no node executing). A run with a
/// node executing is never dropped, whatever its age. A dropped run is gone: its record, calls,
/// events and charges; replaying it is refused (`replay_source_missing`, naming the rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Retention {
    /// The most ended runs kept (at least 1); the oldest ended goes first.
    pub max_ended_runs: usize,
    /// Ended runs older than this are dropped too (`None`: no age limit).
    pub max_age: Option<Duration>,
}

impl Default for Retention {
    /// The last 10 000 ended runs, whatever their age: about 40 MB for runs of a few calls.
    fn default() -> Self {
        Self {
            max_ended_runs: 10_000,
            max_age: None,
        }
    }
}

impl Retention {
    /// Keeps everything: the journal grows with every run (a test that reads old runs back).
    pub const UNBOUNDED: Self = Self {
        max_ended_runs: usize::MAX,
        max_age: None,
    };
}

/// The ended runs, oldest first. A run begun again after it ended is taken off (lazily: its
/// queue entry is skipped when its generation no longer matches).
#[derive(Default)]
pub(super) struct Ended {
    queue: VecDeque<(RunId, Instant, u64)>,
    /// The generation of each run's latest end; absent once it is begun again.
    live: HashMap<RunId, u64>,
    next: u64,
}

impl Ended {
    /// `run` has no node executing from now on; returns the runs to drop now.
    pub(super) fn end(&mut self, run: &RunId, retention: &Retention) -> Vec<RunId> {
        self.next += 1;
        self.live.insert(run.clone(), self.next);
        let now = Instant::now();
        self.queue.push_back((run.clone(), now, self.next));
        let mut due = Vec::new();
        while let Some((front, at, generation)) = self.queue.front() {
            let current = self.live.get(front) == Some(generation);
            let too_many = self.live.len() > retention.max_ended_runs.max(1);
            let too_old = retention
                .max_age
                .is_some_and(|age| now.duration_since(*at) > age);
            if current && !too_many && !too_old {
                break;
            }
            let Some((front, _, _)) = self.queue.pop_front() else {
                break;
            };
            if current {
                self.live.remove(&front);
                due.push(front);
            }
        }
        due
    }

    /// `run` was begun again: it is not ended any more.
    pub(super) fn resume(&mut self, run: &str) {
        self.live.remove(run);
    }
}
