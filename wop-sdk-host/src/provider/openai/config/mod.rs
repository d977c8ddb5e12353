//! Where the server is, who we are to it, which model, and the limits of one request.

use reqwest::Url;
use std::fmt;
use std::time::Duration;

/// The base URL used when neither `OPENAI_BASE_URL` nor an explicit one is given.
pub const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// The environment variable naming the server's base URL (up to and including `/v1`).
pub const ENV_BASE_URL: &str = "OPENAI_BASE_URL";
/// The environment variable holding the API key.
pub const ENV_API_KEY: &str = "OPENAI_API_KEY";
/// The environment variable naming the model.
pub const ENV_MODEL: &str = "OPENAI_MODEL";

/// An API key. It is sent in the `Authorization` header (marked sensitive) and nowhere else: its
/// `Debug` prints `ApiKey(<redacted>)`, it has no `Display`, and the provider removes it from any
/// text it keeps about a failure.
#[derive(Clone, PartialEq, Eq)]
pub struct ApiKey(String);

impl ApiKey {
    /// Wraps a key.
    pub fn new(key: impl Into<String>) -> Self {
        Self(key.into())
    }

    /// The key itself, for the one place that sends it.
    pub(crate) fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

/// Which request field carries the output budget.
///
/// Most OpenAI-compatible servers (llama.cpp, Ollama, vLLM) read `max_tokens`; OpenAI's reasoning
/// models refuse it and want `max_completion_tokens`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum TokenLimitField {
    /// `max_tokens` (the default).
    #[default]
    MaxTokens,
    /// `max_completion_tokens`.
    MaxCompletionTokens,
}

impl TokenLimitField {
    /// The JSON field name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::MaxTokens => "max_tokens",
            Self::MaxCompletionTokens => "max_completion_tokens",
        }
    }

    /// Parses a field name (`max_tokens` or `max_completion_tokens`).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "max_tokens" => Some(Self::MaxTokens),
            "max_completion_tokens" => Some(Self::MaxCompletionTokens),
            _ => None,
        }
    }
}

/// A configuration that cannot be used: the field (or environment variable) and the rule.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OpenAiConfigError {
    /// The field or environment variable, e.g. `OPENAI_BASE_URL` or `base_url`.
    pub field: String,
    /// The rule it breaks and how to fix it.
    pub message: String,
}

impl OpenAiConfigError {
    fn new(field: &str, message: impl Into<String>) -> Self {
        Self {
            field: field.to_owned(),
            message: message.into(),
        }
    }
}

impl fmt::Display for OpenAiConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}`: {}", self.field, self.message)
    }
}

impl std::error::Error for OpenAiConfigError {}

/// The provider's configuration: from the environment ([`OpenAiConfig::from_env`]) or explicit
/// values ([`OpenAiConfig::new`]), then adjusted with the builder methods.
///
/// | setting | default |
/// |---|---|
/// | base URL | `OPENAI_BASE_URL`, else `https://api.openai.com/v1` |
/// | API key | `OPENAI_API_KEY`, else none (a local server needs none) |
/// | model | `OPENAI_MODEL` (required) |
/// | budget field | `max_tokens` |
/// | `json_schema.strict` | `false` (OpenAI's strict mode refuses schemas that leave a property optional or allow more properties, which a schemars schema often does) |
/// | request timeout | the local host's provider timeout (120 s) |
/// | connect timeout | 10 s |
/// | largest reply body | the local host's largest reply (8 MiB) |
/// | provider name | `openai` (what a call names in `provider`, and what the host advertises) |
///
/// ```rust,no_run
/// use wop_sdk_host::provider::openai::{OpenAiConfig, OpenAiProvider, TokenLimitField};
///
/// let config = OpenAiConfig::new("http://127.0.0.1:8080/v1", "qwen2.5-7b-instruct")?
///     .token_limit_field(TokenLimitField::MaxTokens);
/// let host = OpenAiProvider::new(config)?.local_host().build();
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct OpenAiConfig {
    base_url: Url,
    api_key: Option<ApiKey>,
    model: String,
    token_limit_field: TokenLimitField,
    strict_schema: bool,
    timeout: Duration,
    connect_timeout: Duration,
    max_reply_bytes: usize,
    name: String,
}

impl OpenAiConfig {
    /// A configuration for `model` on the server at `base_url` (up to and including `/v1`, e.g.
    /// `http://127.0.0.1:8080/v1`), without an API key.
    pub fn new(base_url: &str, model: &str) -> Result<Self, OpenAiConfigError> {
        Self::checked(base_url, "base_url", model, "model")
    }

    fn checked(
        base_url: &str,
        url_field: &str,
        model: &str,
        model_field: &str,
    ) -> Result<Self, OpenAiConfigError> {
        Ok(Self {
            base_url: parse_base_url(base_url, url_field)?,
            api_key: None,
            model: check_model(model, model_field)?,
            token_limit_field: TokenLimitField::default(),
            strict_schema: false,
            timeout: super::super::DEFAULT_TIMEOUT,
            connect_timeout: Duration::from_secs(10),
            max_reply_bytes: super::super::DEFAULT_MAX_REPLY_BYTES,
            name: "openai".to_owned(),
        })
    }

