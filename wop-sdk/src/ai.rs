//! The typed call: [`AiRequest`], [`Completion`], the opaque [`AiFailure`] and retry lineage.

use crate::caps::AttemptsProof;
use crate::policy::{RetryPolicy, RetryReason};
use crate::wire::{Attempts, CallAiRequest, FinishReason, Message, Usage};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::any::TypeId;
use std::collections::HashMap;
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, OnceLock, RwLock};

/// Invariant in `'run`: values branded with one run cannot be used with another.
pub(crate) type Brand<'run> = PhantomData<fn(&'run ()) -> &'run ()>;

/// What a call returns: a type with a JSON schema (a structured call) or [`Text`] (a plain call).
///
/// Implemented for every `T: JsonSchema + DeserializeOwned + Send + 'static`, whose schema becomes
/// the request's `responseSchema` (generated once per type and cached), and for [`Text`].
pub trait Output: Sized + Send + 'static {
    /// The `responseSchema` of the call, `None` for a plain call.
    fn response_schema() -> Option<Arc<Value>>;
    /// Reads the output from the result's `data` (structured) or `content` (plain); the error
    /// lists why it does not meet the contract.
    fn from_result(data: Option<&Value>, content: Option<&str>) -> Result<Self, Vec<String>>;
}

/// The schema of `T`, generated once per type and cached.
pub fn schema_of<T: JsonSchema + 'static>() -> Arc<Value> {
    static CACHE: OnceLock<RwLock<HashMap<TypeId, Arc<Value>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(Default::default);
    let id = TypeId::of::<T>();
    if let Some(s) = cache
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&id)
    {
        return Arc::clone(s);
    }
    let schema =
        Arc::new(serde_json::to_value(schemars::schema_for!(T)).unwrap_or(Value::Bool(true)));
    let mut w = cache
        .write()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(w.entry(id).or_insert(schema))
}

impl<T: JsonSchema + DeserializeOwned + Send + 'static> Output for T {
    fn response_schema() -> Option<Arc<Value>> {
        Some(schema_of::<T>())
    }

    fn from_result(data: Option<&Value>, _content: Option<&str>) -> Result<Self, Vec<String>> {
        let data = data.ok_or_else(|| vec!["the result carries no `data`".to_owned()])?;
        T::deserialize(data).map_err(|e| vec![e.to_string()])
    }
}

/// The output of a plain call (no `responseSchema`): the result's `content`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Text(pub String);

impl Output for Text {
    fn response_schema() -> Option<Arc<Value>> {
        None
    }

    fn from_result(_data: Option<&Value>, content: Option<&str>) -> Result<Self, Vec<String>> {
        content
            .map(|c| Self(c.to_owned()))
            .ok_or_else(|| vec!["the result carries no `content`".to_owned()])
    }
}

type Validator<T> = Arc<dyn Fn(&T) -> Result<(), Vec<String>> + Send + Sync>;

/// A typed `ctx.callAI` request.
///
/// ```rust,no_run
/// use wop_sdk::{AiRequest, RetryPolicy, Text};
/// # #[derive(serde::Deserialize, schemars::JsonSchema)] struct Outline { chapters: Vec<String> }
/// let outline = AiRequest::<Outline>::prompt("Outline a short mystery novel.")
///     .system("You are a careful editor.")
///     .max_tokens(800)
///     .retry(RetryPolicy::NO_RETRIES)
///     .slot("book")
///     .purpose("outline")
///     .beneficiaries(["user-1"]);
/// let review = AiRequest::<Text>::prompt("Review chapter one.").max_tokens(400);
/// ```
pub struct AiRequest<T> {
    pub(crate) wire: CallAiRequest,
    pub(crate) policy: Option<RetryPolicy>,
    pub(crate) require_retry_policy: bool,
    pub(crate) validator: Option<Validator<T>>,
    /// A `retry` value sent to the host as is, unvalidated: only for the conformance fixture,
    /// which tests the host's own refusal of a malformed policy (RFC 0248 §B.5). Crate-private
    /// so packs cannot send what the typed [`RetryPolicy`] refuses.
    pub(crate) raw_retry: Option<Value>,
    _out: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for AiRequest<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AiRequest")
            .field("wire", &self.wire)
            .field("policy", &self.policy)
            .field("require_retry_policy", &self.require_retry_policy)
            .field("validator", &self.validator.is_some())
            .finish()
    }
}

