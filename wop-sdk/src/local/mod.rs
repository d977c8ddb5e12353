//! The embedded local host: the default for development, examples and tests.
//!
//! It behaves like a production OpenWOP host: the retry loop of SPEC.md (refusal never retried,
//! truncation retried with a grown budget unless `growMaxTokens: false`, schema violations
//! retried with a corrective note, the natural-language fallback inside the cap), RFC 0248
//! accounting, a per-run event log, replay forks, ceilings on generations, a billing ledger, and
//! an attempt journal that makes redelivery safe. Providers plug in behind [`Provider`]; the
//! [`ScriptedProvider`] serves the conformance script.
//!
//! # Defaults
//!
//! | setting | default |
//! |---|---|
//! | `callAccounting.attempts`, `.retryPolicy` | both advertised |
//! | ceiling (`maxRetryAttempts`) | 3 |
//! | truncation multiplier | 2 |
//! | default `maxTokens` | 1024 |
//! | provider maximum `maxTokens` | 32 768 |
//! | natural-language fallback | off |
//! | concurrent generations (host-wide) | 8 |
//! | generations per run | unlimited |
//! | provider answer timeout | 120 s (then the dispatch is ambiguous) |
//! | largest reply accepted | 8 MiB; JSON nesting depth 128 |

mod call;
mod mock;
mod provider;

pub use mock::{Script, ScriptedProvider, Step};
pub use provider::{Provider, ProviderError, ProviderReply, ProviderRequest};

use crate::host::{AttemptKey, BoxFuture, FailureToken, Host, HostFailure, RunId};
use crate::journal::{
    Begin, ChargeRow, Fingerprint, Journal, JournalError, MemoryJournal, Outcome, RunRecord,
    fingerprint,
};
use crate::node::{DynNode, NodeOutcome, execute};
use crate::wire::{
    CallAccounting, CallAiRequest, CapabilityDocument, Completion, ErrorCode, ErrorEnvelope,
    Reliability, RunEvent, kind,
};
use serde::Serialize;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::fmt;
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, watch};

/// The local host's settings. Build with [`LocalHost::builder`].
#[derive(Clone, Debug)]
pub struct LocalConfig {
    /// Advertise and emit `attempts` (RFC 0248 §A).
    pub attempts: bool,
    /// Advertise and honour a per-call `retry` (RFC 0248 §B).
    pub retry_policy: bool,
    /// The ceiling on provider requests per call.
    pub max_retry_attempts: u8,
    /// The truncation budget multiplier.
    pub truncation_multiplier: u32,
    /// `maxTokens` when a request names none.
    pub default_max_tokens: u32,
    /// The provider's largest `maxTokens`: growth stops there.
    pub provider_max_tokens: u32,
    /// The natural-language-to-JSON fallback.
    pub nl_fallback: bool,
    /// Ask the provider for native structured output (else the schema goes in the prompt).
    pub native_structured_output: bool,
    /// Host-wide cap on generations in flight.
    pub max_concurrent_generations: usize,
    /// Per-run cap on total generations.
    pub max_generations_per_run: Option<u32>,
    /// How long to wait for a provider's answer before the dispatch counts as ambiguous.
    pub provider_timeout: Duration,
    /// The largest reply accepted, in bytes.
    pub max_reply_bytes: usize,
    /// The deepest JSON nesting accepted in a reply.
    pub max_json_depth: usize,
    /// The model named when a request names none.
    pub default_model: String,
    /// Who owns runs started without an owner (charged when a call names no beneficiary).
    pub default_owner: String,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            attempts: true,
            retry_policy: true,
            max_retry_attempts: 3,
            truncation_multiplier: 2,
            default_max_tokens: 1024,
            provider_max_tokens: 32_768,
            nl_fallback: false,
            native_structured_output: true,
            max_concurrent_generations: 8,
            max_generations_per_run: None,
            provider_timeout: Duration::from_secs(120),
            max_reply_bytes: 8 << 20,
            max_json_depth: 128,
            default_model: "mock-1".into(),
            default_owner: "local-user".into(),
        }
    }
}

/// Something a host operator may read and a pack never sees: the cause of a failure.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Diagnostic {
    /// The failure's token.
    pub token: u64,
    /// The run.
    pub run_id: String,
    /// The call, when the failure is a call's.
    pub call: Option<String>,
    /// The public code.
    pub code: String,
    /// The private cause (provider error text, policy, billing).
    pub cause: String,
    /// The dispatch outcome was unknown.
    pub ambiguous: bool,
    /// Settled by the pack.
    pub settled: bool,
}

/// Receives every event as it happens (before its journal write): for progress lines.
pub type Observer = Arc<dyn Fn(&RunEvent) + Send + Sync>;

type InFlightResult = Option<Result<Value, HostFailure>>;

