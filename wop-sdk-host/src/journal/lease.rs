//! Leases on in-flight calls: who is dispatching a call right now, so that a second host on the
//! same journal can tell a live owner (wait for it, then reattach to its outcome) from a crashed
//! one (the dispatch outcome is unknown: ambiguous, never repeated, never charged).
//!
//! The owner writes its [`Lease`] with the call's identity, in the same durable write
//! ([`Journal::begin_leased`]), renews its heartbeat every [`LEASE_HEARTBEAT`] while the call is
//! in flight ([`hold`]), and gives the lease up with the terminal outcome ([`Journal::finish`]).
//! An owner is alive while its heartbeat is younger than [`LEASE_TTL`] and, when it runs on this
//! machine in this boot, while its process exists (a killed owner is seen at once, not after the
//! TTL).

use super::{Journal, JournalError, Outcome};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use wop_sdk::host::{AttemptKey, BoxFuture};

/// How often an owner renews the lease of a call in flight.
pub const LEASE_HEARTBEAT: Duration = Duration::from_secs(1);

/// How old a heartbeat may be before its owner counts as gone (a process that stopped
/// renewing: frozen, or on a machine whose processes this one cannot see).
pub const LEASE_TTL: Duration = Duration::from_secs(10);

/// How often a host waiting for another owner looks again.
pub const LEASE_POLL: Duration = Duration::from_millis(50);

/// Who holds an in-flight call. Its names are shared: a host takes and renews a lease on every
/// call without copying them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Lease {
    /// The owning host instance (two hosts in one process differ).
    pub holder: Arc<str>,
    /// The owning process.
    pub pid: u32,
    /// The boot the owning process runs in (Linux `boot_id`; empty where unknown): a process id
    /// means something only within its boot.
    pub boot: Arc<str>,
    /// The last renewal, in milliseconds since the Unix epoch.
    pub heartbeat_ms: u64,
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// This machine's boot id (Linux), or empty. Read once: it does not change while the process
/// lives.
fn boot_id() -> &'static Arc<str> {
    static BOOT: std::sync::OnceLock<Arc<str>> = std::sync::OnceLock::new();
    BOOT.get_or_init(|| {
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .map(|s| Arc::from(s.trim()))
            .unwrap_or_else(|_| Arc::from(""))
    })
}

/// Whether process `pid` of this boot exists and is not a zombie (Linux `/proc`); `true` where
/// that cannot be told, so that only the heartbeat decides.
fn process_running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // The state follows the parenthesised command name: `Z` (zombie) and `X` (dead) are gone.
        Ok(stat) => !matches!(
            stat.rsplit_once(") ")
                .and_then(|(_, rest)| rest.chars().next()),
            Some('Z' | 'X')
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => false,
        Err(_) => true,
    }
}

impl Lease {
    /// A lease of this process, held by host instance `holder`, renewed now.
    pub fn now(holder: impl Into<Arc<str>>) -> Self {
        Self {
            holder: holder.into(),
            pid: std::process::id(),
            boot: Arc::clone(boot_id()),
            heartbeat_ms: now_ms(),
        }
    }

    /// The same lease, renewed now.
    #[must_use]
    pub fn renewed(&self) -> Self {
        Self {
            heartbeat_ms: now_ms(),
            ..self.clone()
        }
    }

    /// Whether the owner is alive at `now_ms`: its heartbeat is younger than [`LEASE_TTL`] and,
    /// when it runs in this boot, its process exists.
    pub fn owner_alive(&self, now_ms: u64) -> bool {
        let ttl = u64::try_from(LEASE_TTL.as_millis()).unwrap_or(u64::MAX);
        if now_ms.saturating_sub(self.heartbeat_ms) > ttl {
            return false;
        }
        if !self.boot.is_empty() && self.boot == *boot_id() {
            return process_running(self.pid);
        }
        true
    }
}