impl<T: Output> AiRequest<T> {
    /// A request whose prompt is one user message.
    pub fn prompt(prompt: impl Into<String>) -> Self {
        Self::messages([Message::user(prompt)])
    }

    /// A request with these messages.
    pub fn messages(messages: impl IntoIterator<Item = Message>) -> Self {
        let wire = CallAiRequest {
            messages: messages.into_iter().collect(),
            response_schema: T::response_schema().map(|s| (*s).clone()),
            ..CallAiRequest::default()
        };
        Self {
            wire,
            policy: None,
            require_retry_policy: false,
            validator: None,
            raw_retry: None,
            _out: PhantomData,
        }
    }

    /// The system prompt.
    #[must_use]
    pub fn system(mut self, system: impl Into<String>) -> Self {
        self.wire.system_prompt = Some(system.into());
        self
    }

    /// The output budget of the first attempt.
    #[must_use]
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.wire.max_tokens = Some(max_tokens.max(1));
        self
    }

    /// The model; the host default otherwise.
    #[must_use]
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.wire.model = Some(model.into());
        self
    }

    /// The provider; the host default otherwise.
    #[must_use]
    pub fn provider(mut self, provider: impl Into<String>) -> Self {
        self.wire.provider = Some(provider.into());
        self
    }

    /// The sampling temperature, clamped to 0..=2.
    #[must_use]
    pub fn temperature(mut self, t: f64) -> Self {
        self.wire.temperature = Some(t.clamp(0.0, 2.0));
        self
    }

    /// This call's retry policy (otherwise the node's default). Sent only to a host that
    /// advertises `retryPolicy`; see [`Completion::policy_honoured`].
    #[must_use]
    pub fn retry(mut self, policy: RetryPolicy) -> Self {
        self.policy = Some(policy);
        self
    }

    /// Fail the call with `capability_not_provided`, before any request, on a host that would not
    /// honour the retry policy.
    #[must_use]
    pub fn require_retry_policy(mut self) -> Self {
        self.require_retry_policy = true;
        self
    }

    /// Sends `retry` as this raw JSON value, unvalidated, in place of the typed policy
    /// (conformance fixture only).
    #[must_use]
    pub(crate) fn raw_retry(mut self, retry: Value) -> Self {
        self.raw_retry = Some(retry);
        self
    }

    /// Routing metadata (seed 2).
    #[must_use]
    pub fn slot(mut self, slot: impl Into<String>) -> Self {
        self.wire.slot = Some(slot.into());
        self
    }

    /// Routing metadata (seed 2).
    #[must_use]
    pub fn purpose(mut self, purpose: impl Into<String>) -> Self {
        self.wire.purpose = Some(purpose.into());
        self
    }

    /// Who is charged for the call's generations (the run's owner when none).
    #[must_use]
    pub fn beneficiaries<S: Into<String>>(mut self, ids: impl IntoIterator<Item = S>) -> Self {
        self.wire.beneficiary_user_ids = ids.into_iter().map(Into::into).collect();
        self
    }

    /// A closed-world check of the typed output: when it returns errors, the completion reports
    /// `invalid_output` with them (and still carries its attempt id, for a deliberate repair).
    #[must_use]
    pub fn validate(
        mut self,
        check: impl Fn(&T) -> Result<(), Vec<String>> + Send + Sync + 'static,
    ) -> Self {
        self.validator = Some(Arc::new(check));
        self
    }

    /// Makes this request a deliberate retry of `completion`, for `reason`: the wire carries
    /// `retryOfAttemptId` and `retryReason`. The only way to build a retry.
    ///
    /// On a host that does not advertise `aiProviders.callAccounting` (which ignores the
    /// lineage fields), the runtime also appends two messages: the rejected reply (as the
    /// assistant's) and its validation errors (as the user's), or, for a completion that was
    /// valid, one user message naming the reason. So the retry is a different provider request,
    /// and no host cache keyed on the request can hand back the reply being retried.
    pub fn retry_of<'run, U>(
        self,
        completion: &Completion<'run, U>,
        reason: RetryReason,
    ) -> RetryOf<'run, T> {
        RetryOf {
            request: self,
            lineage: Lineage {
                attempt_id: completion.attempt_id.id.clone(),
                reason,
                rejected: completion.output.as_ref().err().cloned(),
            },
            _brand: PhantomData,
        }
    }

    /// The wire request as it would be sent (without `retry`, which depends on the host).
    pub fn wire(&self) -> &CallAiRequest {
        &self.wire
    }
}