/// What the host keeps about a run while one of its nodes executes; dropped when the last ends, so
/// a long-lived host does not grow with the runs it has finished.
struct ActiveRun {
    owner: String,
    replay_of: Option<RunId>,
    generations: u32,
    nodes: usize,
}

/// Compiled validators by the structural hash of their schema (see [`Inner::validator`]).
type ValidatorCache = HashMap<u64, Vec<(Value, Arc<jsonschema::Validator>)>>;

/// Feeds the structure of `v` to `h`: equal values hash alike (object keys in map order).
fn hash_json(v: &Value, h: &mut impl Hasher) {
    match v {
        Value::Null => h.write_u8(0),
        Value::Bool(b) => {
            h.write_u8(1);
            h.write_u8(u8::from(*b));
        }
        Value::Number(n) => {
            h.write_u8(2);
            h.write_u64(n.as_f64().map_or(0, f64::to_bits));
        }
        Value::String(s) => {
            h.write_u8(3);
            h.write(s.as_bytes());
            h.write_u8(0xff);
        }
        Value::Array(items) => {
            h.write_u8(4);
            h.write_usize(items.len());
            for item in items {
                hash_json(item, h);
            }
        }
        Value::Object(map) => {
            h.write_u8(5);
            h.write_usize(map.len());
            for (k, item) in map {
                h.write(k.as_bytes());
                h.write_u8(0xff);
                hash_json(item, h);
            }
        }
    }
}

