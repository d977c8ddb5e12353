//! The hosts a pack ships to, as the local host plays them: [`HostProfile`], and
//! [`on_every_host`] to run one test on each.
//!
//! A profile is a set of [`LocalConfig`] settings read off that host: what it advertises and how
//! its retry loop spends provider requests. What a profile does not change (the journal, the
//! ceilings on generations, the limits on replies) is the local host's own on every profile.

use super::builder::LocalHostBuilder;
use super::config::LocalConfig;
use std::fmt;
use std::future::Future;

/// The providers openwop-app offers (`aiProviders.providers` of its public snapshot,
/// `backend/typescript/src/providers/dispatch.ts`).
pub const OPENWOP_APP_PROVIDERS: [&str; 6] =
    ["anthropic", "openai", "google", "minimax", "compat", "mock"];

/// A host a pack ships to, by name: [`LocalHost::builder`](super::LocalHost::builder) plays [`HostProfile::DEFAULT`],
/// [`HostProfile::builder`] any of them.
///
/// | | [`OpenwopApp`](HostProfile::OpenwopApp) (the default) | [`Rfc0248`](HostProfile::Rfc0248) |
/// |---|---|---|
/// | `aiProviders.callAccounting` | not advertised: no `attempts` in a result, a call's `retry` ignored, each call charged its worst case | `attempts` and `retryPolicy` |
/// | `aiProviders.providers` | `anthropic, openai, google, minimax, compat, mock` (the scripted provider answers for each) | the provider's own name |
/// | structured output | the schema in the prompt | the provider's native structured output (`response_format: json_schema`) |
/// | a structured call's requests | 3, then the natural-language fallback: 4 in all, the fallback only when the last reply was prose (it does not start with `{`, `[` or a code fence) | 3, the fallback (when on) the last of them |
/// | a reply in a code fence, or JSON inside prose | accepted (its JSON read out, as openwop-app's lenient parse does) | a parse error, retried |
/// | the schema check | the reply is an object holding every `required` key, no more (openwop-app's check; the node's own types check the rest) | the whole JSON Schema |
/// | HTTP 429 | resent below the retry loop up to twice (3 requests), after `Retry-After` or 1 s, 2 s: not attempts, not charged; the third 429 is an attempt | an attempt, retried after the backoff |
/// | default `maxTokens`; the largest | 4096; 64 000 | 1024; 32 768 |
///
/// The default is openwop-app: it is the host packs ship to, and the stricter of the two for a
/// pack's budget (each call charged its worst case, 4 requests for a structured call) and for its
/// prompts (no native structured output to lean on). Test on both with [`on_every_host`].
///
/// What the local host does not play of openwop-app: its corrective text (it sends the same
/// schema hint again; the local host adds a note naming the violation), its fallback prompt, a
/// provider error answered with another request in its structured loop (the local host ends the
/// call at a permanent error, as RFC 0248 asks), and its other events than those of the table
/// in [`crate::local`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HostProfile {
    /// openwop-app as its public snapshot is (`openwop/openwop-app-install`,
    /// `backend/typescript/src/aiProviders/aiProvidersHost.ts` and `providers/dispatch.ts`).
    OpenwopApp,
    /// A host that implements RFC 0248: it reports each call's `attempts` and honours a per-call
    /// `retry`.
    Rfc0248,
}

impl HostProfile {
    /// The profile [`LocalHost::builder`](super::LocalHost::builder) plays.
    pub const DEFAULT: Self = Self::OpenwopApp;

    /// Every profile, the default first.
    pub const ALL: [Self; 2] = [Self::OpenwopApp, Self::Rfc0248];

    /// The profile's name: `openwop-app`, `rfc-0248`.
    pub fn name(self) -> &'static str {
        match self {
            Self::OpenwopApp => "openwop-app",
            Self::Rfc0248 => "rfc-0248",
        }
    }

    /// The profile named `name` (`openwop-app`, `rfc-0248`).
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|p| p.name() == name)
    }

    /// The settings of a local host playing this profile (every other setting the local host's
    /// own default).
    pub fn config(self) -> LocalConfig {
        let mut c = LocalConfig::rfc0248();
        if self == Self::OpenwopApp {
            c.attempts = false;
            c.retry_policy = false;
            c.max_retry_attempts = 3;
            c.truncation_multiplier = 2;
            c.default_max_tokens = 4096;
            c.provider_max_tokens = 64_000;
            c.nl_fallback = true;
            c.fallback_after_ceiling = true;
            c.fallback_for_prose_only = true;
            c.native_structured_output = false;
            c.lenient_json = true;
            c.required_keys_only = true;
            c.rate_limit_resends = 2;
            c.providers = OPENWOP_APP_PROVIDERS.map(str::to_owned).to_vec();
        }
        c
    }

    /// A builder of a local host playing this profile.
    pub fn builder(self) -> LocalHostBuilder {
        LocalHostBuilder::with_config(self.config())
    }
}

impl Default for HostProfile {
    fn default() -> Self {
        Self::DEFAULT
    }
}

impl fmt::Display for HostProfile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// Runs `test` once on each [`HostProfile`], one after the other, the default first: what a
/// pack's test calls to know its node behaves on every host it ships to.
///
/// Each run starts with a line on standard error naming the profile (`on openwop-app:`), so a
/// failed assertion's captured output says on which host it failed.
///
/// ```no_run
/// # async fn t() {
/// use wop_sdk_host::local::{HostProfile, ScriptedProvider, Step, on_every_host};
/// on_every_host(|profile: HostProfile| async move {
///     let script = [Step::json(&serde_json::json!({"title": "T"}), 3)];
///     let provider = ScriptedProvider::new(script.into_iter().collect());
///     let host = profile.builder().provider(provider.clone()).build();
///     // … run the node, assert on its output …
///     assert_eq!(provider.request_count(), 1, "on {profile}");
/// })
/// .await;
/// # }
/// ```
pub async fn on_every_host<F, Fut>(mut test: F)
where
    F: FnMut(HostProfile) -> Fut,
    Fut: Future<Output = ()>,
{
    for profile in HostProfile::ALL {
        eprintln!("on {profile}:");
        test(profile).await;
    }
}

impl super::LocalHost {
    /// A builder of an RFC 0248 host: [`HostProfile::Rfc0248`]'s
    /// ([`LocalHost::builder`](super::LocalHost::builder) plays openwop-app).
    pub fn rfc0248() -> LocalHostBuilder {
        HostProfile::Rfc0248.builder()
    }
}
