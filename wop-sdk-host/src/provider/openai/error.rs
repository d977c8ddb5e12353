//! What went wrong, as a [`ProviderError`].
//!
//! | what happened | error |
//! |---|---|
//! | 408, 429, or any 5xx | `Transient { reached: true, retry_after }` (`retry-after-ms`, else `Retry-After` in seconds or as an HTTP date) |
//! | any other status that is not 2xx (400, 401, 403, 404, 422, a redirect ...) | `Failed` |
//! | the connection could not be made (refused, unreachable, DNS, connect timeout) | `Transient { reached: false }` |
//! | the request timed out after it was sent, or the connection failed after it was sent (before or during the reply) | `NoAnswer` |
//! | a reply body over the size limit, or not a chat completion | `Failed` |
//!
//! The text of every error is private (the host's diagnostics); it may quote the start of the
//! server's error body, never the API key, which is cut out of it.

use super::config::ApiKey;
use crate::local::ProviderError;
use crate::provider::class::CREDENTIALS_MARKER;
use reqwest::StatusCode;
use reqwest::header::HeaderMap;
use std::error::Error as _;
use std::time::{Duration, SystemTime};

/// How much of an error body is kept in the private text.
pub(crate) const ERROR_BODY_KEPT: usize = 512;

/// The error for a reply whose status is not a success.
pub(crate) fn status(
    status: StatusCode,
    headers: &HeaderMap,
    body: &[u8],
    key: Option<&ApiKey>,
) -> ProviderError {
    let excerpt = String::from_utf8_lossy(&body[..body.len().min(ERROR_BODY_KEPT)]);
    // The class first, never redacted (it is ours); the server's words after it, the key cut
    // out where it stands as a key, or not kept at all when the key is too short to be told
    // from text.
    let marker = if matches!(status.as_u16(), 400 | 422) && names_credentials(&excerpt) {
        CREDENTIALS_MARKER
    } else {
        ""
    };
    let words = if key.is_some_and(too_short) {
        "(the server's words are not kept: the API key is too short to be told apart from them)"
            .to_owned()
    } else {
        redact(excerpt.trim(), key)
    };
    let message = format!("HTTP {status}{marker}: {words}");
    if status == StatusCode::REQUEST_TIMEOUT
        || status == StatusCode::TOO_MANY_REQUESTS
        || status.is_server_error()
    {
        ProviderError::Transient {
            message,
            retry_after: retry_after(headers, SystemTime::now()),
            reached: true,
        }
    } else {
        ProviderError::Failed(message)
    }
}

/// The wait a reply asks for: `retry-after-ms` (milliseconds, as OpenAI and Azure send it), else
/// `Retry-After` as delay-seconds or as an HTTP date (a date in the past is no wait).
pub(crate) fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let text = |name: &str| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
    };
    if let Some(ms) = text("retry-after-ms")
        .and_then(|v| v.parse::<f64>().ok())
        .filter(|ms| ms.is_finite() && *ms >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = text("retry-after")?;
    if let Ok(secs) = value.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    if let Some(secs) = value
        .parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0)
    {
        return Some(Duration::from_secs_f64(secs));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The error for a request that got no status back. The private text starts with the class of
/// failure ([`ProviderError::class`] reads it back): `connection refused`, `DNS lookup failed`,
/// `TLS handshake failed`, `connect timed out`, `connection failed` (before anything was sent),
/// `timed out` or `connection broken` (after).
pub(crate) fn transport(e: &reqwest::Error, key: Option<&ApiKey>) -> ProviderError {
    let text = chain(e);
    let class = transport_class(e, &text);
    let message = format!("{class}: {}", redact(&text, key));
    if e.is_connect() {
        // Nothing was sent: the server cannot have generated anything.
        ProviderError::Transient {
            message,
            retry_after: None,
            reached: false,
        }
    } else {
        // A timeout or a broken connection after the request was written: the server may have
        // generated something.
        ProviderError::NoAnswer(message)
    }
}

/// The error for a reply body that broke off (timeout, connection closed mid-body).
pub(crate) fn body(e: &reqwest::Error, read: usize, key: Option<&ApiKey>) -> ProviderError {
    let class = if e.is_timeout() {
        "timed out"
    } else {
        "connection broken"
    };
    ProviderError::NoAnswer(format!(
        "{class}: the reply broke off after {read} bytes: {}",
        redact(&chain(e), key)
    ))
}

/// The class of a failure that got no status back, from the error's kind and causes.
fn transport_class(e: &reqwest::Error, text: &str) -> &'static str {
    let mut refused = false;
    let mut source = e.source();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>()
            && io.kind() == std::io::ErrorKind::ConnectionRefused
        {
            refused = true;
        }
        source = s.source();
    }
    let lower = text.to_ascii_lowercase();
    if e.is_connect() {
        if refused || lower.contains("connection refused") {
            "connection refused"
        } else if lower.contains("dns error") || lower.contains("failed to lookup") {
            "DNS lookup failed"
        } else if e.is_timeout() || lower.contains("timed out") {
            "connect timed out"
        } else if lower.contains("tls")
            || lower.contains("certificate")
            || lower.contains("handshake")
            || lower.contains("corrupt message")
        {
            "TLS handshake failed"
        } else {
            "connection failed"
        }
    } else if e.is_timeout() {
        "timed out"
    } else {
        "connection broken"
    }
}