/// Validates `data` with a compiled validator: up to eight errors, joined.
pub(crate) fn check(validator: &jsonschema::Validator, data: &Value) -> Result<(), String> {
    let errors: Vec<String> = validator
        .iter_errors(data)
        .take(8)
        .map(|e| format!("at `{}`: {e}", e.instance_path()))
        .collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

pub(crate) struct Inner {
    pub(crate) config: LocalConfig,
    pub(crate) provider: Arc<dyn Provider>,
    pub(crate) journal: Arc<dyn Journal>,
    observer: Option<Observer>,
    generations: Arc<Semaphore>,
    runs: Mutex<HashMap<RunId, ActiveRun>>,
    diagnostics: Mutex<Vec<Diagnostic>>,
    in_flight: Mutex<HashMap<AttemptKey, (Fingerprint, watch::Receiver<InFlightResult>)>>,
    validators: Mutex<ValidatorCache>,
    next_id: AtomicU64,
    seed: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    pub(crate) fn observe(&self, run: &RunId, kind: &str, payload: &Value) {
        if let Some(o) = &self.observer
            && let Ok(event) = crate::wire::Event::from_emitted(kind, payload)
        {
            // Seen live, before the journal gives it its place in the log.
            o(&RunEvent::now(run.as_str(), 0, event));
        }
    }

    /// The record of a run used through `Host::call_ai` outside a node execution: it stays until a
    /// node of that run starts and ends.
    fn inactive_run(&self) -> ActiveRun {
        ActiveRun {
            owner: self.config.default_owner.clone(),
            replay_of: None,
            generations: 0,
            nodes: 0,
        }
    }

    /// A node of `run` starts: the run's record is kept while any of its nodes executes. The
    /// generations already charged to the run count against its ceiling (a redelivery does not
    /// reset it).
    async fn activate(&self, run: &RunId, owner: &str, replay_of: Option<RunId>) {
        let charged = match self.config.max_generations_per_run {
            Some(_) => self
                .journal
                .charges(Some(run))
                .await
                .map_or(0, |rows| rows.iter().map(|r| r.charge.generations).sum()),
            None => 0,
        };
        let mut runs = lock(&self.runs);
        let entry = runs.entry(run.clone()).or_insert_with(|| ActiveRun {
            owner: owner.to_owned(),
            replay_of: replay_of.clone(),
            generations: charged,
            nodes: 0,
        });
        entry.owner = owner.to_owned();
        entry.replay_of = replay_of;
        entry.generations = entry.generations.max(charged);
        entry.nodes += 1;
    }

    /// A node of `run` ended: the run's record goes when no node of it executes.
    fn deactivate(&self, run: &RunId) {
        let mut runs = lock(&self.runs);
        if let Some(r) = runs.get_mut(run) {
            r.nodes = r.nodes.saturating_sub(1);
            if r.nodes == 0 {
                runs.remove(run);
            }
        }
    }

    /// Enforces the ceilings before a provider request.
    pub(crate) async fn admit(
        &self,
        run: &RunId,
    ) -> Result<OwnedSemaphorePermit, (ErrorEnvelope, String, bool)> {
        if let Some(max) = self.config.max_generations_per_run {
            let mut runs = lock(&self.runs);
            let used = &mut runs
                .entry(run.clone())
                .or_insert_with(|| self.inactive_run())
                .generations;
            if *used >= max {
                return Err((
                    ErrorEnvelope::new(
                        ErrorCode::BudgetExhausted,
                        "the run reached the host's ceiling on total generations",
                    )
                    .with_detail("ceiling", "maxGenerationsPerRun")
                    .with_detail("limit", max),
                    format!("policy: run ceiling of {max} generations reached"),
                    false,
                ));
            }
            *used += 1;
        }
        Arc::clone(&self.generations)
            .acquire_owned()
            .await
            .map_err(|_| {
                (
                    ErrorEnvelope::new(ErrorCode::UpstreamUnavailable, "the host is shutting down"),
                    "semaphore closed".into(),
                    false,
                )
            })
    }

    /// Sends one request, bounded in time and in reply size.
    pub(crate) async fn send(
        &self,
        request: ProviderRequest,
    ) -> Result<ProviderReply, ProviderError> {
        match tokio::time::timeout(
            self.config.provider_timeout,
            self.provider.generate(request),
        )
        .await
        {
            Err(_) => Err(ProviderError::NoAnswer(format!(
                "no answer within {} ms",
                self.config.provider_timeout.as_millis()
            ))),
            Ok(Ok(reply)) if reply.content.len() > self.config.max_reply_bytes => {
                Err(ProviderError::Failed(format!(
                    "reply of {} bytes exceeds the {}-byte limit",
                    reply.content.len(),
                    self.config.max_reply_bytes
                )))
            }
            Ok(other) => other,
        }
    }

    /// Parses a reply as JSON with a nesting limit (serde_json's own recursion limit also holds).
    pub(crate) fn parse_json(&self, text: &str) -> Result<Value, String> {
        let mut depth = 0usize;
        let mut max = 0usize;
        let mut in_str = false;
        let mut escaped = false;
        for b in text.bytes() {
            if in_str {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => in_str = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'"' => in_str = true,
                b'[' | b'{' => {
                    depth += 1;
                    max = max.max(depth);
                    if max > self.config.max_json_depth {
                        return Err(format!(
                            "JSON nested deeper than {}",
                            self.config.max_json_depth
                        ));
                    }
                }
                b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))
    }

    /// The compiled validator of `schema`, built once per distinct schema. The cache is keyed by
    /// a hash of the schema's structure (no serialization, no allocation) and confirmed by
    /// equality, so a collision only costs a comparison.
    pub(crate) fn validator(&self, schema: &Value) -> Result<Arc<jsonschema::Validator>, String> {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        hash_json(schema, &mut h);
        let key = h.finish();
        let find = |cache: &ValidatorCache| {
            cache
                .get(&key)
                .and_then(|bucket| bucket.iter().find(|(s, _)| s == schema))
                .map(|(_, v)| Arc::clone(v))
        };
        if let Some(v) = find(&lock(&self.validators)) {
            return Ok(v);
        }
        let v = Arc::new(
            jsonschema::validator_for(schema)
                .map_err(|e| format!("the response schema is invalid: {e}"))?,
        );
        let mut cache = lock(&self.validators);
        if let Some(v) = find(&cache) {
            return Ok(v);
        }
        cache
            .entry(key)
            .or_default()
            .push((schema.clone(), Arc::clone(&v)));
        Ok(v)
    }

    /// A new attempt id: this host's seed (time and process id at build) and a counter, so ids
    /// from two processes sharing a journal do not collide. It names the call; it carries nothing
    /// of the request.
    fn new_attempt_id(&self) -> String {
        let n = self.next_id.fetch_add(1, Ordering::SeqCst);
        format!("att_{:016x}{n:06x}", self.seed)
    }

    fn diagnose(
        &self,
        run: &RunId,
        key: Option<&AttemptKey>,
        public: &ErrorEnvelope,
        cause: String,
        ambiguous: bool,
    ) -> FailureToken {
        let token = self.next_id.fetch_add(1, Ordering::SeqCst);
        lock(&self.diagnostics).push(Diagnostic {
            token,
            run_id: run.as_str().to_owned(),
            call: key.map(ToString::to_string),
            code: public.error.as_str().to_owned(),
            cause,
            ambiguous,
            settled: false,
        });
        FailureToken::new(token)
    }

    fn failure(
        &self,
        key: &AttemptKey,
        public: ErrorEnvelope,
        cause: String,
        ambiguous: bool,
    ) -> HostFailure {
        let token = self.diagnose(&key.run_id, Some(key), &public, cause, ambiguous);
        HostFailure { public, token }
    }

    /// The answer a recorded outcome gives.
    fn replay_outcome(&self, key: &AttemptKey, outcome: Outcome) -> Result<Value, HostFailure> {
        match outcome {
            Outcome::Completed { result } => serde_json::from_str(&result).map_err(|e| {
                self.failure(
                    key,
                    ErrorEnvelope::new(
                        ErrorCode::UpstreamUnavailable,
                        "the recorded outcome cannot be read",
                    ),
                    format!("journal: recorded result is not JSON: {e}"),
                    false,
                )
            }),
            Outcome::Failed {
                public,
                private_cause,
                ambiguous,
            } => Err(self.failure(key, public, private_cause, ambiguous)),
        }
    }

    async fn call(&self, key: &AttemptKey, raw: &Value) -> Result<Value, HostFailure> {
        let request =
            CallAiRequest::from_json_for_host(raw, self.config.retry_policy).map_err(|e| {
                self.failure(key, e.to_envelope(), format!("refused request: {e}"), false)
            })?;
        let source = lock(&self.runs)
            .get(&key.run_id)
            .and_then(|r| r.replay_of.clone());
        if let Some(source) = source {
            return self.replay_call(key, &source, &request).await;
        }
        if let Some(id) = &request.retry_of_attempt_id {
            let known = self
                .journal
                .completed_attempt(&key.run_id, id)
                .await
                .unwrap_or(false);
            if !known {
                let e = ErrorEnvelope::validation(
                    "retryOfAttemptId",
                    "must name a completed attempt of the same run",
                );
                return Err(self.failure(
                    key,
                    e,
                    format!("lineage: unknown attempt `{id}`"),
                    false,
                ));
            }
        }
        let fp = fingerprint(&request);
        // A concurrent second entry reattaches to the call in flight.
        let entry = {
            let mut in_flight = lock(&self.in_flight);
            match in_flight.get(key) {
                Some((f, rx)) if *f == fp => Err(Some(rx.clone())),
                Some(_) => Err(None),
                None => {
                    let (tx, rx) = watch::channel(None);
                    in_flight.insert(key.clone(), (fp, rx));
                    Ok(tx)
                }
            }
        };
        match entry {
            Ok(tx) => {
                let answer = self.dispatch_fresh(key, &request, &fp).await;
                lock(&self.in_flight).remove(key);
                let _ = tx.send(Some(answer.clone()));
                answer
            }
            Err(Some(mut rx)) => {
                let answer = rx
                    .wait_for(Option::is_some)
                    .await
                    .ok()
                    .and_then(|v| v.clone());
                answer.unwrap_or_else(|| {
                    let e = ErrorEnvelope::new(
                        ErrorCode::UpstreamUnavailable,
                        "the call in flight was lost",
                    );
                    Err(self.failure(key, e, "in-flight sender dropped".into(), true))
                })
            }
            Err(None) => Err(self.mismatch(key)),
        }
    }

    fn mismatch(&self, key: &AttemptKey) -> HostFailure {
        let e = ErrorEnvelope::new(
            ErrorCode::IdempotencyKeyMismatch,
            "this call's identity was already used with a different request",
        )
        .with_detail("attemptKey", key.to_string());
        self.failure(
            key,
            e,
            "integrity: fingerprint differs from the recorded request".into(),
            false,
        )
    }

    async fn dispatch_fresh(
        &self,
        key: &AttemptKey,
        request: &CallAiRequest,
        fp: &Fingerprint,
    ) -> Result<Value, HostFailure> {
        let attempt_id = self.new_attempt_id();
        // The identity and the announcement of the first provider request are made durable in
        // one write, before anything is dispatched.
        let begin = self
            .journal
            .begin_first_request(
                key,
                fp,
                &attempt_id,
                call::first_budget(&self.config, request),
            )
            .await
            .map_err(|e| {
                self.failure(
                    key,
                    ErrorEnvelope::new(
                        ErrorCode::UpstreamUnavailable,
                        "the host could not persist the call's identity; nothing was dispatched",
                    ),
                    format!("journal: {e}"),
                    false,
                )
            })?;
        match begin {
            Begin::Fresh => {}
            Begin::Recorded { outcome, .. } => return self.replay_outcome(key, outcome),
            Begin::Mismatch => return Err(self.mismatch(key)),
            Begin::Unfinished { requests, .. } => {
                let public = ErrorEnvelope::new(
                    ErrorCode::UpstreamUnavailable,
                    "the outcome of an earlier dispatch of this call is unknown; it is not repeated and not charged",
                );
                let cause = format!(
                    "ambiguous dispatch: identity recorded with {requests} provider request(s) and no outcome"
                );
                let outcome = Outcome::Failed {
                    public: public.clone(),
                    private_cause: cause.clone(),
                    ambiguous: true,
                };
                // Best effort: record the terminal failure so the next re-entry replays it.
                let _ = self.journal.finish(key, &outcome, None, &[]).await;
                return Err(self.failure(key, public, cause, true));
            }
        }
        let owner = lock(&self.runs)
            .get(&key.run_id)
            .map_or_else(|| self.config.default_owner.clone(), |r| r.owner.clone());
        let finished = call::Call::new(self, key, request, &attempt_id, &owner)
            .dispatch()
            .await;
        if let Err(e) = self
            .journal
            .finish(
                key,
                &finished.outcome,
                finished.charge.as_ref(),
                &finished.events,
            )
            .await
        {
            // The outcome is not durable: on re-entry it is ambiguous and never charged.
            let public = ErrorEnvelope::new(
                ErrorCode::UpstreamUnavailable,
                "the host could not record the call's outcome",
            );
            return Err(self.failure(
                key,
                public,
                format!("journal: terminal write failed: {e}"),
                true,
            ));
        }
        match finished.result {
            // The value the recorded text denotes, without parsing the text back.
            Some(result) => Ok(result),
            None => self.replay_outcome(key, finished.outcome),
        }
    }

    async fn replay_call(
        &self,
        key: &AttemptKey,
        source: &RunId,
        request: &CallAiRequest,
    ) -> Result<Value, HostFailure> {
        let source_key = AttemptKey {
            run_id: source.clone(),
            ..key.clone()
        };
        let recorded = self.journal.lookup(&source_key).await.ok().flatten();
        let Some(entry) = recorded.filter(|e| e.outcome.is_some()) else {
            let e = ErrorEnvelope::new(
                ErrorCode::ReplaySourceMissing,
                "the source run has no recorded outcome for this call",
            )
            .with_detail("attemptKey", source_key.to_string());
            return Err(self.failure(key, e, "replay: no recorded outcome".into(), false));
        };
        if entry.fingerprint != fingerprint(request) {
            return Err(self.mismatch(key));
        }
        let outcome = entry.outcome.unwrap_or(Outcome::Completed {
            result: String::new(),
        });
        // Record the fork's own copy, without a charge and without provider events.
        if matches!(
            self.journal
                .begin(key, &entry.fingerprint, &entry.attempt_id)
                .await,
            Ok(Begin::Fresh)
        ) {
            let _ = self.journal.finish(key, &outcome, None, &[]).await;
        }
        self.replay_outcome(key, outcome)
    }
}

/// The embedded local host. Cheap to clone.
#[derive(Clone)]
pub struct LocalHost {
    inner: Arc<Inner>,
}

impl fmt::Debug for LocalHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalHost")
            .field("config", &self.inner.config)
            .finish_non_exhaustive()
    }
}

