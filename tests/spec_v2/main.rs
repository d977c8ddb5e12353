//! The OpenWOP v2 rules every JSON document this SDK writes must follow, each stated here in our
//! own words as a Rust check (read in openwop/openwop `schemas/v2/`: `node-pack-manifest`, `ids`,
//! `run-event`, `run-event-payloads`, `capabilities`, `error-envelope`), then one test per rule
//! and one test that runs the real `book_ai` binary and checks everything it prints.
//!
//! The checks are written apart from `wop_sdk::rules` on purpose: a mistake in the SDK's shared
//! rules cannot hide behind itself here. No schema file is copied and nothing is fetched (CI has
//! no network).

mod command_line;
mod per_rule;
mod rules_caps;
mod rules_events;
mod rules_ids;
mod rules_manifest;

use wop_sdk_test_support::book_ai_example;

use rules_caps::*;
use rules_events::*;
use rules_ids::*;
use rules_manifest::*;

use book_ai_example::book_ai_binary;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::process::{Command, Output};
use std::sync::Arc;
use wop_sdk::manifest::{is_pack_name, is_type_id, validate_manifest};
use wop_sdk::wire::{CapabilityDocument, ErrorCode, FinishReason, RunEvent, normalize_type};
use wop_sdk::{AiRequest, NodeCtx, NodeError, pack, wop_node};
use wop_sdk_host::journal::{Journal, SqliteJournal};
use wop_sdk_host::local::{LocalHost, ScriptedProvider, Step};

// A pack to write documents from.

#[derive(Serialize, Deserialize, JsonSchema)]
struct Title {
    title: String,
}

#[wop_node(
    type_id = "community.demo.spec.title",
    version = "1.0.0",
    retry(max_attempts = 3),
    requires(attempts)
)]
async fn write_title(ctx: &NodeCtx<'_>, topic: String) -> Result<Title, NodeError> {
    let done = ctx
        .call_ai(AiRequest::<Title>::prompt(&topic).max_tokens(50))
        .await?;
    done.into_output()
        .map_err(|e| NodeError::new(e.to_string()))
}

#[wop_node(type_id = "core.ai.callPrompt", version = "1.0.0", category = "data")]
async fn call_prompt(_ctx: &NodeCtx<'_>, text: String) -> Result<String, NodeError> {
    Ok(text)
}

pack! { name = "community.demo.spec", version = "1.0.0", nodes = [WriteTitle, CallPrompt] }

fn good() -> Step {
    Step::json(&json!({"title": "ok"}), 5)
}

/// Runs `WriteTitle` on a fresh SQLite journal with `steps`; the run id and its events as JSON.
async fn run_title(steps: Vec<Step>, nl_fallback: bool) -> (String, Vec<Value>) {
    let path = std::env::temp_dir().join(format!(
        "wop-spec-v2-{}-{}.db",
        std::process::id(),
        NEXT.fetch_add(1, std::sync::atomic::Ordering::SeqCst)
    ));
    let _ = std::fs::remove_file(&path);
    let journal: Arc<dyn Journal> = Arc::new(SqliteJournal::open(&path).expect("journal"));
    let host = LocalHost::rfc0248()
        .provider(ScriptedProvider::new(steps.into_iter().collect()))
        .journal(journal)
        .nl_fallback(nl_fallback)
        .build();
    let out = host.run(&WriteTitle, json!("a topic")).await;
    let events = wop_sdk::host::Host::events(&host, &out.run_id).await;
    let json = events.iter().map(RunEvent::to_json).collect();
    (out.run_id.as_str().to_owned(), json)
}

static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["type"] == t).collect()
}
