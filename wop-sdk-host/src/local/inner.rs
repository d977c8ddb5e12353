//! The parts of the local host, each owning its own state, shared by every handle
//! ([`super::LocalHost`] is an `Arc` of them).

use super::call::{Names, Parts};
use super::config::LocalConfig;
use super::diagnostics::Diagnostics;
use super::events::{Live, Observer};
use super::guard::ReplyGuard;
use super::inflight::Identities;
use super::runs::Runs;
use super::schemas::Schemas;
use crate::journal::Journal;
use crate::provider::Provider;
use crate::provider::mock::ScriptedProvider;
use std::sync::Arc;
use wop_sdk::wire::CapabilityDocument;

/// The parts of the host, each owning its own state.
pub(crate) struct Inner {
    pub(crate) config: LocalConfig,
    pub(crate) provider: Arc<dyn Provider>,
    /// The scripted provider's handle, when the provider is one: it serves per-run scripts.
    pub(crate) scripts: Option<ScriptedProvider>,
    pub(crate) journal: Arc<dyn Journal>,
    pub(crate) live: Live,
    pub(crate) runs: Runs,
    pub(crate) diagnostics: Diagnostics,
    pub(crate) identities: Identities,
    pub(crate) schemas: Schemas,
    pub(crate) guard: ReplyGuard,
    pub(crate) seed: u64,
    /// The capability document, written once from the settings (`capabilities.rs`).
    pub(crate) document: Arc<CapabilityDocument>,
    /// The document the runtime negotiates with: [`wop_sdk::caps::charged_document`] of it (a
    /// host whose fallback comes after its ceiling is charged one request more per call).
    pub(crate) negotiated: Arc<CapabilityDocument>,
    /// The provider's name and the default model, held once: each provider request shares them.
    pub(crate) names: Names,
}

impl Inner {
    pub(crate) fn new(
        config: LocalConfig,
        provider: Arc<dyn Provider>,
        scripts: Option<ScriptedProvider>,
        journal: Arc<dyn Journal>,
        observer: Option<Observer>,
        seed: u64,
    ) -> Self {
        let document = super::capabilities::document(&config, provider.name());
        Self {
            negotiated: Arc::new(wop_sdk::caps::charged_document(document.clone())),
            document: Arc::new(document),
            names: Names {
                provider: Arc::from(provider.name()),
                model: Arc::from(config.default_model.as_str()),
                owner: Arc::from(config.default_owner.as_str()),
                node: Arc::from("main"),
            },
            runs: Runs::new(
                config.max_concurrent_generations,
                config.max_generations_per_run,
                config.default_owner.clone(),
            ),
            diagnostics: Diagnostics::new(config.diagnostics_retained_runs),
            identities: Identities::new(seed),
            schemas: Schemas::default(),
            guard: ReplyGuard {
                timeout: config.provider_timeout,
                max_bytes: config.max_reply_bytes,
                max_depth: config.max_json_depth,
            },
            live: Live(observer),
            config,
            provider,
            scripts,
            journal,
            seed,
        }
    }
}

impl Inner {
    /// The parts a dispatch uses (`call.rs`).
    pub(crate) fn parts(&self) -> Parts<'_> {
        Parts {
            config: &self.config,
            provider: self.provider.as_ref(),
            journal: self.journal.as_ref(),
            runs: &self.runs,
            guard: &self.guard,
            schemas: &self.schemas,
            live: &self.live,
            names: &self.names,
            seed: self.seed,
        }
    }
}