/// An error and its causes, on one line.
fn chain(e: &reqwest::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

/// The shortest key cut out of text: a shorter one cannot be told apart from words (`k` is in
/// "broken"), so a server's words are not kept at all with it.
pub(crate) const SHORTEST_REDACTED_KEY: usize = 8;

fn too_short(key: &ApiKey) -> bool {
    key.expose().chars().count() < SHORTEST_REDACTED_KEY
}

/// Whether an error body speaks of the key or authentication.
fn names_credentials(body: &str) -> bool {
    let lower = body.to_ascii_lowercase();
    [
        "api key",
        "api_key",
        "apikey",
        "authentication",
        "auth_error",
        "unauthorized",
        "invalid token",
        "credential",
    ]
    .iter()
    .any(|w| lower.contains(w))
}

/// `text` with the key replaced where it stands as a key: not inside a longer run of the
/// characters keys are made of (letters, digits, `-`, `_`), so a word that happens to contain it
/// is left whole. A key under [`SHORTEST_REDACTED_KEY`] characters is never put in a text by this
/// provider (only in the `Authorization` header), and its server's words are not kept
/// ([`status`]): the text is left as it is.
pub(crate) fn redact(text: &str, key: Option<&ApiKey>) -> String {
    let Some(k) = key.filter(|k| !too_short(k)).map(ApiKey::expose) else {
        return text.to_owned();
    };
    let keyish = |c: char| c.is_alphanumeric() || c == '-' || c == '_';
    let mut out = String::with_capacity(text.len());
    let mut rest = 0;
    for (at, _) in text.match_indices(k) {
        if at < rest {
            continue;
        }
        let before = text[..at].chars().next_back();
        let after = text[at + k.len()..].chars().next();
        if before.is_some_and(keyish) || after.is_some_and(keyish) {
            continue;
        }
        out.push_str(&text[rest..at]);
        out.push_str("<redacted>");
        rest = at + k.len();
    }
    out.push_str(&text[rest..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, HeaderValue::from_str(v).expect("header"));
        }
        h
    }

    #[test]
    fn retry_after_forms() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        let at = |h: &[(&'static str, &str)]| retry_after(&headers(h), now);
        assert_eq!(at(&[("retry-after", "7")]), Some(Duration::from_secs(7)));
        assert_eq!(
            at(&[("retry-after", "1.5")]),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            at(&[("retry-after-ms", "250"), ("retry-after", "7")]),
            Some(Duration::from_millis(250))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            at(&[("retry-after", &later)]),
            Some(Duration::from_secs(30))
        );
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(30));
        assert_eq!(at(&[("retry-after", &earlier)]), Some(Duration::ZERO));
        assert_eq!(at(&[("retry-after", "soon")]), None);
        assert_eq!(at(&[("retry-after", "-3")]), None);
        assert_eq!(at(&[]), None);
    }

    #[test]
    fn the_key_is_cut_where_it_stands_as_a_key_never_inside_words() {
        let key = ApiKey::new("sk-test-0123456789");
        assert_eq!(
            redact(
                "Bearer sk-test-0123456789, key=sk-test-0123456789.",
                Some(&key)
            ),
            "Bearer <redacted>, key=<redacted>."
        );
        assert_eq!(
            redact("{\"k\":\"sk-test-0123456789\"}", Some(&key)),
            "{\"k\":\"<redacted>\"}"
        );
        assert_eq!(
            redact("xsk-test-0123456789y stays", Some(&key)),
            "xsk-test-0123456789y stays"
        );
        // A key too short to be told from text: nothing is cut, and a body is not kept.
        let short = ApiKey::new("k");
        assert_eq!(
            redact("connection broken: TLS handshake", Some(&short)),
            "connection broken: TLS handshake"
        );
        let ProviderError::Failed(text) = status(
            StatusCode::UNAUTHORIZED,
            &HeaderMap::new(),
            b"{\"error\":\"bad key k\"}",
            Some(&short),
        ) else {
            panic!("401 is permanent");
        };
        assert!(
            text.starts_with("HTTP 401 Unauthorized: (the server's words are not kept"),
            "{text}"
        );
    }

    #[test]
    fn statuses() {
        let key = ApiKey::new("sk-xyz");
        let e = status(
            StatusCode::UNAUTHORIZED,
            &HeaderMap::new(),
            b"{\"error\":\"Incorrect API key provided: sk-xyz\"}",
            Some(&key),
        );
        let ProviderError::Failed(text) = e else {
            panic!("401 is permanent: {e:?}");
        };
        assert!(text.contains("401") && !text.contains("sk-xyz"), "{text}");
        for code in [408, 429, 500, 502, 503, 504] {
            let s = StatusCode::from_u16(code).expect("code");
            assert!(matches!(
                status(s, &headers(&[("retry-after", "2")]), b"", None),
                ProviderError::Transient {
                    reached: true,
                    retry_after: Some(d),
                    ..
                } if d == Duration::from_secs(2)
            ));
        }
        for code in [400, 403, 404, 422, 301] {
            let s = StatusCode::from_u16(code).expect("code");
            assert!(matches!(
                status(s, &HeaderMap::new(), b"", None),
                ProviderError::Failed(_)
            ));
        }
        let long = vec![b'x'; 10_000];
        let ProviderError::Failed(text) =
            status(StatusCode::BAD_REQUEST, &HeaderMap::new(), &long, None)
        else {
            panic!("400 is permanent");
        };
        assert!(text.len() < ERROR_BODY_KEPT + 64);
    }
}
