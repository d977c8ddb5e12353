//! Shared by the benches: a node written by hand against the `Node` trait, and a zero-latency
//! provider that answers at once with a canned reply (no script bookkeeping, so nothing grows
//! between iterations).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use wop_sdk::host::{BoxFuture, RunId};
use wop_sdk::wire::{FinishReason, Usage};
use wop_sdk::{AiRequest, Category, Node, NodeCtx, NodeError, NodeSpec, RetryPolicy, Role, Text};
use wop_sdk_host::local::{Provider, ProviderError, ProviderReply, ProviderRequest};

/// The structured output every bench asks for.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
pub struct Line {
    /// The line.
    pub line: String,
    /// Its number.
    pub n: u32,
}

/// The reply that meets [`Line`]'s schema.
pub const GOOD: &[u8] = br#"{"line":"the quick brown fox","n":7}"#;
/// A reply that parses but violates the schema (`n` is a string): a schema-violation retry.
pub const BAD: &[u8] = br#"{"line":"the quick brown fox","n":"seven"}"#;

/// Answers at once. Requests number `1..=fail_first` of a call get [`BAD`], later ones [`GOOD`];
/// a plain request gets text.
#[derive(Clone, Copy, Debug, Default)]
pub struct Instant {
    /// How many requests of each call fail the schema first.
    pub fail_first: u32,
}

impl Provider for Instant {
    fn name(&self) -> &str {
        "mock"
    }

    fn generate<'a>(
        &'a self,
        request: ProviderRequest,
    ) -> BoxFuture<'a, Result<ProviderReply, ProviderError>> {
        let content = if request.response_schema.is_none() {
            b"a plain answer".to_vec()
        } else if request.attempt <= self.fail_first {
            BAD.to_vec()
        } else {
            GOOD.to_vec()
        };
        Box::pin(std::future::ready(Ok(ProviderReply {
            content,
            finish_reason: FinishReason::Stop,
            usage: Some(Usage {
                input_tokens: Some(10),
                output_tokens: Some(9),
                total_tokens: None,
            }),
            mode: None,
            model: Some("mock-1".into()),
        })))
    }
}

#[derive(Deserialize, JsonSchema)]
pub struct In {}

#[derive(Serialize, JsonSchema)]
pub struct Out {
    pub calls: u32,
}

/// Makes `calls` calls in sequence, structured (`Line`) or plain (`Text`).
#[derive(Clone, Copy, Debug)]
pub struct Caller {
    pub calls: u32,
    pub plain: bool,
}

impl Caller {
    pub const ONE: Self = Self {
        calls: 1,
        plain: false,
    };
}

/// The spec of a bench node: no budget, the host's retry default, nothing required.
pub const fn spec(type_id: &'static str) -> NodeSpec {
    NodeSpec {
        type_id,
        version: "1.0.0",
        category: Category::Chat,
        role: Role::SideEffect,
        label: None,
        description: None,
        max_calls: None,
        retry: RetryPolicy::HOST_DEFAULT,
        requires: &[],
    }
}

impl Node for Caller {
    type Input = In;
    type Output = Out;
    const SPEC: NodeSpec = spec("community.bench.caller");

    fn run<'a, 'run>(
        &'a self,
        ctx: &'a NodeCtx<'run>,
        _input: In,
    ) -> BoxFuture<'a, Result<Out, NodeError<'run>>> {
        Box::pin(async move {
            for _ in 0..self.calls {
                if self.plain {
                    let c = ctx
                        .call_ai(AiRequest::<Text>::prompt("Write one line.").max_tokens(64))
                        .await?;
                    std::hint::black_box(c.output().map(|t| t.0.len()).ok());
                } else {
                    let c = ctx
                        .call_ai(AiRequest::<Line>::prompt("Write one line.").max_tokens(64))
                        .await?;
                    std::hint::black_box(c.output().map(|l| l.n).ok());
                }
            }
            Ok(Out { calls: self.calls })
        })
    }
}

pub fn input() -> Value {
    json!({})
}

/// A fresh run id per iteration (identities must not collide).
pub fn run_id(prefix: &str, n: u64) -> RunId {
    RunId::new(format!("{prefix}-{n}"))
}

/// A temp dir unique to this process.
pub fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("wop-bench-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Peak resident set size of this process in KiB (`VmHWM`), Linux only.
/// The resident set now, in KiB (`/proc/self/statm`, pages of 4 KiB), on Linux.
pub fn rss_kib() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4)
}

pub fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}
