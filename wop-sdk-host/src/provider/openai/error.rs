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
    let message = redact(&format!("HTTP {status}: {}", excerpt.trim()), key);
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
    let message = redact(&format!("{class}: {text}"), key);
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
    ProviderError::NoAnswer(redact(
        &format!(
            "{class}: the reply broke off after {read} bytes: {}",
            chain(e)
        ),
        key,
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

/// `text` with every occurrence of the key replaced.
pub(crate) fn redact(text: &str, key: Option<&ApiKey>) -> String {
    match key.map(ApiKey::expose).filter(|k| !k.is_empty()) {
        Some(k) if text.contains(k) => text.replace(k, "<redacted>"),
        _ => text.to_owned(),
    }
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
