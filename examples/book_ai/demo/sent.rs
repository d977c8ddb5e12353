//! What the provider itself was sent, kept apart from what the runtime reports.

use std::sync::{Arc, Mutex, PoisonError};
use wop_sdk::RunId;
use wop_sdk_host::provider::ProviderRequest;

/// The provider's own record of every request that reached it (answered or not; not one whose
/// connection could not be made): the report's "provider" column is the provider's count, not the
/// runtime's.
#[derive(Clone, Debug, Default)]
pub struct Sent(Arc<Mutex<Vec<ProviderRequest>>>);

impl Sent {
    pub(super) fn push(&self, request: &ProviderRequest) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(request.clone());
    }

    /// The requests sent for `run`, in order.
    pub fn requests_of(&self, run: &RunId) -> Vec<ProviderRequest> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .filter(|r| &r.run_id == run)
            .cloned()
            .collect()
    }
}