/// A deliberate retry: a request bound to a successful completion of the same run and a reason.
/// Made only by [`AiRequest::retry_of`].
pub struct RetryOf<'run, T> {
    pub(crate) request: AiRequest<T>,
    pub(crate) lineage: Lineage,
    _brand: Brand<'run>,
}

impl<T> fmt::Debug for RetryOf<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryOf")
            .field("request", &self.request)
            .field("attempt_id", &self.lineage.attempt_id)
            .field("reason", &self.lineage.reason)
            .finish()
    }
}

/// What a deliberate retry carries besides its request. Not part of the API.
#[doc(hidden)]
#[derive(Debug)]
pub struct Lineage {
    pub(crate) attempt_id: String,
    pub(crate) reason: RetryReason,
    /// The retried completion's validation failure, when it had one.
    pub(crate) rejected: Option<InvalidOutput>,
}

impl Lineage {
    /// The messages that make the retry a different provider request on a host that ignores
    /// lineage (see [`AiRequest::retry_of`]).
    pub(crate) fn corrective_messages(&self) -> Vec<Message> {
        match &self.rejected {
            Some(invalid) => {
                let reply = match &invalid.raw {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                };
                vec![
                    Message::assistant(reply),
                    Message::user(format!(
                        "That reply does not meet the contract:\n- {}\nReply again and fix every point.",
                        invalid.errors.join("\n- ")
                    )),
                ]
            }
            None => vec![Message::user(format!(
                "The previous reply was not accepted ({}). Reply again.",
                self.reason.as_str()
            ))],
        }
    }
}

mod sealed {
    pub trait Sealed {}
}

/// What [`crate::NodeCtx::call_ai`] accepts: a fresh [`AiRequest`] or a [`RetryOf`] of this run.
pub trait IntoCall<'run, T>: sealed::Sealed {
    #[doc(hidden)]
    fn into_parts(self) -> (AiRequest<T>, Option<Lineage>);
}

impl<T> sealed::Sealed for AiRequest<T> {}
impl<T> sealed::Sealed for RetryOf<'_, T> {}

impl<'run, T> IntoCall<'run, T> for AiRequest<T> {
    fn into_parts(self) -> (AiRequest<T>, Option<Lineage>) {
        (self, None)
    }
}

impl<'run, T> IntoCall<'run, T> for RetryOf<'run, T> {
    fn into_parts(self) -> (AiRequest<T>, Option<Lineage>) {
        (self.request, Some(self.lineage))
    }
}

/// The identity the host persisted for a successful call. Exists only inside a [`Completion`];
/// there is no way to make one from a string. Branded to its run.
pub struct AttemptId<'run> {
    pub(crate) id: String,
    _brand: Brand<'run>,
}

impl AttemptId<'_> {
    /// The id as the host wrote it (for logs).
    pub fn as_str(&self) -> &str {
        &self.id
    }
}

impl fmt::Debug for AttemptId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "AttemptId({})", self.id)
    }
}

impl fmt::Display for AttemptId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.id)
    }
}

/// Why an output does not meet the contract (`semanticStatus: invalid_output`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidOutput {
    /// What is wrong, one line each; fit to feed back into a repair prompt.
    pub errors: Vec<String>,
    /// The raw output as the host returned it.
    pub raw: Value,
}

impl fmt::Display for InvalidOutput {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid_output: {}", self.errors.join("; "))
    }
}

