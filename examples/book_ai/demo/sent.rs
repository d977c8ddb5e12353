//! What the provider itself was sent, kept apart from what the runtime reports.

use std::sync::{Arc, Mutex, PoisonError};
use wop_sdk::RunId;
use wop_sdk_host::provider::ProviderRequest;

/// The provider's own record of every request that reached it: answered (a reply or an error
/// status: received), or sent with no answer (whether it was received is unknown). A request
/// whose connection could not be made is not here. The report's "provider" column is the
/// provider's count, not the runtime's.
#[derive(Clone, Debug, Default)]
pub struct Sent(Arc<Mutex<Vec<(ProviderRequest, bool)>>>);

impl Sent {
    /// Records `request`; `answered`: the provider answered it.
    pub(super) fn push(&self, request: &ProviderRequest, answered: bool) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((request.clone(), answered));
    }

    /// The requests of `run` the provider answered, in order.
    pub fn requests_of(&self, run: &RunId) -> Vec<ProviderRequest> {
        self.of(run, true)
    }

    /// The requests of `run` sent with no answer (received or not: unknown), in order.
    pub fn unanswered_of(&self, run: &RunId) -> Vec<ProviderRequest> {
        self.of(run, false)
    }

    fn of(&self, run: &RunId, answered: bool) -> Vec<ProviderRequest> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|(r, a)| &r.run_id == run && *a == answered)
            .map(|(r, _)| r.clone())
            .collect()
    }
}
