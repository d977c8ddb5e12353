//! Where `run` gets its replies: the scripted provider (default) or an OpenAI-compatible server.
//!
//! ```text
//! PACK run --node TYPE_ID --input FILE --provider openai [--base-url URL] [--model M]
//!          [--api-key-env NAME] [--structured-output native|prompt] [--token-field FIELD]
//!          [--timeout SECONDS]
//! ```
//!
//! `--base-url` defaults to `OPENAI_BASE_URL`, else `https://api.openai.com/v1`; `--model` to
//! `OPENAI_MODEL`; the key is read from the environment variable `--api-key-env` names
//! (default `OPENAI_API_KEY`), never from a flag, so it stays out of the shell history and the
//! process list. `--structured-output prompt` is for a server without `response_format:
//! json_schema`; `--token-field max_completion_tokens` for a server that refuses `max_tokens`.

use super::error::CliError;
use crate::local::{LocalHost, LocalHostBuilder, ScriptedProvider};
use clap::{Args, ValueEnum};

/// Which provider serves the calls.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ProviderKind {
    /// The scripted provider: `--script FILE` or the input's `script` field.
    #[default]
    Script,
    /// An OpenAI-compatible Chat Completions server.
    Openai,
}

/// How a structured call conveys its schema to an OpenAI-compatible server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum StructuredOutput {
    /// `response_format: {type: "json_schema", ...}`.
    #[default]
    Native,
    /// The schema in the system message.
    Prompt,
}

/// Which request field carries the output budget.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
#[value(rename_all = "snake_case")]
pub enum TokenField {
    /// `max_tokens`.
    MaxTokens,
    /// `max_completion_tokens`.
    MaxCompletionTokens,
}

/// The provider flags of `run` (and of a pack's own demo, which may reuse them).
#[derive(Clone, Debug, Default, Args)]
pub struct ProviderArgs {
    /// Who answers the calls: `script` (the --script file or the input's `script`) or `openai`
    /// (an OpenAI-compatible server).
    #[arg(long, value_enum, value_name = "NAME", default_value_t = ProviderKind::Script)]
    pub provider: ProviderKind,
    /// The OpenAI-compatible server, up to and including `/v1` [default: $OPENAI_BASE_URL, else
    /// `https://api.openai.com/v1`].
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// The model [default: $OPENAI_MODEL].
    #[arg(long, value_name = "MODEL")]
    pub model: Option<String>,
    /// The environment variable that holds the API key [default: OPENAI_API_KEY].
    #[arg(long, value_name = "NAME")]
    pub api_key_env: Option<String>,
    /// How a structured call conveys its schema.
    #[arg(long, value_enum, value_name = "MODE")]
    pub structured_output: Option<StructuredOutput>,
    /// The request field for the output budget [default: max_tokens].
    #[arg(long, value_enum, value_name = "FIELD")]
    pub token_field: Option<TokenField>,
    /// How long one provider request may take, the reply included, in seconds; past it the
    /// request has no answer (its outcome is unknown, it is not repeated) [default: 120].
    #[arg(long, value_name = "SECONDS", value_parser = parse_seconds)]
    pub timeout: Option<std::time::Duration>,
    /// The provider name the server answers to, when a pack names it in its calls (`ollama`,
    /// `vllm`, ...) [default: openai]. A call naming another provider is refused.
    #[arg(long, value_name = "NAME")]
    pub provider_name: Option<String>,
}

impl ProviderArgs {
    /// Parses the provider flags alone (for a pack's demo that takes only these).
    pub fn parse_from<I, T>(args: I) -> Result<Self, CliError>
    where
        I: IntoIterator<Item = T>,
        T: Into<std::ffi::OsString> + Clone,
    {
        #[derive(clap::Parser)]
        struct Only {
            #[command(flatten)]
            provider: ProviderArgs,
        }
        <Only as clap::Parser>::try_parse_from(args)
            .map(|o| o.provider)
            .map_err(|e| CliError::usage(e.to_string().trim_end().to_owned()))
    }

    /// Whether the calls are served by the scripted provider.
    pub fn is_script(&self) -> bool {
        self.provider == ProviderKind::Script
    }

    /// A local host builder with the chosen provider. Flags that only an OpenAI-compatible server
    /// uses are refused with the scripted provider.
    pub fn host_builder(&self) -> Result<LocalHostBuilder, CliError> {
        self.host_builder_with(|name| std::env::var(name).ok())
    }

