//! What a node is: the [`Node`] trait `#[wop_node]` implements, its [`NodeSpec`], and
//! [`DynNode`], the same node over JSON.

use super::ctx::NodeCtx;
use super::error::NodeError;
use crate::budget::CallPlan;
use crate::caps::Capability;
use crate::host::BoxFuture;
use crate::policy::RetryPolicy;
use crate::wire::ErrorEnvelope;
use schemars::JsonSchema;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A node's category in the manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Category {
    /// `chat`
    Chat,
    /// `control`
    Control,
    /// `data`
    Data,
    /// `canvas`
    Canvas,
    /// `coordination`
    Coordination,
    /// `integration`
    Integration,
}

impl Category {
    /// The manifest spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Chat => "chat",
            Self::Control => "control",
            Self::Data => "data",
            Self::Canvas => "canvas",
            Self::Coordination => "coordination",
            Self::Integration => "integration",
        }
    }
}

/// A node's role in the manifest.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Role {
    /// `pure`: no effect outside its output.
    Pure,
    /// `side-effect`: has effects outside its output (calling a model is one).
    SideEffect,
}

impl Role {
    /// The manifest spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pure => "pure",
            Self::SideEffect => "side-effect",
        }
    }
}

/// What `#[wop_node(...)]` declares about a node.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeSpec {
    /// The OpenWOP type id, e.g. `community.demo.bookai.draft-scene`.
    pub type_id: &'static str,
    /// Semver.
    pub version: &'static str,
    /// The manifest category.
    pub category: Category,
    /// The manifest role.
    pub role: Role,
    /// A human label.
    pub label: Option<&'static str>,
    /// A description.
    pub description: Option<&'static str>,
    /// The node's budget in provider requests per execution.
    pub max_calls: Option<u32>,
    /// The default retry policy of the node's calls.
    pub retry: RetryPolicy,
    /// Host capabilities the node requires; it refuses to start without them.
    pub requires: &'static [Capability],
}

/// A pack node. Implemented by `#[wop_node]`; write it by hand only when the macro cannot
/// express what you need.
pub trait Node: Send + Sync + 'static {
    /// The typed input.
    type Input: DeserializeOwned + JsonSchema + Send + 'static;
    /// The typed output.
    type Output: Serialize + JsonSchema + Send + 'static;
    /// The node's declaration.
    const SPEC: NodeSpec;

    /// Runs the node. Its error is branded with the run (`NodeError<'run>`), like the failures
    /// it may carry.
    fn run<'a, 'run>(
        &'a self,
        ctx: &'a NodeCtx<'run>,
        input: Self::Input,
    ) -> BoxFuture<'a, Result<Self::Output, NodeError<'run>>>;

    /// The calls the node plans to make for `input`, for the estimate before a run.
    fn plan(&self, input: &Self::Input) -> CallPlan {
        let _ = input;
        CallPlan::default()
    }
}

/// A node with its types erased to JSON: what a pack registry holds.
pub trait DynNode: Send + Sync {
    /// The declaration.
    fn spec(&self) -> &'static NodeSpec;
    /// The input's JSON schema.
    fn input_schema(&self) -> Value;
    /// The output's JSON schema.
    fn output_schema(&self) -> Value;
    /// The plan for a JSON input.
    fn plan_json(&self, input: &Value) -> Result<CallPlan, ErrorEnvelope>;
    /// Runs the node on a JSON input.
    fn run_json<'a, 'run>(
        &'a self,
        ctx: &'a NodeCtx<'run>,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, NodeError<'run>>>;
}

/// Reads a node input; a refusal names the offending key as `details.field`, e.g.
/// `input.chapter.scenes[2]` for a wrong type, `input.chapters` for a missing or unknown key.
fn parse_input<T: DeserializeOwned>(input: &Value) -> Result<T, ErrorEnvelope> {
    serde_path_to_error::deserialize(input).map_err(|e| {
        let path = e.path().to_string();
        let msg = e.into_inner().to_string();
        let mut field = "input".to_owned();
        if path != "." {
            if !path.starts_with('[') {
                field.push('.');
            }
            field.push_str(&path);
        }
        // A missing key is reported at its parent: name the key itself.
        if msg.starts_with("missing field `")
            && let Some(key) = msg.split('`').nth(1)
        {
            field.push('.');
            field.push_str(key);
        }
        ErrorEnvelope::validation(field, format!("the node input is invalid: {msg}"))
    })
}

impl<N: Node> DynNode for N {
    fn spec(&self) -> &'static NodeSpec {
        &N::SPEC
    }

    fn input_schema(&self) -> Value {
        (*crate::ai::schema_of::<N::Input>()).clone()
    }

    fn output_schema(&self) -> Value {
        (*crate::ai::schema_of::<N::Output>()).clone()
    }

    fn plan_json(&self, input: &Value) -> Result<CallPlan, ErrorEnvelope> {
        Ok(self.plan(&parse_input::<N::Input>(input)?))
    }

    fn run_json<'a, 'run>(
        &'a self,
        ctx: &'a NodeCtx<'run>,
        input: Value,
    ) -> BoxFuture<'a, Result<Value, NodeError<'run>>> {
        Box::pin(async move {
            let input = parse_input::<N::Input>(&input).map_err(NodeError::from_envelope)?;
            let output = self.run(ctx, input).await?;
            serde_json::to_value(output)
                .map_err(|e| NodeError::new(format!("the node output does not serialize: {e}")))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::parse_input;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct Chapter {
        number: u32,
        scenes: Vec<String>,
    }

    #[derive(Debug, Deserialize)]
    #[serde(deny_unknown_fields, rename_all = "camelCase")]
    #[allow(dead_code)]
    struct In {
        chapter: Chapter,
        min_words: u32,
    }

    fn field(v: serde_json::Value) -> String {
        let e = parse_input::<In>(&v).expect_err("invalid");
        e.field().unwrap_or("").to_owned()
    }

    #[test]
    fn input_refusals_name_the_offending_key() {
        let ok = json!({"chapter": {"number": 1, "scenes": ["a"]}, "minWords": 5});
        assert!(parse_input::<In>(&ok).is_ok());
        assert_eq!(
            field(json!({"chapter": {"number": 1, "scenes": []}})),
            "input.minWords"
        );
        assert_eq!(
            field(json!({"chapter": {"number": "1", "scenes": []}, "minWords": 5})),
            "input.chapter.number"
        );
        assert_eq!(
            field(json!({"chapter": {"number": 1, "scenes": ["a", 2]}, "minWords": 5})),
            "input.chapter.scenes[1]"
        );
        assert_eq!(
            field(json!({"chapter": {"number": 1, "scenes": [], "x": 1}, "minWords": 5})),
            "input.chapter.x"
        );
        assert_eq!(field(json!([1])), "input[0]");
        assert_eq!(field(json!("text")), "input");
    }
}
