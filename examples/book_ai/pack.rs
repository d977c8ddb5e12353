//! The Book AI pack: three nodes that plan, draft and review a book through `ctx.callAI`.
//!
//! This is the file to copy from. Each node is an `async fn name(ctx: &NodeCtx<'_>, input: In) ->
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

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use wop_sdk::prelude::*;

// Output budgets, shared by each request and its node's `plan()`, so the estimate cannot drift
// from what is really sent.
const OUTLINE_MAX_TOKENS: u32 = 800;
const SCENE_MAX_TOKENS: u32 = 600;
const REVIEW_MAX_TOKENS: u32 = 400;

/// The worst case of `review_chapter` for its input.
pub fn review_plan_for(_input: &ReviewRequest) -> CallPlan {
    review_plan()
}

/// The worst case of `draft_scene` for its input: per scene, a draft and at most one repair.
pub fn draft_plan_for(input: &DraftRequest) -> CallPlan {
    draft_plan(input.chapter.scenes.len())
}

// ---------------------------------------------------------------------------------------------
// Types. Every type that crosses the wire derives `JsonSchema`: node inputs and outputs become
// the schema files pack.json names (`inputSchemaRef`/`outputSchemaRef`), and a call's output type
// becomes its `responseSchema`.
// ---------------------------------------------------------------------------------------------

/// What the author asks for.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BookBrief {
    /// One or two sentences: what the book is about.
    pub premise: String,
    /// How many chapters the outline must have.
    pub chapters: u32,
    /// How many scenes each chapter must have. The estimate is computed from this number before
    /// the run, and `plan_outline` refuses an outline that does not keep to it.
    pub scenes_per_chapter: u32,
}

/// A book outline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Outline {
    /// The working title of the book.
    pub title: String,
    /// The chapters, in reading order.
    pub chapters: Vec<ChapterPlan>,
}

/// One chapter of an outline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChapterPlan {
    /// The chapter number, from 1.
    pub number: u32,
    /// The chapter title.
    pub title: String,
    /// The full names of the characters on stage in this chapter. Every scene of the chapter
    /// must name each of them.
    pub characters: Vec<String>,
    /// One line per scene: what happens in it.
    pub scenes: Vec<String>,
}

/// The input of `draft_scene`: one chapter of the outline.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DraftRequest {
    /// The chapter whose scenes to draft.
    pub chapter: ChapterPlan,
    /// The fewest words a scene may have.
    pub min_words: u32,
}

/// One scene's prose: the response schema of a scene call.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SceneText {
    /// The scene's prose, in the past tense, third person.
    pub text: String,
}

/// A drafted chapter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ChapterDraft {
    /// The chapter number.
    pub number: u32,
    /// The scenes, in order.
    pub scenes: Vec<DraftedScene>,
}

/// One drafted scene.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DraftedScene {
    /// The outline's line for this scene.
    pub beat: String,
    /// The prose, or a placeholder when `placeholder` is true.
    pub text: String,
    /// True when no acceptable prose could be drafted: `text` only says why, for the author to
    /// replace.
    pub placeholder: bool,
    /// True when the first draft failed validation and the pack's own repair fixed it.
    pub repaired: bool,
}

/// The input of `review_chapter`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReviewRequest {
    /// The chapter as drafted.
    pub draft: ChapterDraft,
}

/// An editor's review of a chapter.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Review {
    /// The chapter number.
    pub number: u32,
    /// The review, as the model wrote it.
    pub notes: String,
    /// How many scenes are placeholders the author still has to write.
    pub placeholders: u32,
}

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
    let code = ctx
        .calls()
        .last()
        .map_or_else(|| "unknown".to_owned(), |c| c.status.clone());
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

// The pack: its name, version and nodes. `pack!` checks the name and version at compile time and
// yields `pack()`, which `pack.json`, the estimate and the command line are built from.
wop_sdk::pack! {
    name = "community.demo.bookai",
    version = "0.1.0",
    nodes = [PlanOutline, DraftScene, ReviewChapter],
}
