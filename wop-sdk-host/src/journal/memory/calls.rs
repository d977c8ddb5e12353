//! A run's calls in the in-memory journal: one list sorted by call index and then node instance.
//! A run's calls arrive in index order, so a lookup is a binary search that compares integers
//! (a node id only between calls of one index), an insert is usually a push, and a run of one
//! call holds one allocation.

use super::super::{Charge, Entry, Lease};
use std::cmp::Ordering;
use std::sync::Arc;

/// One call: its identity and outcome, its charge, and its lease while it is in flight.
pub(super) struct Call {
    pub(super) entry: Entry,
    pub(super) charge: Option<Charge>,
    /// Boxed: held only while the call is in flight, so an ended call keeps a pointer, not a
    /// lease.
    pub(super) lease: Option<Box<Lease>>,
}

/// The calls of one run.
#[derive(Default)]
pub(super) struct RunCalls {
    /// Sorted by index and then node id; each node id shared with the calls' keys
    /// (`AttemptKey::node_id`), not copied.
    calls: Vec<(Arc<str>, u32, Call)>,
}

impl RunCalls {
    fn find(&self, node: &str, index: u32) -> Result<usize, usize> {
        self.calls
            .binary_search_by(|(n, i, _)| match i.cmp(&index) {
                Ordering::Equal => (**n).cmp(node),
                other => other,
            })
    }

    pub(super) fn get(&self, node: &str, index: u32) -> Option<&Call> {
        let at = self.find(node, index).ok()?;
        Some(&self.calls[at].2)
    }

    pub(super) fn get_mut(&mut self, node: &str, index: u32) -> Option<&mut Call> {
        let at = self.find(node, index).ok()?;
        Some(&mut self.calls[at].2)
    }

    /// Adds a call (replacing one with the same node and index: the caller looked first).
    pub(super) fn insert(&mut self, node: &Arc<str>, index: u32, call: Call) {
        match self.find(node, index) {
            Ok(found) => self.calls[found].2 = call,
            Err(slot) => {
                if self.calls.capacity() == 0 {
                    // Most runs make one call: room for it alone.
                    self.calls.reserve_exact(1);
                }
                self.calls.insert(slot, (Arc::clone(node), index, call));
            }
        }
    }

    /// How many calls the run holds.
    pub(super) fn len(&self) -> usize {
        self.calls.len()
    }

    /// Every call, with its node and index, by index and then node.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, u32, &Call)> {
        self.calls
            .iter()
            .map(|(node, index, call)| (&**node, *index, call))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::Fingerprint;

    fn call(id: &str) -> Call {
        Call {
            entry: Entry {
                attempt_id: id.into(),
                fingerprint: Fingerprint([0; 32]),
                requests: 0,
                outcome: None,
            },
            charge: None,
            lease: None,
        }
    }

    #[test]
    fn calls_are_found_by_node_and_index_whatever_order_they_came_in() {
        let mut calls = RunCalls::default();
        for (node, index) in [("a", 2), ("a", 0), ("b", 0), ("a", 1), ("a", 9)] {
            assert!(calls.get(node, index).is_none());
            calls.insert(&Arc::from(node), index, call(&format!("{node}{index}")));
        }
        assert_eq!(calls.len(), 5);
        for (node, index) in [("a", 0), ("a", 1), ("a", 2), ("a", 9), ("b", 0)] {
            let found = calls.get(node, index).map(|c| c.entry.attempt_id.as_str());
            assert_eq!(found, Some(format!("{node}{index}").as_str()));
        }
        assert!(calls.get("a", 3).is_none() && calls.get("c", 0).is_none());
        if let Some(c) = calls.get_mut("a", 1) {
            c.entry.requests = 4;
        }
        assert_eq!(calls.get("a", 1).map(|c| c.entry.requests), Some(4));
        let listed: Vec<_> = calls.iter().map(|(n, i, _)| (n.to_owned(), i)).collect();
        assert_eq!(
            listed,
            [("a", 0), ("b", 0), ("a", 1), ("a", 2), ("a", 9)].map(|(n, i)| (n.to_owned(), i))
        );
    }
}