/// Builds a [`LocalHost`].
pub struct LocalHostBuilder {
    config: LocalConfig,
    provider: Option<Arc<dyn Provider>>,
    journal: Option<Arc<dyn Journal>>,
    observer: Option<Observer>,
}

impl fmt::Debug for LocalHostBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalHostBuilder")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl LocalHostBuilder {
    /// Both `callAccounting` flags on or off: `older_host()` advertises neither.
    #[must_use]
    pub fn call_accounting(mut self, attempts: bool, retry_policy: bool) -> Self {
        self.config.attempts = attempts;
        self.config.retry_policy = retry_policy;
        self
    }

    /// A host that advertises neither `callAccounting` flag (an older host).
    #[must_use]
    pub fn older_host(self) -> Self {
        self.call_accounting(false, false)
    }

    /// The ceiling on provider requests per call (1..=16).
    #[must_use]
    pub fn max_retry_attempts(mut self, n: u8) -> Self {
        self.config.max_retry_attempts = n.clamp(1, 16);
        self
    }

    /// The truncation multiplier.
    #[must_use]
    pub fn truncation_multiplier(mut self, k: u32) -> Self {
        self.config.truncation_multiplier = k.max(1);
        self
    }

    /// The provider's largest `maxTokens`.
    #[must_use]
    pub fn provider_max_tokens(mut self, n: u32) -> Self {
        self.config.provider_max_tokens = n.max(1);
        self
    }

    /// The natural-language-to-JSON fallback on or off.
    #[must_use]
    pub fn nl_fallback(mut self, on: bool) -> Self {
        self.config.nl_fallback = on;
        self
    }

    /// Host-wide cap on generations in flight.
    #[must_use]
    pub fn max_concurrent_generations(mut self, n: usize) -> Self {
        self.config.max_concurrent_generations = n.max(1);
        self
    }

    /// Per-run cap on total generations.
    #[must_use]
    pub fn max_generations_per_run(mut self, n: u32) -> Self {
        self.config.max_generations_per_run = Some(n);
        self
    }

    /// How long to wait for a provider before the dispatch counts as ambiguous.
    #[must_use]
    pub fn provider_timeout(mut self, d: Duration) -> Self {
        self.config.provider_timeout = d;
        self
    }

    /// Any other setting.
    #[must_use]
    pub fn config(mut self, f: impl FnOnce(&mut LocalConfig)) -> Self {
        f(&mut self.config);
        self
    }

    /// The provider (default: an empty [`ScriptedProvider`]).
    #[must_use]
    pub fn provider(mut self, p: impl Provider + 'static) -> Self {
        self.provider = Some(Arc::new(p));
        self
    }

    /// The journal (default: in memory; see [`LocalHostBuilder::sqlite_journal`] for the durable one).
    #[must_use]
    pub fn journal(mut self, j: Arc<dyn Journal>) -> Self {
        self.journal = Some(j);
        self
    }

    /// The SQLite journal at `path` (created when missing).
    #[cfg(feature = "sqlite")]
    pub fn sqlite_journal(self, path: impl AsRef<std::path::Path>) -> Result<Self, JournalError> {
        let j = crate::journal::SqliteJournal::open(path)?;
        Ok(self.journal(Arc::new(j)))
    }

    /// The SQLite journal of the project in the current directory: `.wop/journal.sqlite`.
    #[cfg(feature = "sqlite")]
    pub fn project_journal(self) -> Result<Self, JournalError> {
        self.sqlite_journal(std::path::Path::new(".wop").join("journal.sqlite"))
    }

    /// Receives every event as it happens.
    #[must_use]
    pub fn observer(mut self, f: impl Fn(&RunEvent) + Send + Sync + 'static) -> Self {
        self.observer = Some(Arc::new(f));
        self
    }

    /// The host.
    pub fn build(self) -> LocalHost {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| {
                u64::try_from(d.as_nanos() & u128::from(u64::MAX)).unwrap_or(0)
            })
            ^ u64::from(std::process::id())
            // Two hosts built in one process within the clock's resolution still differ.
            ^ HOSTS_BUILT.fetch_add(1, Ordering::SeqCst).rotate_right(16);
        LocalHost {
            inner: Arc::new(Inner {
                generations: Arc::new(Semaphore::new(self.config.max_concurrent_generations)),
                config: self.config,
                provider: self
                    .provider
                    .unwrap_or_else(|| Arc::new(ScriptedProvider::default())),
                journal: self
                    .journal
                    .unwrap_or_else(|| Arc::new(MemoryJournal::new())),
                observer: self.observer,
                runs: Mutex::default(),
                diagnostics: Mutex::default(),
                in_flight: Mutex::default(),
                validators: Mutex::default(),
                next_id: AtomicU64::new(1),
                seed,
            }),
        }
    }
}

