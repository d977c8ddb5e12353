//! The Book AI pack: three nodes that plan, draft and review a book through `ctx.callAI`.
//!
//! This is the folder to copy from: the data in `types.rs`, one file per node (`outline.rs`,
//! `draft.rs`, `review.rs`), the pack here. Each node is an `async fn name(ctx: &NodeCtx<'_>, input: In) ->
//! Result<Out, NodeError>` under `#[wop_node(...)]`, which checks its attributes at compile time
//! and generates the node type (`plan_outline` → `PlanOutline`), its schemas and manifest entry.
//!
//! The pack shows, in order of appearance:
//!
//! - a structured call whose `responseSchema` is generated from a Rust type: the doc comments
//!   on [`Outline`] are the field descriptions the model reads;
//! - closed-world validation of a reply (`.validate(...)`) and ONE error-fed repair through a
//!   deliberate retry (`.retry_of(&first, RetryReason::InvalidOutput)`);
//! - the two ways to handle an [`wop_sdk::AiFailure`]: propagate it with `?` (the outline and the
//!   review, which have no useful fallback), or settle it and carry on with a placeholder that
//!   says so (a scene, since half a chapter is worth more to the author than none);
//! - a streamed call (`ctx.call_ai_stream`) for each scene: provisional fragments while the
//!   model writes (the host shows them growing), then the one terminal result, which is the only
//!   thing the pack takes;
//! - a plain `Text` call with host retries off (`retry(max_attempts = 1)`);
//! - a `plan()` per node, so the worst case is known before anything is sent.

mod draft;
mod outline;
mod review;
mod types;

pub use draft::{DraftScene, check_scene, draft_plan, draft_plan_for, draft_scene};
pub use outline::{PlanOutline, outline_plan, plan_outline};
pub use review::{ReviewChapter, review_chapter, review_plan, review_plan_for};
pub use types::*;

// The pack: its name, version and nodes. `pack!` checks the name and version at compile time and
// yields `pack()`, which `pack.json`, the estimate and the command line are built from.
wop_sdk::pack! {
    name = "community.demo.bookai",
    version = "0.1.0",
    nodes = [outline::PlanOutline, draft::DraftScene, review::ReviewChapter],
}
