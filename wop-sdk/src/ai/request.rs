//! What a node asks: [`AiRequest`] and the deliberate retry [`RetryOf`].

use super::completion::{Completion, InvalidOutput};
use super::output::Output;
use crate::brand::Brand;
use crate::policy::{RetryPolicy, RetryReason};
use crate::wire::{CallAiRequest, Message};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

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
            response_schema: T::response_schema(),
            ..CallAiRequest::default()
        };
        Self {
            wire,
            policy: None,
            require_retry_policy: false,
            validator: None,
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

    /// The sampling temperature, clamped to 0..=2 (NaN sets none).
    #[must_use]
    pub fn temperature(mut self, t: f64) -> Self {
        self.wire.temperature = (!t.is_nan()).then(|| t.clamp(0.0, 2.0));
        self
    }

    /// Sequences at which the model stops generating (sent to the provider as given; an empty
    /// list sends none). A provider limits how many it takes (OpenAI: 4); more are its error.
    #[must_use]
    pub fn stop_sequences<S: Into<String>>(mut self, stops: impl IntoIterator<Item = S>) -> Self {
        let stops: Vec<String> = stops.into_iter().map(Into::into).collect();
        self.wire.stop_sequences = (!stops.is_empty()).then_some(stops);
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
                attempt_id: completion.attempt_id().as_str().to_owned(),
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
    /// `messages` followed by the corrective messages: one new list. The request's own list
    /// (not shared, the usual case) gives its texts to the new one; a shared one is copied.
    pub(crate) fn append_corrective_messages(&self, messages: &mut Arc<[Message]>) {
        let notes = self.corrective_messages();
        *messages = match Arc::get_mut(messages) {
            Some(own) => own
                .iter_mut()
                .map(|m| Message {
                    role: m.role,
                    content: std::mem::take(&mut m.content),
                })
                .chain(notes)
                .collect(),
            None => messages.iter().cloned().chain(notes).collect(),
        };
    }

    /// The messages that make the retry a different provider request on a host that ignores
    /// lineage (see [`AiRequest::retry_of`]).
    fn corrective_messages(&self) -> Vec<Message> {
        match &self.rejected {
            Some(invalid) => {
                let reply = match &invalid.raw {
                    serde_json::Value::String(s) => s.clone(),
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Role;

    fn lineage() -> Lineage {
        Lineage {
            attempt_id: "a-1".into(),
            reason: RetryReason::InvalidOutput,
            rejected: Some(InvalidOutput {
                errors: vec!["too short".into()],
                raw: serde_json::Value::String("draft".into()),
            }),
        }
    }

    #[test]
    fn corrective_messages_follow_the_request_s_own_whether_shared_or_not() {
        let own: Arc<[Message]> = Arc::new([Message::user("write")]);
        let shared = Arc::clone(&own);
        let mut messages = Arc::clone(&own);
        lineage().append_corrective_messages(&mut messages);
        let roles: Vec<Role> = messages.iter().map(|m| m.role).collect();
        assert_eq!(roles, [Role::User, Role::Assistant, Role::User]);
        assert_eq!(
            (&*messages[0].content, &*messages[1].content),
            ("write", "draft")
        );
        assert_eq!(
            *shared,
            [Message::user("write")],
            "a shared list is left as it was"
        );
        let mut alone: Arc<[Message]> = Arc::new([Message::user("write")]);
        lineage().append_corrective_messages(&mut alone);
        assert_eq!(
            *alone, *messages,
            "its own list gives its texts to the new one"
        );
    }
}
