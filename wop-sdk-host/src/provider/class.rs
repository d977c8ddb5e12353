//! The class of a provider failure and what a person should check for it.
//!
//! A provider's error text is private, but it starts with the class of the failure: the
//! OpenAI-compatible provider writes `HTTP 404 Not Found: …` for a status, and `connection
//! refused: …`, `DNS lookup failed: …`, `TLS handshake failed: …`, `connect timed out: …`,
//! `connection failed: …`, `timed out: …` or `connection broken: …` for a request that got no
//! status. [`ProviderError::class`] reads that start back; [`FailureClass::what_to_check`] is the
//! public sentence for it, which names no secret and quotes nothing the server said.

use super::ProviderError;

/// What a provider writes after the status of a 4xx whose error body speaks of the key or
/// authentication (LiteLLM answers a wrong key with a 400): read back as
/// [`FailureClass::Credentials`].
pub(crate) const CREDENTIALS_MARKER: &str = " [credentials]";
use std::fmt;

/// What kind of failure a provider error is.
///
/// A provider's error text is private, but it starts with the class of the failure: the
/// OpenAI-compatible provider writes `HTTP 404 Not Found: …` for a status, and `connection
/// refused: …`, `DNS lookup failed: …`, `TLS handshake failed: …`, `connect timed out: …`,
/// `connection failed: …`, `timed out: …` or `connection broken: …` for a request that got no
/// status; [`ProviderError::class`] reads it back. [`FailureClass::what_to_check`] is the public
/// sentence for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum FailureClass {
    /// Nothing listens at the address (the request was never sent).
    Refused,
    /// The host name does not resolve (never sent).
    Dns,
    /// The TLS handshake failed, e.g. `https://` against a plain-HTTP port (never sent).
    Tls,
    /// The connection was not accepted in time (never sent).
    ConnectTimeout,
    /// Another failure to connect (never sent).
    Connect,
    /// The request was sent and no answer came in time.
    Timeout,
    /// The connection broke after the request was sent.
    Broken,
    /// The server answered with this HTTP status (4xx or 5xx).
    Status(u16),
    /// The server answered with this 4xx status and its error speaks of the key or
    /// authentication (LiteLLM answers a wrong key with a 400).
    Credentials(u16),
    /// Anything else (a reply that is not a chat completion, a provider of another kind).
    Other,
}

impl FailureClass {
    /// Whether the request never reached the server (it was not received).
    pub fn never_sent(self) -> bool {
        matches!(
            self,
            Self::Refused | Self::Dns | Self::Tls | Self::ConnectTimeout | Self::Connect
        )
    }

    /// A short name: `refused`, `dns`, `tls`, `connect-timeout`, `connect`, `timeout`, `broken`,
    /// `4xx`, `5xx`, `credentials`, `other`.
    pub fn name(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Dns => "dns",
            Self::Tls => "tls",
            Self::ConnectTimeout => "connect-timeout",
            Self::Connect => "connect",
            Self::Timeout => "timeout",
            Self::Broken => "broken",
            Self::Status(s) if s >= 500 => "5xx",
            Self::Status(_) => "4xx",
            Self::Credentials(_) => "credentials",
            Self::Other => "other",
        }
    }

    /// The public sentence: what happened and what to check (the base URL, the model name, the
    /// key). Nothing of the server's own text.
    pub fn what_to_check(self) -> String {
        match self {
            Self::Refused => "the connection to the provider was refused (nothing listens there): \
                              check the base URL's host and port, and that the server runs"
                .into(),
            Self::Dns => "the provider's host name does not resolve: check the base URL".into(),
            Self::Tls => "the TLS handshake with the provider failed: check the base URL's scheme \
                          (http:// for a plain-HTTP server)"
                .into(),
            Self::ConnectTimeout => "the provider did not accept a connection in time: check the \
                                     base URL and the network"
                .into(),
            Self::Connect => {
                "the provider could not be reached: check the base URL and the network".into()
            }
            Self::Timeout => "the provider did not answer in time (timed out): check the server, \
                              or allow more time (--timeout)"
                .into(),
            Self::Broken => {
                "the connection to the provider broke before the reply was complete".into()
            }
            Self::Status(s @ (401 | 403)) | Self::Credentials(s) => {
                format!("the provider refused the credentials (HTTP {s}): check the API key")
            }
            Self::Status(404) => "the provider has no chat completions endpoint at the base URL \
                                  (HTTP 404): check the base URL (most servers want it to end in \
                                  /v1) and the model name"
                .into(),
            Self::Status(s @ (400 | 422)) => format!(
                "the provider rejected the request (HTTP {s}): check the model name and the \
                 call's options"
            ),
            Self::Status(429) => "the provider rate-limited the requests (HTTP 429): wait, or \
                                  check the account's limits"
                .into(),
            Self::Status(s) if s >= 500 => {
                format!("the provider's server failed (HTTP {s}): check the server")
            }
            Self::Status(s) => format!(
                "the provider answered HTTP {s}: check the base URL, the model name and the key"
            ),
            Self::Other => "the provider failed to serve the request".into(),
        }
    }
}

