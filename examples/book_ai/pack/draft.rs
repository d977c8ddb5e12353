//! `draft_scene`.

use super::types::*;
use wop_sdk::prelude::*;

/// The worst case of `draft_scene` for its input: per scene, a draft and at most one repair.
pub fn draft_plan_for(input: &DraftRequest) -> CallPlan {
    draft_plan(input.chapter.scenes.len())
}

// ---------------------------------------------------------------------------------------------
// draft_scene: one structured call per scene, validated closed-world, with ONE error-fed repair.
//
// A failed scene call is settled and replaced by a placeholder marked as such. The node's budget
// (`max_calls`) is counted in provider requests, so a repair spends budget that a later scene
// planned on: when what is left cannot cover a call's worst case, the runtime refuses the call
// before dispatch (`budget_exhausted`) and the provider never sees it.
// ---------------------------------------------------------------------------------------------

/// Drafts every scene of a chapter.
#[wop_node(
    type_id = "community.demo.bookai.draft-scene",
    version = "0.1.0",
    label = "Draft scenes",
    description = "Drafts each scene of a chapter, validated and repaired once.",
    // Two scenes, each a draft and one repair, at the worst case of a host without
    // `callAccounting` (openwop-app): 2 x 2 x (3 requests + the natural-language fallback). Such
    // a host reports no attempts, so each call is charged its worst case; a budget sized for an
    // RFC 0248 host (2 x 3) would leave every scene a placeholder there. A third scene does not fit.
    max_calls = 16,
    requires(ai_providers),
    plan = draft_plan_for,
)]
pub async fn draft_scene(
    ctx: &NodeCtx<'_>,
    input: DraftRequest,
) -> Result<ChapterDraft, NodeError> {
    let mut scenes = Vec::with_capacity(input.chapter.scenes.len());
    for beat in &input.chapter.scenes {
        scenes.push(draft_one(ctx, &input, beat).await?);
    }
    Ok(ChapterDraft {
        number: input.chapter.number,
        scenes,
    })
}

/// A helper returning a `NodeError` names the run it belongs to: `NodeError<'run>`, the lifetime
/// of its context (in a `#[wop_node]` fn the macro does it).
async fn draft_one<'run>(
    ctx: &NodeCtx<'run>,
    input: &DraftRequest,
    beat: &str,
) -> Result<DraftedScene, NodeError<'run>> {
    let first = match stream_scene(ctx, scene_request(input, beat, &[])).await {
        Ok(completion) => completion,
        // The failure is opaque: settle it, then say in the output that this is a placeholder.
        // The call's public status code (never its cause) is in the node's own call report.
        Err(failure) => {
            ctx.settle_ai_failure(failure).await?;
            return Ok(placeholder(ctx, beat));
        }
    };
    let errors = match first.output() {
        Ok(scene) => return Ok(drafted(beat, scene.text.clone(), false)),
        Err(invalid) => invalid.errors.clone(),
    };
    // The one repair: a deliberate retry naming the completion it repairs, with the validation
    // errors fed back. The host checks the lineage; the budget pays for it like any call.
    let repair = scene_request(input, beat, &errors).retry_of(&first, RetryReason::InvalidOutput);
    match stream_scene(ctx, repair).await {
        Ok(repaired) => Ok(match repaired.into_output() {
            Ok(scene) => drafted(beat, scene.text, true),
            // Still invalid after one repair: we do not loop; the author gets a placeholder.
            Err(invalid) => DraftedScene {
                beat: beat.to_owned(),
                text: format!("[placeholder: still invalid after one repair: {invalid}]"),
                placeholder: true,
                repaired: false,
            },
        }),
        Err(failure) => {
            ctx.settle_ai_failure(failure).await?;
            Ok(placeholder(ctx, beat))
        }
    }
}

/// One scene call, streamed. The fragments are provisional: the host shows them as the scene
/// grows (its `output.chunk` events, the demo's progress lines), a host retry discards them, and
/// the call can still fail after them. The pack takes nothing from them: the scene is the
/// stream's terminal item, typed and validated like a plain call's.
async fn stream_scene<'run>(
    ctx: &NodeCtx<'run>,
    request: impl IntoCall<'run, SceneText>,
) -> Result<Completion<'run, SceneText>, AiFailure<'run>> {
    let mut stream = ctx.call_ai_stream(request);
    while stream.next().await.is_some() {}
    stream.finish().await
}

/// A scene request, validated against the chapter. `repair_errors` non-empty makes it the
/// error-fed repair prompt.
fn scene_request(
    input: &DraftRequest,
    beat: &str,
    repair_errors: &[String],
) -> AiRequest<SceneText> {
    let characters = input.chapter.characters.clone();
    let min_words = input.min_words;
    let mut prompt = format!(
        "Chapter {} \"{}\". Write the scene: {beat}\nName every one of these characters: {}. \
         At least {min_words} words.",
        input.chapter.number,
        input.chapter.title,
        characters.join(", ")
    );
    if !repair_errors.is_empty() {
        prompt.push_str("\nYour previous draft was rejected:\n- ");
        prompt.push_str(&repair_errors.join("\n- "));
        prompt.push_str("\nWrite the scene again and fix every point.");
    }
    AiRequest::<SceneText>::prompt(prompt)
        .system("You are a novelist. Reply with JSON only.")
        .max_tokens(SCENE_MAX_TOKENS)
        .purpose("scene")
        // Who is charged for these generations (a real pack takes it from its input).
        .beneficiaries(["author-1"])
        .validate(move |scene: &SceneText| check_scene(&scene.text, &characters, min_words))
}

/// The closed-world rules of a scene: long enough, and every character of the chapter named.
pub fn check_scene(text: &str, characters: &[String], min_words: u32) -> Result<(), Vec<String>> {
    let mut errors = Vec::new();
    let words = text.split_whitespace().count();
    if words < min_words as usize {
        errors.push(format!(
            "the scene has {words} words, at least {min_words} are required"
        ));
    }
    for name in characters {
        if !text.contains(name.as_str()) {
            errors.push(format!("the scene never names `{name}`"));
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

fn drafted(beat: &str, text: String, repaired: bool) -> DraftedScene {
    DraftedScene {
        beat: beat.to_owned(),
        text,
        placeholder: false,
        repaired,
    }
}

fn placeholder(ctx: &NodeCtx<'_>, beat: &str) -> DraftedScene {
    let code = ctx.calls().last().map_or("unknown", |c| c.status);
    DraftedScene {
        beat: beat.to_owned(),
        text: format!("[placeholder: this scene was not drafted ({code})]"),
        placeholder: true,
        repaired: false,
    }
}

/// The worst case of `draft_scene` for a chapter of `scenes` scenes: per scene a structured
/// draft and at most one deliberate repair. A scene the budget can no longer cover is refused
/// before dispatch and becomes a placeholder.
pub fn draft_plan(scenes: usize) -> CallPlan {
    let times = u32::try_from(scenes).unwrap_or(u32::MAX).saturating_mul(2);
    CallPlan::new([PlannedCall::structured(SCENE_MAX_TOKENS, DraftScene::SPEC.retry).times(times)])
}
