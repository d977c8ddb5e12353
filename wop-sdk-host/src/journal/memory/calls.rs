//! A run's calls in the in-memory journal, by node instance and then call index: a short list of
//! nodes, each with its calls sorted by index. A run has a few nodes and its calls arrive in
//! index order, so a lookup is a short scan and a binary search, an insert is a push, and a run
//! of one call holds two small allocations rather than two hash tables.

use super::super::{Charge, Entry, Lease};
use std::sync::Arc;

/// One call: its identity and outcome, its charge, and its lease while it is in flight.
pub(super) struct Call {
    pub(super) entry: Entry,
    pub(super) charge: Option<Charge>,
    /// Boxed: held only while the call is in flight, so an ended call keeps a pointer, not a
    /// lease.
    pub(super) lease: Option<Box<Lease>>,
}

/// A node's calls, sorted by index.
type NodeCalls = Vec<(u32, Call)>;

/// The calls of one run.
#[derive(Default)]
pub(super) struct RunCalls {
    /// Each node's id shared with the calls' keys (`AttemptKey::node_id`), not copied.
    nodes: Vec<(Arc<str>, NodeCalls)>,
}

impl RunCalls {
    fn node(&self, node: &str) -> Option<&[(u32, Call)]> {
        self.nodes
            .iter()
            .find(|(n, _)| **n == *node)
            .map(|(_, calls)| calls.as_slice())
    }

    pub(super) fn get(&self, node: &str, index: u32) -> Option<&Call> {
        let calls = self.node(node)?;
        let at = calls.binary_search_by_key(&index, |(i, _)| *i).ok()?;
        Some(&calls[at].1)
    }

    pub(super) fn get_mut(&mut self, node: &str, index: u32) -> Option<&mut Call> {
        let (_, calls) = self.nodes.iter_mut().find(|(n, _)| **n == *node)?;
        let at = calls.binary_search_by_key(&index, |(i, _)| *i).ok()?;
        Some(&mut calls[at].1)
    }

    /// Adds a call that is not there yet (the caller looked).
    pub(super) fn insert(&mut self, node: &Arc<str>, index: u32, call: Call) {
        let at = match self.nodes.iter().position(|(n, _)| *n == *node) {
            Some(at) => at,
            None => {
                self.nodes.push((Arc::clone(node), Vec::with_capacity(1)));
                self.nodes.len() - 1
            }
        };
        let calls = &mut self.nodes[at].1;
        match calls.binary_search_by_key(&index, |(i, _)| *i) {
            Ok(found) => calls[found] = (index, call),
            Err(slot) => calls.insert(slot, (index, call)),
        }
    }

    /// How many calls the run holds.
    pub(super) fn len(&self) -> usize {
        self.nodes.iter().map(|(_, calls)| calls.len()).sum()
    }

    /// Every call, with its node and index.
    pub(super) fn iter(&self) -> impl Iterator<Item = (&str, u32, &Call)> {
        self.nodes.iter().flat_map(|(node, calls)| {
            calls
                .iter()
                .map(move |(index, call)| (&**node, *index, call))
        })
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
            [("a", 0), ("a", 1), ("a", 2), ("a", 9), ("b", 0)].map(|(n, i)| (n.to_owned(), i))
        );
    }
}