/// How to start a node on the local host.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The run (a new id when `None`).
    pub run_id: Option<RunId>,
    /// The node instance id (default `main`).
    pub node_id: Option<String>,
    /// The run's owner (default from the config).
    pub owner: Option<String>,
    /// A script for this run's requests (a scripted provider only; see also the input's `script`).
    pub script: Option<Script>,
}

struct Start<'a> {
    run_id: &'a RunId,
    node_id: &'a str,
    owner: &'a str,
    replay_of: Option<&'a RunId>,
}

static RUN_COUNTER: AtomicU64 = AtomicU64::new(1);
static HOSTS_BUILT: AtomicU64 = AtomicU64::new(0);

impl LocalHost {
    /// A builder with the defaults of [`LocalConfig`].
    pub fn builder() -> LocalHostBuilder {
        LocalHostBuilder {
            config: LocalConfig::default(),
            provider: None,
            journal: None,
            observer: None,
        }
    }

    /// The settings.
    pub fn config(&self) -> &LocalConfig {
        &self.inner.config
    }

    /// The journal.
    pub fn journal(&self) -> &Arc<dyn Journal> {
        &self.inner.journal
    }

    /// A new run id: the host's whole seed (time, process, host) and a counter, so runs started by
    /// two processes on one journal do not collide.
    /// A v2 run id `<tenant>/<opaque>`: the tenant `local`, then the host's seed and a counter
    /// (32 hex characters, inside the 16..=128 the protocol asks of the opaque part).
    fn new_run_id(&self) -> RunId {
        let n = RUN_COUNTER.fetch_add(1, Ordering::SeqCst);
        RunId::new(format!("local/{:016x}{n:016x}", self.inner.seed))
    }

