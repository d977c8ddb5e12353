//! The pack's data: what crosses the wire (node inputs and outputs, a call's output type) and
//! the output budgets its requests and plans share.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// Output budgets, shared by each request and its node's `plan()`, so the estimate cannot drift
// from what is really sent.
pub(crate) const OUTLINE_MAX_TOKENS: u32 = 800;
pub(crate) const SCENE_MAX_TOKENS: u32 = 600;
pub(crate) const REVIEW_MAX_TOKENS: u32 = 400;

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
