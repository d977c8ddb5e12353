//! Where each run's records are in the file, and which runs are held *cold*: a run whose nodes
//! ended (the host said so, or it was found ended when the file was opened) is dropped from the
//! records in memory and kept as the offsets of its records, about a hundred bytes instead of a
//! few kilobytes. A cold run is read back from those offsets when something asks for it: for a
//! read, only while it is read; for a write (a redelivery, a second node), for good, until its
//! nodes end again.

use foldhash::HashMap;
use wop_sdk::host::RunId;

/// A run's place in the file.
struct Place {
    /// Its records' offsets, in the file's order.
    offsets: Vec<u64>,
    /// Held cold, with the number of calls it has; `None` while its records are in memory.
    cold: Option<u64>,
}

/// Every run's records in the file.
#[derive(Default)]
pub(super) struct Index {
    runs: HashMap<RunId, Place>,
    /// Calls of the runs held cold.
    cold_calls: u64,
}

impl Index {
    /// Record at `at` is of `run`; answers whether the run is held cold (the record is then not
    /// applied: it is read back with the others).
    pub(super) fn note(&mut self, run: &str, at: u64) -> bool {
        match self.runs.get_mut(run) {
            Some(place) => {
                place.offsets.push(at);
                place.cold.is_some()
            }
            None => {
                self.runs.insert(
                    RunId::new(run),
                    Place {
                        offsets: vec![at],
                        cold: None,
                    },
                );
                false
            }
        }
    }

    /// The run is dropped from memory with its `calls`.
    pub(super) fn freeze(&mut self, run: &str, calls: u64) {
        if let Some(place) = self.runs.get_mut(run)
            && place.cold.is_none()
        {
            place.cold = Some(calls);
            self.cold_calls += calls;
        }
    }

    /// The run is read back into memory: its records' offsets and its calls, when it was cold.
    pub(super) fn thaw(&mut self, run: &str) -> Option<(Vec<u64>, u64)> {
        let place = self.runs.get_mut(run)?;
        let calls = place.cold.take()?;
        self.cold_calls -= calls;
        Some((place.offsets.clone(), calls))
    }

    /// Where `run`'s first record is (runs are listed in that order).
    pub(super) fn first(&self, run: &str) -> u64 {
        self.runs
            .get(run)
            .and_then(|p| p.offsets.first().copied())
            .unwrap_or(u64::MAX)
    }

    /// Every run the file holds.
    pub(super) fn runs(&self) -> impl Iterator<Item = &RunId> {
        self.runs.keys()
    }

    /// The runs held cold.
    pub(super) fn cold(&self) -> Vec<RunId> {
        self.runs
            .iter()
            .filter(|(_, p)| p.cold.is_some())
            .map(|(r, _)| r.clone())
            .collect()
    }

    /// Calls of the runs held cold.
    pub(super) fn cold_calls(&self) -> u64 {
        self.cold_calls
    }
}