/// A successful call: the host produced a completion. Its output may still be
/// `invalid_output` (closed-world validation), in which case the pack can repair it with a
/// deliberate retry ([`AiRequest::retry_of`]).
pub struct Completion<'run, T> {
    pub(crate) attempt_id: AttemptId<'run>,
    pub(crate) output: Result<T, InvalidOutput>,
    pub(crate) usage: Option<Usage>,
    pub(crate) attempts: Option<Attempts>,
    pub(crate) finish_reason: Option<FinishReason>,
    pub(crate) model: Option<String>,
    pub(crate) policy_honoured: bool,
}

impl<T: fmt::Debug> fmt::Debug for Completion<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completion")
            .field("attempt_id", &self.attempt_id)
            .field("output", &self.output)
            .field("usage", &self.usage)
            .field("finish_reason", &self.finish_reason)
            .finish_non_exhaustive()
    }
}

impl<'run, T> Completion<'run, T> {
    pub(crate) fn new(
        attempt_id: String,
        output: Result<T, InvalidOutput>,
        usage: Option<Usage>,
        attempts: Option<Attempts>,
        finish_reason: Option<FinishReason>,
        model: Option<String>,
        policy_honoured: bool,
    ) -> Self {
        Self {
            attempt_id: AttemptId {
                id: attempt_id,
                _brand: PhantomData,
            },
            output,
            usage,
            attempts,
            finish_reason,
            model,
            policy_honoured,
        }
    }

    /// The identity of this call.
    pub fn attempt_id(&self) -> &AttemptId<'run> {
        &self.attempt_id
    }

    /// The typed output, or why it does not meet the contract.
    pub fn output(&self) -> Result<&T, &InvalidOutput> {
        self.output.as_ref()
    }

    /// The typed output by value.
    pub fn into_output(self) -> Result<T, InvalidOutput> {
        self.output
    }

    /// Whether the output meets the contract (`semanticStatus: ok`).
    pub fn is_valid(&self) -> bool {
        self.output.is_ok()
    }

    /// Usage of the attempt whose output this is (RFC 0248 §A.4).
    pub fn usage(&self) -> Option<Usage> {
        self.usage
    }

    /// Why the final attempt stopped.
    pub fn finish_reason(&self) -> Option<FinishReason> {
        self.finish_reason
    }

    /// The model that answered.
    pub fn model(&self) -> Option<&str> {
        self.model.as_deref()
    }

    /// RFC 0248 §A: the call's real provider attempts. Needs the proof that the host advertises
    /// them (`ctx.capabilities().attempts()`). The runtime refuses a result without `attempts`
    /// from a host that advertises them, so this is `None` only when the proof was negotiated
    /// with a different host than the one that answered this call.
    pub fn attempts(&self, proof: AttemptsProof) -> Option<Attempts> {
        let _: AttemptsProof = proof;
        self.attempts
    }

    /// Whether the call's retry policy was sent to a host that honours it. `false` on a host
    /// that does not advertise `retryPolicy` (use [`AiRequest::require_retry_policy`] to refuse
    /// such a host instead).
    pub fn policy_honoured(&self) -> bool {
        self.policy_honoured
    }
}

/// A failed call: an opaque, run-bound capability.
///
/// It can be tested (it is the `Err` of the call), settled with
/// [`crate::NodeCtx::settle_ai_failure`], or propagated with `?` (which settles it and fails the
/// node with the failure's public error code). It cannot be constructed, cloned, serialized,
/// inspected or carried out of its run; `Debug` and `Display` reveal nothing of the cause, which
/// stays in the host's private records. A failure dropped without settling is settled when the
/// node ends.
#[must_use = "an AI failure must be settled (`ctx.settle_ai_failure`) or propagated with `?`"]
pub struct AiFailure<'run> {
    pub(crate) local: u64,
    pub(crate) state: Arc<crate::node::RunState>,
    _brand: Brand<'run>,
}

impl AiFailure<'_> {
    pub(crate) fn new(local: u64, state: Arc<crate::node::RunState>) -> Self {
        Self {
            local,
            state,
            _brand: PhantomData,
        }
    }
}

impl fmt::Debug for AiFailure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("AiFailure(opaque)")
    }
}

impl fmt::Display for AiFailure<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("the AI call failed; its cause is private to the host (settle it or propagate it with `?`)")
    }
}