    fn as_host(&self) -> Arc<dyn Host> {
        Arc::new(self.clone())
    }

    /// Runs `node` on `input` in a new run.
    pub async fn run(&self, node: &dyn DynNode, input: Value) -> NodeOutcome {
        self.run_with(node, input, RunOptions::default()).await
    }

    /// Runs `node` on `input` with options (an existing run id: a further node of that run).
    pub async fn run_with(
        &self,
        node: &dyn DynNode,
        input: Value,
        options: RunOptions,
    ) -> NodeOutcome {
        self.run_on(self.as_host(), node, input, options).await
    }

    /// Like [`LocalHost::run_with`], but the node reaches its host through `host`: this local
    /// host prepares the run (journal record, the provider's script) and `host` (an adapter or a
    /// wrapper around this host, e.g. a test double) answers the node's calls and keeps its events.
    pub async fn run_on(
        &self,
        host: Arc<dyn Host>,
        node: &dyn DynNode,
        input: Value,
        options: RunOptions,
    ) -> NodeOutcome {
        let run_id = options.run_id.clone().unwrap_or_else(|| self.new_run_id());
        let node_id = options.node_id.clone().unwrap_or_else(|| "main".to_owned());
        let owner = options
            .owner
            .clone()
            .unwrap_or_else(|| self.inner.config.default_owner.clone());
        let start = Start {
            run_id: &run_id,
            node_id: &node_id,
            owner: &owner,
            replay_of: None,
        };
        self.inner.activate(&run_id, &owner, None).await;
        let outcome = match self.prepare(start, node, &input, options.script).await {
            Some(refused) => refused,
            None => execute(host, run_id.clone(), &node_id, node, input).await,
        };
        self.inner.deactivate(&run_id);
        outcome
    }