impl fmt::Display for FailureClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Status(s) | Self::Credentials(s) => write!(f, "HTTP {s}"),
            other => f.write_str(other.name()),
        }
    }
}

impl ProviderError {
    /// The private text of the error.
    pub fn text(&self) -> &str {
        match self {
            Self::Failed(m) | Self::NoAnswer(m) => m,
            Self::Transient { message, .. } => message,
        }
    }

    /// Whether the request never reached the server (a connection that could not be made): it
    /// was not received, and nothing was generated.
    pub fn never_sent(&self) -> bool {
        matches!(self, Self::Transient { reached: false, .. }) || self.class().never_sent()
    }

    /// The class of the failure, read from the start of its text (see [`FailureClass`]).
    pub fn class(&self) -> FailureClass {
        classify_text(self.text())
    }
}

/// How the scripted provider's text starts when a request finds no step left.
pub(crate) const SCRIPT_EXHAUSTED: &str = "the mock script is exhausted";

/// The public sentence for a provider failure's private `text`: what to check for its class.
/// The scripted provider's own failure (its script ran out) is told as it is: its text names the
/// request and the test's script, nothing of a server or an account, and it is what the test's
/// author needs to read.
pub(crate) fn public_advice(text: &str) -> String {
    if text.starts_with(SCRIPT_EXHAUSTED) {
        return text.to_owned();
    }
    classify_text(text).what_to_check()
}

/// The class a private text starts with.
pub(crate) fn classify_text(text: &str) -> FailureClass {
    if let Some(rest) = text.strip_prefix("HTTP ") {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if let Ok(code) = digits.parse::<u16>() {
            let head = rest.split(':').next().unwrap_or("");
            return if head.ends_with(CREDENTIALS_MARKER) {
                FailureClass::Credentials(code)
            } else {
                FailureClass::Status(code)
            };
        }
    }
    const PREFIXES: [(&str, FailureClass); 7] = [
        ("connection refused:", FailureClass::Refused),
        ("DNS lookup failed:", FailureClass::Dns),
        ("TLS handshake failed:", FailureClass::Tls),
        ("connect timed out:", FailureClass::ConnectTimeout),
        ("connection failed:", FailureClass::Connect),
        ("timed out:", FailureClass::Timeout),
        ("connection broken:", FailureClass::Broken),
    ];
    PREFIXES
        .iter()
        .find(|(p, _)| text.starts_with(p))
        .map_or(FailureClass::Other, |(_, c)| *c)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_is_read_back_and_says_what_to_check() {
        assert_eq!(
            classify_text("HTTP 404 Not Found: {}"),
            FailureClass::Status(404)
        );
        assert_eq!(
            classify_text("connection refused: error sending request"),
            FailureClass::Refused
        );
        assert_eq!(classify_text("TLS handshake failed: x"), FailureClass::Tls);
        assert_eq!(
            classify_text("HTTP 400 Bad Request [credentials]: {}"),
            FailureClass::Credentials(400)
        );
        assert!(
            FailureClass::Credentials(400)
                .what_to_check()
                .contains("API key")
        );
        assert_eq!(classify_text("timed out: x"), FailureClass::Timeout);
        assert_eq!(classify_text("HTTP x"), FailureClass::Other);
        assert_eq!(classify_text("anything"), FailureClass::Other);
        assert!(FailureClass::Status(404).what_to_check().contains("/v1"));
        assert!(
            FailureClass::Status(401)
                .what_to_check()
                .contains("API key")
        );
        assert!(
            FailureClass::Status(400)
                .what_to_check()
                .contains("model name")
        );
        assert!(FailureClass::Refused.never_sent() && !FailureClass::Timeout.never_sent());
        assert_eq!(FailureClass::Status(503).name(), "5xx");
    }
}