    pub(crate) fn host_builder_with(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<LocalHostBuilder, CliError> {
        match self.provider {
            ProviderKind::Script => {
                let openai_only = [
                    ("--base-url", self.base_url.is_some()),
                    ("--model", self.model.is_some()),
                    ("--api-key-env", self.api_key_env.is_some()),
                    ("--structured-output", self.structured_output.is_some()),
                    ("--token-field", self.token_field.is_some()),
                    ("--provider-name", self.provider_name.is_some()),
                    ("--timeout", self.timeout.is_some()),
                ];
                if let Some((flag, _)) = openai_only.iter().find(|(_, set)| *set) {
                    return Err(CliError::usage(format!(
                        "{flag} configures an OpenAI-compatible server: add `--provider openai`"
                    )));
                }
                Ok(LocalHost::rfc0248().provider(ScriptedProvider::default()))
            }
            ProviderKind::Openai => self.openai(env),
        }
    }

    /// The OpenAI-compatible provider these flags configure (`None` with `--provider script`),
    /// for a pack's own demo that wraps the provider; [`ProviderArgs::host_builder`] otherwise.
    #[cfg(feature = "openai")]
    pub fn openai_provider(
        &self,
    ) -> Result<Option<crate::provider::openai::OpenAiProvider>, CliError> {
        match self.provider {
            ProviderKind::Script => Ok(None),
            ProviderKind::Openai => self.openai_with(|name| std::env::var(name).ok()).map(Some),
        }
    }

    /// Whether a structured call asks for native structured output (`--structured-output`).
    pub fn native_structured_output(&self) -> bool {
        self.structured_output.unwrap_or_default() == StructuredOutput::Native
    }

    #[cfg(feature = "openai")]
    fn openai(&self, env: impl Fn(&str) -> Option<String>) -> Result<LocalHostBuilder, CliError> {
        let native = self.native_structured_output();
        Ok(self
            .openai_with(env)?
            .local_host()
            .config(|c| c.native_structured_output = native))
    }

    #[cfg(feature = "openai")]
    fn openai_with(
        &self,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<crate::provider::openai::OpenAiProvider, CliError> {
        use crate::provider::openai::{
            ApiKey, ENV_API_KEY, ENV_BASE_URL, ENV_MODEL, OpenAiConfig, OpenAiProvider,
            TokenLimitField,
        };
        let set = |v: Option<String>| v.filter(|s| !s.trim().is_empty());
        let (base_url, url_origin) = match (&self.base_url, set(env(ENV_BASE_URL))) {
            (Some(flag), _) => (flag.clone(), "--base-url".to_owned()),
            (None, Some(var)) => (var, ENV_BASE_URL.to_owned()),
            (None, None) => (
                crate::provider::openai::DEFAULT_BASE_URL.to_owned(),
                "--base-url".to_owned(),
            ),
        };
        let (model, model_origin) = match (&self.model, set(env(ENV_MODEL))) {
            (Some(flag), _) => (flag.clone(), "--model"),
            (None, Some(var)) => (var, ENV_MODEL),
            (None, None) => {
                return Err(CliError::usage(format!(
                    "--provider openai needs a model: pass `--model M` or set `{ENV_MODEL}`"
                )));
            }
        };
        let config_error = |origin: &str, e: crate::provider::openai::OpenAiConfigError| {
            CliError::usage(format!("{origin}: {}", e.message))
        };
        let mut config = OpenAiConfig::new(&base_url, "model")
            .map_err(|e| config_error(&url_origin, e))?
            .model(&model)
            .map_err(|e| config_error(model_origin, e))?;
        let key_var = self.api_key_env.as_deref().unwrap_or(ENV_API_KEY);
        match set(env(key_var)) {
            Some(key) => config = config.api_key(ApiKey::new(key)),
            None if self.api_key_env.is_some() => {
                return Err(CliError::usage(format!(
                    "--api-key-env {key_var}: the variable is not set (or empty)"
                )));
            }
            None => {}
        }
        if let Some(name) = &self.provider_name {
            config = config
                .name(name)
                .map_err(|e| config_error("--provider-name", e))?;
        }
        if let Some(f) = self.token_field {
            config = config.token_limit_field(match f {
                TokenField::MaxTokens => TokenLimitField::MaxTokens,
                TokenField::MaxCompletionTokens => TokenLimitField::MaxCompletionTokens,
            });
        }
        if let Some(t) = self.timeout {
            config = config.timeout(t);
        }
        OpenAiProvider::new(config)
            .map_err(|e| CliError::usage(format!("--api-key-env {key_var}: {}", e.message)))
    }

    #[cfg(not(feature = "openai"))]
    fn openai(&self, env: impl Fn(&str) -> Option<String>) -> Result<LocalHostBuilder, CliError> {
        let _ = env;
        Err(CliError::usage(
            "--provider openai: this build has no OpenAI-compatible provider (enable the `openai` \
             feature of wop-sdk)",
        ))
    }
}

/// `--timeout`: seconds, a positive finite number (`90`, `0.5`).
fn parse_seconds(text: &str) -> Result<std::time::Duration, String> {
    text.trim()
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s > 0.0 && *s <= 86_400.0)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| format!("`{text}` is not a number of seconds above 0 (and at most 86400)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> ProviderArgs {
        ProviderArgs::parse_from(std::iter::once("pack").chain(args.iter().copied()))
            .expect("parses")
    }

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn error(args: &[&str], vars: &'static [(&'static str, &'static str)]) -> String {
        parse(args)
            .host_builder_with(env(vars))
            .map(|_| ())
            .expect_err("refused")
            .message
    }

    #[test]
    fn script_is_the_default_and_refuses_openai_flags() {
        assert!(parse(&[]).is_script());
        assert!(parse(&[]).host_builder_with(env(&[])).is_ok());
        assert!(error(&["--model", "m"], &[]).contains("--model configures"));
        assert!(error(&["--timeout", "5"], &[]).contains("--timeout configures"));
    }

    #[test]
    fn timeout_is_positive_seconds() {
        let t = |a: &str| parse_seconds(a);
        assert_eq!(t("0.5"), Ok(std::time::Duration::from_millis(500)));
        assert_eq!(t("90"), Ok(std::time::Duration::from_secs(90)));
        for bad in ["0", "-1", "abc", "NaN", "inf", "1e9"] {
            assert!(t(bad).expect_err(bad).contains("seconds"), "{bad}");
        }
    }

    #[test]
    #[cfg(feature = "openai")]
    fn openai_from_flags_or_environment() {
        let host = parse(&[
            "--provider",
            "openai",
            "--base-url",
            "http://127.0.0.1:9/v1",
            "--model",
            "m",
        ])
        .host_builder_with(env(&[]))
        .expect("flags")
        .build();
        assert_eq!(host.config().default_model, "m");
        assert!(host.config().native_structured_output);
        assert_eq!(host.capabilities().providers, vec!["openai".to_owned()]);

        let host = parse(&["--provider", "openai", "--structured-output", "prompt"])
            .host_builder_with(env(&[
                ("OPENAI_MODEL", "env-model"),
                ("OPENAI_BASE_URL", "http://h/v1"),
            ]))
            .expect("environment")
            .build();
        assert_eq!(host.config().default_model, "env-model");
        assert!(!host.config().native_structured_output);
    }

    #[test]
    #[cfg(feature = "openai")]
    fn a_compatible_server_answers_to_the_name_it_is_given() {
        let args = |name: &'static str| {
            parse(&[
                "--provider",
                "openai",
                "--base-url",
                "http://127.0.0.1:9/v1",
                "--model",
                "m",
                "--provider-name",
                name,
            ])
        };
        let host = args("ollama")
            .host_builder_with(env(&[]))
            .expect("named")
            .build();
        assert_eq!(host.capabilities().providers, vec!["ollama".to_owned()]);
        let refused = args("Ollama Local")
            .host_builder_with(env(&[]))
            .map(|_| ())
            .expect_err("refused")
            .message;
        assert!(
            refused.starts_with("--provider-name: must be 1 to 64 characters"),
            "{refused}"
        );
        assert!(error(&["--provider-name", "x"], &[]).contains("--provider-name configures"));
    }

    #[test]
    #[cfg(feature = "openai")]
    fn openai_errors_name_the_flag_or_variable() {
        assert!(
            error(&["--provider", "openai"], &[]).contains("`--model M` or set `OPENAI_MODEL`")
        );
        assert!(
            error(
                &[
                    "--provider",
                    "openai",
                    "--model",
                    "m",
                    "--base-url",
                    "ftp://x"
                ],
                &[]
            )
            .starts_with("--base-url: must use `http` or `https`")
        );
        assert!(
            error(
                &["--provider", "openai", "--model", "m"],
                &[("OPENAI_BASE_URL", "nope")]
            )
            .starts_with("OPENAI_BASE_URL: must be an absolute")
        );
        assert!(
            error(
                &[
                    "--provider",
                    "openai",
                    "--model",
                    "m",
                    "--api-key-env",
                    "MY_KEY"
                ],
                &[]
            )
            .contains("--api-key-env MY_KEY: the variable is not set")
        );
    }
}