    /// From the process environment: `OPENAI_BASE_URL` (default `https://api.openai.com/v1`),
    /// `OPENAI_API_KEY` (optional), `OPENAI_MODEL` (required).
    pub fn from_env() -> Result<Self, OpenAiConfigError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`OpenAiConfig::from_env`], reading each variable through `lookup` (an empty value
    /// counts as unset).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, OpenAiConfigError> {
        let get = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
        let base_url = get(ENV_BASE_URL).unwrap_or_else(|| DEFAULT_BASE_URL.to_owned());
        let model = get(ENV_MODEL).ok_or_else(|| {
            OpenAiConfigError::new(
                ENV_MODEL,
                "must name the model the server serves (e.g. `gpt-4o-mini`): set the variable or \
                 pass the model explicitly",
            )
        })?;
        let mut config = Self::checked(&base_url, ENV_BASE_URL, &model, ENV_MODEL)?;
        config.api_key = get(ENV_API_KEY).map(ApiKey::new);
        Ok(config)
    }

    /// Sends `key` as `Authorization: Bearer …`.
    pub fn api_key(mut self, key: ApiKey) -> Self {
        self.api_key = Some(key);
        self
    }

    /// Another base URL (checked as in [`OpenAiConfig::new`]).
    pub fn base_url(mut self, base_url: &str) -> Result<Self, OpenAiConfigError> {
        self.base_url = parse_base_url(base_url, "base_url")?;
        Ok(self)
    }

    /// Another model.
    pub fn model(mut self, model: &str) -> Result<Self, OpenAiConfigError> {
        self.model = check_model(model, "model")?;
        Ok(self)
    }

    /// The name this provider answers to (default `openai`): a call whose `provider` names it is
    /// served, one naming another provider is refused before any request, and the host
    /// advertises it in `aiProviders.providers`. For a compatible server a pack names by its own
    /// name (`ollama`, `vllm`, ...). 1 to 64 characters of `a-z`, `0-9`, `.`, `_`, `-`.
    pub fn name(mut self, name: &str) -> Result<Self, OpenAiConfigError> {
        let ok = (1..=64).contains(&name.len())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b));
        if !ok {
            return Err(OpenAiConfigError::new(
                "name",
                format!("must be 1 to 64 characters of `a-z`, `0-9`, `.`, `_`, `-` (got `{name}`)"),
            ));
        }
        name.clone_into(&mut self.name);
        Ok(self)
    }

    /// The name this provider answers to.
    pub fn provider_name(&self) -> &str {
        &self.name
    }

    /// Which field carries the output budget.
    pub fn token_limit_field(mut self, field: TokenLimitField) -> Self {
        self.token_limit_field = field;
        self
    }

    /// The `strict` flag of a native structured request's `json_schema`.
    pub fn strict_schema(mut self, strict: bool) -> Self {
        self.strict_schema = strict;
        self
    }

    /// How long one request may take, reply body included (at least 1 ms). Past it the request
    /// has no answer ([`ProviderError::NoAnswer`](crate::local::ProviderError::NoAnswer)).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// How long connecting may take (at least 1 ms). A connection that cannot be made is a
    /// transient failure that never reached the server.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// The largest reply body read, in bytes (at least 1). A larger body is refused unread.
    pub fn max_reply_bytes(mut self, bytes: usize) -> Self {
        self.max_reply_bytes = bytes.max(1);
        self
    }

    /// The base URL.
    pub fn base_url_str(&self) -> &str {
        self.base_url.as_str()
    }

    /// The model.
    pub fn model_name(&self) -> &str {
        &self.model
    }

    /// Whether an API key is configured (the key itself is never readable).
    pub fn has_api_key(&self) -> bool {
        self.api_key.is_some()
    }

    pub(crate) fn key(&self) -> Option<&ApiKey> {
        self.api_key.as_ref()
    }

    pub(crate) fn limit_field(&self) -> TokenLimitField {
        self.token_limit_field
    }

    pub(crate) fn strict(&self) -> bool {
        self.strict_schema
    }

    pub(crate) fn request_timeout(&self) -> Duration {
        self.timeout
    }

    pub(crate) fn connect_limit(&self) -> Duration {
        self.connect_timeout
    }

    pub(crate) fn reply_limit(&self) -> usize {
        self.max_reply_bytes
    }

    /// `{base}/chat/completions`.
    pub(crate) fn endpoint(&self) -> Url {
        let mut url = self.base_url.clone();
        let path = format!("{}/chat/completions", url.path().trim_end_matches('/'));
        url.set_path(&path);
        url
    }
}

fn parse_base_url(text: &str, field: &str) -> Result<Url, OpenAiConfigError> {
    let url = Url::parse(text.trim()).map_err(|e| {
        OpenAiConfigError::new(
            field,
            format!("must be an absolute http(s) URL such as `http://127.0.0.1:8080/v1`: {e}"),
        )
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(OpenAiConfigError::new(
            field,
            format!(
                "must use `http` or `https`, not `{}` (e.g. `http://127.0.0.1:8080/v1`)",
                url.scheme()
            ),
        ));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(OpenAiConfigError::new(
            field,
            "must not carry credentials: pass the key with `OPENAI_API_KEY` (it would otherwise \
             appear wherever the URL is printed)",
        ));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(OpenAiConfigError::new(
            field,
            "must not have a query or a fragment: it is the prefix `/chat/completions` is appended to",
        ));
    }
    Ok(url)
}

fn check_model(model: &str, field: &str) -> Result<String, OpenAiConfigError> {
    let model = model.trim();
    if model.is_empty() {
        return Err(OpenAiConfigError::new(
            field,
            "must name the model the server serves (e.g. `gpt-4o-mini`), not be empty",
        ));
    }
    Ok(model.to_owned())
}

#[cfg(test)]
mod tests;