    /// Records the run and readies the provider; the refusal of a run that cannot start.
    async fn prepare(
        &self,
        start: Start<'_>,
        node: &dyn DynNode,
        input: &Value,
        script: Option<Script>,
    ) -> Option<NodeOutcome> {
        let Start {
            run_id,
            node_id,
            owner,
            replay_of,
        } = start;
        let record = RunRecord {
            run_id: run_id.as_str().to_owned(),
            owner: owner.to_owned(),
            replay_of: replay_of.map(|r| r.as_str().to_owned()),
            meta: json!({"nodeId": node_id, "typeId": node.spec().type_id, "input": input}),
        };
        let mut refusal = self.inner.journal.begin_run(&record).await.err().map(|e| {
            ErrorEnvelope::new(
                ErrorCode::UpstreamUnavailable,
                "the host could not record the run",
            )
            .with_detail("journal", e.to_string())
        });
        if refusal.is_none() {
            if let Some(s) = script {
                self.inner.provider.install_script(run_id, s);
            } else if let Err(e) = self.inner.provider.prepare_run(run_id, input) {
                refusal = Some(e.to_envelope());
            }
        }
        let error = refusal?;
        self.inner.observe(
            run_id,
            kind::NODE_FAILED,
            &json!({"nodeId": node_id, "error": error}),
        );
        let _ = self
            .inner
            .journal
            .append_event(
                run_id,
                kind::NODE_FAILED,
                &json!({"nodeId": node_id, "error": error}),
            )
            .await;
        Some(NodeOutcome {
            run_id: run_id.clone(),
            node_id: node_id.to_owned(),
            result: Err(error),
            calls: Vec::new(),
            budget: crate::budget::BudgetStatus::default(),
        })
    }

    /// Delivers `node` of an existing run again (an at-least-once queue, a worker crash): its
    /// calls re-enter with the same identities, so recorded outcomes are replayed, a changed
    /// request is refused, and an interrupted dispatch is a terminal failure.
    pub async fn redeliver(
        &self,
        run_id: &RunId,
        node_id: &str,
        node: &dyn DynNode,
        input: Value,
    ) -> NodeOutcome {
        let (owner, replay_of) = match self.inner.journal.run(run_id).await {
            Ok(Some(r)) => (r.owner, r.replay_of.map(RunId::new)),
            _ => (self.inner.config.default_owner.clone(), None),
        };
        self.inner.activate(run_id, &owner, replay_of).await;
        let outcome = execute(self.as_host(), run_id.clone(), node_id, node, input).await;
        self.inner.deactivate(run_id);
        outcome
    }

    /// A replay fork of `source`: a new run whose calls are served from the source's recorded
    /// outcomes, with no provider request (`replay_source_missing` when one is not recorded).
    pub async fn replay(
        &self,
        source: &RunId,
        node_id: &str,
        node: &dyn DynNode,
        input: Value,
    ) -> NodeOutcome {
        self.replay_on(self.as_host(), source, node_id, node, input)
            .await
    }