/// Runs `work` (the dispatch of the call `key`) while renewing `lease` every
/// [`LEASE_HEARTBEAT`]. A renewal that fails is not fatal to the call: the worst it does is let
/// a second host take the owner for gone and end the call as ambiguous.
///
/// Work done at its first poll (a provider that answers at once) never arms the heartbeat's
/// timer. While a renewal is written, the work waits for it, as it did in the `select!` loop this
/// replaces. The future holds `work` once: an `async fn` taking it would hold it twice (its
/// argument, and the pinned local it is polled from), and a call's whole dispatch is in it.
pub fn hold<'a, F: Future + 'a>(
    journal: &'a dyn Journal,
    key: &'a AttemptKey,
    lease: &'a Lease,
    work: F,
) -> impl Future<Output = F::Output> + 'a {
    Hold {
        work,
        journal,
        key,
        lease,
        heartbeat: None,
        renewal: None,
    }
}

pin_project_lite::pin_project! {
    /// [`hold`]'s future.
    struct Hold<'a, F> {
        #[pin]
        work: F,
        journal: &'a dyn Journal,
        key: &'a AttemptKey,
        lease: &'a Lease,
        // Armed once the work has waited: the next renewal's time.
        #[pin]
        heartbeat: Option<tokio::time::Sleep>,
        // A renewal being written (the work is not polled meanwhile).
        renewal: Option<BoxFuture<'a, ()>>,
    }
}

impl<F: Future> Future for Hold<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let mut this = self.project();
        loop {
            if let Some(renewal) = this.renewal.as_mut() {
                if renewal.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                *this.renewal = None;
            }
            if let Poll::Ready(out) = this.work.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            if this.heartbeat.is_none() {
                this.heartbeat
                    .set(Some(tokio::time::sleep(LEASE_HEARTBEAT)));
            }
            let Some(heartbeat) = this.heartbeat.as_mut().as_pin_mut() else {
                return Poll::Pending;
            };
            if heartbeat.poll(cx).is_pending() {
                return Poll::Pending;
            }
            this.heartbeat.set(None);
            let (journal, key, lease) = (*this.journal, *this.key, *this.lease);
            *this.renewal = Some(Box::pin(async move {
                let _ = journal.renew_lease(key, &lease.renewed()).await;
            }));
        }
    }
}

/// What became of a call another owner holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Awaited {
    /// The owner finished it: its terminal outcome, to reattach to.
    Finished(Outcome),
    /// No live owner holds it (none recorded, gone, or `holder` itself): the dispatch outcome is
    /// unknown.
    Abandoned,
}

/// Waits, for an unfinished call `key`, until its owner finishes it or is gone. `holder` is the
/// waiting host: its own stale lease is not waited for.
pub async fn await_owner(
    journal: &dyn Journal,
    key: &AttemptKey,
    holder: &str,
) -> Result<Awaited, JournalError> {
    loop {
        if let Some(outcome) = journal.lookup(key).await?.and_then(|e| e.outcome) {
            return Ok(Awaited::Finished(outcome));
        }
        match journal.leased(key).await? {
            Some(lease) if &*lease.holder != holder && lease.owner_alive(now_ms()) => {
                tokio::time::sleep(LEASE_POLL).await;
            }
            _ => {
                // Gone: one last look, in case it finished between the two reads.
                return Ok(match journal.lookup(key).await?.and_then(|e| e.outcome) {
                    Some(outcome) => Awaited::Finished(outcome),
                    None => Awaited::Abandoned,
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fresh_heartbeat_of_a_running_process_is_alive() {
        let lease = Lease::now("h");
        assert!(lease.owner_alive(now_ms()));
        assert!(lease.owner_alive(lease.heartbeat_ms + 1000));
    }

    #[test]
    fn a_stale_heartbeat_is_gone() {
        let lease = Lease::now("h");
        let ttl = u64::try_from(LEASE_TTL.as_millis()).unwrap_or(u64::MAX);
        assert!(!lease.owner_alive(lease.heartbeat_ms + ttl + 1));
    }

    #[test]
    fn a_process_that_is_gone_is_gone_at_once() {
        if boot_id().is_empty() {
            return; // not Linux: only the heartbeat decides
        }
        let mut child = std::process::Command::new("true").spawn().expect("spawn");
        let pid = child.id();
        let _ = child.wait();
        let lease = Lease {
            pid,
            ..Lease::now("h")
        };
        assert!(!lease.owner_alive(now_ms()));
        // Another boot's process ids mean nothing here: the heartbeat decides.
        let elsewhere = Lease {
            boot: "another-boot".into(),
            ..lease
        };
        assert!(elsewhere.owner_alive(now_ms()));
    }
}
