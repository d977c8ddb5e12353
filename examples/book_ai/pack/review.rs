//! `review_chapter`.

use super::types::*;
use wop_sdk::prelude::*;

/// The worst case of `review_chapter` for its input.
pub fn review_plan_for(_input: &ReviewRequest) -> CallPlan {
    review_plan()
}

// ---------------------------------------------------------------------------------------------
// review_chapter: one plain `Text` call with host retries off. A plain call makes one provider
// request anyway; `NO_RETRIES` states it, and makes the estimate exact on any host.
// ---------------------------------------------------------------------------------------------

/// Reviews a drafted chapter.
#[wop_node(
    type_id = "community.demo.bookai.review-chapter",
    version = "0.1.0",
    label = "Review chapter",
    description = "An editor's review of a drafted chapter.",
    max_calls = 1,
    // A plain call is one request anyway; the policy says so to a reader and to the host.
    retry(max_attempts = 1),
    requires(ai_providers),
    plan = review_plan_for,
)]
pub async fn review_chapter(ctx: &NodeCtx<'_>, input: ReviewRequest) -> Result<Review, NodeError> {
    let placeholders = input.draft.scenes.iter().filter(|s| s.placeholder).count();
    let body: Vec<String> = input
        .draft
        .scenes
        .iter()
        .map(|s| format!("## {}\n{}", s.beat, s.text))
        .collect();
    let request = AiRequest::<Text>::prompt(format!(
        "Review chapter {} in three sentences. Scenes marked [placeholder] are not written yet.\n\n{}",
        input.draft.number,
        body.join("\n\n")
    ))
    .system("You are a demanding but kind editor.")
    .max_tokens(REVIEW_MAX_TOKENS)
    .retry(RetryPolicy::NO_RETRIES)
    .purpose("review")
    .beneficiaries(["editor-7"]);
    let Text(notes) = ctx
        .call_ai(request)
        .await?
        .into_output()
        .map_err(|invalid| NodeError::new(format!("the review is unusable: {invalid}")))?;
    Ok(Review {
        number: input.draft.number,
        notes,
        placeholders: u32::try_from(placeholders).unwrap_or(u32::MAX),
    })
}

/// The worst case of `review_chapter`: one plain call.
pub fn review_plan() -> CallPlan {
    CallPlan::new([PlannedCall::plain(REVIEW_MAX_TOKENS)])
}
