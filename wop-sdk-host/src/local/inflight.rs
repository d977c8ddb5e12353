//! The calls this process is dispatching, by identity: a second entry with the same identity
//! and request reattaches to the first, one with another request is a mismatch; a call whose
//! caller gave up leaves the table. Also this host's attempt ids and lease holder name.

use super::lock::lock;
use crate::journal::{Fingerprint, Lease};
use foldhash::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;
use wop_sdk::host::{AttemptKey, HostFailure};
use wop_sdk::wire::CallAiResult;

pub(super) type Answer = Result<CallAiResult, HostFailure>;
pub(super) type Waiter = watch::Receiver<Option<Answer>>;

/// Where a call in flight sends its answer to the entries that reattached to it: made by the
/// first of them (most calls have none, and pay for no channel).
type Answers = Option<watch::Sender<Option<Answer>>>;

pub(crate) struct Identities {
    in_flight: Mutex<HashMap<AttemptKey, (Fingerprint, Answers)>>,
    next_id: AtomicU64,
    /// `att_<seed as 16 hex>`: every attempt id of this host starts with it.
    id_prefix: String,
    /// This host's name on the leases it takes.
    holder: Arc<str>,
}

/// A call this process is dispatching. Dropped (the caller gave up), it leaves the in-flight
/// table, and a reattached waiter learns the call was lost.
pub(super) struct Slot<'a> {
    identities: &'a Identities,
    key: &'a AttemptKey,
    /// The call left the table with its answer (`finish`).
    finished: bool,
}

impl Slot<'_> {
    pub(super) fn finish(mut self, answer: &Answer) {
        self.finished = true;
        let entry = lock(&self.identities.in_flight).remove(self.key);
        if let Some((_, Some(tx))) = entry
            && tx.receiver_count() > 0
        {
            let _ = tx.send(Some(answer.clone()));
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        if !self.finished {
            // The sender goes with the entry: a reattached waiter learns the call was lost.
            lock(&self.identities.in_flight).remove(self.key);
        }
    }
}

pub(super) enum Entry<'a> {
    Fresh(Slot<'a>),
    Attach(Waiter),
    Mismatch,
}

impl Identities {
    pub(crate) fn new(seed: u64) -> Self {
        Self {
            in_flight: Mutex::default(),
            next_id: AtomicU64::new(1),
            id_prefix: format!("att_{seed:016x}"),
            holder: Arc::from(format!("host-{seed:016x}")),
        }
    }

    /// A new attempt id: this host's seed (time and process id at build) and a counter (at
    /// least 6 hex digits), so ids from two processes sharing a journal do not collide. It names
    /// the call; it carries nothing of the request.
    pub(super) fn new_attempt_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::Relaxed);
        let mut id = String::with_capacity(self.id_prefix.len() + 16);
        id.push_str(&self.id_prefix);
        wop_sdk::hex::push_u64(&mut id, n, 6);
        id
    }

    /// A lease on a call of this host, renewed now.
    pub(super) fn lease(&self) -> Lease {
        Lease::now(Arc::clone(&self.holder))
    }

    pub(super) fn enter<'a>(&'a self, key: &'a AttemptKey, fp: Fingerprint) -> Entry<'a> {
        let mut in_flight = lock(&self.in_flight);
        match in_flight.get_mut(key) {
            Some((f, answers)) if *f == fp => Entry::Attach(match answers {
                Some(tx) => tx.subscribe(),
                None => {
                    let (tx, rx) = watch::channel(None);
                    *answers = Some(tx);
                    rx
                }
            }),
            Some(_) => Entry::Mismatch,
            None => {
                in_flight.insert(key.clone(), (fp, None));
                Entry::Fresh(Slot {
                    identities: self,
                    key,
                    finished: false,
                })
            }
        }
    }

    /// Calls in flight in this process.
    pub(crate) fn in_flight(&self) -> usize {
        lock(&self.in_flight).len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attempt_ids_are_the_seed_and_a_counter_of_at_least_six_hex_digits() {
        let ids = Identities::new(0x00ab_cdef_0123_4567);
        assert_eq!(ids.new_attempt_id(), "att_00abcdef01234567000001");
        for n in [0x2u64, 0xff_ffff, 0x100_0000, u64::MAX] {
            ids.next_id.store(n, Ordering::Relaxed);
            assert_eq!(
                ids.new_attempt_id(),
                format!("att_00abcdef01234567{n:06x}"),
                "{n:#x}"
            );
        }
        assert_eq!(&*ids.lease().holder, "host-00abcdef01234567");
    }

    fn key() -> AttemptKey {
        AttemptKey {
            run_id: wop_sdk::host::RunId::new("local/r"),
            node_id: "main".into(),
            call_index: 0,
        }
    }

    /// Entries that reattach hear the first entry's answer; a changed request is a mismatch;
    /// the table is empty after.
    #[tokio::test]
    async fn a_second_entry_reattaches_and_hears_the_answer() {
        let ids = Identities::new(1);
        let key = key();
        let fp = Fingerprint([1; 32]);
        let Entry::Fresh(slot) = ids.enter(&key, fp) else {
            panic!("the first entry dispatches")
        };
        assert!(matches!(
            ids.enter(&key, Fingerprint([2; 32])),
            Entry::Mismatch
        ));
        let waiters: Vec<Waiter> = (0..2)
            .map(|_| match ids.enter(&key, fp) {
                Entry::Attach(rx) => rx,
                _ => panic!("a second entry reattaches"),
            })
            .collect();
        let answer: Answer = Ok(CallAiResult {
            attempt_id: Some("att_1".into()),
            ..CallAiResult::default()
        });
        slot.finish(&answer);
        assert_eq!(ids.in_flight(), 0);
        for mut rx in waiters {
            let heard = rx.wait_for(Option::is_some).await.map(|v| v.clone());
            assert_eq!(heard.ok().flatten(), Some(answer.clone()));
        }
        assert!(matches!(ids.enter(&key, fp), Entry::Fresh(_)));
    }

    /// A first entry dropped without an answer (its caller gave up) leaves the table, and a
    /// reattached entry learns the call was lost.
    #[tokio::test]
    async fn a_dropped_entry_tells_its_waiters_it_was_lost() {
        let ids = Identities::new(1);
        let key = key();
        let fp = Fingerprint([1; 32]);
        let slot = ids.enter(&key, fp);
        let Entry::Attach(mut rx) = ids.enter(&key, fp) else {
            panic!("a second entry reattaches")
        };
        drop(slot);
        assert_eq!(ids.in_flight(), 0);
        assert!(rx.wait_for(Option::is_some).await.is_err());
    }
}
