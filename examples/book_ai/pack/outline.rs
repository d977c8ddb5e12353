//! `plan_outline`.

use super::types::*;
use wop_sdk::prelude::*;

// ---------------------------------------------------------------------------------------------
// plan_outline: one structured call. Any failure is propagated with `?`: without an outline
// nothing downstream can run, and `?` settles the failure on the way out.
// ---------------------------------------------------------------------------------------------

/// Plans the outline of a book from a brief.
#[wop_node(
    type_id = "community.demo.bookai.plan-outline",
    version = "0.1.0",
    label = "Plan outline",
    description = "Plans the chapters and scenes of a book from a brief.",
    // One structured call: up to the host ceiling (3) of provider requests, or 4 on a host
    // without `callAccounting` whose natural-language fallback follows its 3 (openwop-app).
    max_calls = 4,
    requires(ai_providers),
    plan = outline_plan,
)]
pub async fn plan_outline(ctx: &NodeCtx<'_>, input: BookBrief) -> Result<Outline, NodeError> {
    let expected = (input.chapters, input.scenes_per_chapter);
    let request = AiRequest::<Outline>::prompt(format!(
        "Outline a novel. Premise: {}\nWrite exactly {} chapters of exactly {} scenes each.",
        input.premise, input.chapters, input.scenes_per_chapter
    ))
    .system("You are a careful story editor. Reply with JSON only.")
    .max_tokens(OUTLINE_MAX_TOKENS)
    .purpose("outline")
    // The estimate assumed this shape: refuse an outline that breaks it (closed world).
    .validate(move |o: &Outline| check_outline(o, expected));

    // `?` on the call: an `AiFailure` becomes the node's failure, settled.
    let completion = ctx.call_ai(request).await?;
    completion
        .into_output()
        .map_err(|invalid| NodeError::new(format!("the outline does not fit the brief: {invalid}")))
}

fn check_outline(o: &Outline, (chapters, scenes): (u32, u32)) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    if o.chapters.len() != chapters as usize {
        errors.push(format!(
            "`chapters` has {} entries, the brief asks for {chapters}",
            o.chapters.len()
        ));
    }
    for c in &o.chapters {
        if c.scenes.len() != scenes as usize {
            errors.push(format!(
                "chapter {} has {} scenes, the brief asks for {scenes}",
                c.number,
                c.scenes.len()
            ));
        }
        if c.characters.is_empty() {
            errors.push(format!("chapter {} names no characters", c.number));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// The worst case of `plan_outline`: one structured call under the node's default policy.
pub fn outline_plan(_input: &BookBrief) -> CallPlan {
    CallPlan::new([PlannedCall::structured(
        OUTLINE_MAX_TOKENS,
        PlanOutline::SPEC.retry,
    )])
}
