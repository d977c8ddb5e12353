//! Nodes that await more than their `ctx`, as real nodes do between model calls: a timer, an
//! HTTP request, spawned tasks and `tokio::fs`; and nodes that never end or panic. Each gives
//! the same outcome on the local host and through the Node bridge (tests/await_nodes.rs).

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use wop_sdk::prelude::*;

/// How long `sleeps` sleeps between its calls.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Nap {
    /// Milliseconds.
    pub ms: u64,
}

/// Where `fetches` gets its document.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Source {
    /// An `http://` URL.
    pub url: String,
}

/// How many tasks `spawns` spawns.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Fan {
    /// At most 64.
    pub tasks: u64,
}

/// Nothing.
#[derive(Debug, Deserialize, Serialize, schemars::JsonSchema)]
pub struct Nothing {}

fn own(e: impl std::fmt::Display) -> NodeError<'static> {
    NodeError::new(e.to_string())
}

/// One plain call's text.
async fn ask<'run>(ctx: &NodeCtx<'run>, prompt: String) -> Result<String, NodeError<'run>> {
    let c = ctx.call_ai(AiRequest::<Text>::prompt(prompt)).await?;
    Ok(c.into_output()?.0)
}

/// A call, a `tokio::time::sleep`, a call.
#[wop_node(
    type_id = "community.test.await.sleeps",
    version = "1.0.0",
    max_calls = 8
)]
pub async fn sleeps(ctx: &NodeCtx<'_>, input: Nap) -> Result<String, NodeError> {
    let first = ask(ctx, "before the nap".to_owned()).await?;
    let t0 = Instant::now();
    tokio::time::sleep(Duration::from_millis(input.ms)).await;
    let slept = t0.elapsed() >= Duration::from_millis(input.ms);
    let second = ask(ctx, "after the nap".to_owned()).await?;
    Ok(format!("{first}|slept {} ms: {slept}|{second}", input.ms))
}

/// A call, an HTTP GET with `reqwest` (the first reply as the query), a call with the body.
#[wop_node(
    type_id = "community.test.await.fetches",
    version = "1.0.0",
    max_calls = 8
)]
pub async fn fetches(ctx: &NodeCtx<'_>, input: Source) -> Result<String, NodeError> {
    let topic = ask(ctx, "a topic".to_owned()).await?;
    let response = reqwest::get(format!("{}?q={topic}", input.url))
        .await
        .map_err(own)?;
    let status = response.status().as_u16();
    let body = response.text().await.map_err(own)?;
    let summary = ask(ctx, format!("summarize: {body}")).await?;
    Ok(format!("{status}|{body}|{summary}"))
}

/// Spawns tasks into a `JoinSet` (each sleeps, one blocking task, one through `tokio::spawn`),
/// writes and reads a file with `tokio::fs`, then makes a call with what they gave.
#[wop_node(
    type_id = "community.test.await.spawns",
    version = "1.0.0",
    max_calls = 8
)]
pub async fn spawns(ctx: &NodeCtx<'_>, input: Fan) -> Result<String, NodeError> {
    let mut set = tokio::task::JoinSet::new();
    for i in 0..input.tasks.min(64) {
        set.spawn(async move {
            tokio::time::sleep(Duration::from_millis(1)).await;
            i * i
        });
    }
    set.spawn_blocking(|| 1000);
    let detached = tokio::spawn(async { 7_u64 });
    let mut sum = detached.await.map_err(own)?;
    while let Some(r) = set.join_next().await {
        sum += r.map_err(own)?;
    }
    static FILES: AtomicU64 = AtomicU64::new(0);
    let path = std::env::temp_dir().join(format!(
        "wop-await-{}-{}.txt",
        std::process::id(),
        FILES.fetch_add(1, Ordering::Relaxed)
    ));
    tokio::fs::write(&path, sum.to_string())
        .await
        .map_err(own)?;
    let read = tokio::fs::read_to_string(&path).await.map_err(own)?;
    let _ = tokio::fs::remove_file(&path).await;
    let said = ask(ctx, format!("the sum is {read}")).await?;
    Ok(format!("{read}|{said}"))
}

/// Ticks of the task `never_ends` spawns: they stop when the node is dropped (its `JoinSet`
/// aborts the task).
pub static TICKS: AtomicU64 = AtomicU64::new(0);

/// A call, then a spawned ticking task and a future that never ends: the host's node timeout
/// ends it.
#[wop_node(
    type_id = "community.test.await.never-ends",
    version = "1.0.0",
    max_calls = 8
)]
pub async fn never_ends(ctx: &NodeCtx<'_>, _input: Nothing) -> Result<String, NodeError> {
    let _ = ask(ctx, "hello".to_owned()).await?;
    let mut set = tokio::task::JoinSet::new();
    set.spawn(async {
        loop {
            tokio::time::sleep(Duration::from_millis(5)).await;
            TICKS.fetch_add(1, Ordering::Relaxed);
        }
    });
    std::future::pending::<()>().await;
    drop(set);
    Ok("never".to_owned())
}

/// A call, then a panic.
#[wop_node(
    type_id = "community.test.await.panics",
    version = "1.0.0",
    max_calls = 8
)]
pub async fn panics(ctx: &NodeCtx<'_>, _input: Nothing) -> Result<String, NodeError> {
    let said = ask(ctx, "hello".to_owned()).await?;
    panic!("the node broke after `{said}`");
}

wop_sdk::pack! {
    name = "community.test.await",
    version = "1.0.0",
    nodes = [Sleeps, Fetches, Spawns, NeverEnds, Panics]
}
