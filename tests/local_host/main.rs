//! The embedded local host, rule by rule (SPEC.md §The host's retry loop, §Run events, §Replay),
//! through the public `Host` boundary as a production host would be driven.

mod ceilings;
mod identity;
mod profiles;
mod retry_loop;
mod typed_run;

use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use wop_sdk::host::{AttemptKey, Host, RunId};
use wop_sdk::wire::{ErrorCode, FinishReason, RunEvent, StructuredOutputMode, kind};
use wop_sdk_host::local::{LocalHost, Script, ScriptedProvider, Step};

fn schema() -> Value {
    json!({"type": "object", "required": ["title"], "properties": {"title": {"type": "string"}}})
}

fn key(run: &str, i: u32) -> AttemptKey {
    AttemptKey {
        run_id: RunId::new(run),
        node_id: "n".into(),
        call_index: i,
    }
}

fn valid() -> Step {
    Step::json(&json!({"title": "ok"}), 7)
}

fn host_with(
    steps: Vec<Step>,
    f: impl FnOnce(wop_sdk_host::local::LocalHostBuilder) -> wop_sdk_host::local::LocalHostBuilder,
) -> (LocalHost, ScriptedProvider) {
    let provider = ScriptedProvider::new(steps.into_iter().collect());
    let host = f(LocalHost::rfc0248().provider(provider.clone())).build();
    (host, provider)
}

async fn events(host: &LocalHost, run: &str) -> Vec<RunEvent> {
    host.events(&RunId::new(run)).await
}

fn count(events: &[RunEvent], k: &str) -> usize {
    events.iter().filter(|e| e.kind() == k).count()
}
