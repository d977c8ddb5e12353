//! A provider's settings fitted to the local host's: the OpenAI-compatible provider as the host's
//! provider, its model the host's default, its timeout and reply limit the host's.

use super::builder::LocalHostBuilder;
use super::config::LocalConfig;
use super::host::LocalHost;
use crate::provider::openai::{OpenAiConfig, OpenAiProvider};

impl OpenAiProvider {
    /// A local host builder with this provider and [`OpenAiProvider::configure_host`] applied.
    pub fn local_host(self) -> LocalHostBuilder {
        let this = self.clone();
        LocalHost::rfc0248()
            .config(move |c| this.configure_host(c))
            .provider(self)
    }

    /// Fits a local host's settings to this provider: the configured model as the host's default
    /// model (a call that names no model asks for it), the host's provider timeout at least this
    /// provider's (so the provider's own timeout, with the more precise cause, fires first), and
    /// the host's largest reply this provider's.
    pub fn configure_host(&self, c: &mut LocalConfig) {
        self.config().model_name().clone_into(&mut c.default_model);
        c.provider_timeout = c.provider_timeout.max(self.config().request_timeout());
        c.max_reply_bytes = self.config().reply_limit();
    }
}

impl OpenAiConfig {
    /// The request timeout and reply size limit of a local host's settings.
    pub fn limits_of(self, host: &LocalConfig) -> Self {
        self.timeout(host.provider_timeout)
            .max_reply_bytes(host.max_reply_bytes)
    }
}
