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

pub(crate) struct Identities {
    in_flight: Mutex<HashMap<AttemptKey, (Fingerprint, Waiter)>>,
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
    tx: watch::Sender<Option<Answer>>,
}

impl Slot<'_> {
    pub(super) fn finish(self, answer: &Answer) {
        lock(&self.identities.in_flight).remove(self.key);
        if self.tx.receiver_count() > 0 {
            let _ = self.tx.send(Some(answer.clone()));
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        lock(&self.identities.in_flight).remove(self.key);
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
        match in_flight.get(key) {
            Some((f, rx)) if *f == fp => Entry::Attach(rx.clone()),
            Some(_) => Entry::Mismatch,
            None => {
                let (tx, rx) = watch::channel(None);
                in_flight.insert(key.clone(), (fp, rx));
                Entry::Fresh(Slot {
                    identities: self,
                    key,
                    tx,
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
}