    /// Like [`LocalHost::replay`], but the fork's node reaches its host through `host` (see
    /// [`LocalHost::run_on`]).
    pub async fn replay_on(
        &self,
        host: Arc<dyn Host>,
        source: &RunId,
        node_id: &str,
        node: &dyn DynNode,
        input: Value,
    ) -> NodeOutcome {
        // A fork id no run of the journal has: with a durable journal, another process may have
        // made forks of the same source already (its counter started at 1 too).
        let fork = loop {
            let candidate = RunId::new(format!(
                "{source}.replay-{}",
                RUN_COUNTER.fetch_add(1, Ordering::SeqCst)
            ));
            if !matches!(self.inner.journal.run(&candidate).await, Ok(Some(_))) {
                break candidate;
            }
        };
        let owner = match self.inner.journal.run(source).await {
            Ok(Some(r)) => r.owner,
            _ => self.inner.config.default_owner.clone(),
        };
        let start = Start {
            run_id: &fork,
            node_id,
            owner: &owner,
            replay_of: Some(source),
        };
        self.inner
            .activate(&fork, &owner, Some(source.clone()))
            .await;
        let outcome = match self
            .prepare(start, node, &input, Some(Script::default()))
            .await
        {
            Some(refused) => refused,
            None => execute(host, fork.clone(), node_id, node, input).await,
        };
        self.inner.deactivate(&fork);
        outcome
    }

    /// The billing ledger: every charge, or a run's.
    pub async fn ledger(&self, run: Option<&RunId>) -> Result<Vec<ChargeRow>, JournalError> {
        self.inner.journal.charges(run).await
    }

    /// Charges summed per beneficiary: (generations, output tokens).
    pub async fn charges_by_beneficiary(
        &self,
        run: Option<&RunId>,
    ) -> Result<HashMap<String, (u32, u64)>, JournalError> {
        let mut out: HashMap<String, (u32, u64)> = HashMap::new();
        for row in self.ledger(run).await? {
            for b in &row.charge.beneficiaries {
                let e = out.entry(b.clone()).or_default();
                e.0 += row.charge.generations;
                e.1 += row.charge.output_tokens;
            }
        }
        Ok(out)
    }

    /// How many runs the host keeps a record of in memory: those with a node executing, and those
    /// used through [`Host::call_ai`] outside a node. A finished run leaves nothing behind here.
    pub fn active_runs(&self) -> usize {
        lock(&self.inner.runs).len()
    }

    /// The host-private diagnostics: the cause of every failure. Never shown to pack code.
    pub fn diagnostics(&self) -> Vec<Diagnostic> {
        lock(&self.inner.diagnostics).clone()
    }

    /// The capability document this host advertises.
    pub fn capabilities(&self) -> CapabilityDocument {
        let c = &self.inner.config;
        let mut events = vec![
            kind::RETRY_ATTEMPTED.to_owned(),
            kind::RETRY_EXHAUSTED.to_owned(),
            kind::TRUNCATED.to_owned(),
            kind::REFUSAL.to_owned(),
        ];
        if c.nl_fallback {
            events.push(kind::NL_TO_FORMAT_ENGAGED.to_owned());
        }
        CapabilityDocument {
            ai_providers: true,
            providers: vec![self.inner.provider.name().to_owned()],
            call_accounting: (c.attempts || c.retry_policy).then_some(CallAccounting {
                attempts: c.attempts,
                retry_policy: c.retry_policy,
            }),
            reliability: Some(Reliability {
                max_retry_attempts: c.max_retry_attempts,
                events,
                completion: Completion {
                    distinguishes_truncation: true,
                    truncation_budget_multiplier: f64::from(c.truncation_multiplier),
                },
            }),
            provider_usage: true,
            replay_modes: vec!["replay".to_owned()],
            schema_rounds: Some(u32::from(c.max_retry_attempts)),
            ..CapabilityDocument::default()
        }
    }
}

impl Host for LocalHost {
    fn capability_document(&self) -> CapabilityDocument {
        self.capabilities()
    }

    fn call_ai<'a>(
        &'a self,
        key: &'a AttemptKey,
        request: &'a Value,
    ) -> BoxFuture<'a, Result<Value, HostFailure>> {
        Box::pin(self.inner.call(key, request))
    }

    fn settle_ai_failure<'a>(
        &'a self,
        run: &'a RunId,
        failure: FailureToken,
    ) -> BoxFuture<'a, Result<(), ErrorEnvelope>> {
        let mut diags = lock(&self.inner.diagnostics);
        let r = match diags.iter_mut().find(|d| d.token == failure.get()) {
            Some(d) if d.run_id == run.as_str() => {
                d.settled = true;
                Ok(())
            }
            _ => Err(ErrorEnvelope::validation(
                "failure",
                "is not a failure of this run",
            )),
        };
        Box::pin(std::future::ready(r))
    }

    fn record_event<'a>(
        &'a self,
        run: &'a RunId,
        kind: &'a str,
        payload: Value,
    ) -> BoxFuture<'a, ()> {
        Box::pin(async move {
            self.inner.observe(run, kind, &payload);
            // An event the journal cannot keep is still seen live; the run goes on.
            let _ = self.inner.journal.append_event(run, kind, &payload).await;
        })
    }

    fn events<'a>(&'a self, run: &'a RunId) -> BoxFuture<'a, Vec<RunEvent>> {
        Box::pin(async move { self.inner.journal.events(run).await.unwrap_or_default() })
    }
}
